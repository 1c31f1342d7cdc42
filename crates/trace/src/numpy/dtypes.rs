//! Dtype questions a JAX program asks (`jnp.issubdtype`, `promote_types`,
//! `iscomplexobj`, `isrealobj`), and `asarray`.
//!
//! Invariant: the category tree is NumPy's as JAX extends it: `Generic`
//! holds every dtype (typed PRNG keys included); `Number` every dtype but
//! `bool` and keys; bf16 and f16 are `Floating`; a key is only `Generic`
//! and `PrngKey`.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::promotion;
use jaxon_ir::DType;

/// A node of NumPy's dtype tree (`jnp.generic`, `jnp.floating`, ...), or
/// one exact dtype: the second argument of [`issubdtype`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DTypeCategory {
    /// `jnp.generic`: every dtype.
    Generic,
    /// `jnp.number`: integers, floats and complex numbers.
    Number,
    /// `jnp.inexact`: floats and complex numbers.
    Inexact,
    /// `jnp.floating`: the real floating-point dtypes, bf16 and f16 too.
    Floating,
    /// `jnp.complexfloating`.
    ComplexFloating,
    /// `jnp.integer`: signed and unsigned integers (not `bool`).
    Integer,
    /// `jnp.signedinteger`.
    SignedInteger,
    /// `jnp.unsignedinteger`.
    UnsignedInteger,
    /// `jnp.bool_`.
    Bool,
    /// `jax.dtypes.prng_key`: typed PRNG keys.
    PrngKey,
    /// Exactly this dtype.
    Exactly(DType),
}

impl From<DType> for DTypeCategory {
    fn from(d: DType) -> Self {
        DTypeCategory::Exactly(d)
    }
}

/// `jnp.issubdtype(dtype, category)`: whether `dtype` lies under
/// `category` in NumPy's dtype tree (a dtype is a subtype of itself only).
///
/// ```
/// use jaxon_trace::numpy::{issubdtype, DTypeCategory};
/// use jaxon_ir::DType;
///
/// assert!(issubdtype(DType::BF16, DTypeCategory::Floating));
/// assert!(!issubdtype(DType::Bool, DTypeCategory::Number));
/// assert!(!issubdtype(DType::F32, DType::F64));
/// ```
pub fn issubdtype(dtype: DType, category: impl Into<DTypeCategory>) -> bool {
    use DTypeCategory as C;
    match category.into() {
        C::Generic => true,
        C::Number => !dtype.is_bool() && !dtype.is_key(),
        C::Inexact => dtype.is_inexact(),
        C::Floating => dtype.is_float(),
        C::ComplexFloating => dtype.is_complex(),
        C::Integer => dtype.is_int(),
        C::SignedInteger => dtype.is_signed_int(),
        C::UnsignedInteger => dtype.is_unsigned_int(),
        C::Bool => dtype.is_bool(),
        C::PrngKey => dtype.is_key(),
        C::Exactly(d) => d == dtype,
    }
}

/// `jnp.iscomplexobj(x)`: whether `x` has a complex dtype.
pub fn iscomplexobj(x: &Array) -> bool {
    x.dtype().is_complex()
}

/// `jnp.isrealobj(x)`: whether `x` does not have a complex dtype.
pub fn isrealobj(x: &Array) -> bool {
    !iscomplexobj(x)
}

/// `jnp.promote_types(a, b)`: the least dtype both promote to in JAX's
/// lattice (`promote_types(I64, F16) == F16`, `promote_types(BF16, F16)
/// == F32`). Typed PRNG keys promote only with themselves.
pub fn promote_types(a: DType, b: DType) -> Result<DType> {
    if a.is_key() || b.is_key() {
        return if a == b {
            Ok(a)
        } else {
            Err(Error::InvalidArgument(format!(
                "promote_types: {a} and {b} have no common dtype (a PRNG key promotes only with itself)"
            )))
        };
    }
    Ok(promotion::promote_types(a, b))
}

/// `jnp.asarray(x, dtype)`: `x` itself when `dtype` is `None` or already
/// `x`'s dtype (no copy; JAX arrays are immutable), else `x` converted to
/// `dtype`. Host data becomes an array with [`array`](super::array).
pub fn asarray(x: &Array, dtype: Option<DType>) -> Result<Array> {
    match dtype {
        Some(d) if d != x.dtype() => lax::convert_element_type(x, d, false),
        _ => Ok(x.clone()),
    }
}

/// `jnp.bitwise_count(x)`: the number of set bits of each element of an
/// integer or bool array, as `u8` (`population_count`; the absolute
/// value's bits for signed integers, as NumPy counts them).
pub fn bitwise_count(x: &Array) -> Result<Array> {
    let d = x.dtype();
    if !d.is_int() && !d.is_bool() {
        return Err(Error::InvalidArgument(format!(
            "bitwise_count: only integer and bool arrays have bits to count, got {d}"
        )));
    }
    // As JAX: bool counts as i32, signed integers by their absolute value.
    let x = if d.is_bool() {
        lax::convert_element_type(x, DType::I32, false)?
    } else {
        x.clone()
    };
    let bits = if x.dtype().is_signed_int() {
        lax::population_count(&lax::abs(&x)?)?
    } else {
        lax::population_count(&x)?
    };
    lax::convert_element_type(&bits, DType::U8, false)
}
