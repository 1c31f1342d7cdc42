//! `jnp`'s shape functions written from `lax`: `ravel`, `squeeze`,
//! `expand_dims`, `swapaxes`, `moveaxis`, `flip`, `roll`, `atleast_*d`,
//! the `*stack`s, `diagonal`, `trace`, `count_nonzero` and `ptp`, with
//! NumPy's negative axes and JAX's errors.

use super::*;

fn axes_of(op: &str, axes: &[isize], ndim: usize) -> Result<Vec<usize>> {
    axes.into_axes(ndim).map_err(|e| match e {
        Error::InvalidArgument(m) => {
            let m = m.strip_prefix("reduction: ").unwrap_or(&m);
            Error::InvalidArgument(format!("{op}: {m}"))
        }
        e => e,
    })
}

/// `jnp.ravel`: the elements in row-major order, as a 1-D array.
pub fn ravel(x: &Array) -> Result<Array> {
    reshape(x, &[-1])
}

/// `jnp.squeeze(x, axis)`: drops the given size-1 axes (`None`: all of
/// them); an axis whose size is not 1 is an error naming it.
pub fn squeeze(x: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let shape = x.try_shape()?;
    let dims = match axes {
        Some(a) => {
            let dims = axes_of("squeeze", a, shape.len())?;
            if let Some(&d) = dims.iter().find(|&&d| shape[d] != 1) {
                return Err(Error::InvalidArgument(format!(
                    "squeeze: axis {d} of {} has size {}, not 1",
                    fmt_aval(x.aval()),
                    shape[d]
                )));
            }
            dims
        }
        None => (0..shape.len()).filter(|&d| shape[d] == 1).collect(),
    };
    lax::squeeze(x, &dims)
}

/// `jnp.expand_dims(x, axis)`: new size-1 axes at the given positions of
/// the result (negative positions count from its end).
pub fn expand_dims(x: &Array, axes: &[isize]) -> Result<Array> {
    let dims = axes_of("expand_dims", axes, x.ndim() + axes.len())?;
    lax::expand_dims(x, &dims)
}

/// `jnp.swapaxes(x, a, b)`.
pub fn swapaxes(x: &Array, a: isize, b: isize) -> Result<Array> {
    let n = x.ndim();
    let (a, b) = (
        normalize_axis(a, n, "swapaxes")?,
        normalize_axis(b, n, "swapaxes")?,
    );
    let mut perm: Vec<usize> = (0..n).collect();
    perm.swap(a, b);
    transpose(x, Some(&perm))
}

/// `jnp.moveaxis(x, source, destination)`: the `source` axes end up at the
/// `destination` positions, the others keep their order.
pub fn moveaxis(x: &Array, source: &[isize], destination: &[isize]) -> Result<Array> {
    let n = x.ndim();
    if source.len() != destination.len() {
        return Err(Error::InvalidArgument(format!(
            "moveaxis: {} source axes but {} destinations",
            source.len(),
            destination.len()
        )));
    }
    let norm = |a: &[isize]| {
        a.iter()
            .map(|&a| normalize_axis(a, n, "moveaxis"))
            .collect::<Result<Vec<_>>>()
    };
    let (src, dst) = (norm(source)?, norm(destination)?);
    axes_of("moveaxis", source, n)?;
    axes_of("moveaxis", destination, n)?;
    let mut rest = (0..n).filter(|a| !src.contains(a));
    let mut pairs: Vec<(usize, usize)> = dst.iter().copied().zip(src.iter().copied()).collect();
    pairs.sort_unstable();
    let mut perm = Vec::with_capacity(n);
    let mut it = pairs.into_iter().peekable();
    for pos in 0..n {
        match it.peek() {
            Some(&(d, s)) if d == pos => {
                perm.push(s);
                it.next();
            }
            _ => perm.push(
                rest.next()
                    .ok_or_else(|| Error::InvalidArgument("moveaxis".into()))?,
            ),
        }
    }
    transpose(x, Some(&perm))
}

/// `jnp.flip(x, axis)`: reverses the given axes (`None`: all).
pub fn flip(x: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let dims = match axes {
        Some(a) => axes_of("flip", a, x.ndim())?,
        None => (0..x.ndim()).collect(),
    };
    lax::rev(x, &dims)
}

/// `jnp.fliplr`: reverses axis 1.
pub fn fliplr(x: &Array) -> Result<Array> {
    flip(x, Some(&[1]))
}

/// `jnp.flipud`: reverses axis 0.
pub fn flipud(x: &Array) -> Result<Array> {
    flip(x, Some(&[0]))
}

/// `jnp.roll(x, shift, axis)`: elements shifted cyclically by `shift`
/// along `axis` (`None`: over the flattened array, keeping the shape).
pub fn roll(x: &Array, shift: isize, axis: Option<isize>) -> Result<Array> {
    let Some(axis) = axis else {
        let shape: Vec<isize> = x.try_shape()?.iter().map(|&d| d as isize).collect();
        return reshape(&roll(&ravel(x)?, shift, Some(0))?, &shape);
    };
    let shape = x.try_shape()?;
    let ax = normalize_axis(axis, shape.len(), "roll")?;
    let n = shape[ax];
    if n == 0 {
        return Ok(x.clone());
    }
    let s = shift.rem_euclid(n as isize) as usize;
    if s == 0 {
        return Ok(x.clone());
    }
    concatenate(
        &[slice_axis(x, ax, n - s, n)?, slice_axis(x, ax, 0, n - s)?],
        ax as isize,
    )
}

/// `jnp.atleast_1d`: a scalar becomes `[1]`.
pub fn atleast_1d(x: &Array) -> Result<Array> {
    match x.ndim() {
        0 => reshape(x, &[1]),
        _ => Ok(x.clone()),
    }
}

/// `jnp.atleast_2d`: `[n]` becomes `[1, n]`, a scalar `[1, 1]`.
pub fn atleast_2d(x: &Array) -> Result<Array> {
    match x.ndim() {
        0 => reshape(x, &[1, 1]),
        1 => expand_dims(x, &[0]),
        _ => Ok(x.clone()),
    }
}

/// `jnp.atleast_3d`: `[n]` becomes `[1, n, 1]`, `[m, n]` `[m, n, 1]`.
pub fn atleast_3d(x: &Array) -> Result<Array> {
    match x.ndim() {
        0 => reshape(x, &[1, 1, 1]),
        1 => expand_dims(x, &[0, 2]),
        2 => expand_dims(x, &[2]),
        _ => Ok(x.clone()),
    }
}

fn each(arrays: &[Array], f: fn(&Array) -> Result<Array>) -> Result<Vec<Array>> {
    arrays.iter().map(f).collect()
}

/// `jnp.hstack`: along axis 1, or axis 0 for 1-D arrays.
pub fn hstack(arrays: &[Array]) -> Result<Array> {
    let a = each(arrays, atleast_1d)?;
    let axis = if a.first().is_some_and(|x| x.ndim() == 1) {
        0
    } else {
        1
    };
    concatenate(&a, axis)
}

/// `jnp.vstack`: along axis 0, 1-D arrays as rows.
pub fn vstack(arrays: &[Array]) -> Result<Array> {
    concatenate(&each(arrays, atleast_2d)?, 0)
}

/// `jnp.dstack`: along axis 2 (depth).
pub fn dstack(arrays: &[Array]) -> Result<Array> {
    concatenate(&each(arrays, atleast_3d)?, 2)
}

/// `jnp.column_stack`: 1-D arrays as columns, along axis 1.
pub fn column_stack(arrays: &[Array]) -> Result<Array> {
    let cols = arrays
        .iter()
        .map(|x| match x.ndim() {
            0 | 1 => reshape(x, &[-1, 1]),
            _ => Ok(x.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    concatenate(&cols, 1)
}

/// `jnp.diagonal(x, offset, axis1, axis2)`: the diagonal of the
/// `(axis1, axis2)` planes, `offset` above (positive) or below the main
/// one, as the last axis of the result.
pub fn diagonal(x: &Array, offset: isize, axis1: isize, axis2: isize) -> Result<Array> {
    let n = x.ndim();
    let (a1, a2) = (
        normalize_axis(axis1, n, "diagonal")?,
        normalize_axis(axis2, n, "diagonal")?,
    );
    if a1 == a2 {
        return Err(Error::InvalidArgument(format!(
            "diagonal: axis1 and axis2 are both {a1}"
        )));
    }
    let moved = moveaxis(x, &[a1 as isize, a2 as isize], &[-2, -1])?;
    let shape = moved.try_shape()?;
    let (rows, cols) = (shape[n - 2] as isize, shape[n - 1] as isize);
    let (r0, c0) = if offset >= 0 {
        (0, offset)
    } else {
        (-offset, 0)
    };
    let k = (rows - r0).min(cols - c0).max(0) as usize;
    let flat: Vec<isize> = shape[..n - 2]
        .iter()
        .map(|&d| d as isize)
        .chain([rows * cols])
        .collect();
    let idx: Vec<i32> = (0..k as isize)
        .map(|i| ((r0 + i) * cols + c0 + i) as i32)
        .collect();
    let idx = Array::try_from_vec(idx, &[k])?;
    take(&reshape(&moved, &flat)?, &idx, Some(-1))
}

/// `jnp.trace(x, offset, axis1, axis2)`: the sum of [`diagonal`].
pub fn trace(x: &Array, offset: isize, axis1: isize, axis2: isize) -> Result<Array> {
    sum(&diagonal(x, offset, axis1, axis2)?, -1isize, false)
}

/// `jnp.count_nonzero(x, axis)`: how many elements are not zero, as `i32`.
pub fn count_nonzero(x: &Array, axes: impl IntoAxes) -> Result<Array> {
    let zero = lax::convert_element_type(&Array::weak(0.0), x.dtype(), false)?;
    let nz = not_equal(x, &zero)?;
    sum(&nz.astype(DType::I32), axes, false)
}

/// `jnp.ptp(x, axis)`: the range, `max − min`.
pub fn ptp(x: &Array, axes: impl IntoAxes + Clone, keepdims: bool) -> Result<Array> {
    subtract(&max(x, axes.clone(), keepdims)?, &min(x, axes, keepdims)?)
}

/// `jnp.tile(x, reps)`: `x` repeated `reps[i]` times along each axis
/// (`x` and `reps` padded with leading 1s to the same length).
pub fn tile(x: &Array, reps: &[usize]) -> Result<Array> {
    let shape = x.try_shape()?;
    let n = shape.len().max(reps.len());
    let pad = |v: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, n - v.len())
            .chain(v.iter().copied())
            .collect()
    };
    let (s, r) = (pad(&shape), pad(reps));
    // Broadcast to [r0, s0, r1, s1, ...], then merge each pair.
    let inter: Vec<usize> = r.iter().zip(&s).flat_map(|(&r, &s)| [r, s]).collect();
    let dims: Vec<usize> = (0..n).map(|i| 2 * i + 1).collect();
    let xs = reshape(x, &s.iter().map(|&d| d as isize).collect::<Vec<_>>())?;
    let b = lax::broadcast_in_dim(&xs, &inter, &dims)?;
    let out: Vec<isize> = r.iter().zip(&s).map(|(&r, &s)| (r * s) as isize).collect();
    reshape(&b, &out)
}

/// `jnp.diag(v, k)`: the matrix with `v` on its `k`-th diagonal for a 1-D
/// `v`, the `k`-th diagonal of a 2-D `v`.
pub fn diag(v: &Array, k: isize) -> Result<Array> {
    match v.ndim() {
        1 => {
            let n = v.try_shape()?[0];
            let m = n + k.unsigned_abs();
            // Pad `v` to length m (after it) and lay it along the rows
            // (k >= 0: element i sits in row i) or the columns (k < 0).
            let padded = pad_end(v, m)?;
            let laid = if k >= 0 {
                lax::broadcast_in_dim(&padded, &[m, m], &[0])?
            } else {
                lax::broadcast_in_dim(&padded, &[m, m], &[1])?
            };
            let on = super::creation::eye_mask(m, m, k as i64)?;
            let zero = zeros(&[m, m], v.dtype())?;
            where_(&on, &laid, &zero)
        }
        2 => diagonal(v, k, 0, 1),
        _ => Err(Error::InvalidArgument(format!(
            "diag: expected a 1-D or 2-D array, got {}",
            fmt_aval(v.aval())
        ))),
    }
}

/// `v` (1-D) followed by zeros up to length `m`.
fn pad_end(v: &Array, m: usize) -> Result<Array> {
    let n = v.try_shape()?[0];
    if n == m {
        return Ok(v.clone());
    }
    concatenate(&[v.clone(), zeros(&[m - n], v.dtype())?], 0)
}

/// `jnp.empty(shape, dtype)`: zeros (XLA has no uninitialised memory).
pub fn empty(shape: &[usize], dtype: DType) -> Result<Array> {
    zeros(shape, dtype)
}

/// `jnp.empty_like(x)`: zeros of `x`'s shape and dtype.
pub fn empty_like(x: &Array) -> Result<Array> {
    zeros_like(x)
}

/// `jnp.copy(x)`: arrays are immutable, so the same value.
pub fn copy(x: &Array) -> Result<Array> {
    Ok(x.clone())
}

/// `jnp.array_equal(a, b)`: same shape and every element equal (NaNs are
/// unequal), as a `bool` scalar.
pub fn array_equal(a: &Array, b: &Array) -> Result<Array> {
    if a.try_shape()? != b.try_shape()? {
        return Ok(Array::scalar(false));
    }
    all(&equal(a, b)?, All, false)
}

/// `jnp.append(arr, values, axis)`: `values` after `arr` along `axis`
/// (`None`: both flattened).
pub fn append(arr: &Array, values: &Array, axis: Option<isize>) -> Result<Array> {
    match axis {
        None => concatenate(&[ravel(arr)?, ravel(values)?], 0),
        Some(a) => concatenate(&[arr.clone(), values.clone()], a),
    }
}

/// `jnp.matrix_transpose`: swaps the last two axes.
pub fn matrix_transpose(x: &Array) -> Result<Array> {
    if x.ndim() < 2 {
        return Err(Error::InvalidArgument(format!(
            "matrix_transpose: expected at least 2 axes, got {}",
            fmt_aval(x.aval())
        )));
    }
    swapaxes(x, -1, -2)
}

/// `jnp.rot90(x, k, axes)`: `k` quarter turns in the plane of `axes`,
/// from the first axis towards the second.
pub fn rot90(x: &Array, k: i64, axes: (isize, isize)) -> Result<Array> {
    let n = x.ndim();
    let (a, b) = (
        normalize_axis(axes.0, n, "rot90")?,
        normalize_axis(axes.1, n, "rot90")?,
    );
    if a == b {
        return Err(Error::InvalidArgument(format!("rot90: both axes are {a}")));
    }
    let (a, b) = (a as isize, b as isize);
    match k.rem_euclid(4) {
        0 => Ok(x.clone()),
        1 => swapaxes(&flip(x, Some(&[b]))?, a, b),
        2 => flip(x, Some(&[a, b])),
        _ => flip(&swapaxes(x, a, b)?, Some(&[b])),
    }
}

/// `jnp.unstack(x, axis)`: the slices along `axis`, as a `Vec`.
pub fn unstack(x: &Array, axis: isize) -> Result<Vec<Array>> {
    let shape = x.try_shape()?;
    let ax = normalize_axis(axis, shape.len(), "unstack")?;
    (0..shape[ax])
        .map(|i| lax::squeeze(&slice_axis(x, ax, i, i + 1)?, &[ax]))
        .collect()
}

/// `jnp.broadcast_arrays`: every array broadcast to their common shape.
pub fn broadcast_arrays(arrays: &[Array]) -> Result<Vec<Array>> {
    let mut target: Vec<usize> = Vec::new();
    for a in arrays {
        target =
            super::promote::broadcast_shape_lists("broadcast_arrays", &target, &a.try_shape()?)?;
    }
    arrays.iter().map(|a| broadcast_to(a, &target)).collect()
}
