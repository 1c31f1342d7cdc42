//! `grad` options (`argnums`, `has_aux`), `jacfwd`/`jacrev`/`hessian` over
//! pytrees against finite differences and closed forms, and the pytree
//! `linear_transpose`, all in f64 on random inputs.

use jaxon_trace::numpy::All;
use jaxon_trace::{catch, jit, Array};
use jaxon_transforms::{
    grad_and_aux, grad_with, hessian, jacfwd, jacrev, linear_transpose_tree, value_and_grad_with,
    Argnums,
};

fn rand(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_vec(v.to_vec(), shape)
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "[{i}] {x} vs {y}");
    }
}

type Three = (Array, Array, Array);

fn loss3((x, y, z): Three) -> Array {
    (&x * y.sin()).sum(All) + (z.square() * &x).sum(All)
}

#[test]
fn grad_argnums_selects_arguments() {
    let (xs, ys, zs) = (
        rand(3, 1, -1.0, 1.0),
        rand(3, 2, -1.0, 1.0),
        rand(3, 3, -1.0, 1.0),
    );
    let args = || (arr(&xs, &[3]), arr(&ys, &[3]), arr(&zs, &[3]));
    let gx: Vec<f64> = (0..3).map(|i| ys[i].sin() + zs[i] * zs[i]).collect();
    let gy: Vec<f64> = (0..3).map(|i| xs[i] * ys[i].cos()).collect();
    let gz: Vec<f64> = (0..3).map(|i| 2.0 * zs[i] * xs[i]).collect();
    let (a, c): (Array, Array) = grad_with(loss3, [0, 2])(args()).unwrap();
    close(&a.to_vec::<f64>(), &gx, 1e-12);
    close(&c.to_vec::<f64>(), &gz, 1e-12);
    let b: Array = grad_with(loss3, 1)(args()).unwrap();
    close(&b.to_vec::<f64>(), &gy, 1e-12);
    let (a, b, c): Three = grad_with(loss3, Argnums::All)(args()).unwrap();
    close(&a.to_vec::<f64>(), &gx, 1e-12);
    close(&b.to_vec::<f64>(), &gy, 1e-12);
    close(&c.to_vec::<f64>(), &gz, 1e-12);
    let (v, (c, a)): (Array, (Array, Array)) = value_and_grad_with(loss3, [2, 0])(args()).unwrap();
    let want_v: f64 = (0..3)
        .map(|i| xs[i] * ys[i].sin() + zs[i] * zs[i] * xs[i])
        .sum();
    close(&[v.item::<f64>()], &[want_v], 1e-12);
    close(&a.to_vec::<f64>(), &gx, 1e-12);
    close(&c.to_vec::<f64>(), &gz, 1e-12);
    // Out-of-range argnums and a wrong result structure are errors.
    assert!(grad_with::<Three, Array, _>(loss3, 3)(args()).is_err());
    assert!(grad_with::<Three, (Array, Array), _>(loss3, 1)(args()).is_err());
    // Under jit.
    let j = jit(|a: Three| grad_with::<Three, Array, _>(loss3, 2)(a).unwrap());
    close(&j.call(args()).unwrap().to_vec::<f64>(), &gz, 1e-12);
}

#[test]
fn grad_has_aux_returns_the_aux_alongside() {
    let xs = rand(4, 5, 0.2, 1.5);
    let f = |(x, w): (Array, Array)| {
        let h = (&x * &w).tanh();
        let loss = h.square().sum(All);
        (loss, (h.clone(), x.sum(All)))
    };
    let ws = rand(4, 6, -1.0, 1.0);
    let (g, (h, s)): (Array, (Array, Array)) =
        grad_and_aux(f, 0)((arr(&xs, &[4]), arr(&ws, &[4]))).unwrap();
    let hv: Vec<f64> = (0..4).map(|i| (xs[i] * ws[i]).tanh()).collect();
    let gv: Vec<f64> = (0..4)
        .map(|i| 2.0 * hv[i] * (1.0 - hv[i] * hv[i]) * ws[i])
        .collect();
    close(&g.to_vec::<f64>(), &gv, 1e-12);
    close(&h.to_vec::<f64>(), &hv, 1e-12);
    close(&[s.item::<f64>()], &[xs.iter().sum()], 1e-12);
    let ((v, _aux), gw): ((Array, (Array, Array)), Array) =
        value_and_grad_with(f, 1)((arr(&xs, &[4]), arr(&ws, &[4]))).unwrap();
    close(&[v.item::<f64>()], &[hv.iter().map(|h| h * h).sum()], 1e-12);
    let gwv: Vec<f64> = (0..4)
        .map(|i| 2.0 * hv[i] * (1.0 - hv[i] * hv[i]) * xs[i])
        .collect();
    close(&gw.to_vec::<f64>(), &gwv, 1e-12);
}

/// A pytree function `(x: [3], y: [2]) -> (u: [2], v: [2, 2])`.
fn two_by_two((x, y): (Array, Array)) -> (Array, Array) {
    let m = arr(&[0.3, -1.2, 0.7, 2.0, 0.1, -0.4], &[2, 3]);
    let u = m.matmul(x.sin()) * &y;
    let v = y.reshape(&[2, 1]) * y.exp().reshape(&[1, 2]) + x.sum(All);
    (u, v)
}

#[test]
#[allow(clippy::needless_range_loop)]
fn jacfwd_and_jacrev_agree_with_finite_differences_over_pytrees() {
    let xs = rand(3, 9, -1.0, 1.0);
    let ys = rand(2, 10, -1.0, 1.0);
    let x = (arr(&xs, &[3]), arr(&ys, &[2]));
    let jf = jacfwd(two_by_two)(x.clone()).unwrap();
    let jr = jacrev(two_by_two)(x.clone()).unwrap();
    let in_shapes: [&[usize]; 2] = [&[3], &[2]];
    let out_shapes: [&[usize]; 2] = [&[2], &[2, 2]];
    let eps = 1e-6;
    for j in 0..2 {
        let base = if j == 0 { &xs } else { &ys };
        for k in 0..base.len() {
            let eval = |d: f64| {
                let mut v = base.clone();
                v[k] += d;
                let inp = if j == 0 {
                    (arr(&v, &[3]), arr(&ys, &[2]))
                } else {
                    (arr(&xs, &[3]), arr(&v, &[2]))
                };
                let (u, w) = catch(|| two_by_two(inp)).unwrap();
                [u.to_vec::<f64>(), w.to_vec::<f64>()]
            };
            let (p, m) = (eval(eps), eval(-eps));
            for i in 0..2 {
                let fwd = jf.block(i, j).unwrap();
                let rev = jr.block(i, j).unwrap();
                let mut want_shape = out_shapes[i].to_vec();
                want_shape.extend_from_slice(in_shapes[j]);
                assert_eq!(fwd.shape(), want_shape);
                assert_eq!(rev.shape(), want_shape);
                let (fv, rv) = (fwd.to_vec::<f64>(), rev.to_vec::<f64>());
                let nin = base.len();
                for o in 0..p[i].len() {
                    let fd = (p[i][o] - m[i][o]) / (2.0 * eps);
                    let idx = o * nin + k;
                    assert!((fv[idx] - fd).abs() < 1e-6, "fwd ({i},{j})[{o},{k}]");
                    assert!((rv[idx] - fv[idx]).abs() < 1e-12, "rev ({i},{j})[{o},{k}]");
                }
            }
        }
    }
}

#[test]
fn hessian_of_quadratic_plus_sin_matches_closed_form() {
    let n = 4;
    let a = rand(n * n, 13, -1.0, 1.0);
    let xs = rand(n, 14, -2.0, 2.0);
    let am = arr(&a, &[n, n]);
    let f = move |x: Array| {
        let ax = am.matmul(&x);
        (&x * ax).sum(All) * 0.5 + x.sin().sum(All)
    };
    let h = hessian(f)(arr(&xs, &[n])).unwrap().single().unwrap();
    assert_eq!(h.shape(), vec![n, n]);
    let hv = h.to_vec::<f64>();
    for i in 0..n {
        for j in 0..n {
            let mut want = 0.5 * (a[i * n + j] + a[j * n + i]);
            if i == j {
                want -= xs[i].sin();
            }
            assert!((hv[i * n + j] - want).abs() < 1e-12, "H[{i},{j}]");
        }
    }
    // Over a pytree: f(x, s) = s² · sum(x³) has blocks 6 s² diag(x),
    // 6 s x², 6 s x², 2 sum(x³).
    let g = |(x, s): (Array, Array)| x.powi(3).sum(All) * s.square();
    let hs = hessian(g)((arr(&xs, &[n]), Array::scalar(0.7f64))).unwrap();
    let s = 0.7;
    let b00 = hs.block(0, 0).unwrap().to_vec::<f64>();
    let b01 = hs.block(0, 1).unwrap().to_vec::<f64>();
    let b10 = hs.block(1, 0).unwrap().to_vec::<f64>();
    let b11 = hs.block(1, 1).unwrap().item::<f64>();
    for i in 0..n {
        for j in 0..n {
            let want = if i == j { 6.0 * s * s * xs[i] } else { 0.0 };
            assert!((b00[i * n + j] - want).abs() < 1e-12);
        }
        assert!((b01[i] - 6.0 * s * xs[i] * xs[i]).abs() < 1e-12);
        assert!((b10[i] - 6.0 * s * xs[i] * xs[i]).abs() < 1e-12);
    }
    let want11: f64 = 2.0 * xs.iter().map(|x| x.powi(3)).sum::<f64>();
    assert!((b11 - want11).abs() < 1e-12);
}

#[test]
fn linear_transpose_over_pytrees_is_the_adjoint() {
    let m = arr(&rand(6, 17, -1.0, 1.0), &[2, 3]);
    let mm = m.clone();
    let f = move |(x, y): (Array, Array)| (mm.matmul(&x) + &y * 2.0, x.sum(All));
    let xs = rand(3, 18, -1.0, 1.0);
    let ys = rand(2, 19, -1.0, 1.0);
    let t = linear_transpose_tree(f.clone(), (arr(&xs, &[3]), arr(&ys, &[2]))).unwrap();
    let cu = rand(2, 20, -1.0, 1.0);
    let cs = 0.37;
    let (tx, ty): (Array, Array) = t((arr(&cu, &[2]), Array::scalar(cs))).unwrap();
    // <ct, f(x)> == <f^T ct, x>
    let (u, s) = catch(|| f((arr(&xs, &[3]), arr(&ys, &[2])))).unwrap();
    let lhs: f64 = u
        .to_vec::<f64>()
        .iter()
        .zip(&cu)
        .map(|(a, b)| a * b)
        .sum::<f64>()
        + s.item::<f64>() * cs;
    let rhs: f64 = tx
        .to_vec::<f64>()
        .iter()
        .zip(&xs)
        .map(|(a, b)| a * b)
        .sum::<f64>()
        + ty.to_vec::<f64>()
            .iter()
            .zip(&ys)
            .map(|(a, b)| a * b)
            .sum::<f64>();
    assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
    close(
        &ty.to_vec::<f64>(),
        &cu.iter().map(|c| 2.0 * c).collect::<Vec<_>>(),
        1e-12,
    );
}
