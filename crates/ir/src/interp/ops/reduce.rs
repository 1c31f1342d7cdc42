//! Reductions over axes, `argmax`/`argmin` and the cumulative ops
//! (`cumsum`, `cumprod`, `cummax`, `cummin`, `cumlogsumexp`).

use super::elementwise::{fmax, fmin, Fl};
use super::{affine_map, check_axis, lift, lower, strides, Lifted};
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{ArgOp, CumulativeOp, ReduceOp};
use half::{bf16, f16};

/// Rounds an f32 to the precision of `dtype` (identity unless f16/bf16).
pub(crate) fn rounder(dtype: DType) -> fn(f32) -> f32 {
    match dtype {
        DType::F16 => |x| f16::from_f32(x).to_f32(),
        DType::BF16 => |x| bf16::from_f32(x).to_f32(),
        _ => |x| x,
    }
}

/// The smallest and largest values of an integer dtype, in the lifted domain.
pub(crate) fn int_bounds(dtype: DType) -> (i64, u64) {
    let bits = dtype.bits();
    if dtype.is_signed_int() {
        let max = if bits == 64 {
            i64::MAX
        } else {
            (1i64 << (bits - 1)) - 1
        };
        (-max - 1, max as u64)
    } else {
        (
            0,
            // Only integer dtypes use these; c128 (128 bits) must not
            // overflow the shift.
            if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            },
        )
    }
}

fn unsupported(name: &str, dtype: DType) -> IrError {
    IrError::UnsupportedDType {
        primitive: name.into(),
        dtype,
    }
}

fn fold<T: Copy>(x: &[T], pos: &[usize], n_out: usize, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = vec![init; n_out];
    for (v, &o) in x.iter().zip(pos) {
        acc[o] = f(acc[o], *v);
    }
    acc
}

/// `reduce_sum`, `reduce_max`, ... over `axes`.
pub(crate) fn reduce(op: ReduceOp, x: &HostArray, axes: &[usize]) -> Result<HostArray, IrError> {
    let name = op.name();
    for &a in axes {
        check_axis(name, a, x.ndim())?;
    }
    let kept: Vec<usize> = (0..x.ndim()).filter(|d| !axes.contains(d)).collect();
    let out_shape: Vec<usize> = kept.iter().map(|&d| x.shape()[d]).collect();
    let os = strides(&out_shape);
    let mut st = vec![0isize; x.ndim()];
    for (i, &d) in kept.iter().enumerate() {
        st[d] = os[i] as isize;
    }
    let pos = affine_map(x.shape(), 0, &st);
    let n: usize = out_shape.iter().product();
    let dt = x.dtype();
    let (imin, umax) = int_bounds(dt);
    let out = match lift(x.data()) {
        Lifted::F32(v) => Lifted::F32(match op {
            ReduceOp::Sum => fold(&v, &pos, n, 0.0, |a, b| a + b),
            ReduceOp::Prod => fold(&v, &pos, n, 1.0, |a, b| a * b),
            ReduceOp::Max => fold(&v, &pos, n, f32::NEG_INFINITY, fmax),
            ReduceOp::Min => fold(&v, &pos, n, f32::INFINITY, fmin),
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => return Err(unsupported(name, dt)),
        }),
        Lifted::F64(v) => Lifted::F64(match op {
            ReduceOp::Sum => fold(&v, &pos, n, 0.0, |a, b| a + b),
            ReduceOp::Prod => fold(&v, &pos, n, 1.0, |a, b| a * b),
            ReduceOp::Max => fold(&v, &pos, n, f64::NEG_INFINITY, fmax),
            ReduceOp::Min => fold(&v, &pos, n, f64::INFINITY, fmin),
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => return Err(unsupported(name, dt)),
        }),
        Lifted::I(v) => Lifted::I(match op {
            ReduceOp::Sum => fold(&v, &pos, n, 0, i64::wrapping_add),
            ReduceOp::Prod => fold(&v, &pos, n, 1, i64::wrapping_mul),
            ReduceOp::Max => fold(&v, &pos, n, imin, i64::max),
            ReduceOp::Min => fold(&v, &pos, n, umax as i64, i64::min),
            ReduceOp::And => fold(&v, &pos, n, -1, |a, b| a & b),
            ReduceOp::Or => fold(&v, &pos, n, 0, |a, b| a | b),
            ReduceOp::Xor => fold(&v, &pos, n, 0, |a, b| a ^ b),
        }),
        Lifted::U(v) => Lifted::U(match op {
            ReduceOp::Sum => fold(&v, &pos, n, 0, u64::wrapping_add),
            ReduceOp::Prod => fold(&v, &pos, n, 1, u64::wrapping_mul),
            ReduceOp::Max => fold(&v, &pos, n, 0, u64::max),
            ReduceOp::Min => fold(&v, &pos, n, umax, u64::min),
            ReduceOp::And => fold(&v, &pos, n, umax, |a, b| a & b),
            ReduceOp::Or => fold(&v, &pos, n, 0, |a, b| a | b),
            ReduceOp::Xor => fold(&v, &pos, n, 0, |a, b| a ^ b),
        }),
        Lifted::C(v) => Lifted::C(match op {
            ReduceOp::Sum => fold(
                &v,
                &pos,
                n,
                num_complex::Complex64::new(0.0, 0.0),
                |a, b| a + b,
            ),
            ReduceOp::Prod => fold(
                &v,
                &pos,
                n,
                num_complex::Complex64::new(1.0, 0.0),
                |a, b| a * b,
            ),
            // XLA's order (real part, then imaginary part), folded in
            // element order from JAX's identities `∓inf + 0j`.
            ReduceOp::Max => fold(
                &v,
                &pos,
                n,
                num_complex::Complex64::new(f64::NEG_INFINITY, 0.0),
                super::complex::max,
            ),
            ReduceOp::Min => fold(
                &v,
                &pos,
                n,
                num_complex::Complex64::new(f64::INFINITY, 0.0),
                super::complex::min,
            ),
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => return Err(unsupported(name, dt)),
        }),
        Lifted::B(v) => Lifted::B(match op {
            ReduceOp::Sum | ReduceOp::Or | ReduceOp::Max => fold(&v, &pos, n, false, |a, b| a | b),
            ReduceOp::Prod | ReduceOp::And | ReduceOp::Min => fold(&v, &pos, n, true, |a, b| a & b),
            ReduceOp::Xor => fold(&v, &pos, n, false, |a, b| a ^ b),
        }),
    };
    HostArray::new(out_shape, lower(out, dt))
}

/// The lines along `axis`: (start offsets in row-major order of the other
/// dims, length, stride).
fn lines(shape: &[usize], axis: usize) -> (Vec<usize>, usize, usize) {
    let xs = strides(shape);
    let mut other = shape.to_vec();
    other[axis] = 1;
    let st: Vec<isize> = xs.iter().map(|&s| s as isize).collect();
    (affine_map(&other, 0, &st), shape[axis], xs[axis])
}

/// True when `b` should replace the current best `a` (strictly better, or
/// the first NaN).
fn better<T: PartialOrd + Copy>(a: T, b: T, max: bool) -> bool {
    #[allow(clippy::eq_op)]
    let (a_nan, b_nan) = (a != a, b != b);
    if a_nan {
        false
    } else if b_nan {
        true
    } else if max {
        b > a
    } else {
        b < a
    }
}

fn arg_lines<T: PartialOrd + Copy>(
    v: &[T],
    starts: &[usize],
    len: usize,
    st: usize,
    max: bool,
) -> Vec<i64> {
    starts
        .iter()
        .map(|&s| {
            let mut best = 0usize;
            for k in 1..len {
                if better(v[s + best * st], v[s + k * st], max) {
                    best = k;
                }
            }
            best as i64
        })
        .collect()
}

/// `argmax` / `argmin` over one axis: first index of the extremum; the
/// first NaN wins.
pub(crate) fn arg_reduce(
    op: ArgOp,
    x: &HostArray,
    axes: &[usize],
    index_dtype: DType,
) -> Result<HostArray, IrError> {
    let name = op.name();
    let &[axis] = axes else {
        return Err(IrError::ty(
            name,
            format!("expected one axis, got {axes:?}"),
        ));
    };
    check_axis(name, axis, x.ndim())?;
    if x.shape()[axis] == 0 {
        return Err(IrError::ty(name, "cannot reduce an empty axis"));
    }
    if !index_dtype.is_int() {
        return Err(unsupported(name, index_dtype));
    }
    let (starts, len, st) = lines(x.shape(), axis);
    let max = op == ArgOp::Argmax;
    let idx = match lift(x.data()) {
        Lifted::F32(v) => arg_lines(&v, &starts, len, st, max),
        Lifted::F64(v) => arg_lines(&v, &starts, len, st, max),
        Lifted::I(v) => arg_lines(&v, &starts, len, st, max),
        Lifted::U(v) => arg_lines(&v, &starts, len, st, max),
        Lifted::B(v) => arg_lines(&v, &starts, len, st, max),
        Lifted::C(_) => return Err(unsupported(name, x.dtype())),
    };
    let mut shape = x.shape().to_vec();
    shape.remove(axis);
    HostArray::new(shape, lower(Lifted::I(idx), index_dtype))
}

fn scan_lines<T: Copy>(
    v: &mut [T],
    x: &[usize],
    len: usize,
    st: usize,
    rev: bool,
    f: impl Fn(T, T) -> T,
) {
    for &s in x {
        for k in 1..len {
            let (prev, cur) = if rev {
                (s + (len - k) * st, s + (len - 1 - k) * st)
            } else {
                (s + (k - 1) * st, s + k * st)
            };
            v[cur] = f(v[prev], v[cur]);
        }
    }
}

fn logaddexp<T: Fl>(a: T, b: T) -> T {
    if a.nan() || b.nan() {
        return a.add(b);
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    let ninf = T::of(f64::NEG_INFINITY);
    if lo == ninf || hi == T::of(f64::INFINITY) {
        return hi;
    }
    hi.add(lo.sub(hi).exp_().ln1p())
}

/// `cumsum`, `cumprod`, `cummax`, `cummin`, `cumlogsumexp` along `axis`.
pub(crate) fn cumulative(
    op: CumulativeOp,
    x: &HostArray,
    axis: usize,
    reverse: bool,
) -> Result<HostArray, IrError> {
    let name = op.name();
    check_axis(name, axis, x.ndim())?;
    let (starts, len, st) = lines(x.shape(), axis);
    let dt = x.dtype();
    let mut v = lift(x.data());
    let r = rounder(dt);
    macro_rules! run {
        ($v:expr, $f:expr) => {
            scan_lines($v, &starts, len, st, reverse, $f)
        };
    }
    match (&mut v, op) {
        (Lifted::F32(v), CumulativeOp::Cumsum) => run!(v, |a, b| r(a + b)),
        (Lifted::F32(v), CumulativeOp::Cumprod) => run!(v, |a, b| r(a * b)),
        (Lifted::F32(v), CumulativeOp::Cummax) => run!(v, fmax),
        (Lifted::F32(v), CumulativeOp::Cummin) => run!(v, fmin),
        (Lifted::F32(v), CumulativeOp::Cumlogsumexp) => run!(v, |a, b| r(logaddexp(a, b))),
        (Lifted::F64(v), CumulativeOp::Cumsum) => run!(v, |a, b| a + b),
        (Lifted::F64(v), CumulativeOp::Cumprod) => run!(v, |a, b| a * b),
        (Lifted::F64(v), CumulativeOp::Cummax) => run!(v, fmax),
        (Lifted::F64(v), CumulativeOp::Cummin) => run!(v, fmin),
        (Lifted::F64(v), CumulativeOp::Cumlogsumexp) => run!(v, logaddexp),
        (Lifted::I(v), CumulativeOp::Cumsum) => run!(v, i64::wrapping_add),
        (Lifted::I(v), CumulativeOp::Cumprod) => {
            // Wrap at the dtype's width each step (equivalent mod 2^bits).
            run!(v, i64::wrapping_mul)
        }
        (Lifted::I(v), CumulativeOp::Cummax) => run!(v, i64::max),
        (Lifted::I(v), CumulativeOp::Cummin) => run!(v, i64::min),
        (Lifted::U(v), CumulativeOp::Cumsum) => run!(v, u64::wrapping_add),
        (Lifted::U(v), CumulativeOp::Cumprod) => run!(v, u64::wrapping_mul),
        (Lifted::U(v), CumulativeOp::Cummax) => run!(v, u64::max),
        (Lifted::U(v), CumulativeOp::Cummin) => run!(v, u64::min),
        (Lifted::B(v), CumulativeOp::Cumsum | CumulativeOp::Cummax) => run!(v, |a, b| a | b),
        (Lifted::B(v), CumulativeOp::Cumprod | CumulativeOp::Cummin) => run!(v, |a, b| a & b),
        (Lifted::C(v), CumulativeOp::Cumsum) => run!(v, |a, b| a + b),
        (Lifted::C(v), CumulativeOp::Cumprod) => run!(v, |a, b| a * b),
        (
            Lifted::C(_),
            CumulativeOp::Cummax | CumulativeOp::Cummin | CumulativeOp::Cumlogsumexp,
        ) => return Err(unsupported(name, dt)),
        (Lifted::I(_) | Lifted::U(_) | Lifted::B(_), CumulativeOp::Cumlogsumexp) => {
            return Err(unsupported(name, dt))
        }
    }
    HostArray::new(x.shape().to_vec(), lower(v, dt))
}
