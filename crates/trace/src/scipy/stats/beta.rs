//! `jax.scipy.stats.beta`: the beta distribution with shapes `a`, `b`
//! (`logpdf`, `pdf`, `cdf`, `logcdf`, `sf`, `logsf`), through `betaln`,
//! `xlogy`/`xlog1py` and `betainc`.

use super::{exp_of, k, loc_or_0, nan, neg_inf, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{betainc, betaln, xlog1py, xlogy};

fn args(
    name: &str,
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<[Array; 5]> {
    let v = promote(name, &[x, a, b, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([
        v[0].clone(),
        v[1].clone(),
        v[2].clone(),
        v[3].clone(),
        v[4].clone(),
    ])
}

/// `beta.logpdf(x, a, b, loc=0, scale=1)`: `xlogy(a - 1, y) +
/// xlog1py(b - 1, -y) - betaln(a, b) - log(scale)`; `-inf` outside
/// `[loc, loc + scale]`, NaN where `a`, `b` or `scale` is not positive.
pub fn logpdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    let [x, a, b, loc, scale] = args("beta.logpdf", x, a, b, loc, scale)?;
    let one = k(&x, 1.0)?;
    let zero = k(&a, 0.0)?;
    let shape_term = lax::neg(&betaln(&a, &b)?)?;
    let y = standardize(&x, &loc, &scale)?;
    let linear = lax::add(
        &xlogy(&lax::sub(&a, &one)?, &y)?,
        &xlog1py(&lax::sub(&b, &one)?, &lax::neg(&y)?)?,
    )?;
    let lp = lax::sub(&lax::add(&shape_term, &linear)?, &lax::log(&scale)?)?;
    let outside = jnp::logical_or(&lax::gt(&x, &lax::add(&loc, &scale)?)?, &lax::lt(&x, &loc)?)?;
    let r = jnp::where_(&outside, &neg_inf(), &lp)?;
    let bad = jnp::logical_or(
        &jnp::logical_or(&lax::le(&a, &zero)?, &lax::le(&b, &zero)?)?,
        &lax::le(&scale, &zero)?,
    )?;
    jnp::where_(&bad, &nan(), &r)
}

exp_of! {
    /// `beta.pdf(x, a, b, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, a: &Array, b: &Array, loc: Option<&Array>, scale: Option<&Array>)
}

/// `betainc(a, b, y)` with the three broadcast to one shape (the
/// primitive takes equal shapes; JAX's broadcasts size-1 axes).
fn betainc_b(a: &Array, b: &Array, y: &Array) -> Result<Array> {
    let shape = jnp::broadcast_shapes("betainc", a, b)?;
    let shape = crate::numpy::promote::broadcast_shape_lists("betainc", &shape, &y.try_shape()?)?;
    let same = |v: &Array| -> Result<Array> {
        if v.ndim() == 0 {
            Ok(v.clone())
        } else {
            jnp::broadcast_to(v, &shape)
        }
    };
    betainc(&same(a)?, &same(b)?, &same(y)?)
}

/// `clamp(0, (x - loc) / scale, 1)`.
fn unit(x: &Array, loc: &Array, scale: &Array) -> Result<Array> {
    lax::clamp(&k(x, 0.0)?, &standardize(x, loc, scale)?, &k(x, 1.0)?)
}

/// `beta.cdf(x, a, b, loc=0, scale=1)`: `betainc(a, b, y)`, `y` clamped
/// to `[0, 1]`.
pub fn cdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    let [x, a, b, loc, scale] = args("beta.cdf", x, a, b, loc, scale)?;
    betainc_b(&a, &b, &unit(&x, &loc, &scale)?)
}

/// `beta.logcdf(x, a, b, loc=0, scale=1)`: `log(cdf)`.
pub fn logcdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    lax::log(&cdf(x, a, b, loc, scale)?)
}

/// `beta.sf(x, a, b, loc=0, scale=1)`: `betainc(b, a, 1 - y)`, `y`
/// clamped to `[0, 1]`.
pub fn sf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    let [x, a, b, loc, scale] = args("beta.sf", x, a, b, loc, scale)?;
    let y = jnp::subtract(&Array::weak(1), &unit(&x, &loc, &scale)?)?;
    betainc_b(&b, &a, &y)
}

/// `beta.logsf(x, a, b, loc=0, scale=1)`: `log(sf)`.
pub fn logsf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    lax::log(&sf(x, a, b, loc, scale)?)
}
