//! Equation params as JAX 0.10.2 prints them: which params each primitive
//! shows (after its pp rule's elisions), in printed order, as Python reprs.

use super::{Part, PV};
use crate::aval::ShapedArray;
use crate::params_text::ParamsText;
use crate::primitive::{
    AtomicOp, BlockDim, BlockMapping, IndexEntry, IndexValue, Indexer, Ints, Primitive,
};
use crate::primitive::{
    AtomicRmwParams, Collective, Control, Elementwise, Indexing, Linalg, Pallas, PallasCallParams,
    Reduction, Structural,
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
            Indexing::Gather(x) => name_first = text(x, &mut v),
            Indexing::Scatter(x) => name_first = text(x, &mut v),
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
            Reduction::Reduce(x) => name_first = text(x, &mut v),
            Reduction::ArgReduce(x) => name_first = text(x, &mut v),
            Reduction::Cumulative(x) => name_first = text(x, &mut v),
            Reduction::Sort(x) => name_first = text(x, &mut v),
            Reduction::TopK(x) => name_first = text(x, &mut v),
        },
        Primitive::Linalg(f) => match f {
            Linalg::DotGeneral(x) => name_first = text(x, &mut v),
            Linalg::ConvGeneralDilated(x) => name_first = text(x, &mut v),
        },
        Primitive::Collective(f) => match f {
            Collective::AllReduce(x) => name_first = text(x, &mut v),
            Collective::AllGather(x) => name_first = text(x, &mut v),
            Collective::AxisIndex(x) => name_first = text(x, &mut v),
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
