//! Golden tests (sort and top_k): values produced by JAX 0.10.2 on the CPU, embedded.

#![allow(clippy::approx_constant, clippy::excessive_precision)]

use crate::primitive::{SortParams, TopKParams};
use super::testutil::{arr, check};
#[allow(unused_imports)]
use crate::dtype::DType;
#[allow(unused_imports)]
use crate::primitive::*;

#[test]
fn sort_f32_nan() {
    let p = Primitive::from(SortParams { dimension: 0, is_stable: true, num_keys: 1 });
    check(&p, &[arr(DType::F32, &[10], &[3.0, f64::NAN, -1.0, 0.0, -0.0, f64::INFINITY, -f64::NAN, 2.0, f64::NEG_INFINITY, 3.0])], &[(DType::F32, &[10][..], &[f64::NEG_INFINITY, -1.0, 0.0, -0.0, 2.0, 3.0, 3.0, f64::INFINITY, f64::NAN, -f64::NAN][..])], 0.0);
}

#[test]
fn sort_with_payload() {
    let p = Primitive::from(SortParams { dimension: 0, is_stable: true, num_keys: 1 });
    check(&p, &[arr(DType::F32, &[10], &[3.0, f64::NAN, -1.0, 0.0, -0.0, f64::INFINITY, -f64::NAN, 2.0, f64::NEG_INFINITY, 3.0]), arr(DType::I32, &[10], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])], &[(DType::F32, &[10][..], &[f64::NEG_INFINITY, -1.0, 0.0, -0.0, 2.0, 3.0, 3.0, f64::INFINITY, f64::NAN, -f64::NAN][..]), (DType::I32, &[10][..], &[8.0, 2.0, 3.0, 4.0, 7.0, 0.0, 9.0, 5.0, 1.0, 6.0][..])], 0.0);
}

#[test]
fn sort_two_keys() {
    let p = Primitive::from(SortParams { dimension: 1, is_stable: true, num_keys: 2 });
    check(&p, &[arr(DType::I32, &[2, 5], &[2.0, 1.0, 2.0, 1.0, 0.0, 5.0, 5.0, 5.0, 4.0, 4.0]), arr(DType::F32, &[2, 5], &[3.0, 1.0, -1.0, 0.5, 9.0, 1.0, 0.0, 1.0, 2.0, 2.0]), arr(DType::I32, &[2, 5], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])], &[(DType::I32, &[2, 5][..], &[0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 5.0, 5.0, 5.0][..]), (DType::F32, &[2, 5][..], &[9.0, 0.5, 1.0, -1.0, 3.0, 2.0, 2.0, 0.0, 1.0, 1.0][..]), (DType::I32, &[2, 5][..], &[4.0, 3.0, 1.0, 2.0, 0.0, 8.0, 9.0, 6.0, 5.0, 7.0][..])], 0.0);
}

#[test]
fn sort_axis0_u8() {
    let p = Primitive::from(SortParams { dimension: 0, is_stable: false, num_keys: 1 });
    check(&p, &[arr(DType::U8, &[3, 2], &[200.0, 1.0, 3.0, 255.0, 0.0, 7.0])], &[(DType::U8, &[3, 2][..], &[0.0, 1.0, 3.0, 7.0, 200.0, 255.0][..])], 0.0);
}

#[test]
fn top_k_ties_nan() {
    let p = Primitive::from(TopKParams { k: 4, axis: 1 });
    check(&p, &[arr(DType::F32, &[2, 6], &[1.0, f64::NAN, 3.0, 3.0, -f64::NAN, 1.0, 0.0, -0.0, 0.0, -1.0, 5.0, f64::NEG_INFINITY])], &[(DType::F32, &[2, 4][..], &[f64::NAN, 3.0, 3.0, 1.0, 5.0, 0.0, 0.0, -0.0][..]), (DType::I32, &[2, 4][..], &[1.0, 2.0, 3.0, 0.0, 4.0, 0.0, 2.0, 1.0][..])], 0.0);
}

#[test]
fn top_k_int() {
    let p = Primitive::from(TopKParams { k: 3, axis: 1 });
    check(&p, &[arr(DType::I32, &[2, 4], &[1.0, 5.0, 5.0, 2.0, -1.0, -1.0, -1.0, -1.0])], &[(DType::I32, &[2, 3][..], &[5.0, 5.0, 2.0, -1.0, -1.0, -1.0][..]), (DType::I32, &[2, 3][..], &[1.0, 2.0, 3.0, 0.0, 1.0, 2.0][..])], 0.0);
}
