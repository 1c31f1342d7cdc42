//! Reductions of the NumPy API: `sum`, `prod`, `max`, `min`, `all`, `any`,
//! `mean`, `argmax`, `argmin`, with axes and `keepdims`.
//!
//! Invariant: axes are normalised (negative axes count from the end) and
//! deduplicated before a primitive sees them.

use super::normalize_axis;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::{ArgOp, ReduceOp};
use jaxon_ir::DType;

/// Which axes a reduction covers.
pub trait IntoAxes {
    /// The normalised axes for an operand of rank `ndim`.
    fn into_axes(self, ndim: usize) -> Result<Vec<usize>>;
}

/// Every axis (NumPy's `axis=None`).
#[derive(Clone, Copy, Debug)]
pub struct All;

impl IntoAxes for All {
    fn into_axes(self, ndim: usize) -> Result<Vec<usize>> {
        Ok((0..ndim).collect())
    }
}

macro_rules! int_axes {
    ($($t:ty),*) => {$(
        impl IntoAxes for $t {
            fn into_axes(self, ndim: usize) -> Result<Vec<usize>> {
                Ok(vec![normalize_axis(self as isize, ndim, "reduction")?])
            }
        }
        impl IntoAxes for &[$t] {
            fn into_axes(self, ndim: usize) -> Result<Vec<usize>> {
                let mut v = self
                    .iter()
                    .map(|&a| normalize_axis(a as isize, ndim, "reduction"))
                    .collect::<Result<Vec<_>>>()?;
                v.sort_unstable();
                let n = v.len();
                v.dedup();
                if v.len() != n {
                    return Err(Error::InvalidArgument(format!("repeated axis in {self:?}")));
                }
                Ok(v)
            }
        }
        impl<const N: usize> IntoAxes for [$t; N] {
            fn into_axes(self, ndim: usize) -> Result<Vec<usize>> {
                self.as_slice().into_axes(ndim)
            }
        }
        impl IntoAxes for Vec<$t> {
            fn into_axes(self, ndim: usize) -> Result<Vec<usize>> {
                self.as_slice().into_axes(ndim)
            }
        }
    )*};
}

int_axes!(i32, i64, isize, usize);

impl<T: IntoAxes> IntoAxes for Option<T> {
    fn into_axes(self, ndim: usize) -> Result<Vec<usize>> {
        match self {
            Some(a) => a.into_axes(ndim),
            None => All.into_axes(ndim),
        }
    }
}

/// Re-inserts reduced axes as size 1 (`keepdims=True`).
fn keep_dims(out: Array, axes: &[usize], keepdims: bool) -> Result<Array> {
    if keepdims {
        lax::expand_dims(&out, axes)
    } else {
        Ok(out)
    }
}

/// The accumulation dtype NumPy sums and products use: bools and narrow
/// integers widen to 32 bits.
fn sum_dtype(d: DType) -> DType {
    match d {
        DType::Bool | DType::I8 | DType::I16 => DType::I32,
        DType::U8 | DType::U16 => DType::U32,
        d => d,
    }
}

fn reduce_with(
    op: ReduceOp,
    x: &Array,
    axes: impl IntoAxes,
    keepdims: bool,
    widen: bool,
) -> Result<Array> {
    let axes = axes.into_axes(x.ndim())?;
    let x = if widen {
        lax::convert_element_type(x, sum_dtype(x.dtype()), false)?
    } else {
        x.clone()
    };
    let out = lax::reduce(op, &x, &axes)?;
    keep_dims(out, &axes, keepdims)
}

/// `jnp.sum(x, axis, keepdims)`.
pub fn sum(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    reduce_with(ReduceOp::Sum, x, axes, keepdims, true)
}

/// `jnp.prod(x, axis, keepdims)`.
pub fn prod(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    reduce_with(ReduceOp::Prod, x, axes, keepdims, true)
}

/// `jnp.max(x, axis, keepdims)`.
pub fn max(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    reduce_with(ReduceOp::Max, x, axes, keepdims, false)
}

/// `jnp.min(x, axis, keepdims)`.
pub fn min(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    reduce_with(ReduceOp::Min, x, axes, keepdims, false)
}

/// `jnp.all(x, axis, keepdims)`.
pub fn all(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    let b = lax::convert_element_type(x, DType::Bool, false)?;
    reduce_with(ReduceOp::And, &b, axes, keepdims, false)
}

/// `jnp.any(x, axis, keepdims)`.
pub fn any(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    let b = lax::convert_element_type(x, DType::Bool, false)?;
    reduce_with(ReduceOp::Or, &b, axes, keepdims, false)
}

/// `jnp.mean(x, axis, keepdims)`: integers average as `f32`.
pub fn mean(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    let axes = axes.into_axes(x.ndim())?;
    if crate::dynshape::is_dynamic(x) {
        // The count is the staged product of the reduced sizes.
        let sizes = crate::dynshape::sizes(x)?;
        let mut count = crate::dynshape::Size::Const(1);
        for &a in &axes {
            count = crate::dynshape::mul_sizes(&count, &sizes[a])?;
        }
        let x = lax::convert_element_type(x, super::promote::float_dtype_of(x.dtype()), false)?;
        let s = sum(&x, axes.as_slice(), keepdims)?;
        let n = lax::convert_element_type(&count.to_array(), s.dtype(), false)?;
        return lax::div(&s, &n);
    }
    let shape = x.try_shape()?;
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    let x = lax::convert_element_type(x, super::promote::float_dtype_of(x.dtype()), false)?;
    let s = sum(&x, axes.as_slice(), keepdims)?;
    let n = lax::convert_element_type(&Array::weak(count as f64), s.dtype(), false)?;
    lax::div(&s, &n)
}

fn arg(op: ArgOp, x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    match axis {
        Some(a) => {
            let a = normalize_axis(a, x.ndim(), op_name(op))?;
            let out = lax::arg_reduce(op, x, a, DType::I32)?;
            keep_dims(out, &[a], keepdims)
        }
        None => {
            let flat = lax::reshape(x, &[x.size()])?;
            let out = lax::arg_reduce(op, &flat, 0, DType::I32)?;
            if keepdims {
                lax::reshape(&out, &vec![1; x.ndim()])
            } else {
                Ok(out)
            }
        }
    }
}

fn op_name(op: ArgOp) -> &'static str {
    match op {
        ArgOp::Argmax => "argmax",
        ArgOp::Argmin => "argmin",
    }
}

/// `jnp.argmax(x, axis, keepdims)` (`i32` indices; first index on ties).
pub fn argmax(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg(ArgOp::Argmax, x, axis, keepdims)
}

/// `jnp.argmin(x, axis, keepdims)`.
pub fn argmin(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg(ArgOp::Argmin, x, axis, keepdims)
}
