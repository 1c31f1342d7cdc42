//! Gradients of the gamma-based samplers of `jaxon_trace::random`, as JAX
//! defines them: a gamma sample's derivative in `a` is the implicit
//! reparameterisation `-dP(a, x)/da / pdf(x; a)` at fixed CDF value (here
//! `dP/da` by central differences of `igamma` in f64), and `loggamma`,
//! `beta`, `dirichlet` and `chisquare` differentiate through it by the
//! chain rule. Also: `vmap` of `gamma` over `a` equals a loop of
//! unbatched calls with the same key, as in JAX.

use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::random as jr;
use jaxon_trace::{lax, numpy as jnp, Array};
use jaxon_transforms::{grad, vmap};

fn f64s(a: &Array) -> Vec<f64> {
    a.to_vec::<f64>()
}

fn arr(v: &[f64]) -> Array {
    Array::from_vec(v.to_vec(), &[v.len()])
}

/// `dx/da` of a Gamma(a) sample `x` at fixed CDF: `-dP(a, x)/da / pdf`,
/// with `dP/da` by central differences in f64.
fn implicit_dx_da(a: f64, x: f64) -> f64 {
    let p = |a: f64| {
        let v = lax::igamma(&Array::scalar(a), &Array::scalar(x)).unwrap();
        v.to_vec::<f64>()[0]
    };
    let lg = lax::lgamma(&Array::scalar(a)).unwrap().to_vec::<f64>()[0];
    let h = 1e-5 * a.max(1.0);
    let dp = (p(a + h) - p(a - h)) / (2.0 * h);
    let pdf = ((a - 1.0) * x.ln() - x - lg).exp();
    -dp / pdf
}

fn close(got: f64, want: f64, rtol: f64, what: &str) {
    assert!(
        (got - want).abs() <= rtol * want.abs().max(1e-3),
        "{what}: got {got}, central differences {want}"
    );
}

const A: [f64; 5] = [0.3, 0.8, 1.0, 2.5, 7.0];

#[test]
fn gamma_grad_is_the_implicit_reparameterisation() {
    let key = jr::key(11);
    let x = f64s(&jr::gamma(&key, &arr(&A), None, DType::F64).unwrap());
    let g = grad(|a: Array| {
        ok_or_raise(jnp::sum(
            &ok_or_raise(jr::gamma(&key, &a, None, DType::F64)),
            jnp::All,
            false,
        ))
    })(arr(&A))
    .unwrap();
    for ((&a, &x), g) in A.iter().zip(&x).zip(f64s(&g)) {
        close(g, implicit_dx_da(a, x), 1e-5, &format!("gamma a={a} x={x}"));
    }
}

#[test]
fn loggamma_and_chisquare_grads_follow_the_chain_rule() {
    let key = jr::key(5);
    let lx = f64s(&jr::loggamma(&key, &arr(&A), None, DType::F64).unwrap());
    let g = grad(|a: Array| {
        ok_or_raise(jnp::sum(
            &ok_or_raise(jr::loggamma(&key, &a, None, DType::F64)),
            jnp::All,
            false,
        ))
    })(arr(&A))
    .unwrap();
    for ((&a, &lx), g) in A.iter().zip(&lx).zip(f64s(&g)) {
        let x = lx.exp();
        close(
            g,
            implicit_dx_da(a, x) / x,
            1e-5,
            &format!("loggamma a={a}"),
        );
    }
    // chisquare(df) = 2 exp(loggamma(df / 2)): d/d(df) = dG/da at a = df/2.
    let df: Vec<f64> = A.iter().map(|a| 2.0 * a).collect();
    let g = grad(|d: Array| {
        ok_or_raise(jnp::sum(
            &ok_or_raise(jr::chisquare(&key, &d, None, DType::F64)),
            jnp::All,
            false,
        ))
    })(arr(&df))
    .unwrap();
    for ((&a, &lx), g) in A.iter().zip(&lx).zip(f64s(&g)) {
        close(
            g,
            implicit_dx_da(a, lx.exp()),
            1e-5,
            &format!("chisquare df={}", 2.0 * a),
        );
    }
}

#[test]
fn beta_grad_goes_through_both_gamma_samples() {
    let key = jr::key(3);
    let (a, b) = ([0.5, 2.0, 3.0, 1.2], [1.5, 0.7, 3.0, 4.0]);
    let (ka, kb) = jr::split2(&key).unwrap();
    let la = f64s(&jr::loggamma(&ka, &arr(&a), None, DType::F64).unwrap());
    let lb = f64s(&jr::loggamma(&kb, &arr(&b), None, DType::F64).unwrap());
    let sample = f64s(&jr::beta(&key, &arr(&a), &arr(&b), None, DType::F64).unwrap());
    let g = grad(|(pa, pb): (Array, Array)| {
        ok_or_raise(jnp::sum(
            &ok_or_raise(jr::beta(&key, &pa, &pb, None, DType::F64)),
            jnp::All,
            false,
        ))
    })((arr(&a), arr(&b)))
    .unwrap();
    let (ga, gb) = (f64s(&g.0), f64s(&g.1));
    for i in 0..a.len() {
        let (xa, xb) = (la[i].exp(), lb[i].exp());
        let s = xa + xb;
        close(sample[i], xa / s, 1e-12, "beta sample");
        let want_a = implicit_dx_da(a[i], xa) * xb / (s * s);
        let want_b = -implicit_dx_da(b[i], xb) * xa / (s * s);
        close(
            ga[i],
            want_a,
            1e-5,
            &format!("beta d/da a={} b={}", a[i], b[i]),
        );
        close(
            gb[i],
            want_b,
            1e-5,
            &format!("beta d/db a={} b={}", a[i], b[i]),
        );
    }
}

#[test]
fn dirichlet_grad_goes_through_the_gamma_samples() {
    let key = jr::key(8);
    let alpha = [0.4, 1.0, 2.5, 6.0];
    let w = [1.0, -2.0, 0.5, 3.0];
    let lg = f64s(&jr::loggamma(&key, &arr(&alpha), None, DType::F64).unwrap());
    let g = grad(|al: Array| {
        let x = ok_or_raise(jr::dirichlet(&key, &al, None, DType::F64));
        ok_or_raise(jnp::sum(
            &ok_or_raise(lax::mul(&x, &arr(&w))),
            jnp::All,
            false,
        ))
    })(arr(&alpha))
    .unwrap();
    let gs: Vec<f64> = lg.iter().map(|l| l.exp()).collect();
    let s: f64 = gs.iter().sum();
    let wg: f64 = w.iter().zip(&gs).map(|(w, g)| w * g).sum();
    for (j, got) in f64s(&g).into_iter().enumerate() {
        let want = (w[j] * s - wg) / (s * s) * implicit_dx_da(alpha[j], gs[j]);
        close(got, want, 1e-5, &format!("dirichlet d/dalpha_{j}"));
    }
}

#[test]
fn vmap_of_gamma_over_a_is_a_loop_with_the_same_key() {
    let key = jr::key(21);
    let rows = [[0.5, 1.5, 3.0], [2.0, 0.2, 9.0]];
    let batch = Array::from_vec(rows.concat(), &[2, 3]);
    let f = |a: Array| ok_or_raise(jr::gamma(&key, &a, None, DType::F64));
    let got = f64s(&vmap(f).call(batch).unwrap());
    let want: Vec<f64> = rows
        .iter()
        .flat_map(|r| f64s(&jr::gamma(&key, &arr(r), None, DType::F64).unwrap()))
        .collect();
    assert_eq!(got, want);
}
