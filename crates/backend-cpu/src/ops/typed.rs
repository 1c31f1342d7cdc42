//! Typed views of `Storage` for generic copy routines: each
//! element type knows its `Storage` variant, so a routine is written once
//! over `T` and dispatched on the runtime dtype by [`with_type!`].

use crate::error::run_error;
use half::{bf16, f16};
use jaxon_ir::{DType, IrError, Storage};

/// An element type of `Storage`.
pub(crate) trait Typed: Copy + Send + Sync + 'static {
    /// The elements of `s` when it holds this type.
    fn slice(s: &Storage) -> Option<&[Self]>;
    /// The elements of `s`, mutably, when it holds this type.
    fn slice_mut(s: &mut Storage) -> Option<&mut [Self]>;
    /// Wraps owned elements.
    fn wrap(v: Vec<Self>) -> Storage;
    /// The value `x` (a small non-negative integer, as `iota` makes), cast
    /// as the interpreter casts it.
    fn of_index(x: usize) -> Self;
}

macro_rules! typed {
    ($($t:ty => $v:ident, $of:expr;)*) => {$(
        impl Typed for $t {
            fn slice(s: &Storage) -> Option<&[Self]> {
                match s {
                    Storage::$v(x) => Some(x),
                    _ => None,
                }
            }
            fn slice_mut(s: &mut Storage) -> Option<&mut [Self]> {
                match s {
                    Storage::$v(x) => Some(x),
                    _ => None,
                }
            }
            fn wrap(v: Vec<Self>) -> Storage {
                Storage::$v(v)
            }
            fn of_index(x: usize) -> Self {
                let f: fn(usize) -> $t = $of;
                f(x)
            }
        }
    )*};
}

typed! {
    bool => Bool, |x| x != 0;
    i8 => I8, |x| x as i8;
    i16 => I16, |x| x as i16;
    i32 => I32, |x| x as i32;
    i64 => I64, |x| x as i64;
    u8 => U8, |x| x as u8;
    u16 => U16, |x| x as u16;
    u32 => U32, |x| x as u32;
    u64 => U64, |x| x as u64;
    f16 => F16, |x| f16::from_f64(x as f64);
    bf16 => BF16, |x| bf16::from_f64(x as f64);
    f32 => F32, |x| x as f32;
    f64 => F64, |x| x as f64;
    jaxon_ir::num_complex::Complex32 => C64, |x| jaxon_ir::num_complex::Complex32::new(x as f32, 0.0);
    jaxon_ir::num_complex::Complex64 => C128, |x| jaxon_ir::num_complex::Complex64::new(x as f64, 0.0);
    [u32; 2] => Key, |x| [0, x as u32];
}

/// Runs `$body` with `$t` the element type of dtype `$dt`.
macro_rules! with_type {
    ($dt:expr, $t:ident => $body:expr) => {
        match $dt {
            jaxon_ir::DType::Bool => {
                type $t = bool;
                $body
            }
            jaxon_ir::DType::I8 => {
                type $t = i8;
                $body
            }
            jaxon_ir::DType::I16 => {
                type $t = i16;
                $body
            }
            jaxon_ir::DType::I32 => {
                type $t = i32;
                $body
            }
            jaxon_ir::DType::I64 => {
                type $t = i64;
                $body
            }
            jaxon_ir::DType::U8 => {
                type $t = u8;
                $body
            }
            jaxon_ir::DType::U16 => {
                type $t = u16;
                $body
            }
            jaxon_ir::DType::U32 => {
                type $t = u32;
                $body
            }
            jaxon_ir::DType::U64 => {
                type $t = u64;
                $body
            }
            jaxon_ir::DType::F16 => {
                type $t = half::f16;
                $body
            }
            jaxon_ir::DType::BF16 => {
                type $t = half::bf16;
                $body
            }
            jaxon_ir::DType::F32 => {
                type $t = f32;
                $body
            }
            jaxon_ir::DType::F64 => {
                type $t = f64;
                $body
            }
            jaxon_ir::DType::C64 => {
                type $t = jaxon_ir::num_complex::Complex32;
                $body
            }
            jaxon_ir::DType::C128 => {
                type $t = jaxon_ir::num_complex::Complex64;
                $body
            }
            jaxon_ir::DType::KeyFry => {
                type $t = [u32; 2];
                $body
            }
        }
    };
}
pub(crate) use with_type;

/// The elements of `s` as `T` (`Err` names `what` and both dtypes).
pub(crate) fn elems<'s, T: Typed>(
    s: &'s Storage,
    want: DType,
    what: &str,
) -> Result<&'s [T], IrError> {
    T::slice(s).ok_or_else(|| run_error(format!("{what}: expected {want}, got {}", s.dtype())))
}
