//! `jax.scipy.stats.uniform` on `[loc, loc + scale]`: `logpdf`, `pdf`,
//! `cdf`, `ppf`.

use super::{exp_of, k, loc_or_0, nan, neg_inf, promote, scale_or_1};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;

fn args(name: &str, x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<[Array; 3]> {
    let v = promote(name, &[x, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([v[0].clone(), v[1].clone(), v[2].clone()])
}

/// `uniform.logpdf(x, loc=0, scale=1)`: `-log(scale)` inside
/// `[loc, loc + scale]`, `-inf` outside.
pub fn logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("uniform.logpdf", x, loc, scale)?;
    let log_probs = lax::neg(&lax::log(&scale)?)?;
    let outside = jnp::logical_or(&lax::gt(&x, &lax::add(&loc, &scale)?)?, &lax::lt(&x, &loc)?)?;
    jnp::where_(&outside, &neg_inf(), &log_probs)
}

exp_of! {
    /// `uniform.pdf(x, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `uniform.cdf(x, loc=0, scale=1)`: 0 below `loc`, 1 above
/// `loc + scale`, `(x - loc) / scale` between (NaN `x`: 0, as JAX's
/// `jnp.select` gives).
pub fn cdf(x: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [x, loc, scale] = args("uniform.cdf", x, loc, scale)?;
    let hi = lax::add(&loc, &scale)?;
    let below = lax::lt(&x, &loc)?;
    let above = lax::gt(&x, &hi)?;
    let inside = jnp::logical_and(&lax::ge(&x, &loc)?, &lax::le(&x, &hi)?)?;
    let (zero, one) = (k(&x, 0.0)?, k(&x, 1.0)?);
    let mid = lax::div(&lax::sub(&x, &loc)?, &scale)?;
    // jnp.select: the first condition that holds wins, default 0.
    let v = jnp::where_(&inside, &mid, &zero)?;
    let v = jnp::where_(&above, &one, &v)?;
    jnp::where_(&below, &zero, &v)
}

/// `uniform.ppf(q, loc=0, scale=1)`: `loc + scale q`, NaN outside
/// `[0, 1]`.
pub fn ppf(q: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let [q, loc, scale] = args("uniform.ppf", q, loc, scale)?;
    let bad = jnp::logical_or(
        &jnp::logical_or(&jnp::isnan(&q)?, &lax::lt(&q, &k(&q, 0.0)?)?)?,
        &lax::gt(&q, &k(&q, 1.0)?)?,
    )?;
    jnp::where_(&bad, &nan(), &lax::add(&loc, &lax::mul(&scale, &q)?)?)
}
