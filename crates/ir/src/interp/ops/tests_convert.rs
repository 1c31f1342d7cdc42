//! Golden tests (conversions): values produced by JAX 0.10.2 on the CPU, embedded.

#![allow(clippy::approx_constant, clippy::excessive_precision)]

use crate::primitive::{BitcastConvertTypeParams, ConvertElementTypeParams, ReducePrecisionParams};
use super::testutil::{arr, check};
#[allow(unused_imports)]
use crate::dtype::DType;
#[allow(unused_imports)]
use crate::primitive::*;

#[test]
fn convert_f32_to_int32() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I32, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::I32, &[11][..], &[0.0, 2147483647.0, -2147483648.0, 3.0, -3.0, 300.0, -5.0, 255.0, 2147483647.0, -2147483648.0, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_uint8() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::U8, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::U8, &[11][..], &[0.0, 255.0, 0.0, 3.0, 0.0, 255.0, 0.0, 255.0, 255.0, 0.0, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_int8() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I8, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::I8, &[11][..], &[0.0, 127.0, -128.0, 3.0, -3.0, 127.0, -5.0, 127.0, 127.0, -128.0, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_uint32() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::U32, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::U32, &[11][..], &[0.0, 4294967295.0, 0.0, 3.0, 0.0, 300.0, 0.0, 255.0, 4294967295.0, 0.0, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_int64() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I64, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::I64, &[11][..], &[0.0, 10000000000.0, -10000000000.0, 3.0, -3.0, 300.0, -5.0, 255.0, 9.223372036854776e+18, -9.223372036854776e+18, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_uint64() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::U64, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::U64, &[11][..], &[0.0, 10000000000.0, 0.0, 3.0, 0.0, 300.0, 0.0, 255.0, 1.8446744073709552e+19, 0.0, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_int16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I16, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::I16, &[11][..], &[0.0, 32767.0, -32768.0, 3.0, -3.0, 300.0, -5.0, 255.0, 32767.0, -32768.0, 0.0][..])], 0.0);
}

#[test]
fn convert_f32_to_bfloat16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::BF16, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::BF16, &[11][..], &[f64::NAN, 9999220736.0, -9999220736.0, 3.703125, -3.703125, 300.0, -5.0, 256.0, f64::INFINITY, f64::NEG_INFINITY, -0.5][..])], 0.0);
}

#[test]
fn convert_f32_to_float16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::F16, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::F16, &[11][..], &[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3.69921875, -3.69921875, 300.0, -5.0, 255.875, f64::INFINITY, f64::NEG_INFINITY, -0.5][..])], 0.0);
}

#[test]
fn convert_f32_to_bool() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::Bool, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::Bool, &[11][..], &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0][..])], 0.0);
}

#[test]
fn convert_f32_to_float64() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::F64, weak_type: false });
    check(&p, &[arr(DType::F32, &[11], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5])], &[(DType::F64, &[11][..], &[f64::NAN, 10000000000.0, -10000000000.0, 3.700000047683716, -3.700000047683716, 300.0, -5.0, 255.89999389648438, f64::INFINITY, f64::NEG_INFINITY, -0.5][..])], 0.0);
}

#[test]
fn convert_i32_to_float16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::F16, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::F16, &[8][..], &[f64::INFINITY, f64::NEG_INFINITY, 65504.0, f64::INFINITY, 2048.0, 2052.0, f64::INFINITY, -300.0][..])], 0.0);
}

#[test]
fn convert_i32_to_bfloat16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::BF16, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::BF16, &[8][..], &[2147483648.0, -2147483648.0, 65536.0, 65536.0, 2048.0, 2048.0, 16777216.0, -300.0][..])], 0.0);
}

#[test]
fn convert_i32_to_float32() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::F32, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::F32, &[8][..], &[2147483648.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777216.0, -300.0][..])], 0.0);
}

#[test]
fn convert_i32_to_int8() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I8, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::I8, &[8][..], &[-1.0, 0.0, -17.0, -16.0, 1.0, 3.0, 1.0, -44.0][..])], 0.0);
}

#[test]
fn convert_i32_to_uint8() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::U8, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::U8, &[8][..], &[255.0, 0.0, 239.0, 240.0, 1.0, 3.0, 1.0, 212.0][..])], 0.0);
}

#[test]
fn convert_i32_to_uint16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::U16, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::U16, &[8][..], &[65535.0, 0.0, 65519.0, 65520.0, 2049.0, 2051.0, 1.0, 65236.0][..])], 0.0);
}

#[test]
fn convert_i32_to_bool() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::Bool, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::Bool, &[8][..], &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0][..])], 0.0);
}

#[test]
fn convert_i32_to_uint64() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::U64, weak_type: false });
    check(&p, &[arr(DType::I32, &[8], &[2147483647.0, -2147483648.0, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, -300.0])], &[(DType::U64, &[8][..], &[2147483647.0, 1.8446744071562068e+19, 65519.0, 65520.0, 2049.0, 2051.0, 16777217.0, 1.8446744073709552e+19][..])], 0.0);
}

#[test]
fn convert_i64_to_i32() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I32, weak_type: false });
    check(&p, &[arr(DType::I64, &[3], &[1099511627781.0, -1099511627783.0, 2147483648.0])], &[(DType::I32, &[3][..], &[5.0, -7.0, -2147483648.0][..])], 0.0);
}

#[test]
fn convert_u32_to_i32() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::I32, weak_type: false });
    check(&p, &[arr(DType::U32, &[3], &[4294967295.0, 2147483648.0, 7.0])], &[(DType::I32, &[3][..], &[-1.0, -2147483648.0, 7.0][..])], 0.0);
}

#[test]
fn convert_f64_to_f16() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::F16, weak_type: false });
    check(&p, &[arr(DType::F64, &[4], &[1.000976562501, 65520.0, 1e-08, -3.3])], &[(DType::F16, &[4][..], &[1.0009765625, f64::INFINITY, 0.0, -3.30078125][..])], 0.0);
}

#[test]
fn convert_bool_to_f32() {
    let p = Primitive::from(ConvertElementTypeParams { new_dtype: DType::F32, weak_type: false });
    check(&p, &[arr(DType::Bool, &[2], &[1.0, 0.0])], &[(DType::F32, &[2][..], &[1.0, 0.0][..])], 0.0);
}

#[test]
fn bitcast_f32_u32() {
    let p = Primitive::from(BitcastConvertTypeParams { new_dtype: DType::U32 });
    check(&p, &[arr(DType::F32, &[3], &[1.0, -2.5, f64::INFINITY])], &[(DType::U32, &[3][..], &[1065353216.0, 3223322624.0, 2139095040.0][..])], 0.0);
}

#[test]
fn bitcast_f32_u8() {
    let p = Primitive::from(BitcastConvertTypeParams { new_dtype: DType::U8 });
    check(&p, &[arr(DType::F32, &[1, 2], &[1.0, -2.5])], &[(DType::U8, &[1, 2, 4][..], &[0.0, 0.0, 128.0, 63.0, 0.0, 0.0, 32.0, 192.0][..])], 0.0);
}

#[test]
fn bitcast_u8_i16() {
    let p = Primitive::from(BitcastConvertTypeParams { new_dtype: DType::I16 });
    check(&p, &[arr(DType::U8, &[2, 2], &[1.0, 2.0, 255.0, 255.0])], &[(DType::I16, &[2][..], &[513.0, -1.0][..])], 0.0);
}

#[test]
fn bitcast_i32_f32() {
    let p = Primitive::from(BitcastConvertTypeParams { new_dtype: DType::F32 });
    check(&p, &[arr(DType::I32, &[2], &[1065353216.0, -1082130432.0])], &[(DType::F32, &[2][..], &[1.0, -1.0][..])], 0.0);
}

#[test]
fn bitcast_bf16_i16() {
    let p = Primitive::from(BitcastConvertTypeParams { new_dtype: DType::I16 });
    check(&p, &[arr(DType::BF16, &[2], &[1.0, -3.0])], &[(DType::I16, &[2][..], &[16256.0, -16320.0][..])], 0.0);
}

#[test]
fn reduce_precision_f16() {
    let p = Primitive::from(ReducePrecisionParams { exponent_bits: 5, mantissa_bits: 10 });
    check(&p, &[arr(DType::F32, &[9], &[1.100000023841858, 9.99994610111476e-41, 70000.0, f64::NAN, 65519.8984375, -3.299999965482712e+38, 9.999999747378752e-06, 6.199999916134402e-05, 0.33329999446868896])], &[(DType::F32, &[9][..], &[1.099609375, 0.0, f64::INFINITY, f64::NAN, 65504.0, f64::NEG_INFINITY, 0.0, 6.198883056640625e-05, 0.333251953125][..])], 0.0);
}

#[test]
fn reduce_precision_bf16() {
    let p = Primitive::from(ReducePrecisionParams { exponent_bits: 8, mantissa_bits: 7 });
    check(&p, &[arr(DType::F32, &[5], &[1.00390625, 1.01171875, 3.141590118408203, -2.718280076980591, 9.99994610111476e-41])], &[(DType::F32, &[5][..], &[1.0, 1.015625, 3.140625, -2.71875, 9.183549615799121e-41][..])], 0.0);
}

#[test]
fn reduce_precision_f64() {
    let p = Primitive::from(ReducePrecisionParams { exponent_bits: 8, mantissa_bits: 23 });
    check(&p, &[arr(DType::F64, &[4], &[1.0000000009313226, 1e-39, 1e+300, 0.1])], &[(DType::F64, &[4][..], &[1.0, 0.0, f64::INFINITY, 0.10000000149011612][..])], 0.0);
}
