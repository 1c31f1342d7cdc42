//! Shape rules of the structural primitives: broadcasts, reshapes,
//! transposes, pads, slices, concatenation, `iota`, `split`, `tile`, `stack`.

use super::{check_axis, fmt_shape, fmt_ty, static_size, Cx};
use crate::aval::{Dim, Shape, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::Ints;

/// Resolves a param shape whose `None` entries come from the operands
/// starting at `first_dyn`, which must be exactly as many as the `None`s.
fn dyn_shape(cx: &Cx, shape: &[Option<usize>], first_dyn: usize) -> Result<Shape, IrError> {
    let n_dyn = shape.iter().filter(|d| d.is_none()).count();
    cx.arity(first_dyn + n_dyn)?;
    let mut next = first_dyn;
    shape
        .iter()
        .map(|d| match d {
            Some(n) => Ok(Dim::Const(*n)),
            None => {
                next += 1;
                cx.dim_operand(next - 1)
            }
        })
        .collect()
}

/// `broadcast_in_dim`.
pub(crate) fn broadcast_in_dim(
    cx: &Cx,
    shape: &[Option<usize>],
    bdims: &[usize],
) -> Result<ShapedArray, IrError> {
    cx.min_arity(1)?;
    let x = cx.arr(0)?;
    let out = dyn_shape(cx, shape, 1)?;
    if bdims.len() != x.ndim() {
        return Err(cx.err(format!(
            "broadcast_dimensions must have length equal to operand ndim; got broadcast_dimensions {bdims:?} for operand {}",
            fmt_ty(x)
        )));
    }
    for (i, &bd) in bdims.iter().enumerate() {
        if bd >= out.len() {
            return Err(cx.err(format!(
                "broadcast_dimensions {bdims:?} out of range for result shape {}",
                fmt_shape(&out)
            )));
        }
        if i > 0 && bdims[i - 1] >= bd {
            return Err(cx.err(format!(
                "broadcast_dimensions must be strictly increasing, got {bdims:?}"
            )));
        }
        let d = x.shape[i];
        if d != Dim::Const(1) && d != out[bd] {
            return Err(cx.err(format!(
                "operand dimension sizes must be 1 or equal to their corresponding result dimensions; got operand {} and result shape {}",
                fmt_ty(x),
                fmt_shape(&out)
            )));
        }
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape: out,
        weak_type: x.weak_type,
    })
}

/// `reshape`.
pub(crate) fn reshape(
    cx: &Cx,
    new_sizes: &[Option<usize>],
    dimensions: Option<&[usize]>,
) -> Result<ShapedArray, IrError> {
    cx.min_arity(1)?;
    let x = cx.arr(0)?;
    let out = dyn_shape(cx, new_sizes, 1)?;
    if let Some(perm) = dimensions {
        check_permutation(cx, perm, x.ndim())?;
    }
    match (static_size(&x.shape), static_size(&out)) {
        (Some(a), Some(b)) if a != b => {
            return Err(cx.err(format!(
                "reshape total size must be unchanged, got new_sizes {} for operand {}",
                fmt_shape(&out),
                fmt_ty(x)
            )))
        }
        _ => {}
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape: out,
        weak_type: x.weak_type,
    })
}

fn check_permutation(cx: &Cx, perm: &[usize], ndim: usize) -> Result<(), IrError> {
    let mut seen = vec![false; ndim];
    if perm.len() != ndim {
        return Err(cx.err(format!(
            "permutation {perm:?} must have length {ndim} (the operand rank)"
        )));
    }
    for &p in perm {
        if p >= ndim || seen[p] {
            return Err(cx.err(format!(
                "permutation {perm:?} is not a permutation of 0..{ndim}"
            )));
        }
        seen[p] = true;
    }
    Ok(())
}

/// `transpose`.
pub(crate) fn transpose(cx: &Cx, perm: &[usize]) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    check_permutation(cx, perm, x.ndim())?;
    Ok(ShapedArray {
        dtype: x.dtype,
        shape: perm.iter().map(|&p| x.shape[p]).collect(),
        weak_type: x.weak_type,
    })
}

/// `squeeze`.
pub(crate) fn squeeze(cx: &Cx, dims: &[usize]) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    for (i, &d) in dims.iter().enumerate() {
        check_axis(cx, d, x.ndim(), "dimension")?;
        if dims[..i].contains(&d) {
            return Err(cx.err(format!("dimensions are not unique: {dims:?}")));
        }
        if x.shape[d] != Dim::Const(1) {
            return Err(cx.err(format!(
                "cannot select an axis to squeeze out which has size not equal to one, got shape {} and dimensions {dims:?}",
                fmt_ty(x)
            )));
        }
    }
    let shape = x
        .shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !dims.contains(i))
        .map(|(_, d)| *d)
        .collect();
    Ok(ShapedArray {
        dtype: x.dtype,
        shape,
        weak_type: x.weak_type,
    })
}

/// `rev`.
pub(crate) fn rev(cx: &Cx, dims: &[usize]) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    for (i, &d) in dims.iter().enumerate() {
        check_axis(cx, d, x.ndim(), "dimension")?;
        if dims[..i].contains(&d) {
            return Err(cx.err(format!("dimensions are not unique: {dims:?}")));
        }
    }
    Ok(x.clone())
}

/// `pad operand padding_value`, `(low, high, interior)` per dim.
pub(crate) fn pad(cx: &Cx, config: &[Ints]) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (x, v) = (cx.arr(0)?, cx.arr(1)?);
    if x.dtype != v.dtype || !v.shape.is_empty() {
        return Err(cx.err(format!(
            "padding value must be a scalar of the operand dtype, got operand {} and padding value {}",
            fmt_ty(x),
            fmt_ty(v)
        )));
    }
    if config.len() != x.ndim() || config.iter().any(|c| c.len() != 3) {
        return Err(cx.err(format!(
            "padding_config must have one (low, high, interior) triple per dimension of {}",
            fmt_ty(x)
        )));
    }
    let mut shape = Vec::with_capacity(x.ndim());
    for (d, c) in x.shape.iter().zip(config) {
        let (lo, hi, interior) = (c[0], c[1], c[2]);
        if interior < 0 {
            return Err(cx.err(format!(
                "interior padding must be nonnegative, got {interior}"
            )));
        }
        let Some(n) = d.as_const() else {
            if lo == 0 && hi == 0 && interior == 0 {
                shape.push(*d);
                continue;
            }
            return Err(cx.err(format!("cannot pad a dynamic dimension of {}", fmt_ty(x))));
        };
        let n = n as i64;
        let size = lo + hi + n + (n - 1).max(0) * interior;
        if size < 0 {
            return Err(cx.err(format!(
                "dimension size after padding is negative ({size}) for operand {} and padding {:?}",
                fmt_ty(x),
                &c[..]
            )));
        }
        shape.push(Dim::Const(size as usize));
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape,
        weak_type: x.weak_type,
    })
}

/// `concatenate`.
pub(crate) fn concatenate(cx: &Cx, dim: usize) -> Result<ShapedArray, IrError> {
    cx.min_arity(1)?;
    let first = cx.arr(0)?;
    check_axis(cx, dim, first.ndim(), "concatenate dimension")?;
    let mut total = 0usize;
    let mut dynamic = None;
    for i in 0..cx.avals.len() {
        let a = cx.arr(i)?;
        let mismatch = a.dtype != first.dtype
            || a.ndim() != first.ndim()
            || a.shape
                .iter()
                .zip(&first.shape)
                .enumerate()
                .any(|(k, (p, q))| k != dim && p != q);
        if mismatch {
            return Err(cx.err(format!(
                "all operands must have the same dtype and the same shape except in dimension {dim}, got {} and {}",
                fmt_ty(first),
                fmt_ty(a)
            )));
        }
        match a.shape[dim].as_const() {
            Some(n) => total += n,
            None => dynamic = Some(a.shape[dim]),
        }
    }
    let mut shape = first.shape.clone();
    shape[dim] = match dynamic {
        Some(d) if cx.avals.len() == 1 => d,
        Some(_) => {
            return Err(cx.err(format!(
                "cannot concatenate dynamic dimensions, got {}",
                fmt_ty(first)
            )))
        }
        None => Dim::Const(total),
    };
    Ok(ShapedArray::new(first.dtype, shape))
}

/// `slice`.
pub(crate) fn slice(
    cx: &Cx,
    start: &[i64],
    limit: &[i64],
    strides: Option<&[i64]>,
) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    let n = x.ndim();
    if start.len() != n || limit.len() != n || strides.is_some_and(|s| s.len() != n) {
        return Err(cx.err(format!(
            "start_indices {start:?}, limit_indices {limit:?} and strides must each have one entry per dimension of {}",
            fmt_ty(x)
        )));
    }
    let mut shape = Vec::with_capacity(n);
    for i in 0..n {
        let stride = strides.map_or(1, |s| s[i]);
        if stride < 1 {
            return Err(cx.err(format!("strides must be positive, got {stride}")));
        }
        let (s, l) = (start[i], limit[i]);
        let bound_ok = match x.shape[i].as_const() {
            Some(d) => 0 <= s && s <= l && l <= d as i64,
            None => 0 <= s && s <= l,
        };
        if !bound_ok {
            return Err(cx.err(format!(
                "start_indices {start:?} and limit_indices {limit:?} are invalid for operand {}",
                fmt_ty(x)
            )));
        }
        shape.push(Dim::Const(((l - s + stride - 1) / stride) as usize));
    }
    Ok(ShapedArray {
        dtype: x.dtype,
        shape,
        weak_type: x.weak_type,
    })
}

/// `iota`.
pub(crate) fn iota(
    cx: &Cx,
    dtype: DType,
    shape: &[Option<usize>],
    dimension: usize,
) -> Result<ShapedArray, IrError> {
    let out = dyn_shape(cx, shape, 0)?;
    check_axis(cx, dimension, out.len(), "iota dimension")?;
    if dtype.is_bool() {
        return Err(cx.err("iota does not accept dtype bool"));
    }
    Ok(ShapedArray::new(dtype, out))
}

/// `split`: one output per size along `axis`.
pub(crate) fn split(cx: &Cx, sizes: &[i64], axis: usize) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    check_axis(cx, axis, x.ndim(), "axis")?;
    if sizes.iter().any(|&s| s < 0) {
        return Err(cx.err(format!("sizes must be nonnegative, got {sizes:?}")));
    }
    let total: i64 = sizes.iter().sum();
    if x.shape[axis] != Dim::Const(total as usize) {
        return Err(cx.err(format!(
            "sum of sizes {total} must be equal to dimension {axis} of the operand {}",
            fmt_ty(x)
        )));
    }
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut shape = x.shape.clone();
            shape[axis] = Dim::Const(s as usize);
            ShapedArray {
                dtype: x.dtype,
                shape,
                weak_type: x.weak_type,
            }
        })
        .collect())
}

/// `tile`.
pub(crate) fn tile(cx: &Cx, reps: &[i64]) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    if reps.len() != x.ndim() || reps.iter().any(|&r| r < 0) {
        return Err(cx.err(format!(
            "reps {reps:?} must have one nonnegative entry per dimension of {}",
            fmt_ty(x)
        )));
    }
    let shape = x
        .shape
        .iter()
        .zip(reps)
        .map(|(d, &r)| match (d, r) {
            (_, 1) => Ok(*d),
            (Dim::Const(n), r) => Ok(Dim::Const(n * r as usize)),
            (Dim::Var(_), _) => {
                Err(cx.err(format!("cannot tile a dynamic dimension of {}", fmt_ty(x))))
            }
        })
        .collect::<Result<_, _>>()?;
    Ok(ShapedArray {
        dtype: x.dtype,
        shape,
        weak_type: x.weak_type,
    })
}

/// `stack`: equal-typed operands stacked along a new axis.
pub(crate) fn stack(cx: &Cx, axis: usize) -> Result<ShapedArray, IrError> {
    cx.min_arity(1)?;
    let first = cx.arr(0)?;
    for i in 1..cx.avals.len() {
        let a = cx.arr(i)?;
        if a.dtype != first.dtype || a.shape != first.shape {
            return Err(cx.err(format!(
                "all input arrays must have the same type, got {} and {}",
                fmt_ty(first),
                fmt_ty(a)
            )));
        }
    }
    check_axis(cx, axis, first.ndim() + 1, "axis")?;
    let mut shape = first.shape.clone();
    shape.insert(axis, Dim::Const(cx.avals.len()));
    Ok(ShapedArray::new(first.dtype, shape))
}
