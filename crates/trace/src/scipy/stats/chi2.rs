//! `jax.scipy.stats.chi2`: the chi-squared distribution with `df`
//! degrees of freedom (`logpdf`, `pdf`, `cdf`, `logcdf`, `sf`, `logsf`).

use super::{exp_of, k, loc_or_0, neg_inf, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{gammainc, gammaincc};

fn args(
    name: &str,
    x: &Array,
    df: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<[Array; 4]> {
    let v = promote(name, &[x, df, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone(), v[3].clone()])
}

/// `chi2.logpdf(x, df, loc=0, scale=1)`: `(df/2 - 1) log(y) - y/2 -
/// lgamma(df/2) - df log(2)/2 - log(scale)`, `-inf` below `loc`.
pub fn logpdf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, df, loc, scale] = args("chi2.logpdf", x, df, loc, scale)?;
    let (one, two) = (k(&x, 1.0)?, k(&x, 2.0)?);
    let y = standardize(&x, &loc, &scale)?;
    let half_df = lax::div(&df, &two)?;
    let kernel = lax::sub(
        &lax::mul(&lax::sub(&half_df, &one)?, &lax::log(&y)?)?,
        &lax::div(&y, &two)?,
    )?;
    let nrml = lax::neg(&lax::add(
        &lax::lgamma(&half_df)?,
        &lax::div(&lax::mul(&lax::log(&two)?, &df)?, &two)?,
    )?)?;
    let lp = lax::add(&lax::sub(&nrml, &lax::log(&scale)?)?, &kernel)?;
    jnp::where_(&lax::lt(&x, &loc)?, &neg_inf(), &lp)
}

exp_of! {
    /// `chi2.pdf(x, df, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `(df / 2, clamp(0, (x - loc) / (2 scale), inf))`.
fn half_args(
    name: &str,
    x: &Array,
    df: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<(Array, Array)> {
    let [x, df, loc, scale] = args(name, x, df, loc, scale)?;
    let two = k(&scale, 2.0)?;
    let y = lax::div(&lax::sub(&x, &loc)?, &lax::mul(&scale, &two)?)?;
    let y = lax::clamp(&k(&x, 0.0)?, &y, &k(&x, f64::INFINITY)?)?;
    Ok((lax::div(&df, &two)?, y))
}

/// `chi2.cdf(x, df, loc=0, scale=1)`: `gammainc(df/2, (x - loc) / (2
/// scale))`, the argument clamped at 0.
pub fn cdf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let (a, y) = half_args("chi2.cdf", x, df, loc, scale)?;
    gammainc(&a, &y)
}

/// `chi2.logcdf(x, df, loc=0, scale=1)`: `log(cdf)`.
pub fn logcdf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    lax::log(&cdf(x, df, loc, scale)?)
}

/// `chi2.sf(x, df, loc=0, scale=1)`: `gammaincc(df/2, (x - loc) / (2
/// scale))`, the argument clamped at 0.
pub fn sf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let (a, y) = half_args("chi2.sf", x, df, loc, scale)?;
    gammaincc(&a, &y)
}

/// `chi2.logsf(x, df, loc=0, scale=1)`: `log(sf)`.
pub fn logsf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    lax::log(&sf(x, df, loc, scale)?)
}
