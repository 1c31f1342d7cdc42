//! `jax.scipy.stats.betabinom`: the beta-binomial distribution (`logpmf`,
//! `pmf`).

use super::{k, loc_or_0, nan, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::betaln;

/// `betabinom.logpmf(k, n, a, b, loc=0)`: with `y = floor(k) - loc`,
/// `-(log1p(n) + betaln(n - y + 1, y + 1)) + betaln(y + a, n - y + b) -
/// betaln(a, b)`; 0 where `y == n == 0`, `-inf` where `y < -loc`, `y > n`
/// or `y + a <= 0`, NaN where `n < 0`, `a <= 0` or `b <= 0`.
pub fn logpmf(kk: &Array, n: &Array, a: &Array, b: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("betabinom.logpmf", &[kk, n, a, b, &loc_or_0(loc)])?;
    let (kk, n, a, b, loc) = (&v[0], &v[1], &v[2], &v[3], &v[4]);
    let y = lax::sub(&lax::floor(kk)?, loc)?;
    let (one, zero) = (k(&y, 1.0)?, k(&y, 0.0)?);
    let n_y = lax::sub(n, &y)?;
    let combiln = lax::neg(&lax::add(
        &lax::log1p(n)?,
        &betaln(&lax::add(&n_y, &one)?, &lax::add(&y, &one)?)?,
    )?)?;
    let beta_lns = lax::sub(
        &betaln(&lax::add(&y, a)?, &lax::add(&n_y, b)?)?,
        &betaln(a, b)?,
    )?;
    let lp = lax::add(&combiln, &beta_lns)?;
    let both_zero = jnp::logical_and(&lax::eq(&y, &zero)?, &lax::eq(n, &zero)?)?;
    let lp = jnp::where_(&both_zero, &Array::weak(0.0), &lp)?;
    let y_out = jnp::logical_or(
        &jnp::logical_or(&lax::lt(&y, &lax::neg(loc)?)?, &lax::gt(&y, n)?)?,
        &lax::le(&lax::add(&y, a)?, &zero)?,
    )?;
    let lp = jnp::where_(&y_out, &neg_inf(), &lp)?;
    let bad = jnp::logical_or(
        &jnp::logical_or(&lax::lt(n, &zero)?, &lax::le(a, &zero)?)?,
        &lax::le(b, &zero)?,
    )?;
    jnp::where_(&bad, &nan(), &lp)
}

/// `betabinom.pmf(k, n, a, b, loc=0)`: `exp(logpmf)`.
pub fn pmf(kk: &Array, n: &Array, a: &Array, b: &Array, loc: Option<&Array>) -> Result<Array> {
    lax::exp(&logpmf(kk, n, a, b, loc)?)
}
