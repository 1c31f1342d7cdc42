//! Cumulative reductions (`cumsum`, `cumprod`, `cummax`, `cummin`,
//! `cumlogsumexp`) along one axis, as a native sequential scan per line
//! (the interpreter's order, so float results are bit-identical; f16/bf16
//! compute in f32 and round after each step).

use crate::error::run_error;
use jaxon_ir::primitive::CumulativeOp;
use jaxon_ir::{HostArray, IrError, Storage};

/// NaN-propagating maximum with `max(-0, +0) = +0` (XLA's semantics).
fn fmax<T: Float>(a: T, b: T) -> T {
    if a.nan() {
        a
    } else if b.nan() {
        b
    } else if a.gt(b) || (a.eq(b) && !a.neg()) {
        a
    } else {
        b
    }
}

/// NaN-propagating minimum with `min(-0, +0) = -0`.
fn fmin<T: Float>(a: T, b: T) -> T {
    if a.nan() {
        a
    } else if b.nan() {
        b
    } else if b.gt(a) || (a.eq(b) && a.neg()) {
        a
    } else {
        b
    }
}

trait Float: Copy {
    fn logaddexp(self, o: Self) -> Self;
    fn nan(self) -> bool;
    fn neg(self) -> bool;
    fn gt(self, o: Self) -> bool;
    fn eq(self, o: Self) -> bool;
}

macro_rules! float {
    ($t:ty) => {
        impl Float for $t {
            /// `log(e^a + e^b)` as the interpreter computes it.
            fn logaddexp(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    return self + o;
                }
                let (hi, lo) = if self > o { (self, o) } else { (o, self) };
                if lo == <$t>::NEG_INFINITY || hi == <$t>::INFINITY {
                    return hi;
                }
                hi + (lo - hi).exp().ln_1p()
            }
            fn nan(self) -> bool {
                self.is_nan()
            }
            fn neg(self) -> bool {
                self.is_sign_negative()
            }
            fn gt(self, o: Self) -> bool {
                self > o
            }
            fn eq(self, o: Self) -> bool {
                self == o
            }
        }
    };
}
float!(f32);
float!(f64);

/// Scans every line along `axis` of a row-major array of `shape` in place.
fn scan<T: Copy>(v: &mut [T], shape: &[usize], axis: usize, reverse: bool, f: impl Fn(T, T) -> T) {
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * len * inner + k * inner + i;
            for step in 1..len {
                let (prev, cur) = if reverse {
                    (at(len - step), at(len - 1 - step))
                } else {
                    (at(step - 1), at(step))
                };
                v[cur] = f(v[prev], v[cur]);
            }
        }
    }
}

/// `cumsum`/`cumprod`/`cummax`/`cummin` of `x` along `axis`.
pub(crate) fn cumulative(
    op: CumulativeOp,
    x: &HostArray,
    axis: usize,
    reverse: bool,
) -> Result<HostArray, IrError> {
    if axis >= x.ndim() {
        return Err(IrError::Eval(format!(
            "{}: axis {axis} out of range",
            op.name()
        )));
    }
    let shape = x.shape().to_vec();
    let mut out = x.clone();
    macro_rules! int {
        ($v:expr) => {
            match op {
                CumulativeOp::Cumsum => scan($v, &shape, axis, reverse, |a, b| a.wrapping_add(b)),
                CumulativeOp::Cumprod => scan($v, &shape, axis, reverse, |a, b| a.wrapping_mul(b)),
                CumulativeOp::Cummax => scan($v, &shape, axis, reverse, |a, b| a.max(b)),
                CumulativeOp::Cummin => scan($v, &shape, axis, reverse, |a, b| a.min(b)),
                CumulativeOp::Cumlogsumexp => return Err(unsupported(op, x)),
            }
        };
    }
    macro_rules! flt {
        ($v:expr) => {
            match op {
                CumulativeOp::Cumsum => scan($v, &shape, axis, reverse, |a, b| a + b),
                CumulativeOp::Cumprod => scan($v, &shape, axis, reverse, |a, b| a * b),
                CumulativeOp::Cummax => scan($v, &shape, axis, reverse, fmax),
                CumulativeOp::Cummin => scan($v, &shape, axis, reverse, fmin),
                CumulativeOp::Cumlogsumexp => scan($v, &shape, axis, reverse, Float::logaddexp),
            }
        };
    }
    macro_rules! half {
        ($v:expr, $t:ty) => {{
            let mut w: Vec<f32> = $v.iter().map(|h| h.to_f32()).collect();
            let r = |x: f32| <$t>::from_f32(x).to_f32();
            match op {
                CumulativeOp::Cumsum => scan(&mut w, &shape, axis, reverse, |a, b| r(a + b)),
                CumulativeOp::Cumprod => scan(&mut w, &shape, axis, reverse, |a, b| r(a * b)),
                CumulativeOp::Cummax => scan(&mut w, &shape, axis, reverse, fmax),
                CumulativeOp::Cummin => scan(&mut w, &shape, axis, reverse, fmin),
                CumulativeOp::Cumlogsumexp => {
                    scan(&mut w, &shape, axis, reverse, |a, b| r(a.logaddexp(b)))
                }
            }
            for (d, s) in $v.iter_mut().zip(w) {
                *d = <$t>::from_f32(s);
            }
        }};
    }
    match out.data_mut() {
        Storage::I8(v) => int!(v),
        Storage::I16(v) => int!(v),
        Storage::I32(v) => int!(v),
        Storage::I64(v) => int!(v),
        Storage::U8(v) => int!(v),
        Storage::U16(v) => int!(v),
        Storage::U32(v) => int!(v),
        Storage::U64(v) => int!(v),
        Storage::F32(v) => flt!(v),
        Storage::F64(v) => flt!(v),
        Storage::Bool(v) => match op {
            CumulativeOp::Cumsum | CumulativeOp::Cummax => {
                scan(v, &shape, axis, reverse, |a, b| a | b)
            }
            CumulativeOp::Cumprod | CumulativeOp::Cummin => {
                scan(v, &shape, axis, reverse, |a, b| a & b)
            }
            CumulativeOp::Cumlogsumexp => return Err(unsupported(op, x)),
        },
        Storage::F16(v) => half!(v, half::f16),
        Storage::BF16(v) => half!(v, half::bf16),
        // Complex programs take the slow path (`crate::complex`).
        Storage::C64(_) | Storage::C128(_) | Storage::Key(_) => return Err(unsupported(op, x)),
    }
    Ok(out)
}

fn unsupported(op: CumulativeOp, x: &HostArray) -> IrError {
    IrError::UnsupportedDType {
        primitive: op.name().to_string(),
        dtype: x.dtype(),
    }
}

/// Whether `b` replaces the current best `a`: a NaN is never replaced and
/// replaces any number; otherwise strictly greater (max) or smaller (min),
/// so the first extremum wins ties.
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

/// `argmax`/`argmin` along `axis`: the first index of the extremum, as
/// `index_dtype`.
pub(crate) fn arg_reduce(
    max: bool,
    x: &HostArray,
    axis: usize,
    index_dtype: jaxon_ir::DType,
) -> Result<HostArray, IrError> {
    let shape = x.shape().to_vec();
    if axis >= shape.len() || shape[axis] == 0 || !index_dtype.is_int() {
        return Err(run_error(format!(
            "arg reduction of {shape:?} along {axis} to {index_dtype}"
        )));
    }
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    fn lines<T: PartialOrd + Copy>(
        v: &[T],
        outer: usize,
        len: usize,
        inner: usize,
        max: bool,
    ) -> Vec<f64> {
        let mut out = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| v[o * len * inner + k * inner + i];
                let mut best = 0usize;
                for k in 1..len {
                    if better(at(best), at(k), max) {
                        best = k;
                    }
                }
                out.push(best as f64);
            }
        }
        out
    }
    macro_rules! go {
        ($($v:ident),*) => {
            match x.data() {
                $(Storage::$v(v) => lines(v, outer, len, inner, max),)*
                Storage::F16(v) => {
                    let w: Vec<f32> = v.iter().map(|h| h.to_f32()).collect();
                    lines(&w, outer, len, inner, max)
                }
                Storage::BF16(v) => {
                    let w: Vec<f32> = v.iter().map(|h| h.to_f32()).collect();
                    lines(&w, outer, len, inner, max)
                }
                Storage::C64(_) | Storage::C128(_) => {
                    return Err(crate::error::run_error("argmax/argmin of complex numbers"))
                }
                Storage::Key(_) => return Err(crate::error::run_error("argmax/argmin of keys")),
            }
        };
    }
    let idx = go!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64);
    let mut out_shape = shape;
    out_shape.remove(axis);
    HostArray::from_f64(index_dtype, &out_shape, &idx)
}
