//! `jax.scipy.stats.gumbel_r` and `gumbel_l`: the right- and left-skewed
//! Gumbel distributions (`logpdf`, `pdf`, `logcdf`, `cdf`, `logsf`, `sf`,
//! `ppf`), NaN where `scale <= 0`.

use super::{k, loc_or_0, nan, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{xlog1py, xlogy};

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `v` where `scale > 0`, else NaN.
fn where_scale_ok(scale: &Array, v: &Array) -> Result<Array> {
    jnp::where_(&lax::gt(scale, &k(scale, 0.0)?)?, v, &nan())
}

/// `v` where `0 < p < 1`, else NaN.
fn where_p_ok(p: &Array, v: &Array) -> Result<Array> {
    let ok = lax::bitwise_and(&lax::gt(p, &k(p, 0.0)?)?, &lax::lt(p, &k(p, 1.0)?)?)?;
    jnp::where_(&ok, v, &nan())
}

/// `jax.nn.log1mexp(x)`: `log(1 - exp(-x))`, through `expm1` below
/// `log 2` and `log1p` above.
fn log1mexp(x: &Array) -> Result<Array> {
    let small = lax::log(&lax::neg(&lax::expm1(&lax::neg(x)?)?)?)?;
    let large = lax::log1p(&lax::neg(&lax::exp(&lax::neg(x)?)?)?)?;
    jnp::where_(&lax::lt(x, &k(x, 2f64.ln())?)?, &small, &large)
}

/// The right-skewed Gumbel distribution (`jax.scipy.stats.gumbel_r`).
pub mod gumbel_r {
    use super::*;

    /// `gumbel_r.logpdf(x, loc=0, scale=1)`: `-log(scale) - (z + exp(-z))`.
    pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_r.logpdf", x, loc, scale)?;
        let z = standardize(&x, &loc, &scale)?;
        let neg_log_scale = xlogy(&Array::weak(-1), &scale)?;
        let t2 = lax::neg(&lax::add(&z, &lax::exp(&lax::neg(&z)?)?)?)?;
        where_scale_ok(&scale, &lax::add(&neg_log_scale, &t2)?)
    }

    /// `gumbel_r.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pub fn pdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        lax::exp(&logpdf(x, loc, scale)?)
    }

    /// `gumbel_r.logcdf(x, loc=0, scale=1)`: `-exp(-z)`.
    pub fn logcdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_r.logcdf", x, loc, scale)?;
        let z = standardize(&x, &loc, &scale)?;
        where_scale_ok(&scale, &lax::neg(&lax::exp(&lax::neg(&z)?)?)?)
    }

    /// `gumbel_r.cdf(x, loc=0, scale=1)`: `exp(logcdf)`.
    pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        lax::exp(&logcdf(x, loc, scale)?)
    }

    /// `gumbel_r.ppf(p, loc=0, scale=1)`: `loc - scale log(-log p)`, NaN
    /// outside `(0, 1)`.
    pub fn ppf(p: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [p, loc, scale] = args("gumbel_r.ppf", p, loc, scale)?;
        let t1 = xlogy(&Array::weak(-1), &p)?;
        let q = lax::sub(&loc, &lax::mul(&scale, &lax::log(&t1)?)?)?;
        where_p_ok(&p, &q)
    }

    /// `gumbel_r.sf(x, loc=0, scale=1)`: `1 - exp(-exp(-z))`.
    pub fn sf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_r.sf", x, loc, scale)?;
        let neg_z = lax::div(&lax::sub(&loc, &x)?, &scale)?;
        let t1 = lax::exp(&lax::neg(&lax::exp(&neg_z)?)?)?;
        where_scale_ok(&scale, &lax::sub(&k(&x, 1.0)?, &t1)?)
    }

    /// `gumbel_r.logsf(x, loc=0, scale=1)`: `log1mexp(exp(-z))`.
    pub fn logsf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_r.logsf", x, loc, scale)?;
        let neg_z = lax::div(&lax::sub(&loc, &x)?, &scale)?;
        where_scale_ok(&scale, &log1mexp(&lax::exp(&neg_z)?)?)
    }
}

/// The left-skewed Gumbel distribution (`jax.scipy.stats.gumbel_l`).
pub mod gumbel_l {
    use super::*;

    /// `gumbel_l.logpdf(x, loc=0, scale=1)`: `-log(scale) + z - exp(z)`.
    pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_l.logpdf", x, loc, scale)?;
        let z = standardize(&x, &loc, &scale)?;
        let neg_log_scale = xlogy(&Array::weak(-1), &scale)?;
        let t2 = lax::sub(&z, &lax::exp(&z)?)?;
        where_scale_ok(&scale, &lax::add(&neg_log_scale, &t2)?)
    }

    /// `gumbel_l.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pub fn pdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        lax::exp(&logpdf(x, loc, scale)?)
    }

    /// `gumbel_l.logcdf(x, loc=0, scale=1)`: `log(-expm1(-exp(z)))`.
    pub fn logcdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_l.logcdf", x, loc, scale)?;
        let z = standardize(&x, &loc, &scale)?;
        let neg_exp_z = lax::neg(&lax::exp(&z)?)?;
        where_scale_ok(&scale, &lax::log(&lax::neg(&lax::expm1(&neg_exp_z)?)?)?)
    }

    /// `gumbel_l.cdf(x, loc=0, scale=1)`: `exp(logcdf)`.
    pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        lax::exp(&logcdf(x, loc, scale)?)
    }

    /// `gumbel_l.ppf(p, loc=0, scale=1)`: `loc + scale log(-log1p(-p))`,
    /// NaN outside `(0, 1)`.
    pub fn ppf(p: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [p, loc, scale] = args("gumbel_l.ppf", p, loc, scale)?;
        let t1 = xlog1py(&Array::weak(-1), &lax::neg(&p)?)?;
        let q = lax::add(&loc, &lax::mul(&scale, &lax::log(&t1)?)?)?;
        where_p_ok(&p, &q)
    }

    /// `gumbel_l.logsf(x, loc=0, scale=1)`: `-exp(z)`.
    pub fn logsf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        let [x, loc, scale] = args("gumbel_l.logsf", x, loc, scale)?;
        let z = standardize(&x, &loc, &scale)?;
        where_scale_ok(&scale, &lax::neg(&lax::exp(&z)?)?)
    }

    /// `gumbel_l.sf(x, loc=0, scale=1)`: `exp(logsf)`.
    pub fn sf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
        lax::exp(&logsf(x, loc, scale)?)
    }
}
