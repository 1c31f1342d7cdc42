//! Storage-level helpers of the interpreter: literals as arrays, typed
//! element operations, flat gathers and scatters, axis-0 slicing and stacking.

use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::literal::{Literal, Scalar};
use half::{bf16, f16};

/// Rebuilds a `Storage` of the same variant from an expression over its vector.
macro_rules! map_storage {
    ($storage:expr, $v:ident => $body:expr) => {
        match $storage {
            $crate::array::Storage::Bool($v) => $crate::array::Storage::Bool($body),
            $crate::array::Storage::I8($v) => $crate::array::Storage::I8($body),
            $crate::array::Storage::I16($v) => $crate::array::Storage::I16($body),
            $crate::array::Storage::I32($v) => $crate::array::Storage::I32($body),
            $crate::array::Storage::I64($v) => $crate::array::Storage::I64($body),
            $crate::array::Storage::U8($v) => $crate::array::Storage::U8($body),
            $crate::array::Storage::U16($v) => $crate::array::Storage::U16($body),
            $crate::array::Storage::U32($v) => $crate::array::Storage::U32($body),
            $crate::array::Storage::U64($v) => $crate::array::Storage::U64($body),
            $crate::array::Storage::F16($v) => $crate::array::Storage::F16($body),
            $crate::array::Storage::BF16($v) => $crate::array::Storage::BF16($body),
            $crate::array::Storage::F32($v) => $crate::array::Storage::F32($body),
            $crate::array::Storage::F64($v) => $crate::array::Storage::F64($body),
            $crate::array::Storage::C64($v) => $crate::array::Storage::C64($body),
            $crate::array::Storage::C128($v) => $crate::array::Storage::C128($body),
            $crate::array::Storage::Key($v) => $crate::array::Storage::Key($body),
        }
    };
}

/// Matches two storages of the same variant; `$err` when the dtypes differ.
macro_rules! same_storage {
    ($a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr, else $err:expr) => {
        match ($a, $b) {
            ($crate::array::Storage::Bool($x), $crate::array::Storage::Bool($y)) => $body,
            ($crate::array::Storage::I8($x), $crate::array::Storage::I8($y)) => $body,
            ($crate::array::Storage::I16($x), $crate::array::Storage::I16($y)) => $body,
            ($crate::array::Storage::I32($x), $crate::array::Storage::I32($y)) => $body,
            ($crate::array::Storage::I64($x), $crate::array::Storage::I64($y)) => $body,
            ($crate::array::Storage::U8($x), $crate::array::Storage::U8($y)) => $body,
            ($crate::array::Storage::U16($x), $crate::array::Storage::U16($y)) => $body,
            ($crate::array::Storage::U32($x), $crate::array::Storage::U32($y)) => $body,
            ($crate::array::Storage::U64($x), $crate::array::Storage::U64($y)) => $body,
            ($crate::array::Storage::F16($x), $crate::array::Storage::F16($y)) => $body,
            ($crate::array::Storage::BF16($x), $crate::array::Storage::BF16($y)) => $body,
            ($crate::array::Storage::F32($x), $crate::array::Storage::F32($y)) => $body,
            ($crate::array::Storage::F64($x), $crate::array::Storage::F64($y)) => $body,
            ($crate::array::Storage::C64($x), $crate::array::Storage::C64($y)) => $body,
            ($crate::array::Storage::C128($x), $crate::array::Storage::C128($y)) => $body,
            ($crate::array::Storage::Key($x), $crate::array::Storage::Key($y)) => $body,
            _ => $err,
        }
    };
}

pub(crate) use same_storage;

/// A bitwise/arithmetic read-modify-write combiner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Combine {
    Add,
    Max,
    Min,
    And,
    Or,
    Xor,
    Xchg,
}

/// Element types the interpreter reads and writes generically.
pub(crate) trait Elem: Copy + PartialEq {
    /// The value JAX's interpret mode uses for uninitialised memory.
    fn uninit() -> Self;
    /// Zero (false).
    fn zero() -> Self;
    /// `self op other`, or `None` when `op` does not apply to this type.
    fn combine(self, other: Self, op: Combine) -> Option<Self>;
    /// Wraps a vector in its `Storage` variant.
    fn wrap(v: Vec<Self>) -> Storage;
    /// The elements of a storage of this type, if it is one.
    fn view(s: &Storage) -> Option<&[Self]>;
}

/// Implements `Elem::wrap` / `Elem::view` for one storage variant.
macro_rules! wrap_view {
    ($variant:ident) => {
        fn wrap(v: Vec<Self>) -> Storage {
            Storage::$variant(v)
        }
        fn view(s: &Storage) -> Option<&[Self]> {
            match s {
                Storage::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}

macro_rules! int_elem {
    ($($t:ty => $variant:ident),*) => {$(
        impl Elem for $t {
            wrap_view!($variant);
            fn uninit() -> Self { <$t>::MIN }
            fn zero() -> Self { 0 }
            fn combine(self, o: Self, op: Combine) -> Option<Self> {
                Some(match op {
                    Combine::Add => self.wrapping_add(o),
                    Combine::Max => if o > self { o } else { self },
                    Combine::Min => if o < self { o } else { self },
                    Combine::And => self & o,
                    Combine::Or => self | o,
                    Combine::Xor => self ^ o,
                    Combine::Xchg => o,
                })
            }
        }
    )*};
}
int_elem!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

/// NaN-propagating max/min, like XLA's.
fn fmax<T: PartialOrd + Copy>(a: T, b: T, a_nan: bool, b_nan: bool) -> T {
    if a_nan {
        a
    } else if b_nan || b > a {
        b
    } else {
        a
    }
}

fn fmin<T: PartialOrd + Copy>(a: T, b: T, a_nan: bool, b_nan: bool) -> T {
    if a_nan {
        a
    } else if b_nan || b < a {
        b
    } else {
        a
    }
}

macro_rules! float_elem {
    ($($t:ty => $variant:ident, $nan:expr, $zero:expr),*) => {$(
        impl Elem for $t {
            wrap_view!($variant);
            fn uninit() -> Self { $nan }
            fn zero() -> Self { $zero }
            fn combine(self, o: Self, op: Combine) -> Option<Self> {
                match op {
                    Combine::Add => Some(self + o),
                    Combine::Max => Some(fmax(self, o, self.is_nan(), o.is_nan())),
                    Combine::Min => Some(fmin(self, o, self.is_nan(), o.is_nan())),
                    Combine::Xchg => Some(o),
                    Combine::And | Combine::Or | Combine::Xor => None,
                }
            }
        }
    )*};
}
float_elem!(
    f32 => F32, f32::NAN, 0.0,
    f64 => F64, f64::NAN, 0.0,
    f16 => F16, f16::NAN, f16::ZERO,
    bf16 => BF16, bf16::NAN, bf16::ZERO
);

macro_rules! complex_elem {
    ($($t:ty => $variant:ident, $nan:expr),*) => {$(
        impl Elem for num_complex::Complex<$t> {
            wrap_view!($variant);
            fn uninit() -> Self { num_complex::Complex::new($nan, $nan) }
            fn zero() -> Self { num_complex::Complex::new(0.0, 0.0) }
            fn combine(self, o: Self, op: Combine) -> Option<Self> {
                match op {
                    Combine::Add => Some(self + o),
                    Combine::Xchg => Some(o),
                    Combine::Max | Combine::Min | Combine::And | Combine::Or | Combine::Xor => None,
                }
            }
        }
    )*};
}
complex_elem!(f32 => C64, f32::NAN, f64 => C128, f64::NAN);

impl Elem for bool {
    wrap_view!(Bool);
    fn uninit() -> Self {
        false
    }
    fn zero() -> Self {
        false
    }
    fn combine(self, o: Self, op: Combine) -> Option<Self> {
        Some(match op {
            Combine::Add | Combine::Or | Combine::Max => self | o,
            Combine::And | Combine::Min => self & o,
            Combine::Xor => self ^ o,
            Combine::Xchg => o,
        })
    }
}

/// A typed key element: only exchanges apply.
impl Elem for [u32; 2] {
    wrap_view!(Key);
    fn uninit() -> Self {
        [u32::MAX, u32::MAX]
    }
    fn zero() -> Self {
        [0, 0]
    }
    fn combine(self, o: Self, op: Combine) -> Option<Self> {
        match op {
            Combine::Xchg => Some(o),
            Combine::Add
            | Combine::Max
            | Combine::Min
            | Combine::And
            | Combine::Or
            | Combine::Xor => None,
        }
    }
}

/// The scalar array holding a literal's value, exactly (64-bit integers
/// included).
pub fn literal_array(lit: &Literal) -> HostArray {
    let d = lit.dtype;
    let data = match lit.value {
        Scalar::Bool(b) => Storage::from_f64(d, &[b as u8 as f64]),
        Scalar::Int(i) => int_storage(d, i as i128),
        Scalar::UInt(u) => int_storage(d, u as i128),
        Scalar::Float(x) => Storage::from_f64(d, &[x]),
        Scalar::Complex(re, im) => Storage::from_c128(d, &[num_complex::Complex64::new(re, im)]),
    };
    // A scalar always holds exactly one element.
    HostArray::new(Vec::new(), data).unwrap_or_else(|_| HostArray::zeros(d, &[]))
}

/// One integer converted to `dtype` (wrapping for integers).
fn int_storage(dtype: DType, v: i128) -> Storage {
    match dtype {
        DType::Bool => Storage::Bool(vec![v != 0]),
        DType::I8 => Storage::I8(vec![v as i8]),
        DType::I16 => Storage::I16(vec![v as i16]),
        DType::I32 => Storage::I32(vec![v as i32]),
        DType::I64 => Storage::I64(vec![v as i64]),
        DType::U8 => Storage::U8(vec![v as u8]),
        DType::U16 => Storage::U16(vec![v as u16]),
        DType::U32 => Storage::U32(vec![v as u32]),
        DType::U64 => Storage::U64(vec![v as u64]),
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 => {
            Storage::from_f64(dtype, &[v as f64])
        }
        DType::KeyFry => Storage::Key(vec![[0, v as u32]]),
    }
}

/// `n` copies of the uninitialised value of `dtype` (NaN, integer minimum,
/// false), as JAX's Pallas interpret mode fills padding.
pub(crate) fn uninit_storage(dtype: DType, n: usize) -> Storage {
    map_storage!(Storage::zeros(dtype, 0), v => {
        let _ = v;
        vec![Elem::uninit(); n]
    })
}

/// Row-major strides of a shape.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Advances a row-major multi-index; returns false after the last one.
pub(crate) fn next_index(idx: &mut [usize], shape: &[usize]) -> bool {
    for d in (0..shape.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

pub(crate) use crate::shape::broadcast_sizes as broadcast_shapes;

/// The flat position in an array of shape `src` (broadcast to the
/// multi-index `idx` of a larger shape) of the element at `idx`.
pub(crate) fn broadcast_flat(src: &[usize], idx: &[usize]) -> usize {
    let off = idx.len() - src.len();
    let mut flat = 0;
    for (d, &n) in src.iter().enumerate() {
        let i = if n == 1 { 0 } else { idx[off + d] };
        flat = flat * n + i;
    }
    flat
}

/// Broadcasts an array to `shape` (NumPy rules), materialising it.
pub(crate) fn broadcast_to(
    a: &HostArray,
    shape: &[usize],
    what: &str,
) -> Result<HostArray, IrError> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    if broadcast_shapes(a.shape(), shape).as_deref() != Some(shape) {
        return Err(IrError::Eval(format!(
            "{what}: cannot broadcast shape {:?} to {:?}",
            a.shape(),
            shape
        )));
    }
    let n: usize = shape.iter().product();
    let mut positions = Vec::with_capacity(n);
    if n > 0 {
        let mut idx = vec![0; shape.len()];
        loop {
            positions.push(broadcast_flat(a.shape(), &idx));
            if !next_index(&mut idx, shape) {
                break;
            }
        }
    }
    HostArray::new(shape.to_vec(), gather(a.data(), &positions))
}

/// Elements of `data` at `positions` (which must be in bounds).
pub(crate) fn gather(data: &Storage, positions: &[usize]) -> Storage {
    map_storage!(data, v => positions.iter().map(|&p| v[p]).collect())
}

/// Sub-array `i` along axis 0.
pub fn index_axis0(a: &HostArray, i: usize) -> Result<HostArray, IrError> {
    let Some((&n, rest)) = a.shape().split_first() else {
        return Err(IrError::Eval("cannot slice a scalar along axis 0".into()));
    };
    if i >= n {
        return Err(IrError::Eval(format!(
            "index {i} out of bounds for axis 0 of size {n}"
        )));
    }
    let size: usize = rest.iter().product();
    let data = map_storage!(a.data(), v => v[i * size..(i + 1) * size].to_vec());
    HostArray::new(rest.to_vec(), data)
}

/// Stacks equally shaped arrays along a new leading axis.
pub fn stack(
    items: &[HostArray],
    dtype: DType,
    item_shape: &[usize],
) -> Result<HostArray, IrError> {
    let mut shape = vec![items.len()];
    shape.extend_from_slice(item_shape);
    let mut data = Storage::zeros(dtype, 0);
    for it in items {
        if it.shape() != item_shape || it.dtype() != dtype {
            return Err(IrError::Eval(format!(
                "cannot stack {}{:?} with {}{:?}",
                it.dtype(),
                it.shape(),
                dtype,
                item_shape
            )));
        }
        same_storage!(&mut data, it.data(), (d, s) => d.extend_from_slice(s),
            else return Err(IrError::Eval("stack: dtype mismatch".into())));
    }
    HostArray::new(shape, data)
}

/// A scalar's value as i64 (integer, bool or float truncated).
pub fn scalar_i64(a: &HostArray, what: &str) -> Result<i64, IrError> {
    if a.len() != 1 || !a.shape().is_empty() {
        return Err(IrError::Eval(format!(
            "{what}: expected a scalar, got {}{:?}",
            a.dtype(),
            a.shape()
        )));
    }
    Ok(a.data().get_i64(0))
}
