//! Transpose rules of the control-flow and call primitives: `jit` (a
//! `jit` of the callee's transpose), `while` (an error, as in JAX) and
//! `scan` (a scan in the opposite direction).

use super::{backward_pass, transpose_jaxpr, LinArg};
use jaxon_ir::primitive::BinaryOp;
use jaxon_ir::primitive::{Control, JitParams, ScanParams};
use jaxon_ir::{Aval, ClosedJaxpr, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, lax, numpy as jnp, Array};
use std::sync::Arc;

type Cts = Vec<Option<Array>>;

/// JAX's message for reverse mode through a `while` loop.
pub(crate) const WHILE_REVERSE_ERROR: &str = "Reverse-mode differentiation does not work for \
     lax.while_loop or lax.fori_loop with dynamic start/stop values. Try using lax.scan, or \
     using fori_loop with static start/stop.";

fn zeros(t: &ShapedArray) -> Result<Array> {
    let shape = t
        .static_sizes()
        .ok_or_else(|| Error::Unsupported("zeros of a dynamically shaped value".into()))?;
    jnp::zeros(&shape, t.dtype)
}

fn values(args: &[LinArg]) -> Vec<Array> {
    args.iter()
        .filter_map(|a| match a {
            LinArg::Value(v) => Some(v.clone()),
            LinArg::Linear(_) | LinArg::LinearDyn(..) => None,
        })
        .collect()
}

/// `jit`: the callee's transpose, called as a `jit` again.
pub(crate) fn jit(
    name: &str,
    jaxpr: &ClosedJaxpr,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
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
        &Primitive::Control(Control::Jit(JitParams {
            name: name.to_string(),
            jaxpr: tj,
        })),
        &operands,
    )?;
    let mut it = outs.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next() } else { None })
        .collect())
}

/// `while`: not transposable (its trip count is only known at run time).
pub(crate) fn while_loop() -> Result<Cts> {
    Err(Error::Unsupported(WHILE_REVERSE_ERROR.into()))
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
pub(crate) fn scan(p: &Primitive, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let Primitive::Control(Control::Scan(ScanParams {
        jaxpr,
        length,
        reverse,
        num_consts: nc,
        num_carry: nk,
        unroll,
        linear: _,
        split_transpose,
    })) = p
    else {
        unreachable!("called on scan")
    };
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
    let transposed = Primitive::Control(Control::Scan(ScanParams {
        jaxpr: ClosedJaxpr::without_consts(tj),
        length,
        reverse: !*reverse,
        num_consts: nh + nrc,
        num_carry: nlc + nk,
        unroll: *unroll,
        linear: lin_flags,
        split_transpose: *split_transpose,
    }));
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
