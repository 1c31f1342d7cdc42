//! `jax.scipy.stats.binom`: the binomial distribution with `n` trials of
//! success probability `p` (`logpmf`, `pmf`).

use super::{exp_of, k, loc_or_0, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{gammaln, xlog1py, xlogy};

/// `binom.logpmf(k, n, p, loc=0)`: `gammaln(n + 1) - gammaln(y + 1) -
/// gammaln(n - y + 1) + xlogy(y, p) + xlog1py(n - y, -p)` for `y = k -
/// loc`; 0 where `y == n == 0` or the linear term is 0, `-inf` outside
/// `[loc, loc + n + 1)`.
pub fn logpmf(kk: &Array, n: &Array, p: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("binom.logpmf", &[kk, n, p, &loc_or_0(loc)])?;
    let (kk, n, p, loc) = (&v[0], &v[1], &v[2], &v[3]);
    let y = lax::sub(kk, loc)?;
    let (zero, one) = (k(&y, 0.0)?, k(&y, 1.0)?);
    let plus1 = |v: &Array| lax::add(v, &one);
    let comb = lax::sub(
        &gammaln(&plus1(n)?)?,
        &lax::add(
            &gammaln(&plus1(&y)?)?,
            &gammaln(&plus1(&lax::sub(n, &y)?)?)?,
        )?,
    )?;
    let linear = lax::add(&xlogy(&y, p)?, &xlog1py(&lax::sub(n, &y)?, &lax::neg(p)?)?)?;
    let lp = lax::add(&comb, &linear)?;
    let cond = jnp::logical_or(
        &jnp::logical_and(&lax::eq(&y, &zero)?, &lax::eq(n, &zero)?)?,
        &lax::eq(&linear, &zero)?,
    )?;
    let lp = jnp::where_(&cond, &Array::weak(0.0), &lp)?;
    let inside = jnp::logical_and(
        &lax::ge(kk, loc)?,
        &lax::lt(kk, &lax::add(&lax::add(loc, n)?, &one)?)?,
    )?;
    jnp::where_(&inside, &lp, &neg_inf())
}

exp_of! {
    /// `binom.pmf(k, n, p, loc=0)`: `exp(logpmf)`.
    pmf = logpmf(kk: &Array, n: &Array, p: &Array, loc: Option<&Array>)
}
