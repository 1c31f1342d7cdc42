//! Rules of `jit` (a call of a closed jaxpr): jvp, transpose and batching,
//! side by side; each builds a `jit` equation again around the callee's
//! jvp, transpose or batched body, keeping the callee's name (as JAX
//! does).
//!
//! Invariant: under `linearize` the jvp splits the callee into a known
//! call (returning the residuals, except those that are inputs, which are
//! forwarded) and a linear call, so no primal value enters a linear jaxpr.

use super::{needs_split, split_outs, spread};
use crate::jvp::jvp_jaxpr;
use crate::partial_eval::linearize_jaxpr;
use crate::rules::{values, BatchOuts, Cts, JvpOuts};
use crate::transpose::{transpose_jaxpr, LinArg};
use jaxon_ir::primitive::JitParams;
use jaxon_ir::{Atom, ClosedJaxpr, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, numpy as jnp, Array};
use std::sync::Arc;

/// `jit`: the callee's jvp, as a `jit` equation again.
pub(super) fn jvp(jp: &JitParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let JitParams { name, jaxpr } = jp;
    if crate::util::jaxpr_is_dynamic(&jaxpr.jaxpr) {
        // A callee with dynamic shapes cannot be re-staged from its avals:
        // its equations are differentiated in place (the operands carry
        // their dimension values).
        return crate::jvp::jvp_flat(
            |xs| jaxon_trace::interpret::eval_closed_jaxpr(jaxpr, &xs),
            x,
            t,
        );
    }
    let nonzero: Vec<bool> = t.iter().map(Option::is_some).collect();
    let mut args = x.to_vec();
    args.extend(t.iter().flatten().cloned());
    // JAX keeps the callee's name on the jvp and transpose calls.
    let jvp_name = name.to_string();
    if needs_split(x, t)? {
        // As JAX's partial evaluation of a call: the known call also
        // returns the residuals, and the linear call consumes them.
        let lj = linearize_jaxpr(jaxpr, &nonzero, &[])?;
        let n = jaxpr.jaxpr.outvars.len();
        // A residual that is an input is passed on directly, not returned.
        let mut kj = Arc::unwrap_or_clone(lj.known.jaxpr);
        let fwd: Vec<Option<usize>> = kj.outvars[n..]
            .iter()
            .map(|a| match a {
                Atom::Var(v) => kj.invars.iter().position(|w| w == v),
                Atom::Lit(_) => None,
            })
            .collect();
        let mut keep = vec![true; n];
        keep.extend(fwd.iter().map(Option::is_none));
        kj.outvars = kj
            .outvars
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(a, _)| *a)
            .collect();
        let mut known = bind(
            &Primitive::from(JitParams {
                name: name.to_string(),
                jaxpr: ClosedJaxpr {
                    jaxpr: Arc::new(kj),
                    consts: lj.known.consts,
                },
            }),
            x,
        )?;
        let mut computed = known.split_off(n).into_iter();
        let mut largs = Vec::with_capacity(fwd.len());
        for f in &fwd {
            largs.push(match f {
                Some(k) => x[*k].clone(),
                None => computed
                    .next()
                    .ok_or_else(|| Error::InvalidArgument("jit: missing residual".into()))?,
            });
        }
        largs.extend(t.iter().flatten().cloned());
        let tangents = if lj.out_nonzero.iter().any(|m| *m) {
            bind(
                &Primitive::from(JitParams {
                    name: jvp_name,
                    jaxpr: lj.linear,
                }),
                &largs,
            )?
        } else {
            Vec::new()
        };
        return Ok((known, spread(tangents, &lj.out_nonzero)));
    }
    let (jj, out_nz) = jvp_jaxpr(jaxpr, &nonzero, &[])?;
    let n = jaxpr.jaxpr.outvars.len();
    let outs = bind(
        &Primitive::from(JitParams {
            name: jvp_name,
            jaxpr: jj,
        }),
        &args,
    )?;
    Ok(split_outs(outs, n, &out_nz))
}

/// `jit`: the callee's transpose, called as a `jit` again.
pub(super) fn transpose(jp: &JitParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let JitParams { name, jaxpr } = jp;
    let linear: Vec<bool> = args.iter().map(LinArg::is_linear).collect();
    let tj = transpose_jaxpr(jaxpr, &linear)?;
    let mut operands = values(args);
    for (c, o) in cts.iter().zip(jaxpr.jaxpr.outvars.iter()) {
        operands.push(match c {
            Some(c) => c.clone(),
            None => {
                let aval = jaxpr
                    .jaxpr
                    .atom_aval(o)
                    .ok_or_else(|| Error::InvalidArgument("jit: unbound outvar".into()))?;
                zeros(aval.array())?
            }
        });
    }
    let outs = bind(
        &Primitive::from(JitParams {
            name: name.to_string(),
            jaxpr: tj,
        }),
        &operands,
    )?;
    let mut it = outs.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next() } else { None })
        .collect())
}

/// `jit`: the same call around the batched body.
pub(super) fn batch(
    jp: &JitParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    super::batch_call(&jp.jaxpr, x, d, n, axis, |jaxpr| {
        JitParams {
            name: jp.name.clone(),
            jaxpr,
        }
        .into()
    })
}

fn zeros(t: &ShapedArray) -> Result<Array> {
    let shape = t
        .static_sizes()
        .ok_or_else(|| Error::Unsupported("zeros of a dynamically shaped value".into()))?;
    jnp::zeros(&shape, t.dtype)
}
