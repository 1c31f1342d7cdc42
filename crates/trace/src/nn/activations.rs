//! The rest of `jax.nn`'s activations: `softplus`, `log_sigmoid`,
//! `leaky_relu`, `elu`, `celu`, `selu`, `relu6`, `hard_tanh`,
//! `hard_sigmoid`, `hard_silu`, `soft_sign`, `mish`, `glu` and
//! `standardize`, each staged as JAX's `jit[name=..]` with JAX's formula
//! (the numerically stable forms JAX uses: `softplus` is
//! `max(x, 0) + log1p(exp(-|x|))`).

use super::{lit, named, to_float};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy::{self as jnp, Sections};

/// `jax.nn.softplus`: `log(1 + exp(x))`, as `logaddexp(x, 0)`.
pub fn softplus(x: &Array) -> Result<Array> {
    named("softplus", &to_float(x)?, softplus_inline)
}

fn softplus_inline(x: &Array) -> Result<Array> {
    let dt = x.dtype();
    let top = lax::max(x, &lit(0.0, dt)?)?;
    let tail = lax::log1p(&lax::exp(&lax::neg(&lax::abs(x)?)?)?)?;
    lax::add(&top, &tail)
}

/// `jax.nn.log_sigmoid`: `-softplus(-x)`.
pub fn log_sigmoid(x: &Array) -> Result<Array> {
    named("log_sigmoid", &to_float(x)?, |x| {
        lax::neg(&softplus_inline(&lax::neg(x)?)?)
    })
}

/// `jax.nn.leaky_relu(x, negative_slope)` (JAX's default slope: `0.01`).
pub fn leaky_relu(x: &Array, negative_slope: f64) -> Result<Array> {
    named("leaky_relu", &to_float(x)?, move |x| {
        let dt = x.dtype();
        let pos = lax::ge(x, &lit(0.0, dt)?)?;
        let neg = lax::mul(&lit(negative_slope, dt)?, x)?;
        lax::select_n(&pos, &[neg, x.clone()])
    })
}

/// `alpha * expm1(x)` where `x <= 0`, else `x` (the exponential branch
/// reads `0` where `x > 0`, so its gradient stays finite).
fn elu_inline(x: &Array, alpha: f64) -> Result<Array> {
    let dt = x.dtype();
    let zero = lit(0.0, dt)?;
    let pos = lax::gt(x, &zero)?;
    let safe = lax::select_n(&pos, &[x.clone(), jnp::zeros_like(x)?])?;
    let neg = lax::mul(&lit(alpha, dt)?, &lax::expm1(&safe)?)?;
    lax::select_n(&pos, &[neg, x.clone()])
}

/// `jax.nn.elu(x, alpha)` (default `alpha = 1`).
pub fn elu(x: &Array, alpha: f64) -> Result<Array> {
    named("elu", &to_float(x)?, move |x| elu_inline(x, alpha))
}

/// `jax.nn.celu(x, alpha)`: `max(x, 0) + alpha * expm1(min(x, 0) / alpha)`
/// (default `alpha = 1`).
pub fn celu(x: &Array, alpha: f64) -> Result<Array> {
    named("celu", &to_float(x)?, move |x| {
        let dt = x.dtype();
        let zero = lit(0.0, dt)?;
        let e = lax::expm1(&lax::div(&lax::min(x, &zero)?, &lit(alpha, dt)?)?)?;
        lax::add(&lax::max(x, &zero)?, &lax::mul(&lit(alpha, dt)?, &e)?)
    })
}

/// `jax.nn.selu`: `scale * elu(x, alpha)` with the self-normalising
/// constants.
pub fn selu(x: &Array) -> Result<Array> {
    const ALPHA: f64 = 1.673_263_242_354_377_3;
    const SCALE: f64 = 1.050_700_987_355_480_5;
    named("selu", &to_float(x)?, |x| {
        lax::mul(&lit(SCALE, x.dtype())?, &elu_inline(x, ALPHA)?)
    })
}

/// `jax.nn.relu6`: `min(max(x, 0), 6)`.
pub fn relu6(x: &Array) -> Result<Array> {
    named("relu6", &to_float(x)?, |x| {
        let dt = x.dtype();
        lax::min(&lax::max(x, &lit(0.0, dt)?)?, &lit(6.0, dt)?)
    })
}

/// `jax.nn.hard_tanh`: `x` clipped to `[-1, 1]`.
pub fn hard_tanh(x: &Array) -> Result<Array> {
    named("hard_tanh", &to_float(x)?, |x| {
        let dt = x.dtype();
        lax::min(&lax::max(x, &lit(-1.0, dt)?)?, &lit(1.0, dt)?)
    })
}

/// `jax.nn.hard_sigmoid`: `relu6(x + 3) / 6`.
pub fn hard_sigmoid(x: &Array) -> Result<Array> {
    named("hard_sigmoid", &to_float(x)?, hard_sigmoid_inline)
}

fn hard_sigmoid_inline(x: &Array) -> Result<Array> {
    let dt = x.dtype();
    let r = lax::min(
        &lax::max(&lax::add(x, &lit(3.0, dt)?)?, &lit(0.0, dt)?)?,
        &lit(6.0, dt)?,
    )?;
    lax::div(&r, &lit(6.0, dt)?)
}

/// `jax.nn.hard_silu` (`hard_swish`): `x * hard_sigmoid(x)`.
pub fn hard_silu(x: &Array) -> Result<Array> {
    named("hard_silu", &to_float(x)?, |x| {
        lax::mul(x, &hard_sigmoid_inline(x)?)
    })
}

/// `jax.nn.soft_sign`: `x / (|x| + 1)`.
pub fn soft_sign(x: &Array) -> Result<Array> {
    named("soft_sign", &to_float(x)?, |x| {
        let one = lit(1.0, x.dtype())?;
        lax::div(x, &lax::add(&lax::abs(x)?, &one)?)
    })
}

/// `jax.nn.mish`: `x * tanh(softplus(x))`.
pub fn mish(x: &Array) -> Result<Array> {
    named("mish", &to_float(x)?, |x| {
        lax::mul(x, &lax::tanh(&softplus_inline(x)?)?)
    })
}

/// `jax.nn.glu(x, axis)`: the first half of `x` along `axis` times the
/// sigmoid of the second; the size along `axis` must be even.
pub fn glu(x: &Array, axis: isize) -> Result<Array> {
    let x = to_float(x)?;
    let ax = jnp::normalize_axis(axis, x.ndim(), "glu")?;
    let n = x.try_shape()?[ax];
    if n % 2 != 0 {
        return Err(Error::InvalidArgument(format!(
            "glu: the size along axis {axis} must be even, got {n}"
        )));
    }
    let halves = jnp::split(&x, Sections::Equal(2), axis)?;
    lax::mul(&halves[0], &lax::logistic(&halves[1])?)
}

/// `jax.nn.standardize(x, axis, epsilon)`: `(x - mean) / sqrt(var +
/// epsilon)` along `axis`, the variance as `mean(x²) - mean(x)²` (JAX's
/// defaults: the last axis, `epsilon = 1e-5`).
pub fn standardize(x: &Array, axis: isize, epsilon: f64) -> Result<Array> {
    let x = to_float(x)?;
    let ax = jnp::normalize_axis(axis, x.ndim(), "standardize")?;
    let dt = x.dtype();
    let mean = jnp::mean(&x, ax, true)?;
    let sq = jnp::mean(&lax::square(&x)?, ax, true)?;
    let var = lax::sub(&sq, &lax::square(&mean)?)?;
    let centred = jnp::subtract(&x, &mean)?;
    jnp::multiply(&centred, &lax::rsqrt(&jnp::add(&var, &lit(epsilon, dt)?)?)?)
}
