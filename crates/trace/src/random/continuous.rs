//! Real-valued samplers that transform uniform or normal draws: `cauchy`,
//! `pareto`, `weibull_min`, `maxwell` and `double_sided_maxwell`, each the
//! op sequence of JAX 0.10.2's function (bit-exact up to the backend's
//! rounding of `tan`, `log1p`, `exp`, `pow` and `erf_inv`).

use super::discrete::rademacher;
use super::support::{
    broadcast_shapes, check_float, check_real, eps, fconst, param, resolve_shape,
};
use crate::array::Array;
use crate::error::Result;
use crate::numpy as jnp;
use crate::{lax, random};
use jaxon_ir::DType;

/// `jax.random.cauchy(key, shape, dtype)`: standard Cauchy samples,
/// `tan(pi (u - 1/2))` for `u` uniform in `[eps, 1)`.
pub fn cauchy(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    check_float("cauchy", dtype)?;
    let u = random::uniform(
        key,
        shape,
        dtype,
        &fconst(dtype, eps(dtype)),
        &fconst(dtype, 1.0),
    )?;
    let pi = fconst(dtype, std::f64::consts::PI);
    lax::tan(&lax::mul(&pi, &lax::sub(&u, &fconst(dtype, 0.5))?)?)
}

/// `jax.random.pareto(key, b, shape, dtype)`: Pareto samples of shape
/// parameter `b` (broadcast to `shape`, default its shape), `exp(e / b)`
/// for a standard exponential `e`.
pub fn pareto(key: &Array, b: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    check_float("pareto", dtype)?;
    check_real("pareto", "b", b)?;
    let shape = resolve_shape("pareto", shape, &[b])?;
    let b = param(b, dtype, &shape)?;
    let e = random::exponential(key, &shape, dtype)?;
    lax::exp(&lax::div(&e, &b)?)
}

/// `jax.random.weibull_min(key, scale, concentration, shape, dtype)`:
/// Weibull samples by the inverse CDF,
/// `(-log1p(-u)) ** (1 / concentration) * scale`; the parameters
/// broadcast to `shape`.
pub fn weibull_min(
    key: &Array,
    scale: &Array,
    concentration: &Array,
    shape: &[usize],
    dtype: DType,
) -> Result<Array> {
    check_float("weibull_min", dtype)?;
    check_real("weibull_min", "scale", scale)?;
    check_real("weibull_min", "concentration", concentration)?;
    let u = random::uniform(key, shape, dtype, &fconst(dtype, 0.0), &fconst(dtype, 1.0))?;
    let scale = param(scale, dtype, shape)?;
    let conc = param(concentration, dtype, shape)?;
    let inv = lax::div(&fconst(dtype, 1.0), &conc)?;
    let x = lax::neg(&lax::log1p(&lax::neg(&u)?)?)?;
    lax::mul(&lax::pow(&x, &inv)?, &scale)
}

/// `jax.random.maxwell(key, shape, dtype)`: Maxwell samples, the norms of
/// standard normal 3-vectors (the trailing axis of a `shape + [3]` draw).
pub fn maxwell(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    check_float("maxwell", dtype)?;
    let full: Vec<usize> = shape.iter().copied().chain([3]).collect();
    let n = random::normal(key, &full, dtype)?;
    let sq = jnp::sum(&lax::mul(&n, &n)?, -1isize, false)?;
    lax::sqrt(&sq)
}

/// `jax.random.double_sided_maxwell(key, loc, scale, shape, dtype)`:
/// symmetric Maxwell samples `sign * maxwell * scale + loc`, the sign
/// Rademacher. As in JAX the result's shape is `shape` followed by the
/// broadcast shape of `loc` and `scale` (an empty `shape` means just the
/// latter).
pub fn double_sided_maxwell(
    key: &Array,
    loc: &Array,
    scale: &Array,
    shape: &[usize],
    dtype: DType,
) -> Result<Array> {
    check_float("double_sided_maxwell", dtype)?;
    check_real("double_sided_maxwell", "loc", loc)?;
    check_real("double_sided_maxwell", "scale", scale)?;
    let params = broadcast_shapes(
        "double_sided_maxwell",
        &[&loc.try_shape()?, &scale.try_shape()?],
    )?;
    let base = if shape.is_empty() { &params[..] } else { shape };
    let full: Vec<usize> = base.iter().chain(&params).copied().collect();
    let (maxwell_key, rademacher_key) = random::split2(key)?;
    let m = maxwell(&maxwell_key, &full, dtype)?;
    let sign = rademacher(&rademacher_key, &full, dtype)?;
    let scale = param(scale, dtype, &full)?;
    let loc = param(loc, dtype, &full)?;
    lax::add(&lax::mul(&lax::mul(&sign, &m)?, &scale)?, &loc)
}
