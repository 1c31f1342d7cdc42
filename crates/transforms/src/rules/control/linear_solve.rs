//! Rules of `custom_linear_solve` (`lax.custom_linear_solve`): `x` with
//! `matvec(x) = b`, computed by the user's `solve`, and differentiated
//! implicitly rather than through `solve`'s iterations, as in JAX.
//!
//! - jvp: from `A x = b`, `A ẋ = ḃ - Ȧ x`: the tangent is the same solve
//!   applied to `ḃ - ∂matvec/∂consts · ċonsts (x)` (the jvp of `matvec` in
//!   its consts at the solution, `x` held fixed).
//! - transpose: linear in `b` only; `b̄ = A^-T x̄`, the solve with `matvec`
//!   and `vecmat`, `solve` and `transpose_solve` swapped (so a transposable
//!   solve must have `transpose_solve`; `symmetric=True` supplies it).
//! - batch: `b` batched at the front (broadcast when it is not), each
//!   function batched with its consts as they are and its outputs batched.

use super::{fronted, mask};
use crate::rules::{broadcast_np, not_linear, BatchOuts, Cts, JvpOuts};
use crate::transpose::LinArg;
use crate::util::zeros_like;
use jaxon_ir::primitive::{CustomLinearSolveParams, LinearSolveTuple};
use jaxon_ir::{ClosedJaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, lax, Array};

/// The primal operands: the consts of function `k`, and `b`.
fn parts<'x>(p: &CustomLinearSolveParams, x: &'x [Array]) -> Result<(&'x [Array], &'x [Array])> {
    let nc = p.num_consts();
    if x.len() < nc {
        return Err(Error::InvalidArgument(format!(
            "custom_linear_solve: {} operands for {nc} consts",
            x.len()
        )));
    }
    Ok((&x[..nc], &x[nc..]))
}

pub(super) fn jvp(
    p: &CustomLinearSolveParams,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let prim = Primitive::from(p.clone());
    let sol = bind(&prim, x)?;
    let (consts, b) = parts(p, x)?;
    let nc = consts.len();
    let mv = p.consts_range(0);
    let mv_tangents = &t[mv.clone()];
    let b_tangents = &t[nc..];
    if mv_tangents.iter().all(Option::is_none) && b_tangents.iter().all(Option::is_none) {
        let n = sol.len();
        return Ok((sol, vec![None; n]));
    }
    // ḃ - Ȧ x: the jvp of matvec in its consts, at the solution.
    let mut rhs: Vec<Array> = b_tangents
        .iter()
        .zip(b)
        .map(|(ti, bi)| match ti {
            Some(ti) => Ok(ti.clone()),
            None => zeros_like(bi),
        })
        .collect::<Result<_>>()?;
    if mv_tangents.iter().any(Option::is_some) {
        let matvec = p.jaxprs.matvec.as_ref().ok_or_else(no("matvec"))?;
        let primals: Vec<Array> = consts[mv].iter().chain(&sol).cloned().collect();
        let tangents: Vec<Option<Array>> = mv_tangents
            .iter()
            .cloned()
            .chain(sol.iter().map(|_| None))
            .collect();
        let (_, dmv) = crate::jvp::jvp_flat(
            |args| jaxon_trace::interpret::eval_jaxpr(&matvec.jaxpr, &[], &args),
            &primals,
            &tangents,
        )?;
        for (r, d) in rhs.iter_mut().zip(dmv) {
            if let Some(d) = d {
                *r = lax::sub(r, &d)?;
            }
        }
    }
    let args: Vec<Array> = consts.iter().cloned().chain(rhs).collect();
    let dsol = bind(&prim, &args)?;
    Ok((sol, dsol.into_iter().map(Some).collect()))
}

fn no(what: &'static str) -> impl Fn() -> Error {
    move || Error::InvalidArgument(format!("custom_linear_solve has no {what} jaxpr"))
}

/// The same solve with `A` replaced by `A^T`.
fn transposed(p: &CustomLinearSolveParams) -> CustomLinearSolveParams {
    let (l, j) = (&p.const_lengths, &p.jaxprs);
    CustomLinearSolveParams {
        const_lengths: LinearSolveTuple {
            matvec: l.vecmat,
            vecmat: l.matvec,
            solve: l.transpose_solve,
            transpose_solve: l.solve,
        },
        jaxprs: LinearSolveTuple {
            matvec: j.vecmat.clone(),
            vecmat: j.matvec.clone(),
            solve: j.transpose_solve.clone(),
            transpose_solve: j.solve.clone(),
        },
    }
}

pub(super) fn transpose(
    p: &CustomLinearSolveParams,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let nc = p.num_consts();
    let mut consts = Vec::with_capacity(nc);
    for a in &args[..nc.min(args.len())] {
        match a {
            LinArg::Value(v) => consts.push(v.clone()),
            LinArg::Linear(_) | LinArg::LinearDyn(..) => {
                return not_linear(&Primitive::from(p.clone()));
            }
        }
    }
    if p.jaxprs.transpose_solve.is_none() {
        return Err(Error::Unsupported(
            "transpose of custom_linear_solve needs transpose_solve (pass transpose_solve, or \
             symmetric=true for a symmetric matvec)"
                .into(),
        ));
    }
    if cts.iter().all(Option::is_none) {
        return Ok(vec![None; args.len()]);
    }
    let cts: Vec<Array> = cts
        .iter()
        .zip(&args[nc..])
        .map(|(c, a)| match c {
            Some(c) => Ok(c.clone()),
            None => crate::rules::zeros(a.ty()),
        })
        .collect::<Result<_>>()?;
    let t = transposed(p);
    // Operands in the transposed order: vecmat, matvec, transpose_solve,
    // solve consts.
    let reordered: Vec<Array> = [1, 0, 3, 2]
        .into_iter()
        .flat_map(|k| consts[p.consts_range(k)].iter().cloned())
        .chain(cts)
        .collect();
    let ct_b = bind(&Primitive::from(t), &reordered)?;
    Ok(std::iter::repeat_n(None, nc)
        .chain(ct_b.into_iter().map(Some))
        .collect())
}

pub(super) fn batch(
    p: &CustomLinearSolveParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    let nc = p.num_consts();
    let mut args = fronted(x, d, n)?;
    // Every right-hand side batched at the front.
    for (a, bd) in args[nc..].iter_mut().zip(&d[nc..]) {
        if bd.is_none() {
            let shape = a.try_shape()?;
            let mut to = vec![n];
            to.extend(&shape);
            *a = broadcast_np(a, &to, &(1..=shape.len()).collect::<Vec<_>>())?;
        }
    }
    let consts_batched = mask(&d[..nc]);
    let nb = args.len() - nc;
    let batch_one = |k: usize, j: &Option<ClosedJaxpr>| -> Result<Option<ClosedJaxpr>> {
        let Some(j) = j else { return Ok(None) };
        let batched_in: Vec<bool> = consts_batched[p.consts_range(k)]
            .iter()
            .copied()
            .chain(std::iter::repeat_n(true, nb))
            .collect();
        let (bj, _) = crate::batch::batch_jaxpr_named(j, &batched_in, n, axis, &vec![true; nb])?;
        Ok(Some(bj))
    };
    let j = &p.jaxprs;
    let bp = CustomLinearSolveParams {
        const_lengths: p.const_lengths.clone(),
        jaxprs: LinearSolveTuple {
            matvec: batch_one(0, &j.matvec)?,
            vecmat: batch_one(1, &j.vecmat)?,
            solve: batch_one(2, &j.solve)?,
            transpose_solve: batch_one(3, &j.transpose_solve)?,
        },
    };
    let outs = bind(&Primitive::from(bp), &args)?;
    let k = outs.len();
    Ok((outs, vec![Some(0); k]))
}
