//! The special functions of the elementwise family as inline KIR: `lgamma`,
//! `digamma`, `bessel_i0e`, `bessel_i1e`, `zeta`, `polygamma`, `igamma`,
//! `igammac`, `igamma_grad_a`, `random_gamma_grad` and
//! `regularized_incomplete_beta`, emitted into the fused loop kernels by
//! [`super::elementwise::scalar`].
//!
//! Every function is written from its math as the reference interpreter
//! evaluates it (`jaxon_ir`'s `special_fns`): Lanczos and Stirling for
//! `lgamma`, recurrence plus asymptotic series for `digamma`,
//! Euler–Maclaurin for Hurwitz `zeta`, the power series and Lentz's
//! continued fraction (in dual numbers for the derivative in `a`) for the
//! incomplete gamma functions, Lentz's continued fraction for the
//! incomplete beta function, and the power series or Hankel's expansion
//! for the scaled Bessel functions. Each computes in `f64` — f32, f16 and
//! bf16 operands are widened and the result rounded once, as the
//! interpreter does — performing the same floating-point operations in the
//! same order, so the simulator agrees with the interpreter to the bit
//! wherever the host's `exp`/`log`/`pow`/`sin` agree (CUDA's libdevice is
//! within an ulp or two of them).
//!
//! Invariant: loops carry explicit `done` flags and iteration caps (KIR has
//! no `break`), and the out-of-domain inputs (NaN, poles, `s < 1`, ...)
//! skip the loops entirely and take their value from a final `select`.

use super::kernel::{compute, round_to};
use super::unsupported;
use crate::kir::{Expr, KernelBuilder, MathFn, UnOp, Var};
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::{DType, IrError};
use std::f64::consts::PI;

const F: DType = DType::F64;
const EPS: f64 = f64::EPSILON;
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
const LANCZOS_G: f64 = 7.0;
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];
/// Bernoulli numbers `B_2, B_4, ..., B_24`.
const BERNOULLI: [f64; 12] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
    43867.0 / 798.0,
    -174611.0 / 330.0,
    854513.0 / 138.0,
    -236364091.0 / 2730.0,
];
/// Iteration cap of the incomplete gamma series and continued fraction.
const IGAMMA_ITERS: i64 = 4000;
/// Iteration cap of the incomplete beta continued fraction.
const BETAINC_ITERS: i64 = 10_000;
/// Below this the scaled Bessel functions use their power series.
const BESSEL_SERIES_MAX: f64 = 25.0;

fn c(v: f64) -> Expr {
    Expr::constant(F, v)
}

fn v(x: Var) -> Expr {
    Expr::var(x)
}

fn abs(x: Expr) -> Expr {
    x.unary(UnOp::Abs)
}

fn is_nan(x: Expr) -> Expr {
    x.unary(UnOp::IsNan)
}

fn is_inf(x: Expr) -> Expr {
    x.unary(UnOp::IsInf)
}

fn not(x: Expr) -> Expr {
    x.unary(UnOp::Not)
}

fn ln(x: Expr) -> Expr {
    x.math(MathFn::Log)
}

fn pow(x: Expr, y: Expr) -> Expr {
    Expr::Math(MathFn::Pow, vec![x, y])
}

/// `x <= 0` and an integer: the poles of the gamma family.
fn non_positive_integer(x: Expr) -> Expr {
    x.clone()
        .le(c(0.0))
        .and(x.clone().eq(x.math(MathFn::Floor)))
}

/// Whether the special-function primitives take this storage dtype.
fn float_only(name: &str, d: DType) -> Result<(), IrError> {
    if d.is_float() {
        Ok(())
    } else {
        Err(unsupported(name, format!("dtype {d} is not supported")))
    }
}

/// A compute-dtype operand widened to f64.
fn widen(d: DType, x: Expr) -> Expr {
    if compute(d) == F {
        x
    } else {
        x.cast(F)
    }
}

/// An f64 result rounded to the storage dtype `d`, in its compute dtype
/// (f16/bf16 through f32, as the interpreter's f32 kernels).
fn narrow(d: DType, x: Expr) -> Expr {
    let cd = compute(d);
    if cd == F {
        x
    } else {
        round_to(d, x.cast(cd))
    }
}

/// The error for a special function that reached the general elementwise
/// lowering instead of [`unary`]/[`binary`] (a bug in the dispatch).
pub(crate) fn misrouted(name: &str) -> IrError {
    IrError::Invalid(format!(
        "cuda lowering: {name} is a special function and lowers through lower/special.rs"
    ))
}

/// A unary special function of a compute-dtype value of storage dtype `d`,
/// or `None` when `op` is not one.
pub(crate) fn unary(
    k: &mut KernelBuilder,
    op: UnaryOp,
    d: DType,
    x: &Expr,
) -> Option<Result<Expr, IrError>> {
    let f: fn(&mut KernelBuilder, Expr) -> Expr = match op {
        UnaryOp::Lgamma => lgamma,
        UnaryOp::Digamma => digamma,
        UnaryOp::BesselI0e => |k, x| bessel_ie(k, 0, x),
        UnaryOp::BesselI1e => |k, x| bessel_ie(k, 1, x),
        _ => return None,
    };
    Some(float_only(op.name(), d).map(|()| {
        let r = f(k, widen(d, x.clone()));
        narrow(d, r)
    }))
}

/// A binary special function of compute-dtype values of storage dtype
/// `d`, or `None` when `op` is not one.
pub(crate) fn binary(
    k: &mut KernelBuilder,
    op: BinaryOp,
    d: DType,
    x: &Expr,
    y: &Expr,
) -> Option<Result<Expr, IrError>> {
    let f: fn(&mut KernelBuilder, Expr, Expr) -> Expr = match op {
        BinaryOp::Igamma => |k, a, x| igamma(k, a, x, Which::P),
        BinaryOp::Igammac => |k, a, x| igamma(k, a, x, Which::Q),
        BinaryOp::IgammaGradA => |k, a, x| igamma(k, a, x, Which::GradA),
        BinaryOp::RandomGammaGrad => random_gamma_grad,
        BinaryOp::Polygamma => polygamma,
        BinaryOp::Zeta => zeta,
        _ => return None,
    };
    Some(float_only(op.name(), d).map(|()| {
        let r = f(k, widen(d, x.clone()), widen(d, y.clone()));
        narrow(d, r)
    }))
}

/// `regularized_incomplete_beta(a, b, x)` of compute-dtype values of
/// storage dtype `d` (the interpreter rounds its f64 value straight to `d`).
pub(crate) fn betainc_of(k: &mut KernelBuilder, d: DType, xs: &[Expr]) -> Result<Expr, IrError> {
    let name = "regularized_incomplete_beta";
    float_only(name, d)?;
    let [a, b, x] = xs else {
        return Err(IrError::Invalid(format!(
            "{name}: wrong number of operands"
        )));
    };
    let r = betainc(
        k,
        widen(d, a.clone()),
        widen(d, b.clone()),
        widen(d, x.clone()),
    );
    Ok(match d {
        DType::F16 | DType::BF16 => r.cast(d).cast(DType::F32),
        _ => narrow(d, r),
    })
}

/// `sin(pi x)` with the argument reduced exactly first.
fn sin_pi(k: &mut KernelBuilder, x: Expr) -> Expr {
    let r0 = k.let_("sp_r", F, x % c(2.0));
    let r = k.let_(
        "sp_r",
        F,
        Expr::select(
            v(r0).gt(c(1.0)),
            v(r0) - c(2.0),
            Expr::select(v(r0).lt(c(-1.0)), v(r0) + c(2.0), v(r0)),
        ),
    );
    let zero = v(r).eq(c(0.0)).or(abs(v(r)).eq(c(1.0)));
    let far = Expr::Math(MathFn::CopySign, vec![c(1.0), v(r)]) - v(r);
    let val = Expr::select(
        abs(v(r)).gt(c(0.5)),
        (c(PI) * far).math(MathFn::Sin),
        (c(PI) * v(r)).math(MathFn::Sin),
    );
    Expr::select(zero, c(0.0), val)
}

/// `cos(pi x)` with the argument reduced exactly first.
fn cos_pi(k: &mut KernelBuilder, x: Expr) -> Expr {
    let r0 = k.let_("cp_r", F, abs(x % c(2.0)));
    let r = k.let_(
        "cp_r",
        F,
        Expr::select(v(r0).gt(c(1.0)), c(2.0) - v(r0), v(r0)),
    );
    Expr::select(v(r).eq(c(0.5)), c(0.0), (c(PI) * v(r)).math(MathFn::Cos))
}

/// `log|Gamma(x)|`, `+inf` at the poles and at ±inf.
pub(crate) fn lgamma(k: &mut KernelBuilder, x: Expr) -> Expr {
    let x = k.let_("lg_x", F, x);
    let refl = v(x).lt(c(0.5));
    let y = k.let_("lg_y", F, Expr::select(refl.clone(), c(1.0) - v(x), v(x)));
    let core = k.var("lg_core", F);
    k.if_else(
        v(y).lt(c(10.0)),
        |k| {
            let z = k.let_("lg_z", F, v(y) - c(1.0));
            let sum = k.let_("lg_sum", F, c(LANCZOS[0]));
            for (i, l) in LANCZOS.iter().enumerate().skip(1) {
                k.assign(sum, v(sum) + c(*l) / (v(z) + c(i as f64)));
            }
            let t = k.let_("lg_t", F, v(z) + c(LANCZOS_G) + c(0.5));
            k.assign(
                core,
                c(LN_SQRT_2PI) + (v(z) + c(0.5)) * ln(v(t)) - v(t) + ln(v(sum)),
            );
        },
        |k| {
            // Stirling's series.
            let r = k.let_("lg_r", F, c(1.0) / v(y));
            let r2 = k.let_("lg_r2", F, v(r) * v(r));
            let p = k.let_("lg_p", F, v(r));
            let mut corr: Option<Var> = None;
            for (j, b) in BERNOULLI.iter().enumerate().take(7) {
                let n = 2.0 * (j as f64 + 1.0);
                let term = c(b / (n * (n - 1.0))) * v(p);
                corr = Some(match corr {
                    None => k.let_("lg_corr", F, c(0.0) + term),
                    Some(s) => {
                        k.assign(s, v(s) + term);
                        s
                    }
                });
                k.assign(p, v(p) * v(r2));
            }
            let corr = corr.map_or_else(|| c(0.0), v);
            k.assign(
                core,
                (v(y) - c(0.5)) * ln(v(y)) - v(y) + c(LN_SQRT_2PI) + corr,
            );
        },
    );
    let s = abs(sin_pi(k, v(x)));
    let reflected = ln(c(PI) / s) - v(core);
    let r = Expr::select(refl, reflected, v(core));
    let r = Expr::select(
        is_inf(v(x)).or(non_positive_integer(v(x))),
        c(f64::INFINITY),
        r,
    );
    Expr::var(k.let_("lg", F, Expr::select(is_nan(v(x)), v(x), r)))
}

/// The digamma function `psi(x)`: NaN at the poles and at -inf.
pub(crate) fn digamma(k: &mut KernelBuilder, x: Expr) -> Expr {
    let x = k.let_("dg_x", F, x);
    let refl = v(x).lt(c(0.0));
    let w = k.let_("dg_w", F, Expr::select(refl.clone(), c(1.0) - v(x), v(x)));
    let acc = k.let_("dg_acc", F, c(0.0));
    k.while_(v(w).lt(c(10.0)), |k| {
        k.assign(acc, v(acc) - c(1.0) / v(w));
        k.assign(w, v(w) + c(1.0));
    });
    let r2 = k.let_("dg_r2", F, c(1.0) / (v(w) * v(w)));
    let p = k.let_("dg_p", F, v(r2));
    let series = k.let_("dg_series", F, c(0.0));
    for (j, b) in BERNOULLI.iter().enumerate().take(7) {
        k.assign(series, v(series) + c(b / (2.0 * (j as f64 + 1.0))) * v(p));
        k.assign(p, v(p) * v(r2));
    }
    let core = k.let_("dg_core", F, v(acc) + ln(v(w)) - c(0.5) / v(w) - v(series));
    let cp = cos_pi(k, v(x));
    let sp = sin_pi(k, v(x));
    let reflected = v(core) - c(PI) * cp / sp;
    let r = Expr::select(refl, reflected, v(core));
    let r = Expr::select(v(x).eq(c(f64::INFINITY)), v(x), r);
    let nan = is_nan(v(x))
        .or(v(x).eq(c(f64::NEG_INFINITY)))
        .or(non_positive_integer(v(x)));
    Expr::var(k.let_("dg", F, Expr::select(nan, c(f64::NAN), r)))
}

/// The Hurwitz zeta function `zeta(s, q) = sum_k (q + k)^-s`: `+inf` at
/// `s == 1` and at non-positive integer `q`, NaN for `s < 1` and for
/// negative `q` with non-integer `s`, 0 at `q == inf`.
pub(crate) fn zeta(k: &mut KernelBuilder, s: Expr, q: Expr) -> Expr {
    let s = k.let_("zt_s", F, s);
    let q = k.let_("zt_q", F, q);
    let q_pole = v(q).le(c(0.0)).and(v(q).eq(v(q).math(MathFn::Floor)));
    let q_bad = v(q).le(c(0.0)).and(v(s).ne(v(s).math(MathFn::Floor)));
    let nan = is_nan(v(s)).or(is_nan(v(q)));
    let special = Expr::select(
        nan.clone(),
        c(f64::NAN),
        Expr::select(
            v(s).eq(c(1.0)),
            c(f64::INFINITY),
            Expr::select(
                v(s).lt(c(1.0)),
                c(f64::NAN),
                Expr::select(
                    q_pole.clone(),
                    c(f64::INFINITY),
                    Expr::select(q_bad.clone(), c(f64::NAN), c(0.0)),
                ),
            ),
        ),
    );
    let res = k.let_("zt", F, special);
    let valid = not(nan
        .or(v(s).le(c(1.0)))
        .or(q_pole)
        .or(q_bad)
        .or(v(q).eq(c(f64::INFINITY))));
    k.if_(valid, |k| {
        // Direct terms until q + n is large against both 10 and s.
        let target = k.let_("zt_target", F, c(10.0).max(v(s).min(c(60.0))));
        let sum = k.let_("zt_sum", F, c(0.0));
        let a = k.let_("zt_a", F, v(q));
        let n = k.let_("zt_n", DType::I32, Expr::i32(0));
        let early = k.let_("zt_early", DType::Bool, Expr::bool(false));
        let more = not(v(early))
            .and(v(n).le(Expr::i32(100_000)))
            .and(v(a).lt(v(target)).or(v(n).lt(Expr::i32(10))));
        k.while_(more, |k| {
            let term = k.let_("zt_term", F, pow(v(a), -v(s)));
            k.assign(sum, v(sum) + v(term));
            let converged = v(n)
                .ge(Expr::i32(10))
                .and(abs(v(term)).le(c(EPS) * abs(v(sum))));
            k.if_else(
                converged,
                |k| k.assign(early, Expr::bool(true)),
                |k| {
                    k.assign(a, v(a) + c(1.0));
                    k.assign(n, v(n) + Expr::i32(1));
                },
            );
        });
        k.assign(res, v(sum));
        k.if_(not(v(early)), |k| {
            // Euler–Maclaurin tail at a = q + n.
            let tail = k.let_(
                "zt_tail",
                F,
                pow(v(a), c(1.0) - v(s)) / (v(s) - c(1.0)) + c(0.5) * pow(v(a), -v(s)),
            );
            let rising = k.let_("zt_rising", F, v(s));
            let pw = k.let_("zt_pw", F, pow(v(a), -v(s) - c(1.0)));
            let inv_a2 = k.let_("zt_inv_a2", F, c(1.0) / (v(a) * v(a)));
            let done = k.let_("zt_done", DType::Bool, Expr::bool(false));
            let mut fact = 2.0f64;
            for (j, b) in BERNOULLI.iter().enumerate() {
                let k2 = 2.0 * (j as f64 + 1.0);
                let coef = b / fact;
                k.if_(not(v(done)), |k| {
                    let term = k.let_("zt_t", F, c(coef) * v(rising) * v(pw));
                    k.assign(tail, v(tail) + v(term));
                    k.if_else(
                        abs(v(term)).le(c(EPS) * abs(v(sum) + v(tail))),
                        |k| k.assign(done, Expr::bool(true)),
                        |k| {
                            k.assign(
                                rising,
                                v(rising) * ((v(s) + c(k2) - c(1.0)) * (v(s) + c(k2))),
                            );
                            k.assign(pw, v(pw) * v(inv_a2));
                        },
                    );
                });
                fact *= (k2 + 1.0) * (k2 + 2.0);
            }
            k.assign(res, v(sum) + v(tail));
        });
    });
    Expr::var(res)
}

/// `polygamma(n, x)`: digamma for `n == 0`, else
/// `(-1)^(n+1) n! zeta(n + 1, x)`; NaN unless `n` is a non-negative integer.
pub(crate) fn polygamma(k: &mut KernelBuilder, n: Expr, x: Expr) -> Expr {
    let n = k.let_("pg_n", F, n);
    let x = k.let_("pg_x", F, x);
    let res = k.let_("pg", F, c(f64::NAN));
    let invalid = is_nan(v(n))
        .or(is_nan(v(x)))
        .or(v(n).lt(c(0.0)))
        .or(v(n).ne(v(n).math(MathFn::Floor)))
        .or(is_inf(v(n)));
    k.if_(not(invalid), |k| {
        k.if_else(
            v(n).eq(c(0.0)),
            |k| {
                let d = digamma(k, v(x));
                k.assign(res, d);
            },
            |k| {
                let fact = k.let_("pg_fact", F, c(f64::INFINITY));
                k.if_(v(n).le(c(170.0)), |k| {
                    k.assign(fact, c(1.0));
                    let i = k.let_("pg_i", F, c(1.0));
                    k.while_(v(i).le(v(n)), |k| {
                        k.assign(fact, v(fact) * v(i));
                        k.assign(i, v(i) + c(1.0));
                    });
                });
                let sign = Expr::select((v(n) % c(2.0)).eq(c(1.0)), c(1.0), c(-1.0));
                let z = zeta(k, v(n) + c(1.0), v(x));
                k.assign(res, sign * v(fact) * z);
            },
        );
    });
    Expr::var(res)
}

/// A dual number `v + d ε` held in two f64 variables (the derivative in
/// `a` of the incomplete gamma functions).
#[derive(Clone, Copy)]
struct Dual {
    v: Var,
    d: Var,
}

impl Dual {
    fn new(k: &mut KernelBuilder, val: Expr, d: Expr) -> Dual {
        Dual {
            v: k.let_("du_v", F, val),
            d: k.let_("du_d", F, d),
        }
    }
    fn konst(k: &mut KernelBuilder, val: f64) -> Dual {
        Dual::new(k, c(val), c(0.0))
    }
    fn set(self, k: &mut KernelBuilder, val: Expr, d: Expr) {
        // Both sides are computed before either is assigned.
        let t = k.let_("du_t", F, d);
        k.assign(self.v, val);
        k.assign(self.d, v(t));
    }
    fn copy_from(self, k: &mut KernelBuilder, o: Dual) {
        k.assign(self.v, v(o.v));
        k.assign(self.d, v(o.d));
    }
}

/// `a * b` of dual numbers as expressions (`v`, `d`).
fn dmul(a: (Expr, Expr), b: (Expr, Expr)) -> (Expr, Expr) {
    (a.0.clone() * b.0.clone(), a.1 * b.0 + a.0 * b.1)
}

/// `a / b` of dual numbers: `v` is materialised first, as the
/// derivative uses it.
fn ddiv(k: &mut KernelBuilder, a: (Expr, Expr), b: (Expr, Expr)) -> Dual {
    let q = k.let_("du_q", F, a.0 / b.0.clone());
    let d = k.let_("du_qd", F, (a.1 - v(q) * b.1) / b.0);
    Dual { v: q, d }
}

fn ex(x: Dual) -> (Expr, Expr) {
    (v(x.v), v(x.d))
}

fn kc(x: f64) -> (Expr, Expr) {
    (c(x), c(0.0))
}

/// `|v| < 1e-300` replaced by `1e-300` (Lentz's guard).
fn fix(k: &mut KernelBuilder, x: (Expr, Expr)) -> Dual {
    let t = Dual::new(k, x.0, x.1);
    let small = abs(v(t.v)).lt(c(1e-300));
    k.if_(small, |k| {
        k.assign(t.v, c(1e-300));
        k.assign(t.d, c(0.0));
    });
    t
}

/// `exp(log(x^a e^-x / Gamma(a)))` as a dual number in `a`.
fn igamma_prefix(k: &mut KernelBuilder, a: Dual, x: Var) -> Dual {
    let lx = k.let_("ig_lx", F, ln(v(x)));
    let lg = lgamma(k, v(a.v));
    let dg = digamma(k, v(a.v));
    let pv = k.let_("ig_pv", F, v(a.v) * v(lx) - v(x) - lg);
    let pd = k.let_("ig_pd", F, v(a.d) * (v(lx) - dg));
    let e = k.let_("ig_e", F, v(pv).math(MathFn::Exp));
    Dual::new(k, v(e), v(e) * v(pd))
}

/// Which incomplete-gamma value [`igamma`] gives.
#[derive(Clone, Copy, PartialEq)]
enum Which {
    /// `P(a, x)`.
    P,
    /// `Q(a, x) = 1 - P(a, x)`.
    Q,
    /// `d P(a, x) / d a`.
    GradA,
}

/// The regularized incomplete gamma functions: `P(a, x)` by its power
/// series below `x = a + 1`, `Q(a, x)` by Lentz's continued fraction
/// above, both in dual numbers (`da` 1 for the derivative in `a`). NaN
/// outside `a > 0` finite, `x >= 0`.
fn igamma(k: &mut KernelBuilder, a: Expr, x: Expr, which: Which) -> Expr {
    let a = k.let_("ig_a", F, a);
    let x = k.let_("ig_x", F, x);
    let res = k.let_("ig", F, c(f64::NAN));
    let invalid = is_nan(v(a))
        .or(is_nan(v(x)))
        .or(v(x).lt(c(0.0)))
        .or(v(a).le(c(0.0)))
        .or(is_inf(v(a)));
    let da = if which == Which::GradA { 1.0 } else { 0.0 };
    let pick = move |k: &mut KernelBuilder, p: (Expr, Expr), q: Expr| {
        k.assign(
            res,
            match which {
                Which::P => p.0,
                Which::Q => q,
                Which::GradA => p.1,
            },
        );
    };
    k.if_(not(invalid), |k| {
        k.if_else(
            v(x).eq(c(0.0)),
            |k| pick(k, kc(0.0), c(1.0)),
            |k| {
                k.if_else(
                    is_inf(v(x)),
                    |k| pick(k, kc(1.0), c(0.0)),
                    |k| {
                        let ad = Dual::new(k, v(a), c(da));
                        k.if_else(
                            v(x).lt(v(a) + c(1.0)),
                            |k| {
                                let p = igamma_series(k, ad, x);
                                pick(k, ex(p), c(1.0) - v(p.v));
                            },
                            |k| {
                                let q = igammac_cf(k, ad, x);
                                pick(k, (c(1.0) - v(q.v), c(0.0) - v(q.d)), v(q.v));
                            },
                        );
                    },
                );
            },
        );
    });
    Expr::var(res)
}

/// `P(a, x)` by its power series (for `x < a + 1`).
fn igamma_series(k: &mut KernelBuilder, a: Dual, x: Var) -> Dual {
    let r = Dual::new(k, v(a.v), v(a.d));
    let cc = Dual::konst(k, 1.0);
    let sum = Dual::konst(k, 1.0);
    let i = k.let_("ig_i", DType::I32, Expr::i32(0));
    let done = k.let_("ig_done", DType::Bool, Expr::bool(false));
    let cond = not(v(done)).and(v(i).lt(Expr::i32(IGAMMA_ITERS as i32)));
    k.while_(cond, |k| {
        k.assign(r.v, v(r.v) + c(1.0));
        k.assign(r.d, v(r.d) + c(0.0));
        let cx = dmul(ex(cc), (v(x), c(0.0)));
        let cx = Dual::new(k, cx.0, cx.1);
        let q = ddiv(k, ex(cx), ex(r));
        cc.copy_from(k, q);
        sum.set(k, v(sum.v) + v(cc.v), v(sum.d) + v(cc.d));
        let conv = abs(v(cc.v))
            .le(c(EPS) * abs(v(sum.v)))
            .and(abs(v(cc.d)).le(c(EPS) * abs(v(sum.d)).max(c(1e-300))));
        k.assign(done, conv);
        k.assign(i, v(i) + Expr::i32(1));
    });
    let e = igamma_prefix(k, a, x);
    let es = dmul(ex(e), ex(sum));
    ddiv(k, es, ex(a))
}

/// `Q(a, x)` by Lentz's continued fraction (for `x >= a + 1`).
fn igammac_cf(k: &mut KernelBuilder, a: Dual, x: Var) -> Dual {
    let b = Dual::new(k, v(x) + c(1.0) - v(a.v), c(0.0) - v(a.d));
    let cc = Dual::konst(k, 1e300);
    let fb = fix(k, ex(b));
    let d = ddiv(k, kc(1.0), ex(fb));
    let h = Dual::new(k, v(d.v), v(d.d));
    let i = k.let_("ig_i", F, c(1.0));
    let done = k.let_("ig_done", DType::Bool, Expr::bool(false));
    let cond = not(v(done)).and(v(i).lt(c(IGAMMA_ITERS as f64)));
    k.while_(cond, |k| {
        let ia = Dual::new(k, v(i) - v(a.v), c(0.0) - v(a.d));
        let an = dmul((-v(i), c(0.0)), ex(ia));
        let an = Dual::new(k, an.0, an.1);
        b.set(k, v(b.v) + c(2.0), v(b.d) + c(0.0));
        let and = dmul(ex(an), ex(d));
        let den = fix(k, (and.0 + v(b.v), and.1 + v(b.d)));
        let nd = ddiv(k, kc(1.0), ex(den));
        d.copy_from(k, nd);
        let aoc = ddiv(k, ex(an), ex(cc));
        let nc = fix(k, (v(b.v) + v(aoc.v), v(b.d) + v(aoc.d)));
        cc.copy_from(k, nc);
        let del = dmul(ex(d), ex(cc));
        let del = Dual::new(k, del.0, del.1);
        let hd = dmul(ex(h), ex(del));
        h.set(k, hd.0, hd.1);
        let conv = abs(v(del.v) - c(1.0))
            .le(c(EPS))
            .and(abs(v(del.d)).le(c(EPS) * abs(v(h.d)).max(c(1e-300))));
        k.assign(done, conv);
        k.assign(i, v(i) + c(1.0));
    });
    let e = igamma_prefix(k, a, x);
    let eh = dmul(ex(e), ex(h));
    Dual::new(k, eh.0, eh.1)
}

/// The derivative of a `Gamma(a, 1)` sample `x` wrt `a` at fixed CDF:
/// `-(dP/da) / (dP/dx)`; 0 at `x == 0` for `a > 0`.
fn random_gamma_grad(k: &mut KernelBuilder, a: Expr, x: Expr) -> Expr {
    let a = k.let_("rg_a", F, a);
    let x = k.let_("rg_x", F, x);
    let g = igamma(k, v(a), v(x), Which::GradA);
    let dpda = k.let_("rg_dpda", F, g);
    let lg = lgamma(k, v(a));
    let log_pdf = (v(a) - c(1.0)) * ln(v(x)) - v(x) - lg;
    let r = -v(dpda) / log_pdf.math(MathFn::Exp);
    let zero = v(x).eq(c(0.0)).and(v(a).gt(c(0.0)));
    Expr::var(k.let_("rg", F, Expr::select(zero, c(0.0), r)))
}

/// Replaces a value of magnitude below `1e-300` by `1e-300`.
fn fix1(x: Expr) -> Expr {
    Expr::select(abs(x.clone()).lt(c(1e-300)), c(1e-300), x)
}

/// The regularized incomplete beta function `I_x(a, b)` (NaN outside
/// `a > 0`, `b > 0`, `0 <= x <= 1`): Lentz's continued fraction on the
/// side of `(a + 1) / (a + b + 2)` where it converges fast.
fn betainc(k: &mut KernelBuilder, a: Expr, b: Expr, x: Expr) -> Expr {
    let a0 = k.let_("bi_a", F, a);
    let b0 = k.let_("bi_b", F, b);
    let x0 = k.let_("bi_x", F, x);
    let in_range = v(x0).ge(c(0.0)).and(v(x0).le(c(1.0)));
    let invalid = is_nan(v(a0))
        .or(is_nan(v(b0)))
        .or(is_nan(v(x0)))
        .or(v(a0).le(c(0.0)))
        .or(v(b0).le(c(0.0)))
        .or(not(in_range));
    let res = k.let_("bi", F, c(f64::NAN));
    k.if_(not(invalid), |k| {
        let edge = Expr::select(v(x0).eq(c(0.0)), c(0.0), c(1.0));
        k.assign(res, edge);
        let inner = v(x0).ne(c(0.0)).and(v(x0).ne(c(1.0)));
        k.if_(inner, |k| {
            let swap = k.let_(
                "bi_swap",
                DType::Bool,
                v(x0).gt((v(a0) + c(1.0)) / (v(a0) + v(b0) + c(2.0))),
            );
            let a = k.let_("bi_aa", F, Expr::select(v(swap), v(b0), v(a0)));
            let b = k.let_("bi_bb", F, Expr::select(v(swap), v(a0), v(b0)));
            let x = k.let_("bi_xx", F, Expr::select(v(swap), c(1.0) - v(x0), v(x0)));
            let qab = k.let_("bi_qab", F, v(a) + v(b));
            let qap = k.let_("bi_qap", F, v(a) + c(1.0));
            let qam = k.let_("bi_qam", F, v(a) - c(1.0));
            let cc = k.let_("bi_c", F, c(1.0));
            let d = k.let_("bi_d", F, c(1.0) / fix1(c(1.0) - v(qab) * v(x) / v(qap)));
            let h = k.let_("bi_h", F, v(d));
            let m = k.let_("bi_m", F, c(1.0));
            let done = k.let_("bi_done", DType::Bool, Expr::bool(false));
            let cond = not(v(done)).and(v(m).lt(c(BETAINC_ITERS as f64)));
            k.while_(cond, |k| {
                let m2 = k.let_("bi_m2", F, c(2.0) * v(m));
                let aa = k.let_(
                    "bi_aa1",
                    F,
                    v(m) * (v(b) - v(m)) * v(x) / ((v(qam) + v(m2)) * (v(a) + v(m2))),
                );
                k.assign(d, c(1.0) / fix1(c(1.0) + v(aa) * v(d)));
                k.assign(cc, fix1(c(1.0) + v(aa) / v(cc)));
                k.assign(h, v(h) * (v(d) * v(cc)));
                let aa = k.let_(
                    "bi_aa2",
                    F,
                    -(v(a) + v(m)) * (v(qab) + v(m)) * v(x) / ((v(a) + v(m2)) * (v(qap) + v(m2))),
                );
                k.assign(d, c(1.0) / fix1(c(1.0) + v(aa) * v(d)));
                k.assign(cc, fix1(c(1.0) + v(aa) / v(cc)));
                let del = k.let_("bi_del", F, v(d) * v(cc));
                k.assign(h, v(h) * v(del));
                k.assign(done, abs(v(del) - c(1.0)).le(c(EPS)));
                k.assign(m, v(m) + c(1.0));
            });
            let lab = lgamma(k, v(a) + v(b));
            let la = lgamma(k, v(a));
            let lb = lgamma(k, v(b));
            let lfront = lab - la - lb + v(a) * ln(v(x)) + v(b) * (-v(x)).math(MathFn::Log1p);
            let cf = k.let_("bi_cf", F, lfront.math(MathFn::Exp) * v(h) / v(a));
            k.assign(res, Expr::select(v(swap), c(1.0) - v(cf), v(cf)));
        });
    });
    Expr::var(res)
}

/// `exp(-|x|) I_nu(|x|)` (odd in `x` for `nu == 1`): the power series up to
/// `|x| = 25`, Hankel's asymptotic expansion above.
fn bessel_ie(k: &mut KernelBuilder, nu: u32, x: Expr) -> Expr {
    let x0 = k.let_("bs_x0", F, x);
    let x = k.let_("bs_x", F, abs(v(x0)));
    let res = k.let_("bs", F, c(0.0));
    let nuf = f64::from(nu);
    k.if_(not(is_inf(v(x)).or(is_nan(v(x)))), |k| {
        k.if_else(
            v(x).le(c(BESSEL_SERIES_MAX)),
            |k| {
                let h = k.let_("bs_h", F, c(0.5) * v(x));
                let h2 = k.let_("bs_h2", F, v(h) * v(h));
                let term = k.let_("bs_term", F, if nu == 0 { c(1.0) } else { v(h) });
                let sum = k.let_("bs_sum", F, v(term));
                let j = k.let_("bs_k", F, c(0.0));
                let done = k.let_("bs_done", DType::Bool, Expr::bool(false));
                k.while_(not(v(done)), |k| {
                    k.assign(j, v(j) + c(1.0));
                    k.assign(term, v(term) * (v(h2) / (v(j) * (v(j) + c(nuf)))));
                    k.assign(sum, v(sum) + v(term));
                    k.assign(done, v(term).le(c(EPS) * v(sum)).or(v(j).gt(c(500.0))));
                });
                k.assign(res, v(sum) * (-v(x)).math(MathFn::Exp));
            },
            |k| {
                let mu = 4.0 * f64::from(nu * nu);
                let term = k.let_("bs_term", F, c(1.0));
                let sum = k.let_("bs_sum", F, c(1.0));
                let j = k.let_("bs_j", F, c(0.0));
                let done = k.let_("bs_done", DType::Bool, Expr::bool(false));
                k.while_(not(v(done)), |k| {
                    k.assign(j, v(j) + c(1.0));
                    let t = k.let_("bs_t", F, c(2.0) * v(j) - c(1.0));
                    let next = k.let_(
                        "bs_next",
                        F,
                        -v(term) * (c(mu) - v(t) * v(t)) / (v(j) * c(8.0) * v(x)),
                    );
                    let stop = abs(v(next)).ge(abs(v(term))).or(v(j).gt(c(200.0)));
                    k.if_else(
                        stop,
                        |k| k.assign(done, Expr::bool(true)),
                        |k| {
                            k.assign(term, v(next));
                            k.assign(sum, v(sum) + v(term));
                            k.assign(done, abs(v(term)).le(c(EPS) * abs(v(sum))));
                        },
                    );
                });
                k.assign(res, v(sum) / (c(2.0 * PI) * v(x)).math(MathFn::Sqrt));
            },
        );
    });
    let r = if nu == 1 {
        Expr::Math(MathFn::CopySign, vec![v(res), v(x0)])
    } else {
        v(res)
    };
    Expr::var(k.let_("bs_r", F, Expr::select(is_nan(v(x0)), v(x0), r)))
}
