//! `jax.scipy.stats.cauchy`: the Cauchy distribution (`logpdf`, `pdf`,
//! `cdf`, `logcdf`, `sf`, `logsf`, `ppf`, `isf`).

use super::{exp_of, k, loc_or_0, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use std::f64::consts::PI;

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `cauchy.logpdf(x, loc=0, scale=1)`: `-(log(pi scale) + log1p(y^2))`
/// with `y = (x - loc) / scale`.
pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("cauchy.logpdf", x, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let normalize = lax::log(&lax::mul(&k(&x, PI)?, &scale)?)?;
    lax::neg(&lax::add(&normalize, &lax::log1p(&lax::mul(&y, &y)?)?)?)
}

exp_of! {
    /// `cauchy.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `cauchy.cdf(x, loc=0, scale=1)`: `1/2 + atan(y) / pi`.
pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("cauchy.cdf", x, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let inv_pi = lax::div(&k(&x, 1.0)?, &k(&x, PI)?)?;
    lax::add(&k(&x, 0.5)?, &lax::mul(&inv_pi, &lax::atan(&y)?)?)
}

/// `cauchy.logcdf(x, loc=0, scale=1)`: `log(cdf)`.
pub fn logcdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    lax::log(&cdf(x, loc, scale)?)
}

/// `cauchy.sf(x, loc=0, scale=1)`: `cdf(-x, -loc, scale)`.
pub fn sf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("cauchy.sf", x, loc, scale)?;
    cdf(&lax::neg(&x)?, Some(&lax::neg(&loc)?), Some(&scale))
}

/// `cauchy.logsf(x, loc=0, scale=1)`: `logcdf(-x, -loc, scale)`.
pub fn logsf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("cauchy.logsf", x, loc, scale)?;
    logcdf(&lax::neg(&x)?, Some(&lax::neg(&loc)?), Some(&scale))
}

/// `cauchy.ppf(q, loc=0, scale=1)`: `tan(pi q - pi / 2) scale + loc`.
pub fn ppf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, loc, scale] = args("cauchy.ppf", q, loc, scale)?;
    let u = lax::tan(&lax::sub(&lax::mul(&k(&q, PI)?, &q)?, &k(&q, PI / 2.0)?)?)?;
    lax::add(&lax::mul(&u, &scale)?, &loc)
}

/// `cauchy.isf(q, loc=0, scale=1)`: `tan(pi / 2 - pi q) scale + loc`.
pub fn isf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, loc, scale] = args("cauchy.isf", q, loc, scale)?;
    let u = lax::tan(&lax::sub(&k(&q, PI / 2.0)?, &lax::mul(&k(&q, PI)?, &q)?)?)?;
    lax::add(&lax::mul(&u, &scale)?, &loc)
}
