//! JAX's `lax` conveniences over one axis (`dynamic_slice_in_dim` and its
//! siblings), `select`, `broadcast_shapes` and `dtype`.
//!
//! Each is a thin composition of the primitive functions of `lax/mod.rs`,
//! exactly as JAX composes them, so a traced call stages the same
//! equations JAX stages (zero start indices of the index's dtype on the
//! other axes).

use super::{dynamic_slice, dynamic_update_slice, expand_dims, select_n, squeeze};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::numpy::zeros;
use jaxon_ir::DType;

/// `starts` of a slice of `x` with negative values counted from the end of
/// their axes (JAX's `_dynamic_slice_indices`); a count that does not match
/// `x`'s rank is left for the primitive's shape rule to report.
pub(super) fn wrap_starts(op: &str, x: &Array, starts: &[Array]) -> Result<Vec<Array>> {
    let shape = x.try_shape()?;
    if starts.len() != shape.len() || starts.iter().any(|s| s.ndim() != 0) {
        return Ok(starts.to_vec());
    }
    starts
        .iter()
        .zip(&shape)
        .map(|(s, &n)| wrap_negative(op, s, n))
        .collect()
}

/// `start` with a negative value counted from the end of an axis of size
/// `dim`, as JAX's `lax.dynamic_slice` reads it: computed here for a
/// concrete index (no equation for a non-negative one), staged as
/// `select_n(start < 0, start, start + dim)` for a traced one. Unsigned
/// indices are left alone.
fn wrap_negative(op: &str, start: &Array, dim: usize) -> Result<Array> {
    let d = start.dtype();
    if !d.is_signed_int() {
        return Ok(start.clone());
    }
    if !start.is_tracer() {
        let v = start.try_to_host(op)?.data().get_f64(0);
        if v >= 0.0 {
            return Ok(start.clone());
        }
    }
    let size = super::convert_element_type(&Array::scalar(dim as i64), d, false)?;
    let negative = super::lt(start, &zeros(&[], d)?)?;
    let wrapped = super::add(start, &size)?;
    select_n(&negative, &[start.clone(), wrapped])
}

/// The start indices of a slice along `axis` only: `start` there, a zero
/// of `start`'s dtype on every other axis.
fn starts_on(op: &str, x: &Array, start: &Array, axis: usize) -> Result<Vec<Array>> {
    if axis >= x.ndim() {
        return Err(Error::InvalidArgument(format!(
            "{op}: axis {axis} is out of bounds for an operand of shape {:?}",
            x.shape()
        )));
    }
    if start.ndim() != 0 {
        return Err(Error::InvalidArgument(format!(
            "{op}: the index must be a scalar, got shape {:?}",
            start.shape()
        )));
    }
    let zero = zeros(&[], start.dtype())?;
    Ok((0..x.ndim())
        .map(|d| {
            if d == axis {
                start.clone()
            } else {
                zero.clone()
            }
        })
        .collect())
}

/// `lax.dynamic_slice_in_dim(x, start, size, axis)`: `size` elements of
/// `x` along `axis` from the traced `start` (a negative start counts from
/// the end; then clamped into bounds, as JAX's `dynamic_slice`), every
/// element along the other axes.
pub fn dynamic_slice_in_dim(x: &Array, start: &Array, size: usize, axis: usize) -> Result<Array> {
    let starts = starts_on("dynamic_slice_in_dim", x, start, axis)?;
    let mut sizes = x.shape();
    sizes[axis] = size;
    dynamic_slice(x, &starts, &sizes)
}

/// `lax.dynamic_index_in_dim(x, index, axis, keepdims)`: the slice of `x`
/// at the traced `index` along `axis`; with `keepdims` false the axis is
/// dropped.
pub fn dynamic_index_in_dim(
    x: &Array,
    index: &Array,
    axis: usize,
    keepdims: bool,
) -> Result<Array> {
    let slice = dynamic_slice_in_dim(x, index, 1, axis)?;
    if keepdims {
        Ok(slice)
    } else {
        squeeze(&slice, &[axis])
    }
}

/// `lax.dynamic_update_slice_in_dim(x, update, start, axis)`: `x` with
/// `update` written from the traced `start` along `axis` (and from 0 on
/// every other axis).
pub fn dynamic_update_slice_in_dim(
    x: &Array,
    update: &Array,
    start: &Array,
    axis: usize,
) -> Result<Array> {
    let starts = starts_on("dynamic_update_slice_in_dim", x, start, axis)?;
    dynamic_update_slice(x, update, &starts)
}

/// `lax.dynamic_update_index_in_dim(x, update, index, axis)`: `x` with the
/// slice at the traced `index` along `axis` replaced by `update`, which
/// either has that axis (of size 1) or lacks it.
pub fn dynamic_update_index_in_dim(
    x: &Array,
    update: &Array,
    index: &Array,
    axis: usize,
) -> Result<Array> {
    let update = if update.ndim() + 1 == x.ndim() {
        expand_dims(update, &[axis])?
    } else {
        update.clone()
    };
    dynamic_update_slice_in_dim(x, &update, index, axis)
}

/// `lax.select(pred, on_true, on_false)`: `on_true` where the boolean
/// `pred` holds, else `on_false` (`select_n(pred, on_false, on_true)`; no
/// broadcasting beyond a scalar `pred`).
pub fn select(pred: &Array, on_true: &Array, on_false: &Array) -> Result<Array> {
    if pred.dtype() != DType::Bool {
        return Err(Error::InvalidArgument(format!(
            "select: the predicate must be bool, got {}",
            pred.dtype()
        )));
    }
    select_n(pred, &[on_false.clone(), on_true.clone()])
}

/// `lax.broadcast_shapes(*shapes)`: the shape every one of `shapes`
/// broadcasts to under NumPy's rules (aligned at the trailing axis; a size
/// of 1 stretches), or an error naming the shapes that disagree.
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let offset = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[offset + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(Error::InvalidArgument(format!(
                    "broadcast_shapes: incompatible shapes for broadcasting: {:?}",
                    shapes
                )));
            }
        }
    }
    Ok(out)
}

/// `lax.dtype(x)`: the element type of `x`.
pub fn dtype(x: &Array) -> DType {
    x.dtype()
}
