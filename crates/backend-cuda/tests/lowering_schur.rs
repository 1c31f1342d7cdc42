//! `schur` (real form) on `cuda-sim` (`lower/decomp_schur.rs`) against the
//! interpreter's reference kernel: random batches of general matrices
//! (complex-conjugate eigenvalue pairs included), sizes 0, 1, 2 and odd,
//! f32 and f64, with and without Schur vectors; a non-finite entry gives
//! NaNs. The f64 results are also checked against `A = Z T Z^T` and
//! `Z^T Z = I` in f64 arithmetic.

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::{check_with, parse, random, run_lowered, Dist, Rng, Tol};

fn text(dt: &str, batch: &[usize], n: usize, vectors: bool) -> String {
    let mut dims: Vec<String> = batch.iter().map(|d| d.to_string()).collect();
    dims.push(n.to_string());
    dims.push(n.to_string());
    let t = format!("{dt}[{}]", dims.join(","));
    let (outs, names) = if vectors {
        (format!("b:{t} c:{t}"), "(b, c)")
    } else {
        (format!("b:{t}"), "(b,)")
    };
    format!(
        "{{ lambda ; a:{t}. let
    {outs} = schur[
      compute_schur_vectors={}
      select_callable=None
      sort_eig_vals=False
    ] a
  in {names} }}",
        if vectors { "True" } else { "False" }
    )
}

#[test]
fn matches_the_interpreter() {
    let mut rng = Rng::new(801);
    for (dt, d, tol) in [
        ("f64", DType::F64, Tol::Rel(1e-9)),
        ("f32", DType::F32, Tol::Rel(1e-6)),
    ] {
        for n in [0usize, 1, 2, 3, 4, 5, 7] {
            for vectors in [true, false] {
                let nb = rng.range(0, 3) as usize;
                let batch = if nb == 0 { vec![] } else { vec![nb] };
                let t = text(dt, &batch, n, vectors);
                let mut shape = batch.clone();
                shape.extend([n, n]);
                let a = random(&mut rng, d, &shape, Dist::Uniform(3.0));
                check_with(&t, &[a], tol);
            }
        }
    }
}

#[test]
fn factors_reconstruct_the_matrix() {
    let mut rng = Rng::new(802);
    for n in [2usize, 3, 6, 9] {
        let t = text("f64", &[], n, true);
        let a = random(&mut rng, DType::F64, &[n, n], Dist::Uniform(2.0));
        let got = run_lowered(&parse(&t), std::slice::from_ref(&a)).expect("cuda-sim");
        let (av, tv, zv) = (a.to_f64_vec(), got[0].to_f64_vec(), got[1].to_f64_vec());
        for i in 0..n {
            for j in 0..n {
                let mut zt = 0.0;
                let mut ztz = 0.0;
                for p in 0..n {
                    ztz += zv[p * n + i] * zv[p * n + j];
                    for q in 0..n {
                        zt += zv[i * n + p] * tv[p * n + q] * zv[j * n + q];
                    }
                }
                assert!((zt - av[i * n + j]).abs() < 1e-9, "A[{i},{j}] n={n}");
                let id = if i == j { 1.0 } else { 0.0 };
                assert!((ztz - id).abs() < 1e-12, "Z^T Z [{i},{j}] n={n}");
                if i > j + 1 {
                    assert_eq!(tv[i * n + j], 0.0, "T below the subdiagonal");
                }
            }
        }
        // Quasi-triangular: no two consecutive nonzero subdiagonal entries.
        for i in 1..n.saturating_sub(1) {
            assert!(
                tv[i * n + i - 1] == 0.0 || tv[(i + 1) * n + i] == 0.0,
                "n={n}"
            );
        }
    }
}

#[test]
fn non_finite_entries_give_nans() {
    let t = text("f32", &[2], 3, true);
    let mut v: Vec<f64> = (0..18).map(|i| i as f64 * 0.25 - 1.0).collect();
    v[4] = f64::NAN;
    let a = HostArray::from_f64(DType::F32, &[2, 3, 3], &v).expect("a");
    check_with(&t, &[a], Tol::Exact);
}
