//! Creation functions of the NumPy API: `arange` with start/stop/step,
//! `linspace`, `eye`, `tri`, in the primitive sequences JAX 0.10 emits.

use super::wrap::{jitted, lit};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::DType;

/// `jnp.arange(stop, dtype=dtype)`: a bare `iota`.
pub fn arange_dtype(stop: usize, dtype: DType) -> Result<Array> {
    lax::iota(dtype, stop)
}

/// `jnp.arange(start, stop, step, dtype)`: `iota`, then `mul step` (when
/// the step is not 1) and `add start`, as JAX stages it. The default
/// dtype is `i32` when all three are integral, else `f32`.
pub fn arange_range(start: f64, stop: f64, step: f64, dtype: Option<DType>) -> Result<Array> {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
        return Err(Error::InvalidArgument(format!(
            "arange: bad start/stop/step ({start}, {stop}, {step})"
        )));
    }
    let integral = [start, stop, step].iter().all(|v| v.fract() == 0.0);
    let dtype = dtype.unwrap_or(if integral { DType::I32 } else { DType::F32 });
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    let mut out = lax::iota(dtype, n)?;
    if step != 1.0 {
        out = lax::mul(&lit(step, dtype)?, &out)?;
    }
    lax::add(&lit(start, dtype)?, &out)
}

/// `jnp.linspace(start, stop, num, endpoint)` for scalar bounds (`f32`
/// unless `dtype` says otherwise). Staged as JAX's `jit[name=_linspace]`;
/// JAX also computes an unused step, which dead-code elimination drops.
pub fn linspace(
    start: &Array,
    stop: &Array,
    num: usize,
    endpoint: bool,
    dtype: Option<DType>,
) -> Result<Array> {
    if start.ndim() != 0 || stop.ndim() != 0 {
        return Err(Error::Unsupported(
            "linspace with array-valued start/stop".into(),
        ));
    }
    let dt = dtype.unwrap_or(DType::F32);
    let ct = super::promote::float_dtype_of(dt);
    let out = jitted("_linspace", vec![start.clone(), stop.clone()], move |a| {
        let s = lax::convert_element_type(&a[0], ct, false)?;
        let e = lax::convert_element_type(&a[1], ct, false)?;
        if num == 0 {
            return lax::broadcast_in_dim(&s, &[0], &[]);
        }
        if num == 1 {
            return lax::broadcast_in_dim(&s, &[1], &[]);
        }
        let div = if endpoint { num - 1 } else { num };
        let steps = lax::div(&lax::iota(ct, div)?, &lit(div as f64, ct)?)?;
        let s1 = lax::reshape(&s, &[1])?;
        let left = lax::mul(&s1, &lax::sub(&lit(1.0, ct)?, &steps)?)?;
        let e1 = lax::reshape(&e, &[1])?;
        let right = lax::mul(&e1, &steps)?;
        let body = lax::add(&left, &right)?;
        if endpoint {
            let last = lax::broadcast_in_dim(&e, &[1], &[])?;
            lax::concatenate(&[body, last], 0)
        } else {
            Ok(body)
        }
    })?;
    lax::convert_element_type(&out, dt, false)
}

/// `jnp.eye(n, m, k, dtype)`: ones on the `k`-th diagonal.
pub fn eye(n: usize, m: Option<usize>, k: i64, dtype: DType) -> Result<Array> {
    let mask = eye_mask(n, m.unwrap_or(n), k)?;
    lax::convert_element_type(&mask, dtype, false)
}

/// The boolean mask of `jnp.eye(n, m, k)`: `row + k == col`.
pub(crate) fn eye_mask(n: usize, m: usize, k: i64) -> Result<Array> {
    let rows = lax::broadcasted_iota(DType::I32, &[n, m], 0)?;
    let cols = lax::broadcasted_iota(DType::I32, &[n, m], 1)?;
    let shifted = lax::add(&rows, &lit(k as f64, DType::I32)?)?;
    lax::eq(&shifted, &cols)
}

/// The boolean mask of `jnp.tri(n, m, k)`: `row + k >= col`.
pub(crate) fn tri_mask(n: usize, m: usize, k: i64) -> Result<Array> {
    let rows = lax::broadcasted_iota(DType::I32, &[n, m], 0)?;
    let shifted = lax::add(&rows, &lit(k as f64, DType::I32)?)?;
    let cols = lax::broadcasted_iota(DType::I32, &[n, m], 1)?;
    lax::ge(&shifted, &cols)
}

/// `jnp.tri(n, m, k, dtype)`.
pub fn tri(n: usize, m: Option<usize>, k: i64, dtype: DType) -> Result<Array> {
    let mask = tri_mask(n, m.unwrap_or(n), k)?;
    lax::convert_element_type(&mask, dtype, false)
}

fn tri_select(name: &str, x: &Array, k: i64, lower: bool) -> Result<Array> {
    if x.ndim() < 2 {
        return Err(Error::InvalidArgument(format!(
            "{name} needs an array of rank >= 2, got {}",
            jaxon_ir::shape::fmt_aval(x.aval())
        )));
    }
    jitted(name, vec![x.clone()], move |a| {
        let x = &a[0];
        let shape = x.try_shape()?;
        let r = shape.len();
        let mask = tri_mask(shape[r - 2], shape[r - 1], if lower { k } else { k - 1 })?;
        let mask = lax::broadcast(&mask, &shape[..r - 2])?;
        let zeros = super::zeros_like(x)?;
        if lower {
            lax::select_n(&mask, &[zeros, x.clone()])
        } else {
            lax::select_n(&mask, &[x.clone(), zeros])
        }
    })
}

/// `jnp.tril(x, k)`: zeros above the `k`-th diagonal of the last two axes.
pub fn tril(x: &Array, k: i64) -> Result<Array> {
    tri_select("tril", x, k, true)
}

/// `jnp.triu(x, k)`: zeros below the `k`-th diagonal of the last two axes.
pub fn triu(x: &Array, k: i64) -> Result<Array> {
    tri_select("triu", x, k, false)
}
