//! Data movement with extents known only when the op is built (a
//! dynamic-shape program's runtime ones): every
//! layout primitive (`broadcast_in_dim`, `transpose`, `slice`, `rev`,
//! `reshape` with `dimensions`) is one strided copy `out[i] = x[base +
//! Σ i_d·st_d]` whose strides come from the runtime shapes;
//! (`concatenate` and `iota` are `crate::ops::copy`.)
//!
//! Invariant: before any element is read or written, the whole range of
//! offsets a copy can touch is checked against the buffer (`check_range`),
//! so a wrong shape is an error, never an out-of-bounds index.

use crate::error::run_error;
use crate::ops::typed::{elems, with_type, Typed};
use jaxon_ir::{HostArray, IrError};

fn fail(m: impl std::fmt::Display) -> IrError {
    run_error(format!("{m}"))
}

/// Row-major element strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![1isize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as isize;
    }
    s
}

/// Checks that every offset `base + Σ i_d·st_d` of a `shape` box lies in
/// `0..len`.
fn check_range(
    what: &str,
    len: usize,
    shape: &[usize],
    base: isize,
    st: &[isize],
) -> Result<(), IrError> {
    if shape.contains(&0) {
        return Ok(());
    }
    let (mut lo, mut hi) = (base, base);
    for (&n, &s) in shape.iter().zip(st) {
        let span = (n as isize - 1) * s;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    if shape.len() != st.len() || lo < 0 || hi >= len as isize {
        return Err(fail(format!(
            "{what}: a copy of shape {shape:?} (offsets {lo}..={hi}) from {len} elements"
        )));
    }
    Ok(())
}

/// The `shape` box of `src` at `base` with strides `st`, row-major.
/// The caller has checked the range.
fn take<T: Copy>(src: &[T], shape: &[usize], base: isize, st: &[isize]) -> Vec<T> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let r = shape.len();
    if r == 0 {
        out.push(src[base as usize]);
        return out;
    }
    let (len, s) = (shape[r - 1], st[r - 1]);
    let mut idx = vec![0usize; r - 1];
    let mut row = base;
    loop {
        let b = row as usize;
        match s {
            1 => out.extend_from_slice(&src[b..b + len]),
            0 => out.resize(out.len() + len, src[b]),
            _ => out.extend((0..len).map(|j| src[(row + j as isize * s) as usize])),
        }
        // The next row: a row-major step of the outer index.
        let mut d = r - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            row += st[d];
            if idx[d] < shape[d] {
                break;
            }
            row -= st[d] * shape[d] as isize;
            idx[d] = 0;
        }
    }
}

/// The `shape` box of `x` at element `base` with strides `st`.
pub(crate) fn strided(
    what: &str,
    x: &HostArray,
    shape: &[usize],
    base: isize,
    st: &[isize],
) -> Result<HostArray, IrError> {
    check_range(what, x.len(), shape, base, st)?;
    let data = with_type!(x.dtype(), T => {
        T::wrap(take(elems::<T>(x.data(), x.dtype(), what)?, shape, base, st))
    });
    HostArray::new(shape.to_vec(), data)
}

/// `broadcast_in_dim[broadcast_dimensions=dims]` of `x` to `out_shape`.
pub(crate) fn broadcast(
    x: &HostArray,
    dims: &[usize],
    out_shape: &[usize],
) -> Result<HostArray, IrError> {
    let xs = strides(x.shape());
    let mut st = vec![0isize; out_shape.len()];
    if dims.len() != x.ndim() {
        return Err(fail(format!(
            "broadcast_in_dim of {:?} with dimensions {dims:?}",
            x.shape()
        )));
    }
    for (k, &d) in dims.iter().enumerate() {
        let n = x.shape()[k];
        match out_shape.get(d) {
            Some(&m) if n == m => st[d] = xs[k],
            Some(_) if n == 1 => {}
            _ => {
                return Err(fail(format!(
                    "broadcast_in_dim of {:?} to {out_shape:?} along {dims:?}",
                    x.shape()
                )))
            }
        }
    }
    strided("broadcast_in_dim", x, out_shape, 0, &st)
}

/// `transpose[permutation=perm]`.
pub(crate) fn transpose(x: &HostArray, perm: &[usize]) -> Result<HostArray, IrError> {
    let xs = strides(x.shape());
    let ok = perm.len() == x.ndim() && perm.iter().all(|&p| p < x.ndim());
    if !ok {
        return Err(fail(format!("transpose of {:?} by {perm:?}", x.shape())));
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let st: Vec<isize> = perm.iter().map(|&p| xs[p]).collect();
    strided("transpose", x, &shape, 0, &st)
}

/// `slice` of `x` from `starts` with `steps`, of shape `out_shape`.
pub(crate) fn slice(
    x: &HostArray,
    starts: &[usize],
    steps: &[usize],
    out_shape: &[usize],
) -> Result<HostArray, IrError> {
    let xs = strides(x.shape());
    if starts.len() != x.ndim() || steps.len() != x.ndim() {
        return Err(fail(format!("slice of {:?} at {starts:?}", x.shape())));
    }
    let base: isize = starts.iter().zip(&xs).map(|(&s, &t)| s as isize * t).sum();
    let st: Vec<isize> = steps
        .iter()
        .zip(&xs)
        .map(|(&s, &t)| s as isize * t)
        .collect();
    strided("slice", x, out_shape, base, &st)
}

/// `rev[dimensions=dims]`.
pub(crate) fn rev(x: &HostArray, dims: &[usize]) -> Result<HostArray, IrError> {
    let mut st = strides(x.shape());
    let mut base = 0isize;
    for &d in dims {
        let n = *x
            .shape()
            .get(d)
            .ok_or_else(|| fail(format!("rev of {:?} along {d}", x.shape())))?;
        base += (n as isize - 1).max(0) * st[d];
        st[d] = -st[d];
    }
    strided("rev", x, x.shape(), base, &st)
}
