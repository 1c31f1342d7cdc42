//! Interpreter kernels of the decompositions and solves: each batch matrix
//! (the trailing dims, leading dims batch) goes through an f64 algorithm of
//! a [`MatrixKernels`] and back to the operand's dtype.
//!
//! The interpreter uses [`Reference`] (the plain loops of
//! [`super::decomp_kernels`]); a backend passes its own kernels (the CPU's
//! are faer's) and shares the batching, shapes and checks here. Invariant:
//! every implementation keeps JAX's conventions (see `decomp_kernels`):
//! NaN factors for a matrix that is not positive definite, LAPACK's pivots,
//! eigenvalues ascending, singular values descending.

use super::decomp_kernels as k;
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{QrParams, SchurParams, SvdParams, TriangularSolveParams};

/// The per-matrix algorithms of the decompositions, on row-major f64
/// matrices, with the signatures and conventions of
/// [`super::decomp_kernels`]; every method defaults to that reference.
pub trait MatrixKernels {
    /// See [`k::cholesky`].
    fn cholesky(&self, a: &[f64], n: usize) -> Vec<f64> {
        k::cholesky(a, n)
    }
    /// See [`k::triangular_solve`].
    fn triangular_solve(
        &self,
        a: &[f64],
        m: usize,
        b: &[f64],
        bshape: (usize, usize),
        flags: (bool, bool, bool, bool),
    ) -> Vec<f64> {
        k::triangular_solve(a, m, b, bshape, flags)
    }
    /// See [`k::lu`].
    fn lu(&self, a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
        k::lu(a, m, n)
    }
    /// See [`k::qr`].
    fn qr(&self, a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>) {
        k::qr(a, m, n, full)
    }
    /// See [`k::eigh`].
    fn eigh(&self, a: &[f64], n: usize, lower: bool, sort: bool) -> (Vec<f64>, Vec<f64>) {
        k::eigh(a, n, lower, sort)
    }
    /// The real Schur form `(t, z)` of a square matrix: see
    /// [`super::schur::real_schur`].
    fn schur(&self, a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
        super::schur::real_schur(a, n)
    }
    /// See [`k::svd`].
    fn svd(&self, a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        k::svd(a, m, n, full)
    }
}

/// The reference algorithms: the interpreter's kernels.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

impl MatrixKernels for Reference {}

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
pub fn cholesky(x: &HostArray, ks: &dyn MatrixKernels) -> Result<HostArray, IrError> {
    let (b, t, v) = split("cholesky", x, 2)?;
    let n = t[0];
    if t[1] != n {
        return Err(IrError::ty("cholesky", "expected square matrices"));
    }
    let [l] = per_matrix(&v, n * n, |a| [ks.cholesky(a, n)]);
    out(x.dtype(), &b, &t, &l)
}

/// `triangular_solve a b`.
pub fn triangular_solve(
    a: &HostArray,
    bx: &HostArray,
    p: &TriangularSolveParams,
    ks: &dyn MatrixKernels,
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
        x.extend(ks.triangular_solve(
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
pub fn lu(x: &HostArray, ks: &dyn MatrixKernels) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("lu", x, 2)?;
    let (m, n) = (t[0], t[1]);
    let [f, piv, perm] = per_matrix(&v, m * n, |a| {
        let (f, piv, perm) = ks.lu(a, m, n);
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
pub fn qr(x: &HostArray, p: &QrParams, ks: &dyn MatrixKernels) -> Result<Vec<HostArray>, IrError> {
    if p.pivoting {
        return Err(IrError::ty("qr", "pivoting=True is not supported"));
    }
    let (b, t, v) = split("qr", x, 2)?;
    let (m, n) = (t[0], t[1]);
    let qc = if p.full_matrices { m } else { m.min(n) };
    let [q, r] = per_matrix(&v, m * n, |a| {
        let (q, r) = ks.qr(a, m, n, p.full_matrices);
        [q, r]
    });
    Ok(vec![
        out(x.dtype(), &b, &[m, qc], &q)?,
        out(x.dtype(), &b, &[qc, n], &r)?,
    ])
}

/// `eigh x`: `(v, w)`.
pub fn eigh(
    x: &HostArray,
    lower: bool,
    sort: bool,
    ks: &dyn MatrixKernels,
) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("eigh", x, 2)?;
    let n = t[0];
    if t[1] != n {
        return Err(IrError::ty("eigh", "expected square matrices"));
    }
    let [vs, w] = per_matrix(&v, n * n, |a| {
        let (vs, w) = ks.eigh(a, n, lower, sort);
        [vs, w]
    });
    Ok(vec![
        out(x.dtype(), &b, &[n, n], &vs)?,
        out(x.dtype(), &b, &[n], &w)?,
    ])
}

/// `schur x`: `(t,)` or `(t, z)`.
pub fn schur(
    x: &HostArray,
    p: &SchurParams,
    ks: &dyn MatrixKernels,
) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("schur", x, 2)?;
    let n = t[0];
    if t[1] != n || p.sort_eig_vals {
        return Err(IrError::ty(
            "schur",
            "expected square matrices and sort_eig_vals=False",
        ));
    }
    let [tt, z] = per_matrix(&v, n * n, |a| {
        let (tt, z) = ks.schur(a, n);
        [tt, z]
    });
    let mut outs = vec![out(x.dtype(), &b, &[n, n], &tt)?];
    if p.compute_schur_vectors {
        outs.push(out(x.dtype(), &b, &[n, n], &z)?);
    }
    Ok(outs)
}

/// `svd x`: `(s,)` or `(s, u, vt)`.
pub fn svd(
    x: &HostArray,
    p: &SvdParams,
    ks: &dyn MatrixKernels,
) -> Result<Vec<HostArray>, IrError> {
    let (b, t, v) = split("svd", x, 2)?;
    let (m, n) = (t[0], t[1]);
    let kk = m.min(n);
    let [s, u, vt] = per_matrix(&v, m * n, |a| {
        let (s, u, vt) = ks.svd(a, m, n, p.full_matrices);
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
pub fn tridiagonal_solve(args: [&HostArray; 4]) -> Result<HostArray, IrError> {
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
