//! `scipy::stats` staged with `jit` on the CPU backend (the facade's
//! default) against the same programs on the interpreter, values and
//! gradients, in f32 and f64: every primitive the distributions use
//! (`erf`, `igamma`, `betainc`, `lgamma`, `bessel_i0e`, `cholesky`,
//! `triangular_solve`, `custom_jvp_call`, ...) lowers and agrees. The
//! values themselves are checked against JAX in
//! `crates/transforms/tests/all/scipy_stats.rs`.

use jaxon::ok_or_raise as r;
use jaxon::prelude::*;
use jaxon::scipy::stats::*;

type F = fn(&[Array]) -> Array;

fn v(x: &[f64], dt: DType) -> Array {
    let a = Array::from_vec(x.to_vec(), &[x.len()]);
    if dt == DType::F32 {
        jaxon::ok_or_raise(jaxon::lax::convert_element_type(&a, DType::F32, false))
    } else {
        a
    }
}

fn to64(a: &Array) -> Vec<f64> {
    if a.dtype() == DType::F64 {
        a.to_vec::<f64>()
    } else {
        a.to_vec::<f32>().into_iter().map(f64::from).collect()
    }
}

fn run(f: F, args: &[Array]) -> (Vec<f64>, Vec<f64>) {
    let y = jit(move |a: Vec<Array>| f(&a)).call(args.to_vec()).unwrap();
    let rest = args.to_vec();
    let g = jit(move |x: Array| {
        let rest = rest.clone();
        let x0 = x.clone();
        grad(move |x: Array| {
            let mut b = rest.clone();
            b[0] = x;
            f(&b).sum(All)
        })(x0)
        .unwrap()
    })
    .call(args[0].clone())
    .unwrap();
    (to64(&y), to64(&g))
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= tol * w.abs().max(1.0)
        };
        assert!(ok, "{what}[{i}]: cpu {g}, interpreter {w}");
    }
}

#[test]
fn cpu_backend_matches_interpreter() {
    let cases: Vec<(&str, F, Vec<Vec<f64>>)> = vec![
        (
            "norm.logcdf",
            |a| r(norm::logcdf(&a[0], Some(&a[1]), None)),
            vec![vec![-30.0, -12.0, -3.0, 0.2, 4.0, 9.5], vec![0.5]],
        ),
        (
            "norm.ppf",
            |a| r(norm::ppf(&a[0], None, Some(&a[1]))),
            vec![vec![1e-20, 0.01, 0.2, 0.5, 0.93, 0.9999], vec![1.5]],
        ),
        (
            "gamma.logpdf",
            |a| r(gamma::logpdf(&a[0], &a[1], None, None)),
            vec![vec![0.3, 1.0, 2.5, 7.0], vec![0.7, 1.0, 2.0, 5.5]],
        ),
        (
            "gamma.cdf",
            |a| r(gamma::cdf(&a[0], &a[1], None, None)),
            vec![vec![0.3, 1.0, 2.5, 7.0], vec![0.7, 1.0, 2.0, 5.5]],
        ),
        (
            "beta.cdf",
            |a| r(beta::cdf(&a[0], &a[1], &a[2], None, None)),
            vec![
                vec![0.1, 0.4, 0.8],
                vec![2.0, 0.5, 3.0],
                vec![1.5, 2.0, 0.7],
            ],
        ),
        (
            "t.logpdf",
            |a| r(t::logpdf(&a[0], &a[1], None, None)),
            vec![vec![-2.0, 0.1, 3.0], vec![1.0, 4.0, 30.0]],
        ),
        (
            "vonmises.logpdf",
            |a| r(vonmises::logpdf(&a[0], &a[1])),
            vec![vec![-2.0, 0.1, 3.0], vec![0.5, 4.0, 60.0]],
        ),
        (
            "truncnorm.logcdf",
            |a| r(truncnorm::logcdf(&a[0], &a[1], &a[2], None, None)),
            vec![
                vec![0.1, 3.6, -11.0],
                vec![-1.0, 3.0, -12.0],
                vec![2.0, 4.0, -10.0],
            ],
        ),
        (
            "poisson.cdf",
            |a| r(poisson::cdf(&a[0], &a[1], None)),
            vec![vec![0.0, 2.0, 7.0], vec![1.5, 3.0, 4.0]],
        ),
        (
            "logistic.logpdf",
            |a| r(logistic::logpdf(&a[0], None, Some(&a[1]))),
            vec![vec![-40.0, 0.0, 2.0], vec![0.5, 1.0, 2.0]],
        ),
        (
            "gennorm.cdf",
            |a| r(gennorm::cdf(&a[0], &a[1])),
            vec![vec![-1.5, 0.3, 2.0], vec![0.8, 2.0, 3.5]],
        ),
        (
            "gumbel_r.logsf",
            |a| r(gumbel_r::logsf(&a[0], None, Some(&a[1]))),
            vec![vec![-1.5, 0.3, 2.0], vec![0.8, 2.0, 3.5]],
        ),
        (
            "dirichlet.logpdf",
            |a| r(dirichlet::logpdf(&a[0], &a[1])),
            vec![vec![0.2, 0.5], vec![1.5, 2.0, 0.7]],
        ),
        (
            "multivariate_normal.logpdf",
            |a| {
                let cov = r(jaxon::numpy::reshape(&a[2], &[3, 3]));
                r(multivariate_normal::logpdf(&a[0], &a[1], &cov))
            },
            vec![
                vec![0.5, -1.0, 2.0],
                vec![0.1, 0.2, -0.3],
                vec![2.0, 0.3, 0.1, 0.3, 1.5, -0.2, 0.1, -0.2, 1.0],
            ],
        ),
    ];
    for dt in [DType::F32, DType::F64] {
        let tol = if dt == DType::F32 { 2e-5 } else { 1e-10 };
        for (name, f, raw) in &cases {
            let args: Vec<Array> = raw.iter().map(|x| v(x, dt)).collect();
            let (y_cpu, g_cpu) = run(*f, &args);
            let (y_int, g_int) =
                jaxon::with_backend("interpreter", || run(*f, &args)).expect("interpreter");
            close(&format!("{name} {dt:?}"), &y_cpu, &y_int, tol);
            close(&format!("d {name} {dt:?}"), &g_cpu, &g_int, tol * 10.0);
        }
    }
}
