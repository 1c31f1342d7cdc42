//! `jax.scipy.stats.gamma`: the gamma distribution with shape `a`
//! (`logpdf`, `pdf`, `cdf`, `logcdf`, `sf`, `logsf`), through `xlogy`,
//! `gammaln` and the regularized incomplete gamma functions.

use super::{exp_of, k, loc_or_0, neg_inf, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{gammainc, gammaincc, gammaln, xlogy};

fn args(
    name: &str,
    x: &Array,
    a: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<[Array; 4]> {
    let v = promote(name, &[x, a, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone(), v[3].clone()])
}

/// `gamma.logpdf(x, a, loc=0, scale=1)`: `xlogy(a - 1, y) - y -
/// gammaln(a) - log(scale)`, `-inf` below `loc`.
pub fn logpdf(x: &Array, a: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, a, loc, scale] = args("gamma.logpdf", x, a, loc, scale)?;
    let ok = lax::ge(&x, &loc)?;
    let one = k(&x, 1.0)?;
    let y = jnp::where_(&ok, &standardize(&x, &loc, &scale)?, &one)?;
    let linear = lax::sub(&xlogy(&lax::sub(&a, &one)?, &y)?, &y)?;
    let shape_terms = lax::add(&gammaln(&a)?, &lax::log(&scale)?)?;
    jnp::where_(&ok, &lax::sub(&linear, &shape_terms)?, &neg_inf())
}

exp_of! {
    /// `gamma.pdf(x, a, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, a: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `gamma.cdf(x, a, loc=0, scale=1)`: `gammainc(a, clamp(0, y, inf))`.
pub fn cdf(x: &Array, a: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, a, loc, scale] = args("gamma.cdf", x, a, loc, scale)?;
    let y = lax::clamp(
        &k(&x, 0.0)?,
        &standardize(&x, &loc, &scale)?,
        &k(&x, f64::INFINITY)?,
    )?;
    gammainc(&a, &y)
}

/// `gamma.logcdf(x, a, loc=0, scale=1)`: `log(cdf)`.
pub fn logcdf(x: &Array, a: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    lax::log(&cdf(x, a, loc, scale)?)
}

/// `gamma.sf(x, a, loc=0, scale=1)`: `gammaincc(a, y)`, 1 below `loc`.
pub fn sf(x: &Array, a: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, a, loc, scale] = args("gamma.sf", x, a, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    jnp::where_(
        &lax::lt(&y, &k(&y, 0.0)?)?,
        &Array::weak(1),
        &gammaincc(&a, &y)?,
    )
}

/// `gamma.logsf(x, a, loc=0, scale=1)`: `log(sf)`.
pub fn logsf(x: &Array, a: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    lax::log(&sf(x, a, loc, scale)?)
}
