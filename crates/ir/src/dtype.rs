//! Element types: the `DType` enum, its printed names, and per-dtype facts.
//!
//! Invariant: `DType::ALL` lists every numeric variant exactly once, in the
//! order of JAX's promotion lattice from narrowest to widest within each kind.
//! The one extended dtype, `KeyFry` (JAX's typed threefry PRNG key, printed
//! `key<fry>`), is not in `ALL`: one key element is two `u32` words
//! (`Storage::Key`), it never promotes, and only the `random_*` primitives and
//! the structural ones (slice, reshape, select_n, ...) accept it.

use std::fmt;

/// The element type of an array, as in JAX (`jnp.dtype`).
///
/// `Display` prints the short name used in types (`f32`, `bf16`, `bool`);
/// [`DType::numpy_name`] gives the NumPy name used in params (`float32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// IEEE half precision, `f16`.
    F16,
    /// bfloat16, `bf16`.
    BF16,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// Complex of two `f32`, `c64` (`complex64`).
    C64,
    /// Complex of two `f64`, `c128` (`complex128`).
    C128,
    /// A typed threefry PRNG key, `key<fry>`: one element is two `u32` words.
    KeyFry,
}

/// The kind of a dtype, which decides how it promotes and how it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DTypeKind {
    /// `bool`.
    Bool,
    /// Signed integers.
    SignedInt,
    /// Unsigned integers.
    UnsignedInt,
    /// Floating point.
    Float,
    /// Complex floating point.
    Complex,
    /// Typed PRNG keys (`key<fry>`).
    Key,
}

impl DType {
    /// Every dtype, each once.
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// The short name printed in types: `f32`, `bf16`, `bool`.
    pub fn short_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
            DType::C128 => "c128",
            DType::KeyFry => "key<fry>",
        }
    }

    /// The NumPy name printed in params: `float32`, `bfloat16`, `int32`.
    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
            DType::KeyFry => "key<fry>",
        }
    }

    /// Parses a short name (`f32`) or a NumPy name (`float32`).
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL
            .into_iter()
            .chain([DType::KeyFry])
            .find(|d| d.short_name() == name || d.numpy_name() == name)
    }

    /// The kind of this dtype.
    pub fn kind(self) -> DTypeKind {
        match self {
            DType::Bool => DTypeKind::Bool,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => DTypeKind::SignedInt,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => DTypeKind::UnsignedInt,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => DTypeKind::Float,
            DType::C64 | DType::C128 => DTypeKind::Complex,
            DType::KeyFry => DTypeKind::Key,
        }
    }

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 | DType::KeyFry => 8,
            DType::C128 => 16,
        }
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        self.size_bytes() as u32 * 8
    }

    /// True for `c64` and `c128`.
    pub fn is_complex(self) -> bool {
        self.kind() == DTypeKind::Complex
    }

    /// True for the floating-point and complex dtypes (JAX's `inexact`).
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The real dtype of a complex one (`c64` -> `f32`); other dtypes are
    /// their own real dtype.
    pub fn real_dtype(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The complex dtype whose parts are `self` (`f32` -> `c64`, `f64` ->
    /// `c128`); complex dtypes map to themselves, other dtypes to `None`.
    pub fn complex_dtype(self) -> Option<DType> {
        match self {
            DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            _ => None,
        }
    }

    /// True for the floating-point dtypes.
    pub fn is_float(self) -> bool {
        self.kind() == DTypeKind::Float
    }

    /// True for signed and unsigned integers (not `bool`).
    pub fn is_int(self) -> bool {
        matches!(self.kind(), DTypeKind::SignedInt | DTypeKind::UnsignedInt)
    }

    /// True for the signed integers.
    pub fn is_signed_int(self) -> bool {
        self.kind() == DTypeKind::SignedInt
    }

    /// True for the unsigned integers.
    pub fn is_unsigned_int(self) -> bool {
        self.kind() == DTypeKind::UnsignedInt
    }

    /// True for typed PRNG key dtypes (`key<fry>`).
    pub fn is_key(self) -> bool {
        self.kind() == DTypeKind::Key
    }

    /// True for `bool`.
    pub fn is_bool(self) -> bool {
        self == DType::Bool
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}
