//! The gamma family: `gamma` and `loggamma` (the `random_gamma` primitive:
//! Marsaglia-Tsang rejection per element, with JAX's implicit
//! reparameterisation gradient in `a`) and the samplers JAX builds on them:
//! `beta`, `dirichlet`, `chisquare`, `f` and `t`, each the op sequence of
//! JAX 0.10.2's function (key splits in the same order).

use super::support::{check_gamma_float, check_real, check_shape, fconst, param, resolve_shape};
use super::threefry::key_halves;
use super::typed::wrap_key_data;
use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use crate::lax;
use crate::random;
use jaxon_ir::primitive::RandomGammaParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// JAX's `_gamma`: `a` converted to `dtype` and broadcast to `shape`
/// (default `a`'s shape), then one `random_gamma` sample per element.
fn gamma_impl(
    op: &str,
    key: &Array,
    a: &Array,
    shape: Option<&[usize]>,
    dtype: DType,
    log_space: bool,
) -> Result<Array> {
    check_gamma_float(op, dtype)?;
    check_real(op, "a", a)?;
    key_halves(key, op)?;
    let shape = resolve_shape(op, shape, &[a])?;
    let a = param(a, dtype, &shape)?;
    let k = wrap_key_data(key)?;
    bind1(&RandomGammaParams { log_space }.into(), &[k, a])
}

/// `jax.random.gamma(key, a, shape, dtype)`: Gamma(`a`, 1) samples of
/// `shape` (default `a`'s shape; `a` broadcasts to it) and float `dtype`
/// (`f32` or `f64`). Differentiable in `a` (implicit reparameterisation).
pub fn gamma(key: &Array, a: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    gamma_impl("gamma", key, a, shape, dtype, false)
}

/// `jax.random.loggamma(key, a, shape, dtype)`: the logs of Gamma(`a`, 1)
/// samples, computed in log space (accurate for small `a`, where the
/// samples underflow).
pub fn loggamma(key: &Array, a: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    gamma_impl("loggamma", key, a, shape, dtype, true)
}

/// `jax.random.beta(key, a, b, shape, dtype)`: Beta(`a`, `b`) samples as
/// `G_a / (G_a + G_b)` of two log-space gamma samples (keys from one
/// split), rescaled by their maximum so small parameters do not underflow.
pub fn beta(
    key: &Array,
    a: &Array,
    b: &Array,
    shape: Option<&[usize]>,
    dtype: DType,
) -> Result<Array> {
    check_gamma_float("beta", dtype)?;
    check_real("beta", "a", a)?;
    check_real("beta", "b", b)?;
    let shape = resolve_shape("beta", shape, &[a, b])?;
    let a = param(a, dtype, &shape)?;
    let b = param(b, dtype, &shape)?;
    let (key_a, key_b) = random::split2(key)?;
    let log_a = loggamma(&key_a, &a, Some(&shape), dtype)?;
    let log_b = loggamma(&key_b, &b, Some(&shape), dtype)?;
    let log_max = lax::max(&log_a, &log_b)?;
    let ga = lax::exp(&lax::sub(&log_a, &log_max)?)?;
    let gb = lax::exp(&lax::sub(&log_b, &log_max)?)?;
    lax::div(&ga, &lax::add(&ga, &gb)?)
}

/// `jax.random.dirichlet(key, alpha, shape, dtype)`: Dirichlet samples of
/// shape `shape + [k]` (default `alpha`'s shape) for concentrations
/// `alpha` of shape `(..., k)`: the softmax of log-space gamma samples.
pub fn dirichlet(
    key: &Array,
    alpha: &Array,
    shape: Option<&[usize]>,
    dtype: DType,
) -> Result<Array> {
    check_gamma_float("dirichlet", dtype)?;
    check_real("dirichlet", "alpha", alpha)?;
    let ashape = alpha.try_shape()?;
    let Some((&k, batch)) = ashape.split_last() else {
        return Err(Error::InvalidArgument(format!(
            "dirichlet requires alpha.ndim >= 1, got {}",
            fmt_aval(alpha.aval())
        )));
    };
    let shape = match shape {
        None => batch.to_vec(),
        Some(s) => {
            check_shape("dirichlet", s, &[batch])?;
            s.to_vec()
        }
    };
    let alpha = lax::convert_element_type(alpha, dtype, false)?;
    let full: Vec<usize> = shape.iter().copied().chain([k]).collect();
    let log_g = loggamma(key, &alpha, Some(&full), dtype)?;
    crate::nn::softmax(&log_g, -1isize)
}

/// `jax.random.chisquare(key, df, shape, dtype)`: chi-square samples with
/// `df` degrees of freedom, `2 exp(loggamma(df / 2))`.
pub fn chisquare(key: &Array, df: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    check_gamma_float("chisquare", dtype)?;
    check_real("chisquare", "df", df)?;
    let shape = resolve_shape("chisquare", shape, &[df])?;
    let df = lax::convert_element_type(df, dtype, false)?;
    let two = fconst(dtype, 2.0);
    let half_df = lax::div(&df, &two)?;
    let log_g = loggamma(key, &half_df, Some(&shape), dtype)?;
    lax::mul(&lax::exp(&log_g)?, &two)
}

/// `jax.random.f(key, dfnum, dfden, shape, dtype)`: F-distribution
/// samples, the ratio of two chi-squares each divided by its degrees of
/// freedom (the denominator's key is the split's first).
pub fn f(
    key: &Array,
    dfnum: &Array,
    dfden: &Array,
    shape: Option<&[usize]>,
    dtype: DType,
) -> Result<Array> {
    check_gamma_float("f", dtype)?;
    check_real("f", "dfnum", dfnum)?;
    check_real("f", "dfden", dfden)?;
    let shape = resolve_shape("f", shape, &[dfnum, dfden])?;
    let dfden = param(dfden, dtype, &shape)?;
    let dfnum = param(dfnum, dtype, &shape)?;
    let (key_dfd, key_dfn) = random::split2(key)?;
    let chi2_dfn = chisquare(&key_dfn, &dfnum, Some(&shape), dtype)?;
    let chi2_dfd = chisquare(&key_dfd, &dfden, Some(&shape), dtype)?;
    let num = lax::div(&chi2_dfn, &dfnum)?;
    let den = lax::div(&chi2_dfd, &dfden)?;
    lax::div(&num, &den)
}

/// `jax.random.t(key, df, shape, dtype)`: Student's t samples,
/// `n * sqrt(df / 2 / g)` for a normal `n` and `g ~ Gamma(df / 2)`.
pub fn t(key: &Array, df: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    check_gamma_float("t", dtype)?;
    check_real("t", "df", df)?;
    let shape = resolve_shape("t", shape, &[df])?;
    let df = param(df, dtype, &shape)?;
    let (key_n, key_g) = random::split2(key)?;
    let n = random::normal(&key_n, &shape, dtype)?;
    let half_df = lax::div(&df, &fconst(dtype, 2.0))?;
    let g = gamma(&key_g, &half_df, Some(&shape), dtype)?;
    lax::mul(&n, &lax::sqrt(&lax::div(&half_df, &g)?)?)
}
