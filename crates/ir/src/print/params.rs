//! Equation params as JAX 0.10.2 prints them: which params each primitive
//! shows (after its pp rule's elisions), in printed order, as Python reprs.

use super::{Part, PV};
use crate::aval::ShapedArray;
use crate::dtype::DType;
use crate::literal::python_float_repr;
use crate::primitive::{
    AllGatherParams, AllReduceParams, ArgReduceParams, AtomicRmwParams, AxisIndexParams,
    BitcastConvertTypeParams, BroadcastInDimParams, Collective, ConcatenateParams, CondParams,
    Control, ConvGeneralDilatedParams, ConvertElementTypeParams, CumulativeParams,
    CustomJvpCallParams, CustomVjpCallParams, DotGeneralParams, DynamicSliceParams, Elementwise,
    Empty2Params, ForLoopParams, GatherParams, Indexing, IntegerPowParams, IotaParams, JitParams,
    Linalg, NumProgramsParams, PadParams, Pallas, PallasCallParams, ProgramIdParams, ReduceParams,
    ReducePrecisionParams, Reduction, RematParams, ReshapeParams, RevParams, RoundParams,
    ScanParams, ScatterParams, SliceParams, SortParams, SplitParams, SqueezeParams, StackParams,
    Structural, TileParams, TopKParams, TransposeParams, WhileParams,
};
use crate::primitive::{
    AtomicOp, BlockDim, BlockMapping, ConvDimensionNumbers, DotDimensionNumbers, FillValue,
    GatherDimensionNumbers, GatherScatterMode, IndexEntry, IndexValue, Indexer, Ints, Precision,
    Primitive, RoundingMethod, ScatterDimensionNumbers,
};

type Params<'a> = Vec<(&'static str, PV<'a>)>;

fn t(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

fn py_bool(b: bool) -> &'static str {
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

fn list(xs: &[usize]) -> String {
    let items: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn usizes(xs: &[usize]) -> String {
    tuple(xs.iter().map(|x| x.to_string()).collect())
}

fn ints(xs: &Ints) -> String {
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

fn shape(xs: &[Option<usize>]) -> String {
    tuple(
        xs.iter()
            .map(|x| match x {
                Some(n) => n.to_string(),
                None => "None".to_string(),
            })
            .collect(),
    )
}

fn dtype(d: DType) -> String {
    d.numpy_name().to_string()
}

fn opt_dtype(d: Option<DType>) -> String {
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
            Elementwise::IntegerPow(IntegerPowParams { y }) => v.push(("y", t(y.to_string()))),
            Elementwise::Round(RoundParams { rounding_method }) => v.push((
                "rounding_method",
                t(match rounding_method {
                    RoundingMethod::AwayFromZero => "0",
                    RoundingMethod::ToNearestEven => "1",
                }),
            )),
            Elementwise::ReducePrecision(ReducePrecisionParams {
                exponent_bits,
                mantissa_bits,
            }) => {
                v.push(("exponent_bits", t(exponent_bits.to_string())));
                v.push(("mantissa_bits", t(mantissa_bits.to_string())));
            }
            Elementwise::ConvertElementType(ConvertElementTypeParams {
                new_dtype,
                weak_type,
            }) => {
                v.push(("new_dtype", t(dtype(*new_dtype))));
                v.push(("weak_type", t(py_bool(*weak_type))));
            }
            Elementwise::BitcastConvertType(BitcastConvertTypeParams { new_dtype }) => {
                v.push(("new_dtype", t(dtype(*new_dtype))))
            }
            Elementwise::SelectN | Elementwise::Clamp => {}
        },
        Primitive::Indexing(f) => match f {
            Indexing::DynamicUpdateSlice => {}
            Indexing::Slice(SliceParams {
                start_indices,
                limit_indices,
                strides,
            }) => {
                v.push(("limit_indices", t(ints(limit_indices))));
                v.push(("start_indices", t(ints(start_indices))));
                v.push((
                    "strides",
                    t(strides.as_ref().map(ints).unwrap_or_else(|| "None".into())),
                ));
            }
            Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
                v.push(("slice_sizes", t(ints(slice_sizes))))
            }
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
            Structural::BroadcastInDim(BroadcastInDimParams {
                broadcast_dimensions,
                shape: s,
            }) => {
                // A dynamic result size (`None`) prints as the seeds print it:
                // `broadcast_dimensions=() shape=(None,)`.
                if s.iter().any(Option::is_none) {
                    v.push(("broadcast_dimensions", t(ints(broadcast_dimensions))));
                    v.push(("shape", t(shape(s))));
                } else if !broadcast_dimensions.is_empty() {
                    v.push(("broadcast_dimensions", t(ints(broadcast_dimensions))));
                }
            }
            Structural::Reshape(ReshapeParams {
                new_sizes,
                dimensions,
            }) => {
                v.push((
                    "dimensions",
                    t(dimensions
                        .as_ref()
                        .map(|d| usizes(d))
                        .unwrap_or_else(|| "None".into())),
                ));
                v.push(("new_sizes", t(shape(new_sizes))));
                v.push(("sharding", t("None")));
            }
            Structural::Transpose(TransposeParams { permutation }) => {
                v.push(("permutation", t(usizes(permutation))))
            }
            Structural::Squeeze(SqueezeParams { dimensions })
            | Structural::Rev(RevParams { dimensions }) => {
                v.push(("dimensions", t(usizes(dimensions))))
            }
            Structural::Pad(PadParams { padding_config }) => v.push((
                "padding_config",
                t(tuple(padding_config.iter().map(ints).collect())),
            )),
            Structural::Concatenate(ConcatenateParams { dimension }) => {
                v.push(("dimension", t(dimension.to_string())))
            }
            Structural::Iota(IotaParams {
                dtype: d,
                shape: s,
                dimension,
            }) => {
                v.push(("dimension", t(dimension.to_string())));
                v.push(("dtype", t(dtype(*d))));
                v.push(("shape", t(shape(s))));
                v.push(("sharding", t("None")));
            }
            Structural::Split(SplitParams { sizes, axis }) => {
                v.push(("axis", t(axis.to_string())));
                v.push(("sizes", t(ints(sizes))));
            }
            Structural::Tile(TileParams { reps }) => v.push(("reps", t(ints(reps)))),
            Structural::Stack(StackParams { axis }) => v.push(("axis", t(axis.to_string()))),
            Structural::Empty2(Empty2Params { dtype: d }) => {
                v.push(("dtype", t(dtype(*d))));
                v.push(("memory_space", t("MemorySpace.Device")));
            }
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
            Reduction::Sort(SortParams {
                dimension,
                is_stable,
                num_keys,
            }) => {
                v.push(("dimension", t(dimension.to_string())));
                v.push(("is_stable", t(py_bool(*is_stable))));
                v.push(("num_keys", t(num_keys.to_string())));
            }
            Reduction::TopK(TopKParams { k, axis }) => {
                v.push(("axis", t(axis.to_string())));
                v.push(("k", t(k.to_string())));
            }
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
            Control::Cond(CondParams { branches }) => v.push((
                "branches",
                PV::Jaxprs(branches.iter().map(|b| &*b.jaxpr).collect()),
            )),
            Control::While(WhileParams {
                cond_jaxpr,
                body_jaxpr,
                cond_nconsts,
                body_nconsts,
            }) => {
                v.push(("body_jaxpr", PV::Jaxpr(&body_jaxpr.jaxpr)));
                v.push(("body_nconsts", t(body_nconsts.to_string())));
                v.push(("cond_jaxpr", PV::Jaxpr(&cond_jaxpr.jaxpr)));
                v.push(("cond_nconsts", t(cond_nconsts.to_string())));
            }
            Control::Scan(ScanParams {
                jaxpr,
                length,
                reverse,
                num_consts,
                num_carry,
                unroll,
                linear,
                split_transpose,
            }) => {
                // JAX 0.10.2's scan has neither `linear` nor `_split_transpose`;
                // they are printed only when set, so that such jaxprs round-trip.
                if *split_transpose {
                    v.push(("_split_transpose", t("True")));
                }
                v.push(("jaxpr", PV::Jaxpr(&jaxpr.jaxpr)));
                v.push(("length", t(length.to_string())));
                if linear.iter().any(|&b| b) {
                    v.push((
                        "linear",
                        t(tuple(
                            linear.iter().map(|&b| py_bool(b).to_string()).collect(),
                        )),
                    ));
                }
                v.push(("num_carry", t(num_carry.to_string())));
                v.push(("num_consts", t(num_consts.to_string())));
                v.push(("reverse", t(py_bool(*reverse))));
                v.push(("unroll", t(unroll.to_string())));
            }
            Control::ForLoop(ForLoopParams {
                body_jaxpr,
                body_nconsts,
                nimplicit,
                preserve_dimensions,
                apply_reverse_transform,
            }) => {
                v.push((
                    "apply_reverse_transform",
                    t(py_bool(*apply_reverse_transform)),
                ));
                v.push(("body_jaxpr", PV::Jaxpr(&body_jaxpr.jaxpr)));
                v.push(("body_nconsts", t(body_nconsts.to_string())));
                v.push(("nimplicit", t(nimplicit.to_string())));
                v.push(("preserve_dimensions", t(py_bool(*preserve_dimensions))));
            }
            Control::Jit(JitParams { name, jaxpr }) => {
                name_first = true;
                v.push(("name", t(name.clone())));
                v.push(("jaxpr", PV::Jaxpr(&jaxpr.jaxpr)));
            }
            Control::CustomJvpCall(CustomJvpCallParams {
                name,
                call_jaxpr,
                jvp,
                num_consts,
                symbolic_zeros,
            }) => {
                name_first = true;
                v.push(("name", t(name.clone())));
                v.push(("call_jaxpr", PV::Jaxpr(&call_jaxpr.jaxpr)));
                v.push(("jvp", t(jvp.clone())));
                if *num_consts != 0 {
                    v.push(("num_consts", t(num_consts.to_string())));
                }
                v.push(("symbolic_zeros", t(py_bool(*symbolic_zeros))));
            }
            Control::CustomVjpCall(CustomVjpCallParams {
                name,
                call_jaxpr,
                fwd,
                bwd,
                num_consts,
                symbolic_zeros,
            }) => {
                name_first = true;
                v.push(("name", t(name.clone())));
                v.push(("bwd", t(bwd.clone())));
                v.push(("call_jaxpr", PV::Jaxpr(&call_jaxpr.jaxpr)));
                v.push(("fwd", t(fwd.clone())));
                if *num_consts != 0 {
                    v.push(("num_consts", t(num_consts.to_string())));
                }
                v.push(("symbolic_zeros", t(py_bool(*symbolic_zeros))));
            }
            Control::Remat(RematParams {
                jaxpr,
                prevent_cse,
                differentiated,
                policy,
            }) => {
                v.push(("differentiated", t(py_bool(*differentiated))));
                v.push(("jaxpr", PV::Jaxpr(jaxpr)));
                v.push(("policy", t(policy.clone().unwrap_or_else(|| "None".into()))));
                v.push(("prevent_cse", t(py_bool(*prevent_cse))));
            }
        },
        // Printed with arrow forms by `state`; no params.
        Primitive::State(_) => {}
        Primitive::Pallas(f) => match f {
            // Printed with arrow forms by `state`; no params.
            Pallas::Load(_) | Pallas::Store(_) | Pallas::AtomicCas(_) => {}
            Pallas::ProgramId(ProgramIdParams { axis })
            | Pallas::NumPrograms(NumProgramsParams { axis }) => {
                v.push(("axis", t(axis.to_string())))
            }
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
