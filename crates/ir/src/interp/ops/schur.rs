//! The reference kernel of `schur` on one real matrix: Householder
//! reduction to Hessenberg form, then Francis double-shift QR steps with
//! deflation (Golub and Van Loan, algorithms 7.4.2 and 7.5.2), every
//! transformation applied to the whole matrix and accumulated in `Z`.
//!
//! Result: `a = Z T Z^T` with `Z` orthogonal and `T` quasi upper
//! triangular (real Schur form): exact zeros below the first subdiagonal,
//! and a nonzero subdiagonal entry only inside a 2x2 block whose
//! eigenvalues are a complex-conjugate pair (2x2 blocks with real
//! eigenvalues are split by one rotation). A matrix that does not converge
//! in `100 n` steps is returned as NaNs (LAPACK's `info > 0`).

/// A row-major `n x n` matrix.
struct Mat<'a> {
    v: &'a mut [f64],
    n: usize,
}

impl Mat<'_> {
    fn at(&self, i: usize, j: usize) -> f64 {
        self.v[i * self.n + j]
    }
    fn set(&mut self, i: usize, j: usize, x: f64) {
        self.v[i * self.n + j] = x;
    }
}

/// The Householder vector and scale of `x` (`P = I - beta v v^T` maps `x`
/// to a multiple of `e1`); `None` when `x` is zero.
fn house(x: &[f64]) -> Option<(Vec<f64>, f64)> {
    let norm = x.iter().map(|a| a * a).sum::<f64>().sqrt();
    if norm == 0.0 {
        return None;
    }
    let mut v = x.to_vec();
    v[0] += if x[0] >= 0.0 { norm } else { -norm };
    let vv: f64 = v.iter().map(|a| a * a).sum();
    (vv > 0.0).then(|| (v, 2.0 / vv))
}

/// `P` applied from the left to rows `r0..r0+len(v)`, columns `cols`.
fn left(m: &mut Mat, v: &[f64], beta: f64, r0: usize, cols: std::ops::Range<usize>) {
    for j in cols {
        let s: f64 = v
            .iter()
            .enumerate()
            .map(|(k, vk)| vk * m.at(r0 + k, j))
            .sum();
        for (k, vk) in v.iter().enumerate() {
            let x = m.at(r0 + k, j) - beta * vk * s;
            m.set(r0 + k, j, x);
        }
    }
}

/// `P` applied from the right to columns `c0..c0+len(v)`, rows `rows`.
fn right(m: &mut Mat, v: &[f64], beta: f64, c0: usize, rows: std::ops::Range<usize>) {
    for i in rows {
        let s: f64 = v
            .iter()
            .enumerate()
            .map(|(k, vk)| vk * m.at(i, c0 + k))
            .sum();
        for (k, vk) in v.iter().enumerate() {
            let x = m.at(i, c0 + k) - beta * vk * s;
            m.set(i, c0 + k, x);
        }
    }
}

/// One reflector `P` at offset `k` as a similarity on `t` (rows `0..=last`
/// for the right side, columns `first..n` for the left) and on `z`.
fn similarity(t: &mut Mat, z: &mut Mat, x: &[f64], k: usize, first: usize, last: usize) {
    if let Some((v, beta)) = house(x) {
        let n = t.n;
        left(t, &v, beta, k, first..n);
        right(t, &v, beta, k, 0..last + 1);
        right(z, &v, beta, k, 0..n);
    }
}

/// Splits the 2x2 block at `p, p + 1` by a rotation when its eigenvalues
/// are real; leaves a complex pair as it is.
fn split_block(t: &mut Mat, z: &mut Mat, p: usize) {
    let q = p + 1;
    let (a, b, c, d) = (t.at(p, p), t.at(p, q), t.at(q, p), t.at(q, q));
    if c == 0.0 {
        return;
    }
    let h = (a - d) / 2.0;
    let disc = h * h + b * c;
    if disc < 0.0 {
        return;
    }
    let r = disc.sqrt();
    let lambda = (a + d) / 2.0 + if h >= 0.0 { r } else { -r };
    // An eigenvector of the block for `lambda`, the better-scaled form.
    let (e1, e2) = ((lambda - d, c), (b, lambda - a));
    let (x, y) = if e1.0.hypot(e1.1) >= e2.0.hypot(e2.1) {
        e1
    } else {
        e2
    };
    let nrm = x.hypot(y);
    if nrm == 0.0 {
        return;
    }
    let (cs, sn) = (x / nrm, y / nrm);
    let n = t.n;
    for j in p..n {
        let (u, w) = (t.at(p, j), t.at(q, j));
        t.set(p, j, cs * u + sn * w);
        t.set(q, j, -sn * u + cs * w);
    }
    let rotate_cols = |m: &mut Mat, rows: usize| {
        for i in 0..rows {
            let (u, w) = (m.at(i, p), m.at(i, q));
            m.set(i, p, cs * u + sn * w);
            m.set(i, q, -sn * u + cs * w);
        }
    };
    rotate_cols(t, q + 1);
    rotate_cols(z, n);
    t.set(q, p, 0.0);
}

/// The real Schur form `(T, Z)` of the row-major `n x n` matrix `a`.
pub fn real_schur(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut tv = a.to_vec();
    let mut zv: Vec<f64> = (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect();
    if a.iter().any(|x| !x.is_finite()) {
        return (vec![f64::NAN; n * n], vec![f64::NAN; n * n]);
    }
    let (t, z) = (&mut Mat { v: &mut tv, n }, &mut Mat { v: &mut zv, n });
    // Hessenberg reduction.
    for k in 0..n.saturating_sub(2) {
        let x: Vec<f64> = (k + 1..n).map(|i| t.at(i, k)).collect();
        similarity(t, z, &x, k + 1, k, n - 1);
        for i in k + 2..n {
            t.set(i, k, 0.0);
        }
    }
    let norm = tv_norm(t);
    let mut hi = n.saturating_sub(1);
    let mut iter = 0usize;
    let mut total = 0usize;
    while hi > 0 {
        // Deflate: the lowest `lo` with a negligible subdiagonal above it.
        let mut lo = hi;
        while lo > 0 {
            let s = t.at(lo - 1, lo - 1).abs() + t.at(lo, lo).abs();
            let s = if s == 0.0 { norm } else { s };
            if t.at(lo, lo - 1).abs() <= f64::EPSILON * s {
                t.set(lo, lo - 1, 0.0);
                break;
            }
            lo -= 1;
        }
        if lo == hi {
            hi -= 1;
            iter = 0;
            continue;
        }
        if lo + 1 == hi {
            split_block(t, z, lo);
            hi = hi.saturating_sub(2);
            iter = 0;
            continue;
        }
        total += 1;
        if total > 100 * n.max(1) {
            return (vec![f64::NAN; n * n], vec![f64::NAN; n * n]);
        }
        iter += 1;
        // The double shift: the trailing 2x2's trace and determinant, or
        // an exceptional shift every tenth step.
        let (s, tt) = if iter.is_multiple_of(10) {
            let e = t.at(hi, hi - 1).abs() + t.at(hi - 1, hi - 2).abs();
            (1.5 * e, e * e)
        } else {
            let (a, b) = (t.at(hi - 1, hi - 1), t.at(hi - 1, hi));
            let (c, d) = (t.at(hi, hi - 1), t.at(hi, hi));
            (a + d, a * d - b * c)
        };
        let h = |t: &Mat, i: usize, j: usize| t.at(i, j);
        let mut x = h(t, lo, lo) * h(t, lo, lo) + h(t, lo, lo + 1) * h(t, lo + 1, lo)
            - s * h(t, lo, lo)
            + tt;
        let mut y = h(t, lo + 1, lo) * (h(t, lo, lo) + h(t, lo + 1, lo + 1) - s);
        let mut w = h(t, lo + 1, lo) * h(t, lo + 2, lo + 1);
        for k in lo..hi - 1 {
            let first = if k > lo { k - 1 } else { lo };
            similarity(t, z, &[x, y, w], k, first, (k + 3).min(hi));
            if k > lo {
                t.set(k + 1, k - 1, 0.0);
                t.set(k + 2, k - 1, 0.0);
            }
            x = t.at(k + 1, k);
            y = t.at(k + 2, k);
            if k + 3 <= hi {
                w = t.at(k + 3, k);
            }
        }
        similarity(t, z, &[x, y], hi - 1, hi - 2, hi);
        t.set(hi, hi - 2, 0.0);
    }
    for i in 0..n {
        for j in 0..i.saturating_sub(1) {
            t.set(i, j, 0.0);
        }
    }
    (tv, zv)
}

/// The max-abs entry of `t`, the deflation scale of a zero diagonal pair.
fn tv_norm(t: &Mat) -> f64 {
    t.v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}
