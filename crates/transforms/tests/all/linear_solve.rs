//! `custom_linear_solve` through the API: the solution, implicit
//! derivatives (jvp and grad against central differences in f64, for `b`
//! and for the matrix a `matvec` closes over), reverse mode with a
//! transpose solver for a non-symmetric system, vmap against a loop, and
//! `jit`.

use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{jit, Array};
use jaxon_transforms::linear_solve::{custom_linear_solve, Transpose};
use jaxon_transforms::{grad, jvp, vmap};

const N: usize = 3;

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// A well-conditioned matrix: random plus 3 on the diagonal (symmetrised
/// when `sym`).
fn matrix(seed: u64, sym: bool) -> Vec<f64> {
    let r = rand(N * N, seed);
    let mut a = vec![0.0; N * N];
    for i in 0..N {
        for j in 0..N {
            a[i * N + j] = if sym {
                r[i * N + j] + r[j * N + i]
            } else {
                r[i * N + j]
            };
        }
        a[i * N + i] += 3.0;
    }
    a
}

/// Gauss–Jordan in f64: the oracle.
fn solve_f64(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut m: Vec<Vec<f64>> = (0..N)
        .map(|i| (0..N).map(|j| a[i * N + j]).chain([b[i]]).collect())
        .collect();
    for c in 0..N {
        let p = (c..N)
            .max_by(|&x, &y| m[x][c].abs().total_cmp(&m[y][c].abs()))
            .unwrap();
        m.swap(c, p);
        for r in 0..N {
            if r != c {
                let f = m[r][c] / m[c][c];
                let pivot = m[c].clone();
                for (x, p) in m[r].iter_mut().zip(pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    (0..N).map(|i| m[i][N] / m[i][i]).collect()
}

fn transpose(a: &[f64]) -> Vec<f64> {
    (0..N * N).map(|k| a[(k % N) * N + k / N]).collect()
}

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_vec(v.to_vec(), shape)
}

/// Jacobi iterations (enough to converge to f64 precision on these
/// diagonally dominant systems): an iterative solver whose own derivative
/// is not the implicit one.
fn jacobi(a: &Array, matvec: &dyn Fn(Array) -> Array, b: Array) -> Array {
    let eye: Vec<f64> = (0..N * N)
        .map(|k| f64::from(u8::from(k % (N + 1) == 0)))
        .collect();
    let diag = jnp::sum(&(a * &arr(&eye, &[N, N])), 1usize, false).unwrap();
    let mut x = &b / &diag;
    for _ in 0..200 {
        let r = &b - &matvec(x.clone());
        x = &x + &(&r / &diag);
    }
    x
}

fn solve_with(a: &Array, b: Array, sym: bool) -> Array {
    let mv = |x: Array| jnp::matmul(a, &x).unwrap();
    let at = jnp::transpose(a, None).unwrap();
    let solve = |m: &dyn Fn(Array) -> Array, b: Array| jacobi(a, m, b);
    let tsolve = |m: &dyn Fn(Array) -> Array, b: Array| jacobi(&at, m, b);
    let t = if sym {
        Transpose::Symmetric
    } else {
        Transpose::Solve(&tsolve)
    };
    custom_linear_solve(mv, b, &solve, t).unwrap()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn solution_and_implicit_derivatives() {
    for (seed, sym) in [(1, true), (2, false), (3, false)] {
        let a = matrix(seed, sym);
        let b = rand(N, seed + 10);
        let (av, bv) = (arr(&a, &[N, N]), arr(&b, &[N]));
        let x = solve_with(&av, bv.clone(), sym);
        close(&x.to_vec::<f64>(), &solve_f64(&a, &b), 1e-12, "x");

        // d/db sum(x) = A^-T 1.
        let g = grad(|b: Array| solve_with(&av, b, sym).sum(All))(bv.clone()).unwrap();
        close(
            &g.to_vec::<f64>(),
            &solve_f64(&transpose(&a), &[1.0; N]),
            1e-10,
            "grad b",
        );

        // d/dA of w . x against central differences.
        let w = rand(N, seed + 20);
        let wv = arr(&w, &[N]);
        let loss = |a: Array| (&solve_with(&a, bv.clone(), false) * &wv).sum(All);
        let ga = grad(loss)(av.clone()).unwrap().to_vec::<f64>();
        let f = |a: &[f64]| -> f64 { solve_f64(a, &b).iter().zip(&w).map(|(x, w)| x * w).sum() };
        let h = 1e-6;
        let fd: Vec<f64> = (0..N * N)
            .map(|k| {
                let (mut p, mut m) = (a.clone(), a.clone());
                p[k] += h;
                m[k] -= h;
                (f(&p) - f(&m)) / (2.0 * h)
            })
            .collect();
        close(&ga, &fd, 1e-6, "grad A");

        // jvp along (dA, db) against central differences.
        let (da, db) = (rand(N * N, seed + 30), rand(N, seed + 40));
        let (_, t) = jvp(
            |(a, b): (Array, Array)| solve_with(&a, b, sym),
            (av.clone(), bv.clone()),
            (arr(&da, &[N, N]), arr(&db, &[N])),
        )
        .unwrap();
        let at = |s: f64| -> Vec<f64> {
            let a2: Vec<f64> = a.iter().zip(&da).map(|(x, d)| x + s * d).collect();
            let b2: Vec<f64> = b.iter().zip(&db).map(|(x, d)| x + s * d).collect();
            solve_f64(&a2, &b2)
        };
        let fd: Vec<f64> = at(h)
            .iter()
            .zip(at(-h))
            .map(|(p, m)| (p - m) / (2.0 * h))
            .collect();
        close(&t.to_vec::<f64>(), &fd, 1e-6, "jvp");
    }
}

#[test]
fn vmap_and_jit_match_a_loop() {
    let a = matrix(5, false);
    let av = arr(&a, &[N, N]);
    let bs = rand(4 * N, 6);
    let batched = vmap(|b: Array| solve_with(&av, b, false))
        .call(arr(&bs, &[4, N]))
        .unwrap()
        .to_vec::<f64>();
    let jitted = jit(|b: Array| solve_with(&av, b, false));
    for r in 0..4 {
        let want = solve_f64(&a, &bs[r * N..(r + 1) * N]);
        close(&batched[r * N..(r + 1) * N], &want, 1e-10, "vmap");
        let j = jitted.call(arr(&bs[r * N..(r + 1) * N], &[N])).unwrap();
        close(&j.to_vec::<f64>(), &want, 1e-10, "jit");
    }
    // The gradient of a jitted solve, vmapped over b.
    let g = vmap(|b: Array| grad(|b: Array| solve_with(&av, b, false).sum(All))(b).unwrap())
        .call(arr(&bs, &[4, N]))
        .unwrap()
        .to_vec::<f64>();
    let want = solve_f64(&transpose(&a), &[1.0; N]);
    for r in 0..4 {
        close(&g[r * N..(r + 1) * N], &want, 1e-10, "vmap of grad");
    }
}

#[test]
fn reverse_mode_without_a_transpose_solve_is_an_error() {
    let av = arr(&matrix(7, false), &[N, N]);
    let r = grad(|b: Array| {
        let solve = |m: &dyn Fn(Array) -> Array, b: Array| jacobi(&av, m, b);
        custom_linear_solve(
            |x: Array| jnp::matmul(&av, &x).unwrap(),
            b,
            &solve,
            Transpose::None,
        )
        .unwrap()
        .sum(All)
    })(arr(&rand(N, 8), &[N]));
    let e = r.expect_err("no transpose solve");
    assert!(e.to_string().contains("transpose_solve"), "{e}");
}
