//! Shape rules of the named-axis collectives: an all-reduce drops its
//! positional axes (named axes leave the shape alone), `all_gather` adds
//! the gathered dimension, `axis_index` is an `i32` scalar.

use super::{check_axis, fmt_ty, Cx};
use crate::aval::{Dim, ShapedArray};
use crate::error::IrError;
use crate::primitive::{AxisRef, CollectiveOp};

/// `psum`, `pmax`, `pmin`.
pub(crate) fn all_reduce(
    cx: &Cx,
    op: CollectiveOp,
    axes: &[AxisRef],
) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    if op == CollectiveOp::Sum && x.dtype.is_bool() {
        return Err(cx.err(format!("does not accept operand {}", fmt_ty(x))));
    }
    let mut pos = Vec::new();
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].contains(a) {
            return Err(cx.err(format!("duplicate axis {} in axes", a.repr())));
        }
        if let AxisRef::Pos(p) = a {
            check_axis(cx, *p, x.ndim(), "reduction axis")?;
            pos.push(*p);
        }
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape: x
            .shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !pos.contains(i))
            .map(|(_, d)| *d)
            .collect(),
        weak_type: x.weak_type,
    })
}

/// `all_gather`: a new dimension of `axis_size` at `dim` (tiled: that
/// dimension grows `axis_size` times).
pub(crate) fn all_gather(
    cx: &Cx,
    axis_name: &[String],
    dim: usize,
    axis_size: usize,
    tiled: bool,
) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    if axis_name.is_empty() {
        return Err(cx.err("needs at least one axis name"));
    }
    let mut shape = x.shape.clone();
    if tiled {
        check_axis(cx, dim, x.ndim(), "all_gather_dimension")?;
        shape[dim] = match shape[dim] {
            Dim::Const(n) => Dim::Const(n * axis_size),
            Dim::Var(_) => {
                return Err(cx.err(format!(
                    "a tiled gather of a dynamic dimension of {}",
                    fmt_ty(x)
                )))
            }
        };
    } else {
        check_axis(cx, dim, x.ndim() + 1, "all_gather_dimension")?;
        shape.insert(dim, Dim::Const(axis_size));
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape,
        weak_type: x.weak_type,
    })
}
