//! `jax.scipy.stats.laplace`: the Laplace distribution (`logpdf`, `pdf`,
//! `cdf`).

use super::{exp_of, k, loc_or_0, promote, scale_or_1};
use crate::array::Array;
use crate::error::Result;
use crate::lax;

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `laplace.logpdf(x, loc=0, scale=1)`: `-(|x - loc| / scale + log(2 scale))`.
pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("laplace.logpdf", x, loc, scale)?;
    let linear = lax::div(&lax::abs(&lax::sub(&x, &loc)?)?, &scale)?;
    lax::neg(&lax::add(
        &linear,
        &lax::log(&lax::mul(&k(&x, 2.0)?, &scale)?)?,
    )?)
}

exp_of! {
    /// `laplace.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `laplace.cdf(x, loc=0, scale=1)`: `exp(d) / 2` for `d = (x - loc) /
/// scale <= 0`, else `1 - exp(-d) / 2`.
pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("laplace.cdf", x, loc, scale)?;
    let half = k(&x, 0.5)?;
    let diff = lax::div(&lax::sub(&x, &loc)?, &scale)?;
    let lower = lax::mul(&half, &lax::exp(&diff)?)?;
    let upper = lax::sub(
        &k(&x, 1.0)?,
        &lax::mul(&half, &lax::exp(&lax::neg(&diff)?)?)?,
    )?;
    lax::select_n(&lax::le(&diff, &k(&x, 0.0)?)?, &[upper, lower])
}
