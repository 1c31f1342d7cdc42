//! Small helpers shared by the rules: zeros, broadcasting a tangent to a
//! result shape, and summing a cotangent back to an operand's shape.

use jaxon_ir::DType;
use jaxon_trace::error::Result;
use jaxon_trace::{lax, Array};

pub use jaxon_trace::numpy::zeros_like;

/// A scalar of `x`'s dtype.
pub fn scalar_like(x: &Array, v: f64) -> Result<Array> {
    lax::convert_element_type(&Array::weak(v), x.dtype(), false)
}

/// `t` broadcast to `shape` the way an n-ary elementwise primitive
/// broadcasts its operands (rank 0, or size-1 dims of an equal rank).
pub fn broadcast_operand(t: &Array, shape: &[usize]) -> Result<Array> {
    let ts = t.try_shape()?;
    if ts.as_slice() == shape {
        return Ok(t.clone());
    }
    if ts.is_empty() {
        return lax::broadcast_in_dim(t, shape, &[]);
    }
    let keep: Vec<usize> = (0..ts.len()).filter(|&i| ts[i] == shape[i]).collect();
    let squeeze: Vec<usize> = (0..ts.len()).filter(|&i| ts[i] != shape[i]).collect();
    let t = lax::squeeze(t, &squeeze)?;
    lax::broadcast_in_dim(&t, shape, &keep)
}

/// [`unbroadcast`] to the type `target`, which may have dynamic
/// dimensions (a dynamic operand of a binary op has the result's shape, or
/// is a scalar).
pub fn unbroadcast_to(ct: &Array, target: &jaxon_ir::ShapedArray) -> Result<Array> {
    if ct.ty().shape == target.shape {
        return Ok(ct.clone());
    }
    // `target`'s dimension variables belong to the linear jaxpr, `ct`'s to
    // the trace running the backward pass, so they cannot be compared; a
    // dynamic operand of the same rank has the result's shape (dynamic
    // dimensions never broadcast).
    let dynamic = target.static_sizes().is_none();
    if dynamic && ct.ndim() == target.shape.len() {
        return Ok(ct.clone());
    }
    if target.shape.is_empty() {
        let axes: Vec<usize> = (0..ct.ndim()).collect();
        return lax::reduce(jaxon_ir::primitive::ReduceOp::Sum, ct, &axes);
    }
    let sizes = target
        .static_sizes()
        .ok_or_else(|| ct.concretization_error("unbroadcasting to a dynamic shape"))?;
    unbroadcast(ct, &sizes)
}

/// Sums a cotangent of result shape back to an operand of `shape`: the
/// transpose of [`broadcast_operand`].
pub fn unbroadcast(ct: &Array, shape: &[usize]) -> Result<Array> {
    let cs = ct.try_shape()?;
    if cs.as_slice() == shape {
        return Ok(ct.clone());
    }
    if shape.is_empty() {
        let axes: Vec<usize> = (0..cs.len()).collect();
        return lax::reduce(jaxon_ir::primitive::ReduceOp::Sum, ct, &axes);
    }
    let axes: Vec<usize> = (0..cs.len()).filter(|&i| shape[i] != cs[i]).collect();
    let summed = lax::reduce(jaxon_ir::primitive::ReduceOp::Sum, ct, &axes)?;
    lax::reshape(&summed, shape)
}

/// Whether values of `dtype` carry tangents (floats do; integers and bools
/// get JAX's `float0`, which we represent as no tangent).
pub fn has_tangent(dtype: DType) -> bool {
    dtype.is_float()
}
