//! Rules of `remat2` (`checkpoint`): jvp, transpose and batching, side by
//! side.
//!
//! The jvp (`remat_saved.rs`) computes the primal outputs inline, with
//! the values the policy (`RematParams::policy`, the text of a
//! [`Policy`]) saves, and binds a `remat2[differentiated=True]` computing
//! only the tangents from `(saved values, primal inputs, tangents)`: it
//! recomputes the other forward values it needs. Without a policy nothing
//! is saved: under `linearize` only the primal *inputs* are residuals. The
//! transpose is again a `remat2[differentiated=True]` whose body
//! recomputes the forward pass before running it backwards, as JAX's grad
//! jaxprs show. Batching batches the body; `remat2` has no consts, so the
//! batched body's become operands. Every `remat2` a rule binds keeps the
//! policy text, as JAX's do.

use crate::batch::batch_jaxpr_named;
use crate::checkpoint_policies::Policy;
use crate::custom::open;
use crate::rules::{BatchOuts, Cts, JvpOuts};
use crate::transpose::{transpose_jaxpr, LinArg};
use jaxon_ir::primitive::RematParams;
use jaxon_ir::{ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
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

/// The policy of `rp`, read back from its text. A text that is no
/// `jax.checkpoint_policies` policy (a custom Python policy in a parsed
/// JAX jaxpr) saves nothing: a policy changes what is recomputed, never
/// the values.
fn policy(rp: &RematParams) -> Policy {
    rp.policy
        .as_deref()
        .and_then(Policy::parse)
        .unwrap_or(Policy::NothingSaveable)
}

/// The jvp of `remat2` (see the module doc): `remat_saved.rs`'s split,
/// under the policy (none saves only the inputs).
pub(super) fn jvp(rp: &RematParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    super::remat_saved::jvp(rp, &policy(rp), x, t)
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
