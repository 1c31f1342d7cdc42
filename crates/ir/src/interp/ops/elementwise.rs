//! Elementwise kernels: unary and binary ops, `integer_pow`, `round`,
//! `select_n` and `clamp`, computed in the lifted domain (f16/bf16 in f32).

use super::special;
use super::{check_same_shape, lift, lower, map_storage, Lifted};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{BinaryOp, RoundingMethod, UnaryOp};

/// Float math shared by f32 and f64, each in its own precision.
pub(crate) trait Fl: Copy + PartialOrd + std::fmt::Debug {
    /// Converts from f64.
    fn of(x: f64) -> Self;
    /// NaN test.
    fn nan(self) -> bool;
    /// Sign bit test.
    fn neg_sign(self) -> bool;
    /// The float operations by name.
    fn op1(op: UnaryOp) -> Option<fn(Self) -> Self>;
    /// `x + y` etc. by name (float-valued binaries only).
    fn op2(op: BinaryOp) -> Option<fn(Self, Self) -> Self>;
    /// `x * y`.
    fn mul(self, o: Self) -> Self;
    /// `x + y`.
    fn add(self, o: Self) -> Self;
    /// `1 / x`.
    fn recip(self) -> Self;
    /// `x - y`.
    fn sub(self, o: Self) -> Self;
    /// `e^x`.
    fn exp_(self) -> Self;
    /// `ln(1 + x)`.
    fn ln1p(self) -> Self;
}

/// NaN-propagating maximum; `max(-0, +0) = +0`.
pub(crate) fn fmax<T: Fl>(a: T, b: T) -> T {
    if a.nan() {
        a
    } else if b.nan() {
        b
    } else if a > b || (a == b && !a.neg_sign()) {
        a
    } else {
        b
    }
}

/// NaN-propagating minimum; `min(-0, +0) = -0`.
pub(crate) fn fmin<T: Fl>(a: T, b: T) -> T {
    if a.nan() {
        a
    } else if b.nan() {
        b
    } else if a < b || (a == b && a.neg_sign()) {
        a
    } else {
        b
    }
}

macro_rules! impl_fl {
    ($t:ident, $erf:path, $erfc:path, $erfinv:path, $sp1:path, $sp2:path) => {
        impl Fl for $t {
            fn of(x: f64) -> $t {
                x as $t
            }
            fn nan(self) -> bool {
                self.is_nan()
            }
            fn neg_sign(self) -> bool {
                self.is_sign_negative()
            }
            fn mul(self, o: $t) -> $t {
                self * o
            }
            fn add(self, o: $t) -> $t {
                self + o
            }
            fn recip(self) -> $t {
                1.0 / self
            }
            fn sub(self, o: $t) -> $t {
                self - o
            }
            fn exp_(self) -> $t {
                self.exp()
            }
            fn ln1p(self) -> $t {
                self.ln_1p()
            }
            fn op1(op: UnaryOp) -> Option<fn($t) -> $t> {
                Some(match op {
                    UnaryOp::Neg => |x: $t| -x,
                    UnaryOp::Sign => |x: $t| {
                        if x.is_nan() || x == 0.0 {
                            x
                        } else {
                            x.signum()
                        }
                    },
                    UnaryOp::Floor => $t::floor,
                    UnaryOp::Ceil => $t::ceil,
                    UnaryOp::Exp => $t::exp,
                    UnaryOp::Exp2 => $t::exp2,
                    UnaryOp::Log => $t::ln,
                    UnaryOp::Log1p => $t::ln_1p,
                    UnaryOp::Expm1 => $t::exp_m1,
                    UnaryOp::Tanh => $t::tanh,
                    UnaryOp::Logistic => |x: $t| 1.0 / (1.0 + (-x).exp()),
                    UnaryOp::Sin => $t::sin,
                    UnaryOp::Cos => $t::cos,
                    UnaryOp::Tan => $t::tan,
                    UnaryOp::Asin => $t::asin,
                    UnaryOp::Acos => $t::acos,
                    UnaryOp::Atan => $t::atan,
                    UnaryOp::Sinh => $t::sinh,
                    UnaryOp::Cosh => $t::cosh,
                    UnaryOp::Asinh => $t::asinh,
                    UnaryOp::Acosh => $t::acosh,
                    UnaryOp::Atanh => $t::atanh,
                    UnaryOp::Sqrt => $t::sqrt,
                    UnaryOp::Rsqrt => |x: $t| 1.0 / x.sqrt(),
                    UnaryOp::Cbrt => $t::cbrt,
                    UnaryOp::Abs => $t::abs,
                    UnaryOp::Erf => $erf,
                    UnaryOp::Erfc => $erfc,
                    UnaryOp::ErfInv => $erfinv,
                    UnaryOp::Square => |x: $t| x * x,
                    UnaryOp::Copy | UnaryOp::StopGradient => |x: $t| x,
                    UnaryOp::Lgamma
                    | UnaryOp::Digamma
                    | UnaryOp::BesselI0e
                    | UnaryOp::BesselI1e => return $sp1(op),
                    UnaryOp::IsFinite | UnaryOp::Not | UnaryOp::PopulationCount | UnaryOp::Clz => {
                        return None
                    }
                })
            }
            fn op2(op: BinaryOp) -> Option<fn($t, $t) -> $t> {
                Some(match op {
                    BinaryOp::Add | BinaryOp::AddAny => |x: $t, y: $t| x + y,
                    BinaryOp::Sub => |x: $t, y: $t| x - y,
                    BinaryOp::Mul => |x: $t, y: $t| x * y,
                    BinaryOp::Div => |x: $t, y: $t| x / y,
                    BinaryOp::Rem => |x: $t, y: $t| x % y,
                    BinaryOp::Pow => $t::powf,
                    BinaryOp::Max => fmax::<$t>,
                    BinaryOp::Min => fmin::<$t>,
                    BinaryOp::Atan2 => $t::atan2,
                    BinaryOp::Igamma
                    | BinaryOp::Igammac
                    | BinaryOp::IgammaGradA
                    | BinaryOp::RandomGammaGrad
                    | BinaryOp::Polygamma
                    | BinaryOp::Zeta => return $sp2(op),
                    BinaryOp::Nextafter
                    | BinaryOp::And
                    | BinaryOp::Or
                    | BinaryOp::Xor
                    | BinaryOp::ShiftLeft
                    | BinaryOp::ShiftRightArithmetic
                    | BinaryOp::ShiftRightLogical
                    | BinaryOp::Eq
                    | BinaryOp::Ne
                    | BinaryOp::Lt
                    | BinaryOp::Le
                    | BinaryOp::Gt
                    | BinaryOp::Ge
                    | BinaryOp::LtTo
                    | BinaryOp::LeTo => return None,
                })
            }
        }
    };
}
impl_fl!(
    f32,
    special::erf_f32,
    special::erfc_f32,
    special::erf_inv_f32,
    special::unary_f32,
    special::binary_f32
);
impl_fl!(
    f64,
    special::erf_f64,
    special::erfc_f64,
    special::erf_inv_f64,
    special::unary_f64,
    special::binary_f64
);

fn unsupported(name: &str, dtype: DType) -> IrError {
    IrError::UnsupportedDType {
        primitive: name.to_string(),
        dtype,
    }
}

fn rebuild(x: &HostArray, data: Storage) -> Result<HostArray, IrError> {
    HostArray::new(x.shape().to_vec(), data)
}

/// A unary elementwise op.
pub(crate) fn unary(op: UnaryOp, x: &HostArray) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    let name = op.name();
    if dt.is_complex() {
        return super::complex::unary(op, x);
    }
    if op == UnaryOp::IsFinite {
        let out: Vec<bool> = match lift(x.data()) {
            Lifted::F32(v) => v.iter().map(|y| y.is_finite()).collect(),
            Lifted::F64(v) => v.iter().map(|y| y.is_finite()).collect(),
            _ => return Err(unsupported(name, dt)),
        };
        return rebuild(x, Storage::Bool(out));
    }
    let bits = dt.bits();
    if matches!(op, UnaryOp::PopulationCount | UnaryOp::Clz) {
        return bit_count(op, x, bits);
    }
    let out = match lift(x.data()) {
        Lifted::F32(v) => {
            let f = f32::op1(op).ok_or_else(|| unsupported(name, dt))?;
            Lifted::F32(v.into_iter().map(f).collect())
        }
        Lifted::F64(v) => {
            let f = f64::op1(op).ok_or_else(|| unsupported(name, dt))?;
            Lifted::F64(v.into_iter().map(f).collect())
        }
        Lifted::I(v) => {
            let f: fn(i64) -> i64 = match op {
                UnaryOp::Neg => i64::wrapping_neg,
                UnaryOp::Sign => i64::signum,
                UnaryOp::Abs => i64::wrapping_abs,
                UnaryOp::Not => |x: i64| !x,
                UnaryOp::Square => |x: i64| x.wrapping_mul(x),
                UnaryOp::Copy | UnaryOp::StopGradient => |x| x,
                _ => return Err(unsupported(name, dt)),
            };
            Lifted::I(v.into_iter().map(f).collect())
        }
        Lifted::U(v) => {
            let f: fn(u64) -> u64 = match op {
                UnaryOp::Neg => u64::wrapping_neg,
                UnaryOp::Sign => |x: u64| (x != 0) as u64,
                UnaryOp::Abs | UnaryOp::Copy | UnaryOp::StopGradient => |x| x,
                UnaryOp::Not => |x: u64| !x,
                UnaryOp::Square => |x: u64| x.wrapping_mul(x),
                _ => return Err(unsupported(name, dt)),
            };
            Lifted::U(v.into_iter().map(f).collect())
        }
        Lifted::C(_) => return Err(unsupported(name, dt)),
        Lifted::B(v) => {
            let f: fn(bool) -> bool = match op {
                UnaryOp::Not => |x: bool| !x,
                UnaryOp::Copy | UnaryOp::StopGradient | UnaryOp::Abs => |x| x,
                _ => return Err(unsupported(name, dt)),
            };
            Lifted::B(v.into_iter().map(f).collect())
        }
    };
    rebuild(x, lower(out, dt))
}

/// `population_count` and `clz` on the low `bits` bits of an integer.
fn bit_count(op: UnaryOp, x: &HostArray, bits: u32) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let count = |v: u64| -> u64 {
        let v = v & mask;
        match op {
            UnaryOp::PopulationCount => u64::from(v.count_ones()),
            _ => u64::from(v.leading_zeros() - (64 - bits)),
        }
    };
    let out = match lift(x.data()) {
        Lifted::I(v) => Lifted::I(v.into_iter().map(|y| count(y as u64) as i64).collect()),
        Lifted::U(v) => Lifted::U(v.into_iter().map(count).collect()),
        _ => return Err(unsupported(op.name(), dt)),
    };
    rebuild(x, lower(out, dt))
}

/// The common shape when two equal-rank, different shapes broadcast through
/// their size-1 dimensions.
fn size_one_broadcast(x: &HostArray, y: &HostArray) -> Option<Vec<usize>> {
    if x.shape() == y.shape() || x.ndim() != y.ndim() || x.ndim() == 0 {
        return None;
    }
    x.shape()
        .iter()
        .zip(y.shape())
        .map(|(&a, &b)| match (a, b) {
            _ if a == b => Some(a),
            (1, b) => Some(b),
            (a, 1) => Some(a),
            _ => None,
        })
        .collect()
}

/// Broadcasts a rank-0 operand against the other; returns the result shape.
fn binary_shape(name: &str, x: &HostArray, y: &HostArray) -> Result<Vec<usize>, IrError> {
    if x.shape() == y.shape() {
        Ok(x.shape().to_vec())
    } else if x.ndim() == 0 {
        Ok(y.shape().to_vec())
    } else if y.ndim() == 0 {
        Ok(x.shape().to_vec())
    } else {
        check_same_shape(name, x, y).map(|_| Vec::new())
    }
}

fn zip<A: Copy, B: Copy, C>(a: &[A], b: &[B], n: usize, f: impl Fn(A, B) -> C) -> Vec<C> {
    let sa = a.len() != 1 || n == 1;
    let sb = b.len() != 1 || n == 1;
    (0..n)
        .map(|i| f(a[if sa { i } else { 0 }], b[if sb { i } else { 0 }]))
        .collect()
}

fn compare<T: PartialOrd + Copy>(op: BinaryOp) -> Option<fn(T, T) -> bool> {
    Some(match op {
        BinaryOp::Eq => |a, b| a == b,
        BinaryOp::Ne => |a, b| a != b,
        BinaryOp::Lt => |a, b| a < b,
        BinaryOp::Le => |a, b| a <= b,
        BinaryOp::Gt => |a, b| a > b,
        BinaryOp::Ge => |a, b| a >= b,
        BinaryOp::LtTo => |a, b| a < b,
        BinaryOp::LeTo => |a, b| a <= b,
        _ => return None,
    })
}

/// A binary elementwise op (a rank-0 operand broadcasts).
pub(crate) fn binary(op: BinaryOp, x: &HostArray, y: &HostArray) -> Result<HostArray, IrError> {
    let name = op.name();
    if let Some(shape) = size_one_broadcast(x, y) {
        // JAX's lax lets size-1 dimensions of equal-rank operands broadcast.
        let expand = |a: &HostArray| -> Result<HostArray, IrError> {
            if a.shape() == shape.as_slice() {
                return Ok(a.clone());
            }
            let squeezed: Vec<usize> = a.shape().iter().copied().filter(|&d| d != 1).collect();
            let kept: Vec<usize> = (0..a.ndim()).filter(|&i| a.shape()[i] != 1).collect();
            let a = a.clone().reshape(squeezed)?;
            let target: Vec<Option<usize>> = shape.iter().map(|&d| Some(d)).collect();
            super::structural::broadcast_in_dim(&[a], &target, &kept)
        };
        return binary(op, &expand(x)?, &expand(y)?);
    }
    let shape = binary_shape(name, x, y)?;
    let n: usize = shape.iter().product();
    let dt = x.dtype();
    if op == BinaryOp::Nextafter {
        return HostArray::new(shape, special::nextafter(x.data(), y.data(), n)?);
    }
    if op == BinaryOp::Pow && dt.is_float() && y.dtype().is_int() {
        let yc = super::convert::convert_storage(y.data(), dt);
        let yc = HostArray::new(y.shape().to_vec(), yc)?;
        return binary(op, x, &yc);
    }
    if dt != y.dtype() {
        return Err(IrError::ty(
            name,
            format!("operand dtypes {} and {} differ", dt, y.dtype()),
        ));
    }
    if dt.is_complex() {
        return super::complex::binary(op, x, y, shape);
    }
    let (a, b) = (lift(x.data()), lift(y.data()));
    if op.is_comparison() {
        let out = compare_lifted(op, &a, &b, n).ok_or_else(|| unsupported(name, dt))?;
        return HostArray::new(shape, Storage::Bool(out));
    }
    let bits = dt.bits() as u64;
    let out = match (a, b) {
        (Lifted::F32(a), Lifted::F32(b)) => Lifted::F32(zip(
            &a,
            &b,
            n,
            f32::op2(op).ok_or_else(|| unsupported(name, dt))?,
        )),
        (Lifted::F64(a), Lifted::F64(b)) => Lifted::F64(zip(
            &a,
            &b,
            n,
            f64::op2(op).ok_or_else(|| unsupported(name, dt))?,
        )),
        (Lifted::I(a), Lifted::I(b)) => {
            let f = int_op(op, bits).ok_or_else(|| unsupported(name, dt))?;
            Lifted::I(zip(&a, &b, n, f))
        }
        (Lifted::U(a), Lifted::U(b)) => {
            let f = uint_op(op, bits).ok_or_else(|| unsupported(name, dt))?;
            Lifted::U(zip(&a, &b, n, f))
        }
        (Lifted::B(a), Lifted::B(b)) => {
            let f: fn(bool, bool) -> bool = match op {
                BinaryOp::And | BinaryOp::Min | BinaryOp::Mul => |p, q| p & q,
                BinaryOp::Or | BinaryOp::Max | BinaryOp::Add | BinaryOp::AddAny => |p, q| p | q,
                BinaryOp::Xor | BinaryOp::Ne => |p, q| p ^ q,
                _ => return Err(unsupported(name, dt)),
            };
            Lifted::B(zip(&a, &b, n, f))
        }
        _ => return Err(unsupported(name, dt)),
    };
    HostArray::new(shape, lower(out, dt))
}

/// The total-order key of an f64: the sign-magnitude bits as a two's
/// complement integer, so -NaN < -inf < .. < -0.0 < 0.0 < .. < inf < NaN.
pub(crate) fn total_key_f64(x: f64) -> i64 {
    let k = x.to_bits() as i64;
    k ^ (((k >> 63) as u64) >> 1) as i64
}

/// The total-order key of an f32 (see [`total_key_f64`]).
pub(crate) fn total_key_f32(x: f32) -> i32 {
    let k = x.to_bits() as i32;
    k ^ (((k >> 31) as u32) >> 1) as i32
}

fn compare_lifted(op: BinaryOp, a: &Lifted, b: &Lifted, n: usize) -> Option<Vec<bool>> {
    if matches!(op, BinaryOp::LtTo | BinaryOp::LeTo) {
        let keyed = |a: Vec<i64>, b: Vec<i64>| Some(zip(&a, &b, n, compare::<i64>(op)?));
        match (a, b) {
            (Lifted::F32(a), Lifted::F32(b)) => {
                let key = |v: &[f32]| v.iter().map(|&x| i64::from(total_key_f32(x))).collect();
                return keyed(key(a), key(b));
            }
            (Lifted::F64(a), Lifted::F64(b)) => {
                let key = |v: &[f64]| v.iter().map(|&x| total_key_f64(x)).collect();
                return keyed(key(a), key(b));
            }
            _ => {}
        }
    }
    Some(match (a, b) {
        (Lifted::F32(a), Lifted::F32(b)) => zip(a, b, n, compare::<f32>(op)?),
        (Lifted::F64(a), Lifted::F64(b)) => zip(a, b, n, compare::<f64>(op)?),
        (Lifted::I(a), Lifted::I(b)) => zip(a, b, n, compare::<i64>(op)?),
        (Lifted::U(a), Lifted::U(b)) => zip(a, b, n, compare::<u64>(op)?),
        (Lifted::B(a), Lifted::B(b)) => zip(a, b, n, compare::<bool>(op)?),
        _ => return None,
    })
}

/// Signed integer binary op on values sign-extended from `bits` bits.
fn int_op(op: BinaryOp, bits: u64) -> Option<Box<dyn Fn(i64, i64) -> i64>> {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    Some(match op {
        BinaryOp::Add | BinaryOp::AddAny => Box::new(i64::wrapping_add),
        BinaryOp::Sub => Box::new(i64::wrapping_sub),
        BinaryOp::Mul => Box::new(i64::wrapping_mul),
        BinaryOp::Div => Box::new(|x: i64, y: i64| if y == 0 { -1 } else { x.wrapping_div(y) }),
        BinaryOp::Rem => Box::new(|x: i64, y: i64| if y == 0 { x } else { x.wrapping_rem(y) }),
        BinaryOp::Max => Box::new(|x: i64, y: i64| x.max(y)),
        BinaryOp::Min => Box::new(|x: i64, y: i64| x.min(y)),
        BinaryOp::And => Box::new(|x, y| x & y),
        BinaryOp::Or => Box::new(|x, y| x | y),
        BinaryOp::Xor => Box::new(|x, y| x ^ y),
        BinaryOp::ShiftLeft => Box::new(move |x: i64, s: i64| {
            let s = s as u64 & mask;
            if s >= bits {
                0
            } else {
                x.wrapping_shl(s as u32)
            }
        }),
        BinaryOp::ShiftRightArithmetic => Box::new(move |x: i64, s: i64| {
            let s = s as u64 & mask;
            x >> s.min(63)
        }),
        BinaryOp::ShiftRightLogical => Box::new(move |x: i64, s: i64| {
            let s = s as u64 & mask;
            if s >= bits {
                0
            } else {
                ((x as u64 & mask) >> s) as i64
            }
        }),
        BinaryOp::Pow => Box::new(|x: i64, y: i64| int_pow_i(x, y)),
        BinaryOp::Atan2
        | BinaryOp::Nextafter
        | BinaryOp::Igamma
        | BinaryOp::Igammac
        | BinaryOp::IgammaGradA
        | BinaryOp::RandomGammaGrad
        | BinaryOp::Polygamma
        | BinaryOp::Zeta
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::LtTo
        | BinaryOp::LeTo => return None,
    })
}

/// Unsigned integer binary op on values of `bits` bits.
fn uint_op(op: BinaryOp, bits: u64) -> Option<Box<dyn Fn(u64, u64) -> u64>> {
    Some(match op {
        BinaryOp::Add | BinaryOp::AddAny => Box::new(u64::wrapping_add),
        BinaryOp::Sub => Box::new(u64::wrapping_sub),
        BinaryOp::Mul => Box::new(u64::wrapping_mul),
        BinaryOp::Div => Box::new(|x: u64, y: u64| x.checked_div(y).unwrap_or(u64::MAX)),
        BinaryOp::Rem => Box::new(|x: u64, y: u64| if y == 0 { x } else { x % y }),
        BinaryOp::Max => Box::new(|x: u64, y: u64| x.max(y)),
        BinaryOp::Min => Box::new(|x: u64, y: u64| x.min(y)),
        BinaryOp::And => Box::new(|x, y| x & y),
        BinaryOp::Or => Box::new(|x, y| x | y),
        BinaryOp::Xor => Box::new(|x, y| x ^ y),
        BinaryOp::ShiftLeft => Box::new(move |x: u64, s: u64| {
            if s >= bits {
                0
            } else {
                x.wrapping_shl(s as u32)
            }
        }),
        BinaryOp::ShiftRightArithmetic => Box::new(move |x: u64, s: u64| {
            // Sign-extend from `bits`, shift, and wrap back on lowering.
            let sx = ((x << (64 - bits)) as i64) >> (64 - bits);
            (sx >> s.min(63)) as u64
        }),
        BinaryOp::ShiftRightLogical => {
            Box::new(move |x: u64, s: u64| if s >= bits { 0 } else { x >> s })
        }
        BinaryOp::Pow => Box::new(|x: u64, y: u64| {
            let mut acc = 1u64;
            let (mut b, mut e) = (x, y);
            while e > 0 {
                if e & 1 == 1 {
                    acc = acc.wrapping_mul(b);
                }
                b = b.wrapping_mul(b);
                e >>= 1;
            }
            acc
        }),
        BinaryOp::Atan2
        | BinaryOp::Nextafter
        | BinaryOp::Igamma
        | BinaryOp::Igammac
        | BinaryOp::IgammaGradA
        | BinaryOp::RandomGammaGrad
        | BinaryOp::Polygamma
        | BinaryOp::Zeta
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::LtTo
        | BinaryOp::LeTo => return None,
    })
}

fn int_pow_i(x: i64, y: i64) -> i64 {
    if y < 0 {
        return match x {
            1 => 1,
            -1 => {
                if y % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let mut acc = 1i64;
    let (mut b, mut e) = (x, y as u64);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    acc
}

fn fpow_int<T: Fl>(x: T, y: i64) -> T {
    let mut acc: Option<T> = None;
    let (mut b, mut e) = (x, y.unsigned_abs());
    while e > 0 {
        if e & 1 == 1 {
            acc = Some(match acc {
                None => b,
                Some(a) => a.mul(b),
            });
        }
        e >>= 1;
        if e > 0 {
            b = b.mul(b);
        }
    }
    let r = acc.unwrap_or(T::of(1.0));
    if y < 0 {
        r.recip()
    } else {
        r
    }
}

/// `integer_pow`: `x ** y` by repeated squaring; negative `y` is `1 / x**|y|`.
pub(crate) fn integer_pow(x: &HostArray, y: i64) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    if dt.is_complex() {
        return super::complex::integer_pow(x, y);
    }
    let out = match lift(x.data()) {
        Lifted::F32(v) => Lifted::F32(v.into_iter().map(|a| fpow_int(a, y)).collect()),
        Lifted::F64(v) => Lifted::F64(v.into_iter().map(|a| fpow_int(a, y)).collect()),
        Lifted::I(v) => Lifted::I(v.into_iter().map(|a| int_pow_i(a, y)).collect()),
        Lifted::U(v) if y >= 0 => Lifted::U(
            v.into_iter()
                .map(|a| int_pow_i(a as i64, y) as u64)
                .collect(),
        ),
        _ => return Err(unsupported("integer_pow", dt)),
    };
    rebuild(x, lower(out, dt))
}

/// `round` with either rounding method.
pub(crate) fn round(x: &HostArray, method: RoundingMethod) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    let even = method == RoundingMethod::ToNearestEven;
    let out = match lift(x.data()) {
        Lifted::F32(v) => Lifted::F32(
            v.into_iter()
                .map(|a| if even { a.round_ties_even() } else { a.round() })
                .collect(),
        ),
        Lifted::F64(v) => Lifted::F64(
            v.into_iter()
                .map(|a| if even { a.round_ties_even() } else { a.round() })
                .collect(),
        ),
        _ => return Err(unsupported("round", dt)),
    };
    rebuild(x, lower(out, dt))
}

/// `select_n which *cases`: `cases[which]` elementwise (`which` bool or
/// integer, clamped into range; a rank-0 `which` broadcasts).
pub(crate) fn select_n(args: &[HostArray]) -> Result<HostArray, IrError> {
    let name = "select_n";
    let (which, cases) = args
        .split_first()
        .ok_or_else(|| IrError::ty(name, "needs a predicate"))?;
    let first = cases
        .first()
        .ok_or_else(|| IrError::ty(name, "needs at least one case"))?;
    for c in cases {
        check_same_shape(name, first, c)?;
        if c.dtype() != first.dtype() {
            return Err(IrError::ty(name, "cases of different dtypes"));
        }
    }
    if which.ndim() != 0 && which.shape() != first.shape() {
        return Err(IrError::ty(
            name,
            format!(
                "predicate shape {:?} vs case shape {:?}",
                which.shape(),
                first.shape()
            ),
        ));
    }
    if !(which.dtype().is_bool() || which.dtype().is_int()) {
        return Err(unsupported(name, which.dtype()));
    }
    let n = first.len();
    let last = cases.len() as i64 - 1;
    let scalar = which.ndim() == 0;
    let pick = |i: usize| -> usize {
        let w = which.data().get_i64(if scalar { 0 } else { i });
        w.clamp(0, last) as usize
    };
    let data = map_storage!(first.data(), v => {
        let cs: Vec<&[_]> = cases
            .iter()
            .map(|c| same_variant(c.data(), v))
            .collect::<Option<_>>()
            .ok_or_else(|| IrError::ty(name, "cases of different dtypes"))?;
        (0..n).map(|i| cs[pick(i)][i]).collect()
    });
    rebuild(first, data)
}

/// Borrows `s` as a slice of the same element type as `_like`.
fn same_variant<'a, T: 'static>(s: &'a Storage, _like: &[T]) -> Option<&'a [T]> {
    let any: &dyn std::any::Any = match s {
        Storage::Bool(v) => v,
        Storage::I8(v) => v,
        Storage::I16(v) => v,
        Storage::I32(v) => v,
        Storage::I64(v) => v,
        Storage::U8(v) => v,
        Storage::U16(v) => v,
        Storage::U32(v) => v,
        Storage::U64(v) => v,
        Storage::F16(v) => v,
        Storage::BF16(v) => v,
        Storage::F32(v) => v,
        Storage::F64(v) => v,
        Storage::C64(v) => v,
        Storage::C128(v) => v,
        Storage::Key(v) => v,
    };
    any.downcast_ref::<Vec<T>>().map(|v| v.as_slice())
}

/// `clamp lo x hi` = `min(max(x, lo), hi)`; `lo`/`hi` may be rank 0.
pub(crate) fn clamp(lo: &HostArray, x: &HostArray, hi: &HostArray) -> Result<HostArray, IrError> {
    let for_shape = |a: &HostArray| -> Result<(), IrError> {
        if a.ndim() == 0 || a.shape() == x.shape() {
            Ok(())
        } else {
            Err(IrError::ty(
                "clamp",
                format!("bound shape {:?} vs operand {:?}", a.shape(), x.shape()),
            ))
        }
    };
    for_shape(lo)?;
    for_shape(hi)?;
    let m = binary(BinaryOp::Max, x, lo)?;
    binary(BinaryOp::Min, &m, hi)
}
