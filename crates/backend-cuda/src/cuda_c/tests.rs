//! Printer tests that need no NVRTC: the shape of the printed C (launch
//! bounds, vector structs, names), constants that round-trip bit-exactly,
//! and cast lowering choices.

use super::{print_kernel, print_module, try_print_module};
use crate::kir::{Const, Expr, Kernel, KernelBuilder, Stmt, Var};
use jaxon_ir::DType;

fn scale_kernel() -> Kernel {
    let mut k = KernelBuilder::new("scale4", 256);
    let x = k.global("x", DType::F32, false);
    let y = k.global("y", DType::F32, true);
    let v: Vec<Var> = (0..4).map(|_| k.var("v", DType::F32)).collect();
    let i = k.let_("i", DType::U32, Expr::thread_x() * Expr::u32(4));
    k.load(&v, x.into(), Expr::var(i), None);
    let vals = v.iter().map(|v| Expr::f32(2.0) * Expr::var(*v)).collect();
    k.store(
        y.into(),
        Expr::var(i),
        vals,
        Some(Expr::var(i).lt(Expr::u32(64))),
    );
    k.finish().expect("verifies")
}

#[test]
fn signature_launch_bounds_and_vector_structs() {
    let c = print_kernel(&scale_kernel());
    assert!(c.contains(
        "extern \"C\" __global__ void __launch_bounds__(256) scale4(const kir_f32* p0_x, kir_f32* p1_y)"
    ));
    assert!(c.contains("struct __align__(16) kir_vec_f32_4 { kir_f32 v[4]; };"));
    assert!(c.contains("const kir_vec_f32_4 kir_t = *(const kir_vec_f32_4*)(&p0_x[v4_i]);"));
    assert!(c.contains("*(kir_vec_f32_4*)(&p1_y[v4_i]) = kir_t;"));
    assert!(c.contains("kir_f32 v0_v = 0;") && c.contains("kir_f32 v3_v = 0;"));
    assert!(!c.contains("#include"));
}

#[test]
fn module_has_one_prelude_and_every_kernel() {
    let a = scale_kernel();
    let mut b = a.clone();
    b.name = "other".into();
    let c = print_module(&[&a, &b]);
    assert_eq!(c.matches("typedef float kir_f32;").count(), 1);
    assert!(c.contains(" scale4(") && c.contains(" other("));
    let mut bad = a.clone();
    bad.body.push(Stmt::Assign(Var(99), Expr::u32(0)));
    assert!(try_print_module(&[&bad]).is_err());
    // Unverified kernels still print, with names NVRTC rejects.
    assert!(print_module(&[&bad]).contains("kir_invalid_var_99"));
}

#[test]
fn constants_round_trip_bits() {
    let p = |c: Const| super::print_constant(c);
    assert_eq!(
        p(Const {
            dtype: DType::F32,
            bits: 0x7fc0_0001
        }),
        "__uint_as_float(0x7fc00001u/*NaN*/)"
    );
    assert_eq!(
        p(Const {
            dtype: DType::F32,
            bits: 0x8000_0000
        }),
        "__uint_as_float(0x80000000u/*-0.0*/)"
    );
    assert_eq!(
        p(Const {
            dtype: DType::F64,
            bits: 0xfff0_0000_0000_0000
        }),
        "__longlong_as_double((kir_i64)0xfff0000000000000ull/*-inf*/)"
    );
    assert_eq!(
        p(Const {
            dtype: DType::F16,
            bits: 0x8000
        }),
        "((kir_f16)0x8000u)"
    );
    assert_eq!(
        p(Const::int(DType::I64, i64::MIN)),
        "((kir_i64)0x8000000000000000ull)"
    );
    assert_eq!(p(Const::int(DType::I32, -7)), "((kir_i32)-7)");
    assert_eq!(
        p(Const::int(DType::U64, -1)),
        "((kir_u64)18446744073709551615ull)"
    );
    assert_eq!(p(Const::int(DType::Bool, 5)), "((kir_bool)1)");
}

#[test]
fn casts_follow_kir_rules() {
    let c = super::print_cast;
    assert_eq!(c(DType::F32, DType::I32, "x"), "kir_f32_to_i32(x)");
    assert_eq!(
        c(DType::F64, DType::U8, "x"),
        "((kir_u8)kir_clamp_u32(kir_f64_to_u32(x), 255u))"
    );
    assert_eq!(
        c(DType::F64, DType::BF16, "x"),
        "kir_f32_to_bf16(kir_f64_to_f32_odd(x))"
    );
    assert_eq!(
        c(DType::I64, DType::F16, "x"),
        "kir_f32_to_f16(kir_i64_to_f32_odd(x))"
    );
    assert_eq!(
        c(DType::BF16, DType::F16, "x"),
        "kir_f32_to_f16(kir_bf16_to_f32(x))"
    );
    assert_eq!(
        c(DType::F16, DType::Bool, "x"),
        "((kir_bool)(((x) & 0x7fffu) != 0))"
    );
    assert_eq!(c(DType::I64, DType::F32, "x"), "((kir_f32)(x))");
    assert_eq!(c(DType::U8, DType::U8, "x"), "x");
}

#[test]
fn integer_arithmetic_wraps_without_signed_overflow() {
    let mut k = KernelBuilder::new("wrap", 32);
    let a = k.var("a", DType::I8);
    let b = k.var("b", DType::I32);
    k.assign(a, Expr::var(a) + Expr::var(a));
    k.assign(b, Expr::var(b) << Expr::var(b));
    k.assign(b, Expr::var(b) / Expr::var(b));
    let c = print_kernel(&k.finish().expect("verifies"));
    assert!(
        c.contains("v0_a = ((kir_i8)((kir_u32)(v0_a) + (kir_u32)(v0_a)));"),
        "{c}"
    );
    assert!(c.contains("v1_b = ((kir_i32)((kir_u32)(v1_b) << ((kir_u32)(v1_b) & 31u)));"));
    assert!(c.contains("v1_b = kir_div_i32(v1_b, v1_b);"));
}

#[test]
fn floats_use_nan_propagating_min_max_and_fmod() {
    let mut k = KernelBuilder::new("fl", 32);
    let a = k.var("a", DType::F32);
    let d = k.var("d", DType::F64);
    k.assign(a, Expr::var(a).max(Expr::var(a)));
    k.assign(a, Expr::var(a) % Expr::var(a));
    k.assign(d, Expr::var(d).min(Expr::var(d)));
    let c = print_kernel(&k.finish().expect("verifies"));
    assert!(c.contains("v0_a = kir_max_f32(v0_a, v0_a);"));
    assert!(c.contains("v0_a = fmodf(v0_a, v0_a);"));
    assert!(c.contains("v1_d = kir_min_f64(v1_d, v1_d);"));
    assert!(!c.contains("fmaxf(") && !c.contains("fminf("));
}
