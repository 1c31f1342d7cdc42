//! Params text of the primitives over arrays whose params are structured
//! values: the op-keyed reductions (their op comes from the printed name),
//! gather and scatter (dimension numbers, modes, fill values), `dot_general`
//! and `conv_general_dilated` (dimension numbers, precisions).

use super::codec::{ints, list, tuple, usizes, Axes, Bool, Dt, IntsT, Num};
use super::{bad, Codec, ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::dtype::DType;
use crate::literal::python_float_repr;
use crate::parse::build::bare;
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::*;
use crate::print::PV;

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// The op whose name is the equation's primitive name.
pub(super) fn op_named<T: Copy>(
    cx: &ParseCx<'_, '_, '_>,
    ops: &[T],
    name: impl Fn(T) -> &'static str,
) -> PResult<T> {
    ops.iter()
        .copied()
        .find(|&o| name(o) == cx.name)
        .ok_or_else(|| {
            cx.p.err(cx.p.pos, format!("unknown primitive `{}`", cx.name))
        })
}

/// `reduce_sum` alone prints `out_sharding=None`; axes keep JAX's
/// `np.int64(..)` spelling.
impl ParamsText for ReduceParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        let spelled = Ints {
            values: self.axes.iter().map(|&a| a as i64).collect(),
            np_int64: self.np_int64.clone(),
        };
        out.push(("axes", text(ints(&spelled))));
        if self.op == ReduceOp::Sum {
            let sharding = self
                .out_sharding
                .as_ref()
                .map_or("None".to_string(), |s| s.to_string());
            out.push(("out_sharding", text(sharding)));
        }
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let v = cx.p.req("axes")?;
        let axes = cx.p.usizes_of(v)?;
        let spelled = cx.p.ints_of(v)?;
        let np_int64 = if spelled.np_int64.iter().any(|&b| b) {
            spelled.np_int64
        } else {
            Vec::new()
        };
        let out_sharding = match cx.p.get("out_sharding") {
            Some(v) if !Params::is_none(v) => Some(super::sharding::parse_named_sharding(cx.p, v)?),
            _ => None,
        };
        Ok(ReduceParams {
            op: op_named(cx, &ReduceOp::ALL, ReduceOp::name)?,
            axes,
            np_int64,
            out_sharding,
        })
    }
}

impl ParamsText for ArgReduceParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axes", Axes::print(&self.axes)));
        out.push(("index_dtype", Dt::print(&self.index_dtype)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(ArgReduceParams {
            op: op_named(cx, &ArgOp::ALL, ArgOp::name)?,
            axes: cx.field::<Axes, _>("axes", None)?,
            index_dtype: cx.field::<Dt, _>("index_dtype", None)?,
        })
    }
}

impl ParamsText for CumulativeParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axis", Num::print(&self.axis)));
        out.push(("reverse", Bool::print(&self.reverse)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(CumulativeParams {
            op: op_named(cx, &CumulativeOp::ALL, CumulativeOp::name)?,
            axis: cx.field::<Num, _>("axis", None)?,
            reverse: cx.field::<Bool, _>("reverse", Some(false))?,
        })
    }
}

/// `GatherScatterMode.CLIP`, or its int.
pub(crate) struct Mode;

impl Codec<GatherScatterMode> for Mode {
    fn print(v: &GatherScatterMode) -> PV<'_> {
        text(match v {
            GatherScatterMode::Clip => "GatherScatterMode.CLIP",
            GatherScatterMode::FillOrDrop => "GatherScatterMode.FILL_OR_DROP",
            GatherScatterMode::PromiseInBounds => "GatherScatterMode.PROMISE_IN_BOUNDS",
            GatherScatterMode::OneHot => "GatherScatterMode.ONE_HOT",
        })
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<GatherScatterMode> {
        let w = match &v.v {
            PValue::Word(w) => w.rsplit('.').next().unwrap_or(""),
            PValue::Num(n) => n.as_str(),
            _ => "",
        };
        Ok(match w {
            "CLIP" | "0" => GatherScatterMode::Clip,
            "FILL_OR_DROP" | "1" => GatherScatterMode::FillOrDrop,
            "PROMISE_IN_BOUNDS" | "2" => GatherScatterMode::PromiseInBounds,
            "ONE_HOT" | "3" => GatherScatterMode::OneHot,
            _ => return Err(bad(cx, v, "a GatherScatterMode")),
        })
    }
}

/// A gather's fill value: `None`, an int or a float repr.
struct Fill;

impl Codec<Option<FillValue>> for Fill {
    fn print(v: &Option<FillValue>) -> PV<'_> {
        text(match v {
            None => "None".to_string(),
            Some(FillValue::Int(i)) => i.to_string(),
            Some(FillValue::Float(x)) => python_float_repr(*x),
        })
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Option<FillValue>> {
        if Params::is_none(v) {
            return Ok(None);
        }
        if cx.p.src(v).contains(['.', 'e', 'n']) {
            Ok(Some(FillValue::Float(cx.p.float_of(v)?)))
        } else {
            Ok(Some(FillValue::Int(cx.p.int_of(v)?)))
        }
    }
}

/// Reads the int tuples of a `Name(key=(..), ..)` call, in `keys` order.
fn kwarg_ints<const N: usize>(
    cx: &ParseCx<'_, '_, '_>,
    v: &Src,
    name: &str,
    keys: [&str; N],
) -> PResult<[Ints; N]> {
    let p = cx.p;
    let args = p.kwargs_of(v, name)?;
    let mut out: [Ints; N] = std::array::from_fn(|_| Ints::default());
    for (slot, key) in out.iter_mut().zip(keys) {
        *slot = p.ints_of(p.kwarg(args, key, v)?)?;
    }
    Ok(out)
}

const GATHER_KEYS: [&str; 5] = [
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "operand_batching_dims",
    "start_indices_batching_dims",
];

struct GatherDims;

impl Codec<GatherDimensionNumbers> for GatherDims {
    fn print(d: &GatherDimensionNumbers) -> PV<'_> {
        let vals = [
            &d.offset_dims,
            &d.collapsed_slice_dims,
            &d.start_index_map,
            &d.operand_batching_dims,
            &d.start_indices_batching_dims,
        ];
        let args: Vec<String> = GATHER_KEYS
            .iter()
            .zip(vals)
            .map(|(k, v)| format!("{k}={}", ints(v)))
            .collect();
        text(format!("GatherDimensionNumbers({})", args.join(", ")))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<GatherDimensionNumbers> {
        let [a, b, c, d, e] = kwarg_ints(cx, v, "GatherDimensionNumbers", GATHER_KEYS)?;
        Ok(GatherDimensionNumbers {
            offset_dims: a,
            collapsed_slice_dims: b,
            start_index_map: c,
            operand_batching_dims: d,
            start_indices_batching_dims: e,
        })
    }
}

const SCATTER_KEYS: [&str; 5] = [
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "operand_batching_dims",
    "scatter_indices_batching_dims",
];

struct ScatterDims;

impl Codec<ScatterDimensionNumbers> for ScatterDims {
    fn print(d: &ScatterDimensionNumbers) -> PV<'_> {
        let vals = [
            &d.update_window_dims,
            &d.inserted_window_dims,
            &d.scatter_dims_to_operand_dims,
            &d.operand_batching_dims,
            &d.scatter_indices_batching_dims,
        ];
        let args: Vec<String> = SCATTER_KEYS
            .iter()
            .zip(vals)
            .map(|(k, v)| format!("{k}={}", ints(v)))
            .collect();
        text(format!("ScatterDimensionNumbers({})", args.join(", ")))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<ScatterDimensionNumbers> {
        let [a, b, c, d, e] = kwarg_ints(cx, v, "ScatterDimensionNumbers", SCATTER_KEYS)?;
        Ok(ScatterDimensionNumbers {
            update_window_dims: a,
            inserted_window_dims: b,
            scatter_dims_to_operand_dims: c,
            operand_batching_dims: d,
            scatter_indices_batching_dims: e,
        })
    }
}

impl ParamsText for GatherParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push((
            "dimension_numbers",
            GatherDims::print(&self.dimension_numbers),
        ));
        out.push(("fill_value", Fill::print(&self.fill_value)));
        out.push(("indices_are_sorted", Bool::print(&self.indices_are_sorted)));
        out.push(("mode", Mode::print(&self.mode)));
        out.push(("slice_sizes", IntsT::print(&self.slice_sizes)));
        out.push(("unique_indices", Bool::print(&self.unique_indices)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(GatherParams {
            dimension_numbers: cx.field::<GatherDims, _>("dimension_numbers", None)?,
            fill_value: cx.field::<Fill, _>("fill_value", Some(None))?,
            indices_are_sorted: cx.field::<Bool, _>("indices_are_sorted", Some(false))?,
            mode: cx.field::<Mode, _>("mode", None)?,
            slice_sizes: cx.field::<IntsT, _>("slice_sizes", None)?,
            unique_indices: cx.field::<Bool, _>("unique_indices", Some(false))?,
        })
    }
}

/// The combiner kind comes from the name; `update_consts` is always `()`.
impl ParamsText for ScatterParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push((
            "dimension_numbers",
            ScatterDims::print(&self.dimension_numbers),
        ));
        out.push(("indices_are_sorted", Bool::print(&self.indices_are_sorted)));
        out.push(("mode", Mode::print(&self.mode)));
        out.push(("unique_indices", Bool::print(&self.unique_indices)));
        out.push(("update_consts", text("()")));
        let update = match &self.update_jaxpr {
            Some(j) => PV::Jaxpr(j),
            None => text("None"),
        };
        out.push(("update_jaxpr", update));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        cx.constant("update_consts", "()")?;
        let p = cx.p;
        let update_jaxpr = match p.get("update_jaxpr") {
            None => None,
            Some(v) if Params::is_none(v) => None,
            Some(v) => Some(bare(cx.b.jaxpr_param(p, v)?)),
        };
        Ok(ScatterParams {
            kind: op_named(cx, &ScatterKind::ALL, ScatterKind::name)?,
            dimension_numbers: cx.field::<ScatterDims, _>("dimension_numbers", None)?,
            indices_are_sorted: cx.field::<Bool, _>("indices_are_sorted", Some(false))?,
            mode: cx.field::<Mode, _>("mode", None)?,
            unique_indices: cx.field::<Bool, _>("unique_indices", Some(false))?,
            update_jaxpr,
        })
    }
}

/// `(lhs, rhs)` precisions, or `None`; one bare precision is read as both.
struct Prec;

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Default => "Precision.DEFAULT",
        Precision::High => "Precision.HIGH",
        Precision::Highest => "Precision.HIGHEST",
    }
}

fn one_precision(cx: &ParseCx<'_, '_, '_>, v: &Src) -> PResult<Precision> {
    let w = match &v.v {
        PValue::Word(w) => w.rsplit('.').next().unwrap_or(""),
        _ => "",
    };
    Ok(match w {
        "DEFAULT" => Precision::Default,
        "HIGH" => Precision::High,
        "HIGHEST" => Precision::Highest,
        _ => return Err(bad(cx, v, "a Precision")),
    })
}

impl Codec<Option<(Precision, Precision)>> for Prec {
    fn print(v: &Option<(Precision, Precision)>) -> PV<'_> {
        text(match v {
            None => "None".to_string(),
            Some((a, b)) => format!("({}, {})", precision_name(*a), precision_name(*b)),
        })
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Option<(Precision, Precision)>> {
        if Params::is_none(v) {
            return Ok(None);
        }
        match &v.v {
            PValue::Tuple(items) => match items.as_slice() {
                [l, r] => Ok(Some((one_precision(cx, l)?, one_precision(cx, r)?))),
                _ => Err(bad(cx, v, "a pair of Precisions")),
            },
            _ => {
                let x = one_precision(cx, v)?;
                Ok(Some((x, x)))
            }
        }
    }
}

/// A dtype or `None`.
struct OptDt;

impl Codec<Option<DType>> for OptDt {
    fn print(v: &Option<DType>) -> PV<'_> {
        text(v.map_or("None", |d| d.numpy_name()))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Option<DType>> {
        if Params::is_none(v) {
            Ok(None)
        } else {
            cx.p.dtype_of(v).map(Some)
        }
    }
}

/// `(([lc], [rc]), ([lb], [rb]))`.
struct DotDims;

impl Codec<DotDimensionNumbers> for DotDims {
    fn print(d: &DotDimensionNumbers) -> PV<'_> {
        text(format!(
            "(({}, {}), ({}, {}))",
            list(&d.lhs_contracting),
            list(&d.rhs_contracting),
            list(&d.lhs_batch),
            list(&d.rhs_batch)
        ))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<DotDimensionNumbers> {
        let p = cx.p;
        let parts = p.items_of(v)?;
        let (Some(c), Some(bt)) = (parts.first(), parts.get(1)) else {
            return Err(bad(cx, v, "`((lc, rc), (lb, rb))`"));
        };
        let pair = |x: &Src| -> PResult<(Vec<usize>, Vec<usize>)> {
            match p.items_of(x)? {
                [l, r] => Ok((p.usizes_of(l)?, p.usizes_of(r)?)),
                _ => Err(p.err(x.start, format!("expected a pair, found `{}`", p.src(x)))),
            }
        };
        let (lhs_contracting, rhs_contracting) = pair(c)?;
        let (lhs_batch, rhs_batch) = pair(bt)?;
        Ok(DotDimensionNumbers {
            lhs_contracting,
            rhs_contracting,
            lhs_batch,
            rhs_batch,
        })
    }
}

/// `precision` and `preferred_element_type` are elided when `None`.
impl ParamsText for DotGeneralParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("dimension_numbers", DotDims::print(&self.dimension_numbers)));
        if self.precision.is_some() {
            out.push(("precision", Prec::print(&self.precision)));
        }
        if self.preferred_element_type.is_some() {
            out.push((
                "preferred_element_type",
                OptDt::print(&self.preferred_element_type),
            ));
        }
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(DotGeneralParams {
            dimension_numbers: cx.field::<DotDims, _>("dimension_numbers", None)?,
            precision: cx.field::<Prec, _>("precision", Some(None))?,
            preferred_element_type: cx.field::<OptDt, _>("preferred_element_type", Some(None))?,
        })
    }
}

/// `ConvDimensionNumbers(lhs_spec=(..), rhs_spec=(..), out_spec=(..))`.
struct ConvDims;

impl Codec<ConvDimensionNumbers> for ConvDims {
    fn print(d: &ConvDimensionNumbers) -> PV<'_> {
        text(format!(
            "ConvDimensionNumbers(lhs_spec={}, rhs_spec={}, out_spec={})",
            usizes(&d.lhs_spec),
            usizes(&d.rhs_spec),
            usizes(&d.out_spec)
        ))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<ConvDimensionNumbers> {
        let p = cx.p;
        let args = p.kwargs_of(v, "ConvDimensionNumbers")?;
        let f = |k: &str| -> PResult<Vec<usize>> { p.usizes_of(p.kwarg(args, k, v)?) };
        Ok(ConvDimensionNumbers {
            lhs_spec: f("lhs_spec")?,
            rhs_spec: f("rhs_spec")?,
            out_spec: f("out_spec")?,
        })
    }
}

/// `((low, high), ...)`, one pair per spatial dimension.
pub(super) struct Padding;

impl Codec<Vec<(i64, i64)>> for Padding {
    fn print(v: &Vec<(i64, i64)>) -> PV<'_> {
        text(tuple(
            v.iter().map(|(a, b)| format!("({a}, {b})")).collect(),
        ))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Vec<(i64, i64)>> {
        let p = cx.p;
        p.items_of(v)?
            .iter()
            .map(|t| match p.ints_of(t)?.values.as_slice() {
                [lo, hi] => Ok((*lo, *hi)),
                _ => Err(bad(cx, t, "`(low, high)`")),
            })
            .collect()
    }
}

impl ParamsText for ConvGeneralDilatedParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("batch_group_count", Num::print(&self.batch_group_count)));
        out.push((
            "dimension_numbers",
            ConvDims::print(&self.dimension_numbers),
        ));
        out.push(("feature_group_count", Num::print(&self.feature_group_count)));
        out.push(("lhs_dilation", Axes::print(&self.lhs_dilation)));
        out.push(("out_sharding", text("None")));
        out.push(("padding", Padding::print(&self.padding)));
        out.push(("precision", Prec::print(&self.precision)));
        out.push((
            "preferred_element_type",
            OptDt::print(&self.preferred_element_type),
        ));
        out.push(("rhs_dilation", Axes::print(&self.rhs_dilation)));
        out.push(("window_strides", Axes::print(&self.window_strides)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        cx.constant("out_sharding", "None")?;
        Ok(ConvGeneralDilatedParams {
            window_strides: cx.field::<Axes, _>("window_strides", None)?,
            padding: cx.field::<Padding, _>("padding", None)?,
            lhs_dilation: cx.field::<Axes, _>("lhs_dilation", None)?,
            rhs_dilation: cx.field::<Axes, _>("rhs_dilation", None)?,
            dimension_numbers: cx.field::<ConvDims, _>("dimension_numbers", None)?,
            feature_group_count: cx.field::<Num, _>("feature_group_count", None)?,
            batch_group_count: cx.field::<Num, _>("batch_group_count", None)?,
            precision: cx.field::<Prec, _>("precision", Some(None))?,
            preferred_element_type: cx.field::<OptDt, _>("preferred_element_type", Some(None))?,
        })
    }
}
