//! Out-of-line scalar helpers that kernels call through a function pointer
//! (`call_indirect` to a constant address): the float functions without
//! an inline polynomial yet (`cbrt`, f64 `erf`, `erfc`, `erf_inv`, float
//! `rem`, f64 `pow`, `nextafter`, the gamma family, `zeta`, the scaled
//! Bessel functions and `regularized_incomplete_beta`) and the f16/bf16
//! conversions; under `Math::Libm` (`CpuBackend::with_exact_math`) also
//! every function otherwise approximated inline (`exp`, `sin`, `tanh`,
//! f32 `pow`, `atan2`, ...).
//!
//! They compute exactly what the reference interpreter computes (Rust's
//! libm; `erf`, `erfc`, `erf_inv` by the interpreter's f64 algorithms), so
//! kernels using them are bit-identical to it. Every helper is a safe
//! `extern "C"` function with plain scalar arguments (16-bit values travel
//! zero-extended in 32 bits); a `fn` item lives for the whole program, so
//! its address stays valid for every compiled kernel.

use cranelift_codegen::ir::types::{F32, F64, I32};
use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, Type, Value};
use half::{bf16, f16};
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::DType;

use super::emit::Em;

// The interpreter's own scalar algorithms: calling them keeps kernels
// bit-identical to it.
use jaxon_ir::interp::ops::{
    bessel_i0e_f64, bessel_i1e_f64, betainc_f64, digamma_f64, erf_f64, erf_inv_f64, erfc_f64,
    igamma_f64, igamma_grad_a_f64, igammac_f64, lgamma_f64, next_bf16, next_f16, next_f32,
    next_f64, polygamma_f64, random_gamma_grad_f64, zeta_f64,
};

macro_rules! helpers1 {
    ($($name:ident: $t:ty => $e:expr;)*) => {$(
        extern "C" fn $name(x: $t) -> $t {
            let f: fn($t) -> $t = $e;
            f(x)
        }
    )*};
}
helpers1! {
    cbrt32: f32 => f32::cbrt; cbrt64: f64 => f64::cbrt;
    erf32: f32 => |x| erf_f64(x as f64) as f32; erf64: f64 => erf_f64;
    erfc32: f32 => |x| erfc_f64(x as f64) as f32; erfc64: f64 => erfc_f64;
    erfinv32: f32 => |x| erf_inv_f64(x as f64) as f32; erfinv64: f64 => erf_inv_f64;
    lgamma32: f32 => |x| lgamma_f64(x as f64) as f32; lgamma64: f64 => lgamma_f64;
    digamma32: f32 => |x| digamma_f64(x as f64) as f32; digamma64: f64 => digamma_f64;
    i0e32: f32 => |x| bessel_i0e_f64(x as f64) as f32; i0e64: f64 => bessel_i0e_f64;
    i1e32: f32 => |x| bessel_i1e_f64(x as f64) as f32; i1e64: f64 => bessel_i1e_f64;
}

// The functions kernels approximate inline, as the interpreter computes
// them (`interp/ops/elementwise.rs`): for `Math::Libm`.
helpers1! {
    exp32: f32 => f32::exp; exp64: f64 => f64::exp;
    exp2_32: f32 => f32::exp2; exp2_64: f64 => f64::exp2;
    expm1_32: f32 => f32::exp_m1; expm1_64: f64 => f64::exp_m1;
    log32: f32 => f32::ln; log64: f64 => f64::ln;
    log1p32: f32 => f32::ln_1p; log1p64: f64 => f64::ln_1p;
    tanh32: f32 => f32::tanh; tanh64: f64 => f64::tanh;
    logistic32: f32 => |x| 1.0 / (1.0 + (-x).exp());
    logistic64: f64 => |x| 1.0 / (1.0 + (-x).exp());
    sin32: f32 => f32::sin; sin64: f64 => f64::sin;
    cos32: f32 => f32::cos; cos64: f64 => f64::cos;
    tan32: f32 => f32::tan; tan64: f64 => f64::tan;
    asin32: f32 => f32::asin; asin64: f64 => f64::asin;
    acos32: f32 => f32::acos; acos64: f64 => f64::acos;
    atan32: f32 => f32::atan; atan64: f64 => f64::atan;
    sinh32: f32 => f32::sinh; sinh64: f64 => f64::sinh;
    cosh32: f32 => f32::cosh; cosh64: f64 => f64::cosh;
    asinh32: f32 => f32::asinh; asinh64: f64 => f64::asinh;
    acosh32: f32 => f32::acosh; acosh64: f64 => f64::acosh;
    atanh32: f32 => f32::atanh; atanh64: f64 => f64::atanh;
}

macro_rules! helpers2 {
    ($($name:ident: $t:ty => $e:expr;)*) => {$(
        extern "C" fn $name(x: $t, y: $t) -> $t {
            let f: fn($t, $t) -> $t = $e;
            f(x, y)
        }
    )*};
}
helpers2! {
    rem32: f32 => |x, y| x % y; rem64: f64 => |x, y| x % y;
    pow32: f32 => f32::powf; pow64: f64 => f64::powf;
    next32: f32 => next_f32; next64: f64 => next_f64;
    next_f16_32: f32 => |x, y| next_f16(f16::from_f32(x), f16::from_f32(y)).to_f32();
    next_bf16_32: f32 => |x, y| next_bf16(bf16::from_f32(x), bf16::from_f32(y)).to_f32();
    igamma32: f32 => |a, x| igamma_f64(a as f64, x as f64) as f32; igamma64: f64 => igamma_f64;
    igammac32: f32 => |a, x| igammac_f64(a as f64, x as f64) as f32; igammac64: f64 => igammac_f64;
    igamma_grad_a32: f32 => |a, x| igamma_grad_a_f64(a as f64, x as f64) as f32;
    igamma_grad_a64: f64 => igamma_grad_a_f64;
    random_gamma_grad32: f32 => |a, x| random_gamma_grad_f64(a as f64, x as f64) as f32;
    random_gamma_grad64: f64 => random_gamma_grad_f64;
    polygamma32: f32 => |n, x| polygamma_f64(n as f64, x as f64) as f32;
    polygamma64: f64 => polygamma_f64;
    zeta32: f32 => |s, q| zeta_f64(s as f64, q as f64) as f32; zeta64: f64 => zeta_f64;
    atan2_32: f32 => f32::atan2; atan2_64: f64 => f64::atan2;
}

extern "C" fn betainc32(a: f32, b: f32, x: f32) -> f32 {
    betainc_f64(a as f64, b as f64, x as f64) as f32
}
extern "C" fn betainc64(a: f64, b: f64, x: f64) -> f64 {
    betainc_f64(a, b, x)
}

extern "C" fn f64_to_f16_f32(x: f64) -> f32 {
    f16::from_f64(x).to_f32()
}
extern "C" fn f64_to_bf16_f32(x: f64) -> f32 {
    bf16::from_f64(x).to_f32()
}

/// Emits a call of the helper at `addr` (scalar code only).
fn call(em: &mut Em, addr: usize, params: &[Type], ret: Type, args: &[Value]) -> Value {
    let mut sig = Signature::new(em.b.func.signature.call_conv);
    sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
    sig.returns.push(AbiParam::new(ret));
    let sref = em.b.import_signature(sig);
    let callee =
        em.b.ins()
            .iconst(cranelift_codegen::ir::types::I64, addr as i64);
    let inst = em.b.ins().call_indirect(sref, callee, args);
    em.b.inst_results(inst)[0]
}

/// The helper computing `op` as the interpreter does: the functions
/// without inline code, and (for `Math::Libm`) those with it.
fn unary_addr(op: UnaryOp, dt: DType) -> Option<usize> {
    let d = dt == DType::F64;
    let (a, b): (extern "C" fn(f32) -> f32, extern "C" fn(f64) -> f64) = match op {
        UnaryOp::Cbrt => (cbrt32, cbrt64),
        UnaryOp::Erf => (erf32, erf64),
        UnaryOp::Erfc => (erfc32, erfc64),
        UnaryOp::ErfInv => (erfinv32, erfinv64),
        UnaryOp::Lgamma => (lgamma32, lgamma64),
        UnaryOp::Digamma => (digamma32, digamma64),
        UnaryOp::BesselI0e => (i0e32, i0e64),
        UnaryOp::BesselI1e => (i1e32, i1e64),
        UnaryOp::Exp => (exp32, exp64),
        UnaryOp::Exp2 => (exp2_32, exp2_64),
        UnaryOp::Expm1 => (expm1_32, expm1_64),
        UnaryOp::Log => (log32, log64),
        UnaryOp::Log1p => (log1p32, log1p64),
        UnaryOp::Tanh => (tanh32, tanh64),
        UnaryOp::Logistic => (logistic32, logistic64),
        UnaryOp::Sin => (sin32, sin64),
        UnaryOp::Cos => (cos32, cos64),
        UnaryOp::Tan => (tan32, tan64),
        UnaryOp::Asin => (asin32, asin64),
        UnaryOp::Acos => (acos32, acos64),
        UnaryOp::Atan => (atan32, atan64),
        UnaryOp::Sinh => (sinh32, sinh64),
        UnaryOp::Cosh => (cosh32, cosh64),
        UnaryOp::Asinh => (asinh32, asinh64),
        UnaryOp::Acosh => (acosh32, acosh64),
        UnaryOp::Atanh => (atanh32, atanh64),
        UnaryOp::Neg
        | UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::IsFinite
        | UnaryOp::Abs
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt
        | UnaryOp::Square
        | UnaryOp::Copy
        | UnaryOp::StopGradient
        | UnaryOp::Not
        | UnaryOp::PopulationCount
        | UnaryOp::Clz => return None,
    };
    Some(if d { b as usize } else { a as usize })
}

fn binary_addr(op: BinaryOp, dt: DType) -> Option<usize> {
    let d = dt == DType::F64;
    let (a, b): (
        extern "C" fn(f32, f32) -> f32,
        extern "C" fn(f64, f64) -> f64,
    ) = match op {
        BinaryOp::Rem => (rem32, rem64),
        BinaryOp::Pow => (pow32, pow64),
        BinaryOp::Nextafter => (next32, next64),
        BinaryOp::Igamma => (igamma32, igamma64),
        BinaryOp::Igammac => (igammac32, igammac64),
        BinaryOp::IgammaGradA => (igamma_grad_a32, igamma_grad_a64),
        BinaryOp::RandomGammaGrad => (random_gamma_grad32, random_gamma_grad64),
        BinaryOp::Polygamma => (polygamma32, polygamma64),
        BinaryOp::Zeta => (zeta32, zeta64),
        BinaryOp::Atan2 => (atan2_32, atan2_64),
        _ => return None,
    };
    Some(if d { b as usize } else { a as usize })
}

fn fty(dt: DType) -> Type {
    if dt == DType::F64 {
        F64
    } else {
        F32
    }
}

/// `op(x)` through a helper, for f32/f64 values of `dt`.
pub(crate) fn unary(em: &mut Em, op: UnaryOp, dt: DType, x: Value) -> Option<Value> {
    let addr = unary_addr(op, dt)?;
    let t = fty(dt);
    Some(call(em, addr, &[t], t, &[x]))
}

/// `op(x, y)` through a helper, for f32/f64 values of `dt`.
pub(crate) fn binary(em: &mut Em, op: BinaryOp, dt: DType, x: Value, y: Value) -> Option<Value> {
    let addr = binary_addr(op, dt)?;
    let t = fty(dt);
    Some(call(em, addr, &[t, t], t, &[x, y]))
}

/// `regularized_incomplete_beta(a, b, x)` through a helper, for f32/f64
/// values of `dt`.
pub(crate) fn betainc(em: &mut Em, dt: DType, a: Value, b: Value, x: Value) -> Value {
    let addr = if dt == DType::F64 {
        betainc64 as extern "C" fn(f64, f64, f64) -> f64 as usize
    } else {
        betainc32 as extern "C" fn(f32, f32, f32) -> f32 as usize
    };
    let t = fty(dt);
    call(em, addr, &[t, t, t], t, &[a, b, x])
}

/// `nextafter` on the f16/bf16 grid of f32 values holding `dt` numbers.
pub(crate) fn nextafter_half(em: &mut Em, dt: DType, x: Value, y: Value) -> Value {
    let f: extern "C" fn(f32, f32) -> f32 = if dt == DType::BF16 {
        next_bf16_32
    } else {
        next_f16_32
    };
    call(em, f as usize, &[F32, F32], F32, &[x, y])
}

/// The bf16 bits (in an `I32`) of an f32 value, rounded to nearest even
/// (NaNs quieted), exactly as `half::bf16::from_f32`: inline integer code.
fn bf16_bits(em: &mut Em, x: Value) -> Value {
    let flags = cranelift_codegen::ir::MemFlagsData::new();
    let b = em.b.ins().bitcast(I32, flags, x);
    let hi = em.b.ins().ushr_imm_s(b, 16);
    let lsb = em.b.ins().band_imm_s(hi, 1);
    let r = em.b.ins().iadd_imm_s(b, 0x7FFF);
    let r = em.b.ins().iadd(r, lsb);
    let r = em.b.ins().ushr_imm_s(r, 16);
    let quiet = em.b.ins().bor_imm_s(hi, 0x40);
    let nan =
        em.b.ins()
            .fcmp(cranelift_codegen::ir::condcodes::FloatCC::Unordered, x, x);
    em.b.ins().select(nan, quiet, r)
}

/// The f32 value of bf16 bits held in the low half of an `I32` (NaNs
/// quieted, as `half::bf16::to_f32`).
fn bf16_value(em: &mut Em, bits: Value) -> Value {
    use cranelift_codegen::ir::condcodes::IntCC;
    let mag = em.b.ins().band_imm_s(bits, 0x7FFF);
    let is_nan =
        em.b.ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThan, mag, 0x7F80);
    let quiet = em.b.ins().bor_imm_s(bits, 0x40);
    let bits = em.b.ins().select(is_nan, quiet, bits);
    let w = em.b.ins().ishl_imm_s(bits, 16);
    em.b.ins()
        .bitcast(F32, cranelift_codegen::ir::MemFlagsData::new(), w)
}

/// The f16 bits (in an `I32`) of an f32 value, rounded to nearest even,
/// exactly as `half::f16::from_f32` (NaN payloads kept and quieted):
/// inline integer code after F. Giesen's `float_to_half_fast3_rtne`.
fn f16_bits(em: &mut Em, x: Value) -> Value {
    use cranelift_codegen::ir::condcodes::IntCC;
    let flags = cranelift_codegen::ir::MemFlagsData::new();
    let b = em.b.ins().bitcast(I32, flags, x);
    let sign = em.b.ins().band_imm_s(b, 0x8000_0000u32 as i32 as i64);
    let f = em.b.ins().bxor(b, sign);
    // Inf and NaN.
    let man = em.b.ins().band_imm_s(b, 0x007F_FFFF);
    let man_hi = em.b.ins().ushr_imm_s(man, 13);
    let has_man = em.b.ins().icmp_imm_s(IntCC::NotEqual, man, 0);
    let q = em.b.ins().iconst(I32, 0x0200);
    let z = em.b.ins().iconst(I32, 0);
    let nan_bit = em.b.ins().select(has_man, q, z);
    let naninf = em.b.ins().bor_imm_s(man_hi, 0x7C00);
    let naninf = em.b.ins().bor(naninf, nan_bit);
    let is_naninf =
        em.b.ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, f, 0x7F80_0000);
    // Overflow to infinity.
    let is_ovf =
        em.b.ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, f, 143 << 23);
    let inf = em.b.ins().iconst(I32, 0x7C00);
    // Subnormal results: the float adder rounds (to nearest even).
    let is_sub = em.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, f, 113 << 23);
    let fv = em.b.ins().bitcast(F32, flags, f);
    let magic = em.b.ins().f32const(0.5);
    let fv = em.b.ins().fadd(fv, magic);
    let sub = em.b.ins().bitcast(I32, flags, fv);
    let sub = em.b.ins().iadd_imm_s(sub, -(126i64 << 23));
    // Normal results.
    let odd = em.b.ins().ushr_imm_s(f, 13);
    let odd = em.b.ins().band_imm_s(odd, 1);
    let norm = em.b.ins().iadd_imm_s(f, (-112i64 << 23) + 0xFFF);
    let norm = em.b.ins().iadd(norm, odd);
    let norm = em.b.ins().ushr_imm_s(norm, 13);
    let r = em.b.ins().select(is_sub, sub, norm);
    let r = em.b.ins().select(is_ovf, inf, r);
    let r = em.b.ins().select(is_naninf, naninf, r);
    let s16 = em.b.ins().ushr_imm_s(sign, 16);
    em.b.ins().bor(r, s16)
}

/// The f32 value of f16 bits held in the low half of an `I32`, exactly as
/// `half::f16::to_f32` (NaNs quieted).
fn f16_value(em: &mut Em, h: Value) -> Value {
    use cranelift_codegen::ir::condcodes::IntCC;
    let flags = cranelift_codegen::ir::MemFlagsData::new();
    let sign = em.b.ins().band_imm_s(h, 0x8000);
    let sign = em.b.ins().ishl_imm_s(sign, 16);
    let e = em.b.ins().band_imm_s(h, 0x7FFF);
    let o = em.b.ins().ishl_imm_s(e, 13);
    let of = em.b.ins().bitcast(F32, flags, o);
    // Rescale the exponent (exact, subnormals included).
    let scale = em.b.ins().f32const(f32::from_bits((127 + 112) << 23));
    let v = em.b.ins().fmul(of, scale);
    let vb = em.b.ins().bitcast(I32, flags, v);
    let inf = em.b.ins().bor_imm_s(vb, 0x7F80_0000);
    let nan = em.b.ins().bor_imm_s(vb, 0x7FC0_0000);
    let is_inf = em.b.ins().icmp_imm_s(IntCC::Equal, e, 0x7C00);
    let is_nan = em.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, e, 0x7C00);
    let r = em.b.ins().select(is_inf, inf, vb);
    let r = em.b.ins().select(is_nan, nan, r);
    let r = em.b.ins().bor(r, sign);
    em.b.ins().bitcast(F32, flags, r)
}

/// Rounds an f32 value to the precision of the half type `dt`.
pub(crate) fn round_half(em: &mut Em, dt: DType, x: Value) -> Value {
    if dt == DType::BF16 {
        let b = bf16_bits(em, x);
        return bf16_value(em, b);
    }
    let b = f16_bits(em, x);
    f16_value(em, b)
}

/// An f64 value rounded once to the half type `dt`, as an f32.
pub(crate) fn f64_to_half(em: &mut Em, dt: DType, x: Value) -> Value {
    let f: extern "C" fn(f64) -> f32 = if dt == DType::BF16 {
        f64_to_bf16_f32
    } else {
        f64_to_f16_f32
    };
    call(em, f as usize, &[F64], F32, &[x])
}

/// The f32 value of 16-bit storage `bits` (an `I16`) of half type `dt`.
pub(crate) fn load_half(em: &mut Em, dt: DType, bits: Value) -> Value {
    let w = em.b.ins().uextend(I32, bits);
    if dt == DType::BF16 {
        return bf16_value(em, w);
    }
    f16_value(em, w)
}

/// The 16-bit storage (an `I16`) of the f32 value `x` rounded to `dt`.
pub(crate) fn store_half(em: &mut Em, dt: DType, x: Value) -> Value {
    if dt == DType::BF16 {
        let b = bf16_bits(em, x);
        return em.b.ins().ireduce(cranelift_codegen::ir::types::I16, b);
    }
    let w = f16_bits(em, x);
    em.b.ins().ireduce(cranelift_codegen::ir::types::I16, w)
}
