//! Scalar gamma-family and Bessel functions in f64, shared by the
//! interpreter and the CPU backend's out-of-line helpers (f32 values are
//! computed in f64 and rounded): `lgamma` (Lanczos below 10, Stirling
//! above, reflection below 1/2), `digamma` (recurrence and asymptotic
//! series, reflection), Hurwitz `zeta` (Euler–Maclaurin), `polygamma`,
//! `igamma`/`igammac` (series below `max(a, 1)`, Lentz's continued
//! fraction above), `igamma_grad_a` (the same evaluation in dual numbers),
//! `random_gamma_grad`, `regularized_incomplete_beta` (continued
//! fraction), and the scaled Bessel functions `bessel_i0e`/`bessel_i1e`
//! (power series below 25, asymptotic expansion above).

use std::f64::consts::PI;
use std::ops::{Add, Div, Mul, Sub};

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

/// `sin(pi x)` with the argument reduced exactly first.
fn sin_pi(x: f64) -> f64 {
    let r = x % 2.0;
    let r = if r > 1.0 {
        r - 2.0
    } else if r < -1.0 {
        r + 2.0
    } else {
        r
    };
    if r == 0.0 || r.abs() == 1.0 {
        return 0.0;
    }
    if r.abs() > 0.5 {
        (PI * (1.0_f64.copysign(r) - r)).sin()
    } else {
        (PI * r).sin()
    }
}

/// `cos(pi x)` with the argument reduced exactly first.
fn cos_pi(x: f64) -> f64 {
    let r = (x % 2.0).abs();
    let r = if r > 1.0 { 2.0 - r } else { r };
    if r == 0.5 {
        return 0.0;
    }
    (PI * r).cos()
}

/// `log|Gamma(x)|` (XLA's `lgamma`: `+inf` at the poles).
pub fn lgamma_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        let s = sin_pi(x).abs();
        return (PI / s).ln() - lgamma_f64(1.0 - x);
    }
    if x < 10.0 {
        let z = x - 1.0;
        let mut sum = LANCZOS[0];
        for (i, c) in LANCZOS.iter().enumerate().skip(1) {
            sum += c / (z + i as f64);
        }
        let t = z + LANCZOS_G + 0.5;
        return LN_SQRT_2PI + (z + 0.5) * t.ln() - t + sum.ln();
    }
    // Stirling's series.
    let r = 1.0 / x;
    let r2 = r * r;
    let mut corr = 0.0;
    let mut p = r;
    for (k, b) in BERNOULLI.iter().enumerate().take(7) {
        let n = 2.0 * (k as f64 + 1.0);
        corr += b / (n * (n - 1.0)) * p;
        p *= r2;
    }
    (x - 0.5) * x.ln() - x + LN_SQRT_2PI + corr
}

/// The digamma function `psi(x)` (NaN at the poles, as XLA).
pub fn digamma_f64(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    if x < 0.0 {
        // psi(x) = psi(1 - x) - pi cos(pi x) / sin(pi x).
        return digamma_f64(1.0 - x) - PI * cos_pi(x) / sin_pi(x);
    }
    let mut x = x;
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let r2 = 1.0 / (x * x);
    let mut series = 0.0;
    let mut p = r2;
    for (k, b) in BERNOULLI.iter().enumerate().take(7) {
        series += b / (2.0 * (k as f64 + 1.0)) * p;
        p *= r2;
    }
    acc + x.ln() - 0.5 / x - series
}

/// The Hurwitz zeta function `zeta(s, q) = sum_k (q + k)^-s` (Cephes'
/// domain: `+inf` at `s == 1` and at non-positive integer `q`, NaN for
/// `s < 1` and for negative `q` with non-integer `s`).
pub fn zeta_f64(s: f64, q: f64) -> f64 {
    if s.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if s == 1.0 {
        return f64::INFINITY;
    }
    if s < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if s != s.floor() {
            return f64::NAN;
        }
    }
    if q == f64::INFINITY {
        return 0.0;
    }
    // Direct terms until q + n is large against both 10 and s.
    let target = 10.0_f64.max(s.min(60.0));
    let mut sum = 0.0;
    let mut a = q;
    let mut n = 0;
    while a < target || n < 10 {
        let term = a.powf(-s);
        sum += term;
        if n >= 10 && term.abs() <= EPS * sum.abs() {
            return sum;
        }
        a += 1.0;
        n += 1;
        if n > 100_000 {
            break;
        }
    }
    // Euler–Maclaurin tail at a = q + n.
    let mut tail = a.powf(1.0 - s) / (s - 1.0) + 0.5 * a.powf(-s);
    // k-th term: B_2k / (2k)! * s (s+1) ... (s+2k-2) * a^(-s-2k+1).
    let mut rising = s; // s (s+1) ... (s+2k-2)
    let mut fact = 2.0; // (2k)!
    let mut pw = a.powf(-s - 1.0); // a^(-s-2k+1)
    let inv_a2 = 1.0 / (a * a);
    for (k, b) in BERNOULLI.iter().enumerate() {
        let term = b / fact * rising * pw;
        tail += term;
        if term.abs() <= EPS * (sum + tail).abs() {
            break;
        }
        let k2 = 2.0 * (k as f64 + 1.0);
        rising *= (s + k2 - 1.0) * (s + k2);
        fact *= (k2 + 1.0) * (k2 + 2.0);
        pw *= inv_a2;
    }
    sum + tail
}

/// `polygamma(n, x)`: digamma for `n == 0`, else
/// `(-1)^(n+1) n! zeta(n + 1, x)`; NaN unless `n` is a non-negative
/// integer.
pub fn polygamma_f64(n: f64, x: f64) -> f64 {
    if n.is_nan() || x.is_nan() || n < 0.0 || n != n.floor() || n.is_infinite() {
        return f64::NAN;
    }
    if n == 0.0 {
        return digamma_f64(x);
    }
    let fact = if n <= 170.0 {
        (1..=n as u32).fold(1.0, |acc, k| acc * k as f64)
    } else {
        f64::INFINITY
    };
    let sign = if n % 2.0 == 1.0 { 1.0 } else { -1.0 };
    sign * fact * zeta_f64(n + 1.0, x)
}

/// A dual number `v + d ε` for forward-mode derivatives wrt `a`.
#[derive(Clone, Copy, Debug)]
struct Dual {
    v: f64,
    d: f64,
}

impl Dual {
    fn c(v: f64) -> Dual {
        Dual { v, d: 0.0 }
    }
    fn exp(self) -> Dual {
        let e = self.v.exp();
        Dual {
            v: e,
            d: e * self.d,
        }
    }
}
impl Add for Dual {
    type Output = Dual;
    fn add(self, o: Dual) -> Dual {
        Dual {
            v: self.v + o.v,
            d: self.d + o.d,
        }
    }
}
impl Sub for Dual {
    type Output = Dual;
    fn sub(self, o: Dual) -> Dual {
        Dual {
            v: self.v - o.v,
            d: self.d - o.d,
        }
    }
}
impl Mul for Dual {
    type Output = Dual;
    fn mul(self, o: Dual) -> Dual {
        Dual {
            v: self.v * o.v,
            d: self.d * o.v + self.v * o.d,
        }
    }
}
impl Div for Dual {
    type Output = Dual;
    fn div(self, o: Dual) -> Dual {
        let v = self.v / o.v;
        Dual {
            v,
            d: (self.d - v * o.d) / o.v,
        }
    }
}

const IGAMMA_ITERS: usize = 4000;

/// `log(x^a e^-x / Gamma(a))` as a dual number in `a`.
fn igamma_prefix(a: Dual, x: f64) -> Dual {
    let lx = x.ln();
    Dual {
        v: a.v * lx - x - lgamma_f64(a.v),
        d: a.d * (lx - digamma_f64(a.v)),
    }
}

/// `P(a, x)` by its power series (for `x < a + 1`).
fn igamma_series(a: Dual, x: f64) -> Dual {
    let xd = Dual::c(x);
    let mut r = a;
    let mut c = Dual::c(1.0);
    let mut sum = Dual::c(1.0);
    for _ in 0..IGAMMA_ITERS {
        r = r + Dual::c(1.0);
        c = c * xd / r;
        sum = sum + c;
        if c.v.abs() <= EPS * sum.v.abs() && c.d.abs() <= EPS * sum.d.abs().max(1e-300) {
            break;
        }
    }
    igamma_prefix(a, x).exp() * sum / a
}

/// `Q(a, x)` by Lentz's continued fraction (for `x >= a + 1`).
fn igammac_cf(a: Dual, x: f64) -> Dual {
    let tiny = Dual::c(1e-300);
    let one = Dual::c(1.0);
    let fix = |v: Dual| if v.v.abs() < 1e-300 { tiny } else { v };
    let mut b = Dual::c(x + 1.0) - a;
    let mut c = Dual::c(1e300);
    let mut d = one / fix(b);
    let mut h = d;
    for i in 1..IGAMMA_ITERS {
        let fi = i as f64;
        let an = Dual::c(-fi) * (Dual::c(fi) - a);
        b = b + Dual::c(2.0);
        d = one / fix(an * d + b);
        c = fix(b + an / c);
        let del = d * c;
        h = h * del;
        if (del.v - 1.0).abs() <= EPS && del.d.abs() <= EPS * h.d.abs().max(1e-300) {
            break;
        }
    }
    igamma_prefix(a, x).exp() * h
}

/// `(P, Q)` with derivatives wrt `a` when `da` is 1, or `None` outside
/// the domain (`x < 0`, `a <= 0`, NaN).
fn igamma_pair(a: f64, x: f64, da: f64) -> Option<(Dual, Dual)> {
    if a.is_nan() || x.is_nan() || x < 0.0 || a <= 0.0 || a.is_infinite() {
        return None;
    }
    let zero = Dual::c(0.0);
    let one = Dual::c(1.0);
    if x == 0.0 {
        return Some((zero, one));
    }
    if x.is_infinite() {
        return Some((one, zero));
    }
    let ad = Dual { v: a, d: da };
    Some(if x < a + 1.0 {
        let p = igamma_series(ad, x);
        (p, one - p)
    } else {
        let q = igammac_cf(ad, x);
        (one - q, q)
    })
}

/// The regularized lower incomplete gamma function `P(a, x)`.
pub fn igamma_f64(a: f64, x: f64) -> f64 {
    igamma_pair(a, x, 0.0).map_or(f64::NAN, |(p, _)| p.v)
}

/// The regularized upper incomplete gamma function `Q(a, x) = 1 - P(a, x)`.
pub fn igammac_f64(a: f64, x: f64) -> f64 {
    igamma_pair(a, x, 0.0).map_or(f64::NAN, |(_, q)| q.v)
}

/// `d P(a, x) / d a`.
pub fn igamma_grad_a_f64(a: f64, x: f64) -> f64 {
    igamma_pair(a, x, 1.0).map_or(f64::NAN, |(p, _)| p.d)
}

/// The derivative of a `Gamma(a, 1)` sample `x` wrt `a` at fixed CDF:
/// `-(dP/da) / (dP/dx)`.
pub fn random_gamma_grad_f64(a: f64, x: f64) -> f64 {
    if x == 0.0 && a > 0.0 {
        return 0.0;
    }
    let dpda = igamma_grad_a_f64(a, x);
    let log_pdf = (a - 1.0) * x.ln() - x - lgamma_f64(a);
    -dpda / log_pdf.exp()
}

/// `I_x(a, b)` for `x <= (a + 1) / (a + b + 2)`: the front factor times
/// Lentz's continued fraction.
fn betainc_cf(a: f64, b: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let fix = |v: f64| if v.abs() < tiny { tiny } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / fix(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() <= EPS {
            break;
        }
    }
    let lfront = lgamma_f64(a + b) - lgamma_f64(a) - lgamma_f64(b) + a * x.ln() + b * (-x).ln_1p();
    lfront.exp() * h / a
}

/// The regularized incomplete beta function `I_x(a, b)` (NaN outside
/// `a > 0`, `b > 0`, `0 <= x <= 1`).
pub fn betainc_f64(a: f64, b: f64, x: f64) -> f64 {
    if a.is_nan() || b.is_nan() || x.is_nan() || a <= 0.0 || b <= 0.0 || !(0.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 0.0 {
        return 0.0;
    }
    if x == 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        1.0 - betainc_cf(b, a, 1.0 - x)
    } else {
        betainc_cf(a, b, x)
    }
}

const BESSEL_SERIES_MAX: f64 = 25.0;

/// `exp(-x) I_nu(x)` for `0 <= x` and `nu` 0 or 1.
fn bessel_ie(nu: u32, x: f64) -> f64 {
    if x.is_infinite() {
        0.0
    } else if x <= BESSEL_SERIES_MAX {
        bessel_ie_series(nu, x)
    } else {
        bessel_ie_asymptotic(nu, x)
    }
}

/// `exp(-x) I_nu(x)` by the power series
/// `I_nu(x) = sum_k (x/2)^(2k+nu) / (k! (k+nu)!)`.
fn bessel_ie_series(nu: u32, x: f64) -> f64 {
    let h = 0.5 * x;
    let h2 = h * h;
    let mut term = if nu == 0 { 1.0 } else { h };
    let mut sum = term;
    let mut k = 0.0;
    loop {
        k += 1.0;
        term *= h2 / (k * (k + nu as f64));
        sum += term;
        if term <= EPS * sum || k > 500.0 {
            break;
        }
    }
    sum * (-x).exp()
}

/// `exp(-x) I_nu(x)` by Hankel's asymptotic expansion (large `x`).
fn bessel_ie_asymptotic(nu: u32, x: f64) -> f64 {
    // I_nu(x) e^-x ~ 1/sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! (8x)^k)
    let mu = 4.0 * (nu * nu) as f64;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut j: f64 = 0.0;
    loop {
        j += 1.0;
        let next = -term * (mu - (2.0 * j - 1.0).powi(2)) / (j * 8.0 * x);
        if next.abs() >= term.abs() || j > 200.0 {
            break;
        }
        term = next;
        sum += term;
        if term.abs() <= EPS * sum.abs() {
            break;
        }
    }
    sum / (2.0 * PI * x).sqrt()
}

/// The exponentially scaled modified Bessel function `exp(-|x|) I0(x)`.
pub fn bessel_i0e_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    bessel_ie(0, x.abs())
}

/// The exponentially scaled modified Bessel function `exp(-|x|) I1(x)`.
pub fn bessel_i1e_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    bessel_ie(1, x.abs()).copysign(x)
}

#[cfg(test)]
#[path = "tests_special_fns.rs"]
mod tests;
