//! Rules of `remat2` (`checkpoint`): jvp, transpose and batching, side by
//! side.
//!
//! The jvp binds the primal `remat2` on the primals, and a second
//! `remat2[differentiated=True]` computing only the tangents from
//! `(primals, tangents)`: it recomputes the forward values it needs. Under
//! `linearize` the first runs now and the second is recorded in the linear
//! jaxpr with only the primal *inputs* as residuals; its transpose is again
//! a `remat2[differentiated=True]` whose body recomputes the forward pass
//! before running it backwards, as JAX's grad jaxprs show. Batching batches
//! the body; `remat2` has no consts, so the batched body's become operands.
//!
//! With a policy that saves something (`RematParams::policy`, the text of
//! a [`Policy`]), the jvp is `remat_saved.rs`'s instead: the saveable
//! values the tangents need are computed by the forward pass and passed
//! to the differentiated `remat2` as residuals. Every `remat2` a rule
//! binds keeps the policy text, as JAX's do.

use crate::batch::batch_jaxpr_named;
use crate::checkpoint_policies::Policy;
use crate::custom::open;
use crate::jvp::jvp_flat;
use crate::rules::{BatchOuts, Cts, JvpOuts};
use crate::transpose::{transpose_jaxpr, LinArg};
use jaxon_ir::primitive::RematParams;
use jaxon_ir::{Aval, ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{bind, Array};
use std::sync::Arc;

/// The `remat2[differentiated=True]` of `body`, with `rp`'s
/// `prevent_cse` and policy.
pub(super) fn differentiated(rp: &RematParams, body: Jaxpr) -> Primitive {
    Primitive::from(RematParams {
        jaxpr: Arc::new(body),
        prevent_cse: rp.prevent_cse,
        differentiated: true,
        policy: rp.policy.clone(),
    })
}

/// The policy of `rp`, read back from its text.
fn policy(rp: &RematParams) -> Result<Option<Policy>> {
    rp.policy
        .as_deref()
        .map(|s| {
            Policy::parse(s).ok_or_else(|| {
                Error::Unsupported(format!(
                    "remat2: differentiating under the checkpoint policy {s} \
                     (only jax.checkpoint_policies are known)"
                ))
            })
        })
        .transpose()
}

/// The jvp of `remat2` (see the module doc).
pub(super) fn jvp(rp: &RematParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    if let Some(p) = policy(rp)? {
        if !p.saves_nothing() {
            return super::remat_saved::jvp(rp, &p, x, t);
        }
    }
    let jaxpr = &rp.jaxpr;
    let primals_out = bind(&rp.clone().into(), x)?;
    let mut avals: Vec<Aval> = x.iter().map(|a| a.aval().clone()).collect();
    avals.extend(t.iter().flatten().map(|a| a.aval().clone()));
    let nonzero: Vec<bool> = t.iter().map(Option::is_some).collect();
    let n = x.len();
    let mut out_nz = Vec::new();
    let staged = trace_flat(StageMode::Base, &avals, |args| {
        let (ps, ts) = args.split_at(n);
        let mut it = ts.iter().cloned();
        let tangents: Vec<Option<Array>> = nonzero
            .iter()
            .map(|nz| if *nz { it.next() } else { None })
            .collect();
        let (_, tout) = jvp_flat(|ins| eval_jaxpr(jaxpr, &[], &ins), ps, &tangents)?;
        out_nz = tout.iter().map(Option::is_some).collect();
        Ok(tout.into_iter().flatten().collect())
    })?;
    let (body, mut operands) = open(staged.jaxpr, staged.consts);
    operands.extend_from_slice(x);
    operands.extend(t.iter().flatten().cloned());
    let touts = bind(&differentiated(rp, body), &operands)?;
    let mut it = touts.into_iter();
    let tangents = out_nz
        .iter()
        .map(|nz| if *nz { it.next() } else { None })
        .collect();
    Ok((primals_out, tangents))
}

/// The transpose of `remat2`: a `remat2[differentiated=True]` running the
/// body's transpose, which recomputes the forward values it needs.
pub(super) fn transpose(rp: &RematParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let jaxpr = &rp.jaxpr;
    let linear: Vec<bool> = args.iter().map(LinArg::is_linear).collect();
    let closed = ClosedJaxpr {
        jaxpr: jaxpr.clone(),
        consts: Arc::from(Vec::new()),
    };
    let t = transpose_jaxpr(&closed, &linear)?;
    let consts: Vec<Array> = t.consts.iter().cloned().map(Array::from_host).collect();
    let (body, mut operands): (Jaxpr, Vec<Array>) = open((*t.jaxpr).clone(), consts);
    for a in args {
        if let LinArg::Value(v) = a {
            operands.push(v.clone());
        }
    }
    for (c, o) in cts.iter().zip(&jaxpr.outvars) {
        operands.push(match c {
            Some(c) => c.clone(),
            None => {
                let a = jaxpr
                    .atom_aval(o)
                    .ok_or_else(|| Error::InvalidArgument("remat2: unbound outvar".into()))?;
                let ty = a.array();
                jaxon_trace::numpy::zeros(&ty.static_sizes().unwrap_or_default(), ty.dtype)?
            }
        });
    }
    let outs = bind(&differentiated(rp, body), &operands)?;
    let mut it = outs.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next() } else { None })
        .collect())
}

/// The batching rule.
pub(super) fn batch(
    rp: &RematParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    let args = super::fronted(x, d, n)?;
    let RematParams {
        jaxpr,
        prevent_cse,
        differentiated,
        policy,
    } = rp;
    let m = super::mask(d);
    let closed = ClosedJaxpr {
        jaxpr: jaxpr.clone(),
        consts: Arc::from(Vec::new()),
    };
    let (bj, ob) = batch_jaxpr_named(&closed, &m, n, axis, &[])?;
    // remat2 has no consts: the batched body's become operands.
    let mut body = (*bj.jaxpr).clone();
    let consts: Vec<Array> = bj.consts.iter().cloned().map(Array::from_host).collect();
    let hoisted: Vec<_> = body.constvars.drain(..).collect();
    body.invars.splice(0..0, hoisted);
    let mut all = consts;
    all.extend(args);
    let q = Primitive::from(RematParams {
        jaxpr: Arc::new(body),
        prevent_cse: *prevent_cse,
        differentiated: *differentiated,
        policy: policy.clone(),
    });
    let outs = bind(&q, &all)?;
    Ok((outs, super::dims_of(&ob)))
}
