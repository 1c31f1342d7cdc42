//! faer's dense factorisations behind the CPU backend's decomposition steps:
//! Cholesky, triangular solves, partial-pivot LU, the symmetric
//! eigendecomposition and the SVD, blocked and vectorised, where the
//! interpreter runs plain reference loops.
//!
//! Invariants (JAX's conventions, as the reference's): a matrix that is not
//! positive definite gives an all-NaN Cholesky factor; `lu` returns the
//! packed factors, LAPACK's pivots (0-based row swaps) and the permutation
//! they apply; eigenvalues ascending; singular values descending; a
//! factorisation that does not converge gives NaNs. QR stays on the
//! reference (LAPACK's reflector signs) through the trait's default.

use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatRef, Par, Side};
use jaxon_ir::interp::ops::decomp::MatrixKernels;
use jaxon_ir::interp::ops::decomp_kernels::transpose;

/// The faer kernels (sequential: steps already run in parallel over work).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Faer;

/// The row-major `m x n` slice as a faer matrix.
fn mat(a: &[f64], m: usize, n: usize) -> Mat<f64> {
    Mat::from_fn(m, n, |i, j| a[i * n + j])
}

/// A faer matrix as a row-major vector.
fn rows(a: MatRef<'_, f64>) -> Vec<f64> {
    let mut v = Vec::with_capacity(a.nrows() * a.ncols());
    for i in 0..a.nrows() {
        for j in 0..a.ncols() {
            v.push(a[(i, j)]);
        }
    }
    v
}

/// LAPACK's row swaps producing the row permutation `perm` (row `i` of the
/// result is row `perm[i]` of the input) over its first `k` rows.
fn swaps_of(perm: &[usize], k: usize) -> Vec<i64> {
    let mut cur: Vec<usize> = (0..perm.len()).collect();
    let mut at: Vec<usize> = (0..perm.len()).collect();
    (0..k)
        .map(|i| {
            let j = at[perm[i]];
            let (ri, rj) = (cur[i], cur[j]);
            cur.swap(i, j);
            at[ri] = j;
            at[rj] = i;
            j as i64
        })
        .collect()
}

impl MatrixKernels for Faer {
    fn cholesky(&self, a: &[f64], n: usize) -> Vec<f64> {
        // The lower triangle only, as LAPACK's `potrf` reads it.
        let l = Mat::from_fn(
            n,
            n,
            |i, j| if j <= i { a[i * n + j] } else { a[j * n + i] },
        );
        match l.llt(Side::Lower) {
            Ok(f) => {
                let l = f.L();
                let l = Mat::from_fn(n, n, |i, j| if j <= i { l[(i, j)] } else { 0.0 });
                rows(l.as_ref())
            }
            Err(_) => vec![f64::NAN; n * n],
        }
    }

    fn triangular_solve(
        &self,
        a: &[f64],
        m: usize,
        b: &[f64],
        (r, c): (usize, usize),
        (left, lower, transpose_a, unit): (bool, bool, bool, bool),
    ) -> Vec<f64> {
        // `op(t)`, masked to its triangle (unit diagonal when asked).
        let t = Mat::from_fn(m, m, |i, j| {
            let (i, j) = if transpose_a { (j, i) } else { (i, j) };
            let inside = if lower { j <= i } else { j >= i };
            match (i == j && unit, inside) {
                (true, _) => 1.0,
                (false, true) => a[i * m + j],
                (false, false) => 0.0,
            }
        });
        let low = lower != transpose_a;
        // Left: t x = b. Right: x t = b, i.e. t^T x^T = b^T.
        let (t, low, mut x, back) = if left {
            (t, low, mat(b, r, c), false)
        } else {
            (
                t.transpose().to_owned(),
                !low,
                mat(&transpose(b, r, c), c, r),
                true,
            )
        };
        if low {
            tri::solve_lower_triangular_in_place(t.as_ref(), x.as_mut(), Par::Seq);
        } else {
            tri::solve_upper_triangular_in_place(t.as_ref(), x.as_mut(), Par::Seq);
        }
        if back {
            rows(x.transpose())
        } else {
            rows(x.as_ref())
        }
    }

    fn lu(&self, a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
        let f = mat(a, m, n).partial_piv_lu();
        let (l, u) = (f.L(), f.U());
        let packed = Mat::from_fn(m, n, |i, j| if i > j { l[(i, j)] } else { u[(i, j)] });
        let perm: Vec<usize> = f.P().arrays().0.to_vec();
        let pivots = swaps_of(&perm, m.min(n));
        let perm = perm.into_iter().map(|p| p as i64).collect();
        (rows(packed.as_ref()), pivots, perm)
    }

    fn eigh(&self, a: &[f64], n: usize, lower: bool, _sort: bool) -> (Vec<f64>, Vec<f64>) {
        // faer's eigenvalues are always ascending, which is also what
        // LAPACK returns unsorted.
        let side = if lower { Side::Lower } else { Side::Upper };
        match mat(a, n, n).self_adjoint_eigen(side) {
            Ok(e) => {
                let w = e.S().column_vector().iter().copied().collect();
                (rows(e.U()), w)
            }
            Err(_) => (vec![f64::NAN; n * n], vec![f64::NAN; n]),
        }
    }

    fn svd(&self, a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let k = m.min(n);
        let x = mat(a, m, n);
        let svd = if full { x.svd() } else { x.thin_svd() };
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        match svd {
            Ok(s) => (
                s.S().column_vector().iter().copied().collect(),
                rows(s.U()),
                rows(s.V().transpose()),
            ),
            Err(_) => (
                vec![f64::NAN; k],
                vec![f64::NAN; m * uc],
                vec![f64::NAN; vr * n],
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jaxon_ir::interp::ops::decomp::Reference;

    fn rand(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "{what}[{i}]: {g} vs {w}"
            );
        }
    }

    /// `a^T a + n I`: symmetric positive definite.
    fn spd(n: usize, seed: u64) -> Vec<f64> {
        let a = rand(n * n, seed);
        let mut s = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                s[i * n + j] = (0..n).map(|k| a[k * n + i] * a[k * n + j]).sum::<f64>()
                    + if i == j { n as f64 } else { 0.0 };
            }
        }
        s
    }

    /// `u diag(s) vt` (or `v diag(w) v^T` for eigh), row-major.
    fn rebuild(u: &[f64], s: &[f64], vt: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut a = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                a[i * n + j] = (0..s.len())
                    .map(|l| u[i * k + l] * s[l] * vt[l * n + j])
                    .sum();
            }
        }
        a
    }

    #[test]
    fn cholesky_and_triangular_solves_match_the_reference() {
        for n in [1, 4, 33] {
            let a = spd(n, n as u64);
            close(
                &Faer.cholesky(&a, n),
                &Reference.cholesky(&a, n),
                1e-12,
                "cholesky",
            );
            let b = rand(n * 3, 5);
            for flags in 0..16u8 {
                let f = |k: u8| flags & (1 << k) != 0;
                let flags = (f(0), f(1), f(2), f(3));
                let shape = if flags.0 { (n, 3) } else { (3, n) };
                close(
                    &Faer.triangular_solve(&a, n, &b, shape, flags),
                    &Reference.triangular_solve(&a, n, &b, shape, flags),
                    1e-10,
                    &format!("triangular_solve {flags:?} n={n}"),
                );
            }
        }
        let not_pd = vec![1.0, 2.0, 2.0, 1.0];
        assert!(Faer.cholesky(&not_pd, 2).iter().all(|x| x.is_nan()));
    }

    #[test]
    fn lu_matches_the_reference_pivots_and_factors() {
        for (m, n) in [(4, 4), (7, 3), (3, 7), (40, 40)] {
            let a = rand(m * n, (m * 31 + n) as u64);
            let (f, piv, perm) = Faer.lu(&a, m, n);
            let (rf, rpiv, rperm) = Reference.lu(&a, m, n);
            assert_eq!(piv, rpiv, "pivots {m}x{n}");
            assert_eq!(perm, rperm, "permutation {m}x{n}");
            close(&f, &rf, 1e-10, &format!("lu {m}x{n}"));
        }
    }

    #[test]
    fn eigh_and_svd_match_the_reference_up_to_signs() {
        for n in [1, 5, 30] {
            let a = spd(n, 3 + n as u64);
            for lower in [true, false] {
                let (v, w) = Faer.eigh(&a, n, lower, true);
                let (_, rw) = Reference.eigh(&a, n, lower, true);
                close(&w, &rw, 1e-10, "eigenvalues");
                close(
                    &rebuild(&v, &w, &transpose(&v, n, n), n, n, n),
                    &a,
                    1e-10,
                    "v w v^T",
                );
            }
        }
        for (m, n) in [(5, 3), (3, 5), (20, 20)] {
            let a = rand(m * n, (m + 7 * n) as u64);
            let k = m.min(n);
            for full in [false, true] {
                let (s, u, vt) = Faer.svd(&a, m, n, full);
                let (rs, _, _) = Reference.svd(&a, m, n, full);
                close(&s, &rs, 1e-10, "singular values");
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                assert_eq!((u.len(), vt.len()), (m * uc, vr * n), "u, vt sizes");
                close(&rebuild(&u, &s, &vt, m, uc, n), &a, 1e-10, "u s vt");
            }
        }
    }
}
