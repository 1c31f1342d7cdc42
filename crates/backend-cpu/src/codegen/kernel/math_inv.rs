//! Inline vectorised inverse trigonometric and hyperbolic functions and
//! f32 `erf`, for f32 and f64, scalar or SIMD (through [`Em`]):
//!
//! - `atan`: Cephes' reduction to `|t| <= tan(pi/8)` (`t = -1/x` above
//!   `tan(3pi/8)`, `(x-1)/(x+1)` above `tan(pi/8)`), then an odd
//!   polynomial (f32) or rational function (f64) in `t`; every branch is
//!   computed and selected, so the code has no control flow.
//! - `atan2(y, x)`: `atan(min/max)` of the magnitudes, reflected to
//!   `pi/2 - t` and `pi - t`, sign of `y` copied; `0/0` and `inf/inf`
//!   ratios are replaced by 0 and 1 so that IEEE's special cases come out.
//! - `asin x = atan2(x, sqrt((1-x)(1+x)))`, `acos x = atan2(sqrt((1-x)(1+x)), x)`.
//! - `asinh`, `acosh`, `atanh` through `log1p`/`log` in forms accurate
//!   near their zeros, with `log(|x|) + ln 2` where `x^2` would overflow.
//! - f32 `erf`: the rational approximation of Eigen and XLA on `[-4, 4]`
//!   (clamped outside, where `erf` is ±1 in f32). f64 `erf` calls a helper.
//! - f32 `pow`: `exp(y ln|x|)` in f64 (each `F32X4` half widened to an
//!   `F64X2`), rounded once to f32, with C99's special cases selected in.
//!   f64 `pow` calls a helper (it would need a double-double `log`).
//!
//! Accuracy is measured by `tests/math_ulp.rs` (table in the crate docs).

use super::emit::Em;
use super::lanes::Clif;
use super::math;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::types::{F32, F32X4, F64, I8X16};
use cranelift_codegen::ir::{ConstantData, InstBuilder, Type, Value};
use jaxon_ir::DType;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, LN_2, PI};

/// `atan(x)`.
pub(crate) fn atan(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    let r = atan_pos(em, dt, a);
    em.copysign(dt, r, x)
}

/// `atan(a)` for `a >= 0` (or NaN).
fn atan_pos(em: &mut Em, dt: DType, a: Value) -> Value {
    let f64w = dt == DType::F64;
    let t3p8 = em.fconst(dt, 2.414_213_562_373_095);
    let mid = em.fconst(dt, if f64w { 0.66 } else { 0.414_213_562_373_095 });
    let one = em.fconst(dt, 1.0);
    let big = em.fcmp(FloatCC::GreaterThan, a, t3p8);
    let midr = em.fcmp(FloatCC::GreaterThan, a, mid);
    // Candidates for the reduced argument.
    let neg_one = em.fconst(dt, -1.0);
    let inv = em.b.ins().fdiv(neg_one, a);
    let num = em.b.ins().fsub(a, one);
    let den = em.b.ins().fadd(a, one);
    let shifted = em.b.ins().fdiv(num, den);
    let t = em.sel(midr, shifted, a);
    let t = em.sel(big, inv, t);
    let zero = em.fconst(dt, 0.0);
    let pi4 = em.fconst(dt, FRAC_PI_4);
    let pi2 = em.fconst(dt, FRAC_PI_2);
    let base = em.sel(midr, pi4, zero);
    let base = em.sel(big, pi2, base);
    let z = em.b.ins().fmul(t, t);
    let poly = if f64w {
        // z P(z) / Q(z), Cephes atan.c
        let p = em.poly(
            dt,
            z,
            &[
                -6.485_021_904_942_025e1,
                -1.228_866_684_490_136_2e2,
                -7.500_855_792_314_705e1,
                -1.615_753_718_733_365e1,
                -8.750_608_600_031_904e-1,
            ],
        );
        let q = em.poly(
            dt,
            z,
            &[
                1.945_506_571_482_614e2,
                4.853_903_996_359_137e2,
                4.328_810_604_912_903e2,
                1.650_270_098_316_988_6e2,
                2.485_846_490_142_306_3e1,
                1.0,
            ],
        );
        let zp = em.b.ins().fmul(z, p);
        em.b.ins().fdiv(zp, q)
    } else {
        let p = em.poly(
            dt,
            z,
            &[
                -3.333_294_915_39e-1,
                1.997_771_064_78e-1,
                -1.387_768_560_32e-1,
                8.053_744_495_38e-2,
            ],
        );
        em.b.ins().fmul(z, p)
    };
    // base + (t + t * poly), with Cephes' low-order correction of pi/4, pi/2.
    let tp = em.fma(t, poly, t);
    let r = if f64w {
        let more = 6.123_233_995_736_766e-17;
        let c_big = em.fconst(dt, more);
        let c_mid = em.fconst(dt, 0.5 * more);
        let corr = em.sel(midr, c_mid, zero);
        let corr = em.sel(big, c_big, corr);
        let tp = em.b.ins().fadd(tp, corr);
        em.b.ins().fadd(base, tp)
    } else {
        em.b.ins().fadd(base, tp)
    };
    // atan(inf) = pi/2 exactly as the selected branch gives (-1/inf = -0).
    r
}

/// `atan2(y, x)`.
pub(crate) fn atan2(em: &mut Em, dt: DType, y: Value, x: Value) -> Value {
    let ay = em.b.ins().fabs(y);
    let ax = em.b.ins().fabs(x);
    let lo = em.b.ins().fmin(ax, ay);
    let hi = em.b.ins().fmax(ax, ay);
    let r = em.b.ins().fdiv(lo, hi);
    // 0/0 -> 0, inf/inf -> 1 (NaN inputs stay NaN through fmin/fmax).
    let zero = em.fconst(dt, 0.0);
    let one = em.fconst(dt, 1.0);
    let inf = em.fconst(dt, f64::INFINITY);
    let both0 = em.fcmp(FloatCC::Equal, hi, zero);
    let r = em.sel(both0, zero, r);
    let both_inf = em.fcmp(FloatCC::Equal, lo, inf);
    let r = em.sel(both_inf, one, r);
    let t = atan_pos(em, dt, r);
    let pi2 = em.fconst(dt, FRAC_PI_2);
    let refl = em.b.ins().fsub(pi2, t);
    let steep = em.fcmp(FloatCC::GreaterThan, ay, ax);
    let t = em.sel(steep, refl, t);
    // x negative (sign bit, so -0 counts): pi - t.
    let pi = em.fconst(dt, PI);
    let back = em.b.ins().fsub(pi, t);
    let xneg = em.copysign(dt, one, x);
    let xneg = em.fcmp(FloatCC::LessThan, xneg, zero);
    let t = em.sel(xneg, back, t);
    em.copysign(dt, t, y)
}

/// `sqrt((1 - x)(1 + x))`.
fn cos_of_asin(em: &mut Em, dt: DType, x: Value) -> Value {
    let one = em.fconst(dt, 1.0);
    let a = em.b.ins().fsub(one, x);
    let b = em.b.ins().fadd(one, x);
    let p = em.b.ins().fmul(a, b);
    em.b.ins().sqrt(p)
}

/// `asin(x)`.
pub(crate) fn asin(em: &mut Em, dt: DType, x: Value) -> Value {
    let c = cos_of_asin(em, dt, x);
    atan2(em, dt, x, c)
}

/// `acos(x)`.
pub(crate) fn acos(em: &mut Em, dt: DType, x: Value) -> Value {
    let c = cos_of_asin(em, dt, x);
    atan2(em, dt, c, x)
}

/// Above this magnitude `x^2` may overflow: use `log|x| + ln 2`.
fn huge(dt: DType) -> f64 {
    if dt == DType::F64 {
        1e150
    } else {
        1e18
    }
}

/// `asinh(x) = sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2)))`, `a = |x|`.
pub(crate) fn asinh(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    let one = em.fconst(dt, 1.0);
    let a2 = em.b.ins().fmul(a, a);
    let s = em.b.ins().fadd(a2, one);
    let s = em.b.ins().sqrt(s);
    let s = em.b.ins().fadd(s, one);
    let q = em.b.ins().fdiv(a2, s);
    let arg = em.b.ins().fadd(a, q);
    let small = math::log1p(&mut Clif::new(em, dt), arg);
    let big = log_plus_ln2(em, dt, a);
    let h = em.fconst(dt, huge(dt));
    let is_big = em.fcmp(FloatCC::GreaterThan, a, h);
    let r = em.sel(is_big, big, small);
    em.copysign(dt, r, x)
}

fn log_plus_ln2(em: &mut Em, dt: DType, a: Value) -> Value {
    let l = math::log(&mut Clif::new(em, dt), a);
    let ln2 = em.fconst(dt, LN_2);
    em.b.ins().fadd(l, ln2)
}

/// `acosh(x) = log1p(t + sqrt(2t + t^2))`, `t = x - 1`.
pub(crate) fn acosh(em: &mut Em, dt: DType, x: Value) -> Value {
    let one = em.fconst(dt, 1.0);
    let t = em.b.ins().fsub(x, one);
    let two = em.fconst(dt, 2.0);
    let tt = em.b.ins().fadd(t, two);
    let p = em.b.ins().fmul(t, tt);
    let s = em.b.ins().sqrt(p);
    let arg = em.b.ins().fadd(t, s);
    let small = math::log1p(&mut Clif::new(em, dt), arg);
    let big = log_plus_ln2(em, dt, x);
    let h = em.fconst(dt, huge(dt));
    let is_big = em.fcmp(FloatCC::GreaterThan, x, h);
    let r = em.sel(is_big, big, small);
    // Below 1 (where t (t + 2) can still be positive): NaN.
    let below = em.fcmp(FloatCC::LessThan, x, one);
    let nan = em.fconst(dt, f64::NAN);
    em.sel(below, nan, r)
}

/// `atanh(x) = sign(x) log1p(2a / (1 - a)) / 2`, `a = |x|`.
pub(crate) fn atanh(em: &mut Em, dt: DType, x: Value) -> Value {
    let a = em.b.ins().fabs(x);
    let one = em.fconst(dt, 1.0);
    let d = em.b.ins().fsub(one, a);
    let n = em.b.ins().fadd(a, a);
    let q = em.b.ins().fdiv(n, d);
    let l = math::log1p(&mut Clif::new(em, dt), q);
    let half = em.fconst(dt, 0.5);
    let r = em.b.ins().fmul(l, half);
    em.copysign(dt, r, x)
}

/// f32 `erf(x)`: `x P(x²) / Q(x²)` on `[-4, 4]` (erf rounds to ±1 beyond),
/// our own linearised-Remez fit of `erf(x)/x`: 0.03 ulp before rounding.
pub(crate) fn erf_f32(em: &mut Em, x: Value) -> Value {
    const P: [f64; 7] = [
        1.128_379_225_730_896,
        0.185_203_984_379_768_37,
        0.054_316_945_374_011_99,
        0.003_849_632_805_213_332,
        3.796_065_575_443_208e-4,
        4.684_707_164_415_158e-6,
        -1.320_196_574_283_727_4e-8,
    ];
    const Q: [f64; 6] = [
        1.0,
        0.497_466_176_748_275_76,
        0.113_958_671_689_033_51,
        0.015_462_125_651_538_372,
        0.001_307_570_841_163_396_8,
        6.310_988_101_176_918e-5,
    ];
    let dt = DType::F32;
    let lo = em.fconst(dt, -4.0);
    let hi = em.fconst(dt, 4.0);
    let xc = em.b.ins().fmax(x, lo);
    let xc = em.b.ins().fmin(xc, hi);
    let x2 = em.b.ins().fmul(xc, xc);
    let p = em.poly(dt, x2, &P);
    let q = em.poly(dt, x2, &Q);
    // x (P/Q): the ratio is near 2/sqrt(pi), so a subnormal x rounds once.
    let r = em.b.ins().fdiv(p, q);
    em.b.ins().fmul(xc, r)
}

/// f32 `erf⁻¹(x)` as `x f(w)`, `w = -ln((1-x)(1+x))`, with our own
/// minimax fits of `f = erf⁻¹(x)/x`: a polynomial in `w - 2.5` for
/// `w < 5` and one in `sqrt(w) - 3` beyond (up to `w ≈ 16`, the f32 limit),
/// 0.1 and 0.2 ulp before rounding. What `random::normal` spends its time on.
pub(crate) fn erf_inv_f32(em: &mut Em, x: Value) -> Value {
    const CENTRAL: [f64; 10] = [
        1.501_409_411_430_358_9,
        0.246_640_279_889_106_75,
        -0.004_177_386_872_470_379,
        -0.001_252_741_902_135_312_6,
        2.183_444_303_227_588_5e-4,
        -4.963_344_508_723_821_5e-6,
        -3.462_704_171_397_490_4e-6,
        4.661_699_506_414_152e-7,
        2.323_259_984_393_644e-8,
        -8.791_005_257_080_542e-9,
    ];
    const TAIL: [f64; 10] = [
        2.832_976_818_084_717,
        1.001_674_890_518_188_5,
        0.009_445_192_292_332_65,
        -0.007_636_953_145_265_579,
        0.005_687_810_480_594_635,
        -0.003_598_996_438_086_033,
        0.001_482_851_570_472_121_2,
        -5.375_076_943_892_054e-5,
        -3.077_475_994_359_702e-4,
        1.136_354_039_772_413_7e-4,
    ];
    let dt = DType::F32;
    let one = em.fconst(dt, 1.0);
    let a = em.b.ins().fsub(one, x);
    let b = em.b.ins().fadd(one, x);
    let prod = em.b.ins().fmul(a, b);
    // |x| > 1 gives ln(negative) = NaN, and NaN stays NaN.
    let l = math::log(&mut Clif::new(em, dt), prod);
    let w = em.b.ins().fneg(l);
    let c_off = em.fconst(dt, 2.5);
    let t = em.b.ins().fsub(w, c_off);
    let central = em.poly(dt, t, &CENTRAL);
    let s = em.b.ins().sqrt(w);
    let t_off = em.fconst(dt, 3.0);
    let u = em.b.ins().fsub(s, t_off);
    let tail = em.poly(dt, u, &TAIL);
    let five = em.fconst(dt, 5.0);
    let in_tail = em.fcmp(FloatCC::GreaterThanOrEqual, w, five);
    let f = em.sel(in_tail, tail, central);
    let r = em.b.ins().fmul(x, f);
    let ax = em.b.ins().fabs(x);
    let at_one = em.fcmp(FloatCC::Equal, ax, one);
    let inf = em.fconst(dt, f64::INFINITY);
    let signed_inf = em.copysign(dt, inf, x);
    em.sel(at_one, signed_inf, r)
}

/// Little-endian flags for lane-type changing vector bitcasts.
fn le() -> cranelift_codegen::ir::MemFlagsData {
    cranelift_codegen::ir::MemFlagsData::new()
        .with_endianness(cranelift_codegen::ir::Endianness::Little)
}

/// `shuffle` of two 128-bit vectors of type `ty` as bytes.
fn shuffle_bytes(em: &mut Em, ty: Type, a: Value, b: Value, mask: [u8; 16]) -> Value {
    let ab = em.b.ins().bitcast(I8X16, le(), a);
    let bb = em.b.ins().bitcast(I8X16, le(), b);
    let imm =
        em.b.func
            .dfg
            .immediates
            .push(ConstantData::from(mask.to_vec()));
    let r = em.b.ins().shuffle(ab, bb, imm);
    em.b.ins().bitcast(ty, le(), r)
}

/// f32 `pow(x, y)`, computed as `exp(y ln|x|)` in f64 (so the f32 result
/// is correctly rounded but for rare double roundings), with C99's special
/// cases. Vector code widens each half of the `F32X4` to an `F64X2`.
pub(crate) fn pow_f32(em: &mut Em, x: Value, y: Value) -> Value {
    if em.lanes == 1 {
        let xd = em.b.ins().fpromote(F64, x);
        let yd = em.b.ins().fpromote(F64, y);
        let r = pow_f64_core(em, xd, yd);
        return em.b.ins().fdemote(F32, r);
    }
    let hi_mask: [u8; 16] = [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
    let xh = shuffle_bytes(em, F32X4, x, x, hi_mask);
    let yh = shuffle_bytes(em, F32X4, y, y, hi_mask);
    let parts: Vec<Value> = [(x, y), (xh, yh)]
        .into_iter()
        .map(|(a, b)| {
            let ad = em.b.ins().fvpromote_low(a);
            let bd = em.b.ins().fvpromote_low(b);
            let mut e2 = Em {
                b: &mut *em.b,
                lanes: 2,
            };
            let r = pow_f64_core(&mut e2, ad, bd);
            em.b.ins().fvdemote(r)
        })
        .collect();
    let join: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
    shuffle_bytes(em, F32X4, parts[0], parts[1], join)
}

/// `pow` on f64 values (scalar or `F64X2`, per `em.lanes`).
fn pow_f64_core(em: &mut Em, x: Value, y: Value) -> Value {
    let dt = DType::F64;
    let ax = em.b.ins().fabs(x);
    let l = math::log(&mut Clif::new(em, dt), ax);
    let t = em.b.ins().fmul(y, l);
    let m = math::exp(&mut Clif::new(em, dt), t);
    // Integer and odd-integer exponents.
    let fy = em.b.ins().floor(y);
    let is_int = em.fcmp(FloatCC::Equal, fy, y);
    let half = em.fconst(dt, 0.5);
    let h = em.b.ins().fmul(y, half);
    let fh = em.b.ins().floor(h);
    let h_int = em.fcmp(FloatCC::Equal, fh, h);
    let odd = em.b.ins().band_not(is_int, h_int);
    // Negative base (sign bit: -0 and -inf included): odd powers negate.
    let zero = em.fconst(dt, 0.0);
    let one = em.fconst(dt, 1.0);
    let sx = em.copysign(dt, one, x);
    let xneg = em.fcmp(FloatCC::LessThan, sx, zero);
    let neg_m = em.b.ins().fneg(m);
    let flip = em.b.ins().band(xneg, odd);
    let r = em.sel(flip, neg_m, m);
    // A finite negative base to a non-integer power: NaN.
    let lt0 = em.fcmp(FloatCC::LessThan, x, zero);
    let inf = em.fconst(dt, f64::INFINITY);
    let finite = em.fcmp(FloatCC::LessThan, ax, inf);
    let bad = em.b.ins().band(lt0, finite);
    let bad = em.b.ins().band_not(bad, is_int);
    let nan = em.fconst(dt, f64::NAN);
    let r = em.sel(bad, nan, r);
    // pow(x, 0) = 1, pow(1, y) = 1, pow(-1, ±inf) = 1 (NaNs included).
    let y0 = em.fcmp(FloatCC::Equal, y, zero);
    let x1 = em.fcmp(FloatCC::Equal, x, one);
    let ay = em.b.ins().fabs(y);
    let yinf = em.fcmp(FloatCC::Equal, ay, inf);
    let ax1 = em.fcmp(FloatCC::Equal, ax, one);
    let m1 = em.b.ins().band(yinf, ax1);
    let ones = em.b.ins().bor(y0, x1);
    let ones = em.b.ins().bor(ones, m1);
    em.sel(ones, one, r)
}
