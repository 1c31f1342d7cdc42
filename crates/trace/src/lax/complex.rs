//! `lax`'s complex-number and FFT primitives: `complex`, `real`, `imag`,
//! `conj` and `fft`.

use crate::array::Array;
use crate::core::bind1;
use crate::error::Result;
use jaxon_ir::primitive::{ConjParams, Elementwise, FftParams, FftType};
use jaxon_ir::Primitive;

/// `lax.complex(x, y)`: `x + i y` from two `f32` (giving `c64`) or two
/// `f64` (giving `c128`) arrays.
pub fn complex(x: &Array, y: &Array) -> Result<Array> {
    bind1(
        &Primitive::Elementwise(Elementwise::Complex),
        &[x.clone(), y.clone()],
    )
}

/// `lax.real(x)`: the real part of a complex array.
pub fn real(x: &Array) -> Result<Array> {
    bind1(
        &Primitive::Elementwise(Elementwise::Real),
        std::slice::from_ref(x),
    )
}

/// `lax.imag(x)`: the imaginary part of a complex array.
pub fn imag(x: &Array) -> Result<Array> {
    bind1(
        &Primitive::Elementwise(Elementwise::Imag),
        std::slice::from_ref(x),
    )
}

/// `lax.conj(x)`: the complex conjugate; a float operand gives the complex
/// array of its precision.
pub fn conj(x: &Array) -> Result<Array> {
    let p = Primitive::from(ConjParams {
        input_dtype: x.dtype(),
    });
    bind1(&p, std::slice::from_ref(x))
}

/// `lax.fft(x, fft_type, fft_lengths)`: a discrete Fourier transform over
/// the trailing `fft_lengths.len()` axes (1 to 3).
pub fn fft(x: &Array, fft_type: FftType, fft_lengths: &[usize]) -> Result<Array> {
    let p = Primitive::from(FftParams {
        fft_type,
        fft_lengths: fft_lengths.to_vec(),
    });
    bind1(&p, std::slice::from_ref(x))
}
