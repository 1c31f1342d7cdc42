//! Shape rules of reductions, arg-reductions, cumulative reductions, `sort`
//! and `top_k`.

use super::{check_axis, fmt_ty, Cx};
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{CumulativeOp, ReduceOp};

fn reduced_shape(cx: &Cx, x: &ShapedArray, axes: &[usize]) -> Result<Vec<Dim>, IrError> {
    for (i, &a) in axes.iter().enumerate() {
        check_axis(cx, a, x.ndim(), "reduction axis")?;
        if axes[..i].contains(&a) {
            return Err(cx.err(format!("duplicate value in axes {axes:?}")));
        }
    }
    Ok(x.shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(i))
        .map(|(_, d)| *d)
        .collect())
}

/// `reduce_sum`, `reduce_max`, ...
pub(crate) fn reduce(cx: &Cx, op: ReduceOp, axes: &[usize]) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    let ok = match op {
        ReduceOp::Sum | ReduceOp::Prod => !x.dtype.is_bool(),
        ReduceOp::Max | ReduceOp::Min => true,
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => !x.dtype.is_float(),
    };
    if !ok {
        return Err(cx.err(format!("does not accept operand {}", fmt_ty(x))));
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape: reduced_shape(cx, x, axes)?,
        weak_type: x.weak_type,
    })
}

/// `argmax`, `argmin`: one axis, an integer `index_dtype`.
pub(crate) fn arg_reduce(
    cx: &Cx,
    axes: &[usize],
    index_dtype: DType,
) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    if axes.len() != 1 {
        return Err(cx.err(format!("expects exactly one axis, got {axes:?}")));
    }
    if !index_dtype.is_int() {
        return Err(cx.err(format!(
            "index_dtype must be an integer type, got {}",
            index_dtype.numpy_name()
        )));
    }
    let shape = reduced_shape(cx, x, axes)?;
    if x.shape[axes[0]] == Dim::Const(0) {
        return Err(cx.err(format!(
            "cannot reduce over an empty axis {} of {}",
            axes[0],
            fmt_ty(x)
        )));
    }
    Ok(ShapedArray::new(index_dtype, shape))
}

/// `cumsum`, `cummax`, ...: same type out.
pub(crate) fn cumulative(cx: &Cx, op: CumulativeOp, axis: usize) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    check_axis(cx, axis, x.ndim(), "axis")?;
    let ok = match op {
        CumulativeOp::Cumsum | CumulativeOp::Cumprod => !x.dtype.is_bool(),
        CumulativeOp::Cummax | CumulativeOp::Cummin => true,
        CumulativeOp::Cumlogsumexp => x.dtype.is_float(),
    };
    if !ok {
        return Err(cx.err(format!("does not accept operand {}", fmt_ty(x))));
    }
    Ok(x.clone())
}

/// `sort`: all operands share a shape; outputs are the operand types.
pub(crate) fn sort(
    cx: &Cx,
    dimension: usize,
    num_keys: usize,
) -> Result<Vec<ShapedArray>, IrError> {
    cx.min_arity(1)?;
    let first = cx.arr(0)?;
    let mut out = Vec::with_capacity(cx.avals.len());
    for i in 0..cx.avals.len() {
        let a = cx.arr(i)?;
        if a.shape != first.shape {
            return Err(cx.err(format!(
                "operands must all have the same shape, got {} and {}",
                fmt_ty(first),
                fmt_ty(a)
            )));
        }
        out.push(a.clone());
    }
    check_axis(cx, dimension, first.ndim(), "dimension")?;
    if num_keys < 1 || num_keys > cx.avals.len() {
        return Err(cx.err(format!(
            "num_keys must be between 1 and the number of operands {}, got {num_keys}",
            cx.avals.len()
        )));
    }
    Ok(out)
}

/// `top_k`: values and `i32` indices with `k` along `axis`.
pub(crate) fn top_k(cx: &Cx, k: usize, axis: usize) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    check_axis(cx, axis, x.ndim(), "axis")?;
    if let Dim::Const(n) = x.shape[axis] {
        if k > n {
            return Err(cx.err(format!(
                "k argument to top_k must be no larger than the axis size, got k={k} for {}",
                fmt_ty(x)
            )));
        }
    }
    let mut shape = x.shape.clone();
    shape[axis] = Dim::Const(k);
    Ok(vec![
        ShapedArray {
            dtype: x.dtype,
            shape: shape.clone(),
            weak_type: x.weak_type,
        },
        ShapedArray::new(DType::I32, shape),
    ])
}
