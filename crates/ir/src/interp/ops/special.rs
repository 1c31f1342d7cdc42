//! Special functions: `erf`, `erfc`, `erf_inv` (computed in f64, rounded for
//! f32), `nextafter` on each float format's own bits, and the dispatch of
//! the gamma-family and Bessel ops of `special_fns.rs` (f64 algorithms,
//! rounded for f32; `regularized_incomplete_beta` on whole arrays).

use super::special_fns as sf;
use crate::array::{HostArray, Storage};
use crate::error::IrError;
use crate::primitive::{BinaryOp, UnaryOp};
use half::{bf16, f16};

const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// `erf` in f64: a positive-term series below 2.5, else `1 - erfc`.
pub fn erf_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a >= 2.5 {
        return (1.0 - erfc_cf(a)).copysign(x);
    }
    // erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n x (2x^2)^n / (2n+1)!!
    let two_x2 = 2.0 * a * a;
    let mut term = a;
    let mut sum = a;
    let mut n = 0.0;
    loop {
        n += 1.0;
        term *= two_x2 / (2.0 * n + 1.0);
        sum += term;
        if term <= sum * 1e-17 {
            break;
        }
    }
    (FRAC_2_SQRT_PI * (-a * a).exp() * sum).copysign(x)
}

/// `erfc(x)` for `x >= 1`, by Lentz's continued fraction.
fn erfc_cf(x: f64) -> f64 {
    if x > 27.3 {
        return 0.0;
    }
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for i in 1..5000 {
        let a = i as f64 / 2.0;
        d = x + a * d;
        if d == 0.0 {
            d = tiny;
        }
        d = 1.0 / d;
        c = x + a / c;
        if c == 0.0 {
            c = tiny;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / std::f64::consts::PI.sqrt() / f
}

/// `erfc` in f64.
pub fn erfc_f64(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x < 1.5 {
        1.0 - erf_f64(x)
    } else {
        erfc_cf(x)
    }
}

/// `erf_inv` in f64: an initial guess refined by Halley steps (on `erfc`
/// in the tails to avoid cancellation).
pub fn erf_inv_f64(x: f64) -> f64 {
    if x.is_nan() || x.abs() > 1.0 {
        return f64::NAN;
    }
    if x.abs() == 1.0 {
        return f64::INFINITY.copysign(x);
    }
    if x == 0.0 {
        return x;
    }
    let a = x.abs();
    // Winitzki's approximation as the starting point.
    let k = 0.147;
    let l = ((1.0 - a) * (1.0 + a)).ln();
    let t = 2.0 / (std::f64::consts::PI * k) + l / 2.0;
    let mut y = ((t * t - l / k).sqrt() - t).sqrt();
    let tail = a > 0.5;
    let c = 1.0 - a;
    for _ in 0..50 {
        let (f, fp) = if tail {
            (erfc_f64(y) - c, -FRAC_2_SQRT_PI * (-y * y).exp())
        } else {
            (erf_f64(y) - a, FRAC_2_SQRT_PI * (-y * y).exp())
        };
        if fp == 0.0 {
            break;
        }
        let fpp = -2.0 * y * fp;
        let step = 2.0 * f * fp / (2.0 * fp * fp - f * fpp);
        let ny = y - step;
        if !ny.is_finite() {
            break;
        }
        let done = (ny - y).abs() <= 1e-16 * ny.abs();
        y = ny;
        if done {
            break;
        }
    }
    y.copysign(x)
}

/// `erf` for f32 (computed in f64, rounded).
pub(crate) fn erf_f32(x: f32) -> f32 {
    erf_f64(x as f64) as f32
}

/// `erfc` for f32 (computed in f64, rounded).
pub(crate) fn erfc_f32(x: f32) -> f32 {
    erfc_f64(x as f64) as f32
}

/// `erf_inv` for f32 (computed in f64, rounded).
pub(crate) fn erf_inv_f32(x: f32) -> f32 {
    erf_inv_f64(x as f64) as f32
}

macro_rules! nextafter_fn {
    ($name:ident, $t:ty, $bits:ty, $nan:expr, $wide:expr) => {
        /// `nextafter` on the format's own bits (XLA's semantics).
        pub fn $name(x: $t, y: $t) -> $t {
            let wide: fn($t) -> f64 = $wide;
            let (fx, fy) = (wide(x), wide(y));
            if fx.is_nan() || fy.is_nan() {
                return $nan;
            }
            if fx == fy {
                return y;
            }
            let sign: $bits = 1 << (<$bits>::BITS - 1);
            let (bx, by) = (x.to_bits(), y.to_bits());
            if fx == 0.0 {
                return <$t>::from_bits((by & sign) | 1);
            }
            let up = (fx < fy) == (bx & sign == 0);
            <$t>::from_bits(if up { bx + 1 } else { bx - 1 })
        }
    };
}
nextafter_fn!(next_f32, f32, u32, f32::NAN, |v: f32| v as f64);
nextafter_fn!(next_f64, f64, u64, f64::NAN, |v: f64| v);
nextafter_fn!(next_f16, f16, u16, f16::NAN, |v: f16| v.to_f64());
nextafter_fn!(next_bf16, bf16, u16, bf16::NAN, |v: bf16| v.to_f64());

fn zip2<T: Copy>(a: &[T], b: &[T], n: usize, f: fn(T, T) -> T) -> Vec<T> {
    (0..n)
        .map(|i| {
            f(
                a[if a.len() == 1 { 0 } else { i }],
                b[if b.len() == 1 { 0 } else { i }],
            )
        })
        .collect()
}

/// `nextafter(x, y)` elementwise on `n` elements (a length-1 side broadcasts).
pub(crate) fn nextafter(x: &Storage, y: &Storage, n: usize) -> Result<Storage, IrError> {
    Ok(match (x, y) {
        (Storage::F32(a), Storage::F32(b)) => Storage::F32(zip2(a, b, n, next_f32)),
        (Storage::F64(a), Storage::F64(b)) => Storage::F64(zip2(a, b, n, next_f64)),
        (Storage::F16(a), Storage::F16(b)) => Storage::F16(zip2(a, b, n, next_f16)),
        (Storage::BF16(a), Storage::BF16(b)) => Storage::BF16(zip2(a, b, n, next_bf16)),
        _ => {
            return Err(IrError::ty(
                "nextafter",
                format!("operands of dtypes {} and {}", x.dtype(), y.dtype()),
            ))
        }
    })
}

/// The f64 kernel of a gamma-family or Bessel unary op.
pub(crate) fn unary_f64(op: UnaryOp) -> Option<fn(f64) -> f64> {
    Some(match op {
        UnaryOp::Lgamma => sf::lgamma_f64,
        UnaryOp::Digamma => sf::digamma_f64,
        UnaryOp::BesselI0e => sf::bessel_i0e_f64,
        UnaryOp::BesselI1e => sf::bessel_i1e_f64,
        _ => return None,
    })
}

/// The f32 kernel of a gamma-family or Bessel unary op (f64, rounded).
pub(crate) fn unary_f32(op: UnaryOp) -> Option<fn(f32) -> f32> {
    Some(match op {
        UnaryOp::Lgamma => |x| sf::lgamma_f64(x as f64) as f32,
        UnaryOp::Digamma => |x| sf::digamma_f64(x as f64) as f32,
        UnaryOp::BesselI0e => |x| sf::bessel_i0e_f64(x as f64) as f32,
        UnaryOp::BesselI1e => |x| sf::bessel_i1e_f64(x as f64) as f32,
        _ => return None,
    })
}

/// The f64 kernel of a gamma-family binary op.
pub(crate) fn binary_f64(op: BinaryOp) -> Option<fn(f64, f64) -> f64> {
    Some(match op {
        BinaryOp::Igamma => sf::igamma_f64,
        BinaryOp::Igammac => sf::igammac_f64,
        BinaryOp::IgammaGradA => sf::igamma_grad_a_f64,
        BinaryOp::RandomGammaGrad => sf::random_gamma_grad_f64,
        BinaryOp::Polygamma => sf::polygamma_f64,
        BinaryOp::Zeta => sf::zeta_f64,
        _ => return None,
    })
}

/// The f32 kernel of a gamma-family binary op (f64, rounded).
pub(crate) fn binary_f32(op: BinaryOp) -> Option<fn(f32, f32) -> f32> {
    Some(match op {
        BinaryOp::Igamma => |a, x| sf::igamma_f64(a as f64, x as f64) as f32,
        BinaryOp::Igammac => |a, x| sf::igammac_f64(a as f64, x as f64) as f32,
        BinaryOp::IgammaGradA => |a, x| sf::igamma_grad_a_f64(a as f64, x as f64) as f32,
        BinaryOp::RandomGammaGrad => |a, x| sf::random_gamma_grad_f64(a as f64, x as f64) as f32,
        BinaryOp::Polygamma => |n, x| sf::polygamma_f64(n as f64, x as f64) as f32,
        BinaryOp::Zeta => |s, q| sf::zeta_f64(s as f64, q as f64) as f32,
        _ => return None,
    })
}

/// `regularized_incomplete_beta a b x` elementwise (rank-0 operands
/// broadcast; f16/bf16/f32 computed in f64 and rounded).
pub(crate) fn betainc(a: &HostArray, b: &HostArray, x: &HostArray) -> Result<HostArray, IrError> {
    let name = "regularized_incomplete_beta";
    let dt = x.dtype();
    if a.dtype() != dt || b.dtype() != dt || !dt.is_float() {
        return Err(IrError::ty(
            name,
            format!(
                "operands must be floats of one dtype, got {}, {} and {}",
                a.dtype(),
                b.dtype(),
                dt
            ),
        ));
    }
    let shape = [a, b, x]
        .iter()
        .find(|v| v.ndim() > 0)
        .map_or_else(Vec::new, |v| v.shape().to_vec());
    for v in [a, b, x] {
        if v.ndim() > 0 && v.shape() != shape.as_slice() {
            return Err(IrError::ty(name, "operand shapes differ"));
        }
    }
    let n: usize = shape.iter().product();
    let wide = |v: &HostArray| v.to_f64_vec();
    let (va, vb, vx) = (wide(a), wide(b), wide(x));
    let at = |v: &[f64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    let out: Vec<f64> = (0..n)
        .map(|i| sf::betainc_f64(at(&va, i), at(&vb, i), at(&vx, i)))
        .collect();
    HostArray::new(shape, Storage::from_f64(dt, &out))
}
