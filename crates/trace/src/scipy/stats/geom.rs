//! `jax.scipy.stats.geom`: the geometric distribution on `1, 2, ...`
//! with success probability `p` (`logpmf`, `pmf`).

use super::{exp_of, k, loc_or_0, neg_inf, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::xlog1py;

/// `geom.logpmf(k, p, loc=0)`: `xlog1py(x - 1, -p) + log(p)` for `x = k -
/// loc`, `-inf` where `x <= 0`.
pub fn logpmf(kk: &Array, p: &Array, loc: Option<&Array>) -> Result<Array> {
    let v = promote("geom.logpmf", &[kk, p, &loc_or_0(loc)])?;
    let (kk, p, loc) = (&v[0], &v[1], &v[2]);
    let x = lax::sub(kk, loc)?;
    let lp = lax::add(
        &xlog1py(&lax::sub(&x, &k(kk, 1.0)?)?, &lax::neg(p)?)?,
        &lax::log(p)?,
    )?;
    jnp::where_(&lax::le(&x, &k(kk, 0.0)?)?, &neg_inf(), &lp)
}

exp_of! {
    /// `geom.pmf(k, p, loc=0)`: `exp(logpmf)`.
    pmf = logpmf(kk: &Array, p: &Array, loc: Option<&Array>)
}
