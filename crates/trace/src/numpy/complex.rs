//! `jnp.real`, `jnp.imag`, `jnp.conj`/`conjugate` and `jnp.angle`: NumPy's
//! complex helpers, which also accept real arrays (`real` is the array,
//! `imag` zeros, `conj` the array itself, `angle` 0 or π).

use crate::array::Array;
use crate::error::Result;
use crate::lax;

/// `jnp.real(x)`: the real part (a real array is returned as is).
pub fn real(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        lax::real(x)
    } else {
        Ok(x.clone())
    }
}

/// `jnp.imag(x)`: the imaginary part (zeros for a real array).
pub fn imag(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        lax::imag(x)
    } else {
        super::zeros_like(x)
    }
}

/// `jnp.conj(x)`: the complex conjugate (a real array is returned as is).
pub fn conj(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        lax::conj(x)
    } else {
        Ok(x.clone())
    }
}

/// `jnp.conjugate(x)`: the same as [`conj`].
pub fn conjugate(x: &Array) -> Result<Array> {
    conj(x)
}

/// `jnp.angle(x)`: `atan2(imag, real)`, in radians.
pub fn angle(x: &Array) -> Result<Array> {
    let re = real(x)?;
    let re = if re.dtype().is_float() {
        re
    } else {
        lax::convert_element_type(&re, jaxon_ir::DType::F32, false)?
    };
    let im = if x.dtype().is_complex() {
        lax::imag(x)?
    } else {
        super::zeros_like(&re)?
    };
    lax::atan2(&im, &re)
}
