//! Rules of the generic `reduce_window` (a combiner jaxpr over `n`
//! operands): jvp and batching. It is not linear, so it has no transpose.
//!
//! Invariants, as JAX's: the jvp reduces the primals and tangents together,
//! with the combiner's jvp as the new combiner (accumulators
//! `(primal, tangent)`, then elements `(primal, tangent)`) and the init
//! values' tangents as the tangents' inits; only float operands carry
//! tangents, closed to a fixpoint over the combiner. Batching moves every
//! operand's batch dimension to the front (a window of 1 there); batched
//! init values are refused, as in JAX.

use super::{BatchOuts, JvpOuts};
use crate::batch::to_front;
use crate::jvp::jvp_jaxpr;
use jaxon_ir::primitive::GenericReduceWindowParams;
use jaxon_ir::{ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, numpy as jnp, Array};
use std::sync::Arc;

/// The jvp of `reduce_window[jaxpr] x1..xn init1..initn`.
pub(crate) fn jvp(
    q: &GenericReduceWindowParams,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let n = x.len() / 2;
    let float: Vec<bool> = x[..n].iter().map(|a| a.dtype().is_float()).collect();
    let mut nz: Vec<bool> = (0..n)
        .map(|i| float[i] && (t[i].is_some() || t[n + i].is_some()))
        .collect();
    if !nz.contains(&true) {
        let y = bind(p, x)?;
        let k = y.len();
        return Ok((y, vec![None; k]));
    }
    let combiner = ClosedJaxpr::without_consts(q.jaxpr.clone());
    // The combiner's tangents flow between accumulators: iterate to a fixpoint.
    let (jvp, k) = loop {
        let mask: Vec<bool> = nz.iter().chain(&nz).copied().collect();
        let (jvp, out_nz) = jvp_jaxpr(&combiner, &mask, &nz)?;
        let grown: Vec<bool> = nz
            .iter()
            .zip(&out_nz)
            .zip(&float)
            .map(|((a, b), f)| *a || (*b && *f))
            .collect();
        if grown == nz && out_nz == nz {
            break (jvp, nz.iter().filter(|b| **b).count());
        }
        if grown == nz {
            return Err(Error::Unsupported(format!(
                "jvp of `{}`: the combiner gives a tangent to a non-float result",
                p.name()
            )));
        }
        nz = grown;
    };
    if !jvp.consts.is_empty() {
        return Err(Error::Unsupported(format!(
            "jvp of `{}`: the combiner's derivative closes over constants",
            p.name()
        )));
    }
    // (acc_p, x_p, acc_t, x_t) -> (acc_p, acc_t, x_p, x_t).
    let mut body: Jaxpr = (*jvp.jaxpr).clone();
    let iv = &body.invars;
    body.invars = [
        &iv[..n],
        &iv[2 * n..2 * n + k],
        &iv[n..2 * n],
        &iv[2 * n + k..],
    ]
    .concat();
    let tangent = |i: usize| -> Result<Array> {
        match &t[i] {
            Some(t) => Ok(t.clone()),
            None => jnp::zeros_like(&x[i]),
        }
    };
    let mut args: Vec<Array> = x[..n].to_vec();
    for i in (0..n).filter(|&i| nz[i]) {
        args.push(tangent(i)?);
    }
    args.extend_from_slice(&x[n..]);
    for i in (0..n).filter(|&i| nz[i]) {
        args.push(tangent(n + i)?);
    }
    let r = GenericReduceWindowParams {
        jaxpr: Arc::new(body),
        window: q.window.clone(),
    };
    let mut outs = bind(&r.into(), &args)?;
    let mut dts = outs.split_off(n).into_iter();
    let dt = nz
        .iter()
        .map(|&b| if b { dts.next() } else { None })
        .collect();
    Ok((outs, dt))
}

/// The batching rule: operands to the front, init values unbatched.
pub(crate) fn batch(
    q: &GenericReduceWindowParams,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    size: usize,
) -> Result<BatchOuts> {
    let n = x.len() / 2;
    if d[n..].iter().any(Option::is_some) {
        return Err(Error::Unsupported(format!(
            "vmap of `{}` with batched init values is not supported (as in JAX)",
            p.name()
        )));
    }
    let mut args = x[..n]
        .iter()
        .zip(&d[..n])
        .map(|(a, b)| to_front(a, *b, size))
        .collect::<Result<Vec<_>>>()?;
    args.extend_from_slice(&x[n..]);
    let r = GenericReduceWindowParams {
        jaxpr: q.jaxpr.clone(),
        window: super::window::with_batch(&q.window),
    };
    let outs = bind(&r.into(), &args)?;
    let k = outs.len();
    Ok((outs, vec![Some(0); k]))
}
