//! `jax.scipy.stats.norm`: the normal distribution (`logpdf`, `pdf`,
//! `cdf`, `logcdf`, `sf`, `logsf`, `ppf`, `isf`), through
//! `scipy::special`'s `ndtr`, `log_ndtr` and `ndtri`.

use super::{exp_of, k, loc_or_0, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special;

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `norm.logpdf(x, loc=0, scale=1)`:
/// `(log(2 pi scale^2) + (x - loc)^2 / scale^2) / -2`, as JAX stages it.
pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("norm.logpdf", x, loc, scale)?;
    let s2 = lax::square(&scale)?;
    let log_normalizer = lax::log(&lax::mul(&k(&x, 2.0 * std::f64::consts::PI)?, &s2)?)?;
    let quadratic = lax::div(&lax::square(&lax::sub(&x, &loc)?)?, &s2)?;
    lax::div(&lax::add(&log_normalizer, &quadratic)?, &k(&x, -2.0)?)
}

exp_of! {
    /// `norm.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `norm.cdf(x, loc=0, scale=1)`: `ndtr((x - loc) / scale)`.
pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("norm.cdf", x, loc, scale)?;
    special::ndtr(&standardize(&x, &loc, &scale)?)
}

/// `norm.logcdf(x, loc=0, scale=1)`: `log_ndtr((x - loc) / scale)`.
pub fn logcdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("norm.logcdf", x, loc, scale)?;
    special::log_ndtr(&standardize(&x, &loc, &scale)?)
}

/// `norm.sf(x, loc=0, scale=1)`: `cdf(-x, -loc, scale)`.
pub fn sf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("norm.sf", x, loc, scale)?;
    cdf(&lax::neg(&x)?, Some(&lax::neg(&loc)?), Some(&scale))
}

/// `norm.logsf(x, loc=0, scale=1)`: `logcdf(-x, -loc, scale)`.
pub fn logsf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("norm.logsf", x, loc, scale)?;
    logcdf(&lax::neg(&x)?, Some(&lax::neg(&loc)?), Some(&scale))
}

/// `norm.ppf(q, loc=0, scale=1)`: `ndtri(q) * scale + loc`. As in JAX,
/// `q` is not promoted: an integer `q` is an error.
pub fn ppf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let z = special::ndtri(q)?;
    let y = jnp::add(&jnp::multiply(&z, &scale_or_1(scale))?, &loc_or_0(loc))?;
    // `jnp.asarray(.., float)`: the result is a (strong) float array.
    let dt = crate::numpy::promote::float_dtype_of(y.dtype());
    lax::convert_element_type(&y, dt, false)
}

/// `norm.isf(q, loc=0, scale=1)`: `ppf(1 - q, loc, scale)`.
pub fn isf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    ppf(&lax::sub(&k(q, 1.0)?, q)?, loc, scale)
}
