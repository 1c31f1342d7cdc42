//! `jax.scipy.stats.multinomial`: the multinomial distribution over the
//! last axis (`logpmf`, `pmf`).

use super::{neg_inf, promote};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy::{self as jnp, promote::promote_dtypes};
use crate::scipy::special::{gammaln, xlogy};
use jaxon_ir::shape::fmt_aval;

/// `multinomial.logpmf(x, n, p)`: `gammaln(n + 1) + sum(xlogy(x, p) -
/// gammaln(x + 1))` over the last axis, `-inf` where the counts do not
/// sum to `n`. `x` and `n` must be integers (an error otherwise, as in
/// JAX).
pub fn logpmf(x: &Array, n: &Array, p: &Array) -> Result<Array> {
    let p = promote("multinomial.logpmf", &[p])?.remove(0);
    let v = promote_dtypes("multinomial.logpmf", &[x, n])?;
    if !v[0].dtype().is_int() {
        return Err(Error::InvalidArgument(format!(
            "multinomial.logpmf: x and n must be of integer type; got x {}, n {}",
            fmt_aval(x.aval()),
            fmt_aval(n.aval())
        )));
    }
    let x = lax::convert_element_type(&v[0], p.dtype(), false)?;
    let n = lax::convert_element_type(&v[1], p.dtype(), false)?;
    let one = Array::weak(1);
    let terms = jnp::subtract(&xlogy(&x, &p)?, &gammaln(&jnp::add(&x, &one)?)?)?;
    let lp = jnp::add(
        &gammaln(&jnp::add(&n, &one)?)?,
        &jnp::sum(&terms, -1isize, false)?,
    )?;
    let total = jnp::sum(&x, jnp::All, false)?;
    jnp::where_(&jnp::equal(&total, &n)?, &lp, &neg_inf())
}

/// `multinomial.pmf(x, n, p)`: `exp(logpmf)`.
pub fn pmf(x: &Array, n: &Array, p: &Array) -> Result<Array> {
    lax::exp(&logpmf(x, n, p)?)
}
