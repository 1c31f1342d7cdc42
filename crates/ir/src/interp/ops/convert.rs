//! Dtype conversions: `convert_element_type` (cast semantics),
//! `bitcast_convert_type` (bit reinterpretation) and `reduce_precision`.

use super::{lift, lower, Lifted};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use half::{bf16, f16};

/// Converts storage to `to` like `convert_element_type`: float→int truncates
/// and saturates (NaN→0), int narrowing wraps, →bool is `x != 0`.
pub(crate) fn convert_storage(s: &Storage, to: DType) -> Storage {
    if s.dtype() == to {
        return s.clone();
    }
    match (s, to) {
        // Direct float→float casts round once.
        (Storage::F64(v), DType::F16) => {
            Storage::F16(v.iter().map(|&x| f16::from_f64(x)).collect())
        }
        (Storage::F64(v), DType::BF16) => {
            Storage::BF16(v.iter().map(|&x| bf16::from_f64(x)).collect())
        }
        _ => lower(lift(s), to),
    }
}

/// Little-endian bytes of every element.
fn to_bytes(s: &Storage) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * s.dtype().size_bytes());
    match s {
        Storage::Bool(v) => out.extend(v.iter().map(|&b| b as u8)),
        Storage::I8(v) => out.extend(v.iter().map(|&b| b as u8)),
        Storage::U8(v) => out.extend_from_slice(v),
        Storage::I16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::U16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::F16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::BF16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::I32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::U32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::F32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::I64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::U64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::F64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Storage::C64(v) => v.iter().for_each(|z| {
            out.extend_from_slice(&z.re.to_le_bytes());
            out.extend_from_slice(&z.im.to_le_bytes());
        }),
        Storage::C128(v) => v.iter().for_each(|z| {
            out.extend_from_slice(&z.re.to_le_bytes());
            out.extend_from_slice(&z.im.to_le_bytes());
        }),
        Storage::Key(v) => v.iter().for_each(|k| {
            out.extend_from_slice(&k[0].to_le_bytes());
            out.extend_from_slice(&k[1].to_le_bytes());
        }),
    }
    out
}

/// Storage of `dtype` from little-endian bytes.
fn from_bytes(b: &[u8], dtype: DType) -> Storage {
    macro_rules! chunks {
        ($t:ty, $n:expr) => {
            b.chunks_exact($n)
                .map(|c| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(c);
                    <$t>::from_le_bytes(a)
                })
                .collect()
        };
    }
    match dtype {
        DType::Bool => Storage::Bool(b.iter().map(|&x| x != 0).collect()),
        DType::I8 => Storage::I8(b.iter().map(|&x| x as i8).collect()),
        DType::U8 => Storage::U8(b.to_vec()),
        DType::I16 => Storage::I16(chunks!(i16, 2)),
        DType::U16 => Storage::U16(chunks!(u16, 2)),
        DType::F16 => Storage::F16(chunks!(f16, 2)),
        DType::BF16 => Storage::BF16(chunks!(bf16, 2)),
        DType::I32 => Storage::I32(chunks!(i32, 4)),
        DType::U32 => Storage::U32(chunks!(u32, 4)),
        DType::F32 => Storage::F32(chunks!(f32, 4)),
        DType::I64 => Storage::I64(chunks!(i64, 8)),
        DType::U64 => Storage::U64(chunks!(u64, 8)),
        DType::F64 => Storage::F64(chunks!(f64, 8)),
        DType::C64 => {
            let parts: Vec<f32> = chunks!(f32, 4);
            Storage::C64(
                parts
                    .chunks_exact(2)
                    .map(|p| num_complex::Complex32::new(p[0], p[1]))
                    .collect(),
            )
        }
        DType::C128 => {
            let parts: Vec<f64> = chunks!(f64, 8);
            Storage::C128(
                parts
                    .chunks_exact(2)
                    .map(|p| num_complex::Complex64::new(p[0], p[1]))
                    .collect(),
            )
        }
        DType::KeyFry => {
            let parts: Vec<u32> = chunks!(u32, 4);
            Storage::Key(parts.chunks_exact(2).map(|p| [p[0], p[1]]).collect())
        }
    }
}

/// `bitcast_convert_type`: same width keeps the shape; a narrower target
/// adds a trailing dim of size `from/to`; a wider one removes a trailing
/// dim that must be `to/from`.
pub fn bitcast(x: &HostArray, to: DType) -> Result<HostArray, IrError> {
    let (fw, tw) = (x.dtype().size_bytes(), to.size_bytes());
    let mut shape = x.shape().to_vec();
    if fw > tw {
        shape.push(fw / tw);
    } else if fw < tw {
        if shape.last() != Some(&(tw / fw)) {
            return Err(IrError::ty(
                "bitcast_convert_type",
                format!(
                    "{}{:?} -> {}: the last dim must be {}",
                    x.dtype(),
                    x.shape(),
                    to,
                    tw / fw
                ),
            ));
        }
        shape.pop();
    }
    HostArray::new(shape, from_bytes(&to_bytes(x.data()), to))
}

/// XLA's reduce-precision on raw bits of a float with `src_mant` mantissa
/// and `src_exp` exponent bits.
fn reduce_bits(bits: u64, nbits: u32, src_exp: u32, src_mant: u32, exp: u32, mant: u32) -> u64 {
    let mut x = bits;
    if mant < src_mant {
        let shift = src_mant - mant;
        let last_bit_mask = 1u64 << shift;
        let base_bias = (last_bit_mask >> 1) - 1;
        let last_bit = (x & last_bit_mask) >> shift;
        let trunc_mask = !(last_bit_mask - 1);
        x = x.wrapping_add(last_bit + base_bias) & trunc_mask;
    }
    if exp < src_exp {
        let sign_mask = 1u64 << (nbits - 1);
        let exp_mask = ((1u64 << src_exp) - 1) << src_mant;
        let bias = (1i64 << (src_exp - 1)) - 1;
        let reduced_bias = (1i64 << (exp.max(1) - 1)) - 1;
        let max_exp = (bias + reduced_bias) as u64;
        let min_exp = (bias - reduced_bias) as u64;
        let x_exp = x & exp_mask;
        let signed_zero = x & sign_mask;
        if x_exp > (max_exp << src_mant) {
            x = signed_zero | exp_mask;
        } else if x_exp <= (min_exp << src_mant) {
            x = signed_zero;
        }
    }
    x & if nbits == 64 {
        u64::MAX
    } else {
        (1u64 << nbits) - 1
    }
}

/// `reduce_precision[exponent_bits mantissa_bits]` (NaN stays NaN).
pub fn reduce_precision(x: &HostArray, exp: u32, mant: u32) -> Result<HostArray, IrError> {
    let dt = x.dtype();
    let out = match lift(x.data()) {
        Lifted::F32(v) => Lifted::F32(
            v.into_iter()
                .map(|a| {
                    if a.is_nan() {
                        a
                    } else {
                        f32::from_bits(reduce_bits(a.to_bits() as u64, 32, 8, 23, exp, mant) as u32)
                    }
                })
                .collect(),
        ),
        Lifted::F64(v) => Lifted::F64(
            v.into_iter()
                .map(|a| {
                    if a.is_nan() {
                        a
                    } else {
                        f64::from_bits(reduce_bits(a.to_bits(), 64, 11, 52, exp, mant))
                    }
                })
                .collect(),
        ),
        _ => {
            return Err(IrError::UnsupportedDType {
                primitive: "reduce_precision".into(),
                dtype: dt,
            })
        }
    };
    HostArray::new(x.shape().to_vec(), lower(out, dt))
}
