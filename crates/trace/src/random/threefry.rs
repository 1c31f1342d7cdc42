//! The Threefry-2x32 block cipher and the counter-based bit generator built
//! on it (JAX's `jax_threefry_partitionable=True` scheme), written with
//! `lax` integer ops so it evaluates eagerly and stages like any function.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// Threefry's key-schedule parity constant.
const PARITY: u32 = 0x1BD1_1BDA;

/// Rotation amounts of the even and odd groups of four rounds.
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

fn u32c(x: u32) -> Array {
    Array::scalar(x)
}

fn rotate_left(x: &Array, d: u32) -> Result<Array> {
    let hi = lax::shift_left(x, &u32c(d))?;
    let lo = lax::shift_right_logical(x, &u32c(32 - d))?;
    lax::bitwise_or(&hi, &lo)
}

/// Threefry-2x32 with 20 rounds: encrypts the counter pairs `(x0, x1)`
/// (equal-shape `u32` arrays) under the key `(k0, k1)` (`u32` scalars).
///
/// The 20 rounds are unrolled, as JAX's non-CPU lowering does; JAX's CPU
/// lowering rolls them into a `fori_loop`, which gives the same bits.
pub fn threefry2x32(k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> Result<(Array, Array)> {
    for a in [k0, k1, x0, x1] {
        if a.dtype() != DType::U32 {
            return Err(Error::InvalidArgument(format!(
                "threefry2x32 needs uint32 operands, got {}",
                fmt_aval(a.aval())
            )));
        }
    }
    let k2 = lax::bitwise_xor(&lax::bitwise_xor(k0, k1)?, &u32c(PARITY))?;
    let ks = [k0.clone(), k1.clone(), k2];
    let mut a = lax::add(x0, &ks[0])?;
    let mut b = lax::add(x1, &ks[1])?;
    for group in 0..5usize {
        for &r in &ROTATIONS[group % 2] {
            a = lax::add(&a, &b)?;
            b = rotate_left(&b, r)?;
            b = lax::bitwise_xor(&a, &b)?;
        }
        // Key injection after each group of four rounds.
        a = lax::add(&a, &ks[(group + 1) % 3])?;
        b = lax::add(&b, &ks[(group + 2) % 3])?;
        b = lax::add(&b, &u32c(group as u32 + 1))?;
    }
    Ok((a, b))
}

/// The two `u32` halves `(k0, k1)` of a single raw key `u32[2]`.
pub fn key_halves(key: &Array, op: &str) -> Result<(Array, Array)> {
    if key.dtype() != DType::U32 || key.try_shape()? != [2] {
        return Err(Error::InvalidArgument(format!(
            "{op} needs a single threefry key (uint32[2]), got {}",
            fmt_aval(key.aval())
        )));
    }
    let k0 = lax::reshape(&lax::slice(key, &[0], &[1], None)?, &[])?;
    let k1 = lax::reshape(&lax::slice(key, &[1], &[2], None)?, &[])?;
    Ok((k0, k1))
}

/// The row-major element index of `shape` as a 64-bit count split into
/// `(high, low)` `u32` halves (JAX's `iota_2x32_shape`).
pub fn iota_2x32(shape: &[usize]) -> Result<(Array, Array)> {
    let size: usize = shape.iter().product();
    if size as u128 > u32::MAX as u128 + 1 {
        // The high half is then nonzero; no array that large fits here.
        return Err(Error::InvalidArgument(format!(
            "random: arrays of more than 2**32 elements are not supported, got shape {shape:?}"
        )));
    }
    let hi = crate::numpy::broadcast_to(&u32c(0), shape)?;
    let lo = if shape.is_empty() {
        u32c(0)
    } else {
        lax::reshape(&lax::iota(DType::U32, size)?, shape)?
    };
    Ok((hi, lo))
}

/// The unsigned dtype of a bit width.
pub fn uint_dtype(bit_width: u32) -> Result<DType> {
    Ok(match bit_width {
        8 => DType::U8,
        16 => DType::U16,
        32 => DType::U32,
        64 => DType::U64,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "random bits: width must be 8, 16, 32 or 64, got {bit_width}"
            )))
        }
    })
}

/// Uniform random bits of `bit_width` (8, 16, 32, 64) and `shape` from one
/// key: element `i` encrypts the counter `i` (JAX's partitionable scheme).
pub fn random_bits(key: &Array, bit_width: u32, shape: &[usize]) -> Result<Array> {
    super::staged("random_bits", std::slice::from_ref(key), |a| {
        random_bits_inline(&a[0], bit_width, shape)
    })
}

/// [`random_bits`] as the ops it is made of.
fn random_bits_inline(key: &Array, bit_width: u32, shape: &[usize]) -> Result<Array> {
    let dtype = uint_dtype(bit_width)?;
    let (k0, k1) = key_halves(key, "random_bits")?;
    let (hi, lo) = iota_2x32(shape)?;
    let (b0, b1) = threefry2x32(&k0, &k1, &hi, &lo)?;
    match bit_width {
        64 => {
            let h = lax::convert_element_type(&b0, dtype, false)?;
            let l = lax::convert_element_type(&b1, dtype, false)?;
            let h = lax::shift_left(&h, &Array::scalar(32u64))?;
            lax::bitwise_or(&h, &l)
        }
        32 => lax::bitwise_xor(&b0, &b1),
        _ => lax::convert_element_type(&lax::bitwise_xor(&b0, &b1)?, dtype, false),
    }
}
