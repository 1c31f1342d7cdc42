//! `schur` in the IR: JAX's texts print back byte for byte, and on seeded
//! random matrices (sizes 1 to 12, f64 and f32, with and without complex
//! eigenvalues) the interpreter's `(t, z)` satisfy `z` orthogonal,
//! `z t z^T = a`, `t` zero below its subdiagonal, and every nonzero
//! subdiagonal entry starts a 2x2 block with a complex-conjugate pair;
//! a batch equals the loop over its matrices.

use jaxon_ir::interp::ops::eval_op;
use jaxon_ir::primitive::SchurParams;
use jaxon_ir::{check_jaxpr, parse_jaxpr, DType, HostArray, Primitive};

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

fn schur(x: &HostArray, vectors: bool) -> Vec<HostArray> {
    let p: Primitive = SchurParams {
        compute_schur_vectors: vectors,
        sort_eig_vals: false,
    }
    .into();
    eval_op(&p, std::slice::from_ref(x)).unwrap()
}

/// Checks one `(a, t, z)` triple within `tol` (relative to |a|).
fn check(a: &[f64], t: &[f64], z: &[f64], n: usize, tol: f64, what: &str) {
    let scale = a.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    let at = |m: &[f64], i: usize, j: usize| m[i * n + j];
    for i in 0..n {
        for j in 0..n {
            let ztz: f64 = (0..n).map(|k| at(z, k, i) * at(z, k, j)).sum();
            let id = if i == j { 1.0 } else { 0.0 };
            assert!((ztz - id).abs() <= tol, "{what}: z^T z [{i},{j}] = {ztz}");
            let rec: f64 = (0..n)
                .flat_map(|k| (0..n).map(move |l| (k, l)))
                .map(|(k, l)| at(z, i, k) * at(t, k, l) * at(z, j, l))
                .sum();
            assert!(
                (rec - at(a, i, j)).abs() <= tol * scale,
                "{what}: (z t z^T)[{i},{j}] = {rec} vs {}",
                at(a, i, j)
            );
            if i > j + 1 {
                assert_eq!(at(t, i, j), 0.0, "{what}: t[{i},{j}]");
            }
        }
    }
    for i in 1..n {
        if at(t, i, i - 1) != 0.0 {
            // A 2x2 block at (i-1, i): its neighbours' subdiagonals are
            // zero and its eigenvalues are complex.
            assert!(
                i < 2 || at(t, i - 1, i - 2) == 0.0,
                "{what}: overlapping blocks at {i}"
            );
            assert!(
                i + 1 >= n || at(t, i + 1, i) == 0.0,
                "{what}: overlapping blocks at {i}"
            );
            let (p, q, r, s) = (
                at(t, i - 1, i - 1),
                at(t, i - 1, i),
                at(t, i, i - 1),
                at(t, i, i),
            );
            let h = (p - s) / 2.0;
            assert!(
                h * h + q * r < 0.0,
                "{what}: block at {i} has real eigenvalues"
            );
        }
    }
}

#[test]
fn random_matrices_factor_into_real_schur_form() {
    let mut blocks = 0;
    for (seed, n) in [1usize, 2, 2, 3, 4, 5, 6, 8, 9, 12].into_iter().enumerate() {
        for (dtype, tol) in [(DType::F64, 1e-11), (DType::F32, 2e-5)] {
            let a = rand(n * n, seed as u64 + 7);
            let x = HostArray::from_f64(dtype, &[n, n], &a).unwrap();
            let a = x.to_f64_vec();
            let out = schur(&x, true);
            assert_eq!(out.len(), 2);
            assert_eq!(out[0].dtype(), dtype);
            let (t, z) = (out[0].to_f64_vec(), out[1].to_f64_vec());
            check(&a, &t, &z, n, tol, &format!("{dtype} n={n}"));
            blocks += (1..n).filter(|&i| t[i * n + i - 1] != 0.0).count();
            // Without vectors: the same t.
            let only = schur(&x, false);
            assert_eq!(only.len(), 1);
            assert_eq!(only[0].to_f64_vec(), t);
        }
    }
    assert!(blocks > 0, "no complex pair exercised");
}

#[test]
fn special_matrices() {
    // A rotation (complex pair), a symmetric matrix (real eigenvalues, so
    // t is triangular), a triangular one, zeros, and a defective Jordan block.
    let cases: Vec<(usize, Vec<f64>)> = vec![
        (2, vec![0.0, -1.0, 1.0, 0.0]),
        (3, vec![2.0, 1.0, 0.5, 1.0, 3.0, -1.0, 0.5, -1.0, 1.0]),
        (3, vec![1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 0.0, 0.0, 6.0]),
        (3, vec![0.0; 9]),
        (3, vec![2.0, 1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 2.0]),
    ];
    for (k, (n, a)) in cases.into_iter().enumerate() {
        let x = HostArray::from_f64(DType::F64, &[n, n], &a).unwrap();
        let out = schur(&x, true);
        let (t, z) = (out[0].to_f64_vec(), out[1].to_f64_vec());
        check(&a, &t, &z, n, 1e-12, &format!("case {k}"));
        if k == 1 {
            assert!((1..n).all(|i| t[i * n + i - 1] == 0.0), "symmetric: {t:?}");
        }
    }
}

#[test]
fn a_batch_is_the_loop_over_its_matrices() {
    let (b, n) = (3, 5);
    let a = rand(b * n * n, 99);
    let x = HostArray::from_f64(DType::F64, &[b, n, n], &a).unwrap();
    let out = schur(&x, true);
    assert_eq!(out[0].shape(), &[b, n, n]);
    let (t, z) = (out[0].to_f64_vec(), out[1].to_f64_vec());
    for i in 0..b {
        let one = HostArray::from_f64(DType::F64, &[n, n], &a[i * n * n..(i + 1) * n * n]).unwrap();
        let o = schur(&one, true);
        assert_eq!(o[0].to_f64_vec(), t[i * n * n..(i + 1) * n * n]);
        assert_eq!(o[1].to_f64_vec(), z[i * n * n..(i + 1) * n * n]);
    }
}

const TEXTS: &[&str] = &[
    "{ lambda ; a:f32[3,3]. let
    b:f32[3,3] c:f32[3,3] = schur[
      compute_schur_vectors=True
      select_callable=None
      sort_eig_vals=False
    ] a
  in (b, c) }",
    "{ lambda ; a:f32[3,3]. let
    b:f32[3,3] = schur[
      compute_schur_vectors=False
      select_callable=None
      sort_eig_vals=False
    ] a
  in (b,) }",
    "{ lambda ; a:f32[2,3,3]. let
    b:f32[2,3,3] c:f32[2,3,3] = schur[
      compute_schur_vectors=True
      select_callable=None
      sort_eig_vals=False
    ] a
  in (b, c) }",
];

#[test]
fn jax_texts_print_back_and_bad_operands_are_errors() {
    for text in TEXTS {
        let j = parse_jaxpr(text).unwrap();
        check_jaxpr(&j).unwrap();
        assert_eq!(&j.to_string(), text);
    }
    let sorted = TEXTS[1].replace("sort_eig_vals=False", "sort_eig_vals=True");
    let e = check_jaxpr(&parse_jaxpr(&sorted).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("schur") && e.contains("sort_eig_vals"), "{e}");
    let rect = TEXTS[1].replace("f32[3,3]", "f32[3,4]");
    let e = check_jaxpr(&parse_jaxpr(&rect).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("schur") && e.contains("square"), "{e}");
}
