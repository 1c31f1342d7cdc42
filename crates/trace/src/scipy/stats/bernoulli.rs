//! `jax.scipy.stats.bernoulli`: the Bernoulli distribution with success
//! probability `p` (`logpmf`, `pmf`, `cdf`, `ppf`).

use super::{exp_of, k, loc_or_0, nan, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{xlog1py, xlogy};

/// `bernoulli.logpmf(k, p, loc=0)`: `xlogy(x, p) + xlog1py(1 - x, -p)`
/// for `x = k - loc`, `-inf` outside `[0, 1]`.
pub fn logpmf(kk: &Array, p: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("bernoulli.logpmf", &[kk, p, &loc_or_0(loc)])?;
    let (kk, p, loc) = (&v[0], &v[1], &v[2]);
    let (zero, one) = (k(kk, 0.0)?, k(kk, 1.0)?);
    let x = lax::sub(kk, loc)?;
    let lp = lax::add(
        &xlogy(&x, p)?,
        &xlog1py(&lax::sub(&one, &x)?, &lax::neg(p)?)?,
    )?;
    let outside = jnp::logical_or(&lax::lt(&x, &zero)?, &lax::gt(&x, &one)?)?;
    jnp::where_(&outside, &neg_inf(), &lp)
}

exp_of! {
    /// `bernoulli.pmf(k, p, loc=0)`: `exp(logpmf)`.
    pmf = logpmf(kk: &Array, p: &Array, loc: Option<&Array>)
}

/// NaN `a` or `b`, or `p` outside `[0, 1]`.
fn bad_p(a: &Array, p: &Array) -> Result<Array> {
    let (zero, one) = (k(p, 0.0)?, k(p, 1.0)?);
    let nan_in = jnp::logical_or(&jnp::isnan(a)?, &jnp::isnan(p)?)?;
    let out = jnp::logical_or(&lax::lt(p, &zero)?, &lax::gt(p, &one)?)?;
    jnp::logical_or(&nan_in, &out)
}

/// `bernoulli.cdf(k, p)`: 0 below 0, `1 - p` on `[0, 1)`, 1 from 1; NaN
/// for a NaN argument or `p` outside `[0, 1]`.
pub fn cdf(kk: &Array, p: &Array) -> Result<Array> {
    let v = promote("bernoulli.cdf", &[kk, p])?;
    let (kk, p) = (&v[0], &v[1]);
    let (zero, one) = (k(kk, 0.0)?, k(kk, 1.0)?);
    // jnp.select: the first condition that holds wins, default 0.
    let r = jnp::where_(&lax::ge(kk, &one)?, &one, &zero)?;
    let mid = jnp::logical_and(&lax::ge(kk, &zero)?, &lax::lt(kk, &one)?)?;
    let r = jnp::where_(&mid, &lax::sub(&one, p)?, &r)?;
    let r = jnp::where_(&lax::lt(kk, &zero)?, &zero, &r)?;
    jnp::where_(&bad_p(kk, p)?, &nan(), &r)
}

/// `bernoulli.ppf(q, p)`: 0 where `q <= 1 - p`, else 1; NaN for a NaN
/// argument or `q`, `p` outside `[0, 1]`.
pub fn ppf(q: &Array, p: &Array) -> Result<Array> {
    let v = promote("bernoulli.ppf", &[q, p])?;
    let (q, p) = (&v[0], &v[1]);
    let (zero, one) = (k(q, 0.0)?, k(q, 1.0)?);
    let q_out = jnp::logical_or(&lax::lt(q, &zero)?, &lax::gt(q, &one)?)?;
    let bad = jnp::logical_or(&bad_p(q, p)?, &q_out)?;
    let r = jnp::where_(&lax::le(q, &lax::sub(&one, p)?)?, &zero, &one)?;
    jnp::where_(&bad, &nan(), &r)
}
