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
    let shape = j.get("shape").arr().iter().map(|d| d.num() as usize).collect();
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

/// Calls the named `jax.scipy.stats` function; a missing trailing
/// argument (or JSON `null`) is JAX's default.
fn call(name: &str, a: &[Option<Array>]) -> Result<Array> {
    let r = |i: usize| -> &Array { a[i].as_ref().expect("required argument") };
    let o = |i: usize| a.get(i).and_then(Option::as_ref);
    let ls = |f: fn(&Array, Option<&Array>, Option<&Array>) -> Result<Array>| f(r(0), o(1), o(2));
    let sls = |f: fn(&Array, &Array, Option<&Array>, Option<&Array>) -> Result<Array>| {
        f(r(0), r(1), o(2), o(3))
    };
    let ssls = |f: fn(&Array, &Array, &Array, Option<&Array>, Option<&Array>) -> Result<Array>| {
        f(r(0), r(1), r(2), o(3), o(4))
    };
    let dl = |f: fn(&Array, &Array, Option<&Array>) -> Result<Array>| f(r(0), r(1), o(2));
    let ddl = |f: fn(&Array, &Array, &Array, Option<&Array>) -> Result<Array>| {
        f(r(0), r(1), r(2), o(3))
    };
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
                Some(make(&s, &d, dt))
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
            if matches!(g, J::Null) {
                continue;
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
