//! `schur` through the user API and the transforms: `vmap` (batch axis
//! first or last, eager and under `jit`) equals the loop of unbatched calls
//! on seeded random matrices; `scipy::linalg::schur` stages as JAX 0.10.2
//! prints it and its factors reconstruct the input; differentiating it is a
//! clear error, as in JAX.

use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::lax::{self, linalg as la};
use jaxon_trace::scipy::linalg as sl;
use jaxon_trace::{catch, jit, make_jaxpr, numpy as jnp, Array};
use jaxon_transforms::{grad, vmap, Axes};

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

fn f(x: Array) -> Vec<Array> {
    ok(la::schur(&x, true, false))
}

#[test]
fn vmap_equals_a_loop() {
    let (b, n) = (4, 5);
    let xs = Array::from_vec(rand(b * n * n, 3), &[b, n, n]);
    let per: Vec<Vec<Array>> = (0..b)
        .map(|i| {
            let row = lax::slice(&xs, &[i, 0, 0], &[i + 1, n, n], None).unwrap();
            catch(|| f(lax::squeeze(&row, &[0]).unwrap())).unwrap()
        })
        .collect();
    let eager = vmap(f).call(xs.clone()).unwrap();
    let jitted = jit(|x: Array| ok(vmap(f).call(x)))
        .call(xs.clone())
        .unwrap();
    let last = vmap(f)
        .in_axes(Axes::Leaves(vec![Some(2)]))
        .call(xs.transpose(&[1, 2, 0]))
        .unwrap();
    for j in 0..2 {
        let col: Vec<Array> = per.iter().map(|o| o[j].clone()).collect();
        let want = jnp::stack(&col, 0).unwrap().to_vec::<f64>();
        for (label, g) in [("vmap", &eager), ("jit(vmap)", &jitted), ("axis 2", &last)] {
            assert_eq!(g[j].shape(), vec![b, n, n], "{label}");
            let got = g[j].to_vec::<f64>();
            for (a, w) in got.iter().zip(&want) {
                assert!((a - w).abs() <= 1e-12, "{label} output {j}: {a} vs {w}");
            }
        }
    }
}

#[test]
fn scipy_schur_stages_as_jax_and_reconstructs() {
    let a = Array::from_vec(
        rand(9, 11)
            .into_iter()
            .map(|v| v as f32)
            .collect::<Vec<f32>>(),
        &[3, 3],
    );
    let j = make_jaxpr(|a: Array| {
        let (t, z) = ok(sl::schur(&a, "real"));
        vec![t, z]
    })(a.clone())
    .unwrap();
    assert_eq!(
        j.to_string(),
        "{ lambda ; a:f32[3,3]. let
    b:f32[3,3] c:f32[3,3] = jit[
      name=_schur
      jaxpr={ lambda ; a:f32[3,3]. let
          b:f32[3,3] c:f32[3,3] = schur[
            compute_schur_vectors=True
            select_callable=None
            sort_eig_vals=False
          ] a
        in (b, c) }
    ] a
  in (b, c) }"
    );
    for (t, z) in [
        sl::schur(&a, "real").unwrap(),
        jit(|a: Array| {
            let (t, z) = ok(sl::schur(&a, "real"));
            vec![t, z]
        })
        .call(a.clone())
        .map(|v| (v[0].clone(), v[1].clone()))
        .unwrap(),
    ] {
        assert_eq!(t.dtype(), DType::F32);
        let rec = jnp::matmul(&jnp::matmul(&z, &t).unwrap(), &z.transpose(&[1, 0])).unwrap();
        for (r, x) in rec.to_vec::<f32>().iter().zip(a.to_vec::<f32>()) {
            assert!((r - x).abs() <= 1e-5, "{r} vs {x}");
        }
        assert_eq!(t.to_vec::<f32>()[6], 0.0, "t[2,0]");
    }
    let e = sl::schur(&a, "complex").unwrap_err().to_string();
    assert!(e.contains("complex"), "{e}");
}

#[test]
fn grad_of_schur_is_an_error() {
    let a = Array::from_vec(rand(9, 5), &[3, 3]);
    let e = grad(|x: Array| {
        let t = ok(la::schur(&x, false, false)).remove(0);
        ok(lax::reduce(jaxon_ir::primitive::ReduceOp::Sum, &t, &[0, 1]))
    })(a)
    .unwrap_err()
    .to_string();
    assert!(e.contains("schur") && e.contains("jvp"), "{e}");
}
