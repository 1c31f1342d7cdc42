//! The incomplete gamma family of `special.rs` — `igamma`, `igammac`,
//! `igamma_grad_a` and `random_gamma_grad` — in dual numbers (value and
//! derivative in `a`), as the interpreter evaluates them: the power series
//! of `P(a, x)` below `x = a + 1`, Lentz's continued fraction for
//! `Q(a, x)` above, times `exp(a log x - x - lgamma(a))`.

use super::{abs, c, digamma, is_inf, is_nan, lgamma, ln, not, v, EPS, F};
use crate::kir::{Expr, KernelBuilder, MathFn, Var};
use jaxon_ir::DType;

/// Iteration cap of the incomplete gamma series and continued fraction.
const IGAMMA_ITERS: i64 = 4000;

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
pub(super) enum Which {
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
pub(super) fn igamma(k: &mut KernelBuilder, a: Expr, x: Expr, which: Which) -> Expr {
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
pub(super) fn random_gamma_grad(k: &mut KernelBuilder, a: Expr, x: Expr) -> Expr {
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
