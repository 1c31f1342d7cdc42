//! The last of `jax.nn`'s elementwise functions: `identity`, `tanh`,
//! `swish` and `hard_swish` (JAX's aliases of `silu` and `hard_silu`),
//! `log1mexp`, `logmeanexp`, `sparse_plus`, `sparse_sigmoid` and
//! `squareplus`, with JAX's formulas.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::numpy as jnp;

/// `jax.nn.identity(x)`: `x`.
pub fn identity(x: &Array) -> Result<Array> {
    Ok(x.clone())
}

/// `jax.nn.tanh(x)`.
pub fn tanh(x: &Array) -> Result<Array> {
    jnp::tanh(x)
}

/// `jax.nn.swish(x)`: `silu`.
pub fn swish(x: &Array) -> Result<Array> {
    super::silu(x)
}

/// `jax.nn.hard_swish(x)`: `hard_silu`.
pub fn hard_swish(x: &Array) -> Result<Array> {
    super::hard_silu(x)
}

/// `jax.nn.log1mexp(x)`: `log(1 - exp(-x))`, by `log1p(-exp(-x))` above
/// `log 2` and `log(-expm1(-x))` below, as JAX computes it.
pub fn log1mexp(x: &Array) -> Result<Array> {
    let nx = jnp::negative(x)?;
    let big = jnp::greater(x, &Array::weak(std::f64::consts::LN_2))?;
    let a = jnp::log1p(&jnp::negative(&jnp::exp(&nx)?)?)?;
    let b = jnp::log(&jnp::negative(&jnp::expm1(&nx)?)?)?;
    jnp::where_(&big, &a, &b)
}

/// `jax.nn.logmeanexp(x, axis, keepdims)`: `logsumexp(x) - log(n)` over
/// `axes` (all when empty; `n` the number of elements reduced).
pub fn logmeanexp(x: &Array, axes: &[isize], keepdims: bool) -> Result<Array> {
    let shape = x.try_shape()?;
    let rank = shape.len() as isize;
    let axes: Vec<isize> = if axes.is_empty() {
        (0..rank).collect()
    } else {
        axes.to_vec()
    };
    let mut n = 1usize;
    for &a in &axes {
        let k = if a < 0 { a + rank } else { a };
        let d = usize::try_from(k)
            .ok()
            .and_then(|k| shape.get(k))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "logmeanexp: axis {a} is out of range for rank {rank}"
                ))
            })?;
        n *= d;
    }
    let lse = jnp::logsumexp(x, axes.as_slice(), keepdims)?;
    jnp::subtract(&lse, &Array::weak((n as f64).ln()))
}

/// `jax.nn.sparse_plus(x)`: 0 below -1, `x` above 1, `(x + 1)² / 4` between.
pub fn sparse_plus(x: &Array) -> Result<Array> {
    let x = jnp::promote::promote_dtypes_inexact("sparse_plus", &[x])?.remove(0);
    let mid = jnp::divide(
        &jnp::square(&jnp::add(&x, &Array::weak(1.0))?)?,
        &Array::weak(4.0),
    )?;
    let low = jnp::less_equal(&x, &Array::weak(-1.0))?;
    let high = jnp::greater_equal(&x, &Array::weak(1.0))?;
    let zero = jnp::zeros_like(&x)?;
    jnp::where_(&low, &zero, &jnp::where_(&high, &x, &mid)?)
}

/// `jax.nn.sparse_sigmoid(x)`: `clip((x + 1) / 2, 0, 1)`.
pub fn sparse_sigmoid(x: &Array) -> Result<Array> {
    let x = jnp::promote::promote_dtypes_inexact("sparse_sigmoid", &[x])?.remove(0);
    let y = jnp::multiply(&jnp::add(&x, &Array::weak(1.0))?, &Array::weak(0.5))?;
    jnp::clip(&y, Some(&Array::weak(0.0)), Some(&Array::weak(1.0)))
}

/// `jax.nn.squareplus(x, b)`: `(x + sqrt(x² + b)) / 2` (JAX's `b` is 4).
pub fn squareplus(x: &Array, b: f64) -> Result<Array> {
    let x = jnp::promote::promote_dtypes_inexact("squareplus", &[x])?.remove(0);
    let r = jnp::sqrt(&jnp::add(&jnp::square(&x)?, &Array::weak(b))?)?;
    jnp::divide(&jnp::add(&x, &r)?, &Array::weak(2.0))
}
