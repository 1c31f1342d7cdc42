//! Jvp rules of the control-flow and call primitives: `jit`, `cond`,
//! `while` and `scan`.
//!
//! Design: the primal results of a rule must come from binds on primal
//! operands only (see the crate docs: under `linearize` the tangents are
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
//! - `jit`: known call and linear call (residuals that are inputs are
//!   forwarded rather than returned).
//! - `cond`: known cond returning every branch's residuals (zeros in the
//!   other branches' slots, where JAX uses `empty2`), linear cond; with
//!   dynamic shapes the linear cond recomputes the branch (`cond_dyn.rs`).
//! - `scan`: a fixpoint over which carries have tangents; known scan
//!   emitting per-iteration residuals as extra stacked outputs (loop
//!   invariants and `xs` are passed directly), and a linear scan consuming
//!   them as `xs`. Its transpose is a reversed scan (`transpose/control.rs`).
//! - `while`: under linearize, a counting loop gives the trip count and
//!   the loop is differentiated as the equivalent `for_loop`
//!   (`while_grad.rs`); JAX refuses this case.

use super::jvp_jaxpr;
use crate::partial_eval::{dce_jaxpr, linearize_jaxpr, partial_eval_jaxpr};
use crate::util::zeros_like;
use jaxon_ir::primitive::{CondParams, Control, JitParams, ScanParams, WhileParams};
use jaxon_ir::{Atom, Aval, ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::{eval_closed_jaxpr, literal_array};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, numpy as jnp, Array};
use std::sync::Arc;

type Outs = (Vec<Array>, Vec<Option<Array>>);

/// Whether the tangents live on a trace above every primal's, so primal
/// and tangent work must be bound separately.
pub(super) fn needs_split(x: &[Array], t: &[Option<Array>]) -> Result<bool> {
    let ts: Vec<Array> = t.iter().flatten().cloned().collect();
    if ts.is_empty() {
        return Ok(false);
    }
    let tp = find_top_trace(x)?;
    let tt = find_top_trace(&ts)?;
    Ok(tt.level() > tp.level())
}

/// Splits the outputs of a combined primitive into primals and tangents.
pub(super) fn split_outs(outs: Vec<Array>, n: usize, out_nz: &[bool]) -> Outs {
    let mut it = outs.into_iter();
    let primals: Vec<Array> = it.by_ref().take(n).collect();
    (primals, spread(it, out_nz))
}

/// Places the tangents of the outputs marked in `nz`, in order.
fn spread(tangents: impl IntoIterator<Item = Array>, nz: &[bool]) -> Vec<Option<Array>> {
    let mut it = tangents.into_iter();
    nz.iter()
        .map(|m| if *m { it.next() } else { None })
        .collect()
}

/// `jit`: the callee's jvp, as a `jit` equation again.
pub(super) fn jit(
    name: &str,
    jaxpr: &ClosedJaxpr,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<Outs> {
    if crate::util::jaxpr_is_dynamic(&jaxpr.jaxpr) {
        // A callee with dynamic shapes cannot be re-staged from its avals:
        // its equations are differentiated in place (the operands carry
        // their dimension values).
        return super::jvp_flat(
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
            &Primitive::Control(Control::Jit(JitParams {
                name: name.to_string(),
                jaxpr: ClosedJaxpr {
                    jaxpr: Arc::new(kj),
                    consts: lj.known.consts,
                },
            })),
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
                &Primitive::Control(Control::Jit(JitParams {
                    name: jvp_name,
                    jaxpr: lj.linear,
                })),
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
        &Primitive::Control(Control::Jit(JitParams {
            name: jvp_name,
            jaxpr: jj,
        })),
        &args,
    )?;
    Ok(split_outs(outs, n, &out_nz))
}

/// `cond`: the jvp of every branch, with the union of their non-zero
/// output tangents instantiated so the branches agree.
pub(super) fn cond(branches: &[ClosedJaxpr], x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
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
        &Primitive::Control(Control::Cond(CondParams {
            branches: new_branches,
        })),
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
) -> Result<Outs> {
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
        &Primitive::Control(Control::Cond(CondParams {
            branches: known_branches,
        })),
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
        &Primitive::Control(Control::Cond(CondParams {
            branches: lin_branches,
        })),
        &largs,
    )?;
    Ok((known, spread(touts, union)))
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

/// `while`: carries' tangents by a fixpoint over which carries are
/// non-zero; the predicate ignores the tangent carries.
pub(super) fn while_loop(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Control(Control::While(WhileParams {
        cond_jaxpr,
        body_jaxpr,
        cond_nconsts: cn,
        body_nconsts: bn,
    })) = p
    else {
        unreachable!("called on while")
    };
    if needs_split(x, t)? {
        return super::while_grad::split_while(p, x, t);
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
    let new_while = Primitive::Control(Control::While(WhileParams {
        cond_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(cj),
            consts: cond_jaxpr.consts.clone(),
        },
        body_jaxpr: ClosedJaxpr::without_consts(bj),
        cond_nconsts: cn,
        body_nconsts: nh + bn + nbt,
    }));
    let mut args = x[..cn].to_vec();
    args.extend(hoisted);
    args.extend(x[cn..cn + bn].iter().cloned());
    args.extend(instantiated(&x[cn..cn + bn], &t[cn..cn + bn], &nz[..bn])?);
    args.extend(x[cn + bn..].iter().cloned());
    args.extend(instantiated(&x[cn + bn..], &t[cn + bn..], &nz[bn..])?);
    let outs = bind(&new_while, &args)?;
    Ok(split_outs(outs, nk, &nz[bn..]))
}

/// The pieces of a `scan` equation.
struct ScanPieces<'a> {
    jaxpr: &'a ClosedJaxpr,
    length: usize,
    reverse: bool,
    nc: usize,
    nk: usize,
    unroll: i64,
    split_transpose: bool,
}

impl ScanPieces<'_> {
    /// A scan with this equation's static parameters. JAX 0.10.2 leaves
    /// `linear` all false on the scans its jvp, partial evaluation and
    /// transpose build (its printed jaxprs show no `linear`), so do we.
    fn primitive(&self, jaxpr: Jaxpr, num_consts: usize, num_carry: usize, n: usize) -> Primitive {
        Primitive::Control(Control::Scan(ScanParams {
            jaxpr: ClosedJaxpr::without_consts(jaxpr),
            length: self.length,
            reverse: self.reverse,
            num_consts,
            num_carry,
            unroll: self.unroll,
            linear: vec![false; n],
            split_transpose: self.split_transpose,
        }))
    }
}

/// `scan`: as JAX, a fixpoint over which carries have non-zero tangents,
/// then either one scan over primals and tangents, or (split) a known
/// scan emitting residuals and a linear scan consuming them.
pub(super) fn scan(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Control(Control::Scan(ScanParams {
        jaxpr,
        length,
        reverse,
        num_consts,
        num_carry,
        unroll,
        linear: _,
        split_transpose,
    })) = p
    else {
        unreachable!("called on scan")
    };
    let sp = ScanPieces {
        jaxpr,
        length: *length,
        reverse: *reverse,
        nc: *num_consts,
        nk: *num_carry,
        unroll: *unroll,
        split_transpose: *split_transpose,
    };
    let (nc, nk) = (sp.nc, sp.nk);
    let mut nz: Vec<bool> = t.iter().map(Option::is_some).collect();
    carry_fixpoint(jaxpr, &mut nz, nc, nk)?;
    let n_out = jaxpr.jaxpr.outvars.len();
    let mut inst = nz[nc..nc + nk].to_vec();
    inst.resize(n_out, false);
    let tc = instantiated(&x[..nc], &t[..nc], &nz[..nc])?;
    let tk = instantiated(&x[nc..nc + nk], &t[nc..nc + nk], &nz[nc..nc + nk])?;
    let tx = instantiated(&x[nc + nk..], &t[nc + nk..], &nz[nc + nk..])?;
    if needs_split(x, t)? {
        scan_split(&sp, x, &nz, &inst, [tc, tk, tx])
    } else {
        scan_combined(&sp, x, &nz, &inst, [tc, tk, tx])
    }
}

fn scan_combined(
    sp: &ScanPieces,
    x: &[Array],
    nz: &[bool],
    inst: &[bool],
    [tc, tk, tx]: [Vec<Array>; 3],
) -> Result<Outs> {
    let (nc, nk) = (sp.nc, sp.nk);
    let n = x.len();
    let (jj, out_nz) = jvp_jaxpr(sp.jaxpr, nz, inst)?;
    if out_nz[..nk] != nz[nc..nc + nk] {
        return Err(Error::InvalidArgument(
            "scan jvp: the body's tangent carries do not match its inputs".into(),
        ));
    }
    let (mut jj, hoisted) = open_consts(jj);
    let nh = hoisted.len();
    let (nct, nkt, nxt) = (tc.len(), tk.len(), tx.len());
    // Invars [hoisted, consts, carry, xs, consts_t, carry_t, xs_t] ->
    // [hoisted, consts, consts_t, carry, carry_t, xs, xs_t].
    let inv = jj.invars.clone();
    let (prim, tan) = inv[nh..].split_at(n);
    jj.invars = inv[..nh]
        .iter()
        .chain(&prim[..nc])
        .chain(&tan[..nct])
        .chain(&prim[nc..nc + nk])
        .chain(&tan[nct..nct + nkt])
        .chain(&prim[nc + nk..])
        .chain(&tan[nct + nkt..])
        .copied()
        .collect();
    // Outvars [carry, ys, carry_t, ys_t] -> [carry, carry_t, ys, ys_t].
    let n_out = sp.jaxpr.jaxpr.outvars.len();
    let outv = jj.outvars.clone();
    let (po, to) = outv.split_at(n_out);
    jj.outvars = po[..nk]
        .iter()
        .chain(&to[..nkt])
        .chain(&po[nk..])
        .chain(&to[nkt..])
        .copied()
        .collect();
    let prim = sp.primitive(jj, nh + nc + nct, nk + nkt, nh + n + nct + nkt + nxt);
    let mut args = hoisted;
    args.extend(x[..nc].iter().cloned());
    args.extend(tc);
    args.extend(x[nc..nc + nk].iter().cloned());
    args.extend(tk);
    args.extend(x[nc + nk..].iter().cloned());
    args.extend(tx);
    let outs = bind(&prim, &args)?;
    let mut it = outs.into_iter();
    let carry: Vec<Array> = it.by_ref().take(nk).collect();
    let carry_t: Vec<Array> = it.by_ref().take(nkt).collect();
    let ys: Vec<Array> = it.by_ref().take(n_out - nk).collect();
    let mut primals = carry;
    primals.extend(ys);
    let mut tangents = spread(carry_t, &out_nz[..nk]);
    tangents.extend(spread(it, &out_nz[nk..]));
    Ok((primals, tangents))
}

/// Where the linear scan gets a residual from.
enum Residual {
    /// A loop invariant, passed as a const.
    Invariant(Array),
    /// One of the scan's `xs`, already stacked.
    Xs(usize),
    /// Computed per iteration: a stacked output of the known scan.
    Stacked,
}

/// Residuals computed from the consts alone (say a transposed weight) are
/// loop invariants too: compute them once, outside the loop, from the
/// known half of a partial evaluation of the known body with the carries
/// and `xs` unknown (JAX hoists them the same way).
fn hoist_const_residuals(
    kj: &Jaxpr,
    hoisted: &[Array],
    consts: &[Array],
    n_out: usize,
    res: &mut [Residual],
) -> Result<()> {
    let n_known = hoisted.len() + consts.len();
    let unknowns: Vec<bool> = (0..kj.invars.len()).map(|i| i >= n_known).collect();
    let closed = ClosedJaxpr::without_consts(kj.clone());
    let pe = partial_eval_jaxpr(&closed, &unknowns, &[])?;
    let invariant: Vec<bool> = pe.out_unknown[n_out..].iter().map(|u| !u).collect();
    if !invariant
        .iter()
        .zip(res.iter())
        .any(|(i, r)| *i && matches!(r, Residual::Stacked))
    {
        return Ok(());
    }
    // Compute only the invariants to hoist: the known half's outputs are
    // the known outputs in order, then its residuals.
    let n_known_out = pe.out_unknown.iter().filter(|u| !**u).count();
    let mut wanted = Vec::new();
    for (i, u) in pe.out_unknown.iter().enumerate() {
        if !*u {
            wanted.push(i >= n_out && matches!(res[i - n_out], Residual::Stacked));
        }
    }
    wanted.resize(n_known_out + pe.num_res, false);
    let (needed, used_in) = dce_jaxpr(&pe.known, &wanted)?;
    let args: Vec<Array> = hoisted
        .iter()
        .chain(consts)
        .zip(&used_in)
        .filter(|(_, u)| **u)
        .map(|(a, _)| a.clone())
        .collect();
    let mut vals = eval_closed_jaxpr(&needed, &args)?.into_iter();
    for (r, inv) in res.iter_mut().zip(invariant) {
        if inv && matches!(r, Residual::Stacked) {
            let v = vals
                .next()
                .ok_or_else(|| Error::InvalidArgument("scan: missing invariant".into()))?;
            *r = Residual::Invariant(v);
        }
    }
    Ok(())
}

fn scan_split(
    sp: &ScanPieces,
    x: &[Array],
    nz: &[bool],
    inst: &[bool],
    [tc, tk, tx]: [Vec<Array>; 3],
) -> Result<Outs> {
    let (nc, nk) = (sp.nc, sp.nk);
    let n = x.len();
    let lj = linearize_jaxpr(sp.jaxpr, nz, inst)?;
    if lj.out_nonzero[..nk] != nz[nc..nc + nk] {
        return Err(Error::InvalidArgument(
            "scan linearization: the body's tangent carries do not match its inputs".into(),
        ));
    }
    let n_out = sp.jaxpr.jaxpr.outvars.len();
    let nres = lj.num_res;
    let (mut kj, hoisted) = open_consts(lj.known);
    let nh = hoisted.len();
    // Residuals that are literals, closed consts or the scan's consts are
    // loop invariants: pass them to the linear scan as consts rather than
    // stacking `length` copies.
    let mut res: Vec<Residual> = kj.outvars[n_out..]
        .iter()
        .map(|a| match a {
            Atom::Lit(l) => Residual::Invariant(literal_array(l)),
            Atom::Var(v) => match kj.invars.iter().position(|w| w == v) {
                Some(i) if i < nh => Residual::Invariant(hoisted[i].clone()),
                Some(i) if i < nh + nc => Residual::Invariant(x[i - nh].clone()),
                Some(i) if i >= nh + nc + nk => Residual::Xs(i - nh),
                _ => Residual::Stacked,
            },
        })
        .collect();
    if res.iter().any(|r| matches!(r, Residual::Stacked)) {
        hoist_const_residuals(&kj, &hoisted, &x[..nc], n_out, &mut res)?;
    }
    let keep: Vec<bool> = (0..n_out)
        .map(|_| true)
        .chain(res.iter().map(|r| matches!(r, Residual::Stacked)))
        .collect();
    kj.outvars = kj
        .outvars
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(a, _)| *a)
        .collect();
    let known = sp.primitive(kj, nh + nc, nk, nh + n);
    let mut args = hoisted;
    args.extend(x.iter().cloned());
    let outs = bind(&known, &args)?;
    let mut it = outs.into_iter();
    let primals: Vec<Array> = it.by_ref().take(n_out).collect();
    let mut computed = it;

    if !lj.out_nonzero.iter().any(|m| *m) {
        return Ok((primals, vec![None; n_out]));
    }
    // The linear body takes [residuals, consts_t, carry_t, xs_t]; as a
    // scan it takes [invariant res, consts_t, carry_t, stacked res, xs_t].
    let mut lin = Arc::unwrap_or_clone(lj.linear.jaxpr);
    let inv = lin.invars.clone();
    let (rv, tv) = inv.split_at(nres);
    let (nct, nkt, nxt) = (tc.len(), tk.len(), tx.len());
    let mut inv_res = Vec::new();
    let mut inv_vals = Vec::new();
    let mut st_res = Vec::new();
    let mut stacked = Vec::new();
    for (v, r) in rv.iter().zip(&res) {
        match r {
            Residual::Invariant(val) => {
                inv_res.push(*v);
                inv_vals.push(val.clone());
            }
            Residual::Xs(i) => {
                st_res.push(*v);
                stacked.push(x[*i].clone());
            }
            Residual::Stacked => {
                st_res.push(*v);
                stacked.push(computed.next().ok_or_else(|| {
                    Error::InvalidArgument("scan linearization: missing residual".into())
                })?);
            }
        }
    }
    let ni = inv_res.len();
    let ns = st_res.len();
    lin.invars = inv_res
        .into_iter()
        .chain(tv[..nct].iter().copied())
        .chain(tv[nct..nct + nkt].iter().copied())
        .chain(st_res)
        .chain(tv[nct + nkt..].iter().copied())
        .collect();
    let lin_scan = sp.primitive(lin, ni + nct, nkt, ni + nct + nkt + ns + nxt);
    let mut largs = inv_vals;
    largs.extend(tc);
    largs.extend(tk);
    largs.extend(stacked);
    largs.extend(tx);
    let touts = bind(&lin_scan, &largs)?;
    Ok((primals, spread(touts, &lj.out_nonzero)))
}
