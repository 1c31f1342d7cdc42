//! Vector- and matrix-valued samplers: `multivariate_normal` (a Cholesky,
//! eigh or SVD factor of the covariance applied to standard normals),
//! `orthogonal` (Haar-distributed via a sign-fixed QR), and
//! `generalized_normal` with `ball` built on it, each the op sequence of
//! JAX 0.10.2's function.

use super::discrete::rademacher;
use super::gamma::gamma;
use super::support::{check_float, check_gamma_float, check_real, fconst};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::numpy::{self as jnp, broadcast_to, linalg};
use crate::{lax, random};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// `jax.random.multivariate_normal(key, mean, cov, shape, dtype, method)`:
/// normal vectors with mean `mean` (`(..., n)`) and covariance `cov`
/// (`(..., n, n)`), of shape `shape + [n]` (`shape` defaults to the
/// broadcast of the batch shapes). `method` is `"cholesky"` (JAX's
/// default), `"eigh"` or `"svd"` (for singular covariances): the factor
/// `F` with `F F^T = cov` multiplies one `normal(key, shape + [n])` draw.
/// `dtype` defaults to `mean`'s float dtype; `mean` and `cov` are
/// converted to it.
///
/// With `eigh` and `svd` the factor's column signs are those of the
/// backend's decomposition, so samples agree with JAX's only where the
/// decompositions do (the distribution is the same either way).
pub fn multivariate_normal(
    key: &Array,
    mean: &Array,
    cov: &Array,
    shape: Option<&[usize]>,
    dtype: Option<DType>,
    method: &str,
) -> Result<Array> {
    check_real("multivariate_normal", "mean", mean)?;
    check_real("multivariate_normal", "cov", cov)?;
    if !matches!(method, "cholesky" | "eigh" | "svd") {
        return Err(Error::InvalidArgument(format!(
            "multivariate_normal: method must be one of 'svd', 'eigh', 'cholesky', got {method:?}"
        )));
    }
    let dtype = dtype.unwrap_or_else(|| {
        let (m, c) = (mean.dtype(), cov.dtype());
        if m == DType::F64 || c == DType::F64 {
            DType::F64
        } else if m.is_float() {
            m
        } else {
            DType::F32
        }
    });
    check_float("multivariate_normal", dtype)?;
    let (mshape, cshape) = (mean.try_shape()?, cov.try_shape()?);
    let Some((&n, mbatch)) = mshape.split_last() else {
        return Err(Error::InvalidArgument(format!(
            "multivariate_normal requires mean.ndim >= 1, got {}",
            fmt_aval(mean.aval())
        )));
    };
    if cshape.len() < 2 || cshape[cshape.len() - 2..] != [n, n] {
        return Err(Error::InvalidArgument(format!(
            "multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got {}",
            fmt_aval(cov.aval())
        )));
    }
    let cbatch = &cshape[..cshape.len() - 2];
    let shape = match shape {
        None => super::support::broadcast_shapes("multivariate_normal", &[mbatch, cbatch])?,
        Some(s) => {
            super::support::check_shape("normal", s, &[mbatch, cbatch])?;
            s.to_vec()
        }
    };
    let mean = lax::convert_element_type(mean, dtype, false)?;
    let cov = lax::convert_element_type(cov, dtype, false)?;
    let factor = match method {
        "svd" => {
            let (u, s, _) = linalg::svd(&cov, true)?;
            jnp::multiply(&u, &lax::sqrt(&lax::expand_dims(&s, &[cbatch.len()])?)?)?
        }
        "eigh" => {
            let (w, v) = linalg::eigh(&cov)?;
            jnp::multiply(&v, &lax::sqrt(&lax::expand_dims(&w, &[cbatch.len()])?)?)?
        }
        _ => linalg::cholesky(&cov)?,
    };
    let vshape: Vec<usize> = shape.iter().copied().chain([n]).collect();
    let z = random::normal(key, &vshape, dtype)?;
    // einsum('...ij,...j->...i', factor, z)
    let mshape2: Vec<usize> = shape.iter().copied().chain([n, n]).collect();
    let factor = broadcast_to(&factor, &mshape2)?;
    let zb = broadcast_to(&lax::expand_dims(&z, &[shape.len()])?, &mshape2)?;
    let fz = jnp::sum(&lax::mul(&factor, &zb)?, -1isize, false)?;
    lax::add(&broadcast_to(&mean, &vshape)?, &fz)
}

/// `jax.random.orthogonal(key, n, shape, dtype, m)`: matrices of shape
/// `shape + [n, m]` (`m` defaults to `n`) with orthonormal columns (or
/// rows when `n < m`), uniform under the Haar measure: the `Q` of a QR
/// factorisation of a normal draw with its columns' signs set so `R`'s
/// diagonal is positive.
pub fn orthogonal(
    key: &Array,
    n: usize,
    shape: &[usize],
    dtype: DType,
    m: Option<usize>,
) -> Result<Array> {
    check_float("orthogonal", dtype)?;
    let m = m.unwrap_or(n);
    let (big, small) = (n.max(m), n.min(m));
    let zshape: Vec<usize> = shape.iter().copied().chain([big, small]).collect();
    let z = random::normal(key, &zshape, dtype)?;
    let (q, r) = linalg::qr(&z, "reduced")?;
    // diag(r): r masked by the identity, summed over rows.
    let eye = jnp::eye(small, None, 0, dtype)?;
    let d = jnp::sum(&jnp::multiply(&r, &eye)?, -2isize, false)?;
    let sign = lax::expand_dims(&lax::sign(&d)?, &[shape.len()])?;
    let x = jnp::multiply(&q, &sign)?;
    if n < m {
        let nd = x.ndim();
        let mut perm: Vec<usize> = (0..nd).collect();
        perm.swap(nd - 2, nd - 1);
        lax::transpose(&x, &perm)
    } else {
        Ok(x)
    }
}

/// `jax.random.generalized_normal(key, p, shape, dtype)`: samples of
/// density proportional to `exp(-|x|^p)`, `r * g^(1/p)` for a Rademacher
/// sign `r` and `g ~ Gamma(1/p)` (keys from one split).
pub fn generalized_normal(key: &Array, p: f64, shape: &[usize], dtype: DType) -> Result<Array> {
    check_gamma_float("generalized_normal", dtype)?;
    let inv_p = lax::div(&fconst(dtype, 1.0), &fconst(dtype, p))?;
    let (k0, k1) = random::split2(key)?;
    let g = gamma(&k0, &inv_p, Some(shape), dtype)?;
    let r = rademacher(&k1, shape, dtype)?;
    lax::mul(&r, &lax::pow(&g, &inv_p)?)
}

/// `jax.random.ball(key, d, p, shape, dtype)`: points uniform in the unit
/// `p`-norm ball of `R^d`, of shape `shape + [d]`: a generalized-normal
/// vector divided by `(sum |g|^p + e)^(1/p)` for an exponential `e`.
pub fn ball(key: &Array, d: usize, p: f64, shape: &[usize], dtype: DType) -> Result<Array> {
    check_gamma_float("ball", dtype)?;
    let (k1, k2) = random::split2(key)?;
    let gshape: Vec<usize> = shape.iter().copied().chain([d]).collect();
    let g = generalized_normal(&k1, p, &gshape, dtype)?;
    let e = random::exponential(&k2, shape, dtype)?;
    let pc = fconst(dtype, p);
    let inv_p = lax::div(&fconst(dtype, 1.0), &pc)?;
    let s = jnp::sum(&lax::pow(&lax::abs(&g)?, &pc)?, -1isize, false)?;
    let norm = lax::pow(&lax::add(&s, &e)?, &inv_p)?;
    jnp::divide(&g, &lax::expand_dims(&norm, &[shape.len()])?)
}
