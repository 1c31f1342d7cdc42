//! Math functions of the simulator ([`MathFn`]) on `f32` and `f64`, with the
//! host's correctly or nearly correctly rounded functions (Rust's `f32`/`f64`
//! methods and `libm`), and an inverse error function of our own.
//!
//! Invariant: `math` never panics; operands and the result are values of
//! one float dtype in `Const`'s encoding. Accuracy is at least CUDA's
//! (a few ulp); `erfinv` is refined by Newton steps on `libm`'s `erf`/`erfc`
//! to a few ulp in both widths.

use super::value::{cast, to_f64};
use crate::kir::MathFn;
use jaxon_ir::DType;

/// One rule table for both float widths; `$erfinv` is the width's inverse
/// error function and `$lib` the libm functions (`erf`, `erfc`, `lgamma`,
/// `nextafter`) of that width.
macro_rules! math_impl {
    ($name:ident, $t:ty, $erfinv:expr, $erf:path, $erfc:path, $lgamma:path, $next:path) => {
        fn $name(f: MathFn, x: $t, y: $t, z: $t) -> $t {
            match f {
                MathFn::Exp => x.exp(),
                MathFn::Exp2 => x.exp2(),
                MathFn::Expm1 => x.exp_m1(),
                MathFn::Log => x.ln(),
                MathFn::Log2 => x.log2(),
                MathFn::Log1p => x.ln_1p(),
                MathFn::Sqrt => x.sqrt(),
                MathFn::Rsqrt => 1.0 / x.sqrt(),
                MathFn::Cbrt => x.cbrt(),
                MathFn::Sin => x.sin(),
                MathFn::Cos => x.cos(),
                MathFn::Tan => x.tan(),
                MathFn::Asin => x.asin(),
                MathFn::Acos => x.acos(),
                MathFn::Atan => x.atan(),
                MathFn::Sinh => x.sinh(),
                MathFn::Cosh => x.cosh(),
                MathFn::Tanh => x.tanh(),
                MathFn::Asinh => x.asinh(),
                MathFn::Acosh => x.acosh(),
                MathFn::Atanh => x.atanh(),
                MathFn::Erf => $erf(x),
                MathFn::Erfc => $erfc(x),
                MathFn::ErfInv => $erfinv(x),
                MathFn::Lgamma => $lgamma(x),
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::RoundEven => x.round_ties_even(),
                MathFn::RoundAway => x.round(),
                MathFn::Trunc => x.trunc(),
                MathFn::Pow => x.powf(y),
                MathFn::Atan2 => x.atan2(y),
                MathFn::CopySign => x.copysign(y),
                MathFn::NextAfter => $next(x, y),
                MathFn::Fma => x.mul_add(y, z),
            }
        }
    };
}
math_impl!(
    math_f32,
    f32,
    |x: f32| erfinv(f64::from(x)) as f32,
    libm::erff,
    libm::erfcf,
    libm::lgammaf,
    libm::nextafterf
);
math_impl!(
    math_f64,
    f64,
    erfinv,
    libm::erf,
    libm::erfc,
    libm::lgamma,
    libm::nextafter
);

/// A math function of `d` on `args` (1 to 3 operands; missing ones read as
/// zero). `d` is `f32` or `f64` in a verified kernel; other dtypes compute
/// in `f64` and are cast back.
pub(crate) fn math(f: MathFn, d: DType, args: &[u64]) -> u64 {
    let arg = |i: usize| args.get(i).copied().unwrap_or(0);
    match d {
        DType::F32 => {
            let a = |i| f32::from_bits(arg(i) as u32);
            u64::from(math_f32(f, a(0), a(1), a(2)).to_bits())
        }
        DType::F64 => {
            let a = |i| f64::from_bits(arg(i));
            math_f64(f, a(0), a(1), a(2)).to_bits()
        }
        DType::Bool
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64
        | DType::F16
        | DType::BF16
        | DType::C64
        | DType::C128
        | DType::KeyFry => {
            let a = |i| to_f64(d, arg(i));
            cast(DType::F64, d, math_f64(f, a(0), a(1), a(2)).to_bits())
        }
    }
}

/// The inverse error function: `erfinv(erf(x)) = x`; ±1 give ±∞, values
/// outside `[-1, 1]` and NaN give NaN.
///
/// A first guess from M. Giles' single-precision approximation
/// ("Approximating the erfinv function", GPU Computing Gems, 2011), accurate
/// to about 1e-7 relative (less far in the tail, where f32 never goes), then
/// Newton steps on `erf(x) - y` (on `ln erfc(x) - ln(1 - |y|)` for
/// `|y| > 0.5`, where `1 - |y|` is exact), each of which squares the
/// relative error, until a step no longer changes `x` (at most ten).
pub(crate) fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if y == 0.0 {
        return y;
    }
    let a = y.abs();
    let mut x = giles(a);
    const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..10 {
        let slope = TWO_OVER_SQRT_PI * (-x * x).exp();
        if slope == 0.0 || !x.is_finite() {
            break;
        }
        let step = if a <= 0.5 {
            (libm::erf(x) - a) / slope
        } else {
            // On the logarithms, which are nearly linear in x² in the tail.
            let q = libm::erfc(x);
            -(q.ln() - (1.0 - a).ln()) * q / slope
        };
        x -= step;
        if step.abs() <= 1e-17 * x.abs() {
            break;
        }
    }
    x.copysign(y)
}

/// Giles' approximation of `erfinv(a)` for `0 < a < 1`.
fn giles(a: f64) -> f64 {
    let w = -((1.0 - a) * (1.0 + a)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    };
    p * a
}
