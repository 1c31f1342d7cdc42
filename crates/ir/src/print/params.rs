//! Equation params as JAX 0.10.2 prints them: which params each primitive
//! shows (after its pp rule's elisions), in printed order, as Python reprs.

use super::{Part, PV};
use crate::aval::ShapedArray;
use crate::dtype::DType;
use crate::literal::python_float_repr;
use crate::params_text::ParamsText;
use crate::primitive::{
    AllGatherParams, AllReduceParams, ArgReduceParams, AtomicRmwParams, AxisIndexParams,
    Collective, Control, ConvGeneralDilatedParams, CumulativeParams, DotGeneralParams, Elementwise,
    GatherParams, Indexing, Linalg, Pallas, PallasCallParams, ReduceParams, Reduction,
    ScatterParams, Structural,
};
use crate::primitive::{
    AtomicOp, BlockDim, BlockMapping, ConvDimensionNumbers, DotDimensionNumbers, FillValue,
    GatherDimensionNumbers, GatherScatterMode, IndexEntry, IndexValue, Indexer, Ints, Precision,
    Primitive, ScatterDimensionNumbers,
};

type Params<'a> = Vec<(&'static str, PV<'a>)>;

/// Pushes a params struct's text; returns whether `name` prints first.
fn text<'a>(x: &'a dyn ParamsText, v: &mut Params<'a>) -> bool {
    x.print(v);
    x.name_first()
}

fn t(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A Python tuple of already-formatted items: `()`, `(1,)`, `(1, 2)`.
pub(crate) fn tuple(items: Vec<String>) -> String {
    match items.len() {
        0 => "()".to_string(),
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

pub(crate) fn list(xs: &[usize]) -> String {
    let items: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

pub(crate) fn usizes(xs: &[usize]) -> String {
    tuple(xs.iter().map(|x| x.to_string()).collect())
}

pub(crate) fn ints(xs: &Ints) -> String {
    tuple(
        xs.values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if xs.np_int64.get(i).copied().unwrap_or(false) {
                    format!("np.int64({v})")
                } else {
                    v.to_string()
                }
            })
            .collect(),
    )
}

pub(crate) fn shape(xs: &[Option<usize>]) -> String {
    tuple(
        xs.iter()
            .map(|x| match x {
                Some(n) => n.to_string(),
                None => "None".to_string(),
            })
            .collect(),
    )
}

pub(crate) fn dtype(d: DType) -> String {
    d.numpy_name().to_string()
}

pub(crate) fn opt_dtype(d: Option<DType>) -> String {
    d.map(dtype).unwrap_or_else(|| "None".to_string())
}

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Default => "Precision.DEFAULT",
        Precision::High => "Precision.HIGH",
        Precision::Highest => "Precision.HIGHEST",
    }
}

fn precision(p: Option<(Precision, Precision)>) -> String {
    match p {
        None => "None".to_string(),
        Some((a, b)) => format!("({}, {})", precision_name(a), precision_name(b)),
    }
}

fn mode(m: GatherScatterMode) -> String {
    match m {
        GatherScatterMode::Clip => "GatherScatterMode.CLIP",
        GatherScatterMode::FillOrDrop => "GatherScatterMode.FILL_OR_DROP",
        GatherScatterMode::PromiseInBounds => "GatherScatterMode.PROMISE_IN_BOUNDS",
        GatherScatterMode::OneHot => "GatherScatterMode.ONE_HOT",
    }
    .to_string()
}

fn dot_dims(d: &DotDimensionNumbers) -> String {
    format!(
        "(({}, {}), ({}, {}))",
        list(&d.lhs_contracting),
        list(&d.rhs_contracting),
        list(&d.lhs_batch),
        list(&d.rhs_batch)
    )
}

fn conv_dims(d: &ConvDimensionNumbers) -> String {
    format!(
        "ConvDimensionNumbers(lhs_spec={}, rhs_spec={}, out_spec={})",
        usizes(&d.lhs_spec),
        usizes(&d.rhs_spec),
        usizes(&d.out_spec)
    )
}

fn gather_dims(d: &GatherDimensionNumbers) -> String {
    format!(
        "GatherDimensionNumbers(offset_dims={}, collapsed_slice_dims={}, start_index_map={}, operand_batching_dims={}, start_indices_batching_dims={})",
        ints(&d.offset_dims),
        ints(&d.collapsed_slice_dims),
        ints(&d.start_index_map),
        ints(&d.operand_batching_dims),
        ints(&d.start_indices_batching_dims)
    )
}

fn scatter_dims(d: &ScatterDimensionNumbers) -> String {
    format!(
        "ScatterDimensionNumbers(update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, operand_batching_dims={}, scatter_indices_batching_dims={})",
        ints(&d.update_window_dims),
        ints(&d.inserted_window_dims),
        ints(&d.scatter_dims_to_operand_dims),
        ints(&d.operand_batching_dims),
        ints(&d.scatter_indices_batching_dims)
    )
}

fn fill_value(f: Option<FillValue>) -> String {
    match f {
        None => "None".to_string(),
        Some(FillValue::Int(i)) => i.to_string(),
        Some(FillValue::Float(x)) => python_float_repr(x),
    }
}

/// `ShapedArray(float32[4,4])`, as `str(ShapedArray)` prints.
fn shaped_array(a: &ShapedArray) -> String {
    let dims: Vec<String> = a
        .shape
        .iter()
        .map(|d| match d {
            crate::aval::Dim::Const(n) => n.to_string(),
            crate::aval::Dim::Var(v) => format!("v{}", v.0),
        })
        .collect();
    let weak = if a.weak_type { ", weak_type=True" } else { "" };
    format!(
        "ShapedArray({}[{}]{weak})",
        a.dtype.numpy_name(),
        dims.join(",")
    )
}

fn atomic_type(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "AtomicOpType.ADD",
        AtomicOp::Max => "AtomicOpType.MAX",
        AtomicOp::Min => "AtomicOpType.MIN",
        AtomicOp::And => "AtomicOpType.AND",
        AtomicOp::Or => "AtomicOpType.OR",
        AtomicOp::Xor => "AtomicOpType.XOR",
        AtomicOp::Xchg => "AtomicOpType.XCHG",
    }
}

/// The `args_tree` PyTreeDef of a Triton `atomic_rmw`: `(ref, (indexer,),
/// val, mask)`, with static slice bounds in the node data.
fn atomic_args_tree(indexers: &[Indexer], ref_shape: &[usize], has_mask: bool) -> String {
    let mut shape: Vec<usize> = ref_shape.to_vec();
    let mut idx_trees = Vec::new();
    for ix in indexers {
        let mut entries = Vec::new();
        let mut out_shape = Vec::new();
        for e in &ix.entries {
            entries.push(match e {
                IndexEntry::Slice {
                    start,
                    size,
                    stride,
                } => {
                    out_shape.push(*size);
                    match start {
                        IndexValue::Static(s) => {
                            format!("CustomNode(Slice[({s}, {size}, {stride})], [None, None])")
                        }
                        IndexValue::Dynamic(_) => {
                            format!("CustomNode(Slice[(None, {size}, {stride})], [*, None])")
                        }
                    }
                }
                IndexEntry::Int(_) | IndexEntry::Array(_) => "*".to_string(),
            });
        }
        let inner = tuple(entries);
        idx_trees.push(format!(
            "CustomNode(NDIndexer[(PyTreeDef({inner}), {}, ())], [])",
            usizes(&shape)
        ));
        shape = out_shape;
    }
    let mask = if has_mask { "*" } else { "None" };
    format!("PyTreeDef((*, {}, *, {mask}))", tuple(idx_trees))
}

fn block_mapping<'a>(b: &'a BlockMapping, parts: &mut Vec<Part<'a>>) {
    let dims: Vec<String> = b
        .block_shape
        .iter()
        .map(|d| match d {
            BlockDim::Blocked(n) => format!("Blocked(block_size={n})"),
            BlockDim::Squeezed => "Squeezed()".to_string(),
        })
        .collect();
    parts.push(Part::Text(format!(
        "BlockMapping(block_shape={}, array_aval={}, index_map=",
        tuple(dims),
        shaped_array(&b.array_aval)
    )));
    parts.push(Part::Jaxpr(&b.index_map.jaxpr));
    parts.push(Part::Text(")".to_string()));
}

/// The printed params of a primitive, in printed order.
///
/// `atomic_rmw`'s `args_tree` needs the ref's shape and whether a mask
/// operand is present; they are passed in by the caller via
/// [`params_with_ref`].
pub(crate) fn params(p: &Primitive) -> Params<'_> {
    params_with_ref(p, &[], false)
}

/// [`params`] with the ref shape and mask presence of a state equation.
pub(crate) fn params_with_ref<'a>(
    p: &'a Primitive,
    ref_shape: &[usize],
    has_mask: bool,
) -> Params<'a> {
    let mut v: Params<'a> = Vec::new();
    let mut name_first = false;
    match p {
        Primitive::Elementwise(f) => match f {
            Elementwise::Unary(_) | Elementwise::Binary(_) => {}
            Elementwise::IntegerPow(x) => name_first = text(x, &mut v),
            Elementwise::Round(x) => name_first = text(x, &mut v),
            Elementwise::ReducePrecision(x) => name_first = text(x, &mut v),
            Elementwise::ConvertElementType(x) => name_first = text(x, &mut v),
            Elementwise::BitcastConvertType(x) => name_first = text(x, &mut v),
            Elementwise::SelectN | Elementwise::Clamp => {}
        },
        Primitive::Indexing(f) => match f {
            Indexing::DynamicUpdateSlice => {}
            Indexing::Slice(x) => name_first = text(x, &mut v),
            Indexing::DynamicSlice(x) => name_first = text(x, &mut v),
            Indexing::Gather(GatherParams {
                dimension_numbers,
                fill_value: fv,
                indices_are_sorted,
                mode: m,
                slice_sizes,
                unique_indices,
            }) => {
                v.push(("dimension_numbers", t(gather_dims(dimension_numbers))));
                v.push(("fill_value", t(fill_value(*fv))));
                v.push(("indices_are_sorted", t(py_bool(*indices_are_sorted))));
                v.push(("mode", t(mode(*m))));
                v.push(("slice_sizes", t(ints(slice_sizes))));
                v.push(("unique_indices", t(py_bool(*unique_indices))));
            }
            Indexing::Scatter(ScatterParams {
                dimension_numbers,
                indices_are_sorted,
                mode: m,
                unique_indices,
                update_jaxpr,
                ..
            }) => {
                v.push(("dimension_numbers", t(scatter_dims(dimension_numbers))));
                v.push(("indices_are_sorted", t(py_bool(*indices_are_sorted))));
                v.push(("mode", t(mode(*m))));
                v.push(("unique_indices", t(py_bool(*unique_indices))));
                v.push(("update_consts", t("()")));
                v.push((
                    "update_jaxpr",
                    match update_jaxpr {
                        Some(j) => PV::Jaxpr(j),
                        None => t("None"),
                    },
                ));
            }
        },
        Primitive::Structural(f) => match f {
            Structural::BroadcastInDim(x) => name_first = text(x, &mut v),
            Structural::Reshape(x) => name_first = text(x, &mut v),
            Structural::Transpose(x) => name_first = text(x, &mut v),
            Structural::Squeeze(x) => name_first = text(x, &mut v),
            Structural::Rev(x) => name_first = text(x, &mut v),
            Structural::Pad(x) => name_first = text(x, &mut v),
            Structural::Concatenate(x) => name_first = text(x, &mut v),
            Structural::Iota(x) => name_first = text(x, &mut v),
            Structural::Split(x) => name_first = text(x, &mut v),
            Structural::Tile(x) => name_first = text(x, &mut v),
            Structural::Stack(x) => name_first = text(x, &mut v),
            Structural::Empty2(x) => name_first = text(x, &mut v),
        },
        Primitive::Reduction(f) => match f {
            Reduction::Reduce(ReduceParams { op, axes }) => {
                v.push(("axes", t(usizes(axes))));
                if *op == crate::primitive::ReduceOp::Sum {
                    v.push(("out_sharding", t("None")));
                }
            }
            Reduction::ArgReduce(ArgReduceParams {
                axes, index_dtype, ..
            }) => {
                v.push(("axes", t(usizes(axes))));
                v.push(("index_dtype", t(dtype(*index_dtype))));
            }
            Reduction::Cumulative(CumulativeParams { axis, reverse, .. }) => {
                v.push(("axis", t(axis.to_string())));
                v.push(("reverse", t(py_bool(*reverse))));
            }
            Reduction::Sort(x) => name_first = text(x, &mut v),
            Reduction::TopK(x) => name_first = text(x, &mut v),
        },
        Primitive::Linalg(f) => match f {
            Linalg::DotGeneral(DotGeneralParams {
                dimension_numbers,
                precision: pr,
                preferred_element_type,
            }) => {
                v.push(("dimension_numbers", t(dot_dims(dimension_numbers))));
                if pr.is_some() {
                    v.push(("precision", t(precision(*pr))));
                }
                if let Some(d) = preferred_element_type {
                    v.push(("preferred_element_type", t(dtype(*d))));
                }
            }
            Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
                window_strides,
                padding,
                lhs_dilation,
                rhs_dilation,
                dimension_numbers,
                feature_group_count,
                batch_group_count,
                precision: pr,
                preferred_element_type,
            }) => {
                v.push(("batch_group_count", t(batch_group_count.to_string())));
                v.push(("dimension_numbers", t(conv_dims(dimension_numbers))));
                v.push(("feature_group_count", t(feature_group_count.to_string())));
                v.push(("lhs_dilation", t(usizes(lhs_dilation))));
                v.push(("out_sharding", t("None")));
                v.push((
                    "padding",
                    t(tuple(
                        padding.iter().map(|(a, b)| format!("({a}, {b})")).collect(),
                    )),
                ));
                v.push(("precision", t(precision(*pr))));
                v.push((
                    "preferred_element_type",
                    t(opt_dtype(*preferred_element_type)),
                ));
                v.push(("rhs_dilation", t(usizes(rhs_dilation))));
                v.push(("window_strides", t(usizes(window_strides))));
            }
        },
        Primitive::Collective(f) => match f {
            Collective::AllReduce(AllReduceParams { axes, .. }) => {
                v.push(("axes", t(tuple(axes.iter().map(|a| a.repr()).collect()))));
                v.push(("axis_index_groups", t("None")));
            }
            Collective::AllGather(AllGatherParams {
                axis_name,
                all_gather_dimension,
                axis_size,
                tiled,
            }) => {
                v.push(("all_gather_dimension", t(all_gather_dimension.to_string())));
                v.push(("axis_index_groups", t("None")));
                let names = axis_name.iter().map(|n| format!("'{n}'")).collect();
                v.push(("axis_name", t(tuple(names))));
                v.push(("axis_size", t(axis_size.to_string())));
                v.push(("tiled", t(py_bool(*tiled))));
            }
            Collective::AxisIndex(AxisIndexParams { axis_name }) => {
                v.push(("axis_name", t(axis_name.clone())))
            }
        },
        Primitive::Control(f) => match f {
            Control::Cond(x) => name_first = text(x, &mut v),
            Control::While(x) => name_first = text(x, &mut v),
            Control::Scan(x) => name_first = text(x, &mut v),
            Control::ForLoop(x) => name_first = text(x, &mut v),
            Control::Jit(x) => name_first = text(x, &mut v),
            Control::CustomJvpCall(x) => name_first = text(x, &mut v),
            Control::CustomVjpCall(x) => name_first = text(x, &mut v),
            Control::Remat(x) => name_first = text(x, &mut v),
        },
        // Printed with arrow forms by `state`; no params.
        Primitive::State(_) => {}
        Primitive::Pallas(f) => match f {
            // Printed with arrow forms by `state`; no params.
            Pallas::Load(_) | Pallas::Store(_) | Pallas::AtomicCas(_) => {}
            Pallas::ProgramId(x) => name_first = text(x, &mut v),
            Pallas::NumPrograms(x) => name_first = text(x, &mut v),
            Pallas::AtomicRmw(AtomicRmwParams { indexers, op }) => {
                v.push((
                    "args_tree",
                    t(atomic_args_tree(indexers, ref_shape, has_mask)),
                ));
                v.push(("atomic_type", t(atomic_type(*op))));
            }
            Pallas::PallasCall(PallasCallParams {
                kernel,
                grid,
                block_mappings,
                out_avals,
                name,
                interpret,
                debug,
                input_output_aliases,
            }) => {
                // JAX prints `grid_mapping` without the index maps; ours adds
                // `array_aval=` and `index_map={ lambda ... }` to each
                // `BlockMapping(...)` so that the text parses back:
                // `BlockMapping(block_shape=(Blocked(block_size=2),),
                //  array_aval=ShapedArray(float32[4]), index_map={ lambda ; a:i32[]. let  in (a,) })`.
                v.push(("compiler_params", t("None")));
                v.push(("cost_estimate", t("None")));
                v.push(("debug", t(py_bool(*debug))));
                let mut parts = vec![Part::Text(format!(
                    "GridMapping(grid={}, block_mappings=(",
                    usizes(grid)
                ))];
                for (i, b) in block_mappings.iter().enumerate() {
                    if i > 0 {
                        parts.push(Part::Text(", ".into()));
                    }
                    block_mapping(b, &mut parts);
                }
                parts.push(Part::Text(
                    if block_mappings.len() == 1 {
                        ",))"
                    } else {
                        "))"
                    }
                    .to_string(),
                ));
                v.push(("grid_mapping", PV::Parts(parts)));
                v.push((
                    "input_output_aliases",
                    t(tuple(
                        input_output_aliases
                            .iter()
                            .map(|(a, b)| format!("({a}, {b})"))
                            .collect(),
                    )),
                ));
                v.push(("interpret", t(py_bool(*interpret))));
                v.push(("jaxpr", PV::Jaxpr(kernel)));
                v.push(("mesh", t("None")));
                v.push(("metadata", t("None")));
                v.push(("name", t(name.clone().unwrap_or_else(|| "None".into()))));
                v.push((
                    "out_avals",
                    t(tuple(out_avals.iter().map(shaped_array).collect())),
                ));
            }
        },
    }
    if name_first {
        v[1..].sort_by(|a, b| a.0.cmp(b.0));
    } else {
        v.sort_by(|a, b| a.0.cmp(b.0));
    }
    v
}
