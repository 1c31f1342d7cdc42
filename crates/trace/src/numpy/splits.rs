//! `jnp`'s splitting and index-set helpers: `array_split`, `hsplit`,
//! `vsplit`, `dsplit`, `tril_indices`, `triu_indices` (and their
//! `_from` forms) and `diag_indices`.

use super::*;

/// `jnp.array_split(x, sections, axis)`: like [`split`], but `Equal(k)`
/// need not divide the axis: the first `len % k` pieces get one more
/// element, as NumPy does.
pub fn array_split(x: &Array, sections: Sections, axis: isize) -> Result<Vec<Array>> {
    match sections {
        Sections::Equal(0) => Err(Error::InvalidArgument(
            "array_split: number of sections must be larger than 0".into(),
        )),
        Sections::Equal(k) => {
            let ax = normalize_axis(axis, x.ndim(), "array_split")?;
            let n = x.try_shape()?[ax];
            let (part, r) = (n / k, n % k);
            let points: Vec<usize> = (1..k).map(|i| i * part + i.min(r)).collect();
            split(x, Sections::At(points), axis)
        }
        at => split(x, at, axis),
    }
}

/// `split` along `axis` of an array of rank at least `min_rank`.
fn split_at_least(
    op: &str,
    x: &Array,
    sections: Sections,
    axis: isize,
    min_rank: usize,
) -> Result<Vec<Array>> {
    if x.ndim() < min_rank {
        return Err(Error::InvalidArgument(format!(
            "{op} only works on arrays of {min_rank} or more dimensions, got {}",
            fmt_aval(x.aval())
        )));
    }
    split(x, sections, axis)
}

/// `jnp.hsplit`: [`split`] along axis 1 (axis 0 for 1-D arrays).
pub fn hsplit(x: &Array, sections: Sections) -> Result<Vec<Array>> {
    let axis = if x.ndim() == 1 { 0 } else { 1 };
    split_at_least("hsplit", x, sections, axis, 1)
}

/// `jnp.vsplit`: [`split`] along axis 0 (rank >= 2).
pub fn vsplit(x: &Array, sections: Sections) -> Result<Vec<Array>> {
    split_at_least("vsplit", x, sections, 0, 2)
}

/// `jnp.dsplit`: [`split`] along axis 2 (rank >= 3).
pub fn dsplit(x: &Array, sections: Sections) -> Result<Vec<Array>> {
    split_at_least("dsplit", x, sections, 2, 3)
}

/// The `(rows, cols)` (`i32`) of the entries of an `n x m` matrix where
/// `keep(row, col)` holds, in row-major order.
fn indices_where(n: usize, m: usize, keep: impl Fn(i64, i64) -> bool) -> (Array, Array) {
    let (mut rows, mut cols) = (Vec::new(), Vec::new());
    for r in 0..n {
        for c in 0..m {
            if keep(r as i64, c as i64) {
                rows.push(r as i32);
                cols.push(c as i32);
            }
        }
    }
    let len = rows.len();
    (Array::from_vec(rows, &[len]), Array::from_vec(cols, &[len]))
}

/// `jnp.tril_indices(n, k, m)`: the indices of the lower triangle (on and
/// below the `k`-th diagonal) of an `n x m` matrix (`m` defaults to `n`).
pub fn tril_indices(n: usize, k: i64, m: Option<usize>) -> (Array, Array) {
    indices_where(n, m.unwrap_or(n), |r, c| c <= r + k)
}

/// `jnp.triu_indices(n, k, m)`: the indices on and above the `k`-th
/// diagonal.
pub fn triu_indices(n: usize, k: i64, m: Option<usize>) -> (Array, Array) {
    indices_where(n, m.unwrap_or(n), |r, c| c >= r + k)
}

fn matrix_dims(op: &str, x: &Array) -> Result<(usize, usize)> {
    match x.try_shape()?.as_slice() {
        [n, m] => Ok((*n, *m)),
        _ => Err(Error::InvalidArgument(format!(
            "{op}: input array must be 2-D, got {}",
            fmt_aval(x.aval())
        ))),
    }
}

/// `jnp.tril_indices_from(x, k)`: [`tril_indices`] of a 2-D `x`'s shape.
pub fn tril_indices_from(x: &Array, k: i64) -> Result<(Array, Array)> {
    let (n, m) = matrix_dims("tril_indices_from", x)?;
    Ok(tril_indices(n, k, Some(m)))
}

/// `jnp.triu_indices_from(x, k)`: [`triu_indices`] of a 2-D `x`'s shape.
pub fn triu_indices_from(x: &Array, k: i64) -> Result<(Array, Array)> {
    let (n, m) = matrix_dims("triu_indices_from", x)?;
    Ok(triu_indices(n, k, Some(m)))
}

/// `jnp.diag_indices(n, ndim)`: `ndim` copies of `arange(n)` (`i32`),
/// indexing the main diagonal of an `n x ... x n` array.
pub fn diag_indices(n: usize, ndim: usize) -> Result<Vec<Array>> {
    (0..ndim).map(|_| arange(n)).collect()
}

/// `jnp.diag_indices_from(x)`: [`diag_indices`] of an array whose axes
/// all have the same length.
pub fn diag_indices_from(x: &Array) -> Result<Vec<Array>> {
    let shape = x.try_shape()?;
    match shape.first() {
        Some(&n) if shape.len() >= 2 && shape.iter().all(|&d| d == n) => {
            diag_indices(n, shape.len())
        }
        _ => Err(Error::InvalidArgument(format!(
            "diag_indices_from: input must be at least 2-D with all axes of equal length, got {}",
            fmt_aval(x.aval())
        ))),
    }
}
