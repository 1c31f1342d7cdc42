//! `for_loop` (jaxon's functional form: `(consts, implicit, lo, hi, step,
//! index0, carries)`, body `(consts, implicit, i, carries) -> (implicit,
//! carries)`), driven from the host like `scan` and `while`.
//!
//! The loop keeps an `i64` iteration counter `k` as one more carry; each
//! iteration first computes the index `lo + k * step` (in the dtype of the
//! `index0` operand) with a one-thread kernel, runs the body's steps, and
//! updates the carries and `k + 1` through temporaries (`plan::CarryUpdate`).
//!
//! Invariants:
//! - Literal bounds give a static trip count (`interp::support::
//!   for_loop_trips`, the interpreter's rule): a `Step::Scan` with no
//!   stacked operands, so the host never reads anything back.
//! - Runtime bounds give a `Step::While` whose predicate is `k < trips`,
//!   `trips` computed once on the device by the same rule, after a
//!   `Step::CheckStep` that reads the step back and fails with the
//!   interpreter's error on a step it refuses (zero, or not positive
//!   without `apply_reverse_transform`); with literal bounds that error
//!   comes at compile time.

use super::kernel::{copy_into, gather_kernel, i64c, load};
use super::plan::{CarryUpdate, Step};
use super::{atom_type, bind_outputs, lower_closed, Ctx, Env, Value};
use crate::kir::Expr;
use jaxon_ir::primitive::ForLoopParams;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr, Literal, Scalar};

/// Lowers a `for_loop` equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &ForLoopParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (nc, ni) = (p.body_nconsts, p.nimplicit);
    let head = nc + ni;
    if eqn.inputs.len() < head + 4 {
        return Err(IrError::Invalid("for_loop: too few operands".into()));
    }
    let all: Vec<Value> = eqn
        .inputs
        .iter()
        .map(|a| env.atom(a))
        .collect::<Result<_, _>>()?;
    let (index_dtype, _) = atom_type(jaxpr, &eqn.inputs[head + 3])?;
    if !index_dtype.is_int() {
        return Err(IrError::ty("for_loop", "the loop index is not an integer"));
    }
    for k in 0..3 {
        let (dt, shape) = atom_type(jaxpr, &eqn.inputs[head + k])?;
        if !dt.is_int() || !shape.is_empty() {
            return Err(IrError::ty("for_loop", "bounds must be integer scalars"));
        }
    }
    let (lo, hi, step) = (all[head], all[head + 1], all[head + 2]);
    let init: Vec<Value> = all[nc..head]
        .iter()
        .chain(&all[head + 4..])
        .copied()
        .collect();
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    if outs.len() != init.len() {
        return Err(IrError::Invalid(
            "for_loop: outputs and carries differ in number".into(),
        ));
    }
    for (v, (b, _, shape)) in init.iter().zip(&outs) {
        copy_into(ctx, steps, *v, *b, shape.iter().product())?;
    }
    // The iteration counter, a carry starting at 0.
    let counter = ctx.alloc(DType::I64, &[])?;
    copy_into(ctx, steps, Value::Lit(i64_lit(0)), counter, 1)?;
    let mut body = Vec::new();
    let index = ctx.alloc(index_dtype, &[])?;
    gather_kernel(
        ctx,
        &mut body,
        "for_index",
        index,
        &[],
        |k, args, ctx, _| {
            let kv = load(k, args, ctx, Value::Buf(counter), i64c(0))?;
            let lo = load(k, args, ctx, lo, i64c(0))?.cast(DType::I64);
            let st = load(k, args, ctx, step, i64c(0))?.cast(DType::I64);
            Ok((lo + kv * st).cast(index_dtype))
        },
    )?;
    let bargs: Vec<Value> = all[..nc]
        .iter()
        .copied()
        .chain(outs[..ni].iter().map(|(b, _, _)| Value::Buf(*b)))
        .chain([Value::Buf(index)])
        .chain(outs[ni..].iter().map(|(b, _, _)| Value::Buf(*b)))
        .collect();
    let bvals = lower_closed(ctx, &p.body_jaxpr, &bargs, &mut body)?;
    if bvals.len() != outs.len() {
        return Err(IrError::Invalid(
            "for_loop: body results and carries differ".into(),
        ));
    }
    let mut carry = super::control::carry_updates(ctx, &mut body, &bvals, &outs, false)?;
    let next = ctx.alloc(DType::I64, &[])?;
    gather_kernel(ctx, &mut body, "for_next", next, &[], |k, args, ctx, _| {
        Ok(load(k, args, ctx, Value::Buf(counter), i64c(0))? + i64c(1))
    })?;
    carry.push(CarryUpdate {
        src: next,
        temp: Some(ctx.alloc(DType::I64, &[])?),
        dst: counter,
    });
    match (lo, hi, step) {
        (Value::Lit(lo), Value::Lit(hi), Value::Lit(step)) => {
            let int = |l: Literal| {
                l.as_i64()
                    .ok_or_else(|| IrError::ty("for_loop", "a bound is not an integer"))
            };
            let trips = jaxon_ir::interp::support::for_loop_trips(
                int(lo)?,
                int(hi)?,
                int(step)?,
                p.apply_reverse_transform,
            )?;
            steps.push(Step::Scan {
                length: usize::try_from(trips).unwrap_or(0),
                reverse: false,
                xs: Vec::new(),
                body,
                carry,
                ys: Vec::new(),
            });
        }
        _ => {
            let rev = p.apply_reverse_transform;
            let st = ctx.alloc(DType::I64, &[])?;
            gather_kernel(ctx, steps, "for_step", st, &[], |k, args, ctx, _| {
                Ok(load(k, args, ctx, step, i64c(0))?.cast(DType::I64))
            })?;
            steps.push(Step::CheckStep {
                step: st,
                reverse: rev,
            });
            let trips = ctx.alloc(DType::I64, &[])?;
            gather_kernel(ctx, steps, "for_trips", trips, &[], |k, args, ctx, _| {
                let lo = load(k, args, ctx, lo, i64c(0))?.cast(DType::I64);
                let hi = load(k, args, ctx, hi, i64c(0))?.cast(DType::I64);
                let st = load(k, args, ctx, step, i64c(0))?.cast(DType::I64);
                Ok(trip_count(k, lo, hi, st, rev))
            })?;
            let mut cond = Vec::new();
            let pred = ctx.alloc(DType::Bool, &[])?;
            gather_kernel(ctx, &mut cond, "for_pred", pred, &[], |k, args, ctx, _| {
                let kv = load(k, args, ctx, Value::Buf(counter), i64c(0))?;
                let t = load(k, args, ctx, Value::Buf(trips), i64c(0))?;
                Ok(kv.lt(t))
            })?;
            steps.push(Step::While {
                cond,
                pred,
                body,
                carry,
            });
        }
    }
    Ok(())
}

fn i64_lit(v: i64) -> Literal {
    Literal {
        value: Scalar::Int(v),
        dtype: DType::I64,
    }
}

/// The trip count `for_loop_trips` computes, as an `i64` expression: the
/// ceiling of `(hi - lo) / step` clamped at 0, and 0 for a step the
/// interpreter refuses.
pub(crate) fn trip_count(
    k: &mut crate::kir::KernelBuilder,
    lo: Expr,
    hi: Expr,
    st: Expr,
    rev: bool,
) -> Expr {
    let zero = || i64c(0);
    let ok = if rev {
        st.clone().ne(zero())
    } else {
        st.clone().gt(zero())
    };
    let s = k.let_("s", DType::I64, Expr::select(ok.clone(), st, i64c(1)));
    let dist = k.let_("dist", DType::I64, hi - lo);
    let (s, dist) = (Expr::var(s), Expr::var(dist));
    let q = dist.clone() / s.clone();
    let r = dist.clone() % s.clone();
    let same_sign =
        (dist.clone().lt(zero()).and(s.clone().lt(zero()))).or(dist.gt(zero()).and(s.gt(zero())));
    let up = r.ne(zero()).and(same_sign);
    let q = q + Expr::select(up, i64c(1), zero());
    Expr::select(ok, q.max(zero()), zero())
}
