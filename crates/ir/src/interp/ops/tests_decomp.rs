//! The decomposition kernels on random well-conditioned matrices, checked
//! by their invariants (`Q R = A`, `Q^T Q = I`, `L L^T = A`, `P A = L U`,
//! `A V = V diag(w)`, `U S V^T = A`, solve residuals), and the batched
//! `eval_op` entry points against per-matrix calls.

use super::decomp_kernels as k;
use super::eval_op;
use super::testutil::{arr, Rng};
use crate::dtype::DType;
use crate::primitive::*;

fn rand(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

fn matmul(a: &[f64], b: &[f64], m: usize, kk: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..kk).map(|p| a[i * kk + p] * b[p * n + j]).sum();
        }
    }
    c
}

fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() < 1e-9, "{what}: element {i}: {x} vs {y}");
    }
}

fn eye(n: usize) -> Vec<f64> {
    (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect()
}

fn orthonormal_cols(q: &[f64], m: usize, c: usize, what: &str) {
    let qtq = matmul(&k::transpose(q, m, c), q, c, m, c);
    close(&qtq, &eye(c), what);
}

#[test]
fn cholesky_reconstructs_and_fails_with_nans() {
    let mut rng = Rng(3);
    let n = 5;
    let a = rand(&mut rng, n * n);
    let mut s = matmul(&a, &k::transpose(&a, n, n), n, n, n);
    for i in 0..n {
        s[i * n + i] += 1.0;
    }
    let l = k::cholesky(&s, n);
    close(&matmul(&l, &k::transpose(&l, n, n), n, n, n), &s, "L L^T");
    assert!(k::cholesky(&[1.0, 2.0, 2.0, 1.0], 2)
        .iter()
        .all(|x| x.is_nan()));
}

#[test]
fn triangular_solve_every_flag() {
    let mut rng = Rng(5);
    let m = 4;
    let mut a = rand(&mut rng, m * m);
    for i in 0..m {
        a[i * m + i] += 3.0;
    }
    for left in [true, false] {
        for lower in [true, false] {
            for trans in [true, false] {
                for unit in [true, false] {
                    let bs = if left { (m, 2) } else { (2, m) };
                    let b = rand(&mut rng, 2 * m);
                    let x = k::triangular_solve(&a, m, &b, bs, (left, lower, trans, unit));
                    let mut t: Vec<f64> = (0..m * m)
                        .map(|i| {
                            let (r, c) = (i / m, i % m);
                            let inside = if lower { c <= r } else { c >= r };
                            if r == c && unit {
                                1.0
                            } else if inside {
                                a[i]
                            } else {
                                0.0
                            }
                        })
                        .collect();
                    if trans {
                        t = k::transpose(&t, m, m);
                    }
                    let got = if left {
                        matmul(&t, &x, m, m, 2)
                    } else {
                        matmul(&x, &t, 2, m, m)
                    };
                    close(&got, &b, &format!("{left} {lower} {trans} {unit}"));
                }
            }
        }
    }
}

#[test]
fn lu_permutes_and_reconstructs() {
    let mut rng = Rng(7);
    for (m, n) in [(4, 4), (5, 3), (3, 5)] {
        let a = rand(&mut rng, m * n);
        let (f, piv, perm) = k::lu(&a, m, n);
        let kk = m.min(n);
        assert_eq!(piv.len(), kk);
        let l: Vec<f64> = (0..m * kk)
            .map(|i| {
                let (r, c) = (i / kk, i % kk);
                if r == c {
                    1.0
                } else if c < r {
                    f[r * n + c]
                } else {
                    0.0
                }
            })
            .collect();
        let u: Vec<f64> = (0..kk * n)
            .map(|i| if i % n >= i / n { f[i] } else { 0.0 })
            .collect();
        let pa: Vec<f64> = (0..m * n)
            .map(|i| a[perm[i / n] as usize * n + i % n])
            .collect();
        close(
            &matmul(&l, &u, m, kk, n),
            &pa,
            &format!("P A = L U {m}x{n}"),
        );
    }
}

#[test]
fn qr_reconstructs_with_orthonormal_q() {
    let mut rng = Rng(11);
    for (m, n) in [(4, 4), (5, 3), (3, 5)] {
        let a = rand(&mut rng, m * n);
        for full in [false, true] {
            let (q, r) = k::qr(&a, m, n, full);
            let c = if full { m } else { m.min(n) };
            orthonormal_cols(&q, m, c, "Q^T Q");
            close(&matmul(&q, &r, m, c, n), &a, "Q R");
            for i in 0..c {
                for j in 0..n.min(i) {
                    assert_eq!(r[i * n + j], 0.0, "R is upper triangular");
                }
            }
        }
    }
}

#[test]
fn eigh_diagonalizes_ascending() {
    let mut rng = Rng(13);
    let n = 5;
    let a = rand(&mut rng, n * n);
    let s: Vec<f64> = (0..n * n).map(|i| a[i] + a[(i % n) * n + i / n]).collect();
    let (v, w) = k::eigh(&s, n, true, true);
    assert!(w.windows(2).all(|p| p[0] <= p[1]));
    orthonormal_cols(&v, n, n, "V^T V");
    let av = matmul(&s, &v, n, n, n);
    let vw: Vec<f64> = (0..n * n).map(|i| v[i] * w[i % n]).collect();
    close(&av, &vw, "A V = V w");
}

#[test]
fn svd_reconstructs_descending() {
    let mut rng = Rng(17);
    for (m, n) in [(4, 4), (5, 3), (3, 5)] {
        let a = rand(&mut rng, m * n);
        for full in [false, true] {
            let kk = m.min(n);
            let (s, u, vt) = k::svd(&a, m, n, full);
            assert!(s.windows(2).all(|p| p[0] >= p[1]));
            let (uc, vr) = if full { (m, n) } else { (kk, kk) };
            orthonormal_cols(&u, m, uc, "U^T U");
            orthonormal_cols(&k::transpose(&vt, vr, n), n, vr, "V^T V");
            let us: Vec<f64> = (0..m * kk)
                .map(|i| u[(i / kk) * uc + i % kk] * s[i % kk])
                .collect();
            close(&matmul(&us, &vt[..kk * n], m, kk, n), &a, "U S V^T");
        }
    }
}

#[test]
fn tridiagonal_solve_residual() {
    let mut rng = Rng(19);
    let (m, n) = (6, 2);
    let dl = rand(&mut rng, m);
    let du = rand(&mut rng, m);
    let d: Vec<f64> = rand(&mut rng, m).iter().map(|x| x + 4.0).collect();
    let b = rand(&mut rng, m * n);
    let x = k::tridiagonal_solve(&dl, &d, &du, &b, m, n);
    for i in 0..m {
        for c in 0..n {
            let mut r = d[i] * x[i * n + c];
            if i > 0 {
                r += dl[i] * x[(i - 1) * n + c];
            }
            if i + 1 < m {
                r += du[i] * x[(i + 1) * n + c];
            }
            assert!((r - b[i * n + c]).abs() < 1e-9);
        }
    }
}

#[test]
fn batched_eval_matches_per_matrix_calls() {
    let mut rng = Rng(23);
    let (m, n) = (4, 3);
    let v = rand(&mut rng, 2 * m * n);
    let p: Primitive = SvdParams {
        compute_uv: true,
        full_matrices: false,
    }
    .into();
    let batched = eval_op(&p, &[arr(DType::F64, &[2, m, n], &v)]).unwrap();
    for b in 0..2 {
        let one = eval_op(
            &p,
            &[arr(DType::F64, &[m, n], &v[b * m * n..(b + 1) * m * n])],
        )
        .unwrap();
        for (x, y) in batched.iter().zip(&one) {
            let len = y.len();
            close(
                &x.to_f64_vec()[b * len..(b + 1) * len],
                &y.to_f64_vec(),
                "batch",
            );
        }
    }
    let lu = eval_op(
        &Primitive::Linalg(Linalg::Lu),
        &[arr(DType::F32, &[2, m, n], &v)],
    )
    .unwrap();
    assert_eq!(lu[1].dtype(), DType::I32);
    assert_eq!(lu[2].shape(), &[2, m]);
    let bad = eval_op(
        &Primitive::Linalg(Linalg::Cholesky),
        &[arr(DType::I32, &[2, 2], &[1.0; 4])],
    );
    assert!(bad.is_err());
    let rect = eval_op(
        &Primitive::Linalg(Linalg::Cholesky),
        &[arr(DType::F32, &[2, 3], &[1.0; 6])],
    );
    assert!(rect.is_err());
    let ts: Primitive = TriangularSolveParams {
        left_side: true,
        lower: true,
        transpose_a: false,
        conjugate_a: false,
        unit_diagonal: false,
    }
    .into();
    let a = arr(DType::F32, &[3, 3], &[1.0; 9]);
    let b = arr(DType::F32, &[2, 3], &[1.0; 6]);
    assert!(eval_op(&ts, &[a, b]).is_err(), "b's rows must match a");
}
