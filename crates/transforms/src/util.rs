//! Small helpers shared by the rules: zeros, broadcasting a tangent to a
//! result shape, summing a cotangent back to an operand's shape, and the
//! gather that inverts a scatter's placement.

use jaxon_ir::primitive::{
    FillValue, GatherDimensionNumbers, GatherScatterMode, Ints, ScatterDimensionNumbers,
};
use jaxon_ir::primitive::{GatherParams, Indexing};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::Result;
use jaxon_trace::{bind1, lax, Array};

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
    dtype.is_inexact()
}

/// The gather that reads back, for every update element, the operand
/// element a scatter with dimension numbers `d` wrote it to. Windows the
/// scatter dropped (out of bounds) read 0.
pub(crate) fn scatter_inverse_gather(
    d: &ScatterDimensionNumbers,
    v: &Array,
    idx: &Array,
    upd_shape: &[usize],
    indices_are_sorted: bool,
    mode: GatherScatterMode,
    unique_indices: bool,
) -> Result<Array> {
    let mut slice_sizes = Vec::new();
    let mut pos = 0;
    for i in 0..v.ndim() {
        let i = i as i64;
        if d.inserted_window_dims.contains(&i) || d.operand_batching_dims.contains(&i) {
            slice_sizes.push(1);
        } else {
            slice_sizes.push(upd_shape[d.update_window_dims[pos] as usize] as i64);
            pos += 1;
        }
    }
    let gather = Primitive::Indexing(Indexing::Gather(GatherParams {
        dimension_numbers: GatherDimensionNumbers {
            offset_dims: d.update_window_dims.clone(),
            collapsed_slice_dims: d.inserted_window_dims.clone(),
            start_index_map: d.scatter_dims_to_operand_dims.clone(),
            operand_batching_dims: d.operand_batching_dims.clone(),
            start_indices_batching_dims: d.scatter_indices_batching_dims.clone(),
        },
        fill_value: Some(if v.dtype().is_float() {
            FillValue::Float(0.0)
        } else {
            FillValue::Int(0)
        }),
        indices_are_sorted,
        mode,
        slice_sizes: Ints::new(slice_sizes),
        unique_indices,
    }));
    bind1(&gather, &[v.clone(), idx.clone()])
}

/// The trip count of a `for_loop` with these bounds (`i64` scalars), as
/// the reference interpreter counts it: `ceil((upper - lower) / step)`,
/// at least 0 (with `apply_reverse_transform` the step may be negative).
pub fn for_trip_count(lower: &Array, upper: &Array, step: &Array, reverse: bool) -> Result<Array> {
    let i64 = |v: f64| Array::from_host(jaxon_ir::HostArray::scalar(DType::I64, v));
    let dist = lax::sub(upper, lower)?;
    // `(dist + step - 1) / step` rounds up for a positive step, `(dist +
    // step + 1) / step` for a negative one (division truncates).
    let bias = if reverse {
        let pos = lax::gt(step, &i64(0.0))?;
        lax::select_n(
            &pos,
            &[lax::add(step, &i64(1.0))?, lax::sub(step, &i64(1.0))?],
        )?
    } else {
        lax::sub(step, &i64(1.0))?
    };
    let q = lax::div(&lax::add(&dist, &bias)?, step)?;
    lax::max(&q, &i64(0.0))
}

/// Whether a jaxpr has a dynamic dimension in any variable's type.
pub fn jaxpr_is_dynamic(j: &jaxon_ir::Jaxpr) -> bool {
    j.vars
        .iter()
        .any(|a| a.array().shape.iter().any(|d| d.as_const().is_none()))
}

/// `x` with dimensions `target` (a reshape when they are not the same).
pub fn pin(x: &Array, target: &[jaxon_trace::dynshape::Size]) -> Result<Array> {
    let s = jaxon_trace::dynshape::sizes(x)?;
    if s.len() == target.len() && s.iter().zip(target).all(|(a, b)| a.same(b)) {
        return Ok(x.clone());
    }
    jaxon_trace::dynshape::reshape(x, target)
}

/// `axis` (negative: from the end) as an index into `rank` dimensions;
/// `what` names the argument in the error (`"vmap in_axes (input leaf 0)"`).
pub(crate) fn normalize_axis(axis: isize, rank: usize, what: &str) -> Result<usize> {
    let r = rank as isize;
    if axis >= r || axis < -r {
        return Err(jaxon_trace::error::Error::InvalidArgument(format!(
            "{what}: axis {axis} is out of bounds for an array of rank {rank}"
        )));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}
