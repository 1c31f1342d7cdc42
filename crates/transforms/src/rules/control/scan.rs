//! Rules of `scan`: jvp, transpose and batching, side by side.
//!
//! - jvp: as JAX, a fixpoint over which carries have non-zero tangents,
//!   then either one scan over primals and tangents, or (split, under
//!   linearize) a known scan emitting per-iteration residuals as extra
//!   stacked outputs (loop invariants and `xs` are passed directly, and
//!   residuals computed from the consts alone are hoisted out of the
//!   loop) and a linear scan consuming them as `xs`.
//! - transpose: the body's transpose, scanned in the opposite direction.
//!   The carry holds the cotangents of the linear consts (accumulated) and
//!   of the carries; the cotangents of the outputs `ys` and the non-linear
//!   `xs` (residuals) are scanned over; the linear `xs`' cotangents are the
//!   stacked outputs.
//! - batch: the body batched to a fixpoint of batched carries; a batched
//!   `xs` carries its batch dim at 1.
//!
//! Invariant: JAX 0.10.2 leaves `linear` all false on the scans its jvp,
//! partial evaluation and transpose build (its printed jaxprs show no
//! `linear`), so do we.

use super::{
    carry_fixpoint, dims_of, fronted, instantiated, mask, needs_split, open_consts, spread,
};
use crate::batch::{batch_jaxpr_named, move_bdim, to_front};
use crate::jvp::jvp_jaxpr;
use crate::partial_eval::{dce_jaxpr, linearize_jaxpr, partial_eval_jaxpr};
use crate::rules::{BatchOuts, Cts, JvpOuts};
use crate::transpose::{backward_pass, LinArg};
use jaxon_ir::primitive::{BinaryOp, ScanParams};
use jaxon_ir::{Atom, Aval, ClosedJaxpr, Jaxpr, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::{eval_closed_jaxpr, literal_array};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, lax, numpy as jnp, Array};
use std::sync::Arc;

// ---------------------------------------------------------------- jvp --

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
        ScanParams {
            jaxpr: ClosedJaxpr::without_consts(jaxpr),
            length: self.length,
            reverse: self.reverse,
            num_consts,
            num_carry,
            unroll: self.unroll,
            linear: vec![false; n],
            split_transpose: self.split_transpose,
        }
        .into()
    }
}

/// `scan`: as JAX, a fixpoint over which carries have non-zero tangents,
/// then either one scan over primals and tangents, or (split) a known
/// scan emitting residuals and a linear scan consuming them.
pub(super) fn jvp(scan: &ScanParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let ScanParams {
        jaxpr,
        length,
        reverse,
        num_consts,
        num_carry,
        unroll,
        linear: _,
        split_transpose,
    } = scan;
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
) -> Result<JvpOuts> {
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
) -> Result<JvpOuts> {
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

// ---------------------------------------------------------- transpose --

fn zeros(t: &ShapedArray) -> Result<Array> {
    let shape = t
        .static_sizes()
        .ok_or_else(|| Error::Unsupported("zeros of a dynamically shaped value".into()))?;
    jnp::zeros(&shape, t.dtype)
}

fn stacked(t: &ShapedArray, length: usize) -> ShapedArray {
    let mut t = t.clone();
    t.shape.insert(0, jaxon_ir::Dim::Const(length));
    t
}

/// `scan`: the body's transpose, scanned in the opposite direction. The
/// carry holds the cotangents of the linear consts (accumulated) and of
/// the carries; the cotangents of the outputs `ys` and the non-linear
/// `xs` (residuals) are scanned over; the linear `xs`' cotangents are the
/// stacked outputs.
pub(super) fn transpose(scan: &ScanParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let ScanParams {
        jaxpr,
        length,
        reverse,
        num_consts: nc,
        num_carry: nk,
        unroll,
        linear: _,
        split_transpose,
    } = scan;
    let (nc, nk, length) = (*nc, *nk, *length);
    let n = args.len();
    // A carry given as a value (an instantiated zero tangent) is still a
    // carry the body is linear in: transpose it as linear and drop its
    // cotangent. A non-float carry (a counter) cannot be.
    if let Some(a) = args[nc..nc + nk]
        .iter()
        .find(|a| !a.is_linear() && !a.ty().dtype.is_float())
    {
        return Err(Error::Unsupported(format!(
            "transpose of `scan`: the carry of type {} is not linear (only scans whose \
             carries are all linear can be transposed)",
            jaxon_ir::shape::fmt_aval(&Aval::Array(a.ty().clone()))
        )));
    }
    let carry_given: Vec<bool> = args[nc..nc + nk].iter().map(|a| !a.is_linear()).collect();
    let body = &jaxpr.jaxpr;
    let body_avals: Vec<Aval> = body.invars.iter().map(|v| body.aval(*v).clone()).collect();
    let y_avals: Vec<Aval> = body.outvars[nk..]
        .iter()
        .map(|a| {
            body.atom_aval(a)
                .ok_or_else(|| Error::InvalidArgument("scan: unbound outvar".into()))
        })
        .collect::<Result<_>>()?;
    let ny = y_avals.len();
    let linear: Vec<bool> = args
        .iter()
        .enumerate()
        .map(|(i, a)| a.is_linear() || (nc..nc + nk).contains(&i))
        .collect();
    let const_lin = &linear[..nc];
    let xs_lin = &linear[nc + nk..];
    let pick = |range: std::ops::Range<usize>, lin: bool| -> Vec<Aval> {
        range
            .filter(|i| linear[*i] == lin)
            .map(|i| body_avals[i].clone())
            .collect()
    };
    let res_c_avals = pick(0..nc, false);
    let lin_c_avals = pick(0..nc, true);
    let carry_avals = body_avals[nc..nc + nk].to_vec();
    let res_x_avals = pick(nc + nk..n, false);
    let (nrc, nlc) = (res_c_avals.len(), lin_c_avals.len());
    let mut t_avals = res_c_avals;
    t_avals.extend(lin_c_avals.iter().cloned());
    t_avals.extend(carry_avals.iter().cloned());
    t_avals.extend(y_avals.iter().cloned());
    t_avals.extend(res_x_avals);
    let staged = trace_flat(StageMode::Base, &t_avals, |targs| {
        let (res_c, rest) = targs.split_at(nrc);
        let (acc, rest) = rest.split_at(nlc);
        let (ct_carry, rest) = rest.split_at(nk);
        let (ct_y, res_x) = rest.split_at(ny);
        let consts: Vec<Array> = jaxpr.consts.iter().cloned().map(Array::from_host).collect();
        let mut vals = res_c.to_vec();
        vals.extend(res_x.iter().cloned());
        let cts_out: Vec<Option<Array>> = ct_carry.iter().chain(ct_y).cloned().map(Some).collect();
        let mut mask = const_lin.to_vec();
        mask.extend(std::iter::repeat_n(true, nk));
        mask.extend(xs_lin);
        let cts_in = backward_pass(body, &consts, &mask, &vals, &cts_out)?;
        let lin_avals = (0..n).filter(|i| linear[*i]).map(|i| &body_avals[i]);
        let cts_in = cts_in
            .into_iter()
            .zip(lin_avals)
            .map(|(c, a)| c.map_or_else(|| zeros(a.array()), Ok))
            .collect::<Result<Vec<_>>>()?;
        let (ct_c, rest) = cts_in.split_at(nlc);
        let mut outs = acc
            .iter()
            .zip(ct_c)
            .map(|(a, c)| lax::binary(BinaryOp::AddAny, a, c))
            .collect::<Result<Vec<_>>>()?;
        outs.extend(rest.iter().cloned());
        Ok(outs)
    })?;
    let closed = close(staged)?;
    let mut tj = Arc::unwrap_or_clone(closed.jaxpr);
    let hoisted: Vec<Array> = closed
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    let nh = hoisted.len();
    let mut invars = std::mem::take(&mut tj.constvars);
    invars.append(&mut tj.invars);
    tj.invars = invars;

    let mut operands = hoisted;
    for a in &args[..nc] {
        if let LinArg::Value(v) = a {
            operands.push(v.clone());
        }
    }
    for a in &lin_c_avals {
        operands.push(zeros(a.array())?);
    }
    for (c, a) in cts[..nk].iter().zip(&carry_avals) {
        operands.push(match c {
            Some(c) => c.clone(),
            None => zeros(a.array())?,
        });
    }
    for (c, a) in cts[nk..].iter().zip(&y_avals) {
        operands.push(match c {
            Some(c) => c.clone(),
            None => zeros(&stacked(a.array(), length))?,
        });
    }
    for a in &args[nc + nk..] {
        if let LinArg::Value(v) = a {
            operands.push(v.clone());
        }
    }
    let nlx = xs_lin.iter().filter(|l| **l).count();
    // All false, as JAX 0.10.2 prints its transposed scans.
    let lin_flags = vec![false; operands.len()];
    let transposed = Primitive::from(ScanParams {
        jaxpr: ClosedJaxpr::without_consts(tj),
        length,
        reverse: !*reverse,
        num_consts: nh + nrc,
        num_carry: nlc + nk,
        unroll: *unroll,
        linear: lin_flags,
        split_transpose: *split_transpose,
    });
    let outs = bind(&transposed, &operands)?;
    debug_assert_eq!(outs.len(), nlc + nk + nlx);
    let mut it = outs.into_iter();
    let ct_consts: Vec<Array> = it.by_ref().take(nlc).collect();
    let ct_init: Vec<Array> = it.by_ref().take(nk).collect();
    let mut result: Cts = Vec::with_capacity(n);
    let mut cc = ct_consts.into_iter();
    for l in const_lin {
        result.push(if *l { cc.next() } else { None });
    }
    result.extend(
        ct_init
            .into_iter()
            .zip(carry_given)
            .map(|(c, given)| (!given).then_some(c)),
    );
    for l in xs_lin {
        result.push(if *l { it.next() } else { None });
    }
    Ok(result)
}

// -------------------------------------------------------------- batch --

/// The batching rule.
pub(super) fn batch(
    scan: &ScanParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    let ScanParams {
        jaxpr,
        length,
        reverse,
        num_consts,
        num_carry,
        unroll,
        linear,
        split_transpose,
    } = scan;
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
    let q = Primitive::from(ScanParams {
        jaxpr: bj,
        length: *length,
        reverse: *reverse,
        num_consts: nc,
        num_carry: nk,
        unroll: *unroll,
        linear: linear.clone(),
        split_transpose: *split_transpose,
    });
    let outs = bind(&q, &args)?;
    let mut dims = dims_of(&carry_b);
    dims.extend(ob[nk..].iter().map(|b| b.then_some(1)));
    Ok((outs, dims))
}
