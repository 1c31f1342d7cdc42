//! `jax.scipy.stats.multivariate_normal`: the multivariate normal density
//! (`logpdf`, `pdf`) with a mean vector (or scalar) and a covariance
//! matrix (or scalar variance), through the Cholesky factor of the
//! covariance. Leading axes of `x`, `mean` and `cov` are a batch and
//! broadcast.

use super::k;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::lax::linalg as la;
use crate::numpy::{self as jnp, promote::promote_dtypes_inexact};
use jaxon_ir::primitive::TriangularSolveParams;
use jaxon_ir::shape::fmt_aval;

/// `log(2 pi)` computed in `x`'s dtype, as JAX's `jnp.log(2 * np.pi)`.
fn log_two_pi(x: &Array) -> Result<Array> {
    lax::log(&k(x, 2.0 * std::f64::consts::PI)?)
}

/// `multivariate_normal.logpdf(x, mean, cov)`: `-|L^-1 (x - mean)|^2 / 2
/// - n/2 log(2 pi) - sum(log(diag(L)))` with `L` the lower Cholesky factor
/// of (the symmetrized) `cov`. A scalar `mean` is the univariate case; a
/// scalar `cov` is an isotropic variance. Shapes that do not fit (`cov`
/// not `.. n x n` for a mean of length `n`) are an error naming both.
pub fn logpdf(x: &Array, mean: &Array, cov: &Array) -> Result<Array> {
    let v = promote_dtypes_inexact("multivariate_normal.logpdf", &[x, mean, cov])?;
    let (x, mean, cov) = (&v[0], &v[1], &v[2]);
    let half = Array::weak(-0.5);
    let msh = mean.try_shape()?;
    let Some(&n) = msh.last() else {
        // -1/2 (x - mean)^2 / cov - 1/2 (log(2 pi) + log(cov))
        let q = jnp::divide(
            &jnp::multiply(&half, &jnp::square(&jnp::subtract(x, mean)?)?)?,
            cov,
        )?;
        let norm = jnp::multiply(
            &Array::weak(0.5),
            &jnp::add(&log_two_pi(x)?, &jnp::log(cov)?)?,
        )?;
        return jnp::subtract(&q, &norm);
    };
    let y = jnp::subtract(x, mean)?;
    let nhalf = Array::weak(n as f64 / 2.0);
    if cov.ndim() == 0 {
        let ss = jnp::sum(&jnp::multiply(&y, &y)?, -1isize, false)?;
        let q = jnp::divide(&jnp::multiply(&half, &ss)?, cov)?;
        let norm = jnp::multiply(&nhalf, &jnp::add(&log_two_pi(x)?, &jnp::log(cov)?)?)?;
        return jnp::subtract(&q, &norm);
    }
    let csh = cov.try_shape()?;
    if csh.len() < 2 || csh[csh.len() - 2..] != [n, n] {
        return Err(Error::ShapeMismatch {
            op: "multivariate_normal.logpdf: cov must be n x n for a mean of length n".into(),
            lhs: fmt_aval(mean.aval()),
            rhs: fmt_aval(cov.aval()),
        });
    }
    let l = jnp::linalg::cholesky(cov)?;
    // Broadcast the batch axes of `L` and `y`, then solve `L z = y`.
    let ysh = y.try_shape()?;
    let batch = crate::numpy::promote::broadcast_shape_lists(
        "multivariate_normal.logpdf",
        &csh[..csh.len() - 2],
        &ysh[..ysh.len() - 1],
    )?;
    let mut lshape = batch.clone();
    lshape.extend([n, n]);
    let mut yshape = batch.clone();
    yshape.extend([n, 1]);
    let lb = jnp::broadcast_to(&l, &lshape)?;
    let yb = jnp::broadcast_to(&lax::expand_dims(&y, &[y.ndim()])?, &yshape)?;
    let z = la::triangular_solve(
        &lb,
        &yb,
        TriangularSolveParams {
            left_side: true,
            lower: true,
            transpose_a: false,
            conjugate_a: false,
            unit_diagonal: false,
        },
    )?;
    let z = lax::squeeze(&z, &[z.ndim() - 1])?;
    let ss = jnp::sum(&jnp::multiply(&z, &z)?, -1isize, false)?;
    let diag = jnp::sum(
        &jnp::multiply(&l, &la::eye_like(&l, n, n)?)?,
        -1isize,
        false,
    )?;
    let logdet = jnp::sum(&jnp::log(&diag)?, -1isize, false)?;
    let first = jnp::subtract(
        &jnp::multiply(&half, &ss)?,
        &jnp::multiply(&nhalf, &log_two_pi(x)?)?,
    )?;
    jnp::subtract(&first, &logdet)
}

/// `multivariate_normal.pdf(x, mean, cov)`: `exp(logpdf)`.
pub fn pdf(x: &Array, mean: &Array, cov: &Array) -> Result<Array> {
    lax::exp(&logpdf(x, mean, cov)?)
}
