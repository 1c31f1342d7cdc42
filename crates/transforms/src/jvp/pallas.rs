//! Forward mode of Pallas: `pallas_call` (one kernel computing primals and
//! tangents, as JAX's rule builds it) and the masked `load`/`store` the
//! kernels use.
//!
//! The kernel's jvp (`jvp_jaxpr` over its `Ref`s) takes primal refs, then
//! tangent refs; `pallas_call` wants inputs then outputs, so the jvp
//! kernel's invars are reordered to `(primal inputs, tangent inputs, primal
//! outputs, tangent outputs)` and each tangent operand reuses its primal's
//! block mapping.
//!
//! Reverse mode is not derived: the tangent kernel would have to be
//! transposed, turning disjoint parallel writes into overlapping ones. A
//! `pallas_call` under `linearize`/`grad` fails with [`NO_REVERSE`]; the
//! way to differentiate a kernel in reverse is `custom_vjp` with a
//! backward kernel.

use super::control::needs_split;
use super::rules::Outs;
use super::state::value_pos;
use crate::util::{has_tangent, zeros_like};
use jaxon_ir::primitive::BlockMapping;
use jaxon_ir::primitive::{Pallas, PallasCallParams};
use jaxon_ir::{ClosedJaxpr, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, Array};
use std::sync::Arc;

/// The error of reverse-mode differentiation through a `pallas_call`.
pub(crate) const NO_REVERSE: &str = "reverse-mode differentiation (grad, vjp, linearize) of \
     `pallas_call` is not supported: a kernel's reads and writes do not transpose into an \
     efficient kernel. Wrap the pallas_call in `custom_vjp` and give it a backward pass (which \
     can itself be a pallas_call); forward mode (jvp) works without one";

/// The jvp of `pallas_call`.
pub(crate) fn pallas_call(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        name,
        interpret,
        debug,
        input_output_aliases,
    })) = p
    else {
        return Err(Error::InvalidArgument(format!(
            "pallas_call jvp rule applied to `{}`",
            p.name()
        )));
    };
    if t.iter().all(Option::is_none) {
        let outs = bind(p, x)?;
        let n = outs.len();
        return Ok((outs, vec![None; n]));
    }
    if needs_split(x, t)? {
        return Err(Error::Unsupported(NO_REVERSE.into()));
    }
    if !input_output_aliases.is_empty() {
        return Err(Error::Unsupported(
            "jvp of a pallas_call with input_output_aliases".into(),
        ));
    }
    let n_in = x.len();
    if block_mappings.len() != n_in + out_avals.len() {
        return Err(Error::InvalidArgument(format!(
            "pallas_call: {} block mappings for {n_in} inputs and {} outputs",
            block_mappings.len(),
            out_avals.len()
        )));
    }
    let nz_in: Vec<bool> = t
        .iter()
        .zip(x)
        .map(|(ti, xi)| ti.is_some() && has_tangent(xi.dtype()))
        .collect();
    let nz_out: Vec<bool> = out_avals.iter().map(|a| has_tangent(a.dtype)).collect();
    let mut nonzero = nz_in.clone();
    nonzero.extend_from_slice(&nz_out);
    let closed = ClosedJaxpr {
        jaxpr: kernel.clone(),
        consts: Arc::from(Vec::new()),
    };
    let (jvp_k, _) = crate::jvp::jvp_jaxpr(&closed, &nonzero, &[])?;
    if !jvp_k.consts.is_empty() {
        return Err(Error::Unsupported(
            "jvp of a pallas_call whose tangent kernel captures constants".into(),
        ));
    }
    let n_out = out_avals.len();
    let n_tin = nz_in.iter().filter(|b| **b).count();
    let mut k = (*jvp_k.jaxpr).clone();
    let inv = k.invars.clone();
    let (p_in, rest) = inv.split_at(n_in);
    let (p_out, rest) = rest.split_at(n_out);
    let (t_in, t_out) = rest.split_at(n_tin);
    k.invars = [p_in, t_in, p_out, t_out].concat();

    let pick = |bms: &[BlockMapping], nz: &[bool]| -> Vec<BlockMapping> {
        bms.iter()
            .zip(nz)
            .filter(|(_, z)| **z)
            .map(|(b, _)| b.clone())
            .collect()
    };
    let (in_bms, out_bms) = block_mappings.split_at(n_in);
    let mut bms = in_bms.to_vec();
    bms.extend(pick(in_bms, &nz_in));
    bms.extend_from_slice(out_bms);
    bms.extend(pick(out_bms, &nz_out));
    let mut avals: Vec<ShapedArray> = out_avals.clone();
    avals.extend(
        out_avals
            .iter()
            .zip(&nz_out)
            .filter(|(_, z)| **z)
            .map(|(a, _)| a.clone()),
    );
    let q = Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
        kernel: Arc::new(k),
        grid: grid.clone(),
        block_mappings: bms,
        out_avals: avals,
        name: name.clone(),
        interpret: *interpret,
        debug: *debug,
        input_output_aliases: Vec::new(),
    }));
    let mut args = x.to_vec();
    for (ti, z) in t.iter().zip(&nz_in) {
        if let (Some(ti), true) = (ti, z) {
            args.push(ti.clone());
        }
    }
    let mut outs = bind(&q, &args)?;
    let tangents = outs.split_off(n_out);
    let mut it = tangents.into_iter();
    let t_outs = nz_out
        .iter()
        .map(|z| if *z { it.next() } else { None })
        .collect();
    Ok((outs, t_outs))
}

/// A tangent written into a ref that has none.
fn no_tangent_ref(p: &Primitive) -> Error {
    Error::Unsupported(format!(
        "jvp of `{}`: a value with a non-zero tangent is written into a Ref without a \
         tangent Ref",
        p.name()
    ))
}

/// The jvp of the masked `load` (`x[0]` is the ref).
pub(crate) fn load(
    p: &Primitive,
    has_other: bool,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<Outs> {
    let out = bind(p, x)?;
    let Some(tr) = &t[0] else {
        if has_other && t.last().is_some_and(Option::is_some) {
            return Err(Error::Unsupported(
                "jvp of a masked `load` whose `other` has a tangent but whose Ref has none".into(),
            ));
        }
        return Ok((out, vec![None]));
    };
    let mut ops = vec![tr.clone()];
    let last = x.len() - 1;
    for (i, xi) in x.iter().enumerate().skip(1) {
        if has_other && i == last {
            ops.push(match &t[i] {
                Some(o) => o.clone(),
                None => zeros_like(xi)?,
            });
        } else {
            ops.push(xi.clone());
        }
    }
    let dt = bind(p, &ops)?.remove(0);
    Ok((out, vec![Some(dt)]))
}

/// The jvp of the masked `store` (`x[0]` is the ref).
pub(crate) fn store(
    p: &Primitive,
    indexers: &[jaxon_ir::primitive::Indexer],
    x: &[Array],
    t: &[Option<Array>],
) -> Result<Outs> {
    let out = bind(p, x)?;
    let k = value_pos(indexers);
    // The old values' tangents are the tangent ref's old values.
    let tangents = match (&t[0], &t[k]) {
        (Some(tr), vt) => {
            let mut ops = x.to_vec();
            ops[0] = tr.clone();
            ops[k] = match vt {
                Some(v) => v.clone(),
                None => zeros_like(&x[k])?,
            };
            bind(p, &ops)?.into_iter().map(Some).collect()
        }
        (None, Some(_)) => return Err(no_tangent_ref(p)),
        (None, None) => vec![None; out.len()],
    };
    Ok((out, tangents))
}
