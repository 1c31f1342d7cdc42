//! Statistics of the NumPy API: `var`, `std` (with `ddof`) and
//! `logsumexp`, in JAX 0.10's sequences (`jit[name=_var]`,
//! `jit[name=_std]`).

use super::promote::float_dtype_of;
use super::reductions::{mean, sum, IntoAxes};
use super::where_;
use super::wrap::{jitted, lit};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use jaxon_ir::primitive::ReduceOp;

fn var_jit(x: &Array, axes: Vec<usize>, ddof: Array, keepdims: bool) -> Result<Array> {
    jitted("_var", vec![x.clone(), ddof], move |a| {
        let dt = float_dtype_of(a[0].dtype());
        let x = lax::convert_element_type(&a[0], dt, false)?;
        let shape = x.try_shape()?;
        let count: usize = axes.iter().map(|&d| shape[d]).product();
        let m = mean(&x, axes.as_slice(), true)?;
        let centered = lax::square(&super::subtract(&x, &m)?)?;
        let ddof = lax::convert_element_type(&a[1], dt, false)?;
        let normalizer = lax::sub(&lit(count as f64, dt)?, &ddof)?;
        let total = sum(&centered, axes.as_slice(), keepdims)?;
        let out = lax::div(&total, &normalizer)?;
        let ok = lax::gt(&normalizer, &lit(0.0, dt)?)?;
        where_(&ok, &out, &Array::weak(f64::NAN))
    })
}

/// `jnp.var(x, axis, ddof, keepdims)`: NaN where `N - ddof <= 0`.
pub fn var(x: &Array, axes: impl IntoAxes, ddof: i64, keepdims: bool) -> Result<Array> {
    let axes = axes.into_axes(x.ndim())?;
    var_jit(x, axes, Array::weak(ddof), keepdims)
}

/// `jnp.std(x, axis, ddof, keepdims)`: the square root of [`var`].
pub fn std(x: &Array, axes: impl IntoAxes, ddof: i64, keepdims: bool) -> Result<Array> {
    let axes = axes.into_axes(x.ndim())?;
    jitted("_std", vec![x.clone(), Array::weak(ddof)], move |a| {
        lax::sqrt(&var_jit(&a[0], axes.clone(), a[1].clone(), keepdims)?)
    })
}

/// `jax.nn.logsumexp(x, axis, keepdims)`, shifted by the (finite) maximum
/// for stability. JAX also stages an unused `sign`, which dead-code
/// elimination drops.
pub fn logsumexp(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    let axes = axes.into_axes(x.ndim())?;
    let dt = float_dtype_of(x.dtype());
    let x = lax::convert_element_type(x, dt, false)?;
    let amax = lax::reduce(ReduceOp::Max, &x, &axes)?;
    let amax = lax::max(&lit(f64::NEG_INFINITY, dt)?, &amax)?;
    let amax = if keepdims {
        lax::expand_dims(&amax, &axes)?
    } else {
        amax
    };
    let finite = lax::is_finite(&amax)?;
    let amax = lax::select_n(&finite, &[super::zeros_like(&amax)?, amax])?;
    let amax = lax::stop_gradient(&amax)?;
    let expanded = if keepdims {
        amax.clone()
    } else {
        lax::expand_dims(&amax, &axes)?
    };
    let e = lax::exp(&super::subtract(&x, &expanded)?)?;
    let s = sum(&e, axes.as_slice(), keepdims)?;
    lax::add(&lax::log(&lax::abs(&s)?)?, &amax)
}
