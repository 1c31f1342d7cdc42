//! Inline vectorised approximations of transcendental functions: `exp`,
//! `expm1`, `log`, `log1p`, `tanh`, `logistic`, for f32 and f64, scalar or
//! SIMD (same code through [`Em`]).
//!
//! Method: `exp`/`expm1` reduce `x = n ln2 + r` with `|r| <= ln2/2` (the
//! rounding of `x/ln2` is done with the 1.5·2^p "magic number" trick, so no
//! float↔int conversion instructions are needed), evaluate a Taylor
//! polynomial of `expm1(r)` with fused multiply-adds, and scale by `2^n`
//! built in the exponent bits (split in two factors so that subnormal
//! results round once). `log` splits `x = m 2^e` with `m` in
//! `[sqrt(1/2), sqrt(2))` and sums the `atanh` series of `s = (m-1)/(m+1)`.
//! `log1p` uses Goldberg's `log(u) x / (u - 1)` correction, f64 `tanh` is
//! `expm1(2|x|) / (expm1(2|x|) + 2)` with the sign copied back (f32 `tanh`
//! is a rational function of `x²`), and
//! `logistic` evaluates `1/(1+e^-x)` or `e^x/(1+e^x)` from `e = exp(-|x|)`.
//!
//! Accuracy (max ulp versus an f64/f128-accurate reference over the whole
//! range, special values included) is measured by `tests/math_ulp.rs` and
//! recorded in the crate docs.

use super::emit::Em;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use jaxon_ir::DType;

/// Per-precision constants.
struct Consts {
    mant_bits: i64,
    bias: i64,
    /// 1.5 · 2^mant_bits: adding it rounds to an integer in the low bits.
    magic: f64,
    ln2_hi: f64,
    ln2_lo: f64,
    /// `exp` input clamp: below gives 0, above gives inf.
    exp_lo: f64,
    exp_hi: f64,
    /// `ln(MAX)`: above it `exp`/`expm1` overflow.
    overflow: f64,
    /// Below it `expm1` is -1.
    expm1_lo: f64,
    /// Above it `tanh` is 1.
    tanh_hi: f64,
    /// Taylor degree of `expm1(r)`.
    expm1_degree: usize,
    /// Number of `atanh` series terms of `log`.
    log_terms: usize,
    min_normal: f64,
}

fn consts(dt: DType) -> Consts {
    if dt == DType::F64 {
        Consts {
            mant_bits: 52,
            bias: 1023,
            magic: 6755399441055744.0,
            ln2_hi: 0.6931471803691238,
            ln2_lo: 1.9082149292705877e-10,
            exp_lo: -746.0,
            exp_hi: 710.0,
            overflow: 709.782_712_893_384,
            expm1_lo: -40.0,
            tanh_hi: 19.1,
            expm1_degree: 14,
            log_terms: 12,
            min_normal: f64::MIN_POSITIVE,
        }
    } else {
        Consts {
            mant_bits: 23,
            bias: 127,
            magic: 12582912.0,
            ln2_hi: 0.693_145_751_953_125,
            ln2_lo: 1.4286068e-6,
            exp_lo: -104.0,
            exp_hi: 89.0,
            overflow: 88.722_839,
            expm1_lo: -18.0,
            tanh_hi: 9.1,
            expm1_degree: 9,
            log_terms: 6,
            min_normal: f32::MIN_POSITIVE as f64,
        }
    }
}

/// `2^n` for an integer `n` (held as an integer of the float's width) in
/// the normal exponent range.
fn pow2(em: &mut Em, dt: DType, n: Value) -> Value {
    let c = consts(dt);
    let bias = em.iconst_for(dt, c.bias);
    let e = em.b.ins().iadd(n, bias);
    let shift =
        em.b.ins()
            .iconst(cranelift_codegen::ir::types::I32, c.mant_bits);
    let bits = em.b.ins().ishl(e, shift);
    em.int_bits_as_float(dt, bits)
}

/// Reduces `x = n ln2 + r`; returns `(n as integer, n as float, r)`.
fn reduce_ln2(em: &mut Em, dt: DType, x: Value) -> (Value, Value, Value) {
    let c = consts(dt);
    let log2e = em.fconst(dt, std::f64::consts::LOG2_E);
    let magic = em.fconst(dt, c.magic);
    let t = em.fma(x, log2e, magic);
    let nf = em.b.ins().fsub(t, magic);
    let tb = em.as_int_bits(dt, t);
    let mb = em.as_int_bits(dt, magic);
    let n = em.b.ins().isub(tb, mb);
    let neg_hi = em.fconst(dt, -c.ln2_hi);
    let neg_lo = em.fconst(dt, -c.ln2_lo);
    let r = em.fma(nf, neg_hi, x);
    let r = em.fma(nf, neg_lo, r);
    (n, nf, r)
}

/// `expm1(r)` for `|r| <= ln2/2`: Taylor series `r + r^2/2! + ...`.
fn expm1_poly(em: &mut Em, dt: DType, r: Value) -> Value {
    expm1_poly_deg(em, dt, r, consts(dt).expm1_degree)
}

/// [`expm1_poly`] to degree `deg`.
fn expm1_poly_deg(em: &mut Em, dt: DType, r: Value, deg: usize) -> Value {
    // expm1(r) = r * (1 + r/2! + r^2/3! + ...)
    let mut coef = Vec::with_capacity(deg);
    let mut fact = 1.0f64;
    for k in 1..=deg {
        fact *= k as f64;
        coef.push(1.0 / fact);
    }
    let p = em.poly(dt, r, &coef);
    em.b.ins().fmul(r, p)
}

/// `x` clamped to `[lo, hi]`, NaN kept (compare and select: cheaper than
/// `fmax`/`fmin`, whose exact NaN and signed-zero rules take several
/// instructions on x86 and are not needed here).
fn clamp(em: &mut Em, dt: DType, x: Value, lo: f64, hi: f64) -> Value {
    let lo = em.fconst(dt, lo);
    let hi = em.fconst(dt, hi);
    let below = em.fcmp(FloatCC::LessThan, x, lo);
    let x = em.sel(below, lo, x);
    let above = em.fcmp(FloatCC::GreaterThan, x, hi);
    em.sel(above, hi, x)
}

/// `e^x`.
pub(crate) fn exp(em: &mut Em, dt: DType, x: Value) -> Value {
    let c = consts(dt);
    let xc = clamp(em, dt, x, c.exp_lo, c.exp_hi);
    let (n, _, r) = reduce_ln2(em, dt, xc);
    let y = if dt == DType::F64 {
        let p = expm1_poly_deg(em, dt, r, c.expm1_degree);
        let one = em.fconst(dt, 1.0);
        em.b.ins().fadd(p, one)
    } else {
        em.poly(dt, r, &EXP_F32)
    };
    scale_by_pow2(em, dt, y, n)
}

/// `e^r` on `|r| <= ln2/2` for f32: our minimax fit of
/// `1 + r + r²(c2 + c3 r + ...)`, 0.05 ulp before rounding; six fused
/// multiply-adds.
const EXP_F32: [f64; 7] = [
    1.0,
    1.0,
    0.499_999_940_395_355_2,
    0.166_665_211_319_923_4,
    0.041_668_385_267_257_69,
    0.008_368_711_918_592_453,
    0.001_381_473_499_350_249_8,
];

/// `y · 2^n`, rounding once even for subnormal results.
fn scale_by_pow2(em: &mut Em, dt: DType, y: Value, n: Value) -> Value {
    // 2^n = 2^n1 · 2^n2 with n1 = floor(n/2), computed with logical shifts
    // on a biased value (SSE has no 64-bit arithmetic shift).
    let off = em.iconst_for(dt, 4096);
    let biased = em.b.ins().iadd(n, off);
    let half = em.b.ins().ushr_imm_s(biased, 1);
    let off2 = em.iconst_for(dt, 2048);
    let n1 = em.b.ins().isub(half, off2);
    let n2 = em.b.ins().isub(n, n1);
    let s1 = pow2(em, dt, n1);
    let s2 = pow2(em, dt, n2);
    let y = em.b.ins().fmul(y, s1);
    em.b.ins().fmul(y, s2)
}

/// `e^x - 1`, accurate near 0.
pub(crate) fn expm1(em: &mut Em, dt: DType, x: Value) -> Value {
    let c = consts(dt);
    let xc = clamp(em, dt, x, c.expm1_lo, c.exp_hi);
    let (n, nf, r) = reduce_ln2(em, dt, xc);
    let p = expm1_poly(em, dt, r);
    // 2^n (p + 1) - 1 = 2 fma(2^(n-1), p, 2^(n-1) - 1/2): the halved scale
    // stays finite at n = 128 (f32) / 1024 (f64), and doubling is exact.
    let one_i = em.iconst_for(dt, 1);
    let nm1 = em.b.ins().isub(n, one_i);
    let s = pow2(em, dt, nm1);
    let half = em.fconst(dt, 0.5);
    let sm = em.b.ins().fsub(s, half);
    let y = em.fma(s, p, sm);
    let y = em.b.ins().fadd(y, y);
    // n = 0 keeps p itself (so that expm1(-0) = -0).
    let zero = em.fconst(dt, 0.0);
    let n0 = em.fcmp(FloatCC::Equal, nf, zero);
    let y = em.sel(n0, p, y);
    let ovf = em.fconst(dt, c.overflow);
    let big = em.fcmp(FloatCC::GreaterThan, x, ovf);
    let inf = em.fconst(dt, f64::INFINITY);
    em.sel(big, inf, y)
}

/// `ln x`.
pub(crate) fn log(em: &mut Em, dt: DType, x: Value) -> Value {
    let c = consts(dt);
    // Subnormals: scale into the normal range first.
    let scale_pow = c.mant_bits + 2;
    let tiny_lim = em.fconst(dt, c.min_normal);
    let tiny = em.fcmp(FloatCC::LessThan, x, tiny_lim);
    let scale = em.fconst(dt, (2.0f64).powi(scale_pow as i32));
    let xs = em.b.ins().fmul(x, scale);
    let xv = em.sel(tiny, xs, x);
    let zero_e = em.iconst_for(dt, 0);
    let scaled_e = em.iconst_for(dt, scale_pow);
    let e_adj = em.sel(tiny, scaled_e, zero_e);
    // x = m 2^e, m in [1, 2)
    let bits = em.as_int_bits(dt, xv);
    let sh =
        em.b.ins()
            .iconst(cranelift_codegen::ir::types::I32, c.mant_bits);
    let e_raw = em.b.ins().ushr(bits, sh);
    let bias = em.iconst_for(dt, c.bias);
    let e = em.b.ins().isub(e_raw, bias);
    let e = em.b.ins().isub(e, e_adj);
    let mant_mask = em.iconst_for(dt, (1i64 << c.mant_bits) - 1);
    let mb = em.b.ins().band(bits, mant_mask);
    let one_bits = em.iconst_for(dt, c.bias << c.mant_bits);
    let mb = em.b.ins().bor(mb, one_bits);
    let m = em.int_bits_as_float(dt, mb);
    // m >= sqrt(2): halve m, bump e.
    let sqrt2 = em.fconst(dt, std::f64::consts::SQRT_2);
    let big = em.fcmp(FloatCC::GreaterThanOrEqual, m, sqrt2);
    let half = em.fconst(dt, 0.5);
    let mh = em.b.ins().fmul(m, half);
    let m = em.sel(big, mh, m);
    let one_i = em.iconst_for(dt, 1);
    let zero_i = em.iconst_for(dt, 0);
    let inc = em.sel(big, one_i, zero_i);
    let e = em.b.ins().iadd(e, inc);
    // e as float via the magic number (no int->float instruction needed).
    let magic = em.fconst(dt, c.magic);
    let magic_bits = em.as_int_bits(dt, magic);
    let eb = em.b.ins().iadd(e, magic_bits);
    let ef = em.int_bits_as_float(dt, eb);
    let ef = em.b.ins().fsub(ef, magic);
    // log(m) = 2 atanh(s), s = (m-1)/(m+1)
    let one = em.fconst(dt, 1.0);
    let num = em.b.ins().fsub(m, one);
    let den = em.b.ins().fadd(m, one);
    let s = em.b.ins().fdiv(num, den);
    let s2 = em.b.ins().fmul(s, s);
    let coef: Vec<f64> = (0..c.log_terms).map(|k| 2.0 / (2 * k + 1) as f64).collect();
    let p = em.poly(dt, s2, &coef[1..]);
    // 2s + s^3 * p(s^2)
    let s3 = em.b.ins().fmul(s2, s);
    let two = em.fconst(dt, 2.0);
    let lead = em.b.ins().fmul(s, two);
    let lm = em.fma(s3, p, lead);
    let ln2_lo = em.fconst(dt, c.ln2_lo);
    let ln2_hi = em.fconst(dt, c.ln2_hi);
    let t = em.fma(ef, ln2_lo, lm);
    let y = em.fma(ef, ln2_hi, t);
    // Special values: x < 0 or NaN -> NaN, 0 -> -inf, inf -> inf.
    let zero = em.fconst(dt, 0.0);
    let is_zero = em.fcmp(FloatCC::Equal, x, zero);
    let ninf = em.fconst(dt, f64::NEG_INFINITY);
    let y = em.sel(is_zero, ninf, y);
    let inf = em.fconst(dt, f64::INFINITY);
    let is_inf = em.fcmp(FloatCC::Equal, x, inf);
    let y = em.sel(is_inf, inf, y);
    let neg = em.fcmp(FloatCC::LessThan, x, zero);
    let nan_in = em.fcmp(FloatCC::NotEqual, x, x);
    let bad = em.b.ins().bor(neg, nan_in);
    let nan = em.fconst(dt, f64::NAN);
    em.sel(bad, nan, y)
}

/// `ln(1 + x)`, accurate near 0.
pub(crate) fn log1p(em: &mut Em, dt: DType, x: Value) -> Value {
    let one = em.fconst(dt, 1.0);
    let u = em.b.ins().fadd(x, one);
    let lu = log(em, dt, u);
    let um1 = em.b.ins().fsub(u, one);
    // log(u) * x / (u - 1) corrects the rounding of 1 + x.
    let q = em.b.ins().fdiv(x, um1);
    let y = em.b.ins().fmul(lu, q);
    let exact = em.fcmp(FloatCC::Equal, u, one);
    let y = em.sel(exact, x, y);
    let inf = em.fconst(dt, f64::INFINITY);
    let is_inf = em.fcmp(FloatCC::Equal, x, inf);
    em.sel(is_inf, inf, y)
}

/// `tanh x`.
pub(crate) fn tanh(em: &mut Em, dt: DType, x: Value) -> Value {
    if dt != DType::F64 {
        return tanh_rational_f32(em, dt, x);
    }
    let c = consts(dt);
    let a = em.b.ins().fabs(x);
    let two = em.fconst(dt, 2.0);
    let a2 = em.b.ins().fmul(a, two);
    let m = expm1(em, dt, a2);
    let den = em.b.ins().fadd(m, two);
    let t = em.b.ins().fdiv(m, den);
    let hi = em.fconst(dt, c.tanh_hi);
    let sat = em.fcmp(FloatCC::GreaterThan, a, hi);
    let one = em.fconst(dt, 1.0);
    let t = em.sel(sat, one, t);
    em.copysign(dt, t, x)
}

/// Numerator `P(t)`, `t = x²`, of the f32 `tanh` rational (our own
/// linearised-Remez fit of `tanh(x)/x` on `[0, 9.1]`, relative error 0.39 ulp
/// before f32 rounding).
const TANH_F32_P: [f64; 5] = [
    1.0,
    0.133_744_418_621_063_23,
    0.003_487_771_144_136_786_5,
    2.048_048_736_469_354_5e-5,
    1.317_649_456_211_711_4e-8,
];
/// Denominator `Q(t)` of the f32 `tanh` rational.
const TANH_F32_Q: [f64; 5] = [
    1.0,
    0.467_077_553_272_247_3,
    0.025_847_239_419_817_924,
    3.272_852_918_598_801e-4,
    7.703_636_697_442_562e-7,
];

/// f32 `tanh x` as `x P(x²) / Q(x²)`: one division and eight fused
/// multiply-adds instead of an `expm1`. All coefficients are positive, so
/// nothing cancels; the f32 Horner rounding makes the error about 5 ulp
/// near `|x| = 9`, where the result is within 1e-7 of 1 (XLA's f32 `tanh`
/// is a rational of the same kind).
fn tanh_rational_f32(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    let hi = em.fconst(dt, 9.1);
    let above = em.fcmp(FloatCC::GreaterThan, a, hi);
    let a = em.sel(above, hi, a);
    let t = em.b.ins().fmul(a, a);
    let p = em.poly(dt, t, &TANH_F32_P);
    let q = em.poly(dt, t, &TANH_F32_Q);
    let num = em.b.ins().fmul(a, p);
    let y = em.b.ins().fdiv(num, q);
    // Past |x| = 9.01 tanh rounds to 1; never let the rational exceed it.
    let one = em.fconst(dt, 1.0);
    let over = em.fcmp(FloatCC::GreaterThan, y, one);
    let y = em.sel(over, one, y);
    em.copysign(dt, y, x)
}

/// `1 / (1 + e^-x)`.
pub(crate) fn logistic(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    let na = em.b.ins().fneg(a);
    let e = exp(em, dt, na);
    let one = em.fconst(dt, 1.0);
    let den = em.b.ins().fadd(one, e);
    let pos = em.b.ins().fdiv(one, den);
    let neg = em.b.ins().fdiv(e, den);
    let zero = em.fconst(dt, 0.0);
    let is_pos = em.fcmp(FloatCC::GreaterThanOrEqual, x, zero);
    let y = em.sel(is_pos, pos, neg);
    // NaN fails both comparisons above; keep it NaN.
    let is_nan = em.fcmp(FloatCC::NotEqual, x, x);
    em.sel(is_nan, x, y)
}

/// `sin x` (`cos_shift = 0`) or `cos x` (`cos_shift = 1`, a quarter turn).
///
/// Reduction `x = j π/2 + r`, `|r| <= π/4`, with a three-part Cody–Waite
/// `π/2` and fused multiply-adds: accurate while `|x|` stays below about
/// 2^17 (f32) / 2^30 (f64); beyond, results stay in [-1, 1] but lose
/// accuracy (no Payne–Hanek reduction yet).
fn sin_cos(em: &mut Em, dt: DType, x: Value, cos_shift: i64) -> Value {
    if dt != DType::F64 {
        return sin_cos_f32(em, dt, x, cos_shift == 1);
    }
    let (c1, c2, c3, sin_terms, cos_terms) = if dt == DType::F64 {
        (
            std::f64::consts::FRAC_PI_2,
            6.123233995736766e-17,
            -1.4973849048591698e-33,
            10,
            11,
        )
    } else {
        (
            1.5707963705062866,
            -4.371138828673793e-8,
            -1.7151245100058819e-15,
            6,
            6,
        )
    };
    let c = consts(dt);
    let two_over_pi = em.fconst(dt, std::f64::consts::FRAC_2_PI);
    let magic = em.fconst(dt, c.magic);
    let t = em.fma(x, two_over_pi, magic);
    let jf = em.b.ins().fsub(t, magic);
    let tb = em.as_int_bits(dt, t);
    let mb = em.as_int_bits(dt, magic);
    let q = em.b.ins().isub(tb, mb);
    let q = if cos_shift == 0 {
        q
    } else {
        let shift = em.iconst_for(dt, cos_shift);
        em.b.ins().iadd(q, shift)
    };
    let n1 = em.fconst(dt, -c1);
    let n2 = em.fconst(dt, -c2);
    let n3 = em.fconst(dt, -c3);
    let r = em.fma(jf, n1, x);
    let r = em.fma(jf, n2, r);
    let r = em.fma(jf, n3, r);
    let r2 = em.b.ins().fmul(r, r);
    // sin r = r + r^3 S(r^2); cos r = 1 + r^2 C(r^2): Taylor for f64, our
    // own minimax fits on |r| <= pi/4 for f32 (0.06 and 0.001 ulp).
    let mut sc = Vec::new();
    let mut fact = 1.0f64;
    for k in 1..sin_terms {
        fact *= ((2 * k) * (2 * k + 1)) as f64;
        sc.push(if k % 2 == 1 { -1.0 } else { 1.0 } / fact);
    }
    if dt != DType::F64 {
        sc = vec![
            -0.166_666_552_424_430_85,
            0.008_332_156_576_216_22,
            -1.951_464_364_537_969_2e-4,
        ];
    }
    let s = em.poly(dt, r2, &sc);
    let r3 = em.b.ins().fmul(r2, r);
    let sin_r = em.fma(r3, s, r);
    let mut cc = Vec::new();
    let mut fact = 1.0f64;
    for k in 1..cos_terms {
        fact *= ((2 * k - 1) * (2 * k)) as f64;
        cc.push(if k % 2 == 1 { -1.0 } else { 1.0 } / fact);
    }
    if dt != DType::F64 {
        cc = vec![
            -0.5,
            0.041_666_619_479_656_22,
            -0.001_388_667_267_747_223_4,
            2.438_270_894_344_896e-5,
        ];
    }
    let cpoly = em.poly(dt, r2, &cc);
    let one = em.fconst(dt, 1.0);
    let cos_r = em.fma(r2, cpoly, one);
    // Quadrant: odd -> the other function; bit 1 -> negate.
    let one_i = em.iconst_for(dt, 1);
    let odd_bits = em.b.ins().band(q, one_i);
    let zero_i = em.iconst_for(dt, 0);
    let odd = if em.lanes > 1 {
        em.b.ins().icmp(
            cranelift_codegen::ir::condcodes::IntCC::NotEqual,
            odd_bits,
            zero_i,
        )
    } else {
        em.b.ins().icmp_imm_s(
            cranelift_codegen::ir::condcodes::IntCC::NotEqual,
            odd_bits,
            0,
        )
    };
    let y = em.sel(odd, cos_r, sin_r);
    let two_i = em.iconst_for(dt, 2);
    let neg_bit = em.b.ins().band(q, two_i);
    let sh = em.b.ins().iconst(
        cranelift_codegen::ir::types::I32,
        if dt == DType::F64 { 62 } else { 30 },
    );
    let sign = em.b.ins().ishl(neg_bit, sh);
    let yb = em.as_int_bits(dt, y);
    let yb = em.b.ins().bxor(yb, sign);
    em.int_bits_as_float(dt, yb)
}

/// f32 `sin x` or `cos x` with one polynomial: `x = k π + r` (`cos`:
/// `x = (k + 1/2) π + r`), `|r| <= π/2`, a three-part Cody–Waite `π`, then
/// `sin x = ±(r + r^3 P(r^2))` with the sign from `k`'s parity (`cos x =
/// -(-1)^k sin r`). `P` is our own minimax fit on `|r| <= π/2` (6e-9
/// relative); measured 1.65 ulp for `sin` and 1.57 for `cos`. Half the
/// work of evaluating both quadrant polynomials and selecting.
fn sin_cos_f32(em: &mut Em, dt: DType, x: Value, cos: bool) -> Value {
    const PI: [f64; 3] = [
        3.1415927410125732,
        -8.742277657347586e-8,
        -3.4302490200117638e-15,
    ];
    const P: [f64; 4] = [
        -0.166_666_597_127_914_43,
        0.008_333_066_478_371_62,
        -1.980_960_078_071_802_9e-4,
        2.605_776_217_023_958_5e-6,
    ];
    let c = consts(dt);
    let inv_pi = em.fconst(dt, std::f64::consts::FRAC_1_PI);
    let magic = em.fconst(dt, c.magic);
    // t = round(x/π) (sin) or round(x/π - 1/2) (cos), in the magic's
    // mantissa.
    let t = if cos {
        let half = em.fconst(dt, -0.5);
        let u = em.fma(x, inv_pi, half);
        em.b.ins().fadd(u, magic)
    } else {
        em.fma(x, inv_pi, magic)
    };
    let kf = em.b.ins().fsub(t, magic);
    let tb = em.as_int_bits(dt, t);
    let mb = em.as_int_bits(dt, magic);
    let k = em.b.ins().isub(tb, mb);
    // cos: r = x - (2k + 1) π/2, with the halved (exact) parts of π.
    let (j, scale) = if cos {
        let two = em.fconst(dt, 2.0);
        let one = em.fconst(dt, 1.0);
        (em.fma(kf, two, one), 0.5)
    } else {
        (kf, 1.0)
    };
    let mut r = x;
    for part in PI {
        let n = em.fconst(dt, -part * scale);
        r = em.fma(j, n, r);
    }
    let r2 = em.b.ins().fmul(r, r);
    let p = em.poly(dt, r2, &P);
    let r3 = em.b.ins().fmul(r2, r);
    let y = em.fma(r3, p, r);
    // Negate when k is odd (sin) or even (cos).
    let k = if cos {
        let one_i = em.iconst_for(dt, 1);
        em.b.ins().iadd(k, one_i)
    } else {
        k
    };
    let sh = em.b.ins().iconst(cranelift_codegen::ir::types::I32, 31);
    let sign = em.b.ins().ishl(k, sh);
    let yb = em.as_int_bits(dt, y);
    let yb = em.b.ins().bxor(yb, sign);
    em.int_bits_as_float(dt, yb)
}

/// `sin x`.
pub(crate) fn sin(em: &mut Em, dt: DType, x: Value) -> Value {
    sin_cos(em, dt, x, 0)
}

/// `cos x`.
pub(crate) fn cos(em: &mut Em, dt: DType, x: Value) -> Value {
    sin_cos(em, dt, x, 1)
}

/// `2^x`: `x = n + f` with integer `n`, then `2^f = e^(f ln2)`.
pub(crate) fn exp2(em: &mut Em, dt: DType, x: Value) -> Value {
    let c = consts(dt);
    let (lo, hi) = if dt == DType::F64 {
        (-1076.0, 1025.0)
    } else {
        (-151.0, 129.0)
    };
    let xc = clamp(em, dt, x, lo, hi);
    let magic = em.fconst(dt, c.magic);
    let t = em.b.ins().fadd(xc, magic);
    let nf = em.b.ins().fsub(t, magic);
    let tb = em.as_int_bits(dt, t);
    let mb = em.as_int_bits(dt, magic);
    let n = em.b.ins().isub(tb, mb);
    let f = em.b.ins().fsub(xc, nf);
    let ln2 = em.fconst(dt, std::f64::consts::LN_2);
    let r = em.b.ins().fmul(f, ln2);
    let p = expm1_poly(em, dt, r);
    let one = em.fconst(dt, 1.0);
    let y = em.b.ins().fadd(p, one);
    scale_by_pow2(em, dt, y, n)
}

/// `e^(a/2) · (e^(a/2) / 2)`: `e^a / 2` without overflowing early and
/// without the error of subtracting `ln 2` from a large argument.
fn half_exp(em: &mut Em, dt: DType, a: Value) -> Value {
    let half = em.fconst(dt, 0.5);
    let ah = em.b.ins().fmul(a, half);
    let h = exp(em, dt, ah);
    let hh = em.b.ins().fmul(h, half);
    em.b.ins().fmul(h, hh)
}

/// `sinh x`.
pub(crate) fn sinh(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    // Small and moderate |x|: (e + e/(e+1)) / 2 with e = expm1(|x|).
    let e = expm1(em, dt, a);
    let one = em.fconst(dt, 1.0);
    let e1 = em.b.ins().fadd(e, one);
    let q = em.b.ins().fdiv(e, e1);
    let s = em.b.ins().fadd(e, q);
    let half = em.fconst(dt, 0.5);
    let small = em.b.ins().fmul(s, half);
    let big = half_exp(em, dt, a);
    let lim = em.fconst(dt, 20.0);
    let is_big = em.fcmp(FloatCC::GreaterThan, a, lim);
    let y = em.sel(is_big, big, small);
    em.copysign(dt, y, x)
}

/// `cosh x`.
pub(crate) fn cosh(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    let e = exp(em, dt, a);
    let one = em.fconst(dt, 1.0);
    let inv = em.b.ins().fdiv(one, e);
    let s = em.b.ins().fadd(e, inv);
    let half = em.fconst(dt, 0.5);
    let small = em.b.ins().fmul(s, half);
    let big = half_exp(em, dt, a);
    let lim = em.fconst(dt, 20.0);
    let is_big = em.fcmp(FloatCC::GreaterThan, a, lim);
    em.sel(is_big, big, small)
}

/// `tan x = sin x / cos x` (same domain as `sin`).
pub(crate) fn tan(em: &mut Em, dt: DType, x: Value) -> Value {
    let s = sin(em, dt, x);
    let c = cos(em, dt, x);
    em.b.ins().fdiv(s, c)
}
