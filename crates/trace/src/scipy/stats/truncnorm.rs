//! `jax.scipy.stats.truncnorm`: the normal distribution truncated to
//! `[a, b]` (in standardized units; `logpdf`, `pdf`, `logcdf`, `cdf`,
//! `logsf`, `sf`). The log of the Gaussian mass between two points is
//! computed in whichever tail keeps it accurate, as JAX does.

use super::{k, loc_or_0, nan, neg_inf, norm, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;
use crate::scipy::special::{log_ndtr, ndtr};

/// `(x, a, b, loc, scale)`, promoted together.
type Args = [Array; 5];

fn args(
    name: &str,
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Args> {
    let v = promote(name, &[x, a, b, &loc_or_0(loc), &scale_or_1(scale)])?;
    Ok([
        v[0].clone(),
        v[1].clone(),
        v[2].clone(),
        v[3].clone(),
        v[4].clone(),
    ])
}

/// Broadcasts `arrays` to their common shape (`jnp.broadcast_arrays`).
fn broadcast_all(arrays: &[&Array]) -> Result<Vec<Array>> {
    let mut shape: Vec<usize> = Vec::new();
    for a in arrays {
        shape = crate::numpy::promote::broadcast_shape_lists("truncnorm", &shape, &a.try_shape()?)?;
    }
    arrays
        .iter()
        .map(|a| jnp::broadcast_to(a, &shape))
        .collect()
}

/// `log(exp(x) - exp(y))`: JAX's `logsumexp([x, y], b=[1, -1], axis=0)`
/// elementwise (NaN where `y > x`).
fn log_diff(x: &Array, y: &Array) -> Result<Array> {
    let amax = lax::max(x, y)?;
    let amax = lax::select_n(&lax::is_finite(&amax)?, &[jnp::zeros_like(&amax)?, amax])?;
    let amax = lax::stop_gradient(&amax)?;
    let s = lax::sub(
        &lax::exp(&lax::sub(x, &amax)?)?,
        &lax::exp(&lax::sub(y, &amax)?)?,
    )?;
    let negative = lax::lt(&lax::sign(&s)?, &k(&s, 0.0)?)?;
    let out = lax::add(&lax::log(&lax::abs(&s)?)?, &amax)?;
    jnp::where_(&negative, &nan(), &out)
}

/// The log of the standard normal mass between `a` and `b`.
fn log_gauss_mass(a: &Array, b: &Array) -> Result<Array> {
    let ab = broadcast_all(&[a, b])?;
    let (a, b) = (&ab[0], &ab[1]);
    let left = lax::le(b, &k(b, 0.0)?)?;
    let right = lax::gt(a, &k(a, 0.0)?)?;
    let central = jnp::logical_not(&jnp::logical_or(&left, &right)?)?;
    let a_tail = jnp::where_(&right, &lax::neg(b)?, a)?;
    let b_tail = jnp::where_(&right, &lax::neg(a)?, b)?;
    let tail = log_diff(&log_ndtr(&b_tail)?, &log_ndtr(&a_tail)?)?;
    let mid = lax::log1p(&lax::sub(&lax::neg(&ndtr(a)?)?, &ndtr(&lax::neg(b)?)?)?)?;
    jnp::where_(&central, &mid, &tail)
}

/// `truncnorm.logpdf(x, a, b, loc=0, scale=1)`: `norm.logpdf(x, loc,
/// scale)` minus the log mass of `[a, b]`; `-inf` where `(x - loc) /
/// scale` is outside `[a, b]`, NaN where `a >= b`.
pub fn logpdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    let [x, a, b, loc, scale] = args("truncnorm.logpdf", x, a, b, loc, scale)?;
    let val = lax::sub(
        &norm::logpdf(&x, Some(&loc), Some(&scale))?,
        &log_gauss_mass(&a, &b)?,
    )?;
    let y = standardize(&x, &loc, &scale)?;
    let outside = jnp::logical_or(&lax::lt(&y, &a)?, &lax::gt(&y, &b)?)?;
    let val = jnp::where_(&outside, &neg_inf(), &val)?;
    jnp::where_(&lax::ge(&a, &b)?, &nan(), &val)
}

/// `truncnorm.pdf(x, a, b, loc=0, scale=1)`: `exp(logpdf)`.
pub fn pdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    lax::exp(&logpdf(x, a, b, loc, scale)?)
}

/// `truncnorm.logcdf(x, a, b, loc=0, scale=1)`: the log mass of `[a, y]`
/// over that of `[a, b]` (through the survival side, `log1p(-sf)`, where
/// the result is above -0.1); 0 above `b`, `-inf` below `a`, NaN where
/// `a >= b`.
pub fn logcdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    let [x, a, b, loc, scale] = args("truncnorm.logcdf", x, a, b, loc, scale)?;
    let xab = broadcast_all(&[&x, &a, &b])?;
    let (a, b) = (&xab[1], &xab[2]);
    let y = standardize(&xab[0], &loc, &scale)?;
    let lgm_ab = log_gauss_mass(a, b)?;
    let lcdf = lax::sub(&log_gauss_mass(a, &y)?, &lgm_ab)?;
    let lsf = lax::sub(&log_gauss_mass(&y, b)?, &lgm_ab)?;
    let via_sf = lax::log1p(&lax::neg(&lax::exp(&lsf)?)?)?;
    // jnp.select: the first condition that holds wins, default 0.
    let r = jnp::where_(&lax::gt(&y, a)?, &lcdf, &Array::weak(0))?;
    let r = jnp::where_(&lax::gt(&lcdf, &k(&lcdf, -0.1)?)?, &via_sf, &r)?;
    let r = jnp::where_(&lax::le(&y, a)?, &neg_inf(), &r)?;
    let r = jnp::where_(&lax::ge(&y, b)?, &Array::weak(0), &r)?;
    jnp::where_(&lax::ge(a, b)?, &nan(), &r)
}

/// `truncnorm.cdf(x, a, b, loc=0, scale=1)`: `exp(logcdf)`.
pub fn cdf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    lax::exp(&logcdf(x, a, b, loc, scale)?)
}

/// `truncnorm.logsf(x, a, b, loc=0, scale=1)`: `logcdf(-x, -b, -a, -loc,
/// scale)`.
pub fn logsf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    let [x, a, b, loc, scale] = args("truncnorm.logsf", x, a, b, loc, scale)?;
    logcdf(
        &lax::neg(&x)?,
        &lax::neg(&b)?,
        &lax::neg(&a)?,
        Some(&lax::neg(&loc)?),
        Some(&scale),
    )
}

/// `truncnorm.sf(x, a, b, loc=0, scale=1)`: `exp(logsf)`.
pub fn sf(
    x: &Array,
    a: &Array,
    b: &Array,
    loc: Option<&Array>,
    scale: Option<&Array>,
) -> Result<Array> {
    lax::exp(&logsf(x, a, b, loc, scale)?)
}
