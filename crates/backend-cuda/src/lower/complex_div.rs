//! Complex division in the rewrite, as XLA divides (the interpreter's
//! `jaxon_ir::interp::ops::complex_div`, step for step): Smith's algorithm
//! scaled by the divisor's larger part, and where both parts of that are
//! NaN, C99 Annex G's corner cases (a zero divisor gives signed
//! infinities, an infinite numerator over a finite divisor infinities, a
//! finite numerator over an infinite divisor signed zeros).
//!
//! Invariant: `c64` division is emitted in `f32` (operands narrowed, which
//! is exact, the quotient widened back), so the intermediate overflows XLA
//! has happen here too; `c128` in `f64`.

use super::complex_math::{C, E};
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::{Atom, DType};

impl E<'_, '_> {
    /// `m` (not negative) with the sign of `v` (a NaN's sign counts as
    /// positive).
    fn copysign(&mut self, m: Atom, v: Atom) -> Atom {
        let pos = self.sign_positive(v);
        let neg = self.u(UnaryOp::Neg, m);
        self.sel(pos, neg, m)
    }

    /// `copysign(isinf(v) ? 1 : 0, v)`.
    fn inf_unit(&mut self, v: Atom) -> Atom {
        let inf = self.isinf(v);
        let (zero, one) = (self.k(0.0), self.k(1.0));
        let m = self.sel(inf, zero, one);
        self.copysign(m, v)
    }

    /// `a·b + c·d` and `c·b - a·d`: the two parts every corner case forms.
    fn cross(&mut self, a: Atom, c: Atom, b: Atom, d: Atom) -> (Atom, Atom) {
        let ab = self.mul(a, b);
        let cd = self.mul(c, d);
        let cb = self.mul(c, b);
        let ad = self.mul(a, d);
        (self.add(ab, cd), self.sub(cb, ad))
    }

    /// `x / y` for complex operands whose parts are `part` (`f32` for
    /// `c64`), given and returned in the compute dtype.
    pub fn cdiv(&mut self, x: C, y: C, part: DType) -> C {
        let inner = part.real_dtype();
        let outer = self.cd;
        if inner == outer {
            return self.xla_div(x, y);
        }
        let sh = self.sh.clone();
        let narrow = |m: &mut Self, a: Atom| m.rw.convert(a, outer, inner, &sh);
        let (x, y) = (
            C {
                re: narrow(self, x.re),
                im: narrow(self, x.im),
            },
            C {
                re: narrow(self, y.re),
                im: narrow(self, y.im),
            },
        );
        self.cd = inner;
        let q = self.xla_div(x, y);
        self.cd = outer;
        C {
            re: self.rw.convert(q.re, inner, outer, &sh),
            im: self.rw.convert(q.im, inner, outer, &sh),
        }
    }

    fn xla_div(&mut self, x: C, y: C) -> C {
        let (ar, ai, br, bi) = (x.re, x.im, y.re, y.im);
        // Smith's algorithm, both branches, selected by |br| < |bi|.
        let abr = self.u(UnaryOp::Abs, br);
        let abi = self.u(UnaryOp::Abs, bi);
        let lt = self.b(BinaryOp::Lt, abr, abi);
        let r1 = self.div(br, bi);
        let d1 = self.mul(br, r1);
        let d1 = self.add(bi, d1);
        let (n1r, n1i) = {
            let t = self.mul(ar, r1);
            let re = self.add(t, ai);
            let t = self.mul(ai, r1);
            (re, self.sub(t, ar))
        };
        let r2 = self.div(bi, br);
        let d2 = self.mul(bi, r2);
        let d2 = self.add(br, d2);
        let (n2r, n2i) = {
            let t = self.mul(ai, r2);
            let re = self.add(ar, t);
            let t = self.mul(ar, r2);
            (re, self.sub(ai, t))
        };
        let q1 = C {
            re: self.div(n1r, d1),
            im: self.div(n1i, d1),
        };
        let q2 = C {
            re: self.div(n2r, d2),
            im: self.div(n2i, d2),
        };
        let q = self.selc(lt, q2, q1);

        let inf = self.k(f64::INFINITY);
        let zero = self.k(0.0);
        // A zero divisor, a numerator not NaN in both parts.
        let br0 = self.eq0(br);
        let bi0 = self.eq0(bi);
        let y0 = self.and(br0, bi0);
        let arn = self.b(BinaryOp::Ne, ar, ar);
        let ain = self.b(BinaryOp::Ne, ai, ai);
        let xnan = self.and(arn, ain);
        let xok = self.not(xnan);
        let zero_div = self.and(y0, xok);
        let s = self.copysign(inf, br);
        let zq = C {
            re: self.mul(s, ar),
            im: self.mul(s, ai),
        };
        // An infinite numerator over a finite divisor.
        let ari = self.isinf(ar);
        let aii = self.isinf(ai);
        let xinf = self.or(ari, aii);
        let brf = self.finite(br);
        let bif = self.finite(bi);
        let yfin = self.and(brf, bif);
        let inf_num = self.and(xinf, yfin);
        let (ur, ui) = (self.inf_unit(ar), self.inf_unit(ai));
        let (p, m) = self.cross(ur, ui, br, bi);
        let iq = C {
            re: self.mul(inf, p),
            im: self.mul(inf, m),
        };
        // A finite numerator over an infinite divisor.
        let bri = self.isinf(br);
        let bii = self.isinf(bi);
        let yinf = self.or(bri, bii);
        let arf = self.finite(ar);
        let aif = self.finite(ai);
        let xfin = self.and(arf, aif);
        let inf_den = self.and(yinf, xfin);
        let (vr, vi) = (self.inf_unit(br), self.inf_unit(bi));
        let (p, m) = self.cross(ar, ai, vr, vi);
        let fq = C {
            re: self.mul(zero, p),
            im: self.mul(zero, m),
        };
        // Corner cases replace a quotient NaN in both parts only.
        let fixed = self.selc(inf_den, q, fq);
        let fixed = self.selc(inf_num, fixed, iq);
        let fixed = self.selc(zero_div, fixed, zq);
        let qrn = self.b(BinaryOp::Ne, q.re, q.re);
        let qin = self.b(BinaryOp::Ne, q.im, q.im);
        let qnan = self.and(qrn, qin);
        self.selc(qnan, q, fixed)
    }
}
