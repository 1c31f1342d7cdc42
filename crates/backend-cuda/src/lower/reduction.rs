//! The reduction family: `reduce_*` over any axes and `argmax`/`argmin`, as
//! warp-per-output kernels: the 32 lanes of a warp stride over the reduced
//! elements of one output, then combine with xor shuffles; lane 0 stores.
//! A reduce group of the fusion planner evaluates its elementwise producers
//! inside the reduction loop (input fusion). Cumulative ops lower in
//! `cumulative`, sorts and top-k in `sort`.
//!
//! Invariants: every lane of a warp runs the same output loop (the output
//! index is warp-uniform), so shuffles are never partial; an empty
//! reduction stores the identity; narrow integers and bools accumulate in
//! 32 bits (shuffles move 32 or 64 bits), which wraps to the same result.

use super::fused_vec::Root;
use super::kernel::{compute, finish, i64c, load, multi_index, store, strides, Args, THREADS};
use super::plan::{BufId, Step};
use super::reduction_vec::RowVec;
use super::{atom_type, bind_outputs, fused, Ctx, Env, Value};
use crate::kir::{BinOp, Expr, KernelBuilder, LaunchDims, ShuffleKind, UnOp};
use jaxon_ir::passes::Group;
use jaxon_ir::primitive::{ArgOp, ArgReduceParams, ReduceOp, ReduceParams, Reduction};
use jaxon_ir::{Atom, DType, Eqn, IrError, Jaxpr};

/// Lowers a reduction equation on its own.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Reduction,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = p.name();
    match p {
        Reduction::Reduce(ReduceParams { op, axes, .. }) => {
            let a = eqn.inputs.first().ok_or_else(|| arity(name))?;
            let (d, space) = atom_type(jaxpr, a)?;
            let x = env.atom(a)?;
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, _) = outs.first().cloned().ok_or_else(|| arity(name))?;
            if let Value::Buf(b) = x {
                let plan = super::fused_vec::Plan::one_buffer(ctx, b)?;
                let src = Root::Buf(b);
                let v = RowVec {
                    op: *op,
                    axes,
                    space: &space,
                    d,
                    out,
                };
                if super::reduction_vec::rows(ctx, steps, &v, plan, jaxpr, env, &[], src)? {
                    return Ok(());
                }
            }
            let st = strides(&space);
            reduce_kernel(
                ctx,
                steps,
                *op,
                axes,
                &space,
                d,
                out,
                |k, args, ctx, idx| load(k, args, ctx, x, super::kernel::affine(0, &st, idx)),
            )
        }
        Reduction::ArgReduce(ArgReduceParams { op, axes, .. }) => {
            arg_reduce(ctx, jaxpr, eqn, *op, axes, env, steps)
        }
        Reduction::Cumulative(c) => super::cumulative::lower(ctx, jaxpr, eqn, c, env, steps),
        Reduction::Sort(s) => super::sort::sort(ctx, jaxpr, eqn, s, env, steps),
        Reduction::TopK(t) => super::sort::top_k(ctx, jaxpr, eqn, t, env, steps),
    }
}

fn arity(name: &str) -> IrError {
    IrError::Invalid(format!("{name}: wrong number of operands or results"))
}

/// Lowers a reduce group: the root reduction with its producers fused.
pub(crate) fn reduce_group(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    group: &Group,
    op: ReduceOp,
    axes: &[usize],
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let mut members = Vec::new();
    for (e, m) in group.eqns.iter().zip(&group.maps) {
        let eqn = jaxpr
            .eqns
            .get(*e)
            .ok_or_else(|| IrError::Invalid(format!("cuda lowering: no equation {e}")))?;
        members.push((eqn, m.clone()));
    }
    if !fused::maps_are_sound(&members) {
        return fused::unfused(ctx, jaxpr, &members, env, steps);
    }
    let (root, _) = members
        .pop()
        .ok_or_else(|| IrError::Invalid("cuda lowering: empty reduce group".into()))?;
    let a = root
        .inputs
        .first()
        .ok_or_else(|| arity(root.primitive.name()))?;
    let (d, space) = atom_type(jaxpr, a)?;
    if space != group.space {
        return Err(IrError::Invalid(
            "cuda lowering: reduce space is not the operand's shape".into(),
        ));
    }
    let outs = bind_outputs(ctx, jaxpr, root, env)?;
    let (out, _, _) = outs
        .first()
        .cloned()
        .ok_or_else(|| arity(root.primitive.name()))?;
    let env_ro: &Env = env;
    if let Some(src) = vec_root(a, &members, env_ro)? {
        let plan = match &src {
            Root::Buf(b) => super::fused_vec::Plan::one_buffer(ctx, *b)?,
            Root::Var(_) => super::fused_vec::plan(ctx, jaxpr, env_ro, &members, &space, 1)?,
        };
        let v = RowVec {
            op,
            axes,
            space: &space,
            d,
            out,
        };
        if super::reduction_vec::rows(ctx, steps, &v, plan, jaxpr, env_ro, &members, src)? {
            return Ok(());
        }
    }
    let st = strides(&space);
    reduce_kernel(ctx, steps, op, axes, &space, d, out, |k, args, ctx, idx| {
        let vals = fused::eval_members(k, args, ctx, jaxpr, env_ro, &members, idx)?;
        if let Atom::Var(v) = a {
            if let Some(x) = vals.get(v) {
                return Ok(x.clone());
            }
        }
        load(
            k,
            args,
            ctx,
            env_ro.atom(a)?,
            super::kernel::affine(0, &st, idx),
        )
    })
}

/// What a vectorised row reduction reads: a member's result, or (with no
/// members) the reduce operand's buffer; `None` when the operand is a
/// buffer read beside members (left to the scalar kernel).
fn vec_root(
    a: &Atom,
    members: &[(&Eqn, jaxon_ir::passes::IndexMap)],
    env: &Env,
) -> Result<Option<Root>, IrError> {
    if let Atom::Var(v) = a {
        let made = members.iter().any(|(e, _)| {
            e.outputs
                .iter()
                .any(|o| matches!(o, jaxon_ir::Binder::Var(w) if w == v))
        });
        if made {
            return Ok(Some(Root::Var(*v)));
        }
    }
    Ok(match env.atom(a)? {
        Value::Buf(b) if members.is_empty() => Some(Root::Buf(b)),
        Value::Buf(_) | Value::Lit(_) => None,
    })
}

/// The accumulator dtype of values of dtype `d`.
pub(crate) fn acc_dtype(d: DType) -> DType {
    match d {
        DType::Bool | DType::U8 | DType::U16 => DType::U32,
        DType::I8 | DType::I16 => DType::I32,
        d => compute(d),
    }
}

/// The identity of `op` on values of dtype `d`, as an accumulator constant.
pub(crate) fn identity(op: ReduceOp, d: DType) -> Expr {
    let acc = acc_dtype(d);
    let bits = d.bits();
    let (smin, smax) = if d.is_signed_int() {
        // `i64::MIN >> (64 - bits)` sign-extends: no overflow at 64 bits.
        let smin = i64::MIN >> (64 - bits);
        (smin, !smin)
    } else {
        (0, 0)
    };
    let umax: i64 = if bits >= 64 { -1 } else { (1i64 << bits) - 1 };
    match op {
        ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => Expr::constant(acc, 0.0),
        ReduceOp::Prod => Expr::constant(acc, 1.0),
        ReduceOp::And => Expr::int(acc, if d.is_bool() { 1 } else { -1 }),
        ReduceOp::Max if d.is_float() => Expr::constant(acc, f64::NEG_INFINITY),
        ReduceOp::Min if d.is_float() => Expr::constant(acc, f64::INFINITY),
        ReduceOp::Max if d.is_signed_int() => Expr::int(acc, smin),
        ReduceOp::Min if d.is_signed_int() => Expr::int(acc, smax),
        ReduceOp::Max => Expr::int(acc, 0),
        ReduceOp::Min if d.is_bool() => Expr::int(acc, 1),
        ReduceOp::Min => Expr::int(acc, umax),
    }
}

pub(crate) fn combine(op: ReduceOp, d: DType, a: Expr, b: Expr) -> Expr {
    let o = match op {
        ReduceOp::Sum if d.is_bool() => BinOp::Or,
        ReduceOp::Prod if d.is_bool() => BinOp::And,
        ReduceOp::Sum => BinOp::Add,
        ReduceOp::Prod => BinOp::Mul,
        ReduceOp::Max => BinOp::Max,
        ReduceOp::Min => BinOp::Min,
        ReduceOp::And => BinOp::And,
        ReduceOp::Or => BinOp::Or,
        ReduceOp::Xor => BinOp::Xor,
    };
    Expr::Binary(o, Box::new(a), Box::new(b))
}

/// A kernel with one warp per output element (`n_out` of them, in a
/// warp-uniform grid-stride loop); `body` gets the output index.
pub(crate) fn warp_kernel(
    ctx: &mut Ctx,
    name: &str,
    n_out: usize,
    body: impl FnOnce(&mut KernelBuilder, &mut Args, &Ctx, Expr) -> Result<(), IrError>,
) -> Result<Option<Step>, IrError> {
    if n_out == 0 {
        return Ok(None);
    }
    let name = ctx.name(name);
    let mut k = KernelBuilder::new(&name, THREADS);
    k.grid_stride();
    let mut args = Args::new();
    let o = k.var("o", DType::I64);
    let start = (Expr::global_thread_id_x() / Expr::u32(32)).cast(DType::I64);
    let step = (Expr::grid_dim_x() * Expr::block_dim_x() / Expr::u32(32)).cast(DType::I64);
    let mut result = Ok(());
    let c: &Ctx = ctx;
    k.for_(o, start, i64c(n_out as i64), step, |k| {
        result = body(k, &mut args, c, Expr::var(o));
    });
    result?;
    let kernel = finish(k)?;
    let id = ctx.kernel(kernel);
    let warps_per_block = u64::from(THREADS / 32);
    // One output per warp; `run::sized` caps the blocks at the device's
    // resident blocks.
    let blocks = (n_out as u64)
        .div_ceil(warps_per_block)
        .clamp(1, u64::from(u32::MAX >> 1));
    Ok(Some(Step::Launch {
        kernel: id,
        dims: LaunchDims::linear(blocks as u32, THREADS),
        args: args.args,
    }))
}

/// Splits a space index into kept (output) and reduced dimensions.
fn split_axes(space: &[usize], axes: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let kept = (0..space.len()).filter(|d| !axes.contains(d)).collect();
    let mut red: Vec<usize> = axes.to_vec();
    red.sort_unstable();
    red.dedup();
    (kept, red)
}

/// Reduces `value` (the operand of dtype `d` at a space index) over `axes`
/// of `space` into `out`.
#[allow(clippy::too_many_arguments)]
fn reduce_kernel(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    op: ReduceOp,
    axes: &[usize],
    space: &[usize],
    d: DType,
    out: BufId,
    value: impl FnOnce(&mut KernelBuilder, &mut Args, &Ctx, &[Expr]) -> Result<Expr, IrError>,
) -> Result<(), IrError> {
    if axes.iter().any(|&a| a >= space.len()) {
        return Err(IrError::ty(op.name(), "axis out of range"));
    }
    let (kept, red) = split_axes(space, axes);
    let kept_shape: Vec<usize> = kept.iter().map(|&i| space[i]).collect();
    let red_shape: Vec<usize> = red.iter().map(|&i| space[i]).collect();
    let n_out: usize = kept_shape.iter().product();
    let n_red: usize = red_shape.iter().product();
    let acc_t = acc_dtype(d);
    let step = warp_kernel(ctx, op.name(), n_out, |k, args, ctx, o| {
        let o_idx = multi_index(k, o.clone(), &kept_shape);
        let acc = k.let_("acc", acc_t, identity(op, d));
        let r = k.var("r", DType::I64);
        let mut result = Ok(());
        k.for_(
            r,
            Expr::lane().cast(DType::I64),
            i64c(n_red as i64),
            i64c(32),
            |k| {
                let r_idx = multi_index(k, Expr::var(r), &red_shape);
                let mut idx = vec![i64c(0); space.len()];
                for (j, &dim) in kept.iter().enumerate() {
                    idx[dim] = o_idx[j].clone();
                }
                for (j, &dim) in red.iter().enumerate() {
                    idx[dim] = r_idx[j].clone();
                }
                result = value(k, args, ctx, &idx).map(|x| {
                    let x = if compute(d) != acc_t {
                        x.cast(acc_t)
                    } else {
                        x
                    };
                    k.assign(acc, combine(op, d, Expr::var(acc), x));
                });
            },
        );
        result?;
        warp_store(k, args, ctx, op, d, acc, out, o)
    })?;
    steps.extend(step);
    Ok(())
}

/// Combines the warp's accumulators `acc` (of `acc_dtype(d)`) with xor
/// shuffles; lane 0 stores the result to element `o` of `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn warp_store(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    op: ReduceOp,
    d: DType,
    acc: crate::kir::Var,
    out: BufId,
    o: Expr,
) -> Result<(), IrError> {
    let acc_t = acc_dtype(d);
    let other = k.var("other", acc_t);
    for s in [16, 8, 4, 2, 1] {
        k.shuffle(other, ShuffleKind::Xor, Expr::var(acc), Expr::u32(s), 32);
        k.assign(acc, combine(op, d, Expr::var(acc), Expr::var(other)));
    }
    let od = ctx.decl(out)?.dtype;
    let mut res = Ok(());
    k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
        let v = if acc_t != compute(od) {
            Expr::var(acc).cast(compute(od))
        } else {
            Expr::var(acc)
        };
        res = store(k, args, ctx, out, o, v);
    });
    res
}

/// `argmax`/`argmin` over one axis: first index of the extremum, the first
/// NaN winning.
fn arg_reduce(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    op: ArgOp,
    axes: &[usize],
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = op.name();
    let &[axis] = axes else {
        return Err(IrError::ty(name, "expected one axis"));
    };
    let a = eqn.inputs.first().ok_or_else(|| arity(name))?;
    let (d, space) = atom_type(jaxpr, a)?;
    if axis >= space.len() {
        return Err(IrError::ty(name, "axis out of range"));
    }
    if space[axis] == 0 {
        return Err(IrError::ty(name, "cannot reduce an empty axis"));
    }
    let x: Value = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, _) = outs.first().cloned().ok_or_else(|| arity(name))?;
    let (kept, _) = split_axes(&space, &[axis]);
    let kept_shape: Vec<usize> = kept.iter().map(|&i| space[i]).collect();
    let n_out: usize = kept_shape.iter().product();
    let st = strides(&space);
    let cv = acc_dtype(d);
    let float = d.is_float();
    let max = op == ArgOp::Argmax;
    // `new` beats `best` (strictly).
    let beats = move |new: Expr, best: Expr| -> Expr {
        let gt = if max {
            new.clone().gt(best.clone())
        } else {
            new.clone().lt(best.clone())
        };
        if float {
            let nn = new.unary(UnOp::IsNan);
            let bn = best.unary(UnOp::IsNan);
            nn.clone()
                .and(bn.clone().unary(UnOp::Not))
                .or(bn.unary(UnOp::Not).and(gt))
        } else {
            gt
        }
    };
    let same = move |p: Expr, q: Expr| -> Expr {
        let eq = p.clone().eq(q.clone());
        if float {
            eq.or(p.unary(UnOp::IsNan).and(q.unary(UnOp::IsNan)))
        } else {
            eq
        }
    };
    let step = warp_kernel(ctx, name, n_out, |k, args, ctx, o| {
        let o_idx = multi_index(k, o.clone(), &kept_shape);
        let bv = k.let_("bv", cv, Expr::constant(cv, 0.0));
        let bi = k.let_("bi", DType::I64, i64c(-1));
        let r = k.var("r", DType::I64);
        let mut result = Ok(());
        k.for_(
            r,
            Expr::lane().cast(DType::I64),
            i64c(space[axis] as i64),
            i64c(32),
            |k| {
                let mut idx = vec![i64c(0); space.len()];
                for (j, &dim) in kept.iter().enumerate() {
                    idx[dim] = o_idx[j].clone();
                }
                idx[axis] = Expr::var(r);
                result = load(k, args, ctx, x, super::kernel::affine(0, &st, &idx)).map(|v| {
                    let v = if compute(d) != cv { v.cast(cv) } else { v };
                    let xv = k.let_("xv", cv, v);
                    let take = Expr::var(bi)
                        .lt(i64c(0))
                        .or(beats(Expr::var(xv), Expr::var(bv)));
                    k.if_(take, |k| {
                        k.assign(bv, Expr::var(xv));
                        k.assign(bi, Expr::var(r));
                    });
                });
            },
        );
        result?;
        let ov = k.var("ov", cv);
        let oi = k.var("oi", DType::I64);
        for s in [16, 8, 4, 2, 1] {
            k.shuffle(ov, ShuffleKind::Xor, Expr::var(bv), Expr::u32(s), 32);
            k.shuffle(oi, ShuffleKind::Xor, Expr::var(bi), Expr::u32(s), 32);
            let take = Expr::var(oi).ge(i64c(0)).and(
                Expr::var(bi)
                    .lt(i64c(0))
                    .or(beats(Expr::var(ov), Expr::var(bv)))
                    .or(same(Expr::var(ov), Expr::var(bv)).and(Expr::var(oi).lt(Expr::var(bi)))),
            );
            k.if_(take, |k| {
                k.assign(bv, Expr::var(ov));
                k.assign(bi, Expr::var(oi));
            });
        }
        let od = ctx.decl(out)?.dtype;
        let mut res = Ok(());
        k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
            res = store(k, args, ctx, out, o, Expr::var(bi).cast(od));
        });
        res
    })?;
    steps.extend(step);
    Ok(())
}
