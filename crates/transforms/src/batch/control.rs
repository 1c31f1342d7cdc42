//! Batching of the higher-order primitives: calls (`jit`, custom_jvp/vjp
//! calls, `remat2`) batch their body with `batch_jaxpr`; `cond` with a
//! batched predicate becomes a `select_n` over every branch; `while` with
//! a batched predicate runs while any member continues and keeps the
//! finished members' carries; `scan` batches its body to a fixpoint of
//! batched carries.

use super::rules::Outs;
use super::{batch_jaxpr_named, move_bdim, to_front};
use crate::util::scalar_like;
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::primitive::{
    CondParams, Control, CustomJvpCallParams, CustomVjpCallParams, ForLoopParams, JitParams,
    RematParams, ScanParams, WhileParams,
};
use jaxon_ir::{ClosedJaxpr, DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{close, leaf_avals, trace_flat, StageMode};
use jaxon_trace::{bind, lax, Array};
use std::sync::Arc;

fn mask(d: &[Option<usize>]) -> Vec<bool> {
    d.iter().map(Option::is_some).collect()
}

/// Batched operands moved to the front; unbatched ones unchanged.
fn fronted(x: &[Array], d: &[Option<usize>], n: usize) -> Result<Vec<Array>> {
    x.iter()
        .zip(d)
        .map(|(a, b)| match b {
            Some(_) => to_front(a, *b, n),
            None => Ok(a.clone()),
        })
        .collect()
}

fn dims_of(batched: &[bool]) -> Vec<Option<usize>> {
    batched.iter().map(|b| b.then_some(0)).collect()
}

/// `jit`, `custom_jvp_call`, `custom_vjp_call` and `remat2`: the same
/// primitive around the batched body.
pub(super) fn call(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<Outs> {
    let args = fronted(x, d, n)?;
    let m = mask(d);
    let (q, args, out_b) = match p {
        Primitive::Control(Control::Jit(JitParams { name, jaxpr })) => {
            let (bj, ob) = batch_jaxpr_named(jaxpr, &m, n, axis, &[])?;
            let q = Primitive::Control(Control::Jit(JitParams {
                name: name.clone(),
                jaxpr: bj,
            }));
            (q, args, ob)
        }
        Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
            name,
            call_jaxpr,
            jvp,
            num_consts,
            symbolic_zeros,
        })) => {
            let (bj, ob) = batch_jaxpr_named(call_jaxpr, &m, n, axis, &[])?;
            let q = Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
                name: name.clone(),
                call_jaxpr: bj,
                jvp: jvp.clone(),
                num_consts: *num_consts,
                symbolic_zeros: *symbolic_zeros,
            }));
            (q, args, ob)
        }
        Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
            name,
            call_jaxpr,
            fwd,
            bwd,
            num_consts,
            symbolic_zeros,
        })) => {
            let (bj, ob) = batch_jaxpr_named(call_jaxpr, &m, n, axis, &[])?;
            let q = Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
                name: name.clone(),
                call_jaxpr: bj,
                fwd: fwd.clone(),
                bwd: bwd.clone(),
                num_consts: *num_consts,
                symbolic_zeros: *symbolic_zeros,
            }));
            (q, args, ob)
        }
        Primitive::Control(Control::Remat(RematParams {
            jaxpr,
            prevent_cse,
            differentiated,
            policy,
        })) => {
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
            let q = Primitive::Control(Control::Remat(RematParams {
                jaxpr: Arc::new(body),
                prevent_cse: *prevent_cse,
                differentiated: *differentiated,
                policy: policy.clone(),
            }));
            (q, all, ob)
        }
        _ => {
            return Err(Error::InvalidArgument(format!(
                "the call batching rule got `{}`",
                p.name()
            )))
        }
    };
    let outs = bind(&q, &args)?;
    Ok((outs, dims_of(&out_b)))
}

pub(super) fn cond(
    branches: &[ClosedJaxpr],
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<Outs> {
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
            &Primitive::Control(Control::Cond(CondParams { branches: new })),
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

#[allow(clippy::too_many_arguments)]
pub(super) fn while_loop(
    cond_jaxpr: &ClosedJaxpr,
    body_jaxpr: &ClosedJaxpr,
    cn: usize,
    bn: usize,
    x: &[Array],
    d: &[Option<usize>],
    (n, name): (usize, Option<&str>),
) -> Result<Outs> {
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
        let q = Primitive::Control(Control::While(WhileParams {
            cond_jaxpr: cj,
            body_jaxpr: bj,
            cond_nconsts: cn,
            body_nconsts: bn,
        }));
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
    let q = Primitive::Control(Control::While(WhileParams {
        cond_jaxpr: any_cond,
        body_jaxpr: masked_body,
        cond_nconsts: cn,
        body_nconsts: cn + bn,
    }));
    Ok((bind(&q, &args)?, vec![Some(0); nk]))
}

pub(super) fn scan(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<Outs> {
    let Primitive::Control(Control::Scan(ScanParams {
        jaxpr,
        length,
        reverse,
        num_consts,
        num_carry,
        unroll,
        linear,
        split_transpose,
    })) = p
    else {
        return Err(Error::InvalidArgument(
            "scan rule on another primitive".into(),
        ));
    };
    let (nc, nk) = (*num_consts, *num_carry);
    let const_b = mask(&d[..nc]);
    let mut carry_b = mask(&d[nc..nc + nk]);
    let xs_b = mask(&d[nc + nk..]);
    let ins = |carry_b: &[bool]| -> Vec<bool> {
        const_b
            .iter()
            .chain(carry_b)
            .chain(&xs_b)
            .copied()
            .collect()
    };
    loop {
        let (_, ob) = batch_jaxpr_named(jaxpr, &ins(&carry_b), n, name, &[])?;
        let next: Vec<bool> = carry_b.iter().zip(&ob).map(|(a, b)| *a || *b).collect();
        if next == carry_b {
            break;
        }
        carry_b = next;
    }
    let (bj, ob) = batch_jaxpr_named(jaxpr, &ins(&carry_b), n, name, &carry_b)?;
    let mut args = fronted(&x[..nc], &d[..nc], n)?;
    for ((a, b), cb) in x[nc..nc + nk].iter().zip(&d[nc..nc + nk]).zip(&carry_b) {
        args.push(if *cb { to_front(a, *b, n)? } else { a.clone() });
    }
    // The body sees one slice of each xs along axis 0, so a batched xs
    // carries its batch dim at 1 (0 within the slice).
    for (a, b) in x[nc + nk..].iter().zip(&d[nc + nk..]) {
        args.push(match b {
            Some(_) => move_bdim(a, *b, 1, n)?,
            None => a.clone(),
        });
    }
    let q = Primitive::Control(Control::Scan(ScanParams {
        jaxpr: bj,
        length: *length,
        reverse: *reverse,
        num_consts: nc,
        num_carry: nk,
        unroll: *unroll,
        linear: linear.clone(),
        split_transpose: *split_transpose,
    }));
    let outs = bind(&q, &args)?;
    let mut dims = dims_of(&carry_b);
    dims.extend(ob[nk..].iter().map(|b| b.then_some(1)));
    Ok((outs, dims))
}

/// Catalyst's `for_loop` (operands `*consts *implicit lo hi step i0
/// *carry`, body `*consts *implicit i *carry -> *implicit *carry`): the
/// body is batched to a fixpoint of batched carries, like `scan`. Batched
/// bounds or implicit (dimension) operands are not supported.
pub(super) fn for_loop(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<Outs> {
    let Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr,
        body_nconsts,
        nimplicit,
        preserve_dimensions,
        apply_reverse_transform,
    })) = p
    else {
        return Err(Error::InvalidArgument(
            "for_loop rule on another primitive".into(),
        ));
    };
    let nc = *body_nconsts;
    let head = nc + nimplicit;
    if d[nc..head + 4].iter().any(Option::is_some) {
        return Err(Error::Unsupported(
            "vmap of `for_loop` with batched bounds, step or dimension operands is not supported"
                .into(),
        ));
    }
    let const_b = mask(&d[..nc]);
    let mut carry_b = mask(&d[head + 4..]);
    let ins = |carry_b: &[bool]| -> Vec<bool> {
        let mut v = const_b.clone();
        v.extend(std::iter::repeat_n(false, nimplicit + 1));
        v.extend_from_slice(carry_b);
        v
    };
    let inst = |carry_b: &[bool]| -> Vec<bool> {
        let mut v = vec![false; *nimplicit];
        v.extend_from_slice(carry_b);
        v
    };
    loop {
        let (_, ob) = batch_jaxpr_named(body_jaxpr, &ins(&carry_b), n, name, &[])?;
        if ob[..*nimplicit].iter().any(|b| *b) {
            return Err(Error::Unsupported(
                "vmap of `for_loop` whose dimension results depend on the batch".into(),
            ));
        }
        let next: Vec<bool> = carry_b
            .iter()
            .zip(&ob[*nimplicit..])
            .map(|(a, b)| *a || *b)
            .collect();
        if next == carry_b {
            break;
        }
        carry_b = next;
    }
    let (bj, _) = batch_jaxpr_named(body_jaxpr, &ins(&carry_b), n, name, &inst(&carry_b))?;
    let mut args = fronted(&x[..nc], &d[..nc], n)?;
    args.extend(x[nc..head + 4].iter().cloned());
    for ((a, b), cb) in x[head + 4..].iter().zip(&d[head + 4..]).zip(&carry_b) {
        args.push(if *cb { to_front(a, *b, n)? } else { a.clone() });
    }
    let q = Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr: bj,
        body_nconsts: nc,
        nimplicit: *nimplicit,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: *apply_reverse_transform,
    }));
    let outs = bind(&q, &args)?;
    let mut dims = vec![None; *nimplicit];
    dims.extend(dims_of(&carry_b));
    Ok((outs, dims))
}
