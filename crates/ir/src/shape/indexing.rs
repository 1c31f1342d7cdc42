//! Shape rules of the indexing primitives: dynamic slices, `gather` and the
//! `scatter` family (XLA semantics, index vector in the last dim).

use super::{fmt_shape, fmt_ty, Cx};
use crate::aval::{Dim, ShapedArray};
use crate::error::IrError;
use crate::jaxpr::Jaxpr;
use crate::primitive::{GatherDimensionNumbers, ScatterDimensionNumbers};

fn dim_le(a: i64, d: Dim) -> bool {
    match d {
        Dim::Const(n) => 0 <= a && a <= n as i64,
        Dim::Var(_) => a >= 0,
    }
}

/// `dynamic_slice operand *starts`.
pub(crate) fn dynamic_slice(cx: &Cx, sizes: &[i64]) -> Result<ShapedArray, IrError> {
    cx.min_arity(1)?;
    let x = cx.arr(0)?;
    cx.arity(1 + x.ndim())?;
    for i in 1..cx.avals.len() {
        cx.int_scalar(i, "start index")?;
    }
    if sizes.len() != x.ndim() || sizes.iter().zip(&x.shape).any(|(&s, &d)| !dim_le(s, d)) {
        return Err(cx.err(format!(
            "slice_sizes {sizes:?} must have one entry per dimension of {} and fit inside it",
            fmt_ty(x)
        )));
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape: sizes.iter().map(|&s| Dim::Const(s as usize)).collect(),
        weak_type: x.weak_type,
    })
}

/// `dynamic_update_slice operand update *starts`.
pub(crate) fn dynamic_update_slice(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.min_arity(2)?;
    let (x, u) = (cx.arr(0)?, cx.arr(1)?);
    cx.arity(2 + x.ndim())?;
    for i in 2..cx.avals.len() {
        cx.int_scalar(i, "start index")?;
    }
    let fits = u.ndim() == x.ndim()
        && u.shape.iter().zip(&x.shape).all(|(&a, &b)| match a {
            Dim::Const(n) => dim_le(n as i64, b),
            // Two different dynamic sizes are only known at run time (the
            // interpreter checks the update fits).
            Dim::Var(_) => a == b || matches!(b, Dim::Var(_)),
        });
    if u.dtype != x.dtype || !fits {
        return Err(cx.err(format!(
            "update {} must have the operand's dtype and rank and fit inside operand {}",
            fmt_ty(u),
            fmt_ty(x)
        )));
    }
    Ok(x.clone())
}

fn distinct_in_range(cx: &Cx, what: &str, dims: &[i64], n: usize) -> Result<(), IrError> {
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 || d as usize >= n || dims[..i].contains(&d) {
            return Err(cx.err(format!(
                "{what} {dims:?} must be distinct and in range for rank {n}"
            )));
        }
    }
    Ok(())
}

/// `gather operand indices`.
pub(crate) fn gather(
    cx: &Cx,
    dn: &GatherDimensionNumbers,
    slice_sizes: &[i64],
) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (x, idx) = (cx.arr(0)?, cx.arr(1)?);
    if !idx.dtype.is_int() || idx.ndim() == 0 {
        return Err(cx.err(format!(
            "indices must be an integer array of rank >= 1, got {}",
            fmt_ty(idx)
        )));
    }
    let n = x.ndim();
    if slice_sizes.len() != n {
        return Err(cx.err(format!(
            "slice_sizes {slice_sizes:?} must have one entry per dimension of operand {}",
            fmt_ty(x)
        )));
    }
    for (&s, &d) in slice_sizes.iter().zip(&x.shape) {
        if !dim_le(s, d) {
            return Err(cx.err(format!(
                "slice_sizes {slice_sizes:?} must fit inside operand {}",
                fmt_ty(x)
            )));
        }
    }
    distinct_in_range(cx, "collapsed_slice_dims", &dn.collapsed_slice_dims, n)?;
    distinct_in_range(cx, "operand_batching_dims", &dn.operand_batching_dims, n)?;
    distinct_in_range(cx, "start_index_map", &dn.start_index_map, n)?;
    for &d in dn
        .collapsed_slice_dims
        .iter()
        .chain(dn.operand_batching_dims.iter())
    {
        if slice_sizes[d as usize] > 1 {
            return Err(cx.err(format!(
                "slice_sizes[{d}] must be 0 or 1 for a collapsed or batching dimension, got {slice_sizes:?}"
            )));
        }
    }
    let batch_shape = &idx.shape[..idx.ndim() - 1];
    let index_len = idx.shape[idx.ndim() - 1];
    if index_len != Dim::Const(dn.start_index_map.len()) {
        return Err(cx.err(format!(
            "the last dimension of indices {} must equal the length of start_index_map {:?}",
            fmt_ty(idx),
            &dn.start_index_map[..]
        )));
    }
    distinct_in_range(
        cx,
        "start_indices_batching_dims",
        &dn.start_indices_batching_dims,
        idx.ndim() - 1,
    )?;
    let window: Vec<Dim> = (0..n)
        .filter(|&i| {
            !dn.collapsed_slice_dims.contains(&(i as i64))
                && !dn.operand_batching_dims.contains(&(i as i64))
        })
        .map(|i| Dim::Const(slice_sizes[i] as usize))
        .collect();
    if window.len() != dn.offset_dims.len() {
        return Err(cx.err(format!(
            "offset_dims {:?} must have one entry per non-collapsed operand dimension ({})",
            &dn.offset_dims[..],
            window.len()
        )));
    }
    let out_rank = batch_shape.len() + window.len();
    distinct_in_range(cx, "offset_dims", &dn.offset_dims, out_rank)?;
    let mut offsets: Vec<usize> = dn.offset_dims.iter().map(|&d| d as usize).collect();
    offsets.sort_unstable();
    let (mut w, mut b) = (window.iter(), batch_shape.iter());
    let shape = (0..out_rank)
        .map(|i| {
            if offsets.binary_search(&i).is_ok() {
                w.next().copied()
            } else {
                b.next().copied()
            }
        })
        .collect::<Option<Vec<Dim>>>()
        .ok_or_else(|| cx.err("inconsistent gather dimension numbers"))?;
    Ok(ShapedArray::new(x.dtype, shape))
}

/// `scatter*` `operand indices updates`: the result has the operand's type.
pub(crate) fn scatter(
    cx: &Cx,
    dn: &ScatterDimensionNumbers,
    update_jaxpr: Option<&Jaxpr>,
) -> Result<ShapedArray, IrError> {
    cx.arity(3)?;
    let (x, idx, upd) = (cx.arr(0)?, cx.arr(1)?, cx.arr(2)?);
    if !idx.dtype.is_int() || idx.ndim() == 0 {
        return Err(cx.err(format!(
            "indices must be an integer array of rank >= 1, got {}",
            fmt_ty(idx)
        )));
    }
    if upd.dtype != x.dtype {
        return Err(cx.err(format!(
            "updates and operand must have the same dtype, got {} and {}",
            fmt_ty(x),
            fmt_ty(upd)
        )));
    }
    let n = x.ndim();
    distinct_in_range(cx, "inserted_window_dims", &dn.inserted_window_dims, n)?;
    distinct_in_range(cx, "operand_batching_dims", &dn.operand_batching_dims, n)?;
    distinct_in_range(
        cx,
        "scatter_dims_to_operand_dims",
        &dn.scatter_dims_to_operand_dims,
        n,
    )?;
    let batch_shape = &idx.shape[..idx.ndim() - 1];
    if idx.shape[idx.ndim() - 1] != Dim::Const(dn.scatter_dims_to_operand_dims.len()) {
        return Err(cx.err(format!(
            "the last dimension of indices {} must equal the length of scatter_dims_to_operand_dims {:?}",
            fmt_ty(idx),
            &dn.scatter_dims_to_operand_dims[..]
        )));
    }
    let want_rank = dn.update_window_dims.len() + batch_shape.len();
    if upd.ndim() != want_rank {
        return Err(cx.err(format!(
            "updates {} must have rank {want_rank} for indices {} and update_window_dims {:?}",
            fmt_ty(upd),
            fmt_ty(idx),
            &dn.update_window_dims[..]
        )));
    }
    distinct_in_range(cx, "update_window_dims", &dn.update_window_dims, upd.ndim())?;
    let operand_window: Vec<Dim> = (0..n)
        .filter(|&i| {
            !dn.inserted_window_dims.contains(&(i as i64))
                && !dn.operand_batching_dims.contains(&(i as i64))
        })
        .map(|i| x.shape[i])
        .collect();
    if operand_window.len() != dn.update_window_dims.len() {
        return Err(cx.err(format!(
            "update_window_dims {:?} must have one entry per operand window dimension of {}",
            &dn.update_window_dims[..],
            fmt_ty(x)
        )));
    }
    let mut windows: Vec<usize> = dn.update_window_dims.iter().map(|&d| d as usize).collect();
    windows.sort_unstable();
    let mut b = batch_shape.iter();
    for (i, &d) in upd.shape.iter().enumerate() {
        let ok = match windows.binary_search(&i) {
            Ok(k) => match (d, operand_window[k]) {
                (Dim::Const(u), od) => dim_le(u as i64, od),
                (Dim::Var(_), od) => d == od,
            },
            Err(_) => b.next() == Some(&d),
        };
        if !ok {
            return Err(cx.err(format!(
                "updates shape {} is inconsistent with operand {} and indices {}",
                fmt_shape(&upd.shape),
                fmt_ty(x),
                fmt_ty(idx)
            )));
        }
    }
    if let Some(j) = update_jaxpr {
        if j.invars.len() != 2 || j.outvars.len() != 1 {
            return Err(cx.err(format!(
                "update_jaxpr must take 2 inputs and give 1 output, got {} and {}",
                j.invars.len(),
                j.outvars.len()
            )));
        }
    }
    Ok(x.clone())
}
