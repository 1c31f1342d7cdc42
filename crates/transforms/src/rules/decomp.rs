//! Rules of the matrix decompositions and solves (`cholesky`,
//! `triangular_solve`, `lu`, `qr`, `eigh`, `svd`, `tridiagonal_solve`):
//! jvp, transpose and batching, as JAX defines them.
//!
//! Invariants: every primitive is batch-polymorphic over leading dims, so
//! batching moves each operand's batch dim to the front (broadcasting
//! unbatched ones) and rebinds; only `triangular_solve` and
//! `tridiagonal_solve` are linear (in `b`), their transposes solve with
//! the transposed matrix. The jvps: cholesky `L phi(L^-1 dA L^-T)`;
//! triangular_solve `-op(a)^-1 op(da) x` plus the solve of `db`; lu's
//! `L tril(L^-1 P dA U^-1, -1) + triu(..) U` (pivots and permutation have
//! no tangent); qr's square/tall rule, with a wide matrix split as
//! `[x1 x2]`; eigh's eigenvalue-gap formula; svd's `F` matrix formula with
//! the rectangular corrections.

use super::{all_front, not_linear, only, BatchOuts, Cts, JvpOuts};
use crate::transpose::LinArg;
use jaxon_ir::primitive::{Linalg, QrParams, SvdParams, TriangularSolveParams};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::lax::linalg::{self as la, mt};
use jaxon_trace::{bind, lax, numpy as jnp, Array};

/// The jvp rules of the decompositions.
pub(crate) fn jvp(l: &Linalg, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match l {
        Linalg::Cholesky => cholesky_jvp(&x[0], t[0].as_ref()),
        Linalg::TriangularSolve(tp) => triangular_solve_jvp(tp, x, t),
        Linalg::Lu => lu_jvp(&x[0], t[0].as_ref()),
        Linalg::Qr(qp) => qr_jvp(qp, &x[0], t[0].as_ref()),
        Linalg::Eigh(ep) => eigh_jvp(p, ep.lower, ep.sort_eigenvalues, &x[0], t[0].as_ref()),
        Linalg::Svd(sp) => svd_jvp(sp, &x[0], t[0].as_ref()),
        Linalg::TridiagonalSolve(_) => tridiagonal_jvp(x, t),
        // As JAX: `schur` has no differentiation rule.
        Linalg::Schur(_) => Err(Error::Unsupported(
            "differentiation of `schur` is not supported (JAX defines no jvp for it)".into(),
        )),
        Linalg::DotGeneral(_) | Linalg::ConvGeneralDilated(_) | Linalg::Fft(_) => Err(
            Error::InvalidArgument(format!("{} is not a decomposition", p.name())),
        ),
    }
}

/// The transpose rules of the decompositions.
pub(crate) fn transpose(
    l: &Linalg,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let linear_b = |n: usize| args[..n].iter().all(|a| !a.is_linear()) && args[n].is_linear();
    let ct = match cts.first() {
        Some(Some(c)) => c.clone(),
        _ => return Ok(vec![None; args.len()]),
    };
    match l {
        Linalg::TriangularSolve(tp) if linear_b(1) => {
            let q = TriangularSolveParams {
                transpose_a: !tp.transpose_a,
                ..*tp
            };
            Ok(only(
                args,
                1,
                la::triangular_solve(args[0].value(p.name())?, &ct, q)?,
            ))
        }
        Linalg::TridiagonalSolve(_) if linear_b(3) => {
            let v = |i: usize| args[i].value(p.name());
            let (dl, d, du) = (v(0)?, v(1)?, v(2)?);
            let (dlt, dut) = (shift_right(du)?, shift_left(dl)?);
            Ok(only(args, 3, la::tridiagonal_solve(&dlt, d, &dut, &ct)?))
        }
        Linalg::TriangularSolve(_)
        | Linalg::TridiagonalSolve(_)
        | Linalg::Cholesky
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::DotGeneral(_)
        | Linalg::ConvGeneralDilated(_)
        | Linalg::Fft(_) => not_linear(p),
    }
}

/// The batching rule: batch dims to the front, rebind.
pub(crate) fn batch(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    all_front(x, d, n, p.clone())
}

// ------------------------------------------------------------ helpers --

fn mm(a: &Array, b: &Array) -> Result<Array> {
    jnp::matmul(a, b)
}

fn sub(a: &Array, b: &Array) -> Result<Array> {
    jnp::subtract(a, b)
}

fn add(a: &Array, b: &Array) -> Result<Array> {
    jnp::add(a, b)
}

fn mul(a: &Array, b: &Array) -> Result<Array> {
    jnp::multiply(a, b)
}

fn div(a: &Array, b: &Array) -> Result<Array> {
    jnp::divide(a, b)
}

fn recip(a: &Array) -> Result<Array> {
    div(&jnp::ones_like(a)?, a)
}

fn tail(x: &Array) -> Result<(usize, usize)> {
    let s = x.try_shape()?;
    match s.as_slice() {
        [.., m, n] => Ok((*m, *n)),
        _ => Err(Error::InvalidArgument("expected a matrix".into())),
    }
}

/// `x[..., r0:r1, c0:c1]`.
fn block(x: &Array, r: (usize, usize), c: (usize, usize)) -> Result<Array> {
    let s = x.try_shape()?;
    let k = s.len();
    let mut start = vec![0; k];
    let mut limit = s.clone();
    (start[k - 2], limit[k - 2], start[k - 1], limit[k - 1]) = (r.0, r.1, c.0, c.1);
    lax::slice(x, &start, &limit, None)
}

/// The diagonal of the trailing matrices of a square `x`.
fn diag(x: &Array) -> Result<Array> {
    let (n, _) = tail(x)?;
    let e = la::eye_like(x, n, n)?;
    jnp::sum(&mul(x, &e)?, -1isize, false)
}

fn solve(
    a: &Array,
    b: &Array,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    unit: bool,
) -> Result<Array> {
    la::triangular_solve(
        a,
        b,
        TriangularSolveParams {
            left_side,
            lower,
            transpose_a,
            conjugate_a: false,
            unit_diagonal: unit,
        },
    )
}

/// `v[..., :-1]` shifted right along the last axis, a zero first.
fn shift_right(v: &Array) -> Result<Array> {
    let cfg = pad_cfg(v.ndim(), (1, -1));
    lax::pad(v, &jnp::zeros(&[], v.dtype())?, &cfg)
}

/// `v[..., 1:]` shifted left along the last axis, a zero last.
fn shift_left(v: &Array) -> Result<Array> {
    let cfg = pad_cfg(v.ndim(), (-1, 1));
    lax::pad(v, &jnp::zeros(&[], v.dtype())?, &cfg)
}

fn pad_cfg(rank: usize, last: (i64, i64)) -> Vec<(i64, i64, i64)> {
    let mut cfg = vec![(0, 0, 0); rank];
    if let Some(c) = cfg.last_mut() {
        *c = (last.0, last.1, 0);
    }
    cfg
}

// ---------------------------------------------------------------- jvp --

fn cholesky_jvp(x: &Array, t: Option<&Array>) -> Result<JvpOuts> {
    let l = la::cholesky(x)?;
    let Some(dx) = t else {
        return Ok((vec![l], vec![None]));
    };
    let (n, _) = tail(x)?;
    // phi(L^-1 dA L^-T) with the diagonal halved.
    let tmp = solve(&l, dx, false, true, true, false)?;
    let inner = solve(&l, &tmp, true, true, false, false)?;
    let half = add(&jnp::ones(&[n, n], x.dtype())?, &la::eye_like(x, n, n)?)?;
    let phi = div(&jnp::tril(&inner, 0)?, &half)?;
    let dl = mm(&l, &phi)?;
    Ok((vec![l], vec![Some(dl)]))
}

fn triangular_solve_jvp(
    tp: &TriangularSolveParams,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let (a, b) = (&x[0], &x[1]);
    let out = la::triangular_solve(a, b, *tp)?;
    let mut dout: Option<Array> = None;
    if let Some(da) = &t[0] {
        let k = if tp.unit_diagonal { 1 } else { 0 };
        let ga = if tp.lower {
            jnp::tril(da, -k)?
        } else {
            jnp::triu(da, k)?
        };
        let ga = jnp::negative(&ga)?;
        let ga = if tp.transpose_a { mt(&ga)? } else { ga };
        let rhs = if tp.left_side {
            mm(&ga, &out)?
        } else {
            mm(&out, &ga)?
        };
        dout = Some(la::triangular_solve(a, &rhs, *tp)?);
    }
    if let Some(db) = &t[1] {
        let s = la::triangular_solve(a, db, *tp)?;
        dout = Some(match dout {
            Some(d) => add(&d, &s)?,
            None => s,
        });
    }
    Ok((vec![out], vec![dout]))
}

fn lu_jvp(x: &Array, t: Option<&Array>) -> Result<JvpOuts> {
    let (lu, piv, perm) = la::lu(x)?;
    let Some(dx) = t else {
        return Ok((vec![lu, piv, perm], vec![None, None, None]));
    };
    let (m, n) = tail(x)?;
    let k = m.min(n);
    // P dA as a permutation matrix product.
    let iota = lax::iota(perm.dtype(), m)?;
    let pm = jnp::equal(&lax::expand_dims(&perm, &[perm.ndim()])?, &iota)?;
    let pm = lax::convert_element_type(&pm, x.dtype(), false)?;
    let pdx = mm(&pm, dx)?;
    let l = add(
        &jnp::tril(&block(&lu, (0, m), (0, k))?, -1)?,
        &la::eye_like(x, m, k)?,
    )?;
    let l = if m > k {
        let e = block(&la::eye_like(x, m, m)?, (0, m), (k, m))?;
        let e = jnp::broadcast_to(&e, &with_tail(&l, m, m - k)?)?;
        lax::concatenate(&[l, e], l_last(x))?
    } else {
        l
    };
    let u = jnp::triu(&block(&lu, (0, k), (0, n))?, 0)?;
    let u = if n > k {
        let e = block(&la::eye_like(x, n, n)?, (k, n), (0, n))?;
        let e = jnp::broadcast_to(&e, &with_tail(&u, n - k, n)?)?;
        lax::concatenate(&[u, e], l_last(x) - 1)?
    } else {
        u
    };
    let la_ = solve(&l, &pdx, true, true, false, true)?;
    let lau = solve(&u, &la_, false, false, false, false)?;
    let dlu = add(
        &mm(&l, &jnp::tril(&lau, -1)?)?,
        &mm(&jnp::triu(&lau, 0)?, &u)?,
    )?;
    Ok((vec![lu, piv, perm], vec![Some(dlu), None, None]))
}

fn l_last(x: &Array) -> usize {
    x.ndim() - 1
}

/// `like`'s batch dims with trailing `r x c`.
fn with_tail(like: &Array, r: usize, c: usize) -> Result<Vec<usize>> {
    let mut s = like.try_shape()?;
    let k = s.len();
    (s[k - 2], s[k - 1]) = (r, c);
    Ok(s)
}

/// The tangents of a square or tall reduced QR.
fn qr_tall_tangent(q: &Array, r: &Array, dx: &Array) -> Result<(Array, Array)> {
    let dx_rinv = solve(r, dx, false, false, false, false)?;
    let qt = mm(&mt(q)?, &dx_rinv)?;
    let low = jnp::tril(&qt, -1)?;
    let dom = sub(&low, &mt(&low)?)?;
    let dq = add(&mm(q, &sub(&dom, &qt)?)?, &dx_rinv)?;
    let dr = mm(&sub(&qt, &dom)?, r)?;
    Ok((dq, dr))
}

fn qr_jvp(qp: &QrParams, x: &Array, t: Option<&Array>) -> Result<JvpOuts> {
    let (q, r) = la::qr(x, qp.full_matrices)?;
    let Some(dx) = t else {
        return Ok((vec![q, r], vec![None, None]));
    };
    let (m, n) = tail(x)?;
    if qp.full_matrices && m != n {
        return Err(Error::Unsupported(
            "the jvp of qr with full_matrices=True of a non-square matrix".into(),
        ));
    }
    let (dq, dr) = if m >= n {
        qr_tall_tangent(&q, &r, dx)?
    } else {
        let r1 = block(&r, (0, m), (0, m))?;
        let (dq, dr1) = qr_tall_tangent(&q, &r1, &block(dx, (0, m), (0, m))?)?;
        let (x2, dx2) = (block(x, (0, m), (m, n))?, block(dx, (0, m), (m, n))?);
        let dr2 = add(&mm(&mt(&dq)?, &x2)?, &mm(&mt(&q)?, &dx2)?)?;
        (dq, lax::concatenate(&[dr1, dr2], x.ndim() - 1)?)
    };
    Ok((vec![q, r], vec![Some(dq), Some(dr)]))
}

fn eigh_jvp(
    p: &Primitive,
    lower: bool,
    sort: bool,
    x: &Array,
    t: Option<&Array>,
) -> Result<JvpOuts> {
    let (v, w) = la::eigh(x, lower, sort)?;
    let Some(dx) = t else {
        return Ok((vec![v, w], vec![None, None]));
    };
    let _ = p;
    let (n, _) = tail(x)?;
    let e = la::eye_like(x, n, n)?;
    let wr = lax::expand_dims(&w, &[w.ndim() - 1])?;
    let wc = lax::expand_dims(&w, &[w.ndim()])?;
    // F[i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it.
    let f = sub(&recip(&add(&e, &sub(&wr, &wc)?)?)?, &e)?;
    let vav = mm(&mt(&v)?, &mm(dx, &v)?)?;
    let dv = mm(&v, &mul(&f, &vav)?)?;
    let dw = diag(&vav)?;
    Ok((vec![v, w], vec![Some(dv), Some(dw)]))
}

fn svd_jvp(sp: &SvdParams, x: &Array, t: Option<&Array>) -> Result<JvpOuts> {
    let primal = bind(&(*sp).into(), std::slice::from_ref(x))?;
    let Some(da) = t else {
        let k = primal.len();
        return Ok((primal, vec![None; k]));
    };
    let (m, n) = tail(x)?;
    if sp.compute_uv && sp.full_matrices && m != n {
        return Err(Error::Unsupported(
            "the jvp of svd with full_matrices=True of a non-square matrix".into(),
        ));
    }
    let red = la::svd(x, false, true)?;
    let [s, u, vt] = <[Array; 3]>::try_from(red)
        .map_err(|_| Error::InvalidArgument("svd: unexpected results".into()))?;
    let (ut, v) = (mt(&u)?, mt(&vt)?);
    let ds_mat = mm(&ut, &mm(da, &v)?)?;
    let ds = diag(&ds_mat)?;
    if !sp.compute_uv {
        return Ok((primal, vec![Some(ds)]));
    }
    let k = m.min(n);
    let e = la::eye_like(x, k, k)?;
    let s_dim = lax::expand_dims(&s, &[s.ndim() - 1])?;
    let s_col = mt(&s_dim)?;
    let diffs = mul(&add(&s_dim, &s_col)?, &sub(&s_dim, &s_col)?)?;
    let zeros = lax::convert_element_type(
        &jnp::equal(&diffs, &jnp::zeros(&[], x.dtype())?)?,
        x.dtype(),
        false,
    )?;
    let f = sub(&recip(&add(&diffs, &zeros)?)?, &zeros)?;
    let dss = mul(&s_dim, &ds_mat)?;
    let sds = mul(&s_col, &ds_mat)?;
    let mut du = mm(&u, &mul(&f, &add(&dss, &mt(&dss)?)?)?)?;
    let mut dv = mm(&v, &mul(&f, &add(&sds, &mt(&sds)?)?)?)?;
    let _ = e;
    if m > n {
        let dav = mm(da, &v)?;
        du = add(&du, &div(&sub(&dav, &mm(&u, &mm(&ut, &dav)?)?)?, &s_dim)?)?;
    }
    if n > m {
        let dahu = mm(&mt(da)?, &u)?;
        dv = add(&dv, &div(&sub(&dahu, &mm(&v, &mm(&vt, &dahu)?)?)?, &s_dim)?)?;
    }
    Ok((primal, vec![Some(ds), Some(du), Some(mt(&dv)?)]))
}

/// `T x` for the tridiagonal `T` of `(dl, d, du)` and `x` (`.. m x n`).
fn tri_matvec(dl: &Array, d: &Array, du: &Array, x: &Array) -> Result<Array> {
    let col = |v: &Array| lax::expand_dims(v, &[v.ndim()]);
    let r = x.ndim();
    let (m, _) = tail(x)?;
    let zero = jnp::zeros(&[], x.dtype())?;
    let mut down = vec![(0, 0, 0); r];
    down[r - 2] = (1, -1, 0);
    let mut up = vec![(0, 0, 0); r];
    up[r - 2] = (-1, 1, 0);
    let _ = m;
    let x_prev = lax::pad(x, &zero, &down)?;
    let x_next = lax::pad(x, &zero, &up)?;
    let a = mul(&col(dl)?, &x_prev)?;
    let b = mul(&col(d)?, x)?;
    let c = mul(&col(du)?, &x_next)?;
    add(&add(&a, &b)?, &c)
}

fn tridiagonal_jvp(x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let (dl, d, du, b) = (&x[0], &x[1], &x[2], &x[3]);
    let out = la::tridiagonal_solve(dl, d, du, b)?;
    let zero = |v: &Array| jnp::zeros_like(v);
    let any_t = t.iter().any(Option::is_some);
    if !any_t {
        return Ok((vec![out], vec![None]));
    }
    let tz = |i: usize| -> Result<Array> {
        match &t[i] {
            Some(a) => Ok(a.clone()),
            None => zero(&x[i]),
        }
    };
    // (masked: dl[0] and du[m-1] are unused)
    let (ddl, dd, ddu) = (
        shift_right(&shift_left(&tz(0)?)?)?,
        tz(1)?,
        shift_left(&shift_right(&tz(2)?)?)?,
    );
    let rhs = sub(&tz(3)?, &tri_matvec(&ddl, &dd, &ddu, &out)?)?;
    let dout = la::tridiagonal_solve(dl, d, du, &rhs)?;
    Ok((vec![out], vec![Some(dout)]))
}
