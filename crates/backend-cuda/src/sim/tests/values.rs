//! Tests of the scalar semantics: integer wrapping, division, shifts and
//! comparisons, float min/max, casts (saturation, NaN, rounding ties, no
//! double rounding), bitcasts, and the math functions, directly and through
//! a cast kernel.

use super::{run, Rng};
use crate::kir::{BinOp, Const, Expr, KernelBuilder, LaunchDims, MathFn, UnOp};
use crate::sim::mathfn::{erfinv, math};
use crate::sim::value::{binary, bitcast, cast, unary};
use crate::sim::{Arg, SimBuffer};
use jaxon_ir::DType;

fn c(d: DType, v: i64) -> u64 {
    Const::int(d, v).bits
}

fn f32b(v: f32) -> u64 {
    u64::from(v.to_bits())
}

fn bin(op: BinOp, d: DType, a: i64, b: i64) -> Option<i64> {
    binary(op, d, c(d, a), c(d, b)).map(|r| r as i64)
}

#[test]
fn integer_arithmetic_wraps_and_truncates() {
    use BinOp::*;
    assert_eq!(bin(Add, DType::I8, 127, 1), Some(-128));
    assert_eq!(bin(Mul, DType::U8, 16, 17), Some(16));
    assert_eq!(bin(Sub, DType::U32, 0, 1), Some(u32::MAX as i64));
    assert_eq!(bin(Div, DType::I32, -7, 2), Some(-3));
    assert_eq!(bin(Rem, DType::I32, -7, 2), Some(-1));
    assert_eq!(bin(Rem, DType::I32, 7, -2), Some(1));
    assert_eq!(
        bin(Div, DType::I32, i32::MIN as i64, -1),
        Some(i32::MIN as i64)
    );
    assert_eq!(bin(Rem, DType::I64, i64::MIN, -1), Some(0));
    assert_eq!(bin(Div, DType::U16, 7, 0), None);
    assert_eq!(bin(Rem, DType::I8, 7, 0), None);
    // Shifts: count modulo the width; arithmetic right shift on signed.
    assert_eq!(bin(Shl, DType::U32, 1, 33), Some(2));
    assert_eq!(bin(Shl, DType::I8, 1, 7), Some(-128));
    assert_eq!(bin(Shr, DType::I32, -16, 2), Some(-4));
    assert_eq!(bin(Shr, DType::U32, u32::MAX as i64, 28), Some(15));
    assert_eq!(bin(Shr, DType::I16, -1, 17), Some(-1));
    // Signed versus unsigned comparisons of the same bits.
    assert_eq!(bin(Lt, DType::I32, -1, 0), Some(1));
    assert_eq!(bin(Lt, DType::U32, -1, 0), Some(0));
    assert_eq!(bin(Min, DType::I16, -5, 3), Some(-5));
    assert_eq!(bin(Max, DType::U8, 200, 3), Some(200));
    assert_eq!(bin(Min, DType::Bool, 1, 0), Some(0));
    assert_eq!(bin(Xor, DType::Bool, 1, 1), Some(0));
    // Unary operators.
    assert_eq!(
        unary(UnOp::Neg, DType::I32, c(DType::I32, i32::MIN as i64)) as i64,
        i32::MIN as i64
    );
    assert_eq!(unary(UnOp::Abs, DType::I8, c(DType::I8, -128)) as i64, -128);
    assert_eq!(unary(UnOp::Not, DType::Bool, 1), 0);
    assert_eq!(unary(UnOp::Not, DType::U8, 0x0f), 0xf0);
    assert_eq!(unary(UnOp::Clz, DType::U16, 1), 15);
    assert_eq!(unary(UnOp::Clz, DType::I32, c(DType::I32, -1)), 0);
    assert_eq!(unary(UnOp::Popc, DType::I8, c(DType::I8, -1)), 8);
    assert_eq!(unary(UnOp::Neg, DType::F32, f32b(2.0)), f32b(-2.0));
    assert_eq!(unary(UnOp::IsNan, DType::F64, f64::NAN.to_bits()), 1);
    assert_eq!(unary(UnOp::IsInf, DType::F32, f32b(f32::NEG_INFINITY)), 1);
}

#[test]
fn float_min_max_propagate_nan() {
    let f = |op, a: f32, b: f32| {
        f32::from_bits(binary(op, DType::F32, f32b(a), f32b(b)).unwrap() as u32)
    };
    assert!(f(BinOp::Min, f32::NAN, 1.0).is_nan());
    assert!(f(BinOp::Max, 1.0, f32::NAN).is_nan());
    assert_eq!(f(BinOp::Min, 1.0, -2.0), -2.0);
    assert_eq!(f(BinOp::Max, 1.0, -2.0), 1.0);
    assert!(f(BinOp::Min, 0.0, -0.0).is_sign_negative());
    assert!(f(BinOp::Max, -0.0, 0.0).is_sign_positive());
    assert_eq!(f(BinOp::Rem, 7.5, 2.0), 1.5);
    assert_eq!(
        binary(BinOp::Ne, DType::F32, f32b(f32::NAN), f32b(f32::NAN)),
        Some(1)
    );
    assert_eq!(
        binary(BinOp::Eq, DType::F32, f32b(0.0), f32b(-0.0)),
        Some(1)
    );
}

#[test]
fn casts_saturate_round_and_wrap() {
    let fi = |v: f32, to: DType| cast(DType::F32, to, f32b(v)) as i64;
    // Float → int: truncate toward zero, saturate, NaN → 0.
    assert_eq!(fi(f32::NAN, DType::I32), 0);
    assert_eq!(fi(f32::NAN, DType::U64), 0);
    assert_eq!(fi(-5.7, DType::U32), 0);
    assert_eq!(fi(-5.7, DType::I32), -5);
    assert_eq!(fi(3e9, DType::I32), i32::MAX as i64);
    assert_eq!(fi(-3e9, DType::I32), i32::MIN as i64);
    assert_eq!(fi(300.0, DType::U8), 255);
    assert_eq!(fi(f32::INFINITY, DType::I64), i64::MAX);
    assert_eq!(fi(-129.5, DType::I8), -128);
    // Int → int wraps; bool is `!= 0` both ways.
    assert_eq!(cast(DType::I32, DType::I8, c(DType::I32, 300)) as i64, 44);
    assert_eq!(cast(DType::U8, DType::I8, 255) as i64, -1);
    assert_eq!(
        cast(DType::I8, DType::U32, c(DType::I8, -1)),
        u64::from(u32::MAX)
    );
    assert_eq!(cast(DType::I32, DType::Bool, c(DType::I32, -4)), 1);
    assert_eq!(cast(DType::F32, DType::Bool, f32b(0.5)), 1);
    assert_eq!(cast(DType::F32, DType::Bool, f32b(-0.0)), 0);
    assert_eq!(cast(DType::F32, DType::Bool, f32b(f32::NAN)), 1);
    assert_eq!(cast(DType::Bool, DType::F64, 1), 1f64.to_bits());
    // Int → float rounds to nearest even.
    assert_eq!(
        cast(DType::I32, DType::F32, c(DType::I32, 16_777_217)),
        f32b(16_777_216.0)
    );
    assert_eq!(
        cast(DType::I32, DType::F32, c(DType::I32, 16_777_219)),
        f32b(16_777_220.0)
    );
    assert_eq!(
        cast(DType::U32, DType::F32, u64::from(u32::MAX)),
        f32b(4_294_967_296.0)
    );
    assert_eq!(
        cast(DType::U64, DType::F64, u64::MAX),
        (u64::MAX as f64).to_bits()
    );
    assert_eq!(cast(DType::I32, DType::F16, c(DType::I32, 70_000)), 0x7C00);
    // bf16 of an integer: 257 is halfway between 256 and 258 → 256 (even);
    // 2^40 + 2^32 + 1 is just above halfway → rounds up (no double rounding).
    let bf = |v: i64| cast(DType::I64, DType::BF16, v as u64);
    assert_eq!(bf(257), u64::from(half::bf16::from_f32(256.0).to_bits()));
    assert_eq!(bf(259), u64::from(half::bf16::from_f32(260.0).to_bits()));
    let up = (1i64 << 40) + (1 << 32) + 1;
    assert_eq!(
        half::bf16::from_bits(bf(up) as u16).to_f64(),
        ((1u64 << 40) + (1 << 33)) as f64
    );
}

#[test]
fn float_casts_round_ties_to_even_without_double_rounding() {
    let bf = |v: f64, from: DType| cast(from, DType::BF16, Const::from_f64(from, v).bits);
    // bf16 has 8 significant bits: 1 + 2^-8 is a tie → 1.0 (even);
    // 1 + 3·2^-8 is a tie → 1 + 2^-6 (even).
    assert_eq!(bf(1.0 + 2f64.powi(-8), DType::F32), 0x3F80);
    assert_eq!(bf(1.0 + 3.0 * 2f64.powi(-8), DType::F32), 0x3F82);
    assert_eq!(bf(-(1.0 + 2f64.powi(-8)), DType::F32), 0xBF80);
    // From f64, just above the tie: rounding through f32 first would give
    // the tie and round down; the right answer rounds up.
    assert_eq!(bf(1.0 + 2f64.powi(-8) + 2f64.powi(-40), DType::F64), 0x3F81);
    let h = |v: f64| cast(DType::F64, DType::F16, v.to_bits());
    assert_eq!(h(1.0 + 2f64.powi(-11) + 2f64.powi(-40)), 0x3C01);
    assert_eq!(h(1.0 + 2f64.powi(-11)), 0x3C00);
    assert_eq!(
        h(65519.0),
        u64::from(half::f16::from_f32(65504.0).to_bits())
    );
    assert_eq!(h(65520.0), 0x7C00);
    assert_eq!(h(1e-10), 0);
    // f64 → f32 rounds to nearest even; f16 ↔ f32 is exact.
    let x = 1.0 + 2f64.powi(-24);
    assert_eq!(cast(DType::F64, DType::F32, x.to_bits()), f32b(1.0));
    assert_eq!(
        cast(DType::F16, DType::F32, 0x3C01),
        f32b(1.0 + 2f32.powi(-10))
    );
    assert_eq!(cast(DType::BF16, DType::F16, 0x3F81), 0x3C08);
    // NaN stays NaN across floats.
    assert!(f32::from_bits(cast(DType::BF16, DType::F32, 0x7FC0) as u32).is_nan());
    assert_eq!(
        cast(DType::F32, DType::F16, f32b(f32::NAN)) & 0x7C00,
        0x7C00
    );
    // Bitcasts keep bits and sign-extend signed results.
    assert_eq!(
        bitcast(DType::F32, DType::I32, f32b(-0.0)) as i64,
        i32::MIN as i64
    );
    assert_eq!(bitcast(DType::I16, DType::F16, c(DType::I16, -1)), 0xFFFF);
    assert_eq!(
        bitcast(DType::U64, DType::F64, 1f64.to_bits()),
        1f64.to_bits()
    );
}

/// Casts through a kernel, `f32` to several dtypes, on spot values.
#[test]
fn cast_kernel_spot_values() {
    let targets = [
        DType::I32,
        DType::U32,
        DType::I8,
        DType::BF16,
        DType::F16,
        DType::Bool,
    ];
    let mut k = KernelBuilder::new("casts", 32);
    let x = k.global("x", DType::F32, false);
    let outs: Vec<_> = targets
        .iter()
        .map(|&d| k.global(&format!("y_{d}"), d, true))
        .collect();
    let v = k.var("v", DType::F32);
    let n = Expr::thread_x();
    k.load(&[v], x.into(), n.clone(), None);
    for (&d, &o) in targets.iter().zip(&outs) {
        k.store(o.into(), n.clone(), vec![Expr::var(v).cast(d)], None);
    }
    let kernel = k.finish().unwrap();
    let one_tie = 1.0 + 2f64.powi(-8);
    let xs = [
        f64::NAN,
        -5.7,
        3e9,
        -3e9,
        one_tie,
        1.0 + 3.0 * 2f64.powi(-8),
        70000.0,
        0.0,
    ];
    let mut bufs = vec![SimBuffer::from_f64(DType::F32, &xs)];
    bufs.extend(targets.iter().map(|&d| SimBuffer::zeroed(d, xs.len())));
    let args: Vec<Arg> = (0..bufs.len()).map(Arg::Buffer).collect();
    run(
        &kernel,
        LaunchDims::linear(1, xs.len() as u32),
        &mut bufs,
        &args,
    )
    .unwrap();
    assert_eq!(
        bufs[1].to_f64(),
        [
            0.0,
            -5.0,
            2147483647.0,
            -2147483648.0,
            1.0,
            1.0,
            70000.0,
            0.0
        ]
    );
    assert_eq!(
        bufs[2].to_f64(),
        [0.0, 0.0, 3e9, 0.0, 1.0, 1.0, 70000.0, 0.0]
    );
    assert_eq!(
        bufs[3].to_f64(),
        [0.0, -5.0, 127.0, -128.0, 1.0, 1.0, 127.0, 0.0]
    );
    let bf = bufs[4].to_bits();
    assert_eq!(bf[4..6], [0x3F80, 0x3F82]);
    assert!(bufs[5].to_f64()[6].is_infinite());
    assert_eq!(bufs[6].to_bits(), [1, 1, 1, 1, 1, 1, 1, 0]);
}

#[test]
fn math_functions_spot_values() {
    let m64 = |f, args: &[f64]| {
        let bits: Vec<u64> = args.iter().map(|v| v.to_bits()).collect();
        f64::from_bits(math(f, DType::F64, &bits))
    };
    let m32 = |f, args: &[f32]| {
        let bits: Vec<u64> = args.iter().map(|&v| f32b(v)).collect();
        f32::from_bits(math(f, DType::F32, &bits) as u32)
    };
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs().max(1e-300);
    assert!(close(
        m64(MathFn::Erf, &[0.5]),
        0.520_499_877_813_046_5,
        1e-15
    ));
    assert!(close(
        m64(MathFn::Erfc, &[3.0]),
        2.209_049_699_858_544e-5,
        1e-14
    ));
    assert!(close(
        m64(MathFn::Lgamma, &[0.5]),
        0.572_364_942_924_700_1,
        1e-15
    ));
    assert!(close(
        m64(MathFn::Lgamma, &[-2.5]),
        -0.056_243_716_497_674_05,
        1e-13
    ));
    assert!(close(
        m64(MathFn::ErfInv, &[0.5]),
        0.476_936_276_204_469_9,
        1e-15
    ));
    assert!(close(
        f64::from(m32(MathFn::ErfInv, &[0.5])),
        0.476_936_276_204_469_9,
        1e-7
    ));
    assert!(close(
        f64::from(m32(MathFn::Lgamma, &[10.0])),
        12.801_827_480_081_469,
        1e-7
    ));
    assert_eq!(m64(MathFn::ErfInv, &[1.0]), f64::INFINITY);
    assert_eq!(m64(MathFn::ErfInv, &[-1.0]), f64::NEG_INFINITY);
    assert!(m64(MathFn::ErfInv, &[1.5]).is_nan());
    assert_eq!(m64(MathFn::RoundEven, &[2.5]), 2.0);
    assert_eq!(m64(MathFn::RoundAway, &[2.5]), 3.0);
    assert_eq!(m64(MathFn::RoundAway, &[-2.5]), -3.0);
    assert!(close(
        m64(MathFn::Atan2, &[1.0, -1.0]),
        3.0 * std::f64::consts::FRAC_PI_4,
        1e-15
    ));
    assert_eq!(m32(MathFn::CopySign, &[2.0, -0.0]), -2.0);
    assert_eq!(m32(MathFn::NextAfter, &[1.0, 2.0]), 1.0 + f32::EPSILON);
    assert_eq!(m32(MathFn::Fma, &[2.0, 3.0, 1.0]), 7.0);
    assert_eq!(m32(MathFn::Rsqrt, &[4.0]), 0.5);
    assert_eq!(m64(MathFn::Pow, &[2.0, 10.0]), 1024.0);
}

/// `erfinv` inverts `erf` to about 1e-15 in f64 across its range (and
/// near ±1, through `erfc`), and to f32 precision in f32.
#[test]
fn erfinv_round_trips() {
    let mut rng = Rng::new(30);
    for _ in 0..2000 {
        let x = rng.unit() * 5.5;
        let y = libm::erf(x);
        if y.abs() >= 1.0 {
            continue;
        }
        let back = erfinv(y);
        // Near |y| = 1 the condition number is large; compare in erfc.
        if y.abs() > 0.5 {
            let (q, qb) = (1.0 - y.abs(), libm::erfc(back.abs()));
            assert!((q - qb).abs() <= 1e-14 * q, "x {x}: erfc {q} vs {qb}");
        } else {
            assert!((back - x).abs() <= 4e-15 * x.abs(), "x {x}: {back}");
        }
        let y32 = y as f32;
        let b32 = f32::from_bits(math(MathFn::ErfInv, DType::F32, &[f32b(y32)]) as u32);
        let want = erfinv(f64::from(y32));
        if want.is_infinite() {
            assert_eq!(f64::from(b32), want);
        } else {
            assert!(
                (f64::from(b32) - want).abs() <= 1.2e-7 * want.abs(),
                "{y32}: {b32} vs {want}"
            );
        }
    }
    // Tiny and negative arguments keep their sign and scale.
    assert_eq!(erfinv(-0.0).to_bits(), (-0.0f64).to_bits());
    let tiny = 1e-300;
    assert!((erfinv(tiny) - tiny * std::f64::consts::PI.sqrt() / 2.0).abs() < 1e-314);
}
