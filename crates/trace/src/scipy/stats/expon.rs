//! `jax.scipy.stats.expon`: the exponential distribution (`logpdf`,
//! `pdf`, `cdf`, `logcdf`, `sf`, `logsf`, `ppf`).

use super::{exp_of, k, loc_or_0, nan, neg_inf, promote, scale_or_1};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `expon.logpdf(x, loc=0, scale=1)`: `-(x - loc) / scale - log(scale)`,
/// `-inf` below `loc`.
pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("expon.logpdf", x, loc, scale)?;
    let log_scale = lax::log(&scale)?;
    let linear = lax::div(&lax::sub(&x, &loc)?, &scale)?;
    let log_probs = lax::neg(&lax::add(&linear, &log_scale)?)?;
    jnp::where_(&lax::lt(&x, &loc)?, &neg_inf(), &log_probs)
}

exp_of! {
    /// `expon.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `expon.cdf(x, loc=0, scale=1)`: `-expm1((loc - x) / scale)`, 0 below
/// `loc`.
pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("expon.cdf", x, loc, scale)?;
    let neg_scaled = lax::div(&lax::sub(&loc, &x)?, &scale)?;
    jnp::where_(
        &lax::lt(&x, &loc)?,
        &jnp::zeros_like(&neg_scaled)?,
        &lax::neg(&lax::expm1(&neg_scaled)?)?,
    )
}

/// `expon.logsf(x, loc=0, scale=1)`: `(loc - x) / scale`, 0 below `loc`.
pub fn logsf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("expon.sf", x, loc, scale)?;
    let neg_scaled = lax::div(&lax::sub(&loc, &x)?, &scale)?;
    jnp::where_(
        &lax::lt(&x, &loc)?,
        &jnp::zeros_like(&neg_scaled)?,
        &neg_scaled,
    )
}

exp_of! {
    /// `expon.sf(x, loc=0, scale=1)`: `exp(logsf)`.
    sf = logsf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `expon.logcdf(x, loc=0, scale=1)`: `log1p(-sf)`.
pub fn logcdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    lax::log1p(&lax::neg(&sf(x, loc, scale)?)?)
}

/// `expon.ppf(q, loc=0, scale=1)`: `loc - scale log1p(-q)`, NaN outside
/// `[0, 1]`.
pub fn ppf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, loc, scale] = args("expon.ppf", q, loc, scale)?;
    let bad = jnp::logical_or(
        &jnp::logical_or(&jnp::isnan(&q)?, &lax::lt(&q, &k(&q, 0.0)?)?)?,
        &lax::gt(&q, &k(&q, 1.0)?)?,
    )?;
    let v = lax::sub(&loc, &lax::mul(&scale, &lax::log1p(&lax::neg(&q)?)?)?)?;
    jnp::where_(&bad, &nan(), &v)
}
