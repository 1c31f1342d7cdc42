//! Typing an equation's params: from the param syntax trees (and, for params
//! JAX elides, the equation's types) to a `Primitive`.

use super::build::{bare, Builder};
use super::params::{PValue, Params, PV};
use super::syntax::{PResult, RawEqn};
use crate::aval::{Aval, Dim, ShapedArray};
use crate::params_text::{parse_by_name, ParseCx};
use crate::primitive::{
    ArgOp, BinaryOp, BlockDim, BlockMapping, CollectiveOp, ConvDimensionNumbers, CumulativeOp,
    DotDimensionNumbers, FillValue, GatherDimensionNumbers, GatherScatterMode, Ints, Precision,
    Primitive, ReduceOp, ScatterDimensionNumbers, ScatterKind, UnaryOp,
};
use crate::primitive::{
    ArgReduceParams, ConvGeneralDilatedParams, CumulativeParams, DotGeneralParams, Elementwise,
    GatherParams, Indexing, Linalg, PallasCallParams, ReduceParams, ScatterParams,
};

const REDUCE_OPS: [ReduceOp; 7] = [
    ReduceOp::Sum,
    ReduceOp::Max,
    ReduceOp::Min,
    ReduceOp::Prod,
    ReduceOp::And,
    ReduceOp::Or,
    ReduceOp::Xor,
];
const ARG_OPS: [ArgOp; 2] = [ArgOp::Argmax, ArgOp::Argmin];
const CUM_OPS: [CumulativeOp; 5] = [
    CumulativeOp::Cumsum,
    CumulativeOp::Cumprod,
    CumulativeOp::Cummax,
    CumulativeOp::Cummin,
    CumulativeOp::Cumlogsumexp,
];
const SCATTER_KINDS: [ScatterKind; 5] = [
    ScatterKind::Set,
    ScatterKind::Add,
    ScatterKind::Mul,
    ScatterKind::Min,
    ScatterKind::Max,
];

/// Builds the typed primitive of a raw equation.
pub(crate) fn to_primitive(
    b: &mut Builder,
    e: &RawEqn,
    in_avals: &[Option<Aval>],
    out_avals: &[Aval],
) -> PResult<Primitive> {
    let p = Params {
        text: b.text,
        prim: &e.name,
        pos: e.pos,
        params: &e.params,
    };
    if let Some(form) = &e.state {
        return super::state::state_primitive(&p, e, form, in_avals);
    }
    let name = e.name.as_str();
    if let Some(op) = UnaryOp::ALL.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(*op));
    }
    if let Some(op) = BinaryOp::ALL.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(*op));
    }
    if let Some(op) = REDUCE_OPS.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(ReduceParams {
            op: *op,
            axes: p.usizes("axes")?,
        }));
    }
    if let Some(op) = ARG_OPS.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(ArgReduceParams {
            op: *op,
            axes: p.usizes("axes")?,
            index_dtype: p.dtype("index_dtype")?,
        }));
    }
    if let Some(op) = CUM_OPS.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(CumulativeParams {
            op: *op,
            axis: p.usize("axis")?,
            reverse: p.bool_or("reverse", false)?,
        }));
    }
    if let Some(kind) = SCATTER_KINDS.iter().find(|o| o.name() == name) {
        let dn = p.req("dimension_numbers")?;
        let args = p.kwargs_of(dn, "ScatterDimensionNumbers")?;
        let f = |k: &str| -> PResult<Ints> { p.ints_of(p.kwarg(args, k, dn)?) };
        let update_jaxpr = match p.get("update_jaxpr") {
            None => None,
            Some(v) if Params::is_none(v) => None,
            Some(v) => Some(bare(b.jaxpr_param(&p, v)?)),
        };
        return Ok(Primitive::from(ScatterParams {
            kind: *kind,
            dimension_numbers: ScatterDimensionNumbers {
                update_window_dims: f("update_window_dims")?,
                inserted_window_dims: f("inserted_window_dims")?,
                scatter_dims_to_operand_dims: f("scatter_dims_to_operand_dims")?,
                operand_batching_dims: f("operand_batching_dims")?,
                scatter_indices_batching_dims: f("scatter_indices_batching_dims")?,
            },
            indices_are_sorted: p.bool_or("indices_are_sorted", false)?,
            mode: mode_of(&p, p.req("mode")?)?,
            unique_indices: p.bool_or("unique_indices", false)?,
            update_jaxpr,
        }));
    }
    let mut cx = ParseCx {
        p: &p,
        b,
        n_inputs: e.inputs.len(),
        in_avals,
        out_avals,
    };
    if let Some(prim) = parse_by_name(name, &mut cx) {
        return prim;
    }
    let prim = match name {
        "select_n" => Primitive::Elementwise(Elementwise::SelectN),
        "clamp" => Primitive::Elementwise(Elementwise::Clamp),
        "dynamic_update_slice" => Primitive::Indexing(Indexing::DynamicUpdateSlice),
        "gather" => {
            let dn = p.req("dimension_numbers")?;
            let args = p.kwargs_of(dn, "GatherDimensionNumbers")?;
            let f = |k: &str| -> PResult<Ints> { p.ints_of(p.kwarg(args, k, dn)?) };
            let fill_value = match p.get("fill_value") {
                None => None,
                Some(v) if Params::is_none(v) => None,
                Some(v) => {
                    let s = p.src(v);
                    if s.contains(['.', 'e', 'n']) {
                        Some(FillValue::Float(p.float_of(v)?))
                    } else {
                        Some(FillValue::Int(p.int_of(v)?))
                    }
                }
            };
            Primitive::Indexing(Indexing::Gather(GatherParams {
                dimension_numbers: GatherDimensionNumbers {
                    offset_dims: f("offset_dims")?,
                    collapsed_slice_dims: f("collapsed_slice_dims")?,
                    start_index_map: f("start_index_map")?,
                    operand_batching_dims: f("operand_batching_dims")?,
                    start_indices_batching_dims: f("start_indices_batching_dims")?,
                },
                fill_value,
                indices_are_sorted: p.bool_or("indices_are_sorted", false)?,
                mode: mode_of(&p, p.req("mode")?)?,
                slice_sizes: p.ints("slice_sizes")?,
                unique_indices: p.bool_or("unique_indices", false)?,
            }))
        }
        "dot_general" => {
            let v = p.req("dimension_numbers")?;
            let parts = p.items_of(v)?;
            let (Some(c), Some(bt)) = (parts.first(), parts.get(1)) else {
                return Err(p.err(v.start, "expected `((lc, rc), (lb, rb))`"));
            };
            let pair = |x: &PV| -> PResult<(Vec<usize>, Vec<usize>)> {
                let it = p.items_of(x)?;
                match it {
                    [l, r] => Ok((p.usizes_of(l)?, p.usizes_of(r)?)),
                    _ => Err(p.err(x.start, format!("expected a pair, found `{}`", p.src(x)))),
                }
            };
            let (lc, rc) = pair(c)?;
            let (lb, rb) = pair(bt)?;
            Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
                dimension_numbers: DotDimensionNumbers {
                    lhs_contracting: lc,
                    rhs_contracting: rc,
                    lhs_batch: lb,
                    rhs_batch: rb,
                },
                precision: precision_of(&p)?,
                preferred_element_type: p.opt_dtype("preferred_element_type")?,
            }))
        }
        "conv_general_dilated" => {
            let dn = p.req("dimension_numbers")?;
            let args = p.kwargs_of(dn, "ConvDimensionNumbers")?;
            let f = |k: &str| -> PResult<Vec<usize>> { p.usizes_of(p.kwarg(args, k, dn)?) };
            let pad = p.req("padding")?;
            let padding = p
                .items_of(pad)?
                .iter()
                .map(|t| {
                    let i = p.ints_of(t)?;
                    match i.values.as_slice() {
                        [lo, hi] => Ok((*lo, *hi)),
                        _ => Err(p.err(
                            t.start,
                            format!("expected `(low, high)`, found `{}`", p.src(t)),
                        )),
                    }
                })
                .collect::<PResult<_>>()?;
            Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
                window_strides: p.usizes("window_strides")?,
                padding,
                lhs_dilation: p.usizes("lhs_dilation")?,
                rhs_dilation: p.usizes("rhs_dilation")?,
                dimension_numbers: ConvDimensionNumbers {
                    lhs_spec: f("lhs_spec")?,
                    rhs_spec: f("rhs_spec")?,
                    out_spec: f("out_spec")?,
                },
                feature_group_count: p.usize("feature_group_count")?,
                batch_group_count: p.usize("batch_group_count")?,
                precision: precision_of(&p)?,
                preferred_element_type: p.opt_dtype("preferred_element_type")?,
            }))
        }
        "pallas_call" => pallas_call(b, &p, in_avals)?,
        "psum" => super::collective::all_reduce(&p, CollectiveOp::Sum)?,
        "pmax" => super::collective::all_reduce(&p, CollectiveOp::Max)?,
        "pmin" => super::collective::all_reduce(&p, CollectiveOp::Min)?,
        "all_gather" => super::collective::all_gather(&p)?,
        "axis_index" => super::collective::axis_index(&p)?,
        "get" | "swap" | "addupdate" | "load" | "store" | "masked_load" | "masked_swap"
        | "atomic_rmw" | "atomic_cas" => super::state::state_primitive_plain(&p, e, in_avals)?,
        _ => {
            return Err(p.err(
                e.pos,
                format!("expected a primitive name, found unknown primitive `{name}`"),
            ))
        }
    };
    Ok(prim)
}

fn mode_of(p: &Params, v: &PV) -> PResult<GatherScatterMode> {
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
        _ => {
            return Err(p.err(
                v.start,
                format!("expected a GatherScatterMode, found `{}`", p.src(v)),
            ))
        }
    })
}

fn one_precision(p: &Params, v: &PV) -> PResult<Precision> {
    let w = match &v.v {
        PValue::Word(w) => w.rsplit('.').next().unwrap_or(""),
        _ => "",
    };
    Ok(match w {
        "DEFAULT" => Precision::Default,
        "HIGH" => Precision::High,
        "HIGHEST" => Precision::Highest,
        _ => {
            return Err(p.err(
                v.start,
                format!("expected a Precision, found `{}`", p.src(v)),
            ))
        }
    })
}

fn precision_of(p: &Params) -> PResult<Option<(Precision, Precision)>> {
    match p.get("precision") {
        None => Ok(None),
        Some(v) if Params::is_none(v) => Ok(None),
        Some(v) => match &v.v {
            PValue::Tuple(items) => match items.as_slice() {
                [l, r] => Ok(Some((one_precision(p, l)?, one_precision(p, r)?))),
                _ => Err(p.err(
                    v.start,
                    format!("expected a pair of Precisions, found `{}`", p.src(v)),
                )),
            },
            _ => {
                let x = one_precision(p, v)?;
                Ok(Some((x, x)))
            }
        },
    }
}

fn pallas_call(b: &mut Builder, p: &Params, in_avals: &[Option<Aval>]) -> PResult<Primitive> {
    let kernel = bare(b.jaxpr_param(p, p.req("jaxpr")?)?);
    let out_avals: Vec<ShapedArray> = match p.get("out_avals") {
        Some(v) => p
            .items_of(v)?
            .iter()
            .map(|x| match &x.v {
                PValue::Call(_, args) => match args.as_slice() {
                    [(
                        _,
                        PV {
                            v: PValue::Type(t), ..
                        },
                    )] => Ok(t.clone()),
                    _ => Err(p.err(
                        x.start,
                        format!("expected `ShapedArray(dtype[shape])`, found `{}`", p.src(x)),
                    )),
                },
                PValue::Type(t) => Ok(t.clone()),
                _ => Err(p.err(
                    x.start,
                    format!("expected `ShapedArray(dtype[shape])`, found `{}`", p.src(x)),
                )),
            })
            .collect::<PResult<_>>()?,
        None => Vec::new(),
    };
    let mut grid = Vec::new();
    let mut block_mappings = Vec::new();
    if let Some(gm) = p.get("grid_mapping") {
        let args = p.kwargs_of(gm, "GridMapping")?;
        grid = p.usizes_of(p.kwarg(args, "grid", gm)?)?;
        let bms = p.kwarg(args, "block_mappings", gm)?;
        for (k, bm) in p.items_of(bms)?.iter().enumerate() {
            let bargs = p.kwargs_of(bm, "BlockMapping")?;
            let bs = p.kwarg(bargs, "block_shape", bm)?;
            let mut block_shape = Vec::new();
            for d in p.items_of(bs)? {
                block_shape.push(match &d.v {
                    PValue::Word(w) if w == "None" || w.ends_with("Squeezed") => BlockDim::Squeezed,
                    PValue::Call(n, a) if n.ends_with("Squeezed") && a.is_empty() => {
                        BlockDim::Squeezed
                    }
                    PValue::Call(_, a) => match a.as_slice() {
                        [(_, x)] => BlockDim::Blocked(p.usize_of(x)?),
                        _ => {
                            return Err(p.err(
                                d.start,
                                format!("expected `Blocked(block_size=n)`, found `{}`", p.src(d)),
                            ))
                        }
                    },
                    _ => BlockDim::Blocked(p.usize_of(d)?),
                });
            }
            let index_map = b.jaxpr_param(p, p.kwarg(bargs, "index_map", bm)?)?;
            let array_aval = match bargs
                .iter()
                .find(|(k, _)| k.as_deref() == Some("array_aval"))
            {
                Some((
                    _,
                    PV {
                        v: PValue::Call(_, a),
                        ..
                    },
                )) => match a.as_slice() {
                    [(
                        _,
                        PV {
                            v: PValue::Type(t), ..
                        },
                    )] => t.clone(),
                    _ => {
                        return Err(
                            p.err(bm.start, "expected `array_aval=ShapedArray(dtype[shape])`")
                        )
                    }
                },
                _ => {
                    let from_in = in_avals
                        .get(k)
                        .and_then(|a| a.as_ref())
                        .map(|a| a.array().clone());
                    let n_in = in_avals.len();
                    from_in
                        .or_else(|| out_avals.get(k.wrapping_sub(n_in)).cloned())
                        .unwrap_or_else(|| {
                            ShapedArray::new(crate::dtype::DType::F32, vec![Dim::Const(0)])
                        })
                }
            };
            block_mappings.push(BlockMapping {
                block_shape,
                index_map,
                array_aval,
            });
        }
    }
    let input_output_aliases = match p.get("input_output_aliases") {
        None => Vec::new(),
        Some(v) => p
            .items_of(v)?
            .iter()
            .map(|x| {
                let pr = p.usizes_of(x)?;
                match pr.as_slice() {
                    [a, o] => Ok((*a, *o)),
                    _ => Err(p.err(
                        x.start,
                        format!("expected `(input, output)`, found `{}`", p.src(x)),
                    )),
                }
            })
            .collect::<PResult<_>>()?,
    };
    Ok(Primitive::from(PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        name: match p.get("name") {
            None => None,
            Some(v) if Params::is_none(v) => None,
            Some(v) => Some(p.src(v)),
        },
        interpret: p.bool_or("interpret", false)?,
        debug: p.bool_or("debug", false)?,
        input_output_aliases,
    }))
}
