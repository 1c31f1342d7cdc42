//! The samplers of `random` (gamma family, poisson, choice, ...) against
//! JAX 0.10.2's draws recorded by `tests/data/gen_random_samplers.py` in
//! `tests/data/random-samplers-jax.json` (f32 cases in JAX's default
//! 32-bit mode, f64 cases with `jax_enable_x64`). Integer samplers must
//! agree exactly; float samplers within a few ulp, the rounding of XLA's
//! `log`/`exp`/`pow`/`erf_inv`/`tan` polynomials and FMA contraction
//! against the interpreter's correctly rounded functions (the standard of
//! `random_jax.rs`). Also: bad inputs are `Err`, not panics.

use jaxon_ir::DType;
use jaxon_trace::random as jr;
use jaxon_trace::Array;

/// A JSON value (the data file is plain JSON; no parser dependency here).
#[derive(Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn at(&self, key: &str) -> &Json {
        self.get(key).unwrap_or_else(|| panic!("missing key {key}"))
    }
    fn num(&self) -> f64 {
        match self {
            Json::Num(x) => *x,
            other => panic!("not a number: {other:?}"),
        }
    }
    fn str(&self) -> &str {
        match self {
            Json::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }
    fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(v) => v,
            other => panic!("not an array: {other:?}"),
        }
    }
    fn bool(&self) -> bool {
        match self {
            Json::Bool(b) => *b,
            other => panic!("not a bool: {other:?}"),
        }
    }
    fn usizes(&self) -> Vec<usize> {
        self.arr().iter().map(|x| x.num() as usize).collect()
    }
    /// A number or nested lists of numbers, flattened, with its shape.
    fn tensor(&self) -> (Vec<f64>, Vec<usize>) {
        match self {
            Json::Num(x) => (vec![*x], vec![]),
            Json::Arr(v) => {
                let mut data = Vec::new();
                let mut inner = vec![];
                for x in v {
                    let (d, s) = x.tensor();
                    data.extend(d);
                    inner = s;
                }
                let mut shape = vec![v.len()];
                shape.extend(inner);
                (data, shape)
            }
            other => panic!("not a tensor: {other:?}"),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn value(&mut self) -> Json {
        self.ws();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut kv = Vec::new();
                loop {
                    self.ws();
                    if self.s[self.i] == b'}' {
                        self.i += 1;
                        return Json::Obj(kv);
                    }
                    let Json::Str(k) = self.value() else {
                        panic!("object key")
                    };
                    self.ws();
                    assert_eq!(self.s[self.i], b':');
                    self.i += 1;
                    kv.push((k, self.value()));
                    self.ws();
                    if self.s[self.i] == b',' {
                        self.i += 1;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s[self.i] == b']' {
                        self.i += 1;
                        return Json::Arr(v);
                    }
                    v.push(self.value());
                    self.ws();
                    if self.s[self.i] == b',' {
                        self.i += 1;
                    }
                }
            }
            b'"' => {
                let start = self.i + 1;
                self.i = start;
                while self.s[self.i] != b'"' {
                    self.i += 1;
                }
                self.i += 1;
                Json::Str(String::from_utf8(self.s[start..self.i - 1].to_vec()).unwrap())
            }
            b't' => {
                self.i += 4;
                Json::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Json::Bool(false)
            }
            b'n' => {
                self.i += 4;
                Json::Null
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                Json::Num(text.parse().unwrap_or_else(|_| panic!("bad number {text}")))
            }
        }
    }
}

fn load() -> Vec<Json> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/random-samplers-jax.json"
    );
    let text = std::fs::read_to_string(path).expect("read the recorded JAX draws");
    let root = Parser {
        s: text.as_bytes(),
        i: 0,
    }
    .value();
    root.at("cases").arr().to_vec()
}

/// A float array of `dtype` from a JSON number or nested list.
fn farr(v: &Json, dtype: DType) -> Array {
    let (data, shape) = v.tensor();
    match dtype {
        DType::F64 => Array::from_vec(data, &shape),
        _ => Array::from_vec(data.iter().map(|&x| x as f32).collect(), &shape),
    }
}

fn dtype_of(name: &str) -> DType {
    match name {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "i32" => DType::I32,
        "i64" => DType::I64,
        other => panic!("dtype {other}"),
    }
}

/// Runs one recorded case through jaxon.
fn run(case: &Json) -> jaxon_trace::Result<Array> {
    let args = case.at("args");
    let key = jr::key(case.at("seed").num() as u64);
    let dt = case.get("dtype").map(|d| dtype_of(d.str()));
    let ft = dt.unwrap_or(DType::F32);
    let shape = case.get("shape").map(Json::usizes);
    let sh = shape.as_deref();
    let fa = |k: &str| farr(args.at(k), ft);
    let scalar = |k: &str| args.at(k).num();
    Ok(match case.at("fn").str() {
        "gamma" => jr::gamma(&key, &fa("a"), sh, ft)?,
        "loggamma" => jr::loggamma(&key, &fa("a"), sh, ft)?,
        "beta" => jr::beta(&key, &fa("a"), &fa("b"), sh, ft)?,
        "dirichlet" => jr::dirichlet(&key, &fa("alpha"), sh, ft)?,
        "chisquare" => jr::chisquare(&key, &fa("df"), sh, ft)?,
        "f" => jr::f(&key, &fa("dfnum"), &fa("dfden"), sh, ft)?,
        "t" => jr::t(&key, &fa("df"), sh, ft)?,
        "cauchy" => jr::cauchy(&key, sh.unwrap(), ft)?,
        "pareto" => jr::pareto(&key, &fa("b"), sh, ft)?,
        "weibull_min" => {
            jr::weibull_min(&key, &fa("scale"), &fa("concentration"), sh.unwrap(), ft)?
        }
        "maxwell" => jr::maxwell(&key, sh.unwrap(), ft)?,
        "double_sided_maxwell" => {
            jr::double_sided_maxwell(&key, &fa("loc"), &fa("scale"), sh.unwrap(), ft)?
        }
        "multivariate_normal" => jr::multivariate_normal(
            &key,
            &fa("mean"),
            &fa("cov"),
            sh,
            Some(ft),
            case.at("method").str(),
        )?,
        "ball" => jr::ball(&key, scalar("d") as usize, scalar("p"), sh.unwrap(), ft)?,
        "orthogonal" => jr::orthogonal(&key, scalar("n") as usize, sh.unwrap(), ft, None)?,
        "binomial" => jr::binomial(&key, &fa("n"), &fa("p"), sh, ft)?,
        "poisson" => jr::poisson(&key, &farr(args.at("lam"), DType::F32), sh, DType::I32)?,
        "geometric" => jr::geometric(&key, &farr(args.at("p"), DType::F32), sh, DType::I32)?,
        "rademacher" => jr::rademacher(&key, sh.unwrap(), ft)?,
        "choice" => {
            let p = args.get("p").map(|p| farr(p, DType::F32));
            let replace = args.at("replace").bool();
            let axis = args.get("axis").map_or(0, |a| a.num() as isize);
            let draws = sh.unwrap();
            match args.get("x") {
                Some(x) => {
                    let (data, xs) = x.tensor();
                    let x = Array::from_vec(data.iter().map(|&v| v as i32).collect(), &xs);
                    jr::choice(&key, x, draws, replace, p.as_ref(), axis)?
                }
                None => {
                    let n = args.at("n").num() as usize;
                    jr::choice(&key, n, draws, replace, p.as_ref(), axis)?
                }
            }
        }
        other => panic!("unknown sampler {other}"),
    })
}

/// Distance in ulps of two finite floats of the same dtype (as f64s).
fn ulps(a: f64, b: f64, dtype: DType) -> u64 {
    if a == b {
        return 0;
    }
    let key = |x: f64| -> i128 {
        if dtype == DType::F32 {
            let b = (x as f32).to_bits();
            if b >> 31 == 1 {
                -((b & 0x7FFF_FFFF) as i128)
            } else {
                b as i128
            }
        } else {
            let b = x.to_bits();
            if b >> 63 == 1 {
                -((b & 0x7FFF_FFFF_FFFF_FFFF) as i128)
            } else {
                b as i128
            }
        }
    };
    (key(a) - key(b)).unsigned_abs() as u64
}

/// The largest ulp distance a float sampler may have from JAX: the number
/// of rounded transcendental steps between the random bits and the output,
/// each a few ulp off XLA's (rejection samplers keep their decisions).
fn ulp_budget(fname: &str) -> u64 {
    match fname {
        "gamma" | "loggamma" | "chisquare" | "maxwell" | "pareto" | "rademacher" => 32,
        "cauchy" | "weibull_min" | "double_sided_maxwell" | "multivariate_normal" => 32,
        "beta" | "dirichlet" | "f" | "t" | "ball" | "orthogonal" | "binomial" => 64,
        _ => 0,
    }
}

fn to_f64s(a: &Array) -> Vec<f64> {
    match a.dtype() {
        DType::F64 => a.to_vec::<f64>(),
        DType::F32 => a.to_vec::<f32>().iter().map(|&x| x as f64).collect(),
        DType::I32 => a.to_vec::<i32>().iter().map(|&x| x as f64).collect(),
        DType::I64 => a.to_vec::<i64>().iter().map(|&x| x as f64).collect(),
        d => panic!("unexpected output dtype {d:?}"),
    }
}

/// For `multivariate_normal` by `eigh`/`svd`, whose factor `V sqrt(W)`
/// has the column signs of the backend's decomposition: the magnitudes of
/// `V^T (x - mean)` (`sqrt(W) z` up to signs) for jaxon's and JAX's
/// samples, with jaxon's `V`.
fn sign_free(case: &Json, method: &str, got: &[f64], want: &[f64]) -> (Vec<f64>, Vec<f64>) {
    use jaxon_trace::numpy::linalg;
    let ft = dtype_of(case.at("dtype").str());
    let args = case.at("args");
    let (mean, n) = {
        let (m, s) = args.at("mean").tensor();
        (m, s[0])
    };
    let cov = farr(args.at("cov"), DType::F64);
    let v = match method {
        "eigh" => linalg::eigh(&cov).unwrap().1,
        _ => linalg::svd(&cov, true).unwrap().0,
    }
    .to_vec::<f64>();
    let project = |x: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        for row in x.chunks(n) {
            for j in 0..n {
                let s: f64 = (0..n).map(|i| v[i * n + j] * (row[i] - mean[i])).sum();
                out.push(s.abs());
            }
        }
        out
    };
    let round = |x: Vec<f64>| -> Vec<f64> {
        if ft == DType::F32 {
            x.iter().map(|&y| y as f32 as f64).collect()
        } else {
            x
        }
    };
    (round(project(got)), round(project(want)))
}

/// Compares every recorded case; returns one line per mismatching case.
fn compare(filter: impl Fn(&str) -> bool) -> (usize, Vec<String>) {
    let mut bad = Vec::new();
    let mut n = 0;
    let mut worst_ulps = std::collections::BTreeMap::<String, u64>::new();
    for case in load() {
        let fname = case.at("fn").str().to_string();
        if !filter(&fname) {
            continue;
        }
        n += 1;
        let name = case.at("name").str().to_string();
        let out = case.at("out");
        let want_dt = dtype_of(out.at("dtype").str());
        let want_shape = out.at("shape").usizes();
        let want: Vec<f64> = out.at("data").arr().iter().map(Json::num).collect();
        let got = match run(&case) {
            Ok(a) => a,
            Err(e) => {
                bad.push(format!("{name}: error {e}"));
                continue;
            }
        };
        let got_dt = if want_dt == DType::I64 {
            DType::I32
        } else {
            want_dt
        };
        if got.dtype() != got_dt || got.shape() != want_shape {
            bad.push(format!(
                "{name}: got {:?}{:?}, JAX {want_dt:?}{want_shape:?}",
                got.dtype(),
                got.shape()
            ));
            continue;
        }
        let got = to_f64s(&got);
        if want_dt.is_int() {
            if got != want {
                bad.push(format!("{name}: {got:?} vs JAX {want:?}"));
            }
            continue;
        }
        let (got, want) = match case.get("method").map(Json::str) {
            Some(m @ ("eigh" | "svd")) => sign_free(&case, m, &got, &want),
            _ => (got, want),
        };
        let budget = ulp_budget(&fname);
        let eps = if want_dt == DType::F32 {
            f32::EPSILON as f64
        } else {
            f64::EPSILON
        };
        // Within `budget` ulps, or within `budget` epsilons of 1 for values
        // that are small differences (log-gamma near 0, orthogonal entries).
        let close = |g: f64, w: f64| {
            ulps(g, w, want_dt) <= budget || (g - w).abs() <= budget as f64 * eps * w.abs().max(1.0)
        };
        let worst = got
            .iter()
            .zip(&want)
            .map(|(&g, &w)| ulps(g, w, want_dt))
            .max();
        let entry = worst_ulps
            .entry(format!("{fname} {want_dt:?}"))
            .or_default();
        *entry = (*entry).max(worst.unwrap_or(0));
        if let Some((g, w)) = got.iter().zip(&want).find(|(&g, &w)| !close(g, w)) {
            let u = ulps(*g, *w, want_dt);
            bad.push(format!(
                "{name}: {g} vs JAX {w} ({u} ulp)\n  got {got:?}\n  JAX {want:?}"
            ));
        }
    }
    eprintln!("worst ulp distance from JAX per sampler: {worst_ulps:?}");
    (n, bad)
}

/// Every recorded case (the CPU backend's test runs this under
/// `with_backend("cpu", ..)`).
#[allow(dead_code)]
pub fn check_all() {
    check(|_| true);
}

fn check(filter: impl Fn(&str) -> bool) {
    let (n, bad) = compare(filter);
    assert!(n > 0, "no cases selected");
    assert!(
        bad.is_empty(),
        "{} of {n} cases differ from JAX:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn gamma_family_matches_jax() {
    check(|f| {
        matches!(
            f,
            "gamma" | "loggamma" | "beta" | "dirichlet" | "chisquare" | "f" | "t"
        )
    });
}

#[test]
fn integer_samplers_match_jax_exactly() {
    check(|f| matches!(f, "poisson" | "geometric" | "rademacher" | "choice"));
}

#[test]
fn transformed_samplers_match_jax() {
    check(|f| {
        matches!(
            f,
            "cauchy" | "pareto" | "weibull_min" | "maxwell" | "double_sided_maxwell"
        )
    });
}

#[test]
fn multivariate_samplers_match_jax() {
    check(|f| matches!(f, "multivariate_normal" | "ball" | "orthogonal"));
}

#[test]
fn binomial_matches_jax() {
    check(|f| f == "binomial");
}

/// `Err` with a message containing `needle`.
fn expect_err(r: jaxon_trace::Result<Array>, needle: &str) {
    match r {
        Ok(a) => panic!(
            "expected an error mentioning {needle:?}, got {:?}",
            a.shape()
        ),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(needle), "{msg:?} does not mention {needle:?}");
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let k = jr::key(0);
    let a3 = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let p4 = Array::from_vec(vec![0.25f32; 4], &[4]);
    // choice: too few elements without replacement, p of the wrong length,
    // an empty population.
    expect_err(
        jr::choice(&k, 3usize, &[4], false, None, 0),
        "larger sample",
    );
    expect_err(
        jr::choice(&k, 5usize, &[2], true, Some(&p4), 0),
        "p must be",
    );
    expect_err(
        jr::choice(&k, 0usize, &[2], true, None, 0),
        "greater than 0",
    );
    expect_err(jr::choice(&k, a3.clone(), &[2], true, None, 1), "axis");
    // Shapes the parameters do not broadcast to.
    expect_err(jr::gamma(&k, &a3, Some(&[2]), DType::F32), "broadcast");
    expect_err(jr::beta(&k, &a3, &p4, None, DType::F32), "broadcast");
    expect_err(jr::poisson(&k, &a3, Some(&[2]), DType::I32), "broadcast");
    // Wrong dtypes.
    expect_err(jr::gamma(&k, &a3, None, DType::I32), "float");
    expect_err(jr::gamma(&k, &a3, None, DType::F16), "float32 or float64");
    expect_err(jr::poisson(&k, &a3, None, DType::F32), "integer");
    expect_err(jr::geometric(&k, &a3, None, DType::F32), "integer");
    expect_err(jr::rademacher(&k, &[2], DType::Bool), "integer or float");
    expect_err(jr::cauchy(&k, &[2], DType::I32), "float");
    // Keys that are not a single threefry key.
    let bad_key = Array::from_vec(vec![1u32, 2, 3], &[3]);
    expect_err(jr::gamma(&bad_key, &a3, None, DType::F32), "key");
    expect_err(jr::poisson(&bad_key, &a3, None, DType::I32), "key");
    // Rank and method checks.
    expect_err(
        jr::dirichlet(&k, &Array::scalar(1.0f32), None, DType::F32),
        "ndim",
    );
    let cov = Array::from_vec(vec![1.0f32; 4], &[2, 2]);
    expect_err(
        jr::multivariate_normal(&k, &a3, &cov, None, None, "cholesky"),
        "cov.shape",
    );
    let m2 = Array::from_vec(vec![0.0f32; 2], &[2]);
    expect_err(
        jr::multivariate_normal(&k, &m2, &cov, None, None, "lu"),
        "method",
    );
}

#[test]
fn samplers_stage_under_jit_with_traced_keys() {
    // The same draws eagerly and compiled with the key as a jit argument.
    let k = jr::key(7);
    let lam = Array::from_vec(vec![0.5f32, 4.0, 12.0, 30.0], &[4]);
    let a = Array::from_vec(vec![0.4f32, 1.0, 3.0, 8.0], &[4]);
    let f = |xs: Vec<Array>| {
        let (k, lam, a) = (&xs[0], &xs[1], &xs[2]);
        let p = jaxon_trace::error::ok_or_raise(jr::poisson(k, lam, None, DType::I32));
        let g = jaxon_trace::error::ok_or_raise(jr::gamma(k, a, None, DType::F32));
        let c = jaxon_trace::error::ok_or_raise(jr::choice(k, 6usize, &[3], false, None, 0));
        vec![p, g, c]
    };
    let eager = f(vec![k.clone(), lam.clone(), a.clone()]);
    let staged = jaxon_trace::jit(f).call(vec![k, lam, a]).unwrap();
    assert_eq!(eager[0].to_vec::<i32>(), staged[0].to_vec::<i32>());
    assert_eq!(eager[1].to_vec::<f32>(), staged[1].to_vec::<f32>());
    assert_eq!(eager[2].to_vec::<i32>(), staged[2].to_vec::<i32>());
}
