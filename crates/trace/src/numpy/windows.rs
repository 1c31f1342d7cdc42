//! `jnp`'s window functions — `hanning`, `hamming`, `blackman`,
//! `bartlett`, `kaiser` — in `f32` (JAX's default float), computed with
//! the same operations as JAX so the values agree to rounding.

use super::wrap::lit;
use super::*;

/// `[1-m, 3-m, ..., m-1]` as `f32` (NumPy's symmetric window grid).
fn centred(m: usize) -> Result<Array> {
    let n = lax::iota(DType::F32, m)?;
    lax::sub(
        &lax::mul(&n, &lit(2.0, DType::F32)?)?,
        &lit(m as f64 - 1.0, DType::F32)?,
    )
}

/// `cos(scale * pi * n / (m - 1))` for the grid `n`.
fn cos_term(n: &Array, scale: f64, m: usize) -> Result<Array> {
    let arg = multiply(&lit(scale * std::f64::consts::PI, DType::F32)?, n)?;
    cos(&divide(&arg, &lit(m as f64 - 1.0, DType::F32)?)?)
}

/// `m <= 1`: the window is all ones.
fn trivial(m: usize) -> Option<Result<Array>> {
    (m <= 1).then(|| ones(&[m], DType::F32))
}

/// `jnp.hanning(m)`: `0.5 + 0.5 cos(pi n / (m-1))`.
pub fn hanning(m: usize) -> Result<Array> {
    if let Some(w) = trivial(m) {
        return w;
    }
    let c = cos_term(&centred(m)?, 1.0, m)?;
    add(
        &lit(0.5, DType::F32)?,
        &multiply(&lit(0.5, DType::F32)?, &c)?,
    )
}

/// `jnp.hamming(m)`: `0.54 + 0.46 cos(pi n / (m-1))`.
pub fn hamming(m: usize) -> Result<Array> {
    if let Some(w) = trivial(m) {
        return w;
    }
    let c = cos_term(&centred(m)?, 1.0, m)?;
    add(
        &lit(0.54, DType::F32)?,
        &multiply(&lit(0.46, DType::F32)?, &c)?,
    )
}

/// `jnp.blackman(m)`: `0.42 - 0.5 cos(2 pi n/(m-1)) + 0.08 cos(4 pi n/(m-1))`
/// for `n = 0..m`.
pub fn blackman(m: usize) -> Result<Array> {
    if let Some(w) = trivial(m) {
        return w;
    }
    let n = lax::iota(DType::F32, m)?;
    let a = multiply(&lit(0.5, DType::F32)?, &cos_term(&n, 2.0, m)?)?;
    let b = multiply(&lit(0.08, DType::F32)?, &cos_term(&n, 4.0, m)?)?;
    add(&subtract(&lit(0.42, DType::F32)?, &a)?, &b)
}

/// `jnp.bartlett(m)`: the triangular window `1 - |n| / (m-1)`.
pub fn bartlett(m: usize) -> Result<Array> {
    if let Some(w) = trivial(m) {
        return w;
    }
    let n = centred(m)?;
    let r = divide(&n, &lit(m as f64 - 1.0, DType::F32)?)?;
    let one = lit(1.0, DType::F32)?;
    let up = add(&one, &r)?;
    let down = subtract(&one, &r)?;
    where_(&less_equal(&n, &lit(0.0, DType::F32)?)?, &up, &down)
}

/// `jnp.kaiser(m, beta)`: `I0(beta sqrt(1 - ((n - a)/a)^2)) / I0(beta)`
/// with `a = (m-1)/2`, `n = 0..m`.
pub fn kaiser(m: usize, beta: f64) -> Result<Array> {
    if let Some(w) = trivial(m) {
        return w;
    }
    let n = lax::iota(DType::F32, m)?;
    let alpha = lit(0.5 * (m as f64 - 1.0), DType::F32)?;
    let r = divide(&subtract(&n, &alpha)?, &alpha)?;
    let inside = subtract(&lit(1.0, DType::F32)?, &square(&r)?)?;
    let b = lit(beta, DType::F32)?;
    let num = crate::scipy::special::i0(&multiply(&b, &sqrt(&inside)?)?)?;
    divide(&num, &crate::scipy::special::i0(&b)?)
}
