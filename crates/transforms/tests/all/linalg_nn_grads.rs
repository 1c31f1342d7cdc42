//! Gradients of the `jnp.linalg`, `jax.scipy.linalg` and `jax.nn`
//! functions of issue 21 against central differences in f64, on random
//! inputs. Each loss is `sum(w * g(f(x)))` for fixed random weights `w`,
//! where `g` removes the sign freedom of a factorisation (squares of
//! eigenvector, singular-vector and QR entries) and matrices that must be
//! SPD or symmetric are built from `x` inside the function, so every
//! perturbation of `x` is a valid input.

use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{lax, nn, scipy, Array};
use jaxon_transforms::grad;

fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn f64s(x: &Array) -> Vec<f64> {
    x.to_vec::<f64>()
}

/// `sum(w * y)` for weights `w` fixed by `seed`, in `y`'s shape.
fn weighted(y: &Array, seed: u64) -> Array {
    let n: usize = y.shape().iter().product();
    let w = Array::from_vec(values(n, 1000 + seed, 1.0), &y.shape());
    ok_or_raise(jnp::sum(&ok_or_raise(jnp::multiply(y, &w)), All, false))
}

fn sq(y: &Array) -> Array {
    ok_or_raise(jnp::multiply(y, y))
}

fn t(a: &Array) -> Array {
    ok_or_raise(lax::transpose(a, &[1, 0]))
}

/// `x xᵀ + n I`: symmetric positive definite for any `x`.
fn spd(x: &Array) -> Array {
    let n = x.shape()[0];
    let g = ok_or_raise(jnp::matmul(x, &t(x)));
    let eye = ok_or_raise(jnp::eye(n, None, 0, jaxon_ir::DType::F64));
    ok_or_raise(jnp::add(
        &g,
        &ok_or_raise(jnp::multiply(&eye, &Array::weak(n as f64))),
    ))
}

/// `(x + xᵀ) / 2`.
fn sym(x: &Array) -> Array {
    ok_or_raise(jnp::multiply(
        &ok_or_raise(jnp::add(x, &t(x))),
        &Array::weak(0.5),
    ))
}

/// `x + 3 I`: well conditioned for entries in (-1, 1).
fn shifted(x: &Array) -> Array {
    let n = x.shape()[0];
    let eye = ok_or_raise(jnp::eye(n, None, 0, jaxon_ir::DType::F64));
    ok_or_raise(jnp::add(
        x,
        &ok_or_raise(jnp::multiply(&eye, &Array::weak(3.0))),
    ))
}

type Loss = Box<dyn Fn(&Array) -> Array>;

fn check(name: &str, shape: &[usize], seed: u64, f: &Loss) {
    let n: usize = shape.iter().product();
    let x0 = values(n, seed, 1.0);
    let g = grad(|x: Array| f(&x))(Array::from_vec(x0.clone(), shape))
        .unwrap_or_else(|e| panic!("{name}: grad failed: {e}"));
    let got = f64s(&g);
    let h = 1e-6;
    for i in 0..n {
        let at = |d: f64| {
            let mut v = x0.clone();
            v[i] += d;
            f64s(&f(&Array::from_vec(v, shape)))[0]
        };
        let want = (at(h) - at(-h)) / (2.0 * h);
        assert!(
            (got[i] - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{name}: d/dx[{i}] = {} by grad, {want} by central differences",
            got[i]
        );
    }
}

#[test]
fn linalg_gradients_match_central_differences() {
    use jnp::linalg as la;
    use scipy::linalg as sla;
    let b = Array::from_vec(values(8, 77, 1.0), &[4, 2]);
    let b2 = b.clone();
    let b3 = b.clone();
    let cases: Vec<(&str, Vec<usize>, Loss)> = vec![
        (
            "linalg.inv",
            vec![4, 4],
            Box::new(|x| weighted(&ok_or_raise(la::inv(&shifted(x))), 1)),
        ),
        (
            "linalg.det",
            vec![4, 4],
            Box::new(|x| ok_or_raise(la::det(&shifted(x)))),
        ),
        (
            "linalg.slogdet",
            vec![4, 4],
            Box::new(|x| ok_or_raise(la::slogdet(&spd(x))).1),
        ),
        (
            "linalg.solve",
            vec![4, 4],
            Box::new(move |x| weighted(&ok_or_raise(la::solve(&shifted(x), &b)), 2)),
        ),
        (
            "linalg.cholesky",
            vec![4, 3],
            Box::new(|x| weighted(&ok_or_raise(la::cholesky(&spd(x))), 3)),
        ),
        (
            "linalg.eigh",
            vec![4, 4],
            Box::new(|x| {
                let (w, v) = ok_or_raise(la::eigh(&sym(x)));
                ok_or_raise(jnp::add(&weighted(&w, 4), &weighted(&sq(&v), 5)))
            }),
        ),
        (
            "linalg.svdvals",
            vec![4, 3],
            Box::new(|x| weighted(&ok_or_raise(la::svdvals(x)), 6)),
        ),
        (
            "linalg.svd",
            vec![3, 3],
            Box::new(|x| {
                let (u, s, _vt) = ok_or_raise(la::svd(x, false));
                ok_or_raise(jnp::add(&weighted(&s, 7), &weighted(&sq(&u), 8)))
            }),
        ),
        (
            "linalg.qr",
            vec![4, 3],
            Box::new(|x| {
                let (q, r) = ok_or_raise(la::qr(x, "reduced"));
                ok_or_raise(jnp::add(&weighted(&sq(&q), 9), &weighted(&sq(&r), 10)))
            }),
        ),
        (
            "linalg.pinv",
            vec![4, 3],
            Box::new(|x| weighted(&ok_or_raise(la::pinv(x)), 11)),
        ),
        (
            "linalg.matrix_power",
            vec![3, 3],
            Box::new(|x| weighted(&ok_or_raise(la::matrix_power(x, 3)), 12)),
        ),
        (
            "linalg.norm (fro)",
            vec![3, 4],
            Box::new(|x| ok_or_raise(la::norm(x, Some("fro"), None, false))),
        ),
        (
            "linalg.lstsq",
            vec![4, 2],
            Box::new(move |x| weighted(&ok_or_raise(la::lstsq(x, &b2)), 13)),
        ),
        (
            "scipy.linalg.cho_solve",
            vec![4, 3],
            Box::new(move |x| {
                let c = ok_or_raise(sla::cho_factor(&spd(x)));
                weighted(&ok_or_raise(sla::cho_solve(&c, &b3)), 14)
            }),
        ),
        (
            "scipy.linalg.lu_factor (lu)",
            vec![4, 4],
            Box::new(|x| weighted(&ok_or_raise(sla::lu_factor(&shifted(x))).0, 15)),
        ),
        (
            "scipy.linalg.expm",
            vec![3, 3],
            Box::new(|x| weighted(&ok_or_raise(sla::expm(x)), 16)),
        ),
        (
            "scipy.linalg.toeplitz",
            vec![4],
            Box::new(|x| weighted(&sq(&ok_or_raise(sla::toeplitz(x, None))), 17)),
        ),
        (
            "scipy.linalg.hankel",
            vec![4],
            Box::new(|x| weighted(&sq(&ok_or_raise(sla::hankel(x, None))), 18)),
        ),
        (
            "scipy.linalg.circulant",
            vec![4],
            Box::new(|x| weighted(&sq(&ok_or_raise(sla::circulant(x))), 19)),
        ),
    ];
    for (i, (name, shape, f)) in cases.iter().enumerate() {
        check(name, shape, 50 + i as u64, f);
    }
}

#[test]
fn nn_gradients_match_central_differences() {
    let cases: Vec<(&str, Loss)> = vec![
        (
            "softplus",
            Box::new(|x| weighted(&ok_or_raise(nn::softplus(x)), 1)),
        ),
        (
            "log_sigmoid",
            Box::new(|x| weighted(&ok_or_raise(nn::log_sigmoid(x)), 2)),
        ),
        (
            "elu",
            Box::new(|x| weighted(&ok_or_raise(nn::elu(x, 0.7)), 3)),
        ),
        (
            "celu",
            Box::new(|x| weighted(&ok_or_raise(nn::celu(x, 1.3)), 4)),
        ),
        ("selu", Box::new(|x| weighted(&ok_or_raise(nn::selu(x)), 5))),
        ("mish", Box::new(|x| weighted(&ok_or_raise(nn::mish(x)), 6))),
        (
            "soft_sign",
            Box::new(|x| weighted(&ok_or_raise(nn::soft_sign(x)), 7)),
        ),
        (
            "swish",
            Box::new(|x| weighted(&ok_or_raise(nn::swish(x)), 8)),
        ),
        (
            "squareplus",
            Box::new(|x| weighted(&ok_or_raise(nn::squareplus(x, 4.0)), 9)),
        ),
        (
            "glu",
            Box::new(|x| weighted(&ok_or_raise(nn::glu(x, -1)), 10)),
        ),
        (
            "standardize",
            Box::new(|x| weighted(&ok_or_raise(nn::standardize(x, -1, 1e-5)), 11)),
        ),
        (
            "logmeanexp",
            Box::new(|x| weighted(&ok_or_raise(nn::logmeanexp(x, &[-1], false)), 12)),
        ),
        (
            "log1mexp",
            Box::new(|x| {
                // log1mexp needs x > 0: shift the inputs into (0.5, 2.5).
                let y = ok_or_raise(jnp::add(x, &Array::weak(1.5)));
                weighted(&ok_or_raise(nn::log1mexp(&y)), 13)
            }),
        ),
    ];
    for (i, (name, f)) in cases.iter().enumerate() {
        check(name, &[3, 4], 90 + i as u64, f);
    }
}
