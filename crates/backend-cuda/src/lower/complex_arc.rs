//! Complex `max`/`min` (XLA's lexicographic order) and the complex
//! inverse trigonometric and hyperbolic functions of the rewrite (`asin`,
//! `acos`, `atan`, `asinh`, `acosh`, `atanh`), the latter by the
//! interpreter's formulas (`num_complex`'s), operation for operation, so
//! that infinities and NaNs propagate as they do there:
//!
//! - `asin z = -i · ln(sqrt(1 - z²) + i·z)`
//! - `acos z = -i · ln(i·sqrt(1 - z²) + z)`
//! - `atan z = (ln(1 + i·z) - ln(1 - i·z)) / 2i`, `±i ↦ ±i∞`
//! - `asinh z = ln(z + sqrt(1 + z²))`
//! - `acosh z = 2 · ln(sqrt((z + 1)/2) + sqrt((z - 1)/2))`
//! - `atanh z = (ln(1 + z) - ln(1 - z)) / 2`, `±1 ↦ ±∞`
//!
//! Invariant: every product with a constant (`i`, `-i`, `2`) is a full
//! complex product and every quotient `num_complex`'s `a·conj(b)/|b|²`, as
//! there, so `0 · ∞` gives NaN in the same places.

use super::complex_math::{C, E};
use jaxon_ir::primitive::BinaryOp;

impl E<'_, '_> {
    fn cadd(&mut self, x: C, y: C) -> C {
        C {
            re: self.add(x.re, y.re),
            im: self.add(x.im, y.im),
        }
    }

    fn csub(&mut self, x: C, y: C) -> C {
        C {
            re: self.sub(x.re, y.re),
            im: self.sub(x.im, y.im),
        }
    }

    /// `num_complex`'s quotient: `(a·c + b·d, b·c - a·d) / (c² + d²)`.
    fn cdiv_naive(&mut self, x: C, y: C) -> C {
        let cc = self.mul(y.re, y.re);
        let dd = self.mul(y.im, y.im);
        let n = self.add(cc, dd);
        let ac = self.mul(x.re, y.re);
        let bd = self.mul(x.im, y.im);
        let bc = self.mul(x.im, y.re);
        let ad = self.mul(x.re, y.im);
        let re = self.add(ac, bd);
        let im = self.sub(bc, ad);
        self.unscale(re, im, n)
    }

    /// XLA's `max x y` on complex numbers: `x` if `x > y` in the order by
    /// real then imaginary part (a NaN part compares false), else `y`.
    pub fn cmax(&mut self, x: C, y: C) -> C {
        let gt = self.lex_greater(x, y);
        self.selc(gt, y, x)
    }

    /// XLA's `min x y`: `x` if `x < y` in that order, else `y`.
    pub fn cmin(&mut self, x: C, y: C) -> C {
        let lt = self.lex_greater(y, x);
        self.selc(lt, y, x)
    }

    /// `x > y` by real part, then imaginary part.
    fn lex_greater(&mut self, x: C, y: C) -> jaxon_ir::Atom {
        let re_gt = self.b(BinaryOp::Gt, x.re, y.re);
        let re_eq = self.b(BinaryOp::Eq, x.re, y.re);
        let im_gt = self.b(BinaryOp::Gt, x.im, y.im);
        let tie = self.and(re_eq, im_gt);
        self.or(re_gt, tie)
    }

    /// `z == (re, im)`, part by part.
    fn is(&mut self, z: C, re: f64, im: f64) -> jaxon_ir::Atom {
        let (kr, ki) = (self.k(re), self.k(im));
        let r = self.b(BinaryOp::Eq, z.re, kr);
        let i = self.b(BinaryOp::Eq, z.im, ki);
        self.and(r, i)
    }

    /// `sqrt(1 + z²)` (`plus`) or `sqrt(1 - z²)`.
    fn sqrt_one_and_square(&mut self, z: C, plus: bool) -> C {
        let zz = self.cmul(z, z);
        let one = self.cnum(1.0, 0.0);
        let w = if plus {
            self.cadd(one, zz)
        } else {
            self.csub(one, zz)
        };
        self.csqrt(w)
    }

    /// `-i`, as `num_complex` negates `i`: `(-0, -1)`.
    fn neg_i(&self) -> C {
        self.cnum(-0.0, -1.0)
    }

    /// `asin z = -i · ln(sqrt(1 - z²) + i·z)`.
    pub fn casin(&mut self, z: C) -> C {
        let s = self.sqrt_one_and_square(z, false);
        let iz = self.cmul(self.cnum(0.0, 1.0), z);
        let w = self.cadd(s, iz);
        let l = self.cln(w);
        self.cmul(self.neg_i(), l)
    }

    /// `acos z = -i · ln(i·sqrt(1 - z²) + z)`.
    pub fn cacos(&mut self, z: C) -> C {
        let s = self.sqrt_one_and_square(z, false);
        let is = self.cmul(self.cnum(0.0, 1.0), s);
        let w = self.cadd(is, z);
        let l = self.cln(w);
        self.cmul(self.neg_i(), l)
    }

    /// `atan z = (ln(1 + i·z) - ln(1 - i·z)) / 2i`, `±i ↦ ±i∞`.
    pub fn catan(&mut self, z: C) -> C {
        let (i, one) = (self.cnum(0.0, 1.0), self.cnum(1.0, 0.0));
        let iz = self.cmul(i, z);
        let p = self.cadd(one, iz);
        let m = self.csub(one, iz);
        let (lp, lm) = (self.cln(p), self.cln(m));
        let d = self.csub(lp, lm);
        let two_i = self.cmul(self.cnum(2.0, 0.0), i);
        let q = self.cdiv_naive(d, two_i);
        let at_i = self.is(z, 0.0, 1.0);
        let at_neg_i = self.is(z, 0.0, -1.0);
        let q = self.selc(at_neg_i, q, self.cnum(0.0, f64::NEG_INFINITY));
        self.selc(at_i, q, self.cnum(0.0, f64::INFINITY))
    }

    /// `asinh z = ln(z + sqrt(1 + z²))`.
    pub fn casinh(&mut self, z: C) -> C {
        let s = self.sqrt_one_and_square(z, true);
        let w = self.cadd(z, s);
        self.cln(w)
    }

    /// `acosh z = 2 · ln(sqrt((z + 1)/2) + sqrt((z - 1)/2))`.
    pub fn cacosh(&mut self, z: C) -> C {
        let (one, two) = (self.cnum(1.0, 0.0), self.cnum(2.0, 0.0));
        let zp = self.cadd(z, one);
        let zm = self.csub(z, one);
        let hp = self.cdiv_naive(zp, two);
        let hm = self.cdiv_naive(zm, two);
        let (sp, sm) = (self.csqrt(hp), self.csqrt(hm));
        let w = self.cadd(sp, sm);
        let l = self.cln(w);
        self.cmul(two, l)
    }

    /// `atanh z = (ln(1 + z) - ln(1 - z)) / 2`, `±1 ↦ ±∞`.
    pub fn catanh(&mut self, z: C) -> C {
        let one = self.cnum(1.0, 0.0);
        let p = self.cadd(one, z);
        let m = self.csub(one, z);
        let (lp, lm) = (self.cln(p), self.cln(m));
        let d = self.csub(lp, lm);
        let q = self.cdiv_naive(d, self.cnum(2.0, 0.0));
        let at_one = self.is(z, 1.0, 0.0);
        let at_neg_one = self.is(z, -1.0, 0.0);
        let q = self.selc(at_neg_one, q, self.cnum(f64::NEG_INFINITY, 0.0));
        self.selc(at_one, q, self.cnum(f64::INFINITY, 0.0))
    }
}
