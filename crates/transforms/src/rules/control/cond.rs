//! Rules of `cond`: jvp, transpose and batching, side by side (with
//! dynamic shapes, the split jvp and the transpose are `cond_dyn.rs`).
//!
//! - jvp: the jvp of every branch, with the union of their non-zero output
//!   tangents instantiated so the branches agree. Under linearize: a known
//!   cond returning every branch's residuals (zeros in the other branches'
//!   slots, where JAX uses `empty2`) and a linear cond whose branch `i`
//!   reads its own residuals.
//! - transpose: a cond of the branches' transposes, on the index, the
//!   known operands and the cotangents.
//! - batch: a batched predicate becomes a `select_n` over every branch's
//!   batched results; otherwise a cond of the batched branches.

use super::{dims_of, fronted, mask, needs_split, split_outs, spread};
use crate::batch::{batch_jaxpr_named, to_front};
use crate::jvp::jvp_jaxpr;
use crate::partial_eval::linearize_jaxpr;
use crate::rules::{zeros, BatchOuts, Cts, JvpOuts};
use crate::transpose::{transpose_jaxpr, LinArg};
use crate::util::{jaxpr_is_dynamic, scalar_like};
use jaxon_ir::primitive::CondParams;
use jaxon_ir::{Aval, ClosedJaxpr, DType, Jaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, lax, numpy as jnp, Array};

/// The jvp rule.
pub(super) fn jvp(cp: &CondParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let CondParams { branches, .. } = cp;
    // Operand 0 is the index.
    let nonzero: Vec<bool> = t[1..].iter().map(Option::is_some).collect();
    let mut union: Vec<bool> = Vec::new();
    for b in branches {
        let (_, nz) = jvp_jaxpr(b, &nonzero, &[])?;
        union.resize(nz.len(), false);
        for (u, n) in union.iter_mut().zip(nz) {
            *u |= n;
        }
    }
    if needs_split(x, t)? {
        let dynamic = x.iter().any(jaxon_trace::dynshape::is_dynamic)
            || branches
                .iter()
                .any(|b| crate::util::jaxpr_is_dynamic(&b.jaxpr));
        if dynamic {
            return super::cond_dyn::cond_split_dyn(branches, x, t, &union);
        }
        return cond_split(branches, x, t, &nonzero, &union);
    }
    let new_branches = branches
        .iter()
        .map(|b| jvp_jaxpr(b, &nonzero, &union).map(|r| r.0))
        .collect::<Result<Vec<_>>>()?;
    let mut args = x.to_vec();
    args.extend(t[1..].iter().flatten().cloned());
    let n = union.len();
    let outs = bind(
        &Primitive::from(CondParams {
            branches: new_branches,
            branches_platforms: None,
        }),
        &args,
    )?;
    Ok(split_outs(outs, n, &union))
}

/// The types of a jaxpr's outputs from `from` on.
fn out_avals_from(j: &Jaxpr, from: usize) -> Result<Vec<Aval>> {
    j.outvars[from..]
        .iter()
        .map(|a| {
            j.atom_aval(a)
                .ok_or_else(|| Error::InvalidArgument("unbound outvar".into()))
        })
        .collect()
}

/// `cond` under linearize: a known cond computing the primal outputs and
/// the residuals of every branch (each branch fills the other branches'
/// residual slots with zeros, where JAX uses `empty2`), and a linear cond
/// whose branch `i` reads its own residuals.
fn cond_split(
    branches: &[ClosedJaxpr],
    x: &[Array],
    t: &[Option<Array>],
    nonzero: &[bool],
    union: &[bool],
) -> Result<JvpOuts> {
    let n_out = union.len();
    let lins = branches
        .iter()
        .map(|b| linearize_jaxpr(b, nonzero, union))
        .collect::<Result<Vec<_>>>()?;
    let res_avals: Vec<Vec<Aval>> = lins
        .iter()
        .map(|l| out_avals_from(&l.known.jaxpr, n_out))
        .collect::<Result<_>>()?;
    let op_avals: Vec<Aval> = x[1..].iter().map(|a| a.aval().clone()).collect();
    let mut known_branches = Vec::with_capacity(branches.len());
    for (i, l) in lins.iter().enumerate() {
        let staged = trace_flat(StageMode::Base, &op_avals, |ops| {
            let mut outs = eval_closed_jaxpr(&l.known, &ops)?;
            let own = outs.split_off(n_out);
            for (j, avals) in res_avals.iter().enumerate() {
                if j == i {
                    outs.extend(own.iter().cloned());
                } else {
                    for a in avals {
                        let t = a.array();
                        outs.push(jnp::zeros(&t.static_sizes().unwrap_or_default(), t.dtype)?);
                    }
                }
            }
            Ok(outs)
        })?;
        known_branches.push(close(staged)?);
    }
    let all_res: Vec<Aval> = res_avals.iter().flatten().cloned().collect();
    let mut lin_avals = all_res.clone();
    lin_avals.extend(t[1..].iter().flatten().map(|a| a.aval().clone()));
    let mut lin_branches = Vec::with_capacity(branches.len());
    let mut offset = 0;
    for (l, avals) in lins.iter().zip(&res_avals) {
        let range = offset..offset + avals.len();
        offset += avals.len();
        let staged = trace_flat(StageMode::Base, &lin_avals, |args| {
            let mut largs = args[range.clone()].to_vec();
            largs.extend(args[all_res.len()..].iter().cloned());
            eval_closed_jaxpr(&l.linear, &largs)
        })?;
        lin_branches.push(close(staged)?);
    }
    let mut known = bind(
        &Primitive::from(CondParams {
            branches: known_branches,
            branches_platforms: None,
        }),
        x,
    )?;
    let res = known.split_off(n_out);
    if !union.iter().any(|m| *m) {
        return Ok((known, vec![None; n_out]));
    }
    let mut largs = vec![x[0].clone()];
    largs.extend(res);
    largs.extend(t[1..].iter().flatten().cloned());
    let touts = bind(
        &Primitive::from(CondParams {
            branches: lin_branches,
            branches_platforms: None,
        }),
        &largs,
    )?;
    Ok((known, spread(touts, union)))
}

/// The transpose rule (operand 0 is the index).
pub(super) fn transpose(cp: &CondParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let CondParams { branches, .. } = cp;
    if branches.iter().any(|b| jaxpr_is_dynamic(&b.jaxpr)) {
        return super::cond_dyn::transpose(branches, args, cts);
    }
    let name = "cond";
    let linear: Vec<bool> = args[1..].iter().map(LinArg::is_linear).collect();
    let mut new_branches = Vec::with_capacity(branches.len());
    for b in branches {
        new_branches.push(transpose_jaxpr(b, &linear)?);
    }
    let mut operands = vec![args[0].value(name)?.clone()];
    for a in &args[1..] {
        if let LinArg::Value(v) = a {
            operands.push(v.clone());
        }
    }
    for (c, t) in cts.iter().zip(branches[0].jaxpr.outvars.iter()) {
        let aval = branches[0]
            .jaxpr
            .atom_aval(t)
            .ok_or_else(|| Error::InvalidArgument("cond outvar".into()))?;
        operands.push(match c {
            Some(c) => c.clone(),
            None => zeros(aval.array())?,
        });
    }
    let outs = bind(
        &Primitive::from(CondParams {
            branches: new_branches,
            branches_platforms: None,
        }),
        &operands,
    )?;
    let mut it = outs.into_iter();
    let mut result = vec![None];
    result.extend(linear.iter().map(|l| if *l { it.next() } else { None }));
    Ok(result)
}

/// The batching rule.
pub(super) fn batch(
    cp: &CondParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    let CondParams { branches, .. } = cp;
    let ops = fronted(&x[1..], &d[1..], n)?;
    let m = mask(&d[1..]);
    if d[0].is_none() {
        // Every branch must batch the same outputs: the union, instantiated.
        let mut union: Vec<bool> = Vec::new();
        for b in branches {
            let (_, ob) = batch_jaxpr_named(b, &m, n, name, &[])?;
            union.resize(ob.len(), false);
            for (u, o) in union.iter_mut().zip(ob) {
                *u |= o;
            }
        }
        let new = branches
            .iter()
            .map(|b| batch_jaxpr_named(b, &m, n, name, &union).map(|r| r.0))
            .collect::<Result<Vec<_>>>()?;
        let mut args = vec![x[0].clone()];
        args.extend(ops);
        let outs = bind(
            &Primitive::from(CondParams {
                branches: new,
                branches_platforms: None,
            }),
            &args,
        )?;
        return Ok((outs, dims_of(&union)));
    }
    // A batched index: run every branch and select per member (cond clamps
    // its index, so the select's index is clamped the same way).
    let idx = to_front(&x[0], d[0], n)?;
    let hi = scalar_like(&idx, (branches.len() - 1) as f64)?;
    let idx = lax::clamp(&scalar_like(&idx, 0.0)?, &idx, &hi)?;
    let which = if idx.dtype() == DType::I32 {
        idx
    } else {
        lax::convert_element_type(&idx, DType::I32, false)?
    };
    let mut per_branch = Vec::with_capacity(branches.len());
    for b in branches {
        let nout = b.jaxpr.outvars.len();
        let (bj, _) = batch_jaxpr_named(b, &m, n, name, &vec![true; nout])?;
        per_branch.push(eval_closed_jaxpr(&bj, &ops)?);
    }
    let nout = per_branch.first().map_or(0, Vec::len);
    let mut outs = Vec::with_capacity(nout);
    for j in 0..nout {
        let cases: Vec<Array> = per_branch.iter().map(|o| o[j].clone()).collect();
        let w = if jaxon_trace::dynshape::is_dynamic(&cases[0]) {
            let sizes = jaxon_trace::dynshape::sizes(&cases[0])?;
            jaxon_trace::dynshape::broadcast_in_dim(&which, &sizes, &[0])?
        } else {
            lax::broadcast_in_dim(&which, &cases[0].try_shape()?, &[0])?
        };
        outs.push(lax::select_n(&w, &cases)?);
    }
    Ok((outs, vec![Some(0); nout]))
}
