//! Rules of the control family (calls, `cond`, `while`, `scan`,
//! `for_loop`, custom rules, `remat2`): one file per primitive, each with
//! its jvp, transpose and batching rules side by side; this file holds the
//! family's dispatch and the helpers its rules share.
//!
//! Design of the jvp rules: the primal results of a rule must come from
//! binds on primal operands only (under `linearize` the tangents are
//! tracers of a staging main that sits above the primals' traces, and a
//! primal computed together with them would be recorded into the linear
//! jaxpr and leak). So each rule asks [`needs_split`]: when the tangents
//! live on a higher trace than every primal, the rule splits the callee
//! with [`crate::partial_eval::linearize_jaxpr`] (JAX's partial evaluation
//! of the jvp) and binds a *known* primitive on the primals, which returns
//! the primal results plus residuals, and a *linear* one on the residuals
//! and tangents; otherwise it binds one primitive computing both, as JAX's
//! forward mode does.
//!
//! Transpose rules run the body's backward pass inside the same primitive
//! (a `jit` of the transpose, a reversed `scan` or `for_loop`, a `cond` of
//! the branches' transposes); `while` is not transposable. Batching rules
//! batch the bodies with `batch_jaxpr`, to a fixpoint of batched carries
//! for loops.

mod cond;
mod cond_dyn;
mod custom;
mod for_loop;
mod for_loop_split;
mod jit;
mod linear_solve;
mod remat;
mod remat_saved;
mod scan;
mod shard_map;
mod while_;
mod while_grad;

use super::{BatchOuts, Cts, JvpOuts};
use crate::batch::to_front;
use crate::jvp::jvp_jaxpr;
use crate::transpose::LinArg;
use crate::util::zeros_like;
use jaxon_ir::primitive::Control;
use jaxon_ir::{ClosedJaxpr, Jaxpr};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::Result;
use jaxon_trace::Array;
use std::sync::Arc;

/// The jvp rules of the family.
pub(crate) fn jvp(c: &Control, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match c {
        Control::Jit(jp) => jit::jvp(jp, x, t),
        Control::Cond(cp) => cond::jvp(cp, x, t),
        Control::While(wp) => while_::jvp(wp, x, t),
        Control::Scan(sp) => scan::jvp(sp, x, t),
        Control::ForLoop(fp) => for_loop::jvp(fp, x, t),
        Control::CustomJvpCall(cp) => custom::jvp_custom_jvp_call(cp, x, t),
        Control::CustomVjpCall(cp) => custom::jvp_custom_vjp_call(cp, x, t),
        Control::Remat(rp) => remat::jvp(rp, x, t),
        Control::CustomLinearSolve(lp) => linear_solve::jvp(lp, x, t),
        Control::ShardMap(sp) => shard_map::jvp(sp, x, t),
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(c: &Control, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    match c {
        Control::Jit(jp) => jit::transpose(jp, args, cts),
        Control::Cond(cp) => cond::transpose(cp, args, cts),
        Control::While(_) => while_::transpose(),
        Control::Scan(sp) => scan::transpose(sp, args, cts),
        Control::ForLoop(fp) => for_loop::transpose(fp, args, cts),
        Control::CustomJvpCall(cp) => custom::transpose_custom_jvp_call(cp, args, cts),
        Control::CustomVjpCall(cp) => custom::transpose_custom_vjp_call(cp, args, cts),
        Control::Remat(rp) => remat::transpose(rp, args, cts),
        Control::CustomLinearSolve(lp) => linear_solve::transpose(lp, args, cts),
        Control::ShardMap(sp) => shard_map::transpose(sp, args, cts),
    }
}

/// The batching rules of the family; `axis` is the vmap's axis name.
pub(crate) fn batch(
    c: &Control,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    match c {
        Control::Jit(jp) => jit::batch(jp, x, d, n, axis),
        Control::Cond(cp) => cond::batch(cp, x, d, n, axis),
        Control::While(wp) => while_::batch(wp, x, d, (n, axis)),
        Control::Scan(sp) => scan::batch(sp, x, d, n, axis),
        Control::ForLoop(fp) => for_loop::batch(fp, x, d, n, axis),
        Control::CustomJvpCall(cp) => custom::batch_custom_jvp_call(cp, x, d, n, axis),
        Control::CustomVjpCall(cp) => custom::batch_custom_vjp_call(cp, x, d, n, axis),
        Control::Remat(rp) => remat::batch(rp, x, d, n, axis),
        Control::CustomLinearSolve(lp) => linear_solve::batch(lp, x, d, n, axis),
        Control::ShardMap(sp) => shard_map::batch(sp, x, d, n, axis),
    }
}

// ---------------------------------------------------------------- jvp --

/// Whether the tangents live on a trace above every primal's, so primal
/// and tangent work must be bound separately.
pub(crate) fn needs_split(x: &[Array], t: &[Option<Array>]) -> Result<bool> {
    let ts: Vec<Array> = t.iter().flatten().cloned().collect();
    if ts.is_empty() {
        return Ok(false);
    }
    let tp = find_top_trace(x)?;
    let tt = find_top_trace(&ts)?;
    Ok(tt.level() > tp.level())
}

/// Splits the outputs of a combined primitive into primals and tangents.
pub(super) fn split_outs(outs: Vec<Array>, n: usize, out_nz: &[bool]) -> JvpOuts {
    let mut it = outs.into_iter();
    let primals: Vec<Array> = it.by_ref().take(n).collect();
    (primals, spread(it, out_nz))
}

/// Places the tangents of the outputs marked in `nz`, in order.
pub(super) fn spread(tangents: impl IntoIterator<Item = Array>, nz: &[bool]) -> Vec<Option<Array>> {
    let mut it = tangents.into_iter();
    nz.iter()
        .map(|m| if *m { it.next() } else { None })
        .collect()
}

/// Grows the set of carries with a non-zero tangent until the body maps
/// it into itself. `nz` covers the body's inputs; its carries are
/// `nz[c0..c0 + nk]` and the body's first `nk` results are the new carries.
pub(super) fn carry_fixpoint(
    body: &ClosedJaxpr,
    nz: &mut [bool],
    c0: usize,
    nk: usize,
) -> Result<()> {
    let j = &body.jaxpr;
    let can_grow = (0..nk)
        .any(|k| !nz[c0 + k] && crate::util::has_tangent(j.aval(j.invars[c0 + k]).array().dtype));
    if !can_grow {
        return Ok(());
    }
    loop {
        let (_, out_nz) = jvp_jaxpr(body, nz, &[])?;
        let mut changed = false;
        for k in 0..nk {
            if out_nz[k] && !nz[c0 + k] {
                nz[c0 + k] = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
    }
}

/// The closed consts of `closed` as leading invars, so they can be passed
/// as operands of a loop (whose bodies we keep without consts).
pub(super) fn open_consts(closed: ClosedJaxpr) -> (Jaxpr, Vec<Array>) {
    let mut j = Arc::unwrap_or_clone(closed.jaxpr);
    let mut invars = std::mem::take(&mut j.constvars);
    invars.append(&mut j.invars);
    j.invars = invars;
    let consts = closed
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    (j, consts)
}

/// Tangents for the positions marked in `nz`, zeros where a marked
/// tangent is still symbolic.
pub(super) fn instantiated(x: &[Array], t: &[Option<Array>], nz: &[bool]) -> Result<Vec<Array>> {
    let mut out = Vec::new();
    for ((xi, ti), m) in x.iter().zip(t).zip(nz) {
        if *m {
            out.push(match ti {
                Some(ti) => ti.clone(),
                None => zeros_like(xi)?,
            });
        }
    }
    Ok(out)
}

pub(super) fn count(m: &[bool]) -> usize {
    m.iter().filter(|b| **b).count()
}

// -------------------------------------------------------------- batch --

pub(super) fn mask(d: &[Option<usize>]) -> Vec<bool> {
    d.iter().map(Option::is_some).collect()
}

/// Batched operands moved to the front; unbatched ones unchanged.
pub(super) fn fronted(x: &[Array], d: &[Option<usize>], n: usize) -> Result<Vec<Array>> {
    x.iter()
        .zip(d)
        .map(|(a, b)| match b {
            Some(_) => to_front(a, *b, n),
            None => Ok(a.clone()),
        })
        .collect()
}

/// A call primitive around its batched body: the operands' batch axes
/// moved to the front, the callee batched, and the primitive rebuilt by
/// `rebuild` around the batched callee (`jit`, the custom-derivative
/// calls).
pub(super) fn batch_call(
    callee: &ClosedJaxpr,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
    rebuild: impl FnOnce(ClosedJaxpr) -> jaxon_ir::Primitive,
) -> Result<BatchOuts> {
    let args = fronted(x, d, n)?;
    let (bj, ob) = crate::batch::batch_jaxpr_named(callee, &mask(d), n, axis, &[])?;
    let outs = jaxon_trace::bind(&rebuild(bj), &args)?;
    Ok((outs, dims_of(&ob)))
}

pub(super) fn dims_of(batched: &[bool]) -> Vec<Option<usize>> {
    batched.iter().map(|b| b.then_some(0)).collect()
}
