//! `jax.lax.linalg`: the matrix decomposition and solve primitives
//! (`cholesky`, `triangular_solve`, `lu`, `qr`, `eigh`, `svd`, `schur`,
//! `tridiagonal_solve`), each over the two trailing dims with any leading
//! batch dims, plus the small matrix helpers their rules share.

use crate::core::{bind, bind1};
use crate::error::{Error, Result};
use crate::numpy as jnp;
use crate::Array;
use jaxon_ir::primitive::{
    EighParams, Linalg, QrParams, SchurParams, SvdParams, TriangularSolveParams,
    TridiagonalSolveParams,
};
use jaxon_ir::Primitive;

fn take<const N: usize>(name: &str, v: Vec<Array>) -> Result<[Array; N]> {
    v.try_into()
        .map_err(|_| Error::InvalidArgument(format!("{name}: unexpected number of results")))
}

/// `lax.linalg.cholesky` without symmetrization: the `cholesky` primitive
/// (the lower factor; NaNs where not positive definite).
pub fn cholesky(x: &Array) -> Result<Array> {
    bind1(
        &Primitive::Linalg(Linalg::Cholesky),
        std::slice::from_ref(x),
    )
}

/// `lax.linalg.triangular_solve(a, b, left_side, lower, transpose_a,
/// conjugate_a, unit_diagonal)`.
pub fn triangular_solve(a: &Array, b: &Array, p: TriangularSolveParams) -> Result<Array> {
    bind1(&p.into(), &[a.clone(), b.clone()])
}

/// `lax.linalg.lu`: `(lu, pivots, permutation)`.
pub fn lu(x: &Array) -> Result<(Array, Array, Array)> {
    let [a, b, c] = take(
        "lu",
        bind(&Primitive::Linalg(Linalg::Lu), std::slice::from_ref(x))?,
    )?;
    Ok((a, b, c))
}

/// `lax.linalg.qr(x, full_matrices)`: `(q, r)`.
pub fn qr(x: &Array, full_matrices: bool) -> Result<(Array, Array)> {
    let p = QrParams {
        full_matrices,
        pivoting: false,
    };
    let [q, r] = take("qr", bind(&p.into(), std::slice::from_ref(x))?)?;
    Ok((q, r))
}

/// The `eigh` primitive: `(v, w)`, eigenvectors as columns.
pub fn eigh(x: &Array, lower: bool, sort_eigenvalues: bool) -> Result<(Array, Array)> {
    let p = EighParams {
        lower,
        sort_eigenvalues,
    };
    let [v, w] = take("eigh", bind(&p.into(), std::slice::from_ref(x))?)?;
    Ok((v, w))
}

/// `lax.linalg.schur(x, compute_schur_vectors, sort_eig_vals)`: `[t]` or
/// `[t, z]`, the real Schur form of each trailing square matrix (`x = z t
/// z^T`, `z` orthogonal, `t` quasi upper triangular with 2x2 blocks for
/// complex-conjugate eigenvalue pairs). Real operands only;
/// `sort_eig_vals=true` is an error, and there is no `select_callable`.
/// Not differentiable (as in JAX).
pub fn schur(x: &Array, compute_schur_vectors: bool, sort_eig_vals: bool) -> Result<Vec<Array>> {
    let p = SchurParams {
        compute_schur_vectors,
        sort_eig_vals,
    };
    bind(&p.into(), std::slice::from_ref(x))
}

/// The `svd` primitive: `[s]` or `[s, u, vt]`.
pub fn svd(x: &Array, full_matrices: bool, compute_uv: bool) -> Result<Vec<Array>> {
    let p = SvdParams {
        compute_uv,
        full_matrices,
    };
    bind(&p.into(), std::slice::from_ref(x))
}

/// `lax.linalg.tridiagonal_solve(dl, d, du, b)`.
pub fn tridiagonal_solve(dl: &Array, d: &Array, du: &Array, b: &Array) -> Result<Array> {
    let p = TridiagonalSolveParams {
        perturb_singular: false,
    };
    bind1(&p.into(), &[dl.clone(), d.clone(), du.clone(), b.clone()])
}

/// The two trailing axes swapped.
pub fn mt(x: &Array) -> Result<Array> {
    let r = x.ndim();
    if r < 2 {
        return Err(Error::InvalidArgument(format!(
            "expected a matrix, got rank {r}"
        )));
    }
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    super::transpose(x, &perm)
}

/// The `n x m` identity of `like`'s dtype.
pub fn eye_like(like: &Array, n: usize, m: usize) -> Result<Array> {
    jnp::eye(n, Some(m), 0, like.dtype())
}
