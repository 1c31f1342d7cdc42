//! Forward and reverse mode against central differences in f64, and
//! transposition against jvp (`<ct, J t> == <Jᵀ ct, t>`), on random inputs.

use jaxon_ir::DType;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{catch, control, jit, lax, make_jaxpr, Array};
use jaxon_transforms::{grad, jvp, linearize, value_and_grad, vjp};

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

/// Checks grad(f) at x against central differences of f in f64.
fn check_grad(f: impl Fn(Array) -> Array + Clone, x: &[f64], shape: &[usize], tol: f64) {
    let g = grad(f.clone())(arr(x, shape)).unwrap().to_vec::<f64>();
    let eps = 1e-6;
    for i in 0..x.len() {
        let mut xp = x.to_vec();
        let mut xm = x.to_vec();
        xp[i] += eps;
        xm[i] -= eps;
        let fp = catch(|| f(arr(&xp, shape))).unwrap().item::<f64>();
        let fm = catch(|| f(arr(&xm, shape))).unwrap().item::<f64>();
        let fd = (fp - fm) / (2.0 * eps);
        assert!(
            (g[i] - fd).abs() <= tol * (1.0 + fd.abs()),
            "component {i}: grad {} vs fd {fd}",
            g[i]
        );
    }
}

#[test]
fn grad_of_elementwise_chains_matches_finite_differences() {
    let x = rand(6, 1, 0.2, 0.9);
    let fs: Vec<fn(Array) -> Array> = vec![
        |x| (x.sin() * x.exp() + x.log()).sum(All),
        |x| (x.tanh() / (x.clone() + 2.0)).sum(All),
        |x| (x.sqrt() * x.cos() - x.powi(3) * 0.5).sum(All),
        |x| lax::logistic(&x).unwrap().sum(All) + lax::erf(&x).unwrap().sum(All),
        |x| (x.arctan() + x.arcsin() * 0.3 + x.cosh()).sum(All),
        |x| x.pow(x.clone()).sum(All) + (x.clone() * 2.0).pow(1.7).sum(All),
        |x| x.maximum(0.7).sum(All) + x.minimum(x.sin()).sum(All),
        |x| jnp::arctan2(&x, &(x.clone() * 0.5 + 1.0)).unwrap().sum(All),
        |x| x.abs().rsqrt().sum(All) + x.log1p().sum(All) + x.expm1().sum(All),
    ];
    for f in fs {
        check_grad(f, &x, &[2, 3], 1e-6);
    }
}

#[test]
fn grad_through_reductions_broadcasts_and_matmul() {
    let x = rand(12, 2, -1.0, 1.0);
    let w = arr(&rand(20, 3, -1.0, 1.0), &[4, 5]);
    let f = move |x: Array| {
        let h = x.matmul(&w).tanh();
        let m = h.max(1);
        (h.sum(0) * 2.0).sum(All) + m.sum(All) + h.mean(All) * h.prod(All)
    };
    check_grad(f, &x, &[3, 4], 1e-5);
    let g = |x: Array| {
        let row = x.sum(1).reshape(&[3, 1]);
        ((&x - row).square() + x.sum(0).reshape(&[1, 4])).sum(All)
    };
    check_grad(g, &x, &[3, 4], 1e-6);
}

#[test]
fn grad_through_structural_ops() {
    let x = rand(12, 4, -1.0, 1.0);
    let f = |x: Array| {
        let a = lax::slice(&x, &[0, 1], &[3, 4], Some(&[2, 1])).unwrap();
        let b = lax::rev(&x, &[1]).unwrap();
        let c = jnp::concatenate(&[a.clone(), a.clone()], 0).unwrap();
        let p = lax::pad(&x, &Array::scalar(0.5f64), &[(1, -1, 1), (0, 2, 0)]).unwrap();
        let d =
            lax::dynamic_slice(&x, &[Array::scalar(1i32), Array::scalar(2i32)], &[2, 2]).unwrap();
        let e = lax::dynamic_update_slice(
            &x,
            &(d.clone() * 3.0),
            &[Array::scalar(0i32), Array::scalar(0i32)],
        )
        .unwrap();
        (b.sin() * &x).sum(All)
            + c.square().sum(All)
            + p.cos().sum(All)
            + e.exp().sum(All)
            + d.sum(All)
    };
    check_grad(f, &x, &[3, 4], 1e-6);
}

#[test]
fn grad_through_where_clamp_convert_and_cond() {
    let x = rand(5, 5, -1.0, 1.0);
    let f = |x: Array| {
        let y = jnp::where_(&x.gt(0.0), &x.sin(), &(x.clone() * x.clone())).unwrap();
        let z = lax::clamp(&Array::scalar(-0.5f64), &x, &Array::scalar(0.6f64)).unwrap();
        let s = x.sum(All);
        let c = control::cond(
            &s.gt(0.0),
            |x: Array| x.exp(),
            |x: Array| x.cos(),
            x.clone(),
        )
        .unwrap();
        (y + z * 2.0 + c).sum(All)
    };
    check_grad(f, &x, &[5], 1e-6);
    // A round trip through f32 has derivative exactly one.
    let g =
        grad(|x: Array| x.astype(DType::F32).astype(DType::F64).sum(All))(arr(&x, &[5])).unwrap();
    assert_eq!(g.to_vec::<f64>(), vec![1.0; 5]);
}

#[test]
fn jvp_matches_finite_differences_and_transposes_to_vjp() {
    let x = rand(6, 6, 0.1, 1.0);
    let t = rand(6, 7, -1.0, 1.0);
    let f = |x: Array| (x.sin() * x.clone()).cumsum_like().exp();
    let (y, ty) = jvp(f, arr(&x, &[6]), arr(&t, &[6])).unwrap();
    let eps = 1e-6;
    let xp: Vec<f64> = x.iter().zip(&t).map(|(a, b)| a + eps * b).collect();
    let xm: Vec<f64> = x.iter().zip(&t).map(|(a, b)| a - eps * b).collect();
    let fp = catch(|| f(arr(&xp, &[6]))).unwrap().to_vec::<f64>();
    let fm = catch(|| f(arr(&xm, &[6]))).unwrap().to_vec::<f64>();
    for (i, d) in ty.to_vec::<f64>().iter().enumerate() {
        let fd = (fp[i] - fm[i]) / (2.0 * eps);
        assert!((d - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{d} vs {fd}");
    }
    assert_eq!(y.to_vec::<f64>().len(), 6);
    // <ct, J t> == <J^T ct, t>
    let ct = rand(6, 8, -1.0, 1.0);
    let (_, pull) = vjp(f, arr(&x, &[6])).unwrap();
    let jt_ct = pull.call(arr(&ct, &[6])).unwrap().to_vec::<f64>();
    let lhs: f64 = ct.iter().zip(ty.to_vec::<f64>()).map(|(a, b)| a * b).sum();
    let rhs: f64 = jt_ct.iter().zip(&t).map(|(a, b)| a * b).sum();
    assert!(
        (lhs - rhs).abs() < 1e-9 * (1.0 + lhs.abs()),
        "{lhs} vs {rhs}"
    );
}

trait CumsumLike {
    fn cumsum_like(&self) -> Array;
}

impl CumsumLike for Array {
    fn cumsum_like(&self) -> Array {
        lax::cumulative(jaxon_ir::primitive::CumulativeOp::Cumsum, self, 0, false).unwrap()
    }
}

#[test]
fn second_order_grad_of_grad() {
    // d²/dx² of sum(sin(x) * x) = 2 cos(x) - x sin(x)
    let x = rand(4, 9, -1.0, 1.0);
    let g = |x: Array| grad(|x: Array| (x.sin() * x.clone()).sum(All))(x).unwrap();
    let h = grad(move |x: Array| g(x).sum(All))(arr(&x, &[4]))
        .unwrap()
        .to_vec::<f64>();
    for (hi, xi) in h.iter().zip(&x) {
        let want = 2.0 * xi.cos() - xi * xi.sin();
        assert!((hi - want).abs() < 1e-12, "{hi} vs {want}");
    }
}

#[test]
fn grad_under_jit_and_jit_under_grad_agree() {
    let x = arr(&rand(5, 10, -1.0, 1.0), &[5]);
    let f = |x: Array| (x.sin() * x.exp()).sum(All);
    let eager = grad(f)(x.clone()).unwrap().to_vec::<f64>();
    let jitted = jit(|x: Array| grad(f)(x).unwrap())
        .call(x.clone())
        .unwrap()
        .to_vec::<f64>();
    let inner_jit = jit(f);
    let through = grad(|x: Array| inner_jit.call(x).unwrap())(x.clone())
        .unwrap()
        .to_vec::<f64>();
    for ((a, b), c) in eager.iter().zip(&jitted).zip(&through) {
        assert!(
            (a - b).abs() < 1e-14 && (a - c).abs() < 1e-14,
            "{a} {b} {c}"
        );
    }
    let (v, g) = value_and_grad(f)(x.clone()).unwrap();
    assert_eq!(g.to_vec::<f64>(), eager);
    assert!((v.item::<f64>() - catch(|| f(x.clone())).unwrap().item::<f64>()).abs() < 1e-15);
    // The grad jaxpr stages.
    let j = make_jaxpr(|x: Array| grad(f)(x).unwrap())(x.clone()).unwrap();
    assert!(j.jaxpr.eqns.len() > 3);
    let (_, lin) = linearize(f, x).unwrap();
    assert!(!lin.staged.jaxpr.eqns.is_empty());
}
