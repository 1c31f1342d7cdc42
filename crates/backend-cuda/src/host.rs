//! Host-side element encoding: arrays of any dtype as little-endian bytes,
//! the layout device buffers and simulator buffers share.
//!
//! Invariant: `decode(d, &encode(d, v)) == v` for values representable in
//! `d` (`bool` as 0/1; NaN payloads are not preserved).

use crate::kir::Const;
use jaxon_ir::DType;

/// `values`, each converted to `dtype` as a KIR cast would, as bytes.
pub fn encode(dtype: DType, values: &[f64]) -> Vec<u8> {
    // Complex values never reach a buffer (`lower::complex` splits them
    // into parts); capped so
    // that they cannot index past a `u64`.
    let size = dtype.size_bytes().min(8);
    let mut out = Vec::with_capacity(values.len() * size);
    for &v in values {
        let bits = Const::from_f64(dtype, v).bits;
        out.extend_from_slice(&bits.to_le_bytes()[..size]);
    }
    out
}

/// The elements of `bytes` (whole elements of `dtype`) as `f64`.
pub fn decode(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let size = dtype.size_bytes().min(8);
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            let raw = u64::from_le_bytes(b);
            let bits = match dtype {
                // Sign-extend, as `Const` holds signed integers.
                DType::I8 => raw as u8 as i8 as i64 as u64,
                DType::I16 => raw as u16 as i16 as i64 as u64,
                DType::I32 => raw as u32 as i32 as i64 as u64,
                DType::Bool
                | DType::I64
                | DType::U8
                | DType::U16
                | DType::U32
                | DType::U64
                | DType::F16
                | DType::BF16
                | DType::F32
                | DType::F64
                | DType::C64
                | DType::C128
                | DType::KeyFry => raw,
            };
            Const { dtype, bits }.to_f64()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips() {
        let vals = [0.0, 1.0, -2.0, 100.0, -128.0, 127.0, 3.5];
        // Complex dtypes never reach a device buffer: lowering refuses them.
        for d in DType::ALL.into_iter().filter(|d| !d.is_complex()) {
            let want: Vec<f64> = vals
                .iter()
                .map(|&v| Const::from_f64(d, v).to_f64())
                .collect();
            let bytes = encode(d, &vals);
            assert_eq!(bytes.len(), vals.len() * d.size_bytes(), "{d}");
            assert_eq!(decode(d, &bytes), want, "{d}");
        }
    }

    #[test]
    fn bool_is_one_byte_and_f32_is_ieee() {
        assert_eq!(encode(DType::Bool, &[0.0, 5.0]), vec![0, 1]);
        assert_eq!(encode(DType::F32, &[1.0]), 1.0f32.to_le_bytes().to_vec());
        assert_eq!(decode(DType::I8, &[0xff]), vec![-1.0]);
    }
}
