//! `scipy::special` against known values and identities (f64 inputs),
//! eagerly and under `jit`, and the derivatives JAX defines (`xlogy`'s
//! `log(y)` at `x == 0`, `gammaln' = digamma`).

use jaxon::prelude::*;
use jaxon::scipy::special as sp;

fn a64(v: &[f64]) -> Array {
    Array::from_vec(v.to_vec(), &[v.len()])
}

fn assert_close(what: &str, got: &Array, want: &[f64], tol: f64) {
    let g: Vec<f64> = got.to_vec();
    assert_eq!(g.len(), want.len(), "{what}");
    for (i, (g, w)) in g.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

#[test]
fn values() {
    let pi = std::f64::consts::PI;
    let x = a64(&[1.0, 2.5, 5.0]);
    assert_close(
        "gammaln",
        &sp::gammaln(&x).unwrap(),
        &[0.0, (1.329_340_388_179_137f64).ln(), 24f64.ln()],
        1e-13,
    );
    assert_close(
        "digamma",
        &sp::digamma(&a64(&[1.0])).unwrap(),
        &[-0.577_215_664_901_532_9],
        1e-14,
    );
    assert_close(
        "polygamma",
        &sp::polygamma(&a64(&[1.0]), &a64(&[1.0])).unwrap(),
        &[pi * pi / 6.0],
        1e-14,
    );
    assert_close(
        "zeta",
        &sp::zeta(&a64(&[2.0]), &a64(&[1.0])).unwrap(),
        &[pi * pi / 6.0],
        1e-14,
    );
    let (a, v) = (a64(&[0.5, 3.0]), a64(&[0.7, 2.0]));
    let p: Vec<f64> = sp::gammainc(&a, &v).unwrap().to_vec();
    let q: Vec<f64> = sp::gammaincc(&a, &v).unwrap().to_vec();
    for (p, q) in p.iter().zip(&q) {
        assert!((p + q - 1.0).abs() < 1e-14);
    }
    assert_close(
        "betainc",
        &sp::betainc(&a64(&[2.0]), &a64(&[1.0]), &a64(&[0.3])).unwrap(),
        &[0.09],
        1e-14,
    );
    // betaln on both of JAX's branches (max(a, b) below and above 8).
    let bl = sp::betaln(&a64(&[2.0, 3.0, 2.5]), &a64(&[3.0, 12.0, 30.0])).unwrap();
    let want = |a: f64, b: f64| {
        let lg = |x: f64| sp::gammaln(&a64(&[x])).unwrap().to_vec::<f64>()[0];
        lg(a) + lg(b) - lg(a + b)
    };
    // JAX's large-argument series is accurate to about 1e-7 (enough for f32).
    assert_close(
        "betaln",
        &bl,
        &[(1.0f64 / 12.0).ln(), want(3.0, 12.0), want(2.5, 30.0)],
        1e-7,
    );
    assert_close(
        "i0",
        &sp::i0(&a64(&[1.0, -1.0])).unwrap(),
        &[1.266_065_877_752_008_4; 2],
        1e-14,
    );
    assert_close(
        "i1",
        &sp::i1(&a64(&[1.0])).unwrap(),
        &[0.565_159_103_992_485_1],
        1e-14,
    );
    assert_close(
        "xlogy",
        &sp::xlogy(&a64(&[0.0, 2.0]), &a64(&[0.0, 3.0])).unwrap(),
        &[0.0, 2.0 * 3f64.ln()],
        1e-15,
    );
    assert_close(
        "xlog1py",
        &sp::xlog1py(&a64(&[0.0, 2.0]), &a64(&[-1.0, 3.0])).unwrap(),
        &[0.0, 2.0 * 4f64.ln()],
        1e-15,
    );
    assert_close(
        "entr",
        &sp::entr(&a64(&[0.5, 0.0])).unwrap(),
        &[0.5 * 2f64.ln(), 0.0],
        1e-15,
    );
    assert!(sp::entr(&a64(&[-1.0])).unwrap().to_vec::<f64>()[0] == f64::NEG_INFINITY);
    let y = a64(&[-1.3, 0.2, 2.0]);
    assert_close(
        "logit(expit)",
        &sp::logit(&sp::expit(&y).unwrap()).unwrap(),
        &[-1.3, 0.2, 2.0],
        1e-12,
    );
    assert_close(
        "erfinv(erf)",
        &sp::erfinv(&sp::erf(&y).unwrap()).unwrap(),
        &[-1.3, 0.2, 2.0],
        1e-12,
    );
    let m = sp::multigammaln(&a64(&[3.0]), 2).unwrap();
    let lg = |x: f64| sp::gammaln(&a64(&[x])).unwrap().to_vec::<f64>()[0];
    assert_close(
        "multigammaln",
        &m,
        &[0.5 * pi.ln() + lg(3.0) + lg(2.5)],
        1e-13,
    );
    assert!(sp::multigammaln(&a64(&[3.0]), 0).is_err());
}

#[test]
fn jit_matches_eager() {
    let f = |x: Array| -> Array {
        let s = sp::gammaln(&x).unwrap() + sp::i1e(&x).unwrap() + sp::xlogy(&x, &x).unwrap();
        s + sp::betaln(&x, &(x.clone() * 9.0)).unwrap()
    };
    let x = a64(&[0.3, 1.7, 4.0]);
    let eager: Vec<f64> = f(x.clone()).to_vec();
    let jitted: Vec<f64> = jit(f).call(x).unwrap().to_vec();
    for (e, j) in eager.iter().zip(&jitted) {
        assert!((e - j).abs() <= 1e-12 * e.abs().max(1.0), "{e} vs {j}");
    }
}

#[test]
fn derivatives_as_jax_defines_them() {
    // d/dx xlogy(x, y) = log(y), also at x == 0.
    let y = a64(&[0.5, 2.0]);
    let yc = y.clone();
    let g = grad(move |x: Array| sp::xlogy(&x, &yc).unwrap().sum(All))(a64(&[0.0, 0.0])).unwrap();
    assert_close("xlogy'", &g, &[0.5f64.ln(), 2f64.ln()], 1e-15);
    let yc = y.clone();
    let g = grad(move |x: Array| sp::xlog1py(&x, &yc).unwrap().sum(All))(a64(&[0.0, 0.0])).unwrap();
    assert_close("xlog1py'", &g, &[1.5f64.ln(), 3f64.ln()], 1e-15);
    let g = grad(|x: Array| sp::gammaln(&x).unwrap().sum(All))(a64(&[1.0])).unwrap();
    assert_close("gammaln'", &g, &[-0.577_215_664_901_532_9], 1e-14);
    // entr' = -(log x + 1).
    let g = grad(|x: Array| sp::entr(&x).unwrap().sum(All))(a64(&[2.0])).unwrap();
    assert_close("entr'", &g, &[-(2f64.ln() + 1.0)], 1e-14);
    // betainc has no derivative wrt a and b (as in JAX).
    let r =
        grad(|a: Array| jaxon::ok_or_raise(sp::betainc(&a, &a64(&[2.0]), &a64(&[0.5]))).sum(All))(
            a64(&[1.5]),
        );
    assert!(r.is_err());
}
