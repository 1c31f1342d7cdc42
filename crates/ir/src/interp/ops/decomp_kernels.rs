//! Reference algorithms of the matrix decompositions, on one row-major f64
//! matrix each: Cholesky–Banachiewicz, forward/back substitution,
//! partial-pivot LU, Householder QR (LAPACK's reflector convention),
//! cyclic Jacobi eigh, one-sided Jacobi SVD and the Thomas algorithm.
//!
//! Invariants: plain loops, no blocking; each function reads an `m x n`
//! row-major slice and returns fresh row-major vectors. JAX's conventions:
//! `cholesky` gives NaNs for a matrix that is not positive definite, `lu`'s
//! pivots are LAPACK's (0-based row swaps) and its permutation the swaps
//! applied to `0..m`, `qr`'s `r` has LAPACK's signs (`r[j][j] =
//! -sign(a) * norm`), eigenvalues ascending, singular values descending.

/// Transposes an `m x n` row-major matrix.
pub fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut t = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            t[j * m + i] = a[i * n + j];
        }
    }
    t
}

/// The lower Cholesky factor of the lower triangle of `a` (`n x n`), upper
/// triangle zero; all NaN when `a` is not positive definite.
pub fn cholesky(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    return vec![f64::NAN; n * n];
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    l
}

/// Solves `t x = b` for triangular `t` (`m x m`, the other triangle ignored)
/// and `b` (`m x n`).
fn tri_solve(t: &[f64], m: usize, lower: bool, b: &[f64], n: usize) -> Vec<f64> {
    let mut x = b.to_vec();
    for c in 0..n {
        let rows: Box<dyn Iterator<Item = usize>> = if lower {
            Box::new(0..m)
        } else {
            Box::new((0..m).rev())
        };
        for i in rows {
            let mut s = x[i * n + c];
            let ks = if lower { 0..i } else { i + 1..m };
            for k in ks {
                s -= t[i * m + k] * x[k * n + c];
            }
            x[i * n + c] = s / t[i * m + i];
        }
    }
    x
}

/// `triangular_solve`: `op(a) x = b` (`left`, `b` is `m x n`) or
/// `x op(a) = b` (`b` is `n x m`), `a` `m x m`; returns `x` like `b`.
pub fn triangular_solve(
    a: &[f64],
    m: usize,
    b: &[f64],
    bshape: (usize, usize),
    (left, lower, transpose_a, unit): (bool, bool, bool, bool),
) -> Vec<f64> {
    let mut t = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..m {
            let inside = if lower { j <= i } else { j >= i };
            t[i * m + j] = if i == j && unit {
                1.0
            } else if inside {
                a[i * m + j]
            } else {
                0.0
            };
        }
    }
    let (t, low) = if transpose_a {
        (transpose(&t, m, m), !lower)
    } else {
        (t, lower)
    };
    if left {
        tri_solve(&t, m, low, b, bshape.1)
    } else {
        // x t = b  <=>  t^T x^T = b^T
        let (r, c) = bshape;
        let y = tri_solve(&transpose(&t, m, m), m, !low, &transpose(b, r, c), r);
        transpose(&y, c, r)
    }
}

/// Partial-pivot LU of `a` (`m x n`): `(lu, pivots, permutation)`.
pub fn lu(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let mut a = a.to_vec();
    let k = m.min(n);
    let mut piv = Vec::with_capacity(k);
    let mut perm: Vec<i64> = (0..m as i64).collect();
    for j in 0..k {
        let mut p = j;
        for i in j + 1..m {
            if a[i * n + j].abs() > a[p * n + j].abs() {
                p = i;
            }
        }
        piv.push(p as i64);
        if p != j {
            for c in 0..n {
                a.swap(j * n + c, p * n + c);
            }
            perm.swap(j, p);
        }
        let d = a[j * n + j];
        if d != 0.0 {
            for i in j + 1..m {
                let f = a[i * n + j] / d;
                a[i * n + j] = f;
                for c in j + 1..n {
                    a[i * n + c] -= f * a[j * n + c];
                }
            }
        }
    }
    (a, piv, perm)
}

/// Householder QR of `a` (`m x n`): `q` (`m x qc`) and `r` (`qc x n`),
/// `qc` = `m` (`full`) or `min(m, n)`.
pub fn qr(a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let mut r = a.to_vec();
    let mut refl: Vec<(Vec<f64>, f64)> = Vec::with_capacity(k);
    for j in 0..k {
        let alpha = r[j * n + j];
        let xnorm = (j + 1..m).map(|i| r[i * n + j].powi(2)).sum::<f64>().sqrt();
        let mut v = vec![0.0; m];
        v[j] = 1.0;
        if xnorm == 0.0 {
            refl.push((v, 0.0));
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        for i in j + 1..m {
            v[i] = r[i * n + j] / (alpha - beta);
            r[i * n + j] = 0.0;
        }
        r[j * n + j] = beta;
        for c in j + 1..n {
            let w: f64 = (j..m).map(|i| v[i] * r[i * n + c]).sum();
            for i in j..m {
                r[i * n + c] -= tau * v[i] * w;
            }
        }
        refl.push((v, tau));
    }
    let qc = if full { m } else { k };
    let mut q = vec![0.0; m * qc];
    for i in 0..qc {
        q[i * qc + i] = 1.0;
    }
    for (j, (v, tau)) in refl.iter().enumerate().rev() {
        for c in 0..qc {
            let w: f64 = (j..m).map(|i| v[i] * q[i * qc + c]).sum();
            for i in j..m {
                q[i * qc + c] -= tau * v[i] * w;
            }
        }
    }
    r.truncate(qc.min(m) * n);
    if qc > m {
        r.resize(qc * n, 0.0);
    }
    (q, r)
}

/// Applies the rotation `(c, s)` to columns `p`, `q` of an `rows x cols`
/// matrix.
fn rotate_cols(x: &mut [f64], rows: usize, cols: usize, p: usize, q: usize, c: f64, s: f64) {
    for k in 0..rows {
        let (xp, xq) = (x[k * cols + p], x[k * cols + q]);
        x[k * cols + p] = c * xp - s * xq;
        x[k * cols + q] = s * xp + c * xq;
    }
}

/// The Jacobi rotation zeroing the off-diagonal of `[[app, apq], [apq, aqq]]`.
fn jacobi_rotation(app: f64, aqq: f64, apq: f64) -> (f64, f64) {
    let theta = (aqq - app) / (2.0 * apq);
    let t = 1.0f64.copysign(theta) / (theta.abs() + (theta * theta + 1.0).sqrt());
    let c = 1.0 / (t * t + 1.0).sqrt();
    (c, t * c)
}

/// Symmetric eigendecomposition of the `lower` (else upper) triangle of `a`
/// (`n x n`): eigenvectors as columns (`n x n`) and eigenvalues, ascending
/// when `sort`.
pub fn eigh(a: &[f64], n: usize, lower: bool, sort: bool) -> (Vec<f64>, Vec<f64>) {
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let (r, c) = if (i >= j) == lower { (i, j) } else { (j, i) };
            s[i * n + j] = a[r * n + c];
        }
    }
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let scale: f64 = s.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| s[i * n + j].powi(2))
            .sum::<f64>()
            .sqrt();
        if !(off > 1e-300 && off > 1e-17 * scale) {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let (c, sn) = jacobi_rotation(s[p * n + p], s[q * n + q], apq);
                rotate_cols(&mut s, n, n, p, q, c, sn);
                let st = transpose(&s, n, n);
                s = st;
                rotate_cols(&mut s, n, n, p, q, c, sn);
                rotate_cols(&mut v, n, n, p, q, c, sn);
            }
        }
    }
    let w: Vec<f64> = (0..n).map(|i| s[i * n + i]).collect();
    let mut order: Vec<usize> = (0..n).collect();
    if sort {
        order.sort_by(|&i, &j| w[i].total_cmp(&w[j]));
    }
    let vs = (0..n * n).map(|k| v[(k / n) * n + order[k % n]]).collect();
    (vs, order.iter().map(|&i| w[i]).collect())
}

/// Completes the `valid` columns of `x` (`rows x cols`, orthonormal where
/// valid) to `want` orthonormal columns, filling invalid and missing ones.
fn complete(x: &[f64], rows: usize, cols: usize, valid: &[bool], want: usize) -> Vec<f64> {
    let mut basis: Vec<Vec<f64>> = Vec::with_capacity(want);
    let mut slots: Vec<Option<Vec<f64>>> = (0..want)
        .map(|c| {
            (c < cols && valid[c]).then(|| (0..rows).map(|r| x[r * cols + c]).collect::<Vec<f64>>())
        })
        .collect();
    basis.extend(slots.iter().flatten().cloned());
    let mut e = 0;
    for slot in slots.iter_mut().filter(|s| s.is_none()) {
        while e < rows {
            let mut u = vec![0.0; rows];
            u[e] = 1.0;
            e += 1;
            for _ in 0..2 {
                for b in &basis {
                    let d: f64 = b.iter().zip(&u).map(|(p, q)| p * q).sum();
                    u.iter_mut().zip(b).for_each(|(p, q)| *p -= d * q);
                }
            }
            let nrm = u.iter().map(|p| p * p).sum::<f64>().sqrt();
            if nrm > 0.5 {
                u.iter_mut().for_each(|p| *p /= nrm);
                basis.push(u.clone());
                *slot = Some(u);
                break;
            }
        }
    }
    let mut out = vec![0.0; rows * want];
    for (c, s) in slots.iter().enumerate() {
        if let Some(u) = s {
            for r in 0..rows {
                out[r * want + c] = u[r];
            }
        }
    }
    out
}

/// One-sided Jacobi SVD of a tall `a` (`m x n`, `m >= n`): `s` (descending),
/// `u` (`m x n`, or `m x m` when `full`) and `v` (`n x n`).
fn svd_tall(a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut u = a.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..100 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let col = |x: &[f64], i: usize, j: usize| -> f64 {
                    (0..m).map(|r| x[r * n + i] * x[r * n + j]).sum()
                };
                let (al, be, ga) = (col(&u, p, p), col(&u, q, q), col(&u, p, q));
                if ga == 0.0 || ga.abs() <= 1e-16 * (al * be).sqrt() {
                    continue;
                }
                rotated = true;
                let (c, s) = jacobi_rotation(al, be, ga);
                rotate_cols(&mut u, m, n, p, q, c, s);
                rotate_cols(&mut v, n, n, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|c| (0..m).map(|r| u[r * n + c].powi(2)).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| norms[j].total_cmp(&norms[i]));
    let s: Vec<f64> = order.iter().map(|&i| norms[i]).collect();
    let tiny = s.first().copied().unwrap_or(0.0) * 1e-13;
    let mut us = vec![0.0; m * n];
    let mut valid = vec![false; n];
    for (k, &c) in order.iter().enumerate() {
        if norms[c] > tiny && norms[c] > 0.0 {
            valid[k] = true;
            for r in 0..m {
                us[r * n + k] = u[r * n + c] / norms[c];
            }
        }
    }
    let uw = if full { m } else { n };
    let us = complete(&us, m, n, &valid, uw);
    let vs = (0..n * n).map(|k| v[(k / n) * n + order[k % n]]).collect();
    (s, us, vs)
}

/// SVD of `a` (`m x n`): `s` (descending, `min(m, n)`), `u` (`m x m` or
/// `m x k`) and `vt` (`n x n` or `k x n`).
pub fn svd(a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if m >= n {
        let (s, u, v) = svd_tall(a, m, n, full);
        (s, u, transpose(&v, n, n))
    } else {
        // a^T = u' s v'^T  =>  a = v' s u'^T
        let (s, u2, v2) = svd_tall(&transpose(a, m, n), n, m, full);
        let w = if full { n } else { m };
        (s, v2, transpose(&u2, n, w))
    }
}

/// Thomas algorithm: solves the tridiagonal system (`dl[0]` and `du[m-1]`
/// unused) for each column of `b` (`m x n`).
pub fn tridiagonal_solve(
    dl: &[f64],
    d: &[f64],
    du: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
) -> Vec<f64> {
    let mut x = vec![0.0; m * n];
    if m == 0 {
        return x;
    }
    let mut cp = vec![0.0; m];
    let mut dp = vec![0.0; m];
    for c in 0..n {
        cp[0] = du[0] / d[0];
        dp[0] = b[c] / d[0];
        for i in 1..m {
            let den = d[i] - dl[i] * cp[i - 1];
            cp[i] = du[i] / den;
            dp[i] = (b[i * n + c] - dl[i] * dp[i - 1]) / den;
        }
        x[(m - 1) * n + c] = dp[m - 1];
        for i in (0..m - 1).rev() {
            x[i * n + c] = dp[i] - cp[i] * x[(i + 1) * n + c];
        }
    }
    x
}
