//! Params text of the state primitives (`get`, `swap`, `addupdate`) and the
//! Pallas kernel primitives over `Ref`s (`load`, `store`, `atomic_rmw`,
//! `atomic_cas`).
//!
//! `get`, `swap`, `addupdate`, `load` and `store` print no `[...]` params:
//! their indexers, mask and `other` are in JAX's arrow form
//! (`y <- r[idx] mask=m`), which the printer writes (`print::state`) and the
//! reader reads (`parse::state`) as equation syntax; their params are read
//! here from what the arrow form said ([`ParseCx::state`]). `atomic_rmw`
//! prints as `= atomic_rmw[...]`, its static indexers in the `args_tree`
//! PyTreeDef, derived from the ref's shape and the operands.

use super::codec::{tuple, usizes};
use super::{ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::parse::params::{PValue, Params};
use crate::parse::state::{StateForm, StateKind};
use crate::parse::syntax::PResult;
use crate::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicOp, AtomicRmwParams, GetParams, IndexEntry, IndexValue,
    Indexer, LoadParams, StoreParams, SwapParams,
};
use crate::print::PV;

/// What the arrow form of this equation said; an error if it was written
/// `= name[...]` or in another arrow form than `kind`.
fn arrow<'c>(cx: &ParseCx<'c, '_, '_>, kind: StateKind) -> PResult<&'c StateForm> {
    match cx.state {
        Some(form) if form.kind == kind => Ok(form),
        Some(_) => Err(cx.p.err(
            cx.p.pos,
            format!("expected the arrow form of `{}`", cx.name),
        )),
        None => Err(cx.p.err(
            cx.p.pos,
            format!(
                "expected the arrow form of `{}`, found `= {}`",
                cx.name, cx.name
            ),
        )),
    }
}

/// `y <- r[idx]`.
impl ParamsText for GetParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let form = arrow(cx, StateKind::Get)?;
        Ok(GetParams {
            indexers: form.indexers.clone(),
        })
    }
}

/// `y, r[idx] <- r[idx], v` (or `r[idx] <- v` when `y` is dropped).
impl ParamsText for SwapParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let form = arrow(cx, StateKind::Swap)?;
        Ok(SwapParams {
            indexers: form.indexers.clone(),
        })
    }
}

/// `r[idx] += v`.
impl ParamsText for AddUpdateParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let form = arrow(cx, StateKind::AddUpdate)?;
        Ok(AddUpdateParams {
            indexers: form.indexers.clone(),
        })
    }
}

/// `y <- r[idx] mask=m other=o`.
impl ParamsText for LoadParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let form = arrow(cx, StateKind::Get)?;
        Ok(LoadParams {
            indexers: form.indexers.clone(),
            has_mask: form.has_mask,
            has_other: form.has_other,
        })
    }
}

/// `y, r[idx] <- r[idx], v mask=m`.
impl ParamsText for StoreParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let form = arrow(cx, StateKind::Swap)?;
        Ok(StoreParams {
            indexers: form.indexers.clone(),
            has_mask: form.has_mask,
        })
    }
}

/// `atomic_cas` prints no params; its indexers are not printed.
impl ParamsText for AtomicCasParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(_: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(AtomicCasParams {
            indexers: Vec::new(),
        })
    }
}

/// Every atomic op, for reading `atomic_type` back.
const ATOMIC_OPS: [AtomicOp; 7] = [
    AtomicOp::Add,
    AtomicOp::Max,
    AtomicOp::Min,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
    AtomicOp::Xchg,
];

/// The `AtomicOpType` member JAX prints (after `AtomicOpType.`).
fn atomic_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "ADD",
        AtomicOp::Max => "MAX",
        AtomicOp::Min => "MIN",
        AtomicOp::And => "AND",
        AtomicOp::Or => "OR",
        AtomicOp::Xor => "XOR",
        AtomicOp::Xchg => "XCHG",
    }
}

/// The number of dynamic index operands of `indexers`.
fn dynamic_operands(indexers: &[Indexer]) -> usize {
    indexers
        .iter()
        .flat_map(|ix| ix.entries.iter())
        .filter(|e| {
            matches!(
                e,
                IndexEntry::Array(_)
                    | IndexEntry::Int(IndexValue::Dynamic(_))
                    | IndexEntry::Slice {
                        start: IndexValue::Dynamic(_),
                        ..
                    }
            )
        })
        .count()
}

/// `atomic_type=AtomicOpType.ADD`, and the `args_tree` PyTreeDef of
/// Triton's `atomic_rmw`: `(ref, (indexer,), val, mask)`, with static
/// slice bounds in the node data. A mask operand is present when the
/// equation has more operands than the ref, the dynamic indices and the
/// value.
impl ParamsText for AtomicRmwParams {
    fn print<'a>(&'a self, cx: &PrintCx<'_>, out: &mut Printed<'a>) {
        let has_mask = cx.n_inputs() > dynamic_operands(&self.indexers) + 2;
        let tree = args_tree(&self.indexers, &cx.in_sizes(0), has_mask);
        out.push(("args_tree", PV::Text(tree)));
        let op = format!("AtomicOpType.{}", atomic_name(self.op));
        out.push(("atomic_type", PV::Text(op)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let t = p.req("atomic_type")?;
        let op = match &t.v {
            PValue::Word(w) => {
                let member = w.rsplit('.').next().unwrap_or("");
                ATOMIC_OPS.into_iter().find(|&o| atomic_name(o) == member)
            }
            _ => None,
        };
        let op = op.ok_or_else(|| {
            p.err(
                t.start,
                format!("expected an AtomicOpType, found `{}`", p.src(t)),
            )
        })?;
        let indexers = match p.get("args_tree") {
            Some(tree) => args_tree_indexers(p, tree)?,
            None => Vec::new(),
        };
        Ok(AtomicRmwParams { indexers, op })
    }
}

/// `PyTreeDef((*, (CustomNode(NDIndexer[(PyTreeDef((e, ..)), shape, ())],
/// []), ..), *, mask))` for `indexers` over a ref of `ref_shape`.
fn args_tree(indexers: &[Indexer], ref_shape: &[usize], has_mask: bool) -> String {
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

/// The indexers of an `args_tree` (see [`args_tree`]); dynamic operands
/// are numbered from 1, after the ref.
fn args_tree_indexers(p: &Params, tree: &Src) -> PResult<Vec<Indexer>> {
    let bad = |v: &Src| {
        p.err(
            v.start,
            format!("expected an atomic_rmw args_tree, found `{}`", p.src(v)),
        )
    };
    let top = match &tree.v {
        PValue::Call(_, args) => match args.as_slice() {
            [(None, t)] => p.items_of(t)?,
            _ => return Err(bad(tree)),
        },
        _ => return Err(bad(tree)),
    };
    let idx_list = top.get(1).ok_or_else(|| bad(tree))?;
    let mut next = 1usize;
    let mut indexers = Vec::new();
    for node in p.items_of(idx_list)? {
        // CustomNode(NDIndexer[(PyTreeDef((entries)), shape, ())], [])
        let nd = match &node.v {
            PValue::Call(_, args) => args.first().map(|a| &a.1).ok_or_else(|| bad(node))?,
            _ => return Err(bad(node)),
        };
        let nd_items = match &nd.v {
            PValue::Call(_, args) => match args.first().map(|a| &a.1) {
                Some(Src {
                    v: PValue::Tuple(items),
                    ..
                }) => items,
                _ => return Err(bad(nd)),
            },
            _ => return Err(bad(nd)),
        };
        let entries_def = nd_items.first().ok_or_else(|| bad(nd))?;
        let entries = match &entries_def.v {
            PValue::Call(_, args) => match args.as_slice() {
                [(None, t)] => p.items_of(t)?,
                _ => return Err(bad(entries_def)),
            },
            _ => return Err(bad(entries_def)),
        };
        let mut out = Vec::new();
        for en in entries {
            match &en.v {
                PValue::Word(w) if w == "*" => {
                    out.push(IndexEntry::Int(IndexValue::Dynamic(next)));
                    next += 1;
                }
                PValue::Call(_, args) => {
                    // CustomNode(Slice[(start|None, size, stride)], [..])
                    let sl = args.first().map(|a| &a.1).ok_or_else(|| bad(en))?;
                    let vals = match &sl.v {
                        PValue::Call(_, a) => match a.first().map(|x| &x.1) {
                            Some(t) => p.items_of(t)?,
                            None => return Err(bad(sl)),
                        },
                        _ => return Err(bad(sl)),
                    };
                    let [start, size, stride] = vals else {
                        return Err(bad(sl));
                    };
                    let start = if Params::is_none(start) {
                        let k = next;
                        next += 1;
                        IndexValue::Dynamic(k)
                    } else {
                        IndexValue::Static(p.int_of(start)?)
                    };
                    out.push(IndexEntry::Slice {
                        start,
                        size: p.usize_of(size)?,
                        stride: p.usize_of(stride)?,
                    });
                }
                _ => return Err(bad(en)),
            }
        }
        indexers.push(Indexer { entries: out });
    }
    Ok(indexers)
}
