//! Creation and structural operations whose sizes may be traced:
//! `full`/`ones`/`zeros`/`empty`, `iota`/`arange`, `broadcast_in_dim`,
//! `reshape`, `dynamic_slice` and `concatenate`.
//!
//! Each stages the primitive JAX's dynamic-shape mode staged: a dynamic
//! size is a `None` in the shape param plus a trailing scalar operand
//! (`broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] a`).

use super::{add_sizes, shape_param, sizes, Size};
use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::{BroadcastInDimParams, IotaParams, ReshapeParams};
use jaxon_ir::primitive::{GatherDimensionNumbers, GatherScatterMode, Ints};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{DType, HostArray, Primitive};

/// `lax.broadcast_in_dim(x, shape, broadcast_dimensions)` with sizes that
/// may be traced.
pub fn broadcast_in_dim(
    x: &Array,
    shape: &[Size],
    broadcast_dimensions: &[usize],
) -> Result<Array> {
    let (param, dyn_ops) = shape_param(shape.to_vec())?;
    if dyn_ops.is_empty() {
        let sizes: Vec<usize> = param.iter().map(|d| d.unwrap_or(0)).collect();
        return lax::broadcast_in_dim(x, &sizes, broadcast_dimensions);
    }
    let mut args = vec![x.clone()];
    args.extend(dyn_ops);
    bind1(
        &Primitive::from(BroadcastInDimParams {
            shape: param,
            broadcast_dimensions: broadcast_dimensions.into(),
        }),
        &args,
    )
}

/// `jnp.full(shape, value, dtype)`: `value` (a scalar or an array
/// broadcast along trailing dimensions) converted to `dtype`.
pub fn full(shape: &[Size], value: &Array, dtype: Option<DType>) -> Result<Array> {
    let dtype = dtype.unwrap_or_else(|| value.dtype());
    let v = lax::convert_element_type(value, dtype, false)?;
    let n = shape.len();
    if v.ndim() > n {
        return Err(Error::ShapeMismatch {
            op: "full".into(),
            lhs: fmt_aval(v.aval()),
            rhs: format!("a shape of rank {n}"),
        });
    }
    let dims: Vec<usize> = (n - v.ndim()..n).collect();
    broadcast_in_dim(&v, shape, &dims)
}

fn typed(dtype: DType, x: f64) -> Array {
    Array::from_host(HostArray::scalar(dtype, x))
}

/// `jnp.ones(shape, dtype)` with sizes that may be traced.
pub fn ones(shape: &[Size], dtype: DType) -> Result<Array> {
    full(shape, &typed(dtype, 1.0), Some(dtype))
}

/// `jnp.zeros(shape, dtype)` with sizes that may be traced.
pub fn zeros(shape: &[Size], dtype: DType) -> Result<Array> {
    full(shape, &typed(dtype, 0.0), Some(dtype))
}

/// `jnp.empty(shape, dtype)`: zeros, as in JAX.
pub fn empty(shape: &[Size], dtype: DType) -> Result<Array> {
    zeros(shape, dtype)
}

/// `lax.broadcasted_iota(dtype, shape, dimension)` with sizes that may be
/// traced.
pub fn broadcasted_iota(dtype: DType, shape: &[Size], dimension: usize) -> Result<Array> {
    if dimension >= shape.len() {
        return Err(Error::InvalidArgument(format!(
            "iota: dimension {dimension} out of range for rank {}",
            shape.len()
        )));
    }
    let (param, dyn_ops) = shape_param(shape.to_vec())?;
    bind1(
        &Primitive::from(IotaParams {
            dtype,
            shape: param,
            dimension,
        }),
        &dyn_ops,
    )
}

/// `lax.iota(dtype, size)` with a size that may be traced.
pub fn iota(dtype: DType, size: impl Into<Size>) -> Result<Array> {
    broadcasted_iota(dtype, &[size.into()], 0)
}

/// `jnp.arange(stop, dtype=dtype)` with a stop that may be traced (an
/// `iota` of that size).
pub fn arange(stop: impl Into<Size>, dtype: DType) -> Result<Array> {
    iota(dtype, stop)
}

/// `lax.reshape(x, new_sizes)` with sizes that may be traced. The element
/// count is checked when the program runs.
pub fn reshape(x: &Array, new_sizes: &[Size]) -> Result<Array> {
    let (param, dyn_ops) = shape_param(new_sizes.to_vec())?;
    if dyn_ops.is_empty() && !super::is_dynamic(x) {
        let s: Vec<usize> = param.iter().map(|d| d.unwrap_or(0)).collect();
        return lax::reshape(x, &s);
    }
    let mut args = vec![x.clone()];
    args.extend(dyn_ops);
    bind1(
        &Primitive::from(ReshapeParams {
            new_sizes: param,
            dimensions: None,
        }),
        &args,
    )
}

/// `lax.dynamic_slice(x, starts, sizes)`. Static sizes stage a
/// `dynamic_slice`; a traced size slices that axis by gathering
/// `start + iota(size)` (starts clamp into bounds either way): rows along
/// that axis when the other axes are static, else single elements over the
/// whole box (an operand with other dynamic axes).
pub fn dynamic_slice(x: &Array, starts: &[Array], slice_sizes: &[Size]) -> Result<Array> {
    if starts.len() != x.ndim() || slice_sizes.len() != x.ndim() {
        return Err(Error::InvalidArgument(format!(
            "dynamic_slice of {} needs {} starts and sizes, got {} and {}",
            fmt_aval(x.aval()),
            x.ndim(),
            starts.len(),
            slice_sizes.len()
        )));
    }
    let norm = slice_sizes
        .iter()
        .cloned()
        .map(Size::normalize)
        .collect::<Result<Vec<_>>>()?;
    if let Some(stat) = norm.iter().map(Size::as_const).collect::<Option<Vec<_>>>() {
        if !super::is_dynamic(x) {
            return lax::dynamic_slice_clamped(x, starts, &stat);
        }
    }
    let full_sizes = sizes(x)?;
    let sliced: Vec<usize> = (0..x.ndim())
        .filter(|&k| !norm[k].same(&full_sizes[k]))
        .collect();
    // A gather's slice sizes are static: a row gather along one axis
    // needs every other axis static; otherwise gather single elements at
    // every point of the box.
    let others_static =
        |axis: usize| (0..x.ndim()).all(|k| k == axis || full_sizes[k].as_const().is_some());
    if sliced.len() > 1 || sliced.iter().any(|&a| !others_static(a)) {
        return take_box(x, starts, &norm, &full_sizes);
    }
    let mut out = x.clone();
    for (axis, (size, start)) in norm.iter().zip(starts).enumerate() {
        if size.same(&full_sizes[axis]) {
            continue;
        }
        out = take_range(&out, axis, start, size, &full_sizes[axis])?;
    }
    Ok(out)
}

/// `x` restricted along `axis` to `size` elements from `start` (clamped to
/// `[0, len - size]`, like `dynamic_slice`): a `gather` of the rows
/// `start + iota(size)`. The other axes must be static (a gather's slice
/// sizes are).
fn take_range(x: &Array, axis: usize, start: &Array, size: &Size, len: &Size) -> Result<Array> {
    let slice_sizes: Option<Vec<usize>> = x
        .ty()
        .shape
        .iter()
        .enumerate()
        .map(|(k, d)| if k == axis { Some(1) } else { d.as_const() })
        .collect();
    let Some(slice_sizes) = slice_sizes else {
        return Err(Error::Unsupported(format!(
            "dynamic_slice with a traced size of {} whose other axes are dynamic",
            fmt_aval(x.aval())
        )));
    };
    let i64 = DType::I64;
    let start = lax::convert_element_type(start, i64, false)?;
    let hi = lax::sub(&len.to_array(), &size.to_array())?;
    let s = lax::clamp(&typed(i64, 0.0), &start, &hi)?;
    let idx = lax::add(&iota(i64, size.clone())?, &s)?;
    let idx = broadcast_in_dim(&idx, &[size.clone(), Size::Const(1)], &[0])?;
    let rank = x.ndim();
    let offset_dims: Vec<usize> = (0..axis).chain(axis + 1..rank).collect();
    crate::numpy::manip_gather(
        x,
        &idx,
        GatherDimensionNumbers {
            offset_dims: Ints::from(offset_dims.as_slice()),
            collapsed_slice_dims: Ints::new(vec![axis as i64]),
            start_index_map: Ints::new(vec![axis as i64]),
            ..Default::default()
        },
        &slice_sizes,
        GatherScatterMode::PromiseInBounds,
        None,
        false,
    )
}

/// `x` restricted to the box of `size` elements from `start` on every
/// axis (starts clamped to `[0, len - size]`, like `dynamic_slice`), for
/// operands whose kept axes are dynamic: a `gather` of single elements
/// whose indices are `start + iota(size)` broadcast over the box.
fn take_box(x: &Array, starts: &[Array], size: &[Size], len: &[Size]) -> Result<Array> {
    let i64 = DType::I64;
    let rank = x.ndim();
    let mut cols = Vec::with_capacity(rank);
    let mut col_shape = size.to_vec();
    col_shape.push(Size::Const(1));
    let dims: Vec<usize> = (0..rank).collect();
    for axis in 0..rank {
        let mut idx = broadcasted_iota(i64, size, axis)?;
        // An axis kept whole starts at 0 (the start clamps to it).
        if !size[axis].same(&len[axis]) {
            let start = lax::convert_element_type(&starts[axis], i64, false)?;
            let hi = lax::sub(&len[axis].to_array(), &size[axis].to_array())?;
            let s = lax::clamp(&typed(i64, 0.0), &start, &hi)?;
            idx = lax::add(&idx, &s)?;
        }
        cols.push(broadcast_in_dim(&idx, &col_shape, &dims)?);
    }
    let idx = concatenate(&cols, rank)?;
    let all: Vec<i64> = (0..rank as i64).collect();
    crate::numpy::manip_gather(
        x,
        &idx,
        GatherDimensionNumbers {
            offset_dims: Ints::new(Vec::new()),
            collapsed_slice_dims: Ints::new(all.clone()),
            start_index_map: Ints::new(all),
            ..Default::default()
        },
        &vec![1; rank],
        GatherScatterMode::PromiseInBounds,
        None,
        false,
    )
}

/// `jnp.concatenate(xs, axis)` for arrays with dynamic sizes: the result's
/// size along `axis` is the (staged) sum of the operands' sizes, a new
/// dimension variable; the operands are written into a zero buffer of that
/// size with `dynamic_update_slice`. Static shapes stage a `concatenate`.
pub fn concatenate(xs: &[Array], axis: usize) -> Result<Array> {
    let Some(first) = xs.first() else {
        return Err(Error::InvalidArgument(
            "concatenate needs at least one array".into(),
        ));
    };
    if !xs.iter().any(super::is_dynamic) {
        return lax::concatenate(xs, axis);
    }
    if xs.len() == 1 {
        return Ok(first.clone());
    }
    let shapes = xs.iter().map(sizes).collect::<Result<Vec<_>>>()?;
    let base = &shapes[0];
    if axis >= base.len() {
        return Err(Error::InvalidArgument(format!(
            "concatenate: axis {axis} out of range for {}",
            fmt_aval(first.aval())
        )));
    }
    for (x, s) in xs.iter().zip(&shapes).skip(1) {
        let ok = x.dtype() == first.dtype()
            && s.len() == base.len()
            && s.iter()
                .zip(base)
                .enumerate()
                .all(|(k, (a, b))| k == axis || a.same(b));
        if !ok {
            return Err(Error::ShapeMismatch {
                op: format!("concatenate along axis {axis}"),
                lhs: fmt_aval(first.aval()),
                rhs: fmt_aval(x.aval()),
            });
        }
    }
    let mut total = shapes[0][axis].clone();
    for s in &shapes[1..] {
        total = add_sizes(&total, &s[axis])?;
    }
    let mut out_shape = base.clone();
    out_shape[axis] = total;
    let mut out = zeros(&out_shape, first.dtype())?;
    let zero = typed(DType::I64, 0.0);
    let mut offset = Size::Const(0);
    for (x, s) in xs.iter().zip(&shapes) {
        let starts: Vec<Array> = (0..base.len())
            .map(|k| {
                if k == axis {
                    offset.to_array()
                } else {
                    zero.clone()
                }
            })
            .collect();
        out = lax::dynamic_update_slice_clamped(&out, x, &starts)?;
        offset = add_sizes(&offset, &s[axis])?;
    }
    Ok(out)
}
