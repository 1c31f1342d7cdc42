//! `Elem`: the element arithmetic native steps need, for every dtype, with
//! the interpreter's (XLA's) semantics: integers wrap, f16/bf16 compute in
//! f32 and round, `max`/`min` propagate NaN, sorts put NaN last.

use half::{bf16, f16};
use jaxon_ir::primitive::AtomicOp;
use std::cmp::Ordering;

/// Element operations shared by the native steps.
pub(crate) trait Elem: Copy + Send + Sync + 'static {
    /// `a + b` (wrapping; `|` for bool).
    fn add(self, o: Self) -> Self;
    /// `a * b` (wrapping; `&` for bool).
    fn mul(self, o: Self) -> Self;
    /// NaN-propagating max with `max(-0, +0) = +0`.
    fn max(self, o: Self) -> Self;
    /// NaN-propagating min with `min(-0, +0) = -0`.
    fn min(self, o: Self) -> Self;
    /// Sort order: NaNs last and equal, `-0 == +0`.
    fn sort_cmp(self, o: Self) -> Ordering;
    /// `top_k` order: IEEE total order for floats.
    fn total_cmp(self, o: Self) -> Ordering;
    /// Zero (false).
    fn zero() -> Self;
    /// The value of an uninitialised lane (NaN, the integer minimum, false).
    fn uninit() -> Self;
    /// A Pallas atomic's combination, exactly as the interpreter's (`None`
    /// when the operation does not apply to the type).
    fn combine(self, o: Self, op: AtomicOp) -> Option<Self>;
    /// From f64, as a cast.
    fn of_f64(x: f64) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn max(self, o: Self) -> Self { Ord::max(self, o) }
            fn min(self, o: Self) -> Self { Ord::min(self, o) }
            fn sort_cmp(self, o: Self) -> Ordering { self.cmp(&o) }
            fn total_cmp(self, o: Self) -> Ordering { self.cmp(&o) }
            fn zero() -> Self { 0 }
            fn uninit() -> Self { <$t>::MIN }
            fn combine(self, o: Self, op: AtomicOp) -> Option<Self> {
                Some(match op {
                    AtomicOp::Add => self.wrapping_add(o),
                    AtomicOp::Max => if o > self { o } else { self },
                    AtomicOp::Min => if o < self { o } else { self },
                    AtomicOp::And => self & o,
                    AtomicOp::Or => self | o,
                    AtomicOp::Xor => self ^ o,
                    AtomicOp::Xchg => o,
                })
            }
            fn of_f64(x: f64) -> Self { x as $t }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Elem for bool {
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn max(self, o: Self) -> Self {
        self | o
    }
    fn min(self, o: Self) -> Self {
        self & o
    }
    fn sort_cmp(self, o: Self) -> Ordering {
        self.cmp(&o)
    }
    fn total_cmp(self, o: Self) -> Ordering {
        self.cmp(&o)
    }
    fn zero() -> Self {
        false
    }
    fn uninit() -> Self {
        false
    }
    fn combine(self, o: Self, op: AtomicOp) -> Option<Self> {
        Some(match op {
            AtomicOp::Add | AtomicOp::Or | AtomicOp::Max => self | o,
            AtomicOp::And | AtomicOp::Min => self & o,
            AtomicOp::Xor => self ^ o,
            AtomicOp::Xchg => o,
        })
    }
    fn of_f64(x: f64) -> Self {
        x != 0.0
    }
}

/// NaN-propagating max on f64 images (exact for every float format).
fn fmax(a: f64, b: f64) -> bool {
    // true: pick a
    if a.is_nan() {
        true
    } else if b.is_nan() {
        false
    } else {
        a > b || (a == b && !a.is_sign_negative())
    }
}

fn fmin(a: f64, b: f64) -> bool {
    if a.is_nan() {
        true
    } else if b.is_nan() {
        false
    } else {
        a < b || (a == b && a.is_sign_negative())
    }
}

fn sort_cmp_f(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

macro_rules! float_elem {
    ($t:ty, $wide:ty, $to:expr, $from:expr) => {
        impl Elem for $t {
            fn add(self, o: Self) -> Self {
                let (to, from): (fn($t) -> $wide, fn($wide) -> $t) = ($to, $from);
                from(to(self) + to(o))
            }
            fn mul(self, o: Self) -> Self {
                let (to, from): (fn($t) -> $wide, fn($wide) -> $t) = ($to, $from);
                from(to(self) * to(o))
            }
            fn max(self, o: Self) -> Self {
                if fmax(F64Conv::to_f64_(self), F64Conv::to_f64_(o)) {
                    self
                } else {
                    o
                }
            }
            fn min(self, o: Self) -> Self {
                if fmin(F64Conv::to_f64_(self), F64Conv::to_f64_(o)) {
                    self
                } else {
                    o
                }
            }
            fn sort_cmp(self, o: Self) -> Ordering {
                sort_cmp_f(F64Conv::to_f64_(self), F64Conv::to_f64_(o))
            }
            fn total_cmp(self, o: Self) -> Ordering {
                f64::total_cmp(&F64Conv::to_f64_(self), &F64Conv::to_f64_(o))
            }
            fn zero() -> Self {
                Self::of_f64(0.0)
            }
            fn uninit() -> Self {
                Self::of_f64(f64::NAN)
            }
            fn combine(self, o: Self, op: AtomicOp) -> Option<Self> {
                let (a, b) = (F64Conv::to_f64_(self), F64Conv::to_f64_(o));
                match op {
                    AtomicOp::Add => Some(self.add(o)),
                    AtomicOp::Max => Some(if a.is_nan() {
                        self
                    } else if b.is_nan() || b > a {
                        o
                    } else {
                        self
                    }),
                    AtomicOp::Min => Some(if a.is_nan() {
                        self
                    } else if b.is_nan() || b < a {
                        o
                    } else {
                        self
                    }),
                    AtomicOp::Xchg => Some(o),
                    AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => None,
                }
            }
            fn of_f64(x: f64) -> Self {
                <$t as F64Conv>::from_f64_(x)
            }
        }
    };
}

/// Complex elements: sums and products as complex numbers, the order
/// lexicographic (real part first) as XLA sorts them; `max`/`min` and the
/// bitwise atomics do not apply (the complex slow path never asks).
macro_rules! complex_elem {
    ($($t:ty),*) => {$(
        impl Elem for jaxon_ir::num_complex::Complex<$t> {
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn max(self, o: Self) -> Self {
                if self.sort_cmp(o) == Ordering::Less { o } else { self }
            }
            fn min(self, o: Self) -> Self {
                if self.sort_cmp(o) == Ordering::Greater { o } else { self }
            }
            fn sort_cmp(self, o: Self) -> Ordering {
                sort_cmp_f(self.re as f64, o.re as f64).then(sort_cmp_f(self.im as f64, o.im as f64))
            }
            fn total_cmp(self, o: Self) -> Ordering {
                f64::total_cmp(&(self.re as f64), &(o.re as f64))
                    .then(f64::total_cmp(&(self.im as f64), &(o.im as f64)))
            }
            fn zero() -> Self {
                Self::new(0.0, 0.0)
            }
            fn uninit() -> Self {
                Self::new(<$t>::NAN, <$t>::NAN)
            }
            fn combine(self, o: Self, op: AtomicOp) -> Option<Self> {
                match op {
                    AtomicOp::Add => Some(self + o),
                    AtomicOp::Xchg => Some(o),
                    AtomicOp::Max
                    | AtomicOp::Min
                    | AtomicOp::And
                    | AtomicOp::Or
                    | AtomicOp::Xor => None,
                }
            }
            fn of_f64(x: f64) -> Self {
                Self::new(x as $t, 0.0)
            }
        }
    )*};
}
complex_elem!(f32, f64);

/// Conversions to and from f64 under one name for all float formats.
trait F64Conv {
    fn from_f64_(x: f64) -> Self;
    fn to_f64_(self) -> f64;
}
impl F64Conv for f32 {
    fn from_f64_(x: f64) -> Self {
        x as f32
    }
    fn to_f64_(self) -> f64 {
        self as f64
    }
}
impl F64Conv for f64 {
    fn from_f64_(x: f64) -> Self {
        x
    }
    fn to_f64_(self) -> f64 {
        self
    }
}
impl F64Conv for f16 {
    fn from_f64_(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64_(self) -> f64 {
        f16::to_f64(self)
    }
}
impl F64Conv for bf16 {
    fn from_f64_(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64_(self) -> f64 {
        bf16::to_f64(self)
    }
}

float_elem!(f32, f32, |x| x, |x| x);
float_elem!(f64, f64, |x| x, |x| x);
float_elem!(f16, f32, f16::to_f32, f16::from_f32);
float_elem!(bf16, f32, bf16::to_f32, bf16::from_f32);

/// A typed key (`key<fry>`): moved, never computed with. The arithmetic
/// arms keep the left operand (the shape rules reject keys there).
impl Elem for [u32; 2] {
    fn add(self, _: Self) -> Self {
        self
    }
    fn mul(self, _: Self) -> Self {
        self
    }
    fn max(self, o: Self) -> Self {
        Ord::max(self, o)
    }
    fn min(self, o: Self) -> Self {
        Ord::min(self, o)
    }
    fn sort_cmp(self, o: Self) -> Ordering {
        self.cmp(&o)
    }
    fn total_cmp(self, o: Self) -> Ordering {
        self.cmp(&o)
    }
    fn zero() -> Self {
        [0, 0]
    }
    fn uninit() -> Self {
        [u32::MAX, u32::MAX]
    }
    fn combine(self, o: Self, op: AtomicOp) -> Option<Self> {
        match op {
            AtomicOp::Xchg => Some(o),
            AtomicOp::Add
            | AtomicOp::Max
            | AtomicOp::Min
            | AtomicOp::And
            | AtomicOp::Or
            | AtomicOp::Xor => None,
        }
    }
    fn of_f64(x: f64) -> Self {
        [0, x as u32]
    }
}

/// Maps the vector inside any storage variant to a vector of the same
/// element type: `map_same!(storage, v => expr)`, `expr` generic over `Elem`.
macro_rules! map_same {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            jaxon_ir::Storage::Bool($v) => jaxon_ir::Storage::Bool($body),
            jaxon_ir::Storage::I8($v) => jaxon_ir::Storage::I8($body),
            jaxon_ir::Storage::I16($v) => jaxon_ir::Storage::I16($body),
            jaxon_ir::Storage::I32($v) => jaxon_ir::Storage::I32($body),
            jaxon_ir::Storage::I64($v) => jaxon_ir::Storage::I64($body),
            jaxon_ir::Storage::U8($v) => jaxon_ir::Storage::U8($body),
            jaxon_ir::Storage::U16($v) => jaxon_ir::Storage::U16($body),
            jaxon_ir::Storage::U32($v) => jaxon_ir::Storage::U32($body),
            jaxon_ir::Storage::U64($v) => jaxon_ir::Storage::U64($body),
            jaxon_ir::Storage::F16($v) => jaxon_ir::Storage::F16($body),
            jaxon_ir::Storage::BF16($v) => jaxon_ir::Storage::BF16($body),
            jaxon_ir::Storage::F32($v) => jaxon_ir::Storage::F32($body),
            jaxon_ir::Storage::F64($v) => jaxon_ir::Storage::F64($body),
            jaxon_ir::Storage::C64($v) => jaxon_ir::Storage::C64($body),
            jaxon_ir::Storage::C128($v) => jaxon_ir::Storage::C128($body),
            jaxon_ir::Storage::Key($v) => jaxon_ir::Storage::Key($body),
        }
    };
}
pub(crate) use map_same;

/// Like [`map_same`] for two storages of one variant (`$err` otherwise):
/// `map_same2!(a, b, (x, y) => expr, err)`.
macro_rules! map_same2 {
    ($a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr, $err:expr) => {
        match ($a, $b) {
            (jaxon_ir::Storage::Bool($x), jaxon_ir::Storage::Bool($y)) => {
                jaxon_ir::Storage::Bool($body)
            }
            (jaxon_ir::Storage::I8($x), jaxon_ir::Storage::I8($y)) => jaxon_ir::Storage::I8($body),
            (jaxon_ir::Storage::I16($x), jaxon_ir::Storage::I16($y)) => {
                jaxon_ir::Storage::I16($body)
            }
            (jaxon_ir::Storage::I32($x), jaxon_ir::Storage::I32($y)) => {
                jaxon_ir::Storage::I32($body)
            }
            (jaxon_ir::Storage::I64($x), jaxon_ir::Storage::I64($y)) => {
                jaxon_ir::Storage::I64($body)
            }
            (jaxon_ir::Storage::U8($x), jaxon_ir::Storage::U8($y)) => jaxon_ir::Storage::U8($body),
            (jaxon_ir::Storage::U16($x), jaxon_ir::Storage::U16($y)) => {
                jaxon_ir::Storage::U16($body)
            }
            (jaxon_ir::Storage::U32($x), jaxon_ir::Storage::U32($y)) => {
                jaxon_ir::Storage::U32($body)
            }
            (jaxon_ir::Storage::U64($x), jaxon_ir::Storage::U64($y)) => {
                jaxon_ir::Storage::U64($body)
            }
            (jaxon_ir::Storage::F16($x), jaxon_ir::Storage::F16($y)) => {
                jaxon_ir::Storage::F16($body)
            }
            (jaxon_ir::Storage::BF16($x), jaxon_ir::Storage::BF16($y)) => {
                jaxon_ir::Storage::BF16($body)
            }
            (jaxon_ir::Storage::F32($x), jaxon_ir::Storage::F32($y)) => {
                jaxon_ir::Storage::F32($body)
            }
            (jaxon_ir::Storage::F64($x), jaxon_ir::Storage::F64($y)) => {
                jaxon_ir::Storage::F64($body)
            }
            (jaxon_ir::Storage::C64($x), jaxon_ir::Storage::C64($y)) => {
                jaxon_ir::Storage::C64($body)
            }
            (jaxon_ir::Storage::C128($x), jaxon_ir::Storage::C128($y)) => {
                jaxon_ir::Storage::C128($body)
            }
            (jaxon_ir::Storage::Key($x), jaxon_ir::Storage::Key($y)) => {
                jaxon_ir::Storage::Key($body)
            }
            _ => return Err($err),
        }
    };
}
pub(crate) use map_same2;
