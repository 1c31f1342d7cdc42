//! The rule table of the complex rewrite (`complex.rs`): one equation with
//! complex operands or results becomes real equations.
//!
//! Arithmetic is computed in `f64` for `c64` and `c128` alike (operands
//! converted up, results rounded back), with `num_complex`'s formulas —
//! the interpreter's — so that results agree with it to a few ulps:
//! `mul` `(ac - bd, ad + bc)`, `div` by the squared norm, `abs` a scaled
//! hypot (`m·sqrt(1 + (n/m)²)`, infinite if a part is), `exp` with
//! `num_complex`'s corner cases for infinite and NaN parts, `log`
//! `(ln|z|, atan2)`, `sqrt` with its branch rules, the trigonometric and
//! hyperbolic functions by their real-part formulas, `integer_pow` by the
//! same square-and-multiply sequence. Invariant: every arm either emits
//! equations whose results have the source results' shapes, or refuses.

use super::complex::{
    convert_prim, refuse, reshape_prim, slice_prim, transpose_prim, Pair, Rw, Val,
};
use jaxon_ir::primitive::{
    BinaryOp, CumulativeOp, DotGeneralParams, Elementwise, Indexing, Ints, Linalg, PadParams,
    Primitive, ReduceOp, ReduceParams, Reduction, ScatterKind, Structural, UnaryOp,
};
use jaxon_ir::{Atom, DType, Eqn, IrError, Literal};

/// The compute dtype of complex arithmetic.
const CD: DType = DType::F64;

/// A complex value in the compute dtype.
#[derive(Clone, Copy)]
struct C {
    re: Atom,
    im: Atom,
}

/// Emits real equations of one shape in the compute dtype.
struct E<'r, 'a> {
    rw: &'r mut Rw<'a>,
    sh: Vec<usize>,
}

impl E<'_, '_> {
    fn k(&self, v: f64) -> Atom {
        Atom::Lit(Literal::new(v, CD))
    }
    fn u(&mut self, op: UnaryOp, x: Atom) -> Atom {
        let sh = self.sh.clone();
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Unary(op)),
            vec![x],
            CD,
            &sh,
        )
    }
    fn b(&mut self, op: BinaryOp, x: Atom, y: Atom) -> Atom {
        let sh = self.sh.clone();
        let dt = match op {
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::And
            | BinaryOp::Or => DType::Bool,
            _ => CD,
        };
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Binary(op)),
            vec![x, y],
            dt,
            &sh,
        )
    }
    fn add(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Add, x, y)
    }
    fn sub(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Sub, x, y)
    }
    fn mul(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Mul, x, y)
    }
    fn div(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Div, x, y)
    }
    fn and(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::And, x, y)
    }
    fn or(&mut self, x: Atom, y: Atom) -> Atom {
        self.b(BinaryOp::Or, x, y)
    }
    fn eq0(&mut self, x: Atom) -> Atom {
        let z = self.k(0.0);
        self.b(BinaryOp::Eq, x, z)
    }
    fn isinf(&mut self, x: Atom) -> Atom {
        let a = self.u(UnaryOp::Abs, x);
        let inf = self.k(f64::INFINITY);
        self.b(BinaryOp::Eq, a, inf)
    }
    fn finite(&mut self, x: Atom) -> Atom {
        let sh = self.sh.clone();
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::IsFinite)),
            vec![x],
            DType::Bool,
            &sh,
        )
    }
    fn not(&mut self, x: Atom) -> Atom {
        let sh = self.sh.clone();
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Not)),
            vec![x],
            DType::Bool,
            &sh,
        )
    }
    /// `x` is `+0`, positive, or a NaN (treated as positive).
    fn sign_positive(&mut self, x: Atom) -> Atom {
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
    fn sel(&mut self, p: Atom, f: Atom, t: Atom) -> Atom {
        let sh = self.sh.clone();
        let f = self.rw.materialize(f, CD, &sh);
        let t = self.rw.materialize(t, CD, &sh);
        self.rw.emit1(
            Primitive::Elementwise(Elementwise::SelectN),
            vec![p, f, t],
            CD,
            &sh,
        )
    }
    fn selc(&mut self, p: Atom, f: C, t: C) -> C {
        C {
            re: self.sel(p, f.re, t.re),
            im: self.sel(p, f.im, t.im),
        }
    }
    fn cnum(&self, re: f64, im: f64) -> C {
        C {
            re: self.k(re),
            im: self.k(im),
        }
    }

    fn cmul(&mut self, x: C, y: C) -> C {
        let ac = self.mul(x.re, y.re);
        let bd = self.mul(x.im, y.im);
        let ad = self.mul(x.re, y.im);
        let bc = self.mul(x.im, y.re);
        C {
            re: self.sub(ac, bd),
            im: self.add(ad, bc),
        }
    }
    fn cdiv(&mut self, x: C, y: C) -> C {
        let cc = self.mul(y.re, y.re);
        let dd = self.mul(y.im, y.im);
        let ns = self.add(cc, dd);
        let ac = self.mul(x.re, y.re);
        let bd = self.mul(x.im, y.im);
        let bc = self.mul(x.im, y.re);
        let ad = self.mul(x.re, y.im);
        let re = self.add(ac, bd);
        let im = self.sub(bc, ad);
        C {
            re: self.div(re, ns),
            im: self.div(im, ns),
        }
    }
    fn cinv(&mut self, z: C) -> C {
        let aa = self.mul(z.re, z.re);
        let bb = self.mul(z.im, z.im);
        let ns = self.add(aa, bb);
        let nb = self.u(UnaryOp::Neg, z.im);
        C {
            re: self.div(z.re, ns),
            im: self.div(nb, ns),
        }
    }
    fn hypot(&mut self, a: Atom, b: Atom) -> Atom {
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
    fn polar(&mut self, r: Atom, theta: Atom) -> C {
        let c = self.u(UnaryOp::Cos, theta);
        let s = self.u(UnaryOp::Sin, theta);
        C {
            re: self.mul(r, c),
            im: self.mul(r, s),
        }
    }
    fn cexp(&mut self, z: C) -> C {
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
    fn cln(&mut self, z: C) -> C {
        let r = self.hypot(z.re, z.im);
        C {
            re: self.u(UnaryOp::Log, r),
            im: self.b(BinaryOp::Atan2, z.im, z.re),
        }
    }
    fn csqrt(&mut self, z: C) -> C {
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
    fn unscale(&mut self, p: Atom, q: Atom, d: Atom) -> C {
        C {
            re: self.div(p, d),
            im: self.div(q, d),
        }
    }
    fn twice(&mut self, x: Atom) -> Atom {
        self.add(x, x)
    }
    fn cunary(&mut self, op: UnaryOp, z: C) -> Result<C, IrError> {
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
            U::Floor
            | U::Ceil
            | U::Asin
            | U::Acos
            | U::Atan
            | U::Asinh
            | U::Acosh
            | U::Atanh
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
    fn cpow(&mut self, x: C, y: C) -> C {
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
    fn cipow(&mut self, z: C, y: i64) -> C {
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

/// A complex (or real) operand as a complex value of the compute dtype
/// and shape `sh`.
fn operand(rw: &mut Rw, a: &Atom, sh: &[usize]) -> Result<C, IrError> {
    let (d, s) = rw.src_type(a)?;
    let rdt = d.real_dtype();
    let (re, im) = match rw.val(a)? {
        Val::Cx(p) => (p.re, p.im),
        Val::Real(x) => (x, Atom::Lit(Literal::new(0.0, rdt))),
    };
    let part = |rw: &mut Rw, x: Atom| -> Atom {
        let x = rw.convert(x, rdt, CD, &s);
        let x = rw.materialize(x, CD, &s);
        if s.as_slice() != sh {
            broadcast(rw, x, CD, &s, sh)
        } else {
            x
        }
    };
    Ok(C {
        re: part(rw, re),
        im: part(rw, im),
    })
}

/// An array of shape `from` broadcast to `sh`, numpy style (trailing
/// dimensions aligned, size-1 dimensions stretched), as the interpreter
/// broadcasts the operands of binary ops.
fn broadcast(rw: &mut Rw, x: Atom, dt: DType, from: &[usize], sh: &[usize]) -> Atom {
    let lead = sh.len().saturating_sub(from.len()) as i64;
    let p = Primitive::Structural(Structural::BroadcastInDim(
        jaxon_ir::primitive::BroadcastInDimParams {
            shape: sh.iter().map(|&d| Some(d)).collect(),
            broadcast_dimensions: Ints::new((0..from.len() as i64).map(|d| d + lead).collect()),
        },
    ));
    rw.emit1(p, vec![x], dt, sh)
}

/// A compute-dtype result rounded to the component dtype `rdt`.
fn result(rw: &mut Rw, z: C, rdt: DType, sh: &[usize]) -> Pair {
    let re = rw.materialize(z.re, CD, sh);
    let im = rw.materialize(z.im, CD, sh);
    Pair {
        re: rw.convert(re, CD, rdt, sh),
        im: rw.convert(im, CD, rdt, sh),
    }
}

/// Rewrites one equation with complex operands or results.
pub(crate) fn rewrite(rw: &mut Rw, e: &Eqn) -> Result<(), IrError> {
    let name = e.primitive.name();
    let same = |rw: &mut Rw| rw.per_part(e, e.primitive.clone());
    match &e.primitive {
        Primitive::Elementwise(p) => elementwise(rw, e, p),
        Primitive::Structural(s) => match s {
            Structural::BroadcastInDim(_)
            | Structural::Reshape(_)
            | Structural::Transpose(_)
            | Structural::Squeeze(_)
            | Structural::Rev(_)
            | Structural::Pad(_)
            | Structural::Concatenate(_)
            | Structural::Split(_)
            | Structural::Tile(_)
            | Structural::Stack(_) => same(rw),
            Structural::Iota(_) | Structural::Empty2(_) => Err(refuse(name, "no complex lowering")),
        },
        Primitive::Indexing(i) => match i {
            Indexing::Slice(_)
            | Indexing::DynamicSlice(_)
            | Indexing::DynamicUpdateSlice
            | Indexing::Gather(_) => same(rw),
            Indexing::Scatter(p) => match p.kind {
                ScatterKind::Set | ScatterKind::Add => same(rw),
                ScatterKind::Mul | ScatterKind::Min | ScatterKind::Max => {
                    Err(refuse(name, "only scatter and scatter-add lower"))
                }
            },
        },
        Primitive::Reduction(r) => match r {
            Reduction::Reduce(p) => match p.op {
                ReduceOp::Sum => same(rw),
                ReduceOp::Prod => reduce_prod(rw, e, p),
                ReduceOp::Max | ReduceOp::Min | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                    Err(refuse(name, "no complex lowering"))
                }
            },
            Reduction::Cumulative(p) => match p.op {
                CumulativeOp::Cumsum => same(rw),
                CumulativeOp::Cumprod
                | CumulativeOp::Cummax
                | CumulativeOp::Cummin
                | CumulativeOp::Cumlogsumexp => Err(refuse(name, "only cumsum lowers")),
            },
            Reduction::ArgReduce(_) | Reduction::Sort(_) | Reduction::TopK(_) => {
                Err(refuse(name, "no complex lowering"))
            }
        },
        Primitive::Linalg(l) => match l {
            Linalg::DotGeneral(p) => dot_general(rw, e, p),
            Linalg::Fft(p) => super::complex_fft::fft(rw, e, p),
            Linalg::ConvGeneralDilated(_)
            | Linalg::Cholesky
            | Linalg::TriangularSolve(_)
            | Linalg::Lu
            | Linalg::Qr(_)
            | Linalg::Eigh(_)
            | Linalg::Svd(_)
            | Linalg::Schur(_)
            | Linalg::TridiagonalSolve(_) => Err(refuse(name, "no complex lowering")),
        },
        Primitive::Control(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => Err(refuse(name, "no complex lowering")),
    }
}

/// The one output's type.
fn out1(rw: &Rw, e: &Eqn) -> Result<(DType, Vec<usize>), IrError> {
    let b = e
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid(format!("{}: no output", e.primitive.name())))?;
    rw.src_out_type(b)
}

/// The `i`th operand.
fn arg(e: &Eqn, i: usize) -> Result<&Atom, IrError> {
    e.inputs
        .get(i)
        .ok_or_else(|| IrError::Invalid(format!("{}: missing operand {i}", e.primitive.name())))
}

fn bind1(rw: &mut Rw, e: &Eqn, v: Val) -> Result<(), IrError> {
    let b = e
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid(format!("{}: no output", e.primitive.name())))?;
    rw.bind(b, v);
    Ok(())
}

/// An elementwise equation with complex operands or results.
fn elementwise(rw: &mut Rw, e: &Eqn, p: &Elementwise) -> Result<(), IrError> {
    let name = e.primitive.name();
    let (od, sh) = out1(rw, e)?;
    let rdt = od.real_dtype();
    match p {
        Elementwise::Unary(op) => match op {
            UnaryOp::Copy | UnaryOp::StopGradient => {
                let v = rw.val(arg(e, 0)?)?;
                bind1(rw, e, v)
            }
            UnaryOp::Neg => rw.per_part(e, e.primitive.clone()),
            UnaryOp::Abs | UnaryOp::IsFinite => {
                let z = operand(rw, arg(e, 0)?, &sh)?;
                let mut m = E { rw, sh: sh.clone() };
                let r = if *op == UnaryOp::Abs {
                    let h = m.hypot(z.re, z.im);
                    m.rw.convert(h, CD, od, &sh)
                } else {
                    let a = m.finite(z.re);
                    let b = m.finite(z.im);
                    m.and(a, b)
                };
                bind1(rw, e, Val::Real(r))
            }
            _ => {
                let z = operand(rw, arg(e, 0)?, &sh)?;
                let mut m = E { rw, sh: sh.clone() };
                let r = m.cunary(*op, z)?;
                let pr = result(rw, r, rdt, &sh);
                bind1(rw, e, Val::Cx(pr))
            }
        },
        Elementwise::Binary(op) => match op {
            BinaryOp::Add | BinaryOp::AddAny | BinaryOp::Sub => rw.per_part(e, e.primitive.clone()),
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow | BinaryOp::Eq | BinaryOp::Ne => {
                let x = operand(rw, arg(e, 0)?, &sh)?;
                let y = operand(rw, arg(e, 1)?, &sh)?;
                let mut m = E { rw, sh: sh.clone() };
                let r = match op {
                    BinaryOp::Mul => m.cmul(x, y),
                    BinaryOp::Div => m.cdiv(x, y),
                    BinaryOp::Pow => m.cpow(x, y),
                    _ => {
                        let a = m.b(BinaryOp::Eq, x.re, y.re);
                        let b = m.b(BinaryOp::Eq, x.im, y.im);
                        let eq = m.and(a, b);
                        let r = if *op == BinaryOp::Eq { eq } else { m.not(eq) };
                        return bind1(rw, e, Val::Real(r));
                    }
                };
                let pr = result(rw, r, rdt, &sh);
                bind1(rw, e, Val::Cx(pr))
            }
            _ => Err(refuse(name, "no complex lowering")),
        },
        Elementwise::IntegerPow(ip) => {
            let z = operand(rw, arg(e, 0)?, &sh)?;
            let mut m = E { rw, sh: sh.clone() };
            let r = m.cipow(z, ip.y);
            let pr = result(rw, r, rdt, &sh);
            bind1(rw, e, Val::Cx(pr))
        }
        Elementwise::SelectN => rw.per_part(e, e.primitive.clone()),
        Elementwise::ConvertElementType(cp) => {
            let a = arg(e, 0)?;
            let (id, s) = rw.src_type(a)?;
            match (rw.val(a)?, od.is_complex()) {
                (Val::Cx(q), true) => {
                    let ir = id.real_dtype();
                    let re = rw.convert(q.re, ir, rdt, &s);
                    let im = rw.convert(q.im, ir, rdt, &s);
                    bind1(rw, e, Val::Cx(Pair { re, im }))
                }
                (Val::Cx(q), false) => {
                    // The real part, as JAX converts (with a warning).
                    let re = rw.emit1(convert_prim(cp.new_dtype), vec![q.re], cp.new_dtype, &s);
                    bind1(rw, e, Val::Real(re))
                }
                (Val::Real(x), true) => {
                    let re = rw.convert(x, id, rdt, &s);
                    let re = rw.materialize(re, rdt, &s);
                    let im = rw.materialize(Atom::Lit(Literal::new(0.0, rdt)), rdt, &s);
                    bind1(rw, e, Val::Cx(Pair { re, im }))
                }
                (Val::Real(_), false) => Err(IrError::Invalid(
                    "a real convert in the complex rewrite".into(),
                )),
            }
        }
        Elementwise::Complex => {
            let mut parts = Vec::new();
            for i in 0..2 {
                let a = arg(e, i)?;
                let (d, s) = rw.src_type(a)?;
                let x = match rw.val(a)? {
                    Val::Real(x) => x,
                    Val::Cx(_) => return Err(refuse(name, "a complex operand")),
                };
                let x = rw.convert(x, d, rdt, &s);
                let x = rw.materialize(x, rdt, &s);
                parts.push(if s != sh {
                    broadcast(rw, x, rdt, &s, &sh)
                } else {
                    x
                });
            }
            bind1(
                rw,
                e,
                Val::Cx(Pair {
                    re: parts[0],
                    im: parts[1],
                }),
            )
        }
        Elementwise::Real | Elementwise::Imag => match rw.val(arg(e, 0)?)? {
            Val::Cx(q) => {
                let x = if matches!(p, Elementwise::Real) {
                    q.re
                } else {
                    q.im
                };
                bind1(rw, e, Val::Real(x))
            }
            Val::Real(_) => Err(refuse(name, "a real operand")),
        },
        Elementwise::Conj(_) => {
            let a = arg(e, 0)?;
            let (id, s) = rw.src_type(a)?;
            let (re, im) = match rw.val(a)? {
                Val::Cx(q) => {
                    let im = rw.materialize(q.im, rdt, &s);
                    let neg = Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg));
                    (
                        rw.materialize(q.re, rdt, &s),
                        rw.emit1(neg, vec![im], rdt, &s),
                    )
                }
                Val::Real(x) => {
                    let re = rw.convert(x, id, rdt, &s);
                    let re = rw.materialize(re, rdt, &s);
                    let im = rw.materialize(Atom::Lit(Literal::new(0.0, rdt)), rdt, &s);
                    (re, im)
                }
            };
            bind1(rw, e, Val::Cx(Pair { re, im }))
        }
        Elementwise::Round(_)
        | Elementwise::ReducePrecision(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta => Err(refuse(name, "no complex lowering")),
    }
}

/// `dot_general` on complex operands: four real products.
fn dot_general(rw: &mut Rw, e: &Eqn, p: &DotGeneralParams) -> Result<(), IrError> {
    let (od, sh) = out1(rw, e)?;
    let rdt = od.real_dtype();
    let mut q = p.clone();
    q.preferred_element_type = p.preferred_element_type.map(|t| t.real_dtype());
    let prim = Primitive::Linalg(Linalg::DotGeneral(q));
    let parts = |rw: &mut Rw, a: &Atom| -> Result<(Atom, Option<Atom>), IrError> {
        let (d, s) = rw.src_type(a)?;
        let (re, im) = match rw.val(a)? {
            Val::Cx(x) => (x.re, Some(x.im)),
            Val::Real(x) => (x, None),
        };
        let re = rw.convert(re, d.real_dtype(), rdt, &s);
        let im = im.map(|im| rw.convert(im, d.real_dtype(), rdt, &s));
        Ok((re, im))
    };
    let (lr, li) = parts(rw, arg(e, 0)?)?;
    let (rr, ri) = parts(rw, arg(e, 1)?)?;
    let dot = |rw: &mut Rw, x: Atom, y: Atom| rw.emit1(prim.clone(), vec![x, y], rdt, &sh);
    let add = Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add));
    let sub = Primitive::Elementwise(Elementwise::Binary(BinaryOp::Sub));
    let rere = dot(rw, lr, rr);
    let re = match (li, ri) {
        (Some(a), Some(b)) => {
            let ii = dot(rw, a, b);
            rw.emit1(sub, vec![rere, ii], rdt, &sh)
        }
        _ => rere,
    };
    let t1 = ri.map(|b| dot(rw, lr, b));
    let t2 = li.map(|a| dot(rw, a, rr));
    let im = match (t1, t2) {
        (Some(a), Some(b)) => rw.emit1(add, vec![a, b], rdt, &sh),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => rw.materialize(Atom::Lit(Literal::new(0.0, rdt)), rdt, &sh),
    };
    bind1(rw, e, Val::Cx(Pair { re, im }))
}

/// `reduce_prod` of a complex array: the reduced axes moved last and
/// flattened, padded with ones to a power of two, halved by complex
/// products.
fn reduce_prod(rw: &mut Rw, e: &Eqn, p: &ReduceParams) -> Result<(), IrError> {
    let (od, osh) = out1(rw, e)?;
    let rdt = od.real_dtype();
    let a = arg(e, 0)?;
    let (_, s) = rw.src_type(a)?;
    let kept: Vec<usize> = (0..s.len()).filter(|d| !p.axes.contains(d)).collect();
    let mut perm = kept.clone();
    perm.extend(p.axes.iter().copied());
    let r: usize = kept.iter().map(|&d| s[d]).product();
    let n: usize = p
        .axes
        .iter()
        .map(|&d| s.get(d).copied().unwrap_or(1))
        .product();
    let z = operand(rw, a, &s)?;
    let ts: Vec<usize> = perm.iter().map(|&d| s[d]).collect();
    let part = |rw: &mut Rw, x: Atom| -> Atom {
        let x = rw.emit1(transpose_prim(perm.clone()), vec![x], CD, &ts);
        rw.emit1(reshape_prim(&[r, n]), vec![x], CD, &[r, n])
    };
    let (xr, xi) = (part(rw, z.re), part(rw, z.im));
    let pw = n.next_power_of_two();
    let pad = |rw: &mut Rw, x: Atom, v: f64| -> Atom {
        let prim = Primitive::Structural(Structural::Pad(PadParams {
            padding_config: vec![
                Ints::new(vec![0, 0, 0]),
                Ints::new(vec![0, (pw - n) as i64, 0]),
            ],
        }));
        rw.emit1(prim, vec![x, Atom::Lit(Literal::new(v, CD))], CD, &[r, pw])
    };
    let mut cur = C {
        re: pad(rw, xr, 1.0),
        im: pad(rw, xi, 0.0),
    };
    let mut len = pw;
    while len > 1 {
        let h = len / 2;
        let lo = slice_prim(vec![0, 0], vec![r as i64, h as i64]);
        let hi = slice_prim(vec![0, h as i64], vec![r as i64, len as i64]);
        let half = [r, h];
        let a = C {
            re: rw.emit1(lo.clone(), vec![cur.re], CD, &half),
            im: rw.emit1(lo, vec![cur.im], CD, &half),
        };
        let b = C {
            re: rw.emit1(hi.clone(), vec![cur.re], CD, &half),
            im: rw.emit1(hi, vec![cur.im], CD, &half),
        };
        let mut m = E {
            rw,
            sh: half.to_vec(),
        };
        cur = m.cmul(a, b);
        len = h;
    }
    let re = rw.emit1(reshape_prim(&osh), vec![cur.re], CD, &osh);
    let im = rw.emit1(reshape_prim(&osh), vec![cur.im], CD, &osh);
    let pr = result(rw, C { re, im }, rdt, &osh);
    bind1(rw, e, Val::Cx(pr))
}
