//! Scalar literals of jaxprs and the Python-compatible number formatting
//! they print with.
//!
//! Invariant: a `Literal`'s value is exactly representable in its dtype (a
//! float literal holds the f64 conversion of the dtype's value).

use crate::dtype::{DType, DTypeKind};
use std::fmt;

/// The value of a scalar literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A bool.
    Bool(bool),
    /// A signed integer (any signed width).
    Int(i64),
    /// An unsigned integer (any unsigned width).
    UInt(u64),
    /// A float of any width, held exactly as f64.
    Float(f64),
    /// A complex number (real, imaginary), each part held exactly as f64.
    Complex(f64, f64),
}

/// A scalar literal operand, printed as JAX prints it: `2.0:f32[]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Literal {
    /// The value.
    pub value: Scalar,
    /// The dtype.
    pub dtype: DType,
}

impl Literal {
    /// A literal of `dtype` holding `value` converted to that dtype
    /// (rounded for floats, wrapped for integers).
    pub fn new(value: f64, dtype: DType) -> Literal {
        let value = match dtype.kind() {
            DTypeKind::Bool => Scalar::Bool(value != 0.0),
            DTypeKind::SignedInt => Scalar::Int(wrap_signed(value as i64, dtype.bits())),
            DTypeKind::UnsignedInt => Scalar::UInt(wrap_unsigned(value as u64, dtype.bits())),
            DTypeKind::Float => Scalar::Float(round_to_float_dtype(value, dtype)),
            DTypeKind::Complex => {
                Scalar::Complex(round_to_float_dtype(value, dtype.real_dtype()), 0.0)
            }
            DTypeKind::Key => Scalar::UInt(value as u32 as u64),
        };
        Literal { value, dtype }
    }

    /// A complex literal of `dtype` (`c64` or `c128`; a real dtype keeps the
    /// real part) with each part rounded to the dtype's precision.
    pub fn complex(re: f64, im: f64, dtype: DType) -> Literal {
        if !dtype.is_complex() {
            return Literal::new(re, dtype);
        }
        let part = dtype.real_dtype();
        Literal {
            value: Scalar::Complex(
                round_to_float_dtype(re, part),
                round_to_float_dtype(im, part),
            ),
            dtype,
        }
    }

    /// The value as (real, imaginary) parts; real literals have a zero
    /// imaginary part.
    pub fn as_complex(&self) -> (f64, f64) {
        match self.value {
            Scalar::Complex(re, im) => (re, im),
            _ => (self.as_f64(), 0.0),
        }
    }

    /// The value as f64 (bools are 0 or 1).
    pub fn as_f64(&self) -> f64 {
        match self.value {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::UInt(u) => u as f64,
            Scalar::Float(x) => x,
            Scalar::Complex(re, _) => re,
        }
    }

    /// The value as i64, if it is an integer or bool.
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            Scalar::Bool(b) => Some(b as i64),
            Scalar::Int(i) => Some(i),
            Scalar::UInt(u) => i64::try_from(u).ok(),
            Scalar::Float(_) | Scalar::Complex(..) => None,
        }
    }
}

fn wrap_signed(v: i64, bits: u32) -> i64 {
    if bits >= 64 {
        v
    } else {
        let shift = 64 - bits;
        (v << shift) >> shift
    }
}

fn wrap_unsigned(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

/// Rounds an f64 to the nearest value of a float dtype, returned as f64.
pub fn round_to_float_dtype(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F64 => x,
        DType::F32 => x as f32 as f64,
        DType::F16 => half::f16::from_f64(x).to_f64(),
        DType::BF16 => half::bf16::from_f64(x).to_f64(),
        _ => x,
    }
}

/// Python's shortest digits are the closest to `x` among the shortest
/// that round-trip, an exact decimal tie going to the even digit; Rust's
/// may be the other neighbour (`5.960464477539063e-07` for `1.25 * 2**-21`,
/// whose expansion ends in `...0625`, where Python prints `...062e-07`; but
/// `2**-24` prints `...063e-08` in both, the even one not round-tripping).
/// `digits` are Rust's shortest digits of `x`.
fn closest_shortest(x: f64, digits: String) -> String {
    let n = digits.len();
    let x = x.abs();
    let mantissa_digits = |s: &str| -> Vec<u8> {
        s.split_once('e')
            .map_or("", |(m, _)| m)
            .bytes()
            .filter(u8::is_ascii_digit)
            .collect()
    };
    let sci = format!("{x:e}");
    let exponent = sci.split_once('e').map_or("0", |(_, e)| e);
    // The `n`-digit candidates around `x`: truncated and rounded up.
    let exact = mantissa_digits(&format!("{x:.70e}"));
    let (Some(low), Some(&next)) = (exact.get(..n), exact.get(n)) else {
        return digits;
    };
    let tie = next == b'5'
        && exact
            .get(n + 1..)
            .is_some_and(|r| r.iter().all(|&d| d == b'0'));
    let round_trips = |ds: &[u8]| -> bool {
        let (first, rest) = ds.split_at(1);
        let text = format!(
            "{}.{}e{exponent}",
            String::from_utf8_lossy(first),
            String::from_utf8_lossy(rest)
        );
        text.parse::<f64>().is_ok_and(|y| y == x)
    };
    let closer_low =
        next < b'5' || (tie && low.last().is_some_and(|d| (d - b'0').is_multiple_of(2)));
    if closer_low && digits.as_bytes() != low && round_trips(low) {
        String::from_utf8_lossy(low).into_owned()
    } else {
        digits
    }
}

/// Formats an f64 exactly as Python's `repr(float)`: the shortest string that
/// round-trips, in positional notation for exponents in `-4..16`, else
/// scientific (`1e-05`, `1.5e+16`), with `inf`, `-inf` and `nan`.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e-7", "-5e0".
    let sci = format!("{:e}", x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits = closest_shortest(x, mantissa.chars().filter(|c| c.is_ascii_digit()).collect());
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // position of the decimal point within digits
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mant = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{esign}{:02}", exp.abs())
    }
}

/// One part of a complex number as Python's `repr(complex)` writes it: like
/// `repr(float)` without a trailing `.0` (`1`, `0.5`, `1e+16`, `nan`).
fn python_complex_part(x: f64) -> String {
    let s = python_float_repr(x);
    match s.strip_suffix(".0") {
        Some(t) => t.to_string(),
        None => s,
    }
}

/// Formats a complex number as Python's `repr(complex)`: `1j` when the real
/// part is `+0.0`, else `(1+2j)`, `(0.5-0.25j)`, `(-0-1j)`.
pub fn python_complex_repr(re: f64, im: f64) -> String {
    let imag = python_complex_part(im);
    if re == 0.0 && re.is_sign_positive() {
        return format!("{imag}j");
    }
    let sign = if imag.starts_with('-') { "" } else { "+" };
    format!("({}{sign}{imag}j)", python_complex_part(re))
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Scalar::Bool(b) => f.write_str(if b { "True" } else { "False" })?,
            Scalar::Int(i) => write!(f, "{i}")?,
            Scalar::UInt(u) => write!(f, "{u}")?,
            Scalar::Float(x) => f.write_str(&python_float_repr(x))?,
            Scalar::Complex(re, im) => f.write_str(&python_complex_repr(re, im))?,
        }
        write!(f, ":{}[]", self.dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_repr_matches_python() {
        let cases = [
            (2.0, "2.0"),
            (1.100000023841858, "1.100000023841858"),
            (9.999999747378752e-06, "9.999999747378752e-06"),
            (0.0999755859375, "0.0999755859375"),
            (1e-05, "1e-05"),
            (0.0001, "0.0001"),
            (-0.5, "-0.5"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (-0.0, "-0.0"),
            (3.4028234663852886e38, "3.4028234663852886e+38"),
            // The doubles nearest 5.9604644775390625e-07 (just below it:
            // Python prints the closer ...062) and 2**-24 (exactly that
            // tie: Python rounds up).
            (
                f64::from_bits(0x3EA4_0000_0000_0000),
                "5.960464477539062e-07",
            ),
            (2f64.powi(-24), "5.960464477539063e-08"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn literal_display() {
        assert_eq!(
            Literal::new(1.1, DType::F32).to_string(),
            "1.100000023841858:f32[]"
        );
        assert_eq!(Literal::new(1.0, DType::Bool).to_string(), "True:bool[]");
        assert_eq!(Literal::new(3.0, DType::U8).to_string(), "3:u8[]");
    }

    #[test]
    fn complex_literal_display_matches_python() {
        let cases = [
            ((1.0, 2.0), "(1+2j)"),
            ((0.0, 1.0), "1j"),
            ((0.5, -0.25), "(0.5-0.25j)"),
            ((12.0, 0.0), "(12+0j)"),
            ((-0.0, -1.0), "(-0-1j)"),
            ((1e16, 1.5), "(1e+16+1.5j)"),
            ((f64::NAN, f64::INFINITY), "(nan+infj)"),
        ];
        for ((re, im), want) in cases {
            assert_eq!(python_complex_repr(re, im), want);
        }
        assert_eq!(
            Literal::complex(1.0, 2.0, DType::C64).to_string(),
            "(1+2j):c64[]"
        );
    }
}
