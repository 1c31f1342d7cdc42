//! `jax.scipy.stats.nbinom`: the negative binomial distribution (failures
//! before the `n`-th success, success probability `p`; `logpmf`, `pmf`).

use super::{exp_of, k, loc_or_0, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{gammaln, xlogy};

/// `nbinom.logpmf(k, n, p, loc=0)`: `gammaln(y + n) - gammaln(n) -
/// gammaln(y + 1) + xlogy(n, p) + xlogy(y, 1 - p)` for `y = k - loc`,
/// `-inf` below `loc`.
pub fn logpmf(kk: &Array, n: &Array, p: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("nbinom.logpmf", &[kk, n, p, &loc_or_0(loc)])?;
    let (kk, n, p, loc) = (&v[0], &v[1], &v[2], &v[3]);
    let one = k(kk, 1.0)?;
    let y = lax::sub(kk, loc)?;
    let comb = lax::sub(
        &lax::sub(&gammaln(&lax::add(&y, n)?)?, &gammaln(n)?)?,
        &gammaln(&lax::add(&y, &one)?)?,
    )?;
    let linear = lax::add(&xlogy(n, p)?, &xlogy(&y, &lax::sub(&one, p)?)?)?;
    jnp::where_(&lax::lt(kk, loc)?, &neg_inf(), &lax::add(&comb, &linear)?)
}

exp_of! {
    /// `nbinom.pmf(k, n, p, loc=0)`: `exp(logpmf)`.
    pmf = logpmf(kk: &Array, n: &Array, p: &Array, loc: Option<&Array>)
}
