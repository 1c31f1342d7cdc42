//! `jnp.fft`: discrete Fourier transforms over chosen axes (moved to the
//! end, transformed by `lax.fft`, moved back), their sample frequencies
//! and the zero-frequency shifts. Lengths are the axes' sizes (NumPy's `n`
//! and `s` arguments, which crop or zero-pad, are not offered) and the
//! normalisation is NumPy's default (`"backward"`: only the inverses scale).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::FftType;
use jaxon_ir::DType;

fn norm_axis(axis: isize, ndim: usize) -> Result<usize> {
    let a = if axis < 0 { axis + ndim as isize } else { axis };
    if a < 0 || a as usize >= ndim {
        return Err(Error::InvalidArgument(format!(
            "fft: axis {axis} out of range for rank {ndim}"
        )));
    }
    Ok(a as usize)
}

/// `x` as complex (`f64` and `c128` give `c128`, anything else `c64`).
fn to_complex(x: &Array) -> Result<Array> {
    match x.dtype() {
        DType::C64 | DType::C128 => Ok(x.clone()),
        DType::F64 => lax::convert_element_type(x, DType::C128, false),
        _ => lax::convert_element_type(x, DType::C64, false),
    }
}

/// `x` as a real float for RFFT (`f64` stays, anything else `f32`).
fn to_real(x: &Array) -> Result<Array> {
    match x.dtype() {
        DType::F64 | DType::F32 => Ok(x.clone()),
        d if d.is_complex() => Err(Error::InvalidArgument(format!(
            "rfft: a real operand is required, got {d}"
        ))),
        _ => lax::convert_element_type(x, DType::F32, false),
    }
}

/// Applies `lax.fft` over `axes` (distinct), moving them to the end and
/// back; `irfft_n` is the output length of the last axis for IRFFT.
fn over_axes(x: &Array, axes: &[isize], ty: FftType, irfft_n: Option<usize>) -> Result<Array> {
    let nd = x.ndim();
    let axes = axes
        .iter()
        .map(|&a| norm_axis(a, nd))
        .collect::<Result<Vec<_>>>()?;
    let mut perm: Vec<usize> = (0..nd).filter(|d| !axes.contains(d)).collect();
    if perm.len() + axes.len() != nd {
        return Err(Error::InvalidArgument("fft: repeated axes".into()));
    }
    perm.extend(&axes);
    let moved = lax::transpose(x, &perm)?;
    let shape = moved.try_shape()?;
    let mut lengths: Vec<usize> = shape[nd - axes.len()..].to_vec();
    if let (Some(n), Some(last)) = (irfft_n, lengths.last_mut()) {
        *last = n;
    }
    let y = lax::fft(&moved, ty, &lengths)?;
    let mut inv = vec![0; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    lax::transpose(&y, &inv)
}

/// `jnp.fft.fft(x, axis=axis)`.
pub fn fft(x: &Array, axis: isize) -> Result<Array> {
    over_axes(&to_complex(x)?, &[axis], FftType::Fft, None)
}

/// `jnp.fft.ifft(x, axis=axis)` (scaled by `1/n`).
pub fn ifft(x: &Array, axis: isize) -> Result<Array> {
    over_axes(&to_complex(x)?, &[axis], FftType::Ifft, None)
}

/// `jnp.fft.rfft(x, axis=axis)`: the `n/2 + 1` non-negative frequencies.
pub fn rfft(x: &Array, axis: isize) -> Result<Array> {
    over_axes(&to_real(x)?, &[axis], FftType::Rfft, None)
}

/// `jnp.fft.irfft(x, n, axis=axis)`: `n` reals (default `2 (m - 1)` for
/// `m` input frequencies).
pub fn irfft(x: &Array, n: Option<usize>, axis: isize) -> Result<Array> {
    let a = norm_axis(axis, x.ndim())?;
    let m = x.try_shape()?[a];
    let n = n.unwrap_or(2 * m.saturating_sub(1));
    over_axes(&to_complex(x)?, &[axis], FftType::Irfft, Some(n))
}

/// `jnp.fft.fft2(x)`: over the last two axes.
pub fn fft2(x: &Array) -> Result<Array> {
    fftn(x, &[-2, -1])
}

/// `jnp.fft.ifft2(x)`: over the last two axes.
pub fn ifft2(x: &Array) -> Result<Array> {
    ifftn(x, &[-2, -1])
}

/// `jnp.fft.fftn(x, axes=axes)` (1 to 3 axes).
pub fn fftn(x: &Array, axes: &[isize]) -> Result<Array> {
    over_axes(&to_complex(x)?, axes, FftType::Fft, None)
}

/// `jnp.fft.ifftn(x, axes=axes)` (1 to 3 axes).
pub fn ifftn(x: &Array, axes: &[isize]) -> Result<Array> {
    over_axes(&to_complex(x)?, axes, FftType::Ifft, None)
}

/// `jnp.fft.rfftn(x, axes=axes)` (1 to 3 axes; the last one halved).
pub fn rfftn(x: &Array, axes: &[isize]) -> Result<Array> {
    over_axes(&to_real(x)?, axes, FftType::Rfft, None)
}

/// `jnp.fft.irfftn(x, n_last, axes=axes)`: `n_last` (default
/// `2 (m - 1)`) reals along the last of `axes`.
pub fn irfftn(x: &Array, n_last: Option<usize>, axes: &[isize]) -> Result<Array> {
    let last = *axes
        .last()
        .ok_or_else(|| Error::InvalidArgument("irfftn: no axes".into()))?;
    let m = x.try_shape()?[norm_axis(last, x.ndim())?];
    let n = n_last.unwrap_or(2 * m.saturating_sub(1));
    over_axes(&to_complex(x)?, axes, FftType::Irfft, Some(n))
}

/// `jnp.fft.fftfreq(n, d)`: `[0, 1, ..., n/2 - 1 (or (n-1)/2), -n/2, ..., -1] / (d n)`, `f32`.
pub fn fftfreq(n: usize, d: f64) -> Result<Array> {
    let v: Vec<f32> = (0..n)
        .map(|k| {
            let k = if k < n.div_ceil(2) {
                k as f64
            } else {
                k as f64 - n as f64
            };
            (k / (d * n as f64)) as f32
        })
        .collect();
    Ok(Array::from_vec(v, &[n]))
}

/// `jnp.fft.rfftfreq(n, d)`: `[0, 1, ..., n/2] / (d n)`, `f32`.
pub fn rfftfreq(n: usize, d: f64) -> Result<Array> {
    let v: Vec<f32> = (0..n / 2 + 1)
        .map(|k| (k as f64 / (d * n as f64)) as f32)
        .collect();
    Ok(Array::from_vec(v, &[n / 2 + 1]))
}

/// Rolls every axis of `x` by `shift(size)` (toward higher indices).
fn roll_all(x: &Array, shift: impl Fn(usize) -> usize) -> Result<Array> {
    let shape = x.try_shape()?;
    let mut y = x.clone();
    for (axis, &n) in shape.iter().enumerate() {
        let s = if n == 0 { 0 } else { shift(n) % n };
        if s == 0 {
            continue;
        }
        let mut lo = vec![0; shape.len()];
        let mut hi = shape.clone();
        hi[axis] = n - s;
        let head = lax::slice(&y, &lo, &hi, None)?;
        lo[axis] = n - s;
        hi[axis] = n;
        let tail = lax::slice(&y, &lo, &hi, None)?;
        y = lax::concatenate(&[tail, head], axis)?;
    }
    Ok(y)
}

/// `jnp.fft.fftshift(x)`: the zero frequency to the centre of every axis.
pub fn fftshift(x: &Array) -> Result<Array> {
    roll_all(x, |n| n / 2)
}

/// `jnp.fft.ifftshift(x)`: the inverse of [`fftshift`].
pub fn ifftshift(x: &Array) -> Result<Array> {
    roll_all(x, |n| n - n / 2)
}
