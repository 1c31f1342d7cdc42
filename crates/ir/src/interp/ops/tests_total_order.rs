//! Tests of `lt_to`/`le_to` (the total order on floats: -NaN < -inf < ..
//! < -0.0 < 0.0 < .. < inf < NaN) and of `population_count`/`clz`.

use super::elementwise::{binary, unary};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::primitive::{BinaryOp, UnaryOp};

/// Values in increasing total order.
fn ordered() -> Vec<f64> {
    vec![
        -f64::NAN,
        f64::NEG_INFINITY,
        -3.5,
        -1.0,
        -0.0,
        0.0,
        0.25,
        1.0,
        f64::INFINITY,
        f64::NAN,
    ]
}

fn bools(a: &HostArray) -> Vec<bool> {
    match a.data() {
        Storage::Bool(v) => v.clone(),
        s => panic!("not bool: {s:?}"),
    }
}

/// Every pair (i, j) of `vals`: lt_to is i < j, le_to is i <= j.
fn check_pairs(dt: DType, vals: &[f64]) {
    let n = vals.len();
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..n {
            xs.push(vals[i]);
            ys.push(vals[j]);
        }
    }
    let x = HostArray::from_f64(dt, &[n * n], &xs).unwrap();
    let y = HostArray::from_f64(dt, &[n * n], &ys).unwrap();
    let lt = bools(&binary(BinaryOp::LtTo, &x, &y).unwrap());
    let le = bools(&binary(BinaryOp::LeTo, &x, &y).unwrap());
    for i in 0..n {
        for j in 0..n {
            let k = i * n + j;
            assert_eq!(lt[k], i < j, "{dt} lt_to {} {}", vals[i], vals[j]);
            assert_eq!(le[k], i <= j, "{dt} le_to {} {}", vals[i], vals[j]);
        }
    }
}

#[test]
fn floats_in_total_order() {
    for dt in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        check_pairs(dt, &ordered());
    }
}

#[test]
fn integers_in_usual_order() {
    check_pairs(
        DType::I32,
        &[-2147483648.0, -5.0, -1.0, 0.0, 7.0, 2147483647.0],
    );
    check_pairs(DType::I8, &[-128.0, -1.0, 0.0, 127.0]);
    check_pairs(DType::U8, &[0.0, 1.0, 128.0, 255.0]);
    check_pairs(DType::U64, &[0.0, 1.0, 1e19]);
    check_pairs(DType::Bool, &[0.0, 1.0]);
}

#[test]
fn scalar_operand_broadcasts() {
    let x = HostArray::from_f64(DType::F32, &[3], &[-0.0, 0.0, f64::NAN]).unwrap();
    let y = HostArray::from_f64(DType::F32, &[], &[0.0]).unwrap();
    assert_eq!(
        bools(&binary(BinaryOp::LtTo, &x, &y).unwrap()),
        [true, false, false]
    );
}

fn counts(op: UnaryOp, dt: DType, vals: &[f64]) -> Vec<f64> {
    let x = HostArray::from_f64(dt, &[vals.len()], vals).unwrap();
    let y = unary(op, &x).unwrap();
    assert_eq!(y.dtype(), dt);
    y.to_f64_vec()
}

#[test]
fn population_count_by_width() {
    let pc = UnaryOp::PopulationCount;
    assert_eq!(
        counts(pc, DType::I8, &[0.0, -1.0, 5.0, -128.0]),
        [0.0, 8.0, 2.0, 1.0]
    );
    assert_eq!(
        counts(pc, DType::I32, &[-1.0, 7.0, -2147483648.0]),
        [32.0, 3.0, 1.0]
    );
    assert_eq!(counts(pc, DType::U16, &[65535.0, 256.0]), [16.0, 1.0]);
    assert_eq!(counts(pc, DType::I64, &[-1.0, 3.0]), [64.0, 2.0]);
}

#[test]
fn clz_by_width() {
    let c = UnaryOp::Clz;
    assert_eq!(
        counts(c, DType::I8, &[0.0, -1.0, 1.0, 64.0]),
        [8.0, 0.0, 7.0, 1.0]
    );
    assert_eq!(
        counts(c, DType::I32, &[0.0, 1.0, -5.0, 65536.0]),
        [32.0, 31.0, 0.0, 15.0]
    );
    assert_eq!(counts(c, DType::U16, &[1.0, 32768.0]), [15.0, 0.0]);
    assert_eq!(counts(c, DType::U64, &[0.0, 1.0]), [64.0, 63.0]);
}

#[test]
fn bit_counts_reject_floats_and_bools() {
    for dt in [DType::F32, DType::Bool] {
        let x = HostArray::from_f64(dt, &[1], &[1.0]).unwrap();
        assert!(unary(UnaryOp::PopulationCount, &x).is_err());
        assert!(unary(UnaryOp::Clz, &x).is_err());
    }
}
