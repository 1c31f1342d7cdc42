//! Rules of `while`: jvp, transpose and batching, side by side.
//!
//! - jvp: the carries' tangents by a fixpoint over which carries are
//!   non-zero; the predicate ignores the tangent carries. Under linearize
//!   a counting loop gives the trip count and the loop is differentiated
//!   as the equivalent `for_loop` (`while_grad.rs`); JAX refuses this case.
//! - transpose: an error, as in JAX (the trip count is only known at run
//!   time).
//! - batch: with a batched predicate the loop runs while any member
//!   continues and keeps the finished members' carries.

use super::{
    carry_fixpoint, count, dims_of, fronted, instantiated, mask, needs_split, open_consts,
    split_outs,
};
use crate::batch::{batch_jaxpr_named, to_front};
use crate::jvp::jvp_jaxpr;
use crate::rules::{BatchOuts, Cts, JvpOuts};
use jaxon_ir::primitive::{ReduceOp, WhileParams};
use jaxon_ir::{ClosedJaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{close, leaf_avals, trace_flat, StageMode};
use jaxon_trace::{bind, lax, Array};
use std::sync::Arc;

/// JAX's message for reverse mode through a `while` loop.
const WHILE_REVERSE_ERROR: &str = "Reverse-mode differentiation does not work for \
     lax.while_loop or lax.fori_loop with dynamic start/stop values. Try using lax.scan, or \
     using fori_loop with static start/stop.";

/// The jvp rule.
pub(super) fn jvp(wp: &WhileParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let WhileParams {
        cond_jaxpr,
        body_jaxpr,
        cond_nconsts: cn,
        body_nconsts: bn,
    } = wp;
    if needs_split(x, t)? {
        return super::while_grad::split_while(wp, x, t);
    }
    let (cn, bn) = (*cn, *bn);
    let nk = x.len() - cn - bn;
    let mut nz: Vec<bool> = t[cn..].iter().map(Option::is_some).collect();
    carry_fixpoint(body_jaxpr, &mut nz, bn, nk)?;
    let nbt = count(&nz[..bn]);
    let (bj, out_nz) = jvp_jaxpr(body_jaxpr, &nz, &nz[bn..])?;
    if out_nz != nz[bn..] {
        return Err(Error::InvalidArgument(
            "while jvp: the body's tangent carries do not match its inputs".into(),
        ));
    }
    let (mut bj, hoisted) = open_consts(bj);
    // Body invars: [hoisted, bconsts, carry, bconsts_t, carry_t] ->
    // [hoisted, bconsts, bconsts_t, carry, carry_t].
    let nh = hoisted.len();
    let inv = bj.invars.clone();
    let tan = &inv[nh + bn + nk..];
    bj.invars = inv[..nh + bn]
        .iter()
        .chain(&tan[..nbt])
        .chain(&inv[nh + bn..nh + bn + nk])
        .chain(&tan[nbt..])
        .copied()
        .collect();
    // The predicate takes the tangent carries too, and ignores them.
    let mut cj = (*cond_jaxpr.jaxpr).clone();
    for k in 0..nk {
        if nz[bn + k] {
            // The cond jaxpr's own carry type: with dynamic shapes its
            // dimensions are the cond jaxpr's implicit carries.
            let aval = cj.aval(cj.invars[cn + k]).clone();
            let v = cj.new_var(aval);
            cj.invars.push(v);
        }
    }
    let new_while = Primitive::from(WhileParams {
        cond_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(cj),
            consts: cond_jaxpr.consts.clone(),
        },
        body_jaxpr: ClosedJaxpr::without_consts(bj),
        cond_nconsts: cn,
        body_nconsts: nh + bn + nbt,
    });
    let mut args = x[..cn].to_vec();
    args.extend(hoisted);
    args.extend(x[cn..cn + bn].iter().cloned());
    args.extend(instantiated(&x[cn..cn + bn], &t[cn..cn + bn], &nz[..bn])?);
    args.extend(x[cn + bn..].iter().cloned());
    args.extend(instantiated(&x[cn + bn..], &t[cn + bn..], &nz[bn..])?);
    let outs = bind(&new_while, &args)?;
    Ok(split_outs(outs, nk, &nz[bn..]))
}

/// The transpose rule: not transposable (the trip count is only known at
/// run time).
pub(super) fn transpose() -> Result<Cts> {
    Err(Error::Unsupported(WHILE_REVERSE_ERROR.into()))
}

/// The batching rule.
pub(super) fn batch(
    wp: &WhileParams,
    x: &[Array],
    d: &[Option<usize>],
    (n, name): (usize, Option<&str>),
) -> Result<BatchOuts> {
    let WhileParams {
        cond_jaxpr,
        body_jaxpr,
        cond_nconsts: cn,
        body_nconsts: bn,
    } = wp;
    let (cn, bn) = (*cn, *bn);
    let cc_b = mask(&d[..cn]);
    let bc_b = mask(&d[cn..cn + bn]);
    let mut carry_b = mask(&d[cn + bn..]);
    // Which carries are batched: the fixpoint of the body's dependence.
    loop {
        let ins: Vec<bool> = bc_b.iter().chain(&carry_b).copied().collect();
        let (_, ob) = batch_jaxpr_named(body_jaxpr, &ins, n, name, &[])?;
        let next: Vec<bool> = carry_b.iter().zip(&ob).map(|(a, b)| *a || *b).collect();
        if next == carry_b {
            break;
        }
        carry_b = next;
    }
    let cins: Vec<bool> = cc_b.iter().chain(&carry_b).copied().collect();
    let (_, pred_b) = batch_jaxpr_named(cond_jaxpr, &cins, n, name, &[])?;
    let cconsts = fronted(&x[..cn], &d[..cn], n)?;
    let bconsts = fronted(&x[cn..cn + bn], &d[cn..cn + bn], n)?;
    if !pred_b[0] {
        let (cj, _) = batch_jaxpr_named(cond_jaxpr, &cins, n, name, &[])?;
        let bins: Vec<bool> = bc_b.iter().chain(&carry_b).copied().collect();
        let (bj, _) = batch_jaxpr_named(body_jaxpr, &bins, n, name, &carry_b)?;
        let carries = x[cn + bn..]
            .iter()
            .zip(&d[cn + bn..])
            .zip(&carry_b)
            .map(|((a, b), cb)| {
                if *cb {
                    to_front(a, *b, n)
                } else {
                    Ok(a.clone())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let mut args = cconsts;
        args.extend(bconsts);
        args.extend(carries);
        let q = Primitive::from(WhileParams {
            cond_jaxpr: cj,
            body_jaxpr: bj,
            cond_nconsts: cn,
            body_nconsts: bn,
        });
        return Ok((bind(&q, &args)?, dims_of(&carry_b)));
    }
    // A batched predicate: every carry is batched; the loop runs while any
    // member continues, and a finished member keeps its carry.
    let nk = carry_b.len();
    let all = vec![true; nk];
    let cins: Vec<bool> = cc_b.iter().chain(&all).copied().collect();
    let (cj, _) = batch_jaxpr_named(cond_jaxpr, &cins, n, name, &[true])?;
    let bins: Vec<bool> = bc_b.iter().chain(&all).copied().collect();
    let (bj, _) = batch_jaxpr_named(body_jaxpr, &bins, n, name, &all)?;
    let carries = x[cn + bn..]
        .iter()
        .zip(&d[cn + bn..])
        .map(|(a, b)| to_front(a, *b, n))
        .collect::<Result<Vec<_>>>()?;
    let c_avals = leaf_avals(&cconsts);
    let k_avals = leaf_avals(&carries);
    let any_cond = {
        let avals: Vec<_> = c_avals.iter().chain(&k_avals).cloned().collect();
        close(trace_flat(StageMode::Base, &avals, |a| {
            let p = eval_closed_jaxpr(&cj, &a)?;
            Ok(vec![lax::reduce(ReduceOp::Or, &p[0], &[0])?])
        })?)?
    };
    let b_avals = leaf_avals(&bconsts);
    let masked_body = {
        let avals: Vec<_> = c_avals
            .iter()
            .chain(&b_avals)
            .chain(&k_avals)
            .cloned()
            .collect();
        close(trace_flat(StageMode::Base, &avals, |a| {
            let (cc, rest) = a.split_at(cn);
            let (bc, ks) = rest.split_at(bn);
            let c_args: Vec<Array> = cc.iter().chain(ks).cloned().collect();
            let p = eval_closed_jaxpr(&cj, &c_args)?;
            let b_args: Vec<Array> = bc.iter().chain(ks).cloned().collect();
            let new = eval_closed_jaxpr(&bj, &b_args)?;
            ks.iter()
                .zip(new)
                .map(|(old, new)| {
                    let shape = old.try_shape()?;
                    let keep = lax::broadcast_in_dim(&p[0], &shape, &[0])?;
                    lax::select_n(&keep, &[old.clone(), new])
                })
                .collect()
        })?)?
    };
    let mut args = cconsts.clone();
    args.extend(cconsts);
    args.extend(bconsts);
    args.extend(carries);
    let q = Primitive::from(WhileParams {
        cond_jaxpr: any_cond,
        body_jaxpr: masked_body,
        cond_nconsts: cn,
        body_nconsts: cn + bn,
    });
    Ok((bind(&q, &args)?, vec![Some(0); nk]))
}
