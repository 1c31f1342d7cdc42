//! Collectives over a named `vmap` axis: `psum`, `pmean`, `pmax`,
//! `all_gather` and `axis_index`. They are not primitives: the enclosing
//! batch main of that name is found on the current stack, and the
//! collective becomes a reduction (or an iota) over its batch dimension.
//!
//! A value of a batch trace above the named one (a nested `vmap` of another
//! axis) is handled member-wise, keeping its own batch dim; jvp tracers in
//! between are handled for the linear collectives. Other traces in between
//! (a `jit` or a control-flow body staged inside the vmap) cannot see the
//! axis: that is an `Unsupported` error naming it.

use super::{batch_trace, batched, moveaxis, new_batched};
use crate::jvp::{dual, new_dual, JvpTrace};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::DType;
use jaxon_trace::core::{current_mains, MainTrace};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{lax, Array};
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Mean,
    Max,
    Gather,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "psum",
            Op::Mean => "pmean",
            Op::Max => "pmax",
            Op::Gather => "all_gather",
        }
    }

    fn linear(self) -> bool {
        matches!(self, Op::Sum | Op::Mean | Op::Gather)
    }
}

/// The innermost batch main of the current stack named `name`, and its
/// axis size.
fn find_axis(name: &str, op: &str) -> Result<(Arc<MainTrace>, usize)> {
    current_mains()
        .into_iter()
        .rev()
        .find_map(|m| {
            let t = batch_trace(&m)?;
            (t.axis_name.as_deref() == Some(name))
                .then_some(t.axis_size)
                .map(|n| (m.clone(), n))
        })
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{op}: unbound axis name '{name}': it is not the axis_name of an enclosing vmap \
                 (a jit or a control-flow body staged inside the vmap does not see its axis)"
            ))
        })
}

/// `psum(x, axis_name)`: the sum of `x` over the members of the named
/// axis; every member gets the same (unbatched) result.
pub fn psum(x: &Array, axis_name: &str) -> Result<Array> {
    collective(x, axis_name, Op::Sum)
}

/// `pmean(x, axis_name)`: the mean over the named axis.
pub fn pmean(x: &Array, axis_name: &str) -> Result<Array> {
    collective(x, axis_name, Op::Mean)
}

/// `pmax(x, axis_name)`: the maximum over the named axis.
pub fn pmax(x: &Array, axis_name: &str) -> Result<Array> {
    collective(x, axis_name, Op::Max)
}

/// `all_gather(x, axis_name)`: every member's `x`, stacked along a new
/// leading axis.
pub fn all_gather(x: &Array, axis_name: &str) -> Result<Array> {
    collective(x, axis_name, Op::Gather)
}

/// `axis_index(axis_name)`: this member's index along the named axis (i32).
pub fn axis_index(axis_name: &str) -> Result<Array> {
    let (main, n) = find_axis(axis_name, "axis_index")?;
    Ok(new_batched(&main, lax::iota(DType::I32, n)?, Some(0)))
}

fn collective(x: &Array, name: &str, op: Op) -> Result<Array> {
    let (main, n) = find_axis(name, op.name())?;
    apply(x, &main, n, op, name)
}

fn apply(x: &Array, target: &Arc<MainTrace>, n: usize, op: Op, name: &str) -> Result<Array> {
    let Some(t) = x.as_tracer() else {
        return replicated(x, n, op);
    };
    let m = t.main();
    if Arc::ptr_eq(m, target) {
        let b = batched(x)?;
        let v = match b.bdim {
            None => replicated(&b.value, n, op)?,
            Some(d) => reduce(&b.value, d, n, op)?,
        };
        return Ok(new_batched(target, v, None));
    }
    if !m.is_on_current_stack() || m.level() < target.level() {
        return replicated(x, n, op);
    }
    if batch_trace(m).is_some() {
        let b = batched(x)?;
        let inner = apply(&b.value, target, n, op, name)?;
        let bdim = b.bdim.map(|d| d + usize::from(op == Op::Gather));
        return Ok(new_batched(m, inner, bdim));
    }
    if m.trace().as_any().is::<JvpTrace>() && op.linear() {
        let dl = dual(x)?;
        let p = apply(&dl.primal, target, n, op, name)?;
        let t = dl
            .tangent
            .as_ref()
            .map(|t| apply(t, target, n, op, name))
            .transpose()?;
        return Ok(new_dual(m, p, t));
    }
    Err(Error::Unsupported(format!(
        "{}: a value traced by a {} trace inside the vmap of axis '{name}' cannot be \
         reduced over that axis (collectives are not primitives, so a jit or a staged \
         control-flow body inside the vmap does not see the axis)",
        op.name(),
        m.trace().name()
    )))
}

/// The collective of a value that is the same for every member.
fn replicated(x: &Array, n: usize, op: Op) -> Result<Array> {
    match op {
        Op::Sum => lax::mul(x, &crate::util::scalar_like(x, n as f64)?),
        Op::Mean | Op::Max => Ok(x.clone()),
        Op::Gather => {
            let shape = x.try_shape()?;
            let mut out = vec![n];
            out.extend_from_slice(&shape);
            let dims: Vec<usize> = (1..out.len()).collect();
            lax::broadcast_in_dim(x, &out, &dims)
        }
    }
}

/// The collective of a value batched along `d`.
fn reduce(v: &Array, d: usize, n: usize, op: Op) -> Result<Array> {
    match op {
        Op::Sum => lax::reduce(ReduceOp::Sum, v, &[d]),
        Op::Mean => {
            let s = lax::reduce(ReduceOp::Sum, v, &[d])?;
            lax::div(&s, &crate::util::scalar_like(&s, n as f64)?)
        }
        Op::Max => lax::reduce(ReduceOp::Max, v, &[d]),
        Op::Gather => moveaxis(v, d, 0),
    }
}
