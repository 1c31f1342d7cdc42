//! Complex kernels of the interpreter: elementwise ops on `c64`/`c128`
//! (computed in `Complex64`, rounded back to `c64`; division as XLA
//! divides, in the operands' precision: `complex_div.rs`), the `complex`, `real`,
//! `imag` and `conj` primitives, and `fft` (a reference radix-2 transform,
//! Bluestein's algorithm for other lengths).

use super::{lift, Lifted};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{BinaryOp, FftType, UnaryOp};
use num_complex::Complex64;

type C = Complex64;

fn unsupported(name: &str, dtype: DType) -> IrError {
    IrError::ty(name, format!("not defined for dtype {dtype}"))
}

/// The elements of a complex (or real, with zero imaginary parts) array.
pub(crate) fn values(x: &HostArray) -> Vec<C> {
    match lift(x.data()) {
        Lifted::C(v) => v,
        _ => x.to_c128_vec(),
    }
}

/// `expm1` of a complex number, accurate near zero.
fn expm1(z: C) -> C {
    let (x, y) = (z.re, z.im);
    let s = (y / 2.0).sin();
    C::new(x.exp_m1() * y.cos() - 2.0 * s * s, x.exp() * y.sin())
}

/// `log1p` of a complex number, accurate near zero.
fn log1p(z: C) -> C {
    let (x, y) = (z.re, z.im);
    C::new(0.5 * (x * (2.0 + x) + y * y).ln_1p(), y.atan2(1.0 + x))
}

/// `sign(z) = z / |z|`, zero at zero.
fn sign(z: C) -> C {
    let r = z.norm();
    if r == 0.0 {
        C::new(0.0, 0.0)
    } else {
        z / r
    }
}

/// A unary elementwise op on a complex array; `abs` gives the real dtype,
/// `is_finite` bool.
pub(crate) fn unary(op: UnaryOp, x: &HostArray) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    let v = values(x);
    let shape = x.shape().to_vec();
    match op {
        UnaryOp::Abs => {
            let r: Vec<f64> = v.iter().map(|z| z.norm()).collect();
            return HostArray::new(shape, Storage::from_f64(dt.real_dtype(), &r));
        }
        UnaryOp::IsFinite => {
            let r = v
                .iter()
                .map(|z| z.re.is_finite() && z.im.is_finite())
                .collect();
            return HostArray::new(shape, Storage::Bool(r));
        }
        _ => {}
    }
    let f: fn(C) -> C = match op {
        UnaryOp::Neg => |z| -z,
        UnaryOp::Sign => sign,
        UnaryOp::Exp => |z| z.exp(),
        UnaryOp::Exp2 => |z| (z * std::f64::consts::LN_2).exp(),
        UnaryOp::Log => |z| z.ln(),
        UnaryOp::Log1p => log1p,
        UnaryOp::Expm1 => expm1,
        UnaryOp::Tanh => |z| z.tanh(),
        UnaryOp::Sin => |z| z.sin(),
        UnaryOp::Cos => |z| z.cos(),
        UnaryOp::Tan => |z| z.tan(),
        UnaryOp::Asin => |z| z.asin(),
        UnaryOp::Acos => |z| z.acos(),
        UnaryOp::Atan => |z| z.atan(),
        UnaryOp::Sinh => |z| z.sinh(),
        UnaryOp::Cosh => |z| z.cosh(),
        UnaryOp::Asinh => |z| z.asinh(),
        UnaryOp::Acosh => |z| z.acosh(),
        UnaryOp::Atanh => |z| z.atanh(),
        UnaryOp::Sqrt => |z| z.sqrt(),
        UnaryOp::Rsqrt => |z| z.sqrt().inv(),
        UnaryOp::Square => |z| z * z,
        UnaryOp::Logistic => |z| (C::new(1.0, 0.0) + (-z).exp()).inv(),
        UnaryOp::Copy | UnaryOp::StopGradient => |z| z,
        _ => return Err(unsupported(op.name(), dt)),
    };
    let out: Vec<C> = v.into_iter().map(f).collect();
    HostArray::new(shape, Storage::from_c128(dt, &out))
}

/// Whether `x > y` in XLA's order of complex numbers: by real part, then
/// imaginary part; a comparison with a NaN part is false.
fn greater(x: C, y: C) -> bool {
    x.re > y.re || (x.re == y.re && x.im > y.im)
}

/// `max x y` as XLA computes it on complex numbers: `x` if `x > y`
/// (lexicographically), else `y` — so ties and NaNs give `y`.
pub(crate) fn max(x: C, y: C) -> C {
    if greater(x, y) {
        x
    } else {
        y
    }
}

/// `min x y`: `x` if `x < y` (lexicographically), else `y`.
pub(crate) fn min(x: C, y: C) -> C {
    if greater(y, x) {
        x
    } else {
        y
    }
}

/// `x / y` for `c64` operands, computed in `f32` as XLA does (the operands
/// came from `c64` storage, so narrowing them is exact).
fn div_in_f32(x: C, y: C) -> C {
    let n = |z: C| num_complex::Complex32::new(z.re as f32, z.im as f32);
    let q = super::complex_div::div_c64(n(x), n(y));
    C::new(q.re.into(), q.im.into())
}

/// `x ** y` for a complex base and a complex exponent, with `0 ** 0 = 1`.
fn pow(x: C, y: C) -> C {
    if y.re == 0.0 && y.im == 0.0 {
        return C::new(1.0, 0.0);
    }
    if x.re == 0.0 && x.im == 0.0 {
        return if y.re > 0.0 && y.im == 0.0 {
            C::new(0.0, 0.0)
        } else {
            C::new(f64::NAN, f64::NAN)
        };
    }
    (y * x.ln()).exp()
}

/// A binary elementwise op on complex operands of one dtype, over `n`
/// elements of `shape` (a one-element operand broadcasts).
pub(crate) fn binary(
    op: BinaryOp,
    x: &HostArray,
    y: &HostArray,
    shape: Vec<usize>,
) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    let (a, b) = (values(x), values(y));
    let n: usize = shape.iter().product();
    let at = |v: &[C], i: usize| v[if v.len() == 1 { 0 } else { i }];
    if matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
        let eq = op == BinaryOp::Eq;
        let r = (0..n).map(|i| (at(&a, i) == at(&b, i)) == eq).collect();
        return HostArray::new(shape, Storage::Bool(r));
    }
    let f: fn(C, C) -> C = match op {
        BinaryOp::Add | BinaryOp::AddAny => |p, q| p + q,
        BinaryOp::Sub => |p, q| p - q,
        BinaryOp::Mul => |p, q| p * q,
        BinaryOp::Div if dt == DType::C64 => div_in_f32,
        BinaryOp::Div => super::complex_div::div_c128,
        BinaryOp::Pow => pow,
        BinaryOp::Max => max,
        BinaryOp::Min => min,
        _ => return Err(unsupported(op.name(), dt)),
    };
    let out: Vec<C> = (0..n).map(|i| f(at(&a, i), at(&b, i))).collect();
    HostArray::new(shape, Storage::from_c128(dt, &out))
}

/// `integer_pow` on a complex array.
pub(crate) fn integer_pow(x: &HostArray, y: i64) -> Result<HostArray, IrError> {
    let p = i32::try_from(y).map_err(|_| IrError::ty("integer_pow", "exponent out of range"))?;
    let out: Vec<C> = values(x).into_iter().map(|z| z.powi(p)).collect();
    HostArray::new(x.shape().to_vec(), Storage::from_c128(x.dtype(), &out))
}

/// `complex x y`: `x + i y` from two real arrays of one float dtype (`f32`
/// gives `c64`, `f64` gives `c128`; a rank-0 operand broadcasts).
pub fn complex(x: &HostArray, y: &HostArray) -> Result<HostArray, IrError> {
    let out_dt = x
        .dtype()
        .complex_dtype()
        .filter(|_| x.dtype() == y.dtype())
        .ok_or_else(|| {
            IrError::ty(
                "complex",
                format!(
                    "operands must be both f32 or both f64, got {} and {}",
                    x.dtype(),
                    y.dtype()
                ),
            )
        })?;
    let shape = if x.ndim() == 0 { y.shape() } else { x.shape() }.to_vec();
    if !(x.ndim() == 0 || y.ndim() == 0 || x.shape() == y.shape()) {
        return Err(IrError::ty(
            "complex",
            format!("operand shapes {:?} and {:?} differ", x.shape(), y.shape()),
        ));
    }
    let (a, b) = (x.to_f64_vec(), y.to_f64_vec());
    let n: usize = shape.iter().product();
    let at = |v: &[f64], i: usize| v[if v.len() == 1 { 0 } else { i }];
    let out: Vec<C> = (0..n).map(|i| C::new(at(&a, i), at(&b, i))).collect();
    HostArray::new(shape, Storage::from_c128(out_dt, &out))
}

/// `real x`, `imag x` (`imag = true`) of a complex array.
pub fn real_imag(x: &HostArray, imag: bool) -> Result<HostArray, IrError> {
    let name = if imag { "imag" } else { "real" };
    if !x.dtype().is_complex() {
        return Err(unsupported(name, x.dtype()));
    }
    let r: Vec<f64> = values(x)
        .iter()
        .map(|z| if imag { z.im } else { z.re })
        .collect();
    HostArray::new(
        x.shape().to_vec(),
        Storage::from_f64(x.dtype().real_dtype(), &r),
    )
}

/// `conj x`: the complex conjugate; a real operand becomes complex of its
/// precision (as JAX's `conj` of a float input).
pub fn conj(x: &HostArray) -> Result<HostArray, IrError> {
    let out_dt = x
        .dtype()
        .complex_dtype()
        .ok_or_else(|| unsupported("conj", x.dtype()))?;
    let out: Vec<C> = values(x).iter().map(|z| z.conj()).collect();
    HostArray::new(x.shape().to_vec(), Storage::from_c128(out_dt, &out))
}

/// In-place unnormalised DFT of `v` (`inverse` uses `exp(+2πi jk/n)`).
pub fn dft(v: &mut [C], inverse: bool) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    if n.is_power_of_two() {
        radix2(v, inverse);
    } else {
        bluestein(v, inverse);
    }
}

fn radix2(v: &mut [C], inverse: bool) {
    let n = v.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            v.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut len = 2;
    while len <= n {
        let ang = sign * 2.0 * std::f64::consts::PI / len as f64;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let w = C::from_polar(1.0, ang * k as f64);
                let a = v[start + k];
                let b = v[start + k + len / 2] * w;
                v[start + k] = a + b;
                v[start + k + len / 2] = a - b;
            }
        }
        len <<= 1;
    }
}

fn bluestein(v: &mut [C], inverse: bool) {
    let n = v.len();
    let m = (2 * n - 1).next_power_of_two();
    let sign = if inverse { 1.0 } else { -1.0 };
    // chirp[k] = exp(sign * iπ k² / n), with k² reduced mod 2n for accuracy.
    let chirp: Vec<C> = (0..n)
        .map(|k| {
            let k2 = (k as u128 * k as u128 % (2 * n as u128)) as f64;
            C::from_polar(1.0, sign * std::f64::consts::PI * k2 / n as f64)
        })
        .collect();
    let mut a = vec![C::new(0.0, 0.0); m];
    for k in 0..n {
        a[k] = v[k] * chirp[k];
    }
    let mut b = vec![C::new(0.0, 0.0); m];
    b[0] = chirp[0].conj();
    for k in 1..n {
        b[k] = chirp[k].conj();
        b[m - k] = chirp[k].conj();
    }
    radix2(&mut a, false);
    radix2(&mut b, false);
    for (x, y) in a.iter_mut().zip(&b) {
        *x *= y;
    }
    radix2(&mut a, true);
    for k in 0..n {
        v[k] = a[k] * chirp[k] / m as f64;
    }
}

/// Applies `f` to every line along `axis` of a row-major complex buffer of
/// `shape`, with output lines of length `out_len` (the result's `axis` size).
fn along_axis(
    data: &[C],
    shape: &[usize],
    axis: usize,
    out_len: usize,
    f: impl Fn(&[C]) -> Vec<C>,
) -> (Vec<C>, Vec<usize>) {
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let len = shape[axis];
    let mut out_shape = shape.to_vec();
    out_shape[axis] = out_len;
    let mut out = vec![C::new(0.0, 0.0); outer * out_len * inner];
    let mut line = vec![C::new(0.0, 0.0); len];
    for o in 0..outer {
        for i in 0..inner {
            for (k, l) in line.iter_mut().enumerate() {
                *l = data[(o * len + k) * inner + i];
            }
            let r = f(&line);
            for (k, z) in r.into_iter().enumerate().take(out_len) {
                out[(o * out_len + k) * inner + i] = z;
            }
        }
    }
    (out, out_shape)
}

/// `fft[fft_type fft_lengths]` over the trailing `fft_lengths.len()` axes:
/// FFT and IFFT (normalised by `1/n`) map complex to complex, RFFT maps
/// real to the `n/2 + 1` non-negative frequencies, IRFFT maps those back
/// to `n` real values (Hermitian symmetry assumed).
pub fn fft(x: &HostArray, fft_type: FftType, lengths: &[usize]) -> Result<HostArray, IrError> {
    let nd = lengths.len();
    let rank = x.ndim();
    let bad = |msg: String| IrError::ty("fft", msg);
    if nd == 0 || nd > rank {
        return Err(bad(format!(
            "{nd} fft_lengths for an operand of rank {rank}"
        )));
    }
    let in_dt = x.dtype();
    let (ok, out_dt) = match fft_type {
        FftType::Fft | FftType::Ifft => (in_dt.is_complex(), in_dt),
        FftType::Rfft => (in_dt.is_float(), in_dt.complex_dtype().unwrap_or(in_dt)),
        FftType::Irfft => (in_dt.is_complex(), in_dt.real_dtype()),
    };
    if !ok || (fft_type == FftType::Rfft && in_dt.complex_dtype().is_none()) {
        return Err(bad(format!("{fft_type:?} of dtype {in_dt}")));
    }
    let axes: Vec<usize> = (rank - nd..rank).collect();
    for (k, &a) in axes.iter().enumerate() {
        let want = match fft_type {
            FftType::Irfft if k == nd - 1 => lengths[k] / 2 + 1,
            _ => lengths[k],
        };
        if x.shape()[a] != want {
            return Err(bad(format!(
                "operand shape {:?} does not match fft_lengths {lengths:?}",
                x.shape()
            )));
        }
    }
    let mut data = values(x);
    let mut shape = x.shape().to_vec();
    let full = |line: &[C], inverse: bool| {
        let mut l = line.to_vec();
        dft(&mut l, inverse);
        if inverse {
            let n = l.len() as f64;
            l.iter_mut().for_each(|z| *z /= n);
        }
        l
    };
    match fft_type {
        FftType::Fft | FftType::Ifft => {
            let inverse = fft_type == FftType::Ifft;
            for &a in &axes {
                let n = shape[a];
                (data, shape) = along_axis(&data, &shape, a, n, |l| full(l, inverse));
            }
        }
        FftType::Rfft => {
            let last = rank - 1;
            let n = shape[last];
            (data, shape) = along_axis(&data, &shape, last, n / 2 + 1, |l| full(l, false));
            for &a in axes.iter().rev().skip(1) {
                let n = shape[a];
                (data, shape) = along_axis(&data, &shape, a, n, |l| full(l, false));
            }
        }
        FftType::Irfft => {
            for &a in axes.iter().take(nd - 1) {
                let n = shape[a];
                (data, shape) = along_axis(&data, &shape, a, n, |l| full(l, true));
            }
            let last = rank - 1;
            let n = lengths[nd - 1];
            (data, shape) = along_axis(&data, &shape, last, n, |l| {
                // Rebuild the full Hermitian spectrum, then invert.
                let mut s = vec![C::new(0.0, 0.0); n];
                for (k, z) in s.iter_mut().enumerate() {
                    *z = if k < l.len() { l[k] } else { l[n - k].conj() };
                }
                if n > 0 {
                    s[0].im = 0.0;
                    if n.is_multiple_of(2) {
                        s[n / 2].im = 0.0;
                    }
                }
                full(&s, true)
            });
        }
    }
    HostArray::new(shape, Storage::from_c128(out_dt, &data))
}
