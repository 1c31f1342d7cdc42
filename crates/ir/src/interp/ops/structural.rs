//! Shape kernels: broadcast, reshape, transpose, squeeze, rev, pad,
//! concatenate, iota, split, tile and stack, as index maps over storage.

use super::{
    affine_map, check_axis, concat_storage, next_index, strides, take, take_or_fill, FILL,
};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::Ints;

/// Fills `None` sizes from the trailing scalar operands, in order.
fn resolve_shape(
    name: &str,
    shape: &[Option<usize>],
    dyn_args: &[HostArray],
) -> Result<Vec<usize>, IrError> {
    let mut it = dyn_args.iter();
    shape
        .iter()
        .map(|d| match d {
            Some(n) => Ok(*n),
            None => {
                let a = it
                    .next()
                    .ok_or_else(|| IrError::ty(name, "missing a dynamic size operand"))?;
                if a.len() != 1 {
                    return Err(IrError::ty(name, "dynamic size operands must be scalars"));
                }
                Ok(a.data().get_i64(0).max(0) as usize)
            }
        })
        .collect()
}

fn first<'a>(name: &str, args: &'a [HostArray]) -> Result<&'a HostArray, IrError> {
    args.first()
        .ok_or_else(|| IrError::ty(name, "missing the operand"))
}

/// `broadcast_in_dim`.
pub(crate) fn broadcast_in_dim(
    args: &[HostArray],
    shape: &[Option<usize>],
    bdims: &[usize],
) -> Result<HostArray, IrError> {
    let name = "broadcast_in_dim";
    let x = first(name, args)?;
    let out_shape = resolve_shape(name, shape, &args[1..])?;
    if bdims.len() != x.ndim() {
        return Err(IrError::ty(
            name,
            format!(
                "broadcast_dimensions {bdims:?} for operand shape {:?}",
                x.shape()
            ),
        ));
    }
    let xs = strides(x.shape());
    let mut st = vec![0isize; out_shape.len()];
    for (i, &d) in bdims.iter().enumerate() {
        check_axis(name, d, out_shape.len())?;
        let n = x.shape()[i];
        if n != 1 && n != out_shape[d] {
            return Err(IrError::ty(
                name,
                format!(
                    "operand shape {:?} cannot broadcast to {:?}",
                    x.shape(),
                    out_shape
                ),
            ));
        }
        if n != 1 {
            st[d] = xs[i] as isize;
        }
    }
    let idx = affine_map(&out_shape, 0, &st);
    HostArray::new(out_shape, take(x.data(), &idx))
}

/// `reshape` (with an optional transpose first).
pub(crate) fn reshape(
    args: &[HostArray],
    new_sizes: &[Option<usize>],
    dimensions: Option<&[usize]>,
) -> Result<HostArray, IrError> {
    let name = "reshape";
    let x = first(name, args)?;
    let shape = resolve_shape(name, new_sizes, &args[1..])?;
    let x = match dimensions {
        Some(p) => transpose(x, p)?,
        None => x.clone(),
    };
    if shape.iter().product::<usize>() != x.len() {
        return Err(IrError::ty(
            name,
            format!("cannot reshape {:?} to {:?}", x.shape(), shape),
        ));
    }
    x.reshape(shape)
}

/// `transpose`: result dim `i` is operand dim `perm[i]`.
pub(crate) fn transpose(x: &HostArray, perm: &[usize]) -> Result<HostArray, IrError> {
    let mut seen = vec![false; x.ndim()];
    if perm.len() != x.ndim()
        || perm
            .iter()
            .any(|&p| p >= x.ndim() || std::mem::replace(&mut seen[p], true))
    {
        return Err(IrError::ty(
            "transpose",
            format!("permutation {perm:?} for shape {:?}", x.shape()),
        ));
    }
    let xs = strides(x.shape());
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let st: Vec<isize> = perm.iter().map(|&p| xs[p] as isize).collect();
    let idx = affine_map(&shape, 0, &st);
    HostArray::new(shape, take(x.data(), &idx))
}

/// `squeeze`: removes the listed size-1 dims.
pub(crate) fn squeeze(x: &HostArray, dims: &[usize]) -> Result<HostArray, IrError> {
    for &d in dims {
        check_axis("squeeze", d, x.ndim())?;
        if x.shape()[d] != 1 {
            return Err(IrError::ty(
                "squeeze",
                format!("dimension {d} of shape {:?} is not 1", x.shape()),
            ));
        }
    }
    let shape: Vec<usize> = (0..x.ndim())
        .filter(|d| !dims.contains(d))
        .map(|d| x.shape()[d])
        .collect();
    x.clone().reshape(shape)
}

/// `rev`: reverses the listed dims.
pub(crate) fn rev(x: &HostArray, dims: &[usize]) -> Result<HostArray, IrError> {
    let xs = strides(x.shape());
    let mut st: Vec<isize> = xs.iter().map(|&s| s as isize).collect();
    let mut base = 0isize;
    for &d in dims {
        check_axis("rev", d, x.ndim())?;
        if x.shape()[d] > 0 {
            base += (x.shape()[d] as isize - 1) * st[d];
        }
        st[d] = -st[d];
    }
    let idx = affine_map(x.shape(), base, &st);
    HostArray::new(x.shape().to_vec(), take(x.data(), &idx))
}

/// `pad` with (low, high, interior) per dim; low/high may be negative.
pub(crate) fn pad(x: &HostArray, value: &HostArray, config: &[Ints]) -> Result<HostArray, IrError> {
    let name = "pad";
    if config.len() != x.ndim() || config.iter().any(|c| c.len() != 3) {
        return Err(IrError::ty(
            name,
            format!("padding config for shape {:?}", x.shape()),
        ));
    }
    if value.dtype() != x.dtype() || value.len() != 1 {
        return Err(IrError::ty(
            name,
            "padding value must be a scalar of the operand dtype",
        ));
    }
    let mut shape = Vec::with_capacity(x.ndim());
    for (d, c) in config.iter().enumerate() {
        let (lo, hi, int) = (c[0], c[1], c[2]);
        let n = x.shape()[d] as i64;
        let core = if n == 0 { 0 } else { n + (n - 1) * int };
        let size = lo + hi + core;
        if int < 0 || size < 0 {
            return Err(IrError::ty(
                name,
                format!("invalid padding {c:?} for size {n}"),
            ));
        }
        shape.push(size as usize);
    }
    let xs = strides(x.shape());
    let total: usize = shape.iter().product();
    let mut idx = Vec::with_capacity(total);
    if total > 0 {
        let mut o = vec![0usize; shape.len()];
        loop {
            let mut src = 0usize;
            let mut inside = true;
            for d in 0..shape.len() {
                let p = o[d] as i64 - config[d][0];
                let step = config[d][2] + 1;
                if p < 0 || p % step != 0 || p / step >= x.shape()[d] as i64 {
                    inside = false;
                    break;
                }
                src += (p / step) as usize * xs[d];
            }
            idx.push(if inside { src } else { FILL });
            if !next_index(&mut o, &shape) {
                break;
            }
        }
    }
    HostArray::new(shape, take_or_fill(x.data(), &idx, value.data())?)
}

/// `concatenate` along `dim`.
pub(crate) fn concatenate(args: &[HostArray], dim: usize) -> Result<HostArray, IrError> {
    let name = "concatenate";
    let x0 = first(name, args)?;
    check_axis(name, dim, x0.ndim())?;
    let mut shape = x0.shape().to_vec();
    shape[dim] = 0;
    let mut offsets = Vec::with_capacity(args.len());
    let mut total = 0usize;
    for a in args {
        let ok = a.ndim() == x0.ndim()
            && (0..a.ndim()).all(|d| d == dim || a.shape()[d] == x0.shape()[d]);
        if !ok {
            return Err(IrError::ty(
                name,
                format!("operand shapes {:?} and {:?}", x0.shape(), a.shape()),
            ));
        }
        offsets.push(total);
        total += a.len();
        shape[dim] += a.shape()[dim];
    }
    let parts: Vec<&Storage> = args.iter().map(|a| a.data()).collect();
    let all = concat_storage(&parts, name)?;
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let mut idx = Vec::with_capacity(shape.iter().product());
    for o in 0..outer {
        for (a, &off) in args.iter().zip(&offsets) {
            let chunk = a.shape()[dim] * inner;
            idx.extend(off + o * chunk..off + (o + 1) * chunk);
        }
    }
    HostArray::new(shape, take(&all, &idx))
}

/// `iota`: counts along `dimension`.
pub(crate) fn iota(
    args: &[HostArray],
    dtype: DType,
    shape: &[Option<usize>],
    dimension: usize,
) -> Result<HostArray, IrError> {
    let shape = resolve_shape("iota", shape, args)?;
    check_axis("iota", dimension, shape.len())?;
    let st: Vec<isize> = (0..shape.len())
        .map(|d| (d == dimension) as isize)
        .collect();
    let vals: Vec<f64> = affine_map(&shape, 0, &st)
        .into_iter()
        .map(|v| v as f64)
        .collect();
    HostArray::from_f64(dtype, &shape, &vals)
}

/// `split` along `axis` into pieces of `sizes`.
pub(crate) fn split(x: &HostArray, sizes: &Ints, axis: usize) -> Result<Vec<HostArray>, IrError> {
    check_axis("split", axis, x.ndim())?;
    if sizes.iter().sum::<i64>() != x.shape()[axis] as i64 || sizes.iter().any(|&s| s < 0) {
        return Err(IrError::ty(
            "split",
            format!(
                "sizes {:?} for axis {axis} of {:?}",
                sizes.values,
                x.shape()
            ),
        ));
    }
    let xs: Vec<isize> = strides(x.shape()).iter().map(|&s| s as isize).collect();
    let mut start = 0usize;
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes.iter() {
        let mut shape = x.shape().to_vec();
        shape[axis] = s as usize;
        let idx = affine_map(&shape, start as isize * xs[axis], &xs);
        out.push(HostArray::new(shape, take(x.data(), &idx))?);
        start += s as usize;
    }
    Ok(out)
}

/// `tile`: repeats the operand `reps[d]` times along each dim.
pub(crate) fn tile(x: &HostArray, reps: &Ints) -> Result<HostArray, IrError> {
    if reps.len() != x.ndim() || reps.iter().any(|&r| r < 0) {
        return Err(IrError::ty(
            "tile",
            format!("reps {:?} for shape {:?}", reps.values, x.shape()),
        ));
    }
    let shape: Vec<usize> = (0..x.ndim())
        .map(|d| x.shape()[d] * reps[d] as usize)
        .collect();
    let xs = strides(x.shape());
    let n: usize = shape.iter().product();
    let mut idx = Vec::with_capacity(n);
    if n > 0 {
        let mut o = vec![0usize; shape.len()];
        loop {
            idx.push(
                (0..shape.len())
                    .map(|d| (o[d] % x.shape()[d]) * xs[d])
                    .sum(),
            );
            if !next_index(&mut o, &shape) {
                break;
            }
        }
    }
    HostArray::new(shape, take(x.data(), &idx))
}

/// `stack`: equal-shaped operands along a new `axis`.
pub(crate) fn stack(args: &[HostArray], axis: usize) -> Result<HostArray, IrError> {
    let name = "stack";
    let x0 = first(name, args)?;
    check_axis(name, axis, x0.ndim() + 1)?;
    let mut expanded = Vec::with_capacity(args.len());
    for a in args {
        if a.shape() != x0.shape() {
            return Err(IrError::ty(
                name,
                format!("operand shapes {:?} and {:?}", x0.shape(), a.shape()),
            ));
        }
        let mut s = a.shape().to_vec();
        s.insert(axis, 1);
        expanded.push(a.clone().reshape(s)?);
    }
    concatenate(&expanded, axis)
}
