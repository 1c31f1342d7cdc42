//! Complex division as XLA computes it, the semantics every jaxon evaluator
//! follows (the interpreter here; the CPU backend calls it; the CUDA
//! backend's complex rewrite builds the same steps from real operations).
//!
//! `x / y` is Smith's algorithm: the divisor is scaled by its larger part,
//! so `|y|²` is never formed and neither overflows nor underflows early.
//! When that gives NaN in both parts, C99 Annex G's corner cases replace
//! it:
//! - a zero divisor (and a numerator not NaN in both parts) gives
//!   `copysign(∞, y.re) · x`;
//! - an infinite numerator over a finite divisor gives infinities, signed
//!   as `x`'s infinite parts times `y`;
//! - a finite numerator over an infinite divisor gives signed zeros.
//!
//! Invariant: `c64` division is computed in `f32` (as XLA does), so the
//! same intermediate overflows happen; `c128` in `f64`.

use num_complex::Complex;

macro_rules! complex_div {
    ($name:ident, $t:ty) => {
        /// `x / y` with XLA's semantics (see the module header).
        pub fn $name(x: Complex<$t>, y: Complex<$t>) -> Complex<$t> {
            let (ar, ai, br, bi) = (x.re, x.im, y.re, y.im);
            let q = if br.abs() < bi.abs() {
                let ratio = br / bi;
                let denom = bi + br * ratio;
                Complex::new((ar * ratio + ai) / denom, (ai * ratio - ar) / denom)
            } else {
                let ratio = bi / br;
                let denom = br + bi * ratio;
                Complex::new((ar + ai * ratio) / denom, (ai - ar * ratio) / denom)
            };
            if !(q.re.is_nan() && q.im.is_nan()) {
                return q;
            }
            let inf = <$t>::INFINITY;
            let finite = |v: $t| v.is_finite();
            let unit = |v: $t| (if v.is_infinite() { 1.0 } else { 0.0 as $t }).copysign(v);
            if br == 0.0 && bi == 0.0 && !(ar.is_nan() && ai.is_nan()) {
                let s = inf.copysign(br);
                Complex::new(s * ar, s * ai)
            } else if (ar.is_infinite() || ai.is_infinite()) && finite(br) && finite(bi) {
                let (ur, ui) = (unit(ar), unit(ai));
                Complex::new(inf * (ur * br + ui * bi), inf * (ui * br - ur * bi))
            } else if (br.is_infinite() || bi.is_infinite()) && finite(ar) && finite(ai) {
                let (ur, ui) = (unit(br), unit(bi));
                Complex::new(0.0 * (ar * ur + ai * ui), 0.0 * (ai * ur - ar * ui))
            } else {
                q
            }
        }
    };
}

complex_div!(div_c64, f32);
complex_div!(div_c128, f64);
