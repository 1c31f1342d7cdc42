//! The state family (`get`, `swap`, `addupdate`) on `Ref`s that are buffers
//! updated in place.
//!
//! A top-level `Ref` argument is lowered (in `lower`) to an input buffer
//! copied once into a buffer of its own, which the state primitives read
//! and write in place and which is returned after the jaxpr's results —
//! the same calling convention as the cpu backend's discharge. Steps run
//! in equation order and `simplify` and the fusion planner keep the
//! effectful equations in order (`passes::has_effect`; each is an opaque
//! group), so reads and writes of a ref happen as the jaxpr orders them.
//! A ref passed to `cond`, `while`, `scan` or a call is bound to the same
//! buffer in the body, whose steps then update it in place — the effect
//! JAX's discharge of those primitives describes.
//!
//! Indexing follows the interpreter (`interp/state.rs`, clamping mode):
//! indexers apply one after another, each entry a slice (its start clamped
//! so that it fits), an integer (a static negative one counts from the
//! end; clamped) or an integer array (negative entries count from the
//! end; clamped), the integer dimensions broadcast together and placed
//! where NumPy places them. A kernel maps each element of the indexed view
//! back through the indexers to its flat position in the ref.
//!
//! Invariants: a write whose indexers contain an integer array (positions
//! may repeat) runs on one thread, element by element in row-major order,
//! as the interpreter does (the last write wins; a `swap` reads what an
//! earlier element wrote); other writes touch distinct positions and run
//! one thread per element.

use super::kernel::{finish, i64c, load, loop_kernel, multi_index, store, strides, try_for};
use super::plan::{KArg, Step};
use super::{bind_outputs, unsupported, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder, LaunchDims};
use jaxon_ir::primitive::{
    AddUpdateParams, GetParams, IndexEntry, IndexValue, Indexer, State, SwapParams,
};
use jaxon_ir::{Atom, DType, Eqn, IrError, Jaxpr};

/// The dtype and sizes of an atom's array (a `Ref`'s referenced array).
fn array_type(jaxpr: &Jaxpr, a: &Atom) -> Result<(DType, Vec<usize>), IrError> {
    let aval = jaxpr
        .atom_aval(a)
        .ok_or_else(|| IrError::Invalid("cuda lowering: operand not in the table".into()))?;
    let arr = aval.array();
    let sizes = arr
        .static_sizes()
        .ok_or_else(|| unsupported("dynamic shape", "dynamic dimensions do not lower yet"))?;
    Ok((arr.dtype, sizes))
}

/// One indexer entry, with what lowering needs of it.
#[derive(Clone, Debug)]
enum Ent {
    /// A slice: its start (clamped into `0..=max_start`), size and stride.
    Slice {
        start: IndexValue,
        max_start: i64,
        stride: i64,
    },
    /// An integer index into a dimension of `dim` elements.
    Int { value: IndexValue, dim: i64 },
    /// An integer-array index (operand `operand`, of `shape`).
    Array {
        operand: usize,
        shape: Vec<usize>,
        dim: i64,
    },
}

/// One indexer applied to a view of `in_shape`, giving `out_shape`.
#[derive(Clone, Debug)]
struct Level {
    ents: Vec<Ent>,
    in_shape: Vec<usize>,
    out_shape: Vec<usize>,
    /// Where the broadcast integer dimensions start in `out_shape`.
    insert_at: usize,
    /// How many broadcast integer dimensions there are.
    nb: usize,
}

/// The indexed view of a ref: the levels of its indexers.
struct View {
    ref_shape: Vec<usize>,
    levels: Vec<Level>,
    /// Whether an integer array appears (positions may repeat).
    has_array: bool,
}

impl View {
    fn shape(&self) -> &[usize] {
        self.levels
            .last()
            .map_or(&self.ref_shape[..], |l| &l.out_shape[..])
    }
}

/// The levels of `indexers` on a ref of `ref_shape` (operand types from
/// `eqn`), checked as the interpreter checks them.
fn view(
    prim: &str,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    ref_shape: &[usize],
    indexers: &[Indexer],
) -> Result<View, IrError> {
    let mut shape = ref_shape.to_vec();
    let mut levels = Vec::new();
    let mut has_array = false;
    for ix in indexers {
        if ix.entries.len() > shape.len() {
            return Err(IrError::ty(prim, "more indices than dimensions"));
        }
        let mut ents = Vec::new();
        for (d, &dim) in shape.iter().enumerate() {
            let ent = match ix.entries.get(d) {
                None => Ent::Slice {
                    start: IndexValue::Static(0),
                    max_start: 0,
                    stride: 1,
                },
                Some(IndexEntry::Slice {
                    start,
                    size,
                    stride,
                }) => {
                    if *stride == 0 {
                        return Err(IrError::ty(prim, "slice stride 0"));
                    }
                    let span = if *size == 0 {
                        0
                    } else {
                        (size - 1) * stride + 1
                    };
                    if span > dim {
                        return Err(IrError::ty(prim, "a slice does not fit its dimension"));
                    }
                    Ent::Slice {
                        start: *start,
                        max_start: (dim - span) as i64,
                        stride: *stride as i64,
                    }
                }
                Some(IndexEntry::Int(value)) => Ent::Int {
                    value: *value,
                    dim: dim as i64,
                },
                Some(IndexEntry::Array(k)) => {
                    let a = eqn
                        .inputs
                        .get(*k)
                        .ok_or_else(|| IrError::ty(prim, "an index operand is missing"))?;
                    let (dt, s) = array_type(jaxpr, a)?;
                    if !(dt.is_int() || dt.is_bool()) {
                        return Err(IrError::ty(prim, "an index array is not integer"));
                    }
                    has_array = true;
                    Ent::Array {
                        operand: *k,
                        shape: s,
                        dim: dim as i64,
                    }
                }
            };
            if dim == 0 && !matches!(ent, Ent::Slice { .. }) {
                return Err(unsupported(
                    prim,
                    "an integer index into an empty dimension",
                ));
            }
            ents.push(ent);
        }
        let sizes: Vec<Option<usize>> = ix
            .entries
            .iter()
            .map(|e| match e {
                IndexEntry::Slice { size, .. } => Some(*size),
                IndexEntry::Int(_) | IndexEntry::Array(_) => None,
            })
            .chain(shape[ix.entries.len()..].iter().map(|d| Some(*d)))
            .collect();
        let int_dims: Vec<usize> = (0..ents.len())
            .filter(|&d| !matches!(ents[d], Ent::Slice { .. }))
            .collect();
        let mut bshape = Vec::new();
        for &d in &int_dims {
            if let Ent::Array { shape: s, .. } = &ents[d] {
                bshape = jaxon_ir::shape::broadcast_sizes(&bshape, s)
                    .ok_or_else(|| IrError::ty(prim, "index arrays do not broadcast"))?;
            }
        }
        let contiguous = int_dims.windows(2).all(|w| w[1] == w[0] + 1);
        let insert_at = match int_dims.first() {
            Some(&first) if contiguous => sizes[..first].iter().filter(|s| s.is_some()).count(),
            _ => 0,
        };
        let slice_sizes: Vec<usize> = sizes.iter().flatten().copied().collect();
        let mut out_shape = slice_sizes[..insert_at].to_vec();
        out_shape.extend_from_slice(&bshape);
        out_shape.extend_from_slice(&slice_sizes[insert_at..]);
        levels.push(Level {
            ents,
            in_shape: shape.clone(),
            out_shape: out_shape.clone(),
            insert_at,
            nb: bshape.len(),
        });
        shape = out_shape;
    }
    Ok(View {
        ref_shape: ref_shape.to_vec(),
        levels,
        has_array,
    })
}

/// Everything a position computation reads: the equation's operand values.
struct Operands<'a> {
    vals: &'a [Value],
}

impl Operands<'_> {
    fn get(&self, k: usize) -> Result<Value, IrError> {
        self.vals
            .get(k)
            .copied()
            .ok_or_else(|| IrError::Invalid("state: an index operand is missing".into()))
    }
}

/// `x` clamped into `0..=hi`.
fn clamp(x: Expr, hi: i64) -> Expr {
    x.max(i64c(0)).min(i64c(hi))
}

/// The flat position in the ref of the view element at multi-index `o`.
fn position(
    k: &mut KernelBuilder,
    args: &mut super::kernel::Args,
    ctx: &Ctx,
    ops: &Operands,
    view: &View,
    o: &[Expr],
) -> Result<Expr, IrError> {
    let mut idx = o.to_vec();
    for level in view.levels.iter().rev() {
        let b_idx = &idx[level.insert_at..level.insert_at + level.nb];
        let mut slot = 0;
        let mut inner = Vec::with_capacity(level.ents.len());
        for ent in &level.ents {
            let e = match ent {
                Ent::Slice {
                    start,
                    max_start,
                    stride,
                } => {
                    let r = if slot < level.insert_at {
                        slot
                    } else {
                        slot + level.nb
                    };
                    slot += 1;
                    let s = match start {
                        IndexValue::Static(s) => i64c((*s).clamp(0, *max_start)),
                        IndexValue::Dynamic(q) => {
                            let raw = load(k, args, ctx, ops.get(*q)?, i64c(0))?.cast(DType::I64);
                            clamp(raw, *max_start)
                        }
                    };
                    let step = if *stride == 1 {
                        idx[r].clone()
                    } else {
                        idx[r].clone() * i64c(*stride)
                    };
                    s + step
                }
                Ent::Int { value, dim } => match value {
                    IndexValue::Static(s) => {
                        let r = if *s < 0 { s + dim } else { *s };
                        i64c(r.clamp(0, dim - 1))
                    }
                    IndexValue::Dynamic(q) => {
                        let raw = load(k, args, ctx, ops.get(*q)?, i64c(0))?.cast(DType::I64);
                        clamp(raw, dim - 1)
                    }
                },
                Ent::Array {
                    operand,
                    shape,
                    dim,
                } => {
                    let off = level.nb - shape.len();
                    let sub: Vec<Expr> = shape
                        .iter()
                        .enumerate()
                        .map(|(j, &n)| {
                            if n == 1 {
                                i64c(0)
                            } else {
                                b_idx[off + j].clone()
                            }
                        })
                        .collect();
                    let at = super::kernel::affine(0, &strides(shape), &sub);
                    let raw = load(k, args, ctx, ops.get(*operand)?, at)?.cast(DType::I64);
                    let raw = k.let_("ix", DType::I64, raw);
                    let w = Expr::select(
                        Expr::var(raw).lt(i64c(0)),
                        Expr::var(raw) + i64c(*dim),
                        Expr::var(raw),
                    );
                    clamp(w, dim - 1)
                }
            };
            inner.push(e);
        }
        debug_assert_eq!(inner.len(), level.in_shape.len());
        idx = inner;
    }
    Ok(super::kernel::affine(0, &strides(&view.ref_shape), &idx))
}

/// The element of `v` (of `vshape`, broadcast to `shape`) at `o`.
fn broadcast_index(vshape: &[usize], shape: &[usize], o: &[Expr]) -> Expr {
    let off = shape.len() - vshape.len();
    let sub: Vec<Expr> = vshape
        .iter()
        .enumerate()
        .map(|(j, &n)| if n == 1 { i64c(0) } else { o[off + j].clone() })
        .collect();
    super::kernel::affine(0, &strides(vshape), &sub)
}

/// A kernel over the elements of `shape`: one thread each, or (when
/// `sequential`) one thread visiting them in row-major order.
fn element_kernel(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    name: &str,
    shape: &[usize],
    sequential: bool,
    body: impl FnOnce(
        &mut KernelBuilder,
        &mut super::kernel::Args,
        &Ctx,
        &Expr,
        &[Expr],
    ) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let n: usize = shape.iter().product();
    if n == 0 {
        return Ok(());
    }
    if !sequential {
        steps.extend(loop_kernel(ctx, name, shape, body)?);
        return Ok(());
    }
    let name = ctx.name(name);
    let mut k = KernelBuilder::new(&name, 1);
    let mut args = super::kernel::Args::new();
    let lin = k.var("i", DType::I64);
    let c: &Ctx = ctx;
    try_for(&mut k, lin, (i64c(0), i64c(n as i64), i64c(1)), |k| {
        let idx = multi_index(k, Expr::var(lin), shape);
        body(k, &mut args, c, &Expr::var(lin), &idx)
    })?;
    let kernel = finish(k)?;
    let id = ctx.kernel(kernel);
    let kargs: Vec<KArg> = args.args;
    steps.push(Step::Launch {
        kernel: id,
        dims: LaunchDims::linear(1, 1),
        args: kargs,
    });
    Ok(())
}

/// Lowers a state equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &State,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let prim = p.name();
    let (indexers, writes) = match p {
        State::Get(GetParams { indexers }) => (indexers, false),
        State::Swap(SwapParams { indexers }) | State::AddUpdate(AddUpdateParams { indexers }) => {
            (indexers, true)
        }
    };
    let r = eqn
        .inputs
        .first()
        .ok_or_else(|| IrError::ty(prim, "missing the Ref operand"))?;
    if !matches!(jaxpr.atom_aval(r), Some(jaxon_ir::Aval::Ref(_))) {
        return Err(IrError::ty(prim, "operand 0 must be a Ref"));
    }
    let (dt, ref_shape) = array_type(jaxpr, r)?;
    if dt == DType::KeyFry {
        return Err(unsupported(prim, "Refs of keys do not lower yet"));
    }
    let Value::Buf(rb) = env.atom(r)? else {
        return Err(IrError::ty(prim, "a Ref cannot be a literal"));
    };
    let vals: Vec<Value> = eqn
        .inputs
        .iter()
        .map(|a| env.atom(a))
        .collect::<Result<_, _>>()?;
    let v = view(prim, jaxpr, eqn, &ref_shape, indexers)?;
    let shape = v.shape().to_vec();
    let value_at = eqn.inputs.len() - usize::from(writes);
    let ops = Operands {
        vals: &vals[..value_at],
    };
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    match p {
        State::Get(_) => {
            let [(out, _, _)] = outs[..] else {
                return Err(IrError::ty(prim, "get has one result"));
            };
            element_kernel(ctx, steps, "get", &shape, false, |k, args, ctx, lin, o| {
                let at = position(k, args, ctx, &ops, &v, o)?;
                let x = load(k, args, ctx, Value::Buf(rb), at)?;
                store(k, args, ctx, out, lin.clone(), x)
            })
        }
        State::Swap(_) | State::AddUpdate(_) => {
            let add = matches!(p, State::AddUpdate(_));
            if add && dt.is_bool() {
                return Err(unsupported(prim, "addupdate of bool Refs"));
            }
            let val = vals[value_at];
            let (vdt, vshape) = array_type(jaxpr, &eqn.inputs[value_at])?;
            if vdt != dt
                || jaxon_ir::shape::broadcast_sizes(&vshape, &shape).as_deref() != Some(&shape[..])
            {
                return Err(IrError::ty(
                    prim,
                    "the value's type is not the indexed Ref's",
                ));
            }
            let old = match (add, &outs[..]) {
                (true, []) => None,
                (false, [(o, _, _)]) => Some(*o),
                _ => return Err(IrError::ty(prim, "wrong number of results")),
            };
            let name = if add { "addupdate" } else { "swap" };
            element_kernel(
                ctx,
                steps,
                name,
                &shape,
                v.has_array,
                |k, args, ctx, lin, o| {
                    // The ref's parameter is writable (its first use decides).
                    args.buffer(k, ctx, rb, true)?;
                    let at = position(k, args, ctx, &ops, &v, o)?;
                    let at = k.let_("at", DType::I64, at);
                    let x = load(k, args, ctx, val, broadcast_index(&vshape, &shape, o))?;
                    let cur = load(k, args, ctx, Value::Buf(rb), Expr::var(at))?;
                    let new = if add {
                        super::kernel::round_to(dt, cur.clone() + x)
                    } else {
                        x
                    };
                    if let Some(old) = old {
                        store(k, args, ctx, old, lin.clone(), cur)?;
                    }
                    store(k, args, ctx, rb, Expr::var(at), new)
                },
            )
        }
    }
}
