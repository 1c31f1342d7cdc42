//! The complex arithmetic of the rewrite (`complex.rs`): real equations
//! for each complex formula, emitted by [`E`] over one shape.
//!
//! Arithmetic is computed in `f64` for `c64` and `c128` alike (operands
//! converted up, results rounded back), with `num_complex`'s formulas —
//! the interpreter's — so that results agree with it to a few ulps:
//! `mul` `(ac - bd, ad + bc)`, `div` as XLA divides (`complex_div.rs`), `abs` a scaled
//! hypot (`m·sqrt(1 + (n/m)²)`, infinite if a part is), `exp` with
//! `num_complex`'s corner cases for infinite and NaN parts, `log`
//! `(ln|z|, atan2)`, `sqrt` with its branch rules, the trigonometric and
//! hyperbolic functions by their real-part formulas, `integer_pow` by the
//! same square-and-multiply sequence. Invariant: every equation [`E`]
//! emits has the shape `E::sh`.

use super::complex::{refuse, Rw};
use jaxon_ir::primitive::{BinaryOp, Elementwise, Primitive, UnaryOp};
use jaxon_ir::{Atom, DType, IrError, Literal};

/// The compute dtype of complex arithmetic.
pub(crate) const CD: DType = DType::F64;

/// A complex value in the compute dtype.
#[derive(Clone, Copy)]
pub(crate) struct C {
    pub re: Atom,
    pub im: Atom,
}

/// Emits real equations of one shape in the compute dtype.
pub(crate) struct E<'r, 'a> {
    pub rw: &'r mut Rw<'a>,
    pub sh: Vec<usize>,
    /// The dtype equations are emitted in: [`CD`], except inside
    /// [`E::cdiv`] for `c64` (`f32`, as XLA divides).
    pub cd: DType,
}

impl<'r, 'a> E<'r, 'a> {
    pub fn new(rw: &'r mut Rw<'a>, sh: Vec<usize>) -> Self {
        E { rw, sh, cd: CD }
    }
    pub fn k(&self, v: f64) -> Atom {
        Atom::Lit(Literal::new(v, self.cd))
    }
    pub fn u(&mut self, op: UnaryOp, x: Atom) -> Atom {
        let sh = self.sh.clone();
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Unary(op)),
            vec![x],
            self.cd,
            &sh,
        )
    }
    pub fn b(&mut self, op: BinaryOp, x: Atom, y: Atom) -> Atom {
        let sh = self.sh.clone();
        let dt = match op {
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::LtTo
            | BinaryOp::LeTo => DType::Bool,
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Rem
            | BinaryOp::Pow
            | BinaryOp::Max
            | BinaryOp::Min
            | BinaryOp::Atan2
            | BinaryOp::Nextafter
            | BinaryOp::Xor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRightArithmetic
            | BinaryOp::ShiftRightLogical
            | BinaryOp::AddAny
            | BinaryOp::Igamma
            | BinaryOp::Igammac
            | BinaryOp::IgammaGradA
            | BinaryOp::RandomGammaGrad
            | BinaryOp::Polygamma
            | BinaryOp::Zeta => self.cd,
        };
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Binary(op)),
            vec![x, y],
            dt,
            &sh,
        )
    }
    pub fn add(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Add, x, y)
    }
    pub fn sub(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Sub, x, y)
    }
    pub fn mul(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Mul, x, y)
    }
    pub fn div(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Div, x, y)
    }
    pub fn and(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::And, x, y)
    }
    pub fn or(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Or, x, y)
    }
    pub fn eq0(&mut self, x: Atom) -> Atom {
        let z = self.k(0.0);
        self.b(BinaryOp::Eq, x, z)
    }
    pub fn isinf(&mut self, x: Atom) -> Atom {
        let a = self.u(UnaryOp::Abs, x);
        let inf = self.k(f64::INFINITY);
        self.b(BinaryOp::Eq, a, inf)
    }
    pub fn finite(&mut self, x: Atom) -> Atom {
        let sh = self.sh.clone();
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::IsFinite)),
            vec![x],
            DType::Bool,
            &sh,
        )
    }
    pub fn not(&mut self, x: Atom) -> Atom {
        let sh = self.sh.clone();
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Not)),
            vec![x],
            DType::Bool,
            &sh,
        )
    }
    /// `x` is `+0`, positive, or a NaN (treated as positive).
    pub fn sign_positive(&mut self, x: Atom) -> Atom {
        let z = self.k(0.0);
        let neg = self.b(BinaryOp::Lt, x, z);
        let one = self.k(1.0);
        let r = self.div(one, x);
        let rneg = self.b(BinaryOp::Lt, r, z);
        let x0 = self.eq0(x);
        let negzero = self.and(x0, rneg);
        let n = self.or(neg, negzero);
        self.not(n)
    }
    /// `p ? t : f`.
    pub fn sel(&mut self, p: Atom, f: Atom, t: Atom) -> Atom {
        let sh = self.sh.clone();
        let f = self.rw.materialize(f, self.cd, &sh);
        let t = self.rw.materialize(t, self.cd, &sh);
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::SelectN),
            vec![p, f, t],
            self.cd,
            &sh,
        )
    }
    pub fn selc(&mut self, p: Atom, f: C, t: C) -> C {
        C {
            re: self.sel(p, f.re, t.re),
            im: self.sel(p, f.im, t.im),
        }
    }
    pub fn cnum(&self, re: f64, im: f64) -> C {
        C {
            re: self.k(re),
            im: self.k(im),
        }
    }

    pub fn cmul(&mut self, x: C, y: C) -> C {
        let ac = self.mul(x.re, y.re);
        let bd = self.mul(x.im, y.im);
        let ad = self.mul(x.re, y.im);
        let bc = self.mul(x.im, y.re);
        C {
            re: self.sub(ac, bd),
            im: self.add(ad, bc),
        }
    }
    pub fn cinv(&mut self, z: C) -> C {
        let aa = self.mul(z.re, z.re);
        let bb = self.mul(z.im, z.im);
        let ns = self.add(aa, bb);
        let nb = self.u(UnaryOp::Neg, z.im);
        C {
            re: self.div(z.re, ns),
            im: self.div(nb, ns),
        }
    }
    pub fn hypot(&mut self, a: Atom, b: Atom) -> Atom {
        let aa = self.u(UnaryOp::Abs, a);
        let ab = self.u(UnaryOp::Abs, b);
        let m = self.b(BinaryOp::Max, aa, ab);
        let n = self.b(BinaryOp::Min, aa, ab);
        let q = self.div(n, m);
        let qq = self.mul(q, q);
        let one = self.k(1.0);
        let s = self.add(one, qq);
        let s = self.u(UnaryOp::Sqrt, s);
        let r = self.mul(m, s);
        let m0 = self.eq0(m);
        let zero = self.k(0.0);
        let r = self.sel(m0, r, zero);
        let ia = self.isinf(a);
        let ib = self.isinf(b);
        let inf = self.or(ia, ib);
        let k = self.k(f64::INFINITY);
        self.sel(inf, r, k)
    }
    pub fn polar(&mut self, r: Atom, theta: Atom) -> C {
        let c = self.u(UnaryOp::Cos, theta);
        let s = self.u(UnaryOp::Sin, theta);
        C {
            re: self.mul(r, c),
            im: self.mul(r, s),
        }
    }
    pub fn cexp(&mut self, z: C) -> C {
        let e = self.u(UnaryOp::Exp, z.re);
        let r = self.polar(e, z.im);
        let re_inf = self.isinf(z.re);
        let zero = self.k(0.0);
        let re_neg = self.b(BinaryOp::Lt, z.re, zero);
        let re_pos = self.not(re_neg);
        let im_fin = self.finite(z.im);
        let im_nonfin = self.not(im_fin);
        let im0 = self.eq0(z.im);
        // re = -inf, im not finite: 0.
        let c1 = self.and(re_inf, re_neg);
        let c1 = self.and(c1, im_nonfin);
        let r = self.selc(c1, r, self.cnum(0.0, 0.0));
        // re = +inf, im zero or not finite: (re, im, or NaN for an infinite im).
        let c2 = self.and(re_inf, re_pos);
        let c2i = self.or(im0, im_nonfin);
        let c2 = self.and(c2, c2i);
        let im_inf = self.isinf(z.im);
        let nan = self.k(f64::NAN);
        let im2 = self.sel(im_inf, z.im, nan);
        let r = self.selc(c2, r, C { re: z.re, im: im2 });
        // re NaN, im zero: z.
        let re_nan = self.u(UnaryOp::Neg, z.re);
        let re_nan = self.b(BinaryOp::Ne, re_nan, re_nan);
        let c3 = self.and(re_nan, im0);
        self.selc(c3, r, z)
    }
    pub fn cln(&mut self, z: C) -> C {
        let r = self.hypot(z.re, z.im);
        C {
            re: self.u(UnaryOp::Log, r),
            im: self.b(BinaryOp::Atan2, z.im, z.re),
        }
    }
    pub fn csqrt(&mut self, z: C) -> C {
        let (a, b) = (z.re, z.im);
        // General case: from_polar(sqrt r, theta / 2).
        let r = self.hypot(a, b);
        let sr = self.u(UnaryOp::Sqrt, r);
        let th = self.b(BinaryOp::Atan2, b, a);
        let half = self.k(0.5);
        let th2 = self.mul(th, half);
        let general = self.polar(sr, th2);
        let bpos = self.sign_positive(b);
        // re == 0: x = sqrt(|b| / 2), (x, ±x).
        let ab = self.u(UnaryOp::Abs, b);
        let two = self.k(2.0);
        let x = self.div(ab, two);
        let x = self.u(UnaryOp::Sqrt, x);
        let nx = self.u(UnaryOp::Neg, x);
        let xi = self.sel(bpos, nx, x);
        let r0 = C { re: x, im: xi };
        let a0 = self.eq0(a);
        let out = self.selc(a0, general, r0);
        // im == 0: (sqrt a, b) for a sign-positive a, else (0, ±sqrt(-a)).
        let apos = self.sign_positive(a);
        let sa = self.u(UnaryOp::Sqrt, a);
        let na = self.u(UnaryOp::Neg, a);
        let sna = self.u(UnaryOp::Sqrt, na);
        let nsna = self.u(UnaryOp::Neg, sna);
        let im_neg = self.sel(bpos, nsna, sna);
        let real_neg = C {
            re: self.k(0.0),
            im: im_neg,
        };
        let real = self.selc(apos, real_neg, C { re: sa, im: b });
        let b0 = self.eq0(b);
        self.selc(b0, out, real)
    }
    /// `(p + i q) / d` for real `d`.
    pub fn unscale(&mut self, p: Atom, q: Atom, d: Atom) -> C {
        C {
            re: self.div(p, d),
            im: self.div(q, d),
        }
    }
    pub fn twice(&mut self, x: Atom) -> Atom {
        self.add(x, x)
    }
    pub fn cunary(&mut self, op: UnaryOp, z: C) -> Result<C, IrError> {
        use UnaryOp as U;
        let (a, b) = (z.re, z.im);
        Ok(match op {
            U::Exp => self.cexp(z),
            U::Exp2 => {
                let l = self.k(std::f64::consts::LN_2);
                let w = C {
                    re: self.mul(a, l),
                    im: self.mul(b, l),
                };
                self.cexp(w)
            }
            U::Log => self.cln(z),
            U::Log1p => {
                let two = self.k(2.0);
                let one = self.k(1.0);
                let t = self.add(two, a);
                let t = self.mul(a, t);
                let bb = self.mul(b, b);
                let t = self.add(t, bb);
                let t = self.u(U::Log1p, t);
                let half = self.k(0.5);
                let ap1 = self.add(one, a);
                C {
                    re: self.mul(half, t),
                    im: self.b(BinaryOp::Atan2, b, ap1),
                }
            }
            U::Expm1 => {
                let half = self.k(0.5);
                let h = self.mul(b, half);
                let s = self.u(U::Sin, h);
                let em = self.u(U::Expm1, a);
                let cb = self.u(U::Cos, b);
                let t = self.mul(em, cb);
                let two = self.k(2.0);
                let ss = self.mul(s, s);
                let ss = self.mul(two, ss);
                let ea = self.u(U::Exp, a);
                let sb = self.u(U::Sin, b);
                C {
                    re: self.sub(t, ss),
                    im: self.mul(ea, sb),
                }
            }
            U::Sin | U::Cos | U::Sinh | U::Cosh => {
                let (sa, ca) = (self.u(U::Sin, a), self.u(U::Cos, a));
                let (shb, chb) = (self.u(U::Sinh, b), self.u(U::Cosh, b));
                match op {
                    U::Sin => C {
                        re: self.mul(sa, chb),
                        im: self.mul(ca, shb),
                    },
                    U::Cos => {
                        let nsa = self.u(U::Neg, sa);
                        C {
                            re: self.mul(ca, chb),
                            im: self.mul(nsa, shb),
                        }
                    }
                    _ => {
                        // sinh, cosh: swap the roles of the parts.
                        let (sha, cha) = (self.u(U::Sinh, a), self.u(U::Cosh, a));
                        let (sb, cb) = (self.u(U::Sin, b), self.u(U::Cos, b));
                        if op == U::Sinh {
                            C {
                                re: self.mul(sha, cb),
                                im: self.mul(cha, sb),
                            }
                        } else {
                            C {
                                re: self.mul(cha, cb),
                                im: self.mul(sha, sb),
                            }
                        }
                    }
                }
            }
            U::Tan => {
                let (a2, b2) = (self.twice(a), self.twice(b));
                let p = self.u(U::Sin, a2);
                let q = self.u(U::Sinh, b2);
                let c = self.u(U::Cos, a2);
                let ch = self.u(U::Cosh, b2);
                let d = self.add(c, ch);
                self.unscale(p, q, d)
            }
            U::Tanh => {
                let (a2, b2) = (self.twice(a), self.twice(b));
                let p = self.u(U::Sinh, a2);
                let q = self.u(U::Sin, b2);
                let ch = self.u(U::Cosh, a2);
                let c = self.u(U::Cos, b2);
                let d = self.add(ch, c);
                self.unscale(p, q, d)
            }
            U::Sqrt => self.csqrt(z),
            U::Rsqrt => {
                let s = self.csqrt(z);
                self.cinv(s)
            }
            U::Square => self.cmul(z, z),
            U::Logistic => {
                let n = C {
                    re: self.u(U::Neg, a),
                    im: self.u(U::Neg, b),
                };
                let e = self.cexp(n);
                let one = self.k(1.0);
                let d = C {
                    re: self.add(one, e.re),
                    im: e.im,
                };
                self.cinv(d)
            }
            U::Sign => {
                let r = self.hypot(a, b);
                let q = self.unscale(a, b, r);
                let r0 = self.eq0(r);
                self.selc(r0, q, self.cnum(0.0, 0.0))
            }
            U::Neg | U::Abs | U::IsFinite | U::Copy | U::StopGradient => {
                return Err(refuse(op.name(), "handled by the caller"))
            }
            U::Asin => self.casin(z),
            U::Acos => self.cacos(z),
            U::Atan => self.catan(z),
            U::Asinh => self.casinh(z),
            U::Acosh => self.cacosh(z),
            U::Atanh => self.catanh(z),
            U::Floor
            | U::Ceil
            | U::Cbrt
            | U::Not
            | U::Erf
            | U::Erfc
            | U::ErfInv
            | U::Lgamma
            | U::Digamma
            | U::BesselI0e
            | U::BesselI1e
            | U::PopulationCount
            | U::Clz => return Err(refuse(op.name(), "no complex lowering")),
        })
    }
    pub fn cpow(&mut self, x: C, y: C) -> C {
        let l = self.cln(x);
        let t = self.cmul(y, l);
        let base = self.cexp(t);
        let xr0 = self.eq0(x.re);
        let xi0 = self.eq0(x.im);
        let x0 = self.and(xr0, xi0);
        let yr0 = self.eq0(y.re);
        let yi0 = self.eq0(y.im);
        let y0 = self.and(yr0, yi0);
        let zero = self.k(0.0);
        let ypos = self.b(BinaryOp::Gt, y.re, zero);
        let ypos = self.and(ypos, yi0);
        let zr = self.selc(ypos, self.cnum(f64::NAN, f64::NAN), self.cnum(0.0, 0.0));
        let r = self.selc(x0, base, zr);
        self.selc(y0, r, self.cnum(1.0, 0.0))
    }
    /// `num_complex`'s `powi`: square-and-multiply, `1/z` first for a
    /// negative exponent.
    pub fn cipow(&mut self, z: C, y: i64) -> C {
        if y == 0 {
            return self.cnum(1.0, 0.0);
        }
        let mut base = if y < 0 { self.cinv(z) } else { z };
        let mut e = y.unsigned_abs();
        while e & 1 == 0 {
            base = self.cmul(base, base);
            e >>= 1;
        }
        if e == 1 {
            return base;
        }
        let mut acc = base;
        while e > 1 {
            e >>= 1;
            base = self.cmul(base, base);
            if e & 1 == 1 {
                acc = self.cmul(acc, base);
            }
        }
        acc
    }
}
