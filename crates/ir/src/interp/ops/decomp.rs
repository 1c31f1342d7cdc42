//! Interpreter kernels of the decompositions and solves: each batch matrix
//! (the trailing dims, leading dims batch) goes through the f64 reference
//! algorithm in [`super::decomp_kernels`] and back to the operand's dtype.

use super::decomp_kernels as k;
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{QrParams, SvdParams, TriangularSolveParams};

/// An operand's batch dims, trailing sizes and f64 values.
type Split = (Vec<usize>, Vec<usize>, Vec<f64>);

/// An operand's batch dims, trailing sizes and f64 values.
fn split(name: &str, x: &HostArray, rank: usize) -> Result<Split, IrError> {
    if x.ndim() < rank || !x.dtype().is_float() {
        return Err(IrError::ty(
            name,
            format!(
                "expected a floating operand of rank >= {rank}, got {:?}{:?}",
                x.dtype(),
                x.shape()
            ),
        ));
    }
    let (b, t) = x.shape().split_at(x.ndim() - rank);
    Ok((b.to_vec(), t.to_vec(), x.to_f64_vec()))
}

fn shaped(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    batch.iter().chain(tail).copied().collect()
}

fn out(dtype: DType, batch: &[usize], tail: &[usize], v: &[f64]) -> Result<HostArray, IrError> {
    HostArray::from_f64(dtype, &shaped(batch, tail), v)
}

/// Maps `f` over the batch of matrices of `x` (`rows x cols` each), each
/// call returning one vector per result, concatenated per result.
fn per_matrix<const R: usize>(
    v: &[f64],
    size: usize,
    mut f: impl FnMut(&[f64]) -> [Vec<f64>; R],
) -> [Vec<f64>; R] {
    let mut acc: [Vec<f64>; R] = std::array::from_fn(|_| Vec::new());
    if size == 0 {
        return acc;
    }
    for m in v.chunks(size) {
        for (a, r) in acc.iter_mut().zip(f(m)) {
            a.extend(r);
        }
    }
    acc
}

fn batch_len(batch: &[usize]) -> usize {
    batch.iter().product()
}

/// `cholesky x`.
pub(crate) fn cholesky(x: &HostArray) -> Result<HostArray, IrError> {
    let (b, t, v) = split("cholesky", x, 2)?;
    let n = t[0];
    if t[1] != n {
        return Err(IrError::ty("cholesky", "expected square matrices"));
    }
    let [l] = per_matrix(&v, n * n, |a| [k::cholesky(a, n)]);
    out(x.dtype(), &b, &t, &l)
}

/// `triangular_solve a b`.
pub(crate) fn triangular_solve(
    a: &HostArray,
    bx: &HostArray,
    p: &TriangularSolveParams,
) -> Result<HostArray, IrError> {
    let name = "triangular_solve";
    let (_, at, av) = split(name, a, 2)?;
    let (bb, bt, bv) = split(name, bx, 2)?;
    let m = at[0];
    let (bs, as_) = (bt[0] * bt[1], m * m);
    let n = batch_len(&bb);
    let fits = if p.left_side { bt[0] } else { bt[1] } == m;
    if at[1] != m || !fits || a.ndim() != bx.ndim() || av.len() != n * as_ {
        return Err(IrError::ty(
            name,
            "a must be square, fit b and share its batch dims",
        ));
    }
    let flags = (p.left_side, p.lower, p.transpose_a, p.unit_diagonal);
    let mut x = Vec::with_capacity(bv.len());
    for i in 0..n {
        x.extend(k::triangular_solve(
            &av[i * as_..(i + 1) * as_],
            m,
            &bv[i * bs..(i + 1) * bs],
            (bt[0], bt[1]),
            flags,
        ));
    }
    out(bx.dtype(), &bb, &bt, &x)
}

/// `lu x`: `(lu, pivots, permutation)`.
pub(crate) fn lu(x: &HostArray) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("lu", x, 2)?;
    let (m, n) = (t[0], t[1]);
    let [f, piv, perm] = per_matrix(&v, m * n, |a| {
        let (f, piv, perm) = k::lu(a, m, n);
        let as_f = |v: Vec<i64>| v.into_iter().map(|i| i as f64).collect();
        [f, as_f(piv), as_f(perm)]
    });
    Ok(vec![
        out(x.dtype(), &b, &t, &f)?,
        out(DType::I32, &b, &[m.min(n)], &piv)?,
        out(DType::I32, &b, &[m], &perm)?,
    ])
}

/// `qr x`: `(q, r)`.
pub(crate) fn qr(x: &HostArray, p: &QrParams) -> Result<Vec<HostArray>, IrError> {
    if p.pivoting {
        return Err(IrError::ty("qr", "pivoting=True is not supported"));
    }
    let (b, t, v) = split("qr", x, 2)?;
    let (m, n) = (t[0], t[1]);
    let qc = if p.full_matrices { m } else { m.min(n) };
    let [q, r] = per_matrix(&v, m * n, |a| {
        let (q, r) = k::qr(a, m, n, p.full_matrices);
        [q, r]
    });
    Ok(vec![
        out(x.dtype(), &b, &[m, qc], &q)?,
        out(x.dtype(), &b, &[qc, n], &r)?,
    ])
}

/// `eigh x`: `(v, w)`.
pub(crate) fn eigh(x: &HostArray, lower: bool, sort: bool) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("eigh", x, 2)?;
    let n = t[0];
    if t[1] != n {
        return Err(IrError::ty("eigh", "expected square matrices"));
    }
    let [vs, w] = per_matrix(&v, n * n, |a| {
        let (vs, w) = k::eigh(a, n, lower, sort);
        [vs, w]
    });
    Ok(vec![
        out(x.dtype(), &b, &[n, n], &vs)?,
        out(x.dtype(), &b, &[n], &w)?,
    ])
}

/// `svd x`: `(s,)` or `(s, u, vt)`.
pub(crate) fn svd(x: &HostArray, p: &SvdParams) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("svd", x, 2)?;
    let (m, n) = (t[0], t[1]);
    let kk = m.min(n);
    let [s, u, vt] = per_matrix(&v, m * n, |a| {
        let (s, u, vt) = k::svd(a, m, n, p.full_matrices);
        [s, u, vt]
    });
    let s = out(x.dtype(), &b, &[kk], &s)?;
    if !p.compute_uv {
        return Ok(vec![s]);
    }
    let (uc, vr) = if p.full_matrices { (m, n) } else { (kk, kk) };
    Ok(vec![
        s,
        out(x.dtype(), &b, &[m, uc], &u)?,
        out(x.dtype(), &b, &[vr, n], &vt)?,
    ])
}

/// `tridiagonal_solve dl d du b`.
pub(crate) fn tridiagonal_solve(args: [&HostArray; 4]) -> Result<HostArray, IrError> {
    let name = "tridiagonal_solve";
    let (bb, bt, bv) = split(name, args[3], 2)?;
    let (m, n) = (bt[0], bt[1]);
    let nb = batch_len(&bb);
    let mut diags = Vec::with_capacity(3);
    for a in &args[..3] {
        let (_, t, v) = split(name, a, 1)?;
        if v.len() != nb * m || t[0] != m {
            return Err(IrError::ty(name, "diagonals do not fit b"));
        }
        diags.push(v);
    }
    let mut x = Vec::with_capacity(bv.len());
    for i in 0..nb {
        let d = |j: usize| &diags[j][i * m..(i + 1) * m];
        x.extend(k::tridiagonal_solve(
            d(0),
            d(1),
            d(2),
            &bv[i * m * n..(i + 1) * m * n],
            m,
            n,
        ));
    }
    out(args[3].dtype(), &bb, &bt, &x)
}
