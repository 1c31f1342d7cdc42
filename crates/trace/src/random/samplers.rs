//! Samplers built on random bits: `uniform`, `normal`, `truncated_normal`,
//! `bernoulli`, `gumbel`, `categorical` and `randint`, each the op sequence of JAX's
//! `jax.random` function so the values agree bit for bit (up to the
//! backend's `erf_inv`/`log` rounding for `normal` and `gumbel`).

use super::threefry::{random_bits, uint_dtype};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::numpy::{self as jnp, broadcast_to};
use crate::{lax, random};
use half::{bf16, f16};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// Bit layout of a float dtype: `(bits, mantissa bits, bits of 1.0)`.
fn float_layout(dtype: DType, op: &str) -> Result<(u32, u32, u64)> {
    Ok(match dtype {
        DType::F32 => (32, 23, 0x3F80_0000),
        DType::F64 => (64, 52, 0x3FF0_0000_0000_0000),
        DType::F16 => (16, 10, 0x3C00),
        DType::BF16 => (16, 7, 0x3F80),
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{op}: dtype must be a float, got {}",
                dtype.short_name()
            )))
        }
    })
}

/// A strong scalar of an unsigned dtype holding `bits`.
fn uint_scalar(dtype: DType, bits: u64) -> Result<Array> {
    Ok(match dtype {
        DType::U8 => Array::scalar(bits as u8),
        DType::U16 => Array::scalar(bits as u16),
        DType::U32 => Array::scalar(bits as u32),
        DType::U64 => Array::scalar(bits),
        d => {
            return Err(Error::InvalidArgument(format!(
                "expected an unsigned dtype, got {}",
                d.short_name()
            )))
        }
    })
}

/// A strong float scalar of `dtype` with the bit pattern `bits`.
fn float_from_bits(dtype: DType, bits: u64) -> Array {
    match dtype {
        DType::F64 => Array::scalar(f64::from_bits(bits)),
        DType::F16 => Array::scalar(f16::from_bits(bits as u16)),
        DType::BF16 => Array::scalar(bf16::from_bits(bits as u16)),
        _ => Array::scalar(f32::from_bits(bits as u32)),
    }
}

/// A strong float scalar of `dtype` nearest to `x`.
fn float_scalar(dtype: DType, x: f64) -> Array {
    match dtype {
        DType::F64 => Array::scalar(x),
        DType::F16 => Array::scalar(f16::from_f64(x)),
        DType::BF16 => Array::scalar(bf16::from_f64(x)),
        _ => Array::scalar(x as f32),
    }
}

/// `jax.random.uniform(key, shape, dtype, minval, maxval)`: floats in
/// `[minval, maxval)`. `minval`/`maxval` broadcast to `shape`.
///
/// The mantissa of `1.0` is filled with the top random bits, giving a
/// float in `[1, 2)`, which is shifted and scaled.
pub fn uniform(
    key: &Array,
    shape: &[usize],
    dtype: DType,
    minval: &Array,
    maxval: &Array,
) -> Result<Array> {
    super::staged(
        "uniform",
        &[key.clone(), minval.clone(), maxval.clone()],
        |a| uniform_inline(&a[0], shape, dtype, &a[1], &a[2]),
    )
}

/// [`uniform`] as the ops it is made of.
fn uniform_inline(
    key: &Array,
    shape: &[usize],
    dtype: DType,
    minval: &Array,
    maxval: &Array,
) -> Result<Array> {
    let (nbits, nmant, one_bits) = float_layout(dtype, "uniform")?;
    let minval = broadcast_to(&lax::convert_element_type(minval, dtype, false)?, shape)?;
    let maxval = broadcast_to(&lax::convert_element_type(maxval, dtype, false)?, shape)?;
    // Fewer than 8 mantissa bits (bfloat16) draw only 8 random bits.
    let rng_bits = if nmant < 8 { 8 } else { nbits };
    let udt = uint_dtype(nbits)?;
    let mut bits = random_bits(key, rng_bits, shape)?;
    if rng_bits != nbits {
        bits = lax::convert_element_type(&bits, udt, false)?;
    }
    let float_bits =
        lax::shift_right_logical(&bits, &uint_scalar(udt, (rng_bits - nmant) as u64)?)?;
    let float_bits = lax::bitwise_or(&float_bits, &uint_scalar(udt, one_bits)?)?;
    let floats = lax::sub(
        &lax::bitcast_convert_type(&float_bits, dtype)?,
        &float_scalar(dtype, 1.0),
    )?;
    let scaled = lax::add(&lax::mul(&floats, &lax::sub(&maxval, &minval)?)?, &minval)?;
    lax::max(&minval, &scaled)
}

/// `jax.random.normal(key, shape, dtype)`: standard normal floats, as
/// `sqrt(2) * erf_inv(u)` for `u` uniform in `(-1, 1)`.
///
/// Bit-exact with JAX only as far as the backend's `erf_inv` agrees with
/// XLA's polynomial (the reference interpreter's is correctly rounded, XLA's
/// is within a few ulp).
pub fn normal(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    super::staged("normal", std::slice::from_ref(key), |a| {
        normal_inline(&a[0], shape, dtype)
    })
}

/// [`normal`] as the ops it is made of.
fn normal_inline(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    let (_, _, one_bits) = float_layout(dtype, "normal")?;
    let sign = 1u64 << (dtype.bits() - 1);
    // The float just above -1: sign-magnitude bits of -1.0, less one.
    let lo = float_from_bits(dtype, (sign | one_bits) - 1);
    let hi = float_scalar(dtype, 1.0);
    let u = uniform(key, shape, dtype, &lo, &hi)?;
    lax::mul(
        &float_scalar(dtype, std::f64::consts::SQRT_2),
        &lax::erf_inv(&u)?,
    )
}

/// `jax.random.truncated_normal(key, lower, upper, shape, dtype)`:
/// standard normal floats conditioned on `(lower, upper)`, as
/// `sqrt(2) * erf_inv(u)` for `u` uniform between `erf(lower / sqrt(2))`
/// and `erf(upper / sqrt(2))`, clipped to the open interval. `lower` and
/// `upper` broadcast to `shape`.
///
/// Bit-exact with JAX as far as the backend's `erf`/`erf_inv` agree with
/// XLA's polynomials (a few ulp).
pub fn truncated_normal(
    key: &Array,
    lower: &Array,
    upper: &Array,
    shape: &[usize],
    dtype: DType,
) -> Result<Array> {
    float_layout(dtype, "truncated_normal")?;
    super::staged(
        "_truncated_normal",
        &[key.clone(), lower.clone(), upper.clone()],
        |a| truncated_normal_inline(&a[0], &a[1], &a[2], shape, dtype),
    )
}

/// [`truncated_normal`] as the ops it is made of.
fn truncated_normal_inline(
    key: &Array,
    lower: &Array,
    upper: &Array,
    shape: &[usize],
    dtype: DType,
) -> Result<Array> {
    let sqrt2 = float_scalar(dtype, std::f64::consts::SQRT_2);
    let lower = lax::convert_element_type(lower, dtype, false)?;
    let upper = lax::convert_element_type(upper, dtype, false)?;
    let a = lax::erf(&lax::div(&lower, &sqrt2)?)?;
    let b = lax::erf(&lax::div(&upper, &sqrt2)?)?;
    let u = uniform(key, shape, dtype, &a, &b)?;
    let out = lax::mul(&sqrt2, &lax::erf_inv(&u)?)?;
    let lo = lax::nextafter(
        &lax::stop_gradient(&lower)?,
        &float_scalar(dtype, f64::INFINITY),
    )?;
    let hi = lax::nextafter(
        &lax::stop_gradient(&upper)?,
        &float_scalar(dtype, f64::NEG_INFINITY),
    )?;
    jnp::clip(&out, Some(&lo), Some(&hi))
}

/// `jax.random.bernoulli(key, p, shape)`: booleans true with probability
/// `p` (a float array). `shape` defaults to `p`'s shape.
pub fn bernoulli(key: &Array, p: &Array, shape: Option<&[usize]>) -> Result<Array> {
    let dtype = p.dtype();
    if !dtype.is_float() {
        return Err(Error::InvalidArgument(format!(
            "bernoulli: probability p must be a float, got {}",
            fmt_aval(p.aval())
        )));
    }
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => p.try_shape()?,
    };
    let u = uniform(key, &shape, dtype, &Array::weak(0.0), &Array::weak(1.0))?;
    let p = broadcast_to(p, &shape)?;
    jnp::less(&u, &p)
}

/// `jax.random.gumbel(key, shape, dtype)` (mode `"low"`, JAX's default):
/// `-log(-log(u))` for `u` uniform in `[tiny, 1)`.
pub fn gumbel(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    let u = uniform(
        key,
        shape,
        dtype,
        &float_scalar(dtype, tiny(dtype)),
        &float_scalar(dtype, 1.0),
    )?;
    lax::neg(&lax::log(&lax::neg(&lax::log(&u)?)?)?)
}

/// The smallest positive normal value of a float dtype (JAX's
/// `finfo(dtype).tiny`).
fn tiny(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::MIN_POSITIVE,
        DType::F16 => f16::MIN_POSITIVE.to_f64(),
        _ => f32::MIN_POSITIVE as f64,
    }
}

/// `jax.random.exponential(key, shape, dtype)`: `-log1p(-u)` for `u`
/// uniform in `[0, 1)` (rate 1).
pub fn exponential(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    let u = uniform(
        key,
        shape,
        dtype,
        &float_scalar(dtype, 0.0),
        &float_scalar(dtype, 1.0),
    )?;
    lax::neg(&lax::log1p(&lax::neg(&u)?)?)
}

/// `jax.random.laplace(key, shape, dtype)`: `sign(u) log1p(-|u|)` for `u`
/// uniform in `(-1, 1)` (location 0, scale 1).
pub fn laplace(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    // JAX's lower bound is `-1 + epsneg`: the float just above -1.
    let epsneg = match dtype {
        DType::F64 => f64::EPSILON / 2.0,
        DType::F16 => f16::EPSILON.to_f64() / 2.0,
        DType::BF16 => bf16::EPSILON.to_f64() / 2.0,
        _ => f32::EPSILON as f64 / 2.0,
    };
    let u = uniform(
        key,
        shape,
        dtype,
        &float_scalar(dtype, -1.0 + epsneg),
        &float_scalar(dtype, 1.0),
    )?;
    lax::mul(&lax::sign(&u)?, &lax::log1p(&lax::neg(&lax::abs(&u)?)?)?)
}

/// `jax.random.logistic(key, shape, dtype)`: `log(u) - log1p(-u)` (the
/// logit) for `u` uniform in `[tiny, 1)`.
pub fn logistic(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    let u = uniform(
        key,
        shape,
        dtype,
        &float_scalar(dtype, tiny(dtype)),
        &float_scalar(dtype, 1.0),
    )?;
    lax::sub(&lax::log(&u)?, &lax::log1p(&lax::neg(&u)?)?)
}

/// `jax.random.categorical(key, logits, axis)`: `i32` samples of the
/// categorical distributions whose unnormalised log-probabilities lie
/// along `axis` (the Gumbel-max trick); the result drops `axis`.
pub fn categorical(key: &Array, logits: &Array, axis: isize) -> Result<Array> {
    categorical_shape(key, logits, axis, None)
}

/// `jax.random.categorical(key, logits, axis, shape)`: `shape` must end
/// with the batch shape (`logits`' shape without `axis`); its leading
/// dimensions draw independent samples of every distribution.
pub fn categorical_shape(
    key: &Array,
    logits: &Array,
    axis: isize,
    shape: Option<&[usize]>,
) -> Result<Array> {
    if !logits.dtype().is_float() {
        return Err(Error::InvalidArgument(format!(
            "categorical: logits must be floats, got {}",
            fmt_aval(logits.aval())
        )));
    }
    let lshape = logits.try_shape()?;
    let ax = jnp::normalize_axis(axis, lshape.len(), "categorical")?;
    let mut batch = lshape.clone();
    batch.remove(ax);
    let shape = shape.map_or_else(|| batch.clone(), <[usize]>::to_vec);
    if shape.len() < batch.len() || shape[shape.len() - batch.len()..] != batch[..] {
        return Err(Error::InvalidArgument(format!(
            "categorical: shape {shape:?} must end with the batch shape {batch:?} of {}",
            fmt_aval(logits.aval())
        )));
    }
    let prefix = shape.len() - batch.len();
    let mut gshape = shape.clone();
    gshape.insert(prefix + ax, lshape[ax]);
    let g = gumbel(key, &gshape, logits.dtype())?;
    let l = broadcast_to(logits, &gshape)?;
    jnp::argmax(&lax::add(&g, &l)?, Some((prefix + ax) as isize), false)
}

/// The range of an integer dtype.
fn int_range(dtype: DType) -> Result<(i128, i128)> {
    Ok(match dtype {
        DType::I8 => (i8::MIN as i128, i8::MAX as i128),
        DType::I16 => (i16::MIN as i128, i16::MAX as i128),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128),
        DType::U8 => (0, u8::MAX as i128),
        DType::U16 => (0, u16::MAX as i128),
        DType::U32 => (0, u32::MAX as i128),
        DType::U64 => (0, u64::MAX as i128),
        d => {
            return Err(Error::InvalidArgument(format!(
                "randint: expected an integer dtype, got {}",
                d.short_name()
            )))
        }
    })
}

/// A strong integer scalar of `dtype` holding `v` (in range).
fn int_scalar(dtype: DType, v: i128) -> Result<Array> {
    Ok(match dtype {
        DType::I8 => Array::scalar(v as i8),
        DType::I16 => Array::scalar(v as i16),
        DType::I32 => Array::scalar(v as i32),
        DType::I64 => Array::scalar(v as i64),
        d => uint_scalar(d, v as u64)?,
    })
}

/// Converts integers to `dtype`, clamping to its range instead of wrapping.
fn convert_and_clip(x: &Array, dtype: DType) -> Result<Array> {
    let (lo_t, hi_t) = int_range(dtype)?;
    let (lo_x, hi_x) = int_range(x.dtype())?;
    let lo = int_scalar(x.dtype(), lo_t.max(lo_x))?;
    let hi = int_scalar(x.dtype(), hi_t.min(hi_x))?;
    let clipped = lax::min(&hi, &lax::max(&lo, x)?)?;
    lax::convert_element_type(&clipped, dtype, false)
}

/// Integer bounds as strong arrays of an integer dtype (Rust integer
/// literals come in weak `i32`).
fn int_bound(x: &Array) -> Result<Array> {
    if !x.dtype().is_int() {
        return Err(Error::InvalidArgument(format!(
            "randint: bounds must be integers, got {}",
            fmt_aval(x.aval())
        )));
    }
    lax::convert_element_type(x, x.dtype(), false)
}

/// `jax.random.randint(key, shape, minval, maxval, dtype)`: integers in
/// `[minval, maxval)` (bounds are integer arrays broadcasting to `shape`;
/// `maxval <= minval` gives `minval`). Like JAX it takes two words of
/// random bits per value modulo the span, slightly biased for spans that
/// are not powers of two; dtypes narrower than 32 bits sample in `i32`.
pub fn randint(
    key: &Array,
    shape: &[usize],
    minval: &Array,
    maxval: &Array,
    dtype: DType,
) -> Result<Array> {
    let (lo_t, hi_t) = int_range(dtype)?;
    let (minval, maxval) = (int_bound(minval)?, int_bound(maxval)?);
    if dtype.bits() < 32 {
        let clip32 = |x: &Array, hi: i128| -> Result<Array> {
            let x = lax::convert_element_type(x, DType::I32, false)?;
            let lo = int_scalar(DType::I32, lo_t)?;
            lax::min(&int_scalar(DType::I32, hi)?, &lax::max(&lo, &x)?)
        };
        let (mn, mx) = (clip32(&minval, hi_t)?, clip32(&maxval, hi_t + 1)?);
        let out = randint_wide(key, shape, &mn, &mx, DType::I32)?;
        return lax::convert_element_type(&out, dtype, false);
    }
    randint_wide(key, shape, &minval, &maxval, dtype)
}

/// `randint` for a dtype of 32 or 64 bits.
fn randint_wide(
    key: &Array,
    shape: &[usize],
    minval: &Array,
    maxval: &Array,
    dtype: DType,
) -> Result<Array> {
    let (_, hi_t) = int_range(dtype)?;
    let (_, hi_m) = int_range(maxval.dtype())?;
    // Whether maxval lies above the dtype's range, so the span is one more.
    let out_of_range = lax::gt(maxval, &int_scalar(maxval.dtype(), hi_t.min(hi_m))?)?;
    let out_of_range = broadcast_to(&out_of_range, shape)?;
    let minval = broadcast_to(&convert_and_clip(minval, dtype)?, shape)?;
    let maxval = broadcast_to(&convert_and_clip(maxval, dtype)?, shape)?;
    let nbits = dtype.bits();
    let (k1, k2) = random::split2(key)?;
    let higher = random_bits(&k1, nbits, shape)?;
    let lower = random_bits(&k2, nbits, shape)?;
    let udt = uint_dtype(nbits)?;
    let one = uint_scalar(udt, 1)?;
    let span = lax::convert_element_type(&lax::sub(&maxval, &minval)?, udt, false)?;
    let empty = lax::le(&maxval, &minval)?;
    let span = lax::select_n(&empty, &[span, broadcast_to(&one, shape)?])?;
    let grow = lax::bitwise_and(&out_of_range, &lax::gt(&maxval, &minval)?)?;
    let span = lax::select_n(&grow, &[span.clone(), lax::add(&span, &one)?])?;
    // 2**nbits mod span, via (2**(nbits/2) mod span)**2 mod span (with
    // JAX's wrapping multiply).
    let half = uint_scalar(udt, 1u64 << (nbits / 2))?;
    let mult = lax::rem(&half, &span)?;
    let mult = lax::rem(&lax::mul(&mult, &mult)?, &span)?;
    let offset = lax::add(
        &lax::mul(&lax::rem(&higher, &span)?, &mult)?,
        &lax::rem(&lower, &span)?,
    )?;
    let offset = lax::rem(&offset, &span)?;
    lax::add(&minval, &lax::convert_element_type(&offset, dtype, false)?)
}
