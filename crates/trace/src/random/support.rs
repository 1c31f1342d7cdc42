//! Shared pieces of the samplers in `gamma.rs`, `discrete.rs`,
//! `continuous.rs` and `multivariate.rs`: typed constants, dtype checks
//! and JAX's shape rules for sampler parameters (`_check_shape`,
//! `_check_broadcast_shapes`).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy::broadcast_to;
use half::{bf16, f16};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// A strong float scalar of `dtype` nearest to `x` (JAX's
/// `lax._const(u, x)` for a weakly typed Python float).
pub(super) fn fconst(dtype: DType, x: f64) -> Array {
    match dtype {
        DType::F64 => Array::scalar(x),
        DType::F16 => Array::scalar(f16::from_f64(x)),
        DType::BF16 => Array::scalar(bf16::from_f64(x)),
        _ => Array::scalar(x as f32),
    }
}

/// `Err` unless `dtype` is a float dtype.
pub(super) fn check_float(op: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{op}: dtype argument must be a float dtype, got {}",
            dtype.short_name()
        )))
    }
}

/// `Err` unless `dtype` is `f32` or `f64`, the dtypes the `random_gamma`
/// primitive samples.
pub(super) fn check_gamma_float(op: &str, dtype: DType) -> Result<()> {
    if matches!(dtype, DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{op}: dtype must be float32 or float64 (gamma sampling), got {}",
            dtype.short_name()
        )))
    }
}

/// `Err` unless `dtype` is an integer dtype.
pub(super) fn check_int(op: &str, dtype: DType) -> Result<()> {
    if dtype.is_int() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{op}: dtype argument must be an integer dtype, got {}",
            dtype.short_name()
        )))
    }
}

/// `Err` unless `x` is a real (integer, bool or float) array.
pub(super) fn check_real(op: &str, what: &str, x: &Array) -> Result<()> {
    if x.dtype().is_float() || x.dtype().is_int() || x.dtype() == DType::Bool {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{op}: {what} must be a real array, got {}",
            fmt_aval(x.aval())
        )))
    }
}

/// NumPy's broadcast of several shapes.
pub(super) fn broadcast_shapes(op: &str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let nd = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; nd];
    for s in shapes {
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[nd - s.len() + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(Error::InvalidArgument(format!(
                    "{op}: incompatible shapes for broadcasting: {shapes:?}"
                )));
            }
        }
    }
    Ok(out)
}

/// JAX's `_check_shape`: the parameter shapes must broadcast to exactly
/// `shape`.
pub(super) fn check_shape(op: &str, shape: &[usize], params: &[&[usize]]) -> Result<()> {
    if params.is_empty() {
        return Ok(());
    }
    let mut all: Vec<&[usize]> = vec![shape];
    all.extend_from_slice(params);
    let b = broadcast_shapes(op, &all)?;
    if b != shape {
        return Err(Error::InvalidArgument(format!(
            "{op} parameter shapes must be broadcast-compatible with shape argument, and \
             the result of broadcasting the shapes must equal the shape argument, but got \
             result {b:?} for shape argument {shape:?}"
        )));
    }
    Ok(())
}

/// JAX's `_check_broadcast_shapes`: `shape`, checked against the
/// parameters, or the broadcast of the parameters' shapes.
pub(super) fn resolve_shape(
    op: &str,
    shape: Option<&[usize]>,
    params: &[&Array],
) -> Result<Vec<usize>> {
    let shapes = params
        .iter()
        .map(|p| p.try_shape())
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    match shape {
        None => broadcast_shapes(op, &refs),
        Some(s) => {
            check_shape(op, s, &refs)?;
            Ok(s.to_vec())
        }
    }
}

/// A parameter converted to `dtype` and broadcast to `shape`.
pub(super) fn param(x: &Array, dtype: DType, shape: &[usize]) -> Result<Array> {
    broadcast_to(&lax::convert_element_type(x, dtype, false)?, shape)
}

/// `dtypes.finfo(dtype).eps`.
pub(super) fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        DType::F16 => f16::EPSILON.to_f64(),
        DType::BF16 => bf16::EPSILON.to_f64(),
        _ => f32::EPSILON as f64,
    }
}

/// The float dtype an array of `dtype` promotes to (JAX's
/// `promote_dtypes_inexact` in 32-bit mode: integers and bools become
/// `f32`).
pub(super) fn inexact(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        DType::F32
    }
}
