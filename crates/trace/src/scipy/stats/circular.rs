//! `jax.scipy.stats.wrapcauchy` (the wrapped Cauchy distribution on
//! `[0, 2 pi]`, `logpdf` and `pdf`) and `gennorm` (the generalized normal
//! distribution with shape `beta`: `logpdf`, `pdf`, `cdf`).

use super::{k, nan, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use std::f64::consts::PI;

/// The wrapped Cauchy distribution (`jax.scipy.stats.wrapcauchy`).
pub mod wrapcauchy {
    use super::*;

    /// `wrapcauchy.logpdf(x, c)`: `log(1 - c^2) - log(2 pi) - log(1 + c^2 -
    /// 2 c cos x)` on `[0, 2 pi]` (`-inf` outside), NaN unless `0 < c < 1`.
    pub fn logpdf(x: &Array, c: &Array) -> Result<Array> {
        let v = promote("wrapcauchy.logpdf", &[x, c])?;
        let (x, c) = (&v[0], &v[1]);
        let one = Array::weak(1);
        let cc = jnp::multiply(c, c)?;
        let t1 = jnp::log(&jnp::subtract(&one, &cc)?)?;
        let t2 = lax::log(&k(x, 2.0 * PI)?)?;
        let two_c_cos = jnp::multiply(&jnp::multiply(&Array::weak(2), c)?, &jnp::cos(x)?)?;
        let t3 = jnp::log(&jnp::subtract(&jnp::add(&one, &cc)?, &two_c_cos)?)?;
        let lp = jnp::subtract(&jnp::subtract(&t1, &t2)?, &t3)?;
        let inside = lax::bitwise_and(&lax::ge(x, &k(x, 0.0)?)?, &lax::le(x, &k(x, PI * 2.0)?)?)?;
        let r = jnp::where_(&inside, &lp, &neg_inf())?;
        let c_ok = lax::bitwise_and(&lax::gt(c, &k(c, 0.0)?)?, &lax::lt(c, &k(c, 1.0)?)?)?;
        jnp::where_(&c_ok, &r, &nan())
    }

    /// `wrapcauchy.pdf(x, c)`: `exp(logpdf)`.
    pub fn pdf(x: &Array, c: &Array) -> Result<Array> {
        lax::exp(&logpdf(x, c)?)
    }
}

/// The generalized normal distribution (`jax.scipy.stats.gennorm`).
pub mod gennorm {
    use super::*;

    /// `gennorm.logpdf(x, beta)`: `log(beta / 2) - lgamma(1 / beta) -
    /// |x|^beta`.
    pub fn logpdf(x: &Array, beta: &Array) -> Result<Array> {
        let v = promote("gennorm.logpdf", &[x, beta])?;
        let (x, beta) = (&v[0], &v[1]);
        let a = lax::log(&lax::mul(&k(beta, 0.5)?, beta)?)?;
        let b = lax::lgamma(&lax::div(&k(beta, 1.0)?, beta)?)?;
        let c = lax::pow(&lax::abs(x)?, beta)?;
        lax::sub(&lax::sub(&a, &b)?, &c)
    }

    /// `gennorm.pdf(x, beta)`: `exp(logpdf)`.
    pub fn pdf(x: &Array, beta: &Array) -> Result<Array> {
        lax::exp(&logpdf(x, beta)?)
    }

    /// `gennorm.cdf(x, beta)`: `(1 + sign(x) igamma(1 / beta, |x|^beta)) /
    /// 2`.
    pub fn cdf(x: &Array, beta: &Array) -> Result<Array> {
        let v = promote("gennorm.cdf", &[x, beta])?;
        let (x, beta) = (&v[0], &v[1]);
        let g = lax::igamma(
            &lax::div(&k(beta, 1.0)?, beta)?,
            &lax::pow(&lax::abs(x)?, beta)?,
        )?;
        let s = lax::add(&k(x, 1.0)?, &lax::mul(&lax::sign(x)?, &g)?)?;
        lax::mul(&k(x, 0.5)?, &s)
    }
}
