//! `jax.scipy.stats.pareto`: the Pareto distribution with shape `b`
//! (`logpdf`, `pdf`, `cdf`, `logcdf`, `sf`, `logsf`, `ppf`).

use super::{exp_of, k, loc_or_0, nan, neg_inf, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;

fn args(
    name: &str,
    x: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<[Array; 4]> {
    let v = promote(name, &[x, b, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone(), v[3].clone()])
}

/// `pareto.logpdf(x, b, loc=0, scale=1)`: `-(log(scale / b) + (b + 1)
/// log(y))`, `-inf` below `loc + scale`.
pub fn logpdf(x: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, b, loc, scale] = args("pareto.logpdf", x, b, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let normalize = lax::log(&lax::div(&scale, &b)?)?;
    let lp = lax::neg(&lax::add(
        &normalize,
        &lax::mul(&lax::add(&b, &k(&x, 1.0)?)?, &lax::log(&y)?)?,
    )?)?;
    jnp::where_(&lax::lt(&x, &lax::add(&loc, &scale)?)?, &neg_inf(), &lp)
}

exp_of! {
    /// `pareto.pdf(x, b, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `pareto.cdf(x, b, loc=0, scale=1)`: `1 - y^-b`, 0 below `loc + scale`.
pub fn cdf(x: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, b, loc, scale] = args("pareto.cdf", x, b, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let v = lax::sub(&k(&x, 1.0)?, &lax::pow(&y, &lax::neg(&b)?)?)?;
    jnp::where_(&lax::lt(&x, &lax::add(&loc, &scale)?)?, &k(&x, 0.0)?, &v)
}

/// `pareto.logcdf(x, b, loc=0, scale=1)`: `log1p(-y^-b)`, `-inf` below
/// `loc + scale`.
pub fn logcdf(x: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, b, loc, scale] = args("pareto.logcdf", x, b, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let v = lax::log1p(&lax::neg(&lax::pow(&y, &lax::neg(&b)?)?)?)?;
    jnp::where_(&lax::lt(&x, &lax::add(&loc, &scale)?)?, &neg_inf(), &v)
}

/// `pareto.logsf(x, b, loc=0, scale=1)`: `-b log(y)`, 0 below
/// `loc + scale`.
pub fn logsf(x: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, b, loc, scale] = args("pareto.logsf", x, b, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let v = lax::neg(&lax::mul(&b, &lax::log(&y)?)?)?;
    jnp::where_(&lax::lt(&x, &lax::add(&loc, &scale)?)?, &k(&x, 0.0)?, &v)
}

exp_of! {
    /// `pareto.sf(x, b, loc=0, scale=1)`: `exp(logsf)`.
    sf = logsf(x: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `pareto.ppf(q, b, loc=0, scale=1)`: `loc + scale (1 - q)^(-1/b)`, NaN
/// outside `[0, 1]`.
pub fn ppf(q: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, b, loc, scale] = args("pareto.ppf", q, b, loc, scale)?;
    let one = k(&q, 1.0)?;
    let p = lax::pow(&lax::sub(&one, &q)?, &lax::neg(&lax::div(&one, &b)?)?)?;
    let v = lax::add(&loc, &lax::mul(&scale, &p)?)?;
    let bad = jnp::logical_or(
        &jnp::logical_or(&jnp::isnan(&q)?, &lax::lt(&q, &k(&q, 0.0)?)?)?,
        &lax::gt(&q, &one)?,
    )?;
    jnp::where_(&bad, &nan(), &v)
}
