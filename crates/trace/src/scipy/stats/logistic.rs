//! `jax.scipy.stats.logistic`: the logistic distribution (`logpdf`,
//! `pdf`, `cdf`, `sf`, `ppf`, `isf`).

use super::{exp_of, k, loc_or_0, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::scipy::special::{expit, logit};

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `jnp.logaddexp(a, b)`'s body: `max(a, b) + log1p(exp(-|a - b|))`
/// (`a + b` where `a - b` is NaN).
fn logaddexp(a: &Array, b: &Array) -> Result<Array> {
    let amax = lax::max(a, b)?;
    let delta = lax::sub(a, b)?;
    let is_nan = lax::ne(&delta, &delta)?;
    let sum = lax::add(a, b)?;
    let tail = lax::log1p(&lax::exp(&lax::neg(&lax::abs(&delta)?)?)?)?;
    lax::select_n(&is_nan, &[lax::add(&amax, &tail)?, sum])
}

/// `logistic.logpdf(x, loc=0, scale=1)`: with `y = (x - loc) / scale`,
/// `-2 logaddexp(y / 2, -y / 2) - log(scale)`.
pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("logistic.logpdf", x, loc, scale)?;
    let y = standardize(&x, &loc, &scale)?;
    let two = k(&y, 2.0)?;
    let half = lax::div(&y, &two)?;
    let lae = logaddexp(&half, &lax::neg(&half)?)?;
    lax::sub(&lax::mul(&lax::neg(&two)?, &lae)?, &lax::log(&scale)?)
}

exp_of! {
    /// `logistic.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `logistic.cdf(x, loc=0, scale=1)`: `expit((x - loc) / scale)`.
pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("logistic.cdf", x, loc, scale)?;
    expit(&standardize(&x, &loc, &scale)?)
}

/// `logistic.sf(x, loc=0, scale=1)`: `expit(-(x - loc) / scale)`.
pub fn sf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("logistic.sf", x, loc, scale)?;
    expit(&lax::neg(&standardize(&x, &loc, &scale)?)?)
}

/// `logistic.ppf(q, loc=0, scale=1)`: `logit(q) scale + loc`.
pub fn ppf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, loc, scale] = args("logistic.ppf", q, loc, scale)?;
    lax::add(&lax::mul(&logit(&q)?, &scale)?, &loc)
}

/// `logistic.isf(q, loc=0, scale=1)`: `-logit(q) scale + loc`.
pub fn isf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, loc, scale] = args("logistic.isf", q, loc, scale)?;
    lax::add(&lax::mul(&lax::neg(&logit(&q)?)?, &scale)?, &loc)
}
