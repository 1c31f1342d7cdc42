//! Differentiation through nested control flow (a `cond`, a `jit` and an
//! inner `scan` inside a `scan` body), and the jaxpr-level forms
//! `partial_eval_jaxpr`, `linearize_jaxpr` and `dce_jaxpr`, checked by
//! evaluating their pieces against the original jaxpr.

use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::numpy::All;
use jaxon_trace::{catch, control, jit, make_jaxpr, Array};
use jaxon_transforms::partial_eval::{dce_jaxpr, linearize_jaxpr, partial_eval_jaxpr};
use jaxon_transforms::{grad, jvp, vjp};

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

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn helper(x: Array) -> Array {
    x.sin() * 0.7 + x.clone() * x
}

/// A scan whose body holds a cond, a jit call and an inner scan.
fn nested(x: Array) -> Array {
    let c = x.clone().sum(All) * 0.1;
    let xs = x.reshape(&[3, 2]);
    let inner = jit(helper);
    let (h, ys) = control::scan(
        |h: Array, xt: Array| {
            let a = control::cond(
                &xt.clone().sum(All).gt(0.0),
                |(h, xt): (Array, Array)| h.cos() * xt,
                |(h, xt): (Array, Array)| (h + xt).exp(),
                (h.clone(), xt.clone()),
            )
            .unwrap();
            let b = inner.call(a.clone() * c.clone()).unwrap();
            let (s, zs) = control::scan(
                |s: Array, z: Array| {
                    let s2 = (s * z.clone() + 0.3).tanh();
                    (s2.clone(), s2 * z)
                },
                b.clone().sum(All),
                h.clone() + xt,
                None,
                true,
            )
            .unwrap();
            (b * s, zs)
        },
        Array::from_vec(vec![0.2f64, -0.4], &[2]),
        xs,
        None,
        false,
    )
    .unwrap();
    (h.sum(All) + ys.sin().sum(All)).reshape(&[1])
}

#[test]
fn nested_control_flow_grad_matches_fd_and_vjp_matches_jvp() {
    let x = rand(6, 101, -1.0, 1.0);
    let f = |x: Array| nested(x).sum(All);
    let g = grad(f)(arr(&x, &[6])).unwrap().to_vec::<f64>();
    let eps = 1e-6;
    for i in 0..6 {
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[i] += eps;
        xm[i] -= eps;
        let fp = catch(|| f(arr(&xp, &[6]))).unwrap().item::<f64>();
        let fm = catch(|| f(arr(&xm, &[6]))).unwrap().item::<f64>();
        let fd = (fp - fm) / (2.0 * eps);
        assert!(close(g[i], fd, 1e-6), "component {i}: {} vs fd {fd}", g[i]);
    }
    let t = rand(6, 102, -1.0, 1.0);
    let (_, ty) = jvp(nested, arr(&x, &[6]), arr(&t, &[6])).unwrap();
    let (_, pull) = vjp(nested, arr(&x, &[6])).unwrap();
    let ct = 0.75;
    let jt = pull.call(arr(&[ct], &[1])).unwrap().to_vec::<f64>();
    let lhs = ct * ty.to_vec::<f64>()[0];
    let rhs: f64 = jt.iter().zip(&t).map(|(a, b)| a * b).sum();
    assert!(close(lhs, rhs, 1e-10), "{lhs} vs {rhs}");
    // Under jit, and grad of grad.
    let jg = jit(|x: Array| grad(f)(x).unwrap())
        .call(arr(&x, &[6]))
        .unwrap()
        .to_vec::<f64>();
    for (a, b) in jg.iter().zip(&g) {
        assert!(close(*a, *b, 1e-12), "{a} vs {b}");
    }
    let gg = grad(|x: Array| grad(f)(x).unwrap().square().sum(All))(arr(&x, &[6]))
        .unwrap()
        .to_vec::<f64>();
    let h = |x: Array| grad(f)(x).unwrap().square().sum(All);
    for i in [0usize, 3, 5] {
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[i] += eps;
        xm[i] -= eps;
        let fd = (h(arr(&xp, &[6])).item::<f64>() - h(arr(&xm, &[6])).item::<f64>()) / (2.0 * eps);
        assert!(
            close(gg[i], fd, 1e-5),
            "component {i}: {} vs fd {fd}",
            gg[i]
        );
    }
}

fn poly(args: (Array, Array, Array)) -> (Array, Array) {
    let (a, b, c) = args;
    let k = (a.clone() * a.cos()).sum(All);
    let u = (b.clone() * k.clone()).exp() + c.clone();
    let dead = c.clone().sin();
    (k + dead.sum(All) * 0.0, u * b)
}

#[test]
fn partial_eval_jaxpr_halves_compose_to_the_original() {
    let a = arr(&rand(3, 111, -1.0, 1.0), &[3]);
    let b = arr(&rand(3, 112, -1.0, 1.0), &[3]);
    let c = arr(&rand(3, 113, -1.0, 1.0), &[3]);
    let closed = make_jaxpr(poly)((a.clone(), b.clone(), c.clone())).unwrap();
    let want = eval_closed_jaxpr(&closed, &[a.clone(), b.clone(), c.clone()]).unwrap();
    // `b` unknown: the first output (from `a`, `c`) is known.
    let pe = partial_eval_jaxpr(&closed, &[false, true, false], &[false, false]).unwrap();
    assert_eq!(pe.out_unknown, vec![false, true]);
    let known = eval_closed_jaxpr(&pe.known, &[a.clone(), c.clone()]).unwrap();
    assert_eq!(known.len(), 1 + pe.num_res);
    assert!(pe.num_res >= 1);
    let mut uargs = known[1..].to_vec();
    uargs.push(b.clone());
    let unknown = eval_closed_jaxpr(&pe.unknown, &uargs).unwrap();
    assert_eq!(known[0].to_vec::<f64>(), want[0].to_vec::<f64>());
    assert_eq!(unknown[0].to_vec::<f64>(), want[1].to_vec::<f64>());
    // The unknown half never recomputes the known reduction.
    let text = jaxon_ir::print::print_jaxpr(&pe.unknown.jaxpr);
    assert!(!text.contains("cos"), "{text}");
    // Instantiating the known output makes it unknown.
    let pe = partial_eval_jaxpr(&closed, &[false, true, false], &[true, false]).unwrap();
    assert_eq!(pe.out_unknown, vec![true, true]);
    let known = eval_closed_jaxpr(&pe.known, &[a.clone(), c.clone()]).unwrap();
    let mut uargs = known.clone();
    uargs.push(b.clone());
    let unknown = eval_closed_jaxpr(&pe.unknown, &uargs).unwrap();
    assert_eq!(unknown[0].to_vec::<f64>(), want[0].to_vec::<f64>());
}

#[test]
fn linearize_jaxpr_splits_primal_and_linear_work() {
    let x = rand(6, 121, -1.0, 1.0);
    let t = rand(6, 122, -1.0, 1.0);
    let closed = make_jaxpr(nested)(arr(&x, &[6])).unwrap();
    let lj = linearize_jaxpr(&closed, &[true], &[true]).unwrap();
    let known = eval_closed_jaxpr(&lj.known, &[arr(&x, &[6])]).unwrap();
    assert_eq!(known.len(), 1 + lj.num_res);
    let mut largs = known[1..].to_vec();
    largs.push(arr(&t, &[6]));
    let lin = eval_closed_jaxpr(&lj.linear, &largs).unwrap();
    let (y, ty) = jvp(nested, arr(&x, &[6]), arr(&t, &[6])).unwrap();
    assert!(close(
        known[0].to_vec::<f64>()[0],
        y.to_vec::<f64>()[0],
        1e-14
    ));
    assert!(close(
        lin[0].to_vec::<f64>()[0],
        ty.to_vec::<f64>()[0],
        1e-12
    ));
    // The linear half is linear: doubling the tangent doubles the output.
    let mut largs2 = known[1..].to_vec();
    largs2.push(arr(&t.iter().map(|v| 2.0 * v).collect::<Vec<_>>(), &[6]));
    let lin2 = eval_closed_jaxpr(&lj.linear, &largs2).unwrap();
    assert!(close(
        lin2[0].to_vec::<f64>()[0],
        2.0 * lin[0].to_vec::<f64>()[0],
        1e-12
    ));
}

#[test]
fn dce_jaxpr_drops_unused_outputs_equations_and_inputs() {
    let a = arr(&rand(3, 131, -1.0, 1.0), &[3]);
    let b = arr(&rand(3, 132, -1.0, 1.0), &[3]);
    let c = arr(&rand(3, 133, -1.0, 1.0), &[3]);
    let closed = make_jaxpr(poly)((a.clone(), b.clone(), c.clone())).unwrap();
    let want = eval_closed_jaxpr(&closed, &[a.clone(), b.clone(), c.clone()]).unwrap();
    let (first, used) = dce_jaxpr(&closed, &[true, false]).unwrap();
    // `k` reads `a` (and `c` through the zero-weighted term); `b` is unused.
    assert_eq!(used, vec![true, false, true]);
    let out = eval_closed_jaxpr(&first, &[a.clone(), c.clone()]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].to_vec::<f64>(), want[0].to_vec::<f64>());
    assert!(first.jaxpr.eqns.len() < closed.jaxpr.eqns.len());
    let (second, used) = dce_jaxpr(&closed, &[false, true]).unwrap();
    assert_eq!(used, vec![true, true, true]);
    let out = eval_closed_jaxpr(&second, &[a, b, c]).unwrap();
    assert_eq!(out[0].to_vec::<f64>(), want[1].to_vec::<f64>());
    assert!(!jaxon_ir::print::print_jaxpr(&second.jaxpr).contains("sin"));
}

#[test]
fn tangent_only_jvp_jaxpr_matches_jvp() {
    use jaxon_transforms::{jvp_jaxpr_with, JvpOutputs};
    let x = rand(6, 141, -1.0, 1.0);
    let t = rand(6, 142, -1.0, 1.0);
    let closed = make_jaxpr(nested)(arr(&x, &[6])).unwrap();
    let (tj, nz) = jvp_jaxpr_with(&closed, &[true], &[], JvpOutputs::TangentsOnly).unwrap();
    assert_eq!(nz, vec![true]);
    assert_eq!(tj.jaxpr.outvars.len(), 1);
    let out = eval_closed_jaxpr(&tj, &[arr(&x, &[6]), arr(&t, &[6])]).unwrap();
    let (_, ty) = jvp(nested, arr(&x, &[6]), arr(&t, &[6])).unwrap();
    assert!(close(
        out[0].to_vec::<f64>()[0],
        ty.to_vec::<f64>()[0],
        1e-12
    ));
}

#[test]
fn map_like_scan_and_const_only_tangents() {
    // No carry at all: the transposed scan carries only the cotangent of
    // the closed-over `w`.
    let f = |p: Array| {
        let w = jaxon_trace::lax::slice(&p, &[0], &[2], None).unwrap();
        let xs = jaxon_trace::lax::slice(&p, &[2], &[10], None)
            .unwrap()
            .reshape(&[4, 2]);
        let ((), ys) = control::scan(
            |(), x: Array| ((), (x * w.clone()).sin() + w.clone().exp()),
            (),
            xs,
            None,
            true,
        )
        .unwrap();
        ys.square().sum(All)
    };
    let p = rand(10, 151, -1.0, 1.0);
    let g = grad(f)(arr(&p, &[10])).unwrap().to_vec::<f64>();
    let eps = 1e-6;
    for i in 0..10 {
        let (mut a, mut b) = (p.clone(), p.clone());
        a[i] += eps;
        b[i] -= eps;
        let fd = (f(arr(&a, &[10])).item::<f64>() - f(arr(&b, &[10])).item::<f64>()) / (2.0 * eps);
        assert!(close(g[i], fd, 1e-6), "component {i}: {} vs fd {fd}", g[i]);
    }
    // value_and_grad under jit gives the eager value and gradient.
    let (v, gj) = jit(|p: Array| jaxon_transforms::value_and_grad(f)(p).unwrap())
        .call(arr(&p, &[10]))
        .unwrap();
    assert!(close(
        v.item::<f64>(),
        f(arr(&p, &[10])).item::<f64>(),
        1e-14
    ));
    for (a, b) in gj.to_vec::<f64>().iter().zip(&g) {
        assert!(close(*a, *b, 1e-13), "{a} vs {b}");
    }
}

#[test]
fn perturbation_confusion_through_scan_and_cond() {
    // g(x) = x · d/dy Σ_{3 steps} (x·y) = 3x², so g'(x) = 6x; the inner
    // derivative closes over the outer tracer `x` through the scan's consts.
    let inner = |x: Array| {
        grad(move |y: Array| {
            let (c, ()) = control::scan(
                |c: Array, (): ()| (c + x.clone() * y.clone(), ()),
                Array::scalar(0.0f64),
                (),
                Some(3),
                false,
            )
            .unwrap();
            c
        })(Array::scalar(0.0f64))
        .unwrap()
    };
    let g = move |x: Array| x.clone() * inner(x);
    for x0 in [1.0f64, -0.7, 2.3] {
        let d = grad(g)(Array::scalar(x0)).unwrap().item::<f64>();
        assert!(close(d, 6.0 * x0, 1e-14), "{d} vs {}", 6.0 * x0);
        let (_, t) = jvp(g, Array::scalar(x0), Array::scalar(1.0f64)).unwrap();
        assert!(close(t.item::<f64>(), 6.0 * x0, 1e-14));
    }
    // Siskind–Pearlmutter through cond: d/dx (x · d/dy cond(y > -1, x·y)) at
    // x = 1 is 2.
    let h = |x: Array| {
        let xi = x.clone();
        let dy = grad(move |y: Array| {
            control::cond(
                &y.gt(-1.0),
                |(x, y): (Array, Array)| x * y,
                |(_x, y): (Array, Array)| y,
                (xi.clone(), y.clone()),
            )
            .unwrap()
        })(Array::scalar(0.5f64))
        .unwrap();
        x * dy
    };
    let d = grad(h)(Array::scalar(1.0f64)).unwrap().item::<f64>();
    assert!(close(d, 2.0, 1e-14), "{d}");
}
