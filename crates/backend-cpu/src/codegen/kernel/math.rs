//! Inline vectorised approximations of transcendental functions: `exp`,
//! `expm1`, `log`, `log1p`, `tanh`, `logistic`, `sin`, `cos`, `tan`,
//! `exp2`, `sinh`, `cosh`, for f32 and f64, written once over [`Lanes`]:
//! emitted as Cranelift code (scalar or SIMD) and precompiled as AVX2
//! tile routines (`wide.rs`), bit-identical to each other.
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

use super::lanes::{Cmp, Lanes, Scalar};
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
#[inline(always)]
fn pow2<L: Lanes>(l: &mut L, n: L::I) -> L::F {
    let c = consts(l.dt());
    let bias = l.i(c.bias);
    let e = l.iadd(n, bias);
    let bits = l.shl(e, c.mant_bits as u8);
    l.float_bits(bits)
}

/// Reduces `x = n ln2 + r`; returns `(n as integer, n as float, r)`.
#[inline(always)]
fn reduce_ln2<L: Lanes>(l: &mut L, x: L::F) -> (L::I, L::F, L::F) {
    let c = consts(l.dt());
    let log2e = l.f(std::f64::consts::LOG2_E);
    let magic = l.f(c.magic);
    let t = l.fma(x, log2e, magic);
    let nf = l.sub(t, magic);
    let tb = l.bits(t);
    let mb = l.bits(magic);
    let n = l.isub(tb, mb);
    let neg_hi = l.f(-c.ln2_hi);
    let neg_lo = l.f(-c.ln2_lo);
    let r = l.fma(nf, neg_hi, x);
    let r = l.fma(nf, neg_lo, r);
    (n, nf, r)
}

/// `expm1(r)` for `|r| <= ln2/2`: Taylor series `r + r^2/2! + ...`.
#[inline(always)]
fn expm1_poly<L: Lanes>(l: &mut L, r: L::F) -> L::F {
    let deg = consts(l.dt()).expm1_degree;
    expm1_poly_deg(l, r, deg)
}

/// [`expm1_poly`] to degree `deg`.
#[inline(always)]
fn expm1_poly_deg<L: Lanes>(l: &mut L, r: L::F, deg: usize) -> L::F {
    // expm1(r) = r * (1 + r/2! + r^2/3! + ...)
    let mut coef = Vec::with_capacity(deg);
    let mut fact = 1.0f64;
    for k in 1..=deg {
        fact *= k as f64;
        coef.push(1.0 / fact);
    }
    let p = l.poly(r, &coef);
    l.mul(r, p)
}

/// `x` clamped to `[lo, hi]`, NaN kept (compare and select: cheaper than
/// `fmax`/`fmin`, whose exact NaN and signed-zero rules take several
/// instructions on x86 and are not needed here).
#[inline(always)]
fn clamp<L: Lanes>(l: &mut L, x: L::F, lo: f64, hi: f64) -> L::F {
    let lo = l.f(lo);
    let hi = l.f(hi);
    let x = l.at_least(x, lo);
    l.at_most(x, hi)
}

/// `e^x`.
#[inline(always)]
pub(crate) fn exp<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let c = consts(l.dt());
    let xc = clamp(l, x, c.exp_lo, c.exp_hi);
    let (n, _, r) = reduce_ln2(l, xc);
    let y = if l.dt() == DType::F64 {
        let p = expm1_poly_deg(l, r, c.expm1_degree);
        let one = l.f(1.0);
        l.add(p, one)
    } else {
        l.poly(r, &EXP_F32)
    };
    scale_by_pow2(l, y, n)
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
#[inline(always)]
fn scale_by_pow2<L: Lanes>(l: &mut L, y: L::F, n: L::I) -> L::F {
    // 2^n = 2^n1 · 2^n2 with n1 = floor(n/2), computed with logical shifts
    // on a biased value (SSE has no 64-bit arithmetic shift).
    let off = l.i(4096);
    let biased = l.iadd(n, off);
    let half = l.ushr(biased, 1);
    let off2 = l.i(2048);
    let n1 = l.isub(half, off2);
    let n2 = l.isub(n, n1);
    let s1 = pow2(l, n1);
    let s2 = pow2(l, n2);
    let y = l.mul(y, s1);
    l.mul(y, s2)
}

/// `e^x - 1`, accurate near 0.
#[inline(always)]
pub(crate) fn expm1<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let c = consts(l.dt());
    let xc = clamp(l, x, c.expm1_lo, c.exp_hi);
    let (n, nf, r) = reduce_ln2(l, xc);
    let p = expm1_poly(l, r);
    // 2^n (p + 1) - 1 = 2 fma(2^(n-1), p, 2^(n-1) - 1/2): the halved scale
    // stays finite at n = 128 (f32) / 1024 (f64), and doubling is exact.
    let one_i = l.i(1);
    let nm1 = l.isub(n, one_i);
    let s = pow2(l, nm1);
    let half = l.f(0.5);
    let sm = l.sub(s, half);
    let y = l.fma(s, p, sm);
    let y = l.add(y, y);
    // n = 0 keeps p itself (so that expm1(-0) = -0).
    let zero = l.f(0.0);
    let n0 = l.cmp(Cmp::Eq, nf, zero);
    let y = l.sel(n0, p, y);
    let ovf = l.f(c.overflow);
    let big = l.cmp(Cmp::Gt, x, ovf);
    let inf = l.f(f64::INFINITY);
    l.sel(big, inf, y)
}

/// `ln x`.
#[inline(always)]
pub(crate) fn log<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let c = consts(l.dt());
    // Subnormals: scale into the normal range first.
    let scale_pow = c.mant_bits + 2;
    let tiny_lim = l.f(c.min_normal);
    let tiny = l.cmp(Cmp::Lt, x, tiny_lim);
    let scale = l.f((2.0f64).powi(scale_pow as i32));
    let xs = l.mul(x, scale);
    let xv = l.sel(tiny, xs, x);
    let zero_e = l.i(0);
    let scaled_e = l.i(scale_pow);
    let e_adj = l.sel_i(tiny, scaled_e, zero_e);
    // x = m 2^e, m in [1, 2)
    let bits = l.bits(xv);
    let e_raw = l.ushr(bits, c.mant_bits as u8);
    let bias = l.i(c.bias);
    let e = l.isub(e_raw, bias);
    let e = l.isub(e, e_adj);
    let mant_mask = l.i((1i64 << c.mant_bits) - 1);
    let mb = l.and(bits, mant_mask);
    let one_bits = l.i(c.bias << c.mant_bits);
    let mb = l.or(mb, one_bits);
    let m = l.float_bits(mb);
    // m >= sqrt(2): halve m, bump e.
    let sqrt2 = l.f(std::f64::consts::SQRT_2);
    let big = l.cmp(Cmp::Ge, m, sqrt2);
    let half = l.f(0.5);
    let mh = l.mul(m, half);
    let m = l.sel(big, mh, m);
    let one_i = l.i(1);
    let zero_i = l.i(0);
    let inc = l.sel_i(big, one_i, zero_i);
    let e = l.iadd(e, inc);
    // e as float via the magic number (no int->float instruction needed).
    let magic = l.f(c.magic);
    let magic_bits = l.bits(magic);
    let eb = l.iadd(e, magic_bits);
    let ef = l.float_bits(eb);
    let ef = l.sub(ef, magic);
    // log(m) = 2 atanh(s), s = (m-1)/(m+1)
    let one = l.f(1.0);
    let num = l.sub(m, one);
    let den = l.add(m, one);
    let s = l.div(num, den);
    let s2 = l.mul(s, s);
    let coef: Vec<f64> = (0..c.log_terms).map(|k| 2.0 / (2 * k + 1) as f64).collect();
    let p = l.poly(s2, &coef[1..]);
    // 2s + s^3 * p(s^2)
    let s3 = l.mul(s2, s);
    let two = l.f(2.0);
    let lead = l.mul(s, two);
    let lm = l.fma(s3, p, lead);
    let ln2_lo = l.f(c.ln2_lo);
    let ln2_hi = l.f(c.ln2_hi);
    let t = l.fma(ef, ln2_lo, lm);
    let y = l.fma(ef, ln2_hi, t);
    // Special values: x < 0 or NaN -> NaN, 0 -> -inf, inf -> inf.
    let zero = l.f(0.0);
    let is_zero = l.cmp(Cmp::Eq, x, zero);
    let ninf = l.f(f64::NEG_INFINITY);
    let y = l.sel(is_zero, ninf, y);
    let inf = l.f(f64::INFINITY);
    let is_inf = l.cmp(Cmp::Eq, x, inf);
    let y = l.sel(is_inf, inf, y);
    let neg = l.cmp(Cmp::Lt, x, zero);
    let nan_in = l.cmp(Cmp::Ne, x, x);
    let bad = l.mask_or(neg, nan_in);
    let nan = l.f(f64::NAN);
    l.sel(bad, nan, y)
}

/// `ln(1 + x)`, accurate near 0.
#[inline(always)]
pub(crate) fn log1p<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let one = l.f(1.0);
    let u = l.add(x, one);
    let lu = log(l, u);
    let um1 = l.sub(u, one);
    // log(u) * x / (u - 1) corrects the rounding of 1 + x.
    let q = l.div(x, um1);
    let y = l.mul(lu, q);
    let exact = l.cmp(Cmp::Eq, u, one);
    let y = l.sel(exact, x, y);
    let inf = l.f(f64::INFINITY);
    let is_inf = l.cmp(Cmp::Eq, x, inf);
    l.sel(is_inf, inf, y)
}

/// `tanh x`.
#[inline(always)]
pub(crate) fn tanh<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    if l.dt() != DType::F64 {
        return tanh_rational_f32(l, x);
    }
    let c = consts(l.dt());
    let a = l.abs(x);
    let two = l.f(2.0);
    let a2 = l.mul(a, two);
    let m = expm1(l, a2);
    let den = l.add(m, two);
    let t = l.div(m, den);
    let hi = l.f(c.tanh_hi);
    let sat = l.cmp(Cmp::Gt, a, hi);
    let one = l.f(1.0);
    let t = l.sel(sat, one, t);
    l.copysign(t, x)
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
#[inline(always)]
fn tanh_rational_f32<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let a = l.abs(x);
    let hi = l.f(9.1);
    let a = l.at_most(a, hi);
    let t = l.mul(a, a);
    let p = l.poly(t, &TANH_F32_P);
    let q = l.poly(t, &TANH_F32_Q);
    let num = l.mul(a, p);
    let y = l.div(num, q);
    // Past |x| = 9.01 tanh rounds to 1; never let the rational exceed it.
    let one = l.f(1.0);
    let y = l.at_most(y, one);
    l.copysign(y, x)
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn logistic<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let a = l.abs(x);
    let na = l.neg(a);
    let e = exp(l, na);
    let one = l.f(1.0);
    let den = l.add(one, e);
    let pos = l.div(one, den);
    let neg = l.div(e, den);
    let zero = l.f(0.0);
    let is_pos = l.cmp(Cmp::Ge, x, zero);
    let y = l.sel(is_pos, pos, neg);
    // NaN fails both comparisons above; keep it NaN.
    let is_nan = l.cmp(Cmp::Ne, x, x);
    l.sel(is_nan, x, y)
}

extern "C" fn sin_f32(x: f32) -> f32 {
    x.sin()
}
extern "C" fn sin_f64(x: f64) -> f64 {
    x.sin()
}
extern "C" fn cos_f32(x: f32) -> f32 {
    x.cos()
}
extern "C" fn cos_f64(x: f64) -> f64 {
    x.cos()
}

/// Beyond these magnitudes the Cody–Waite reductions below lose accuracy
/// (their three-part `π` runs out of bits near 2^17 for f32 and 2^30 for
/// f64), so such lanes take the libm path, the interpreter's own
/// functions, which reduce exactly (Payne–Hanek): the result is then the
/// interpreter's to the bit.
const SIN_COS_FAST_F32: f64 = 1.0e5;
const SIN_COS_FAST_F64: f64 = 1.0e9;

/// `sin x` (`cos_shift = 0`) or `cos x` (`cos_shift = 1`, a quarter turn):
/// the fast reduction below, and [`Lanes::patch`] with libm's `sin`/`cos`
/// on the lanes past [`SIN_COS_FAST_F32`] / [`SIN_COS_FAST_F64`] (±inf
/// included: NaN either way).
#[inline(always)]
fn sin_cos<L: Lanes>(l: &mut L, x: L::F, cos_shift: i64) -> L::F {
    let lim = if l.dt() == DType::F64 {
        SIN_COS_FAST_F64
    } else {
        SIN_COS_FAST_F32
    };
    let slow = if cos_shift == 0 {
        Scalar {
            f32: sin_f32,
            f64: sin_f64,
        }
    } else {
        Scalar {
            f32: cos_f32,
            f64: cos_f64,
        }
    };
    let y = sin_cos_fast(l, x, cos_shift);
    let a = l.abs(x);
    let lim = l.f(lim);
    let big = l.cmp(Cmp::Gt, a, lim);
    l.patch(big, x, y, slow)
}

/// `sin x` or `cos x` for `|x|` up to [`SIN_COS_FAST_F32`] /
/// [`SIN_COS_FAST_F64`].
///
/// f64: reduction `x = j π/2 + r`, `|r| <= π/4`, with a three-part
/// Cody–Waite `π/2` and fused multiply-adds. f32: `sin_cos_f32`.
#[inline(always)]
fn sin_cos_fast<L: Lanes>(l: &mut L, x: L::F, cos_shift: i64) -> L::F {
    let dt = l.dt();
    if dt != DType::F64 {
        return sin_cos_f32(l, x, cos_shift == 1);
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
    let c = consts(l.dt());
    let two_over_pi = l.f(std::f64::consts::FRAC_2_PI);
    let magic = l.f(c.magic);
    let t = l.fma(x, two_over_pi, magic);
    let jf = l.sub(t, magic);
    let tb = l.bits(t);
    let mb = l.bits(magic);
    let q = l.isub(tb, mb);
    let q = if cos_shift == 0 {
        q
    } else {
        let shift = l.i(cos_shift);
        l.iadd(q, shift)
    };
    let n1 = l.f(-c1);
    let n2 = l.f(-c2);
    let n3 = l.f(-c3);
    let r = l.fma(jf, n1, x);
    let r = l.fma(jf, n2, r);
    let r = l.fma(jf, n3, r);
    let r2 = l.mul(r, r);
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
    let s = l.poly(r2, &sc);
    let r3 = l.mul(r2, r);
    let sin_r = l.fma(r3, s, r);
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
    let cpoly = l.poly(r2, &cc);
    let one = l.f(1.0);
    let cos_r = l.fma(r2, cpoly, one);
    // Quadrant: odd -> the other function; bit 1 -> negate.
    let one_i = l.i(1);
    let odd_bits = l.and(q, one_i);
    let odd = l.nonzero(odd_bits);
    let y = l.sel(odd, cos_r, sin_r);
    let two_i = l.i(2);
    let neg_bit = l.and(q, two_i);
    let sign = l.shl(neg_bit, if dt == DType::F64 { 62 } else { 30 });
    let yb = l.bits(y);
    let yb = l.xor(yb, sign);
    l.float_bits(yb)
}

/// f32 `sin x` or `cos x` with one polynomial: `x = k π + r` (`cos`:
/// `x = (k + 1/2) π + r`), `|r| <= π/2`, a three-part Cody–Waite `π`, then
/// `sin x = ±(r + r^3 P(r^2))` with the sign from `k`'s parity (`cos x =
/// -(-1)^k sin r`). `P` is our own minimax fit on `|r| <= π/2` (6e-9
/// relative); measured 1.65 ulp for `sin` and 1.57 for `cos`. Half the
/// work of evaluating both quadrant polynomials and selecting.
#[inline(always)]
fn sin_cos_f32<L: Lanes>(l: &mut L, x: L::F, cos: bool) -> L::F {
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
    let c = consts(l.dt());
    let inv_pi = l.f(std::f64::consts::FRAC_1_PI);
    let magic = l.f(c.magic);
    // t = round(x/π) (sin) or round(x/π - 1/2) (cos), in the magic's
    // mantissa.
    let t = if cos {
        let half = l.f(-0.5);
        let u = l.fma(x, inv_pi, half);
        l.add(u, magic)
    } else {
        l.fma(x, inv_pi, magic)
    };
    let kf = l.sub(t, magic);
    let tb = l.bits(t);
    let mb = l.bits(magic);
    let k = l.isub(tb, mb);
    // cos: r = x - (2k + 1) π/2, with the halved (exact) parts of π.
    let (j, scale) = if cos {
        let two = l.f(2.0);
        let one = l.f(1.0);
        (l.fma(kf, two, one), 0.5)
    } else {
        (kf, 1.0)
    };
    let mut r = x;
    for part in PI {
        let n = l.f(-part * scale);
        r = l.fma(j, n, r);
    }
    let r2 = l.mul(r, r);
    let p = l.poly(r2, &P);
    let r3 = l.mul(r2, r);
    let y = l.fma(r3, p, r);
    // Negate when k is odd (sin) or even (cos).
    let k = if cos {
        let one_i = l.i(1);
        l.iadd(k, one_i)
    } else {
        k
    };
    let sign = l.shl(k, 31);
    let yb = l.bits(y);
    let yb = l.xor(yb, sign);
    l.float_bits(yb)
}

/// `sin x`.
#[inline(always)]
pub(crate) fn sin<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    sin_cos(l, x, 0)
}

/// `cos x`.
#[inline(always)]
pub(crate) fn cos<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    sin_cos(l, x, 1)
}

/// `2^x`: `x = n + f` with integer `n`, then `2^f = e^(f ln2)`.
#[inline(always)]
pub(crate) fn exp2<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let c = consts(l.dt());
    let (lo, hi) = if l.dt() == DType::F64 {
        (-1076.0, 1025.0)
    } else {
        (-151.0, 129.0)
    };
    let xc = clamp(l, x, lo, hi);
    let magic = l.f(c.magic);
    let t = l.add(xc, magic);
    let nf = l.sub(t, magic);
    let tb = l.bits(t);
    let mb = l.bits(magic);
    let n = l.isub(tb, mb);
    let f = l.sub(xc, nf);
    let ln2 = l.f(std::f64::consts::LN_2);
    let r = l.mul(f, ln2);
    let p = expm1_poly(l, r);
    let one = l.f(1.0);
    let y = l.add(p, one);
    scale_by_pow2(l, y, n)
}

/// `e^(a/2) · (e^(a/2) / 2)`: `e^a / 2` without overflowing early and
/// without the error of subtracting `ln 2` from a large argument.
#[inline(always)]
fn half_exp<L: Lanes>(l: &mut L, a: L::F) -> L::F {
    let half = l.f(0.5);
    let ah = l.mul(a, half);
    let h = exp(l, ah);
    let hh = l.mul(h, half);
    l.mul(h, hh)
}

/// `s / 2`, or `exp(a) / 2` (overflow-safe) where `a > 20`: the shared
/// tail of `sinh` and `cosh` at `a = |x|`.
#[inline(always)]
fn half_or_big<L: Lanes>(l: &mut L, a: L::F, s: L::F) -> L::F {
    let half = l.f(0.5);
    let small = l.mul(s, half);
    let big = half_exp(l, a);
    let lim = l.f(20.0);
    let is_big = l.cmp(Cmp::Gt, a, lim);
    l.sel(is_big, big, small)
}

/// `sinh x`.
#[inline(always)]
pub(crate) fn sinh<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let a = l.abs(x);
    // Small and moderate |x|: (e + e/(e+1)) / 2 with e = expm1(|x|).
    let e = expm1(l, a);
    let one = l.f(1.0);
    let e1 = l.add(e, one);
    let q = l.div(e, e1);
    let s = l.add(e, q);
    let y = half_or_big(l, a, s);
    l.copysign(y, x)
}

/// `cosh x`.
#[inline(always)]
pub(crate) fn cosh<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let a = l.abs(x);
    let e = exp(l, a);
    let one = l.f(1.0);
    let inv = l.div(one, e);
    let s = l.add(e, inv);
    half_or_big(l, a, s)
}

/// `tan x = sin x / cos x` (same domain as `sin`).
#[inline(always)]
pub(crate) fn tan<L: Lanes>(l: &mut L, x: L::F) -> L::F {
    let s = sin(l, x);
    let c = cos(l, x);
    l.div(s, c)
}
