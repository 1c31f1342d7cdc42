//! `jax.scipy.stats.poisson`: the Poisson distribution with mean `mu`
//! (`logpmf`, `pmf`, `cdf`).

use super::{exp_of, k, loc_or_0, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{gammaincc, gammaln, xlogy};

/// `poisson.logpmf(k, mu, loc=0)`: `xlogy(k - loc, mu) - gammaln(k - loc
/// + 1) - mu`; `-inf` below `loc` or at a non-integer `k`.
pub fn logpmf(kk: &Array, mu: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("poisson.logpmf", &[kk, mu, &loc_or_0(loc)])?;
    let (kk, mu, loc) = (&v[0], &v[1], &v[2]);
    let x = lax::sub(kk, loc)?;
    let lp = lax::sub(
        &lax::sub(&xlogy(&x, mu)?, &gammaln(&lax::add(&x, &k(&x, 1.0)?)?)?)?,
        mu,
    )?;
    let bad = jnp::logical_or(
        &lax::lt(&x, &k(kk, 0.0)?)?,
        &lax::ne(&jnp::round(kk, 0)?, kk)?,
    )?;
    jnp::where_(&bad, &neg_inf(), &lp)
}

exp_of! {
    /// `poisson.pmf(k, mu, loc=0)`: `exp(logpmf)`.
    pmf = logpmf(kk: &Array, mu: &Array, loc: Option<&Array>)
}

/// `poisson.cdf(k, mu, loc=0)`: `gammaincc(floor(1 + k - loc), mu)`, 0
/// below `loc`.
pub fn cdf(kk: &Array, mu: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("poisson.logpmf", &[kk, mu, &loc_or_0(loc)])?;
    let (kk, mu, loc) = (&v[0], &v[1], &v[2]);
    let zero = k(kk, 0.0)?;
    let x = lax::sub(kk, loc)?;
    let p = gammaincc(&jnp::floor(&lax::add(&k(&x, 1.0)?, &x)?)?, mu)?;
    jnp::where_(&lax::lt(&x, &zero)?, &zero, &p)
}
