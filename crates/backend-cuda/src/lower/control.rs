//! The control family, driven from the host: `cond` reads its index and
//! runs one branch's steps; `while` runs its predicate's steps and reads
//! the predicate before each body run; `scan` copies each iteration's slice
//! of the stacked inputs in and of the stacked outputs out around its
//! body's steps (no readback). Calls (`jit`, `custom_jvp_call`,
//! `custom_vjp_call`, `remat2`) are inlined: their bodies' steps bind the
//! call's results directly. `for_loop` is in `for_loop.rs`.
//!
//! Invariants: a nested body is lowered once, into buffers of the same
//! program, and its steps are rerun; `while` and `scan` carries live in
//! buffers of the loop's own (copied into its results after the loop), and
//! are updated by exchanging memory with a result the body computes afresh,
//! or else through temporaries (see `plan::CarryUpdate`);
//! a literal branch index picks its branch at lowering time.

use super::kernel::{copy_into, materialize};
use super::plan::{BufId, CarryUpdate, KArg, ScanSlice, Step};
use super::{atom_type, bind_outputs, lower_closed, Ctx, Env, Value};
use crate::kir::ParamKind;
use jaxon_ir::primitive::{
    CondParams, Control, CustomJvpCallParams, CustomVjpCallParams, JitParams, RematParams,
    ScanParams, WhileParams,
};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Eqn, IrError, Jaxpr};
use std::collections::HashSet;

/// Lowers a control-flow or call equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Control,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    match p {
        Control::ShardMap(p) => super::spmd::shard_map(ctx, jaxpr, eqn, p, env, steps),
        Control::Jit(_)
        | Control::CustomJvpCall(_)
        | Control::CustomVjpCall(_)
        | Control::Remat(_) => {
            let all = values(env, &eqn.inputs)?;
            let (callee, skip) = inlined_call(p, all.len())
                .ok_or_else(|| IrError::Invalid(format!("{}: not a call", p.name())))?;
            let args = all.get(skip..).unwrap_or(&[]).to_vec();
            call(ctx, eqn, &callee, &args, env, steps)
        }
        // What JAX runs: `solve` on its consts and `b` (usually inlined by
        // `simplify` already).
        Control::CustomLinearSolve(p) => {
            let all = values(env, &eqn.inputs)?;
            let (Some(solve), Some(consts), Some(b)) = (
                &p.jaxprs.solve,
                all.get(p.consts_range(2)),
                all.get(p.num_consts()..),
            ) else {
                return Err(IrError::Invalid(
                    "custom_linear_solve: no solve jaxpr, or fewer operands than consts".into(),
                ));
            };
            let args: Vec<_> = consts.iter().chain(b).cloned().collect();
            call(ctx, eqn, solve, &args, env, steps)
        }
        Control::Cond(params) => cond(ctx, jaxpr, eqn, params, env, steps),
        Control::While(params) => while_(ctx, jaxpr, eqn, params, env, steps),
        Control::Scan(params) => scan(ctx, jaxpr, eqn, params, env, steps),
        Control::ForLoop(params) => super::for_loop::lower(ctx, jaxpr, eqn, params, env, steps),
    }
}

/// The jaxpr a call equation (`jit`, `custom_jvp_call`, `custom_vjp_call`,
/// `remat2`) runs inlined, and how many of its `n_inputs` leading operands
/// that jaxpr does not take (a custom rule's consts when the body does not
/// list them); `None` for the other control primitives. Shared by the
/// static and the dynamic lowering.
pub(crate) fn inlined_call(
    p: &Control,
    n_inputs: usize,
) -> Option<(std::borrow::Cow<'_, ClosedJaxpr>, usize)> {
    use std::borrow::Cow;
    match p {
        Control::Jit(JitParams { jaxpr, .. }) => Some((Cow::Borrowed(jaxpr), 0)),
        Control::CustomJvpCall(CustomJvpCallParams {
            call_jaxpr,
            num_consts,
            ..
        })
        | Control::CustomVjpCall(CustomVjpCallParams {
            call_jaxpr,
            num_consts,
            ..
        }) => {
            let skip = if call_jaxpr.jaxpr.invars.len() == n_inputs {
                0
            } else {
                *num_consts
            };
            Some((Cow::Borrowed(call_jaxpr), skip))
        }
        Control::Remat(RematParams { jaxpr, .. }) => {
            Some((Cow::Owned(ClosedJaxpr::without_consts(jaxpr.clone())), 0))
        }
        Control::Cond(_)
        | Control::While(_)
        | Control::Scan(_)
        | Control::ForLoop(_)
        | Control::CustomLinearSolve(_)
        | Control::ShardMap(_) => None,
    }
}

fn values(env: &Env, atoms: &[Atom]) -> Result<Vec<Value>, IrError> {
    atoms.iter().map(|a| env.atom(a)).collect()
}

/// An inlined call: the body's results are the equation's results.
fn call(
    ctx: &mut Ctx,
    eqn: &Eqn,
    body: &ClosedJaxpr,
    args: &[Value],
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let outs = lower_closed(ctx, body, args, steps)?;
    if outs.len() != eqn.outputs.len() {
        return Err(IrError::Invalid(format!(
            "{}: {} results for {} outputs",
            eqn.primitive.name(),
            outs.len(),
            eqn.outputs.len()
        )));
    }
    for (b, v) in eqn.outputs.iter().zip(outs) {
        if let Binder::Var(var) = b {
            env.bind(*var, v);
        }
    }
    Ok(())
}

/// Copies `vals` into the result buffers `outs`.
fn copy_results(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    vals: &[Value],
    outs: &[(BufId, DType, Vec<usize>)],
) -> Result<(), IrError> {
    if vals.len() != outs.len() {
        return Err(IrError::Invalid(format!(
            "cuda lowering: {} results for {} outputs",
            vals.len(),
            outs.len()
        )));
    }
    for (v, (b, _, shape)) in vals.iter().zip(outs) {
        copy_into(ctx, steps, *v, *b, shape.iter().product())?;
    }
    Ok(())
}

fn cond(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &CondParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (index, ops) = eqn
        .inputs
        .split_first()
        .ok_or_else(|| IrError::Invalid("cond: no index".into()))?;
    if p.branches.is_empty() {
        return Err(IrError::Invalid("cond: no branches".into()));
    }
    let args = values(env, ops)?;
    let idx = env.atom(index)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    match idx {
        Value::Lit(l) => {
            let i = l
                .as_i64()
                .unwrap_or(0)
                .clamp(0, p.branches.len() as i64 - 1) as usize;
            let vals = lower_closed(ctx, &p.branches[i], &args, steps)?;
            copy_results(ctx, steps, &vals, &outs)
        }
        Value::Buf(ib) => {
            let mut branches = Vec::new();
            for br in &p.branches {
                let mut bsteps = Vec::new();
                let vals = lower_closed(ctx, br, &args, &mut bsteps)?;
                copy_results(ctx, &mut bsteps, &vals, &outs)?;
                branches.push(bsteps);
            }
            steps.push(Step::Cond {
                index: ib,
                branches,
            });
            Ok(())
        }
    }
}

/// The carry updates from a body's results into the carry buffers. With
/// `exchange`, a result the body computes afresh (see [`fresh_writes`]),
/// distinct from every other carry's, is exchanged with its carry buffer
/// instead of copied (the caller guarantees the carry buffers are the
/// loop's own, see `plan::CarryUpdate`).
pub(crate) fn carry_updates(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    vals: &[Value],
    carries: &[(BufId, DType, Vec<usize>)],
    exchange: bool,
) -> Result<Vec<CarryUpdate>, IrError> {
    let mut srcs = Vec::new();
    for (v, (_, dt, shape)) in vals.iter().zip(carries) {
        srcs.push(materialize(ctx, steps, *v, *dt, shape.iter().product())?);
    }
    let fresh = if exchange {
        fresh_writes(ctx, steps)
    } else {
        HashSet::new()
    };
    let mut ups = Vec::new();
    for (k, (src, (dst, dt, shape))) in srcs.iter().zip(carries).enumerate() {
        let len: usize = shape.iter().product();
        if *src == *dst || len == 0 {
            continue;
        }
        let unique = srcs.iter().enumerate().all(|(j, s)| j == k || s != src);
        let carry_buf = carries.iter().any(|(c, _, _)| c == src);
        let temp = if fresh.contains(src) && unique && !carry_buf {
            None
        } else {
            Some(ctx.alloc(*dt, shape)?)
        };
        ups.push(CarryUpdate {
            src: *src,
            temp,
            dst: *dst,
        });
    }
    Ok(ups)
}

/// The buffers whose first use in `steps` (the top level of a loop body)
/// writes all of them: a kernel's writable parameter (and no read of it by
/// the same launch), a GEMM's result that does not accumulate, a whole-
/// buffer copy's destination, a host callback's result. Their contents
/// before the body runs are never read, so such a buffer may trade its
/// memory with a carry's between iterations. Nested steps count as reads.
fn fresh_writes(ctx: &Ctx, steps: &[Step]) -> HashSet<BufId> {
    let mut seen = HashSet::new();
    let mut fresh = HashSet::new();
    let mut visit = |reads: &[BufId], writes: &[BufId]| {
        for b in reads {
            seen.insert(*b);
        }
        for b in writes {
            if seen.insert(*b) {
                fresh.insert(*b);
            }
        }
    };
    for s in steps {
        match s {
            Step::Launch { kernel, args, .. } => {
                let params = ctx.prog.kernels.get(*kernel).map(|k| &k.params[..]);
                let (mut reads, mut writes) = (Vec::new(), Vec::new());
                for (i, a) in args.iter().enumerate() {
                    let KArg::Buffer(b) = a else { continue };
                    let writable = params.and_then(|p| p.get(i)).is_some_and(|p| {
                        matches!(p.kind, ParamKind::Global { writable: true, .. })
                    });
                    if writable {
                        writes.push(*b);
                    } else {
                        reads.push(*b);
                    }
                }
                // A buffer passed twice, once read-only, is read.
                writes.retain(|b| !reads.contains(b));
                visit(&reads, &writes);
            }
            Step::Gemm {
                plan,
                a,
                b,
                out,
                bias,
            } => {
                let mut reads = vec![*a, *b];
                reads.extend(*bias);
                if plan.accumulate {
                    reads.push(*out);
                    visit(&reads, &[]);
                } else {
                    visit(&reads, &[*out]);
                }
            }
            Step::Copy {
                src,
                src_offset: _,
                dst,
                dst_offset,
                len,
            } => {
                let whole = *dst_offset == 0
                    && ctx
                        .prog
                        .buffers
                        .get(dst.index())
                        .is_some_and(|d| d.len == *len);
                if whole {
                    visit(&[*src], &[*dst]);
                } else {
                    visit(&[*src, *dst], &[]);
                }
            }
            Step::Host { args, outs, .. }
            | Step::ShardMap { args, outs, .. }
            | Step::Collective { args, outs, .. } => {
                let reads: Vec<BufId> = args.iter().map(|(b, _)| *b).collect();
                let writes: Vec<BufId> = outs.iter().map(|(b, _)| *b).collect();
                visit(&reads, &writes);
            }
            Step::CheckStep { step, .. } => visit(&[*step], &[]),
            Step::Cond { .. } | Step::While { .. } | Step::Scan { .. } => {
                visit(&step_buffers(s), &[]);
            }
        }
    }
    fresh
}

/// Every buffer a step (and the steps nested in it) names.
fn step_buffers(s: &Step) -> Vec<BufId> {
    let mut out = Vec::new();
    let nested = |steps: &[Step], out: &mut Vec<BufId>| {
        for t in steps {
            out.extend(step_buffers(t));
        }
    };
    match s {
        Step::Launch { args, .. } => out.extend(args.iter().filter_map(|a| match a {
            KArg::Buffer(b) => Some(*b),
            KArg::Scalar(_) => None,
        })),
        Step::Gemm {
            a, b, out: o, bias, ..
        } => out.extend([*a, *b, *o].into_iter().chain(*bias)),
        Step::Copy { src, dst, .. } => out.extend([*src, *dst]),
        Step::Host { args, outs, .. }
        | Step::ShardMap { args, outs, .. }
        | Step::Collective { args, outs, .. } => {
            out.extend(args.iter().chain(outs).map(|(b, _)| *b))
        }
        Step::CheckStep { step, .. } => out.push(*step),
        Step::Cond { index, branches } => {
            out.push(*index);
            for b in branches {
                nested(b, &mut out);
            }
        }
        Step::While {
            cond,
            pred,
            body,
            carry,
        } => {
            out.push(*pred);
            nested(cond, &mut out);
            nested(body, &mut out);
            for c in carry {
                out.extend([c.src, c.dst].into_iter().chain(c.temp));
            }
        }
        Step::Scan {
            xs,
            body,
            carry,
            ys,
            ..
        } => {
            out.extend(xs.iter().chain(ys).flat_map(|x| [x.stacked, x.item]));
            nested(body, &mut out);
            for c in carry {
                out.extend([c.src, c.dst].into_iter().chain(c.temp));
            }
        }
    }
    out
}

/// The loop's own carry buffers: one new buffer per carry, holding a copy
/// of `init`, which the body reads and the carry updates write (the
/// results `outs` get the final carries after the loop, see
/// [`finish_carries`]), so that exchanges never touch a buffer the program
/// hands out.
fn own_carries(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    init: &[Value],
    outs: &[(BufId, DType, Vec<usize>)],
) -> Result<Vec<(BufId, DType, Vec<usize>)>, IrError> {
    let mut own = Vec::new();
    for (dt, shape) in outs.iter().map(|(_, d, s)| (*d, s.clone())) {
        own.push((ctx.alloc(dt, &shape)?, dt, shape));
    }
    copy_results(ctx, steps, init, &own)?;
    Ok(own)
}

/// Copies the loop's own carries into its results.
fn finish_carries(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    own: &[(BufId, DType, Vec<usize>)],
    outs: &[(BufId, DType, Vec<usize>)],
) -> Result<(), IrError> {
    let vals: Vec<Value> = own.iter().map(|(b, _, _)| Value::Buf(*b)).collect();
    copy_results(ctx, steps, &vals, outs)
}

fn while_(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &WhileParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (cn, bn) = (p.cond_nconsts, p.body_nconsts);
    if eqn.inputs.len() < cn + bn {
        return Err(IrError::Invalid("while: too few operands".into()));
    }
    let all = values(env, &eqn.inputs)?;
    let (cconsts, rest) = all.split_at(cn);
    let (bconsts, init) = rest.split_at(bn);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let own = own_carries(ctx, steps, init, &outs)?;
    let carries: Vec<Value> = own.iter().map(|(b, _, _)| Value::Buf(*b)).collect();
    let mut csteps = Vec::new();
    let cargs: Vec<Value> = cconsts.iter().chain(&carries).copied().collect();
    let cvals = lower_closed(ctx, &p.cond_jaxpr, &cargs, &mut csteps)?;
    let pv = cvals
        .first()
        .copied()
        .ok_or_else(|| IrError::Invalid("while: predicate without result".into()))?;
    let pred = materialize(ctx, &mut csteps, pv, DType::Bool, 1)?;
    let mut bsteps = Vec::new();
    let bargs: Vec<Value> = bconsts.iter().chain(&carries).copied().collect();
    let bvals = lower_closed(ctx, &p.body_jaxpr, &bargs, &mut bsteps)?;
    if bvals.len() != outs.len() {
        return Err(IrError::Invalid(
            "while: body results and carries differ".into(),
        ));
    }
    let carry = carry_updates(ctx, &mut bsteps, &bvals, &own, true)?;
    steps.push(Step::While {
        cond: csteps,
        pred,
        body: bsteps,
        carry,
    });
    finish_carries(ctx, steps, &own, &outs)
}

fn scan(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &ScanParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (nc, ncar) = (p.num_consts, p.num_carry);
    if eqn.inputs.len() < nc + ncar || eqn.outputs.len() < ncar {
        return Err(IrError::Invalid("scan: too few operands".into()));
    }
    let all = values(env, &eqn.inputs)?;
    let mut items = Vec::new();
    let mut xs = Vec::new();
    for a in &eqn.inputs[nc + ncar..] {
        let (dt, shape) = atom_type(jaxpr, a)?;
        if shape.first() != Some(&p.length) {
            return Err(IrError::ty(
                "scan",
                "an xs operand's leading size is not the length",
            ));
        }
        let len: usize = shape[1..].iter().product();
        let stacked = materialize(ctx, steps, env.atom(a)?, dt, shape.iter().product())?;
        let item = ctx.alloc(dt, &shape[1..])?;
        xs.push(ScanSlice { stacked, item, len });
        items.push(Value::Buf(item));
    }
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (carry_outs, y_outs) = outs.split_at(ncar);
    let own = own_carries(ctx, steps, &all[nc..nc + ncar], carry_outs)?;
    let mut bsteps = Vec::new();
    let bargs: Vec<Value> = all[..nc]
        .iter()
        .copied()
        .chain(own.iter().map(|(b, _, _)| Value::Buf(*b)))
        .chain(items)
        .collect();
    let bvals = lower_closed(ctx, &p.jaxpr, &bargs, &mut bsteps)?;
    if bvals.len() != outs.len() {
        return Err(IrError::Invalid(
            "scan: body results and outputs differ".into(),
        ));
    }
    let carry = carry_updates(ctx, &mut bsteps, &bvals[..ncar], &own, true)?;
    let mut ys = Vec::new();
    for (v, (stacked, dt, shape)) in bvals[ncar..].iter().zip(y_outs) {
        let len: usize = shape[1..].iter().product();
        let item = materialize(ctx, &mut bsteps, *v, *dt, len)?;
        ys.push(ScanSlice {
            stacked: *stacked,
            item,
            len,
        });
    }
    steps.push(Step::Scan {
        length: p.length,
        reverse: p.reverse,
        xs,
        body: bsteps,
        carry,
        ys,
    });
    finish_carries(ctx, steps, &own, carry_outs)
}
