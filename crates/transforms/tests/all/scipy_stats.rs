//! `scipy::stats` against JAX 0.10.2's recorded values and gradients
//! (`tests/data/scipy-stats-jax.json`, written by
//! `tests/data/gen_scipy_stats.py`), plus central differences in f64 and
//! the errors JAX raises. It lives here, not in the trace crate, because
//! gradients need `jaxon_transforms::grad`.
//!
//! Tolerances: values within `1e-6` relative (plus `1e-12` absolute) in
//! f64 and `2e-5` relative (plus `1e-6` absolute) in f32; gradients
//! within `1e-6` / `1e-4`. Infinities and NaNs must match exactly.

use jaxon_ir::DType;
use jaxon_trace::error::{ok_or_raise, Error, Result};
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::scipy::stats::*;
use jaxon_trace::{jit, Array};
use jaxon_transforms::grad;
use jaxon_transforms::vmap;

// ---------------------------------------------------------------- JSON --

#[derive(Debug, Clone)]
enum J {
    Null,
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn value(&mut self) -> J {
        self.ws();
        match self.s[self.i] {
            b'n' => {
                self.i += 4;
                J::Null
            }
            b't' | b'f' => panic!("booleans are not used"),
            b'"' => J::Str(self.string()),
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s[self.i] == b']' {
                        self.i += 1;
                        return J::Arr(v);
                    }
                    v.push(self.value());
                    self.ws();
                    if self.s[self.i] == b',' {
                        self.i += 1;
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s[self.i] == b'}' {
                        self.i += 1;
                        return J::Obj(v);
                    }
                    let k = self.string();
                    self.ws();
                    assert_eq!(self.s[self.i], b':');
                    self.i += 1;
                    v.push((k, self.value()));
                    self.ws();
                    if self.s[self.i] == b',' {
                        self.i += 1;
                    }
                }
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                J::Num(t.parse().unwrap_or_else(|_| panic!("bad number {t}")))
            }
        }
    }
    fn string(&mut self) -> String {
        assert_eq!(self.s[self.i], b'"');
        let start = self.i + 1;
        self.i = start;
        while self.s[self.i] != b'"' {
            self.i += 1;
        }
        self.i += 1;
        String::from_utf8(self.s[start..self.i - 1].to_vec()).unwrap()
    }
}

impl J {
    fn get(&self, key: &str) -> &J {
        match self {
            J::Obj(v) => v
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .unwrap_or(&J::Null),
            _ => panic!("not an object"),
        }
    }
    fn arr(&self) -> &[J] {
        match self {
            J::Arr(v) => v,
            _ => panic!("not an array: {self:?}"),
        }
    }
    fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            _ => panic!("not a string"),
        }
    }
    fn num(&self) -> f64 {
        match self {
            J::Num(x) => *x,
            J::Str(s) if s == "nan" => f64::NAN,
            J::Str(s) if s == "inf" => f64::INFINITY,
            J::Str(s) if s == "-inf" => f64::NEG_INFINITY,
            _ => panic!("not a number: {self:?}"),
        }
    }
}

/// `(shape, data)` of an encoded array.
fn tensor(j: &J) -> (Vec<usize>, Vec<f64>) {
    let shape = j
        .get("shape")
        .arr()
        .iter()
        .map(|d| d.num() as usize)
        .collect();
    let data = j.get("data").arr().iter().map(J::num).collect();
    (shape, data)
}

fn make(shape: &[usize], data: &[f64], dt: DType) -> Array {
    if dt == DType::F64 {
        Array::from_vec(data.to_vec(), shape)
    } else {
        Array::from_vec(data.iter().map(|&v| v as f32).collect::<Vec<_>>(), shape)
    }
}

fn to_f64(a: &Array) -> Vec<f64> {
    if a.dtype() == DType::F64 {
        a.to_vec::<f64>()
    } else {
        a.to_vec::<f32>().into_iter().map(f64::from).collect()
    }
}

// ------------------------------------------------------------ dispatch --

/// `f(x, a, b, loc, scale)`.
type ThreeShapes = fn(&Array, &Array, &Array, Option<&Array>, Option<&Array>) -> Result<Array>;

/// A named function of one f64 array, for central differences.
type Check = (&'static str, Box<dyn Fn(&Array) -> Array>);

/// Calls the named `jax.scipy.stats` function; a missing trailing
/// argument (or JSON `null`) is JAX's default.
fn call(name: &str, a: &[Option<Array>]) -> Result<Array> {
    let r = |i: usize| -> &Array { a[i].as_ref().expect("required argument") };
    let o = |i: usize| a.get(i).and_then(Option::as_ref);
    let ls = |f: fn(&Array, Option<&Array>, Option<&Array>) -> Result<Array>| f(r(0), o(1), o(2));
    let sls = |f: fn(&Array, &Array, Option<&Array>, Option<&Array>) -> Result<Array>| {
        f(r(0), r(1), o(2), o(3))
    };
    let ssls = |f: ThreeShapes| f(r(0), r(1), r(2), o(3), o(4));
    let dl = |f: fn(&Array, &Array, Option<&Array>) -> Result<Array>| f(r(0), r(1), o(2));
    let ddl =
        |f: fn(&Array, &Array, &Array, Option<&Array>) -> Result<Array>| f(r(0), r(1), r(2), o(3));
    match name {
        "norm.logpdf" => ls(norm::logpdf),
        "norm.pdf" => ls(norm::pdf),
        "norm.cdf" => ls(norm::cdf),
        "norm.logcdf" => ls(norm::logcdf),
        "norm.sf" => ls(norm::sf),
        "norm.logsf" => ls(norm::logsf),
        "norm.ppf" => ls(norm::ppf),
        "norm.isf" => ls(norm::isf),
        "uniform.logpdf" => ls(uniform::logpdf),
        "uniform.pdf" => ls(uniform::pdf),
        "uniform.cdf" => ls(uniform::cdf),
        "uniform.ppf" => ls(uniform::ppf),
        "expon.logpdf" => ls(expon::logpdf),
        "expon.pdf" => ls(expon::pdf),
        "expon.cdf" => ls(expon::cdf),
        "expon.logcdf" => ls(expon::logcdf),
        "expon.sf" => ls(expon::sf),
        "expon.logsf" => ls(expon::logsf),
        "expon.ppf" => ls(expon::ppf),
        "laplace.logpdf" => ls(laplace::logpdf),
        "laplace.pdf" => ls(laplace::pdf),
        "laplace.cdf" => ls(laplace::cdf),
        "logistic.logpdf" => ls(logistic::logpdf),
        "logistic.pdf" => ls(logistic::pdf),
        "logistic.cdf" => ls(logistic::cdf),
        "logistic.sf" => ls(logistic::sf),
        "logistic.ppf" => ls(logistic::ppf),
        "logistic.isf" => ls(logistic::isf),
        "cauchy.logpdf" => ls(cauchy::logpdf),
        "cauchy.pdf" => ls(cauchy::pdf),
        "cauchy.cdf" => ls(cauchy::cdf),
        "cauchy.logcdf" => ls(cauchy::logcdf),
        "cauchy.sf" => ls(cauchy::sf),
        "cauchy.logsf" => ls(cauchy::logsf),
        "cauchy.ppf" => ls(cauchy::ppf),
        "cauchy.isf" => ls(cauchy::isf),
        "pareto.logpdf" => sls(pareto::logpdf),
        "pareto.pdf" => sls(pareto::pdf),
        "pareto.cdf" => sls(pareto::cdf),
        "pareto.logcdf" => sls(pareto::logcdf),
        "pareto.sf" => sls(pareto::sf),
        "pareto.logsf" => sls(pareto::logsf),
        "pareto.ppf" => sls(pareto::ppf),
        "gamma.logpdf" => sls(gamma::logpdf),
        "gamma.pdf" => sls(gamma::pdf),
        "gamma.cdf" => sls(gamma::cdf),
        "gamma.logcdf" => sls(gamma::logcdf),
        "gamma.sf" => sls(gamma::sf),
        "gamma.logsf" => sls(gamma::logsf),
        "beta.logpdf" => ssls(beta::logpdf),
        "beta.pdf" => ssls(beta::pdf),
        "beta.cdf" => ssls(beta::cdf),
        "beta.logcdf" => ssls(beta::logcdf),
        "beta.sf" => ssls(beta::sf),
        "beta.logsf" => ssls(beta::logsf),
        "chi2.logpdf" => sls(chi2::logpdf),
        "chi2.pdf" => sls(chi2::pdf),
        "chi2.cdf" => sls(chi2::cdf),
        "chi2.logcdf" => sls(chi2::logcdf),
        "chi2.sf" => sls(chi2::sf),
        "chi2.logsf" => sls(chi2::logsf),
        "t.logpdf" => sls(t::logpdf),
        "t.pdf" => sls(t::pdf),
        "vonmises.logpdf" => vonmises::logpdf(r(0), r(1)),
        "vonmises.pdf" => vonmises::pdf(r(0), r(1)),
        "poisson.logpmf" => dl(poisson::logpmf),
        "poisson.pmf" => dl(poisson::pmf),
        "poisson.cdf" => dl(poisson::cdf),
        "bernoulli.logpmf" => dl(bernoulli::logpmf),
        "bernoulli.pmf" => dl(bernoulli::pmf),
        "bernoulli.cdf" => bernoulli::cdf(r(0), r(1)),
        "bernoulli.ppf" => bernoulli::ppf(r(0), r(1)),
        "binom.logpmf" => ddl(binom::logpmf),
        "binom.pmf" => ddl(binom::pmf),
        "geom.logpmf" => dl(geom::logpmf),
        "geom.pmf" => dl(geom::pmf),
        "nbinom.logpmf" => ddl(nbinom::logpmf),
        "nbinom.pmf" => ddl(nbinom::pmf),
        "truncnorm.logpdf" => ssls(truncnorm::logpdf),
        "truncnorm.pdf" => ssls(truncnorm::pdf),
        "truncnorm.cdf" => ssls(truncnorm::cdf),
        "truncnorm.logcdf" => ssls(truncnorm::logcdf),
        "truncnorm.sf" => ssls(truncnorm::sf),
        "truncnorm.logsf" => ssls(truncnorm::logsf),
        "gumbel_r.logpdf" => ls(gumbel_r::logpdf),
        "gumbel_r.pdf" => ls(gumbel_r::pdf),
        "gumbel_r.logcdf" => ls(gumbel_r::logcdf),
        "gumbel_r.cdf" => ls(gumbel_r::cdf),
        "gumbel_r.sf" => ls(gumbel_r::sf),
        "gumbel_r.logsf" => ls(gumbel_r::logsf),
        "gumbel_r.ppf" => ls(gumbel_r::ppf),
        "gumbel_l.logpdf" => ls(gumbel_l::logpdf),
        "gumbel_l.pdf" => ls(gumbel_l::pdf),
        "gumbel_l.logcdf" => ls(gumbel_l::logcdf),
        "gumbel_l.cdf" => ls(gumbel_l::cdf),
        "gumbel_l.sf" => ls(gumbel_l::sf),
        "gumbel_l.logsf" => ls(gumbel_l::logsf),
        "gumbel_l.ppf" => ls(gumbel_l::ppf),
        "wrapcauchy.logpdf" => wrapcauchy::logpdf(r(0), r(1)),
        "wrapcauchy.pdf" => wrapcauchy::pdf(r(0), r(1)),
        "gennorm.logpdf" => gennorm::logpdf(r(0), r(1)),
        "gennorm.pdf" => gennorm::pdf(r(0), r(1)),
        "gennorm.cdf" => gennorm::cdf(r(0), r(1)),
        "betabinom.logpmf" => betabinom::logpmf(r(0), r(1), r(2), r(3), o(4)),
        "betabinom.pmf" => betabinom::pmf(r(0), r(1), r(2), r(3), o(4)),
        "multinomial.logpmf" => multinomial::logpmf(r(0), r(1), r(2)),
        "multinomial.pmf" => multinomial::pmf(r(0), r(1), r(2)),
        "dirichlet.logpdf" => dirichlet::logpdf(r(0), r(1)),
        "dirichlet.pdf" => dirichlet::pdf(r(0), r(1)),
        "multivariate_normal.logpdf" => multivariate_normal::logpdf(r(0), r(1), r(2)),
        "multivariate_normal.pdf" => multivariate_normal::pdf(r(0), r(1), r(2)),
        _ => panic!("no dispatch for {name}"),
    }
}

// ------------------------------------------------------------ compare --

/// Mismatches of `got` against `want` (`rtol` relative plus `atol`).
fn mismatches(got: &[f64], want: &[f64], rtol: f64, atol: f64) -> Vec<String> {
    if got.len() != want.len() {
        return vec![format!("{} values, want {}", got.len(), want.len())];
    }
    let mut bad = Vec::new();
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= rtol * w.abs() + atol
        };
        if !ok {
            bad.push(format!("[{i}] got {g:e}, want {w:e}"));
        }
    }
    bad
}

fn cases() -> Vec<J> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/scipy-stats-jax.json"
    );
    let text = std::fs::read(path).expect("tests/data/scipy-stats-jax.json");
    let root = P { s: &text, i: 0 }.value();
    root.get("cases").arr().to_vec()
}

fn dtype_of(c: &J) -> DType {
    if c.get("dtype").str() == "f64" {
        DType::F64
    } else {
        DType::F32
    }
}

fn args_of(c: &J, dt: DType) -> Vec<Option<Array>> {
    c.get("args")
        .arr()
        .iter()
        .map(|a| match a {
            J::Null => None,
            a => {
                let (s, d) = tensor(a);
                if matches!(a.get("int"), J::Num(_)) {
                    Some(Array::from_vec(
                        d.iter().map(|&v| v as i32).collect::<Vec<_>>(),
                        &s,
                    ))
                } else {
                    Some(make(&s, &d, dt))
                }
            }
        })
        .collect()
}

#[test]
fn values_match_jax() {
    let mut failures = Vec::new();
    let cases = cases();
    assert!(cases.len() > 300, "{} cases", cases.len());
    for (n, c) in cases.iter().enumerate() {
        let name = c.get("fn").str();
        let dt = dtype_of(c);
        let args = args_of(c, dt);
        let (shape, want) = tensor(c.get("out"));
        let (rtol, atol) = if dt == DType::F64 {
            (1e-6, 1e-12)
        } else {
            (2e-5, 1e-6)
        };
        match call(name, &args) {
            Err(e) => failures.push(format!("#{n} {name} {dt:?}: {e}")),
            Ok(y) => {
                if y.dtype() != dt || y.shape() != shape {
                    failures.push(format!(
                        "#{n} {name}: {:?}{:?}, want {dt:?}{shape:?}",
                        y.dtype(),
                        y.shape()
                    ));
                    continue;
                }
                let bad = mismatches(&to_f64(&y), &want, rtol, atol);
                if !bad.is_empty() {
                    failures.push(format!("#{n} {name} {dt:?}: {}", bad.join(", ")));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gradients_match_jax() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (n, c) in cases().iter().enumerate() {
        let J::Arr(grads) = c.get("grads") else {
            continue;
        };
        let name = c.get("fn").str().to_string();
        let dt = dtype_of(c);
        let args = args_of(c, dt);
        let (rtol, atol) = if dt == DType::F64 {
            (1e-6, 1e-10)
        } else {
            (1e-4, 1e-5)
        };
        for (i, g) in grads.iter().enumerate() {
            match g {
                J::Null => continue,
                J::Str(s) if s == "jax-fails" => continue,
                _ => {}
            }
            let base = args.clone();
            let nm = name.clone();
            let got = grad(move |x: Array| {
                let mut a = base.clone();
                a[i] = Some(x);
                ok_or_raise(call(&nm, &a).and_then(|y| jnp::sum(&y, All, false)))
            })(args[i].clone().expect("argument"));
            checked += 1;
            match (g, got) {
                (J::Str(s), Err(_)) if s == "error" => {}
                (J::Str(_), Ok(_)) => {
                    failures.push(format!("#{n} {name} d/darg{i}: JAX raises, jaxon does not"))
                }
                (_, Err(e)) => failures.push(format!("#{n} {name} d/darg{i}: {e}")),
                (g, Ok(v)) => {
                    let (_, want) = tensor(g);
                    let bad = mismatches(&to_f64(&v), &want, rtol, atol);
                    if !bad.is_empty() {
                        failures.push(format!("#{n} {name} {dt:?} d/darg{i}: {}", bad.join(", ")));
                    }
                }
            }
        }
    }
    assert!(checked > 300, "{checked} gradients");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `d/dx_i sum(f)` by central differences in f64.
fn central(f: &dyn Fn(&Array) -> Array, x: &[f64], shape: &[usize]) -> Vec<f64> {
    let h = 1e-6;
    (0..x.len())
        .map(|i| {
            let mut p = x.to_vec();
            let mut m = x.to_vec();
            p[i] += h;
            m[i] -= h;
            let s = |v: Vec<f64>| {
                f(&Array::from_vec(v, shape))
                    .to_vec::<f64>()
                    .iter()
                    .sum::<f64>()
            };
            (s(p) - s(m)) / (2.0 * h)
        })
        .collect()
}

#[test]
fn gradients_match_central_differences() {
    let a = |v: &[f64]| Array::from_vec(v.to_vec(), &[v.len()]);
    let xs = [0.3, 1.7, 2.9, 4.2];
    let checks: Vec<Check> = vec![
        (
            "norm.logcdf(x)",
            Box::new(|x: &Array| norm::logcdf(&lax_neg(x), None, None).unwrap()),
        ),
        (
            "gamma.logpdf(x, a=2.5, scale=1.5)",
            Box::new(move |x: &Array| {
                gamma::logpdf(
                    x,
                    &Array::scalar(2.5f64),
                    None,
                    Some(&Array::scalar(1.5f64)),
                )
                .unwrap()
            }),
        ),
        (
            "gamma.logpdf(1.3, a=x)",
            Box::new(|x: &Array| gamma::logpdf(&Array::scalar(1.3f64), x, None, None).unwrap()),
        ),
        (
            "t.logpdf(0.7, df=x)",
            Box::new(|x: &Array| t::logpdf(&Array::scalar(0.7f64), x, None, None).unwrap()),
        ),
        (
            "beta.logpdf(0.4, a=x, b=1.5)",
            Box::new(|x: &Array| {
                beta::logpdf(
                    &Array::scalar(0.4f64),
                    x,
                    &Array::scalar(1.5f64),
                    None,
                    None,
                )
                .unwrap()
            }),
        ),
        (
            "truncnorm.logcdf(0.2, a=-x, b=x)",
            Box::new(|x: &Array| {
                truncnorm::logcdf(&Array::scalar(0.2f64), &lax_neg(x), x, None, None).unwrap()
            }),
        ),
        (
            "chi2.cdf(x, df=3)",
            Box::new(|x: &Array| chi2::cdf(x, &Array::scalar(3.0f64), None, None).unwrap()),
        ),
        (
            // JAX 0.10.2 itself fails on this derivative (a float0 tangent).
            "gumbel_r.logpdf(0.4, scale=x)",
            Box::new(|x: &Array| gumbel_r::logpdf(&Array::scalar(0.4f64), None, Some(x)).unwrap()),
        ),
        (
            "gumbel_l.ppf(0.3, scale=x)",
            Box::new(|x: &Array| gumbel_l::ppf(&Array::scalar(0.3f64), None, Some(x)).unwrap()),
        ),
        (
            "vonmises.logpdf(1.1, kappa=x)",
            Box::new(|x: &Array| vonmises::logpdf(&Array::scalar(1.1f64), x).unwrap()),
        ),
    ];
    for (what, f) in &checks {
        let want = central(f.as_ref(), &xs, &[4]);
        let f2 = |x: Array| jnp::sum(&f(&x), All, false).unwrap();
        let got = grad(f2)(a(&xs)).unwrap().to_vec::<f64>();
        let bad = mismatches(&got, &want, 1e-6, 1e-7);
        assert!(bad.is_empty(), "{what}: {}", bad.join(", "));
    }
    // The multivariate normal wrt its mean.
    let cov = Array::from_vec(
        vec![2.0f64, 0.3, 0.1, 0.3, 1.5, -0.2, 0.1, -0.2, 1.0],
        &[3, 3],
    );
    let x = a(&[0.5, -1.0, 2.0]);
    let f = |m: &Array| multivariate_normal::logpdf(&x, m, &cov).unwrap();
    let want = central(&f, &[0.1, 0.2, -0.3], &[3]);
    let got = grad(|m: Array| f(&m))(a(&[0.1, 0.2, -0.3]))
        .unwrap()
        .to_vec::<f64>();
    let bad = mismatches(&got, &want, 1e-6, 1e-7);
    assert!(bad.is_empty(), "mvn wrt mean: {}", bad.join(", "));
}

fn lax_neg(x: &Array) -> Array {
    jaxon_trace::lax::neg(x).unwrap()
}

#[test]
fn staged_and_batched_calls_agree_with_eager() {
    let x = Array::from_vec(vec![-1.5f32, 0.2, 0.9, 3.0], &[4]);
    let df = Array::from_vec(vec![1.0f32, 2.5, 4.0, 9.0], &[4]);
    let eager = t::logpdf(&x, &df, None, None).unwrap().to_vec::<f32>();
    let staged = jit(|v: Vec<Array>| t::logpdf(&v[0], &v[1], None, None).unwrap())
        .call(vec![x.clone(), df.clone()])
        .unwrap()
        .to_vec::<f32>();
    assert_eq!(eager, staged);
    let staged = jit(|v: Vec<Array>| truncnorm::logcdf(&v[0], &v[1], &v[2], None, None).unwrap())
        .call(vec![x.clone(), lax_neg(&df), df.clone()])
        .unwrap()
        .to_vec::<f32>();
    let eager = truncnorm::logcdf(&x, &lax_neg(&df), &df, None, None)
        .unwrap()
        .to_vec::<f32>();
    assert_eq!(eager, staged);
    // vmap over rows of x against a loop of unbatched calls.
    let xs = Array::from_vec(
        (0..12).map(|i| i as f32 * 0.37 - 2.0).collect::<Vec<_>>(),
        &[3, 4],
    );
    let batched = vmap(|r: Array| norm::logcdf(&r, None, Some(&Array::scalar(1.5f32))).unwrap())
        .call(xs.clone())
        .unwrap()
        .to_vec::<f32>();
    let rows = xs.to_vec::<f32>();
    let mut looped = Vec::new();
    for r in rows.chunks(4) {
        let y = norm::logcdf(
            &Array::from_vec(r.to_vec(), &[4]),
            None,
            Some(&Array::scalar(1.5f32)),
        );
        looped.extend(y.unwrap().to_vec::<f32>());
    }
    assert_eq!(batched, looped);
}

#[test]
fn promotion_and_errors() {
    // Integer arguments are promoted to the default float, as JAX does.
    let k = Array::from_vec(vec![0i32, 1, 2, 5], &[4]);
    let y = poisson::logpmf(&k, &Array::weak(2.0), None).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    let y = norm::logpdf(&k, None, None).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    // f64 stays f64 against weak defaults.
    let x = Array::from_vec(vec![0.5f64, 1.0], &[2]);
    assert_eq!(expon::cdf(&x, None, None).unwrap().dtype(), DType::F64);
    // norm.ppf does not promote: an integer q is an error (JAX's TypeError).
    assert!(norm::ppf(&k, None, None).is_err());
    // Shapes that do not broadcast name both shapes.
    let x3 = Array::from_vec(vec![0.1f32, 0.2, 0.3], &[3]);
    let l4 = Array::from_vec(vec![0.0f32; 4], &[4]);
    let shape_err = |r: Result<Array>| match r {
        Err(Error::ShapeMismatch { lhs, rhs, .. }) => {
            let both = format!("{lhs} {rhs}");
            assert!(both.contains("[3]") && both.contains('4'), "{lhs} vs {rhs}");
        }
        other => panic!("expected a shape error, got {other:?}"),
    };
    shape_err(norm::logpdf(&x3, Some(&l4), None));
    shape_err(gamma::cdf(&x3, &l4, None, None));
    shape_err(beta::logpdf(&x3, &l4, &l4, None, None));
    shape_err(truncnorm::logcdf(&x3, &l4, &l4, None, None));
    shape_err(dirichlet::logpdf(&l4, &x3));
    let mean = Array::from_vec(vec![0.0f32; 3], &[3]);
    let cov4 = Array::from_vec(vec![0.0f32; 16], &[4, 4]);
    shape_err(multivariate_normal::logpdf(&x3, &mean, &cov4));
    // alpha must be 1-D.
    let a2 = Array::from_vec(vec![1.0f32; 6], &[2, 3]);
    assert!(matches!(
        dirichlet::logpdf(&x3, &a2),
        Err(Error::InvalidArgument(_))
    ));
    // multinomial counts must be integers.
    let p3 = Array::from_vec(vec![0.2f32, 0.3, 0.5], &[3]);
    assert!(multinomial::logpmf(&x3, &Array::scalar(3i32), &p3).is_err());
    // A scalar x has no components.
    assert!(dirichlet::logpdf(&Array::scalar(0.5f32), &x3).is_err());
}
