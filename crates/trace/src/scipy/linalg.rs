//! `jax.scipy.linalg`: `solve_triangular`, `cho_factor`/`cho_solve`,
//! `lu_factor` and `lu`, staged as JAX stages them (`_cholesky` masks the
//! factor's upper triangle, `_cho_solve` is two triangular solves).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::lax::linalg as la;
use crate::numpy as jnp;
use jaxon_ir::primitive::TriangularSolveParams;
use jaxon_ir::DType;

/// `jax.scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)`
/// for a matrix `b` (`trans`: 0 = `a`, 1 or 2 = `a^T`).
pub fn solve_triangular(
    a: &Array,
    b: &Array,
    trans: u8,
    lower: bool,
    unit_diagonal: bool,
) -> Result<Array> {
    let vector = b.ndim() + 1 == a.ndim();
    let b2 = if vector {
        lax::expand_dims(b, &[b.ndim()])?
    } else {
        b.clone()
    };
    let x = la::triangular_solve(
        a,
        &b2,
        TriangularSolveParams {
            left_side: true,
            lower,
            transpose_a: trans != 0,
            conjugate_a: trans == 2,
            unit_diagonal,
        },
    )?;
    if vector {
        lax::squeeze(&x, &[x.ndim() - 1])
    } else {
        Ok(x)
    }
}

/// `jax.scipy.linalg.cho_factor(a, lower=True)`: the masked lower factor.
pub fn cho_factor(a: &Array) -> Result<Array> {
    jnp::jitted("_cholesky", vec![a.clone()], |x| {
        jnp::linalg::mask_tril(&la::cholesky(&x[0])?)
    })
}

/// `jax.scipy.linalg.cho_solve((c, lower=True), b)`.
pub fn cho_solve(c: &Array, b: &Array) -> Result<Array> {
    jnp::jitted("_cho_solve", vec![c.clone(), b.clone()], |x| {
        let y = solve_triangular(&x[0], &x[1], 0, true, false)?;
        solve_triangular(&x[0], &y, 1, true, false)
    })
}

/// `jax.scipy.linalg.lu_factor(a)`: `(lu, pivots)`.
pub fn lu_factor(a: &Array) -> Result<(Array, Array)> {
    let (lu, piv, _) = la::lu(a)?;
    Ok((lu, piv))
}

/// `jax.scipy.linalg.lu(a)`: `(p, l, u)` with `a = p l u`.
pub fn lu(a: &Array) -> Result<(Array, Array, Array)> {
    let s = a.try_shape()?;
    let (m, n) = match s.as_slice() {
        [.., m, n] => (*m, *n),
        _ => return Err(Error::InvalidArgument("lu: expected a matrix".into())),
    };
    let k = m.min(n);
    let (f, _, perm) = la::lu(a)?;
    let rank = s.len();
    let mut lim = s.clone();
    lim[rank - 1] = k;
    let lpart = lax::slice(&f, &vec![0; rank], &lim, None)?;
    let l = jnp::add(&jnp::tril(&lpart, -1)?, &la::eye_like(a, m, k)?)?;
    let mut lim = s.clone();
    lim[rank - 2] = k;
    let u = jnp::triu(&lax::slice(&f, &vec![0; rank], &lim, None)?, 0)?;
    // p[perm[i], i] = 1: the transpose of the row-selection matrix.
    let iota = lax::iota(perm.dtype(), m)?;
    let sel = jnp::equal(&lax::expand_dims(&perm, &[perm.ndim()])?, &iota)?;
    let p = la::mt(&lax::convert_element_type(&sel, a.dtype(), false)?)?;
    Ok((p, l, u))
}

/// `jax.scipy.linalg.block_diag(*arrs)`: the arrays (scalars and 1-D
/// arrays count as one row) along the diagonal of one zero matrix, in
/// their promoted dtype; no arrays give a `[1, 0]` matrix, as in JAX.
pub fn block_diag(arrays: &[Array]) -> Result<Array> {
    if arrays.is_empty() {
        return jnp::zeros(&[1, 0], DType::F32);
    }
    let mut mats = Vec::with_capacity(arrays.len());
    for a in arrays {
        if a.ndim() > 2 {
            return Err(Error::InvalidArgument(format!(
                "block_diag: arguments must have at most 2 dimensions, got {}",
                jaxon_ir::shape::fmt_aval(a.aval())
            )));
        }
        mats.push(jnp::atleast_2d(a)?);
    }
    let refs: Vec<&Array> = mats.iter().collect();
    let mats = jnp::promote::promote_dtypes("block_diag", &refs)?;
    let widths = mats
        .iter()
        .map(|m| Ok(m.try_shape()?[1]))
        .collect::<Result<Vec<usize>>>()?;
    let total: usize = widths.iter().sum();
    let mut before = 0;
    let mut rows = Vec::with_capacity(mats.len());
    for (m, w) in mats.iter().zip(&widths) {
        let zero = lax::convert_element_type(&Array::weak(0.0), m.dtype(), false)?;
        let cfg = [(0, 0, 0), (before as i64, (total - before - w) as i64, 0)];
        rows.push(lax::pad(m, &zero, &cfg)?);
        before += w;
    }
    lax::concatenate(&rows, 0)
}
