//! Complex helpers of the lowering tests: dtype names, random and
//! awkward (NaN, infinite, signed-zero parts) complex inputs, and the
//! comparison against the interpreter. A part is NaN in both results or
//! neither; otherwise parts differ by at most `rel` times the larger of
//! the element's magnitude and the array's largest magnitude scaled by
//! `scale_rel` (for sums and transforms, whose error scales with the
//! whole array). [`check_exact`] asks for the same bits instead (NaN
//! payloads aside), for results that select elements.

use super::{parse, run_lowered, Rng};
use jaxon_ir::{DType, HostArray};
use num_complex::Complex64;

pub fn name(d: DType) -> &'static str {
    match d {
        DType::C64 => "c64",
        _ => "c128",
    }
}

pub fn real_name(d: DType) -> &'static str {
    match d {
        DType::C64 => "f32",
        _ => "f64",
    }
}

pub fn jax_name(d: DType) -> &'static str {
    match d {
        DType::C64 => "complex64",
        _ => "complex128",
    }
}

pub fn ty(d: &str, s: &[usize]) -> String {
    super::ty(d, s)
}

/// Random complex values with parts in `[-r, r]`.
pub fn crandom(rng: &mut Rng, d: DType, s: &[usize], r: f64) -> HostArray {
    let n: usize = s.iter().product();
    let v: Vec<Complex64> = (0..n)
        .map(|_| Complex64::new(r * (2.0 * rng.unit() - 1.0), r * (2.0 * rng.unit() - 1.0)))
        .collect();
    HostArray::from_c128(d, s, &v).expect("array")
}

/// Complex values whose parts are often NaN, infinite or signed zeros.
pub fn cawkward(rng: &mut Rng, d: DType, s: &[usize]) -> HostArray {
    let n: usize = s.iter().product();
    let part = |rng: &mut Rng| match rng.range(0, 8) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => 0.0,
        4 => -0.0,
        _ => rng.range(-4, 4) as f64 * 0.75,
    };
    let v: Vec<Complex64> = (0..n)
        .map(|_| Complex64::new(part(rng), part(rng)))
        .collect();
    HostArray::from_c128(d, s, &v).expect("array")
}

pub fn rrandom(rng: &mut Rng, d: DType, s: &[usize], r: f64) -> HostArray {
    super::random(rng, d, s, super::Dist::Uniform(r))
}

/// Asserts `got` matches `want` (see the module docs).
pub fn compare(what: &str, got: &HostArray, want: &HostArray, rel: f64, scale_rel: bool) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_c128_vec(), want.to_c128_vec());
    let max = w
        .iter()
        .filter(|z| z.re.is_finite() && z.im.is_finite())
        .fold(0.0f64, |m, z| m.max(z.norm()));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let mag = if scale_rel { max } else { b.norm() }.max(1e-30);
        for (x, y) in [(a.re, b.re), (a.im, b.im)] {
            let ok = (x.is_nan() && y.is_nan())
                || x == y
                || (x.is_finite() && y.is_finite() && (x - y).abs() <= rel * mag);
            assert!(ok, "{what}: element {i}: got {a}, expected {b} (rel {rel})");
        }
    }
}

/// Runs `text` on the backend and the interpreter.
pub fn check(text: &str, args: &[HostArray], rel: f64, scale_rel: bool) {
    let closed = parse(text);
    let want = jaxon_ir::eval_closed_jaxpr(&closed, args)
        .unwrap_or_else(|e| panic!("interpreter: {e}\n{text}"));
    let got = run_lowered(&closed, args).unwrap_or_else(|e| panic!("backend: {e}\n{text}"));
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        compare(&format!("result {k} of\n{text}\n"), g, w, rel, scale_rel);
    }
}

/// The per-element tolerance of `d`: the interpreter computes in `f64`
/// and rounds, as the rewrite does, so a few ulps of the part's dtype.
pub fn tol(d: DType) -> f64 {
    match d {
        DType::C64 => 4e-7,
        _ => 1e-14,
    }
}

/// Asserts every part of `got` has the bits of `want`'s (both NaN counts
/// as equal, a zero's sign does not).
pub fn compare_exact(what: &str, got: &HostArray, want: &HostArray) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_c128_vec(), want.to_c128_vec());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        for (x, y) in [(a.re, b.re), (a.im, b.im)] {
            let ok = (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
            assert!(ok, "{what}: element {i}: got {a}, expected {b} (exact)");
        }
    }
}

/// [`check`] with [`compare_exact`] on complex results (real ones too:
/// `to_c128_vec` gives them a zero imaginary part).
pub fn check_exact(text: &str, args: &[HostArray]) {
    let closed = parse(text);
    let want = jaxon_ir::eval_closed_jaxpr(&closed, args)
        .unwrap_or_else(|e| panic!("interpreter: {e}\n{text}"));
    let got = run_lowered(&closed, args).unwrap_or_else(|e| panic!("backend: {e}\n{text}"));
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        compare_exact(&format!("result {k} of\n{text}\n"), g, w);
    }
}
