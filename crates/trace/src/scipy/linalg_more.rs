//! More of `jax.scipy.linalg`: SciPy's spellings of the decompositions
//! (`cholesky` upper by default, `qr` complete by default, `svd`, `eigh`,
//! `inv`, `det`, `solve`, `schur` in its real form), `lu_solve` from `lu_factor`'s pivots, and the
//! special matrices (`toeplitz`, `hankel`, `circulant`, `fiedler`,
//! `companion`, `leslie`, `hilbert`, `helmert`, `hadamard`), as JAX
//! defines them; re-exported from [`super::linalg`].

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::lax::linalg as la;
use crate::numpy as jnp;
use jaxon_ir::DType;

fn vector(name: &str, a: &Array) -> Result<usize> {
    match a.try_shape()?.as_slice() {
        [n] => Ok(*n),
        s => Err(Error::InvalidArgument(format!(
            "{name}: expected a 1-D array, got shape {s:?}"
        ))),
    }
}

fn matrix(name: &str, a: &Array) -> Result<(usize, usize)> {
    match a.try_shape()?.as_slice() {
        [.., m, n] => Ok((*m, *n)),
        s => Err(Error::InvalidArgument(format!(
            "{name}: expected a matrix, got shape {s:?}"
        ))),
    }
}

/// `jax.scipy.linalg.cholesky(a, lower)`: the lower factor, or its
/// (conjugate) transpose when `lower` is false (SciPy's default).
pub fn cholesky(a: &Array, lower: bool) -> Result<Array> {
    let l = super::linalg::cho_factor(a)?;
    if lower {
        Ok(l)
    } else {
        jnp::conj(&la::mt(&l)?)
    }
}

/// `jax.scipy.linalg.det(a)`.
pub fn det(a: &Array) -> Result<Array> {
    jnp::linalg::det(a)
}

/// `jax.scipy.linalg.inv(a)`.
pub fn inv(a: &Array) -> Result<Array> {
    jnp::linalg::inv(a)
}

/// `jax.scipy.linalg.solve(a, b)` (a general `a`).
pub fn solve(a: &Array, b: &Array) -> Result<Array> {
    jnp::linalg::solve(a, b)
}

/// `jax.scipy.linalg.eigh(a, lower=True)`: `(w, v)`, eigenvalues
/// ascending; with `eigvals_only` the caller takes `w`.
pub fn eigh(a: &Array) -> Result<(Array, Array)> {
    jnp::linalg::eigh(a)
}

/// `jax.scipy.linalg.qr(a, mode)`: `mode` "full" (SciPy's default, square
/// `q`) or "economic".
pub fn qr(a: &Array, mode: &str) -> Result<(Array, Array)> {
    match mode {
        "full" => jnp::linalg::qr(a, "complete"),
        "economic" => jnp::linalg::qr(a, "reduced"),
        m => Err(Error::InvalidArgument(format!(
            "qr: unknown mode {m:?} (expected \"full\" or \"economic\")"
        ))),
    }
}

/// `jax.scipy.linalg.svd(a, full_matrices)`: `(u, s, vh)`.
pub fn svd(a: &Array, full_matrices: bool) -> Result<(Array, Array, Array)> {
    jnp::linalg::svd(a, full_matrices)
}

/// `jax.scipy.linalg.lu_solve((lu, piv), b, trans)`: solves `a x = b`
/// (`trans` 0), `a^T x = b` (1) or `a^H x = b` (2) from `lu_factor(a)`;
/// `lu` is one square matrix, `b` a vector or a matrix of right-hand sides.
pub fn lu_solve(lu: &Array, piv: &Array, b: &Array, trans: u8) -> Result<Array> {
    let (m, n) = matrix("lu_solve", lu)?;
    if m != n || lu.ndim() != 2 {
        return Err(Error::InvalidArgument(format!(
            "lu_solve: expected one square LU factor, got shape {:?}",
            lu.try_shape()?
        )));
    }
    let k = vector("lu_solve pivots", piv)?;
    let bs = b.try_shape()?;
    if bs.is_empty() || bs[0] != m || bs.len() > 2 {
        return Err(Error::InvalidArgument(format!(
            "lu_solve: b of shape {bs:?} does not match the factor's {m} rows"
        )));
    }
    if trans > 2 {
        return Err(Error::InvalidArgument(format!(
            "lu_solve: trans must be 0, 1 or 2, got {trans}"
        )));
    }
    // The row permutation the pivots apply: swap rows i and piv[i] in turn.
    let idx = lax::iota(piv.dtype(), m)?;
    let mut perm = idx.clone();
    for i in 0..k.min(m) {
        let pi = lax::slice(piv, &[i], &[i + 1], None)?;
        let at_i = jnp::take(&perm, &Array::from_vec(vec![i as i32], &[1]), None)?;
        let at_pi = jnp::take(&perm, &pi, None)?;
        let is_i = jnp::equal(
            &idx,
            &lax::convert_element_type(&Array::scalar(i as i32), piv.dtype(), false)?,
        )?;
        let is_pi = jnp::equal(&idx, &pi)?;
        let swapped = jnp::where_(&is_pi, &at_i, &perm)?;
        perm = jnp::where_(&is_i, &at_pi, &swapped)?;
    }
    let b2 = if bs.len() == 1 {
        lax::expand_dims(b, &[1])?
    } else {
        b.clone()
    };
    let x = if trans == 0 {
        let pb = jnp::take(&b2, &perm, Some(0))?;
        let y = super::linalg::solve_triangular(lu, &pb, 0, true, true)?;
        super::linalg::solve_triangular(lu, &y, 0, false, false)?
    } else {
        let y = super::linalg::solve_triangular(lu, &b2, trans, false, false)?;
        let z = super::linalg::solve_triangular(lu, &y, trans, true, true)?;
        // x[perm] = z: gather with the inverse permutation.
        let inv = jnp::argsort(&perm, None)?;
        jnp::take(&z, &inv, Some(0))?
    };
    if bs.len() == 1 {
        lax::squeeze(&x, &[1])
    } else {
        Ok(x)
    }
}

/// `vals[idx]` for a host-built index matrix of shape `shape`.
fn gather(vals: &Array, idx: Vec<i32>, shape: &[usize]) -> Result<Array> {
    jnp::take(vals, &Array::from_vec(idx, shape), None)
}

/// `jax.scipy.linalg.toeplitz(c, r)`: constant diagonals, first column `c`
/// and first row `r` (`r` defaults to `conj(c)`; `r[0]` is ignored).
pub fn toeplitz(c: &Array, r: Option<&Array>) -> Result<Array> {
    let m = vector("toeplitz", c)?;
    let r = match r {
        Some(r) => r.clone(),
        None => jnp::conj(c)?,
    };
    let n = vector("toeplitz", &r)?;
    let rs = jnp::flip(&lax::slice(&r, &[1.min(n)], &[n], None)?, None)?;
    let vals = jnp::concatenate(&[rs, c.clone()], 0)?;
    let off = n.saturating_sub(1) as i64;
    let idx = (0..m)
        .flat_map(|i| (0..n).map(move |j| (off + i as i64 - j as i64) as i32))
        .collect();
    gather(&vals, idx, &[m, n])
}

/// `jax.scipy.linalg.hankel(c, r)`: constant anti-diagonals, first column
/// `c`, last row `r` (zeros by default; `r[0]` is ignored).
pub fn hankel(c: &Array, r: Option<&Array>) -> Result<Array> {
    let m = vector("hankel", c)?;
    let r = match r {
        Some(r) => r.clone(),
        None => jnp::zeros_like(c)?,
    };
    let n = vector("hankel", &r)?;
    let vals = jnp::concatenate(&[c.clone(), lax::slice(&r, &[1.min(n)], &[n], None)?], 0)?;
    let idx = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i + j) as i32))
        .collect();
    gather(&vals, idx, &[m, n])
}

/// `jax.scipy.linalg.circulant(c)`: `C[i, j] = c[(i - j) mod n]`.
pub fn circulant(c: &Array) -> Result<Array> {
    let n = vector("circulant", c)?;
    let idx = (0..n)
        .flat_map(|i| (0..n).map(move |j| ((i + n - j) % n) as i32))
        .collect();
    gather(c, idx, &[n, n])
}

/// `jax.scipy.linalg.fiedler(a)`: `|a[i] - a[j]|`.
pub fn fiedler(a: &Array) -> Result<Array> {
    vector("fiedler", a)?;
    let d = jnp::subtract(&lax::expand_dims(a, &[1])?, &lax::expand_dims(a, &[0])?)?;
    jnp::abs(&d)
}

/// `jax.scipy.linalg.companion(a)`: the companion matrix of the
/// polynomial with coefficients `a` (highest degree first, `a[0] != 0`).
pub fn companion(a: &Array) -> Result<Array> {
    let n = vector("companion", a)?;
    if n < 2 {
        return Err(Error::InvalidArgument(
            "companion: the coefficients must have at least two values".into(),
        ));
    }
    let a = jnp::promote::promote_dtypes_inexact("companion", &[a])?.remove(0);
    let head = lax::slice(&a, &[0], &[1], None)?;
    let first = jnp::negative(&jnp::divide(&lax::slice(&a, &[1], &[n], None)?, &head)?)?;
    let rest = jnp::eye(n - 2, Some(n - 1), 0, a.dtype())?;
    jnp::concatenate(&[lax::expand_dims(&first, &[0])?, rest], 0)
}

/// `jax.scipy.linalg.leslie(f, s)`: fecundities `f` (length n) on the first
/// row, survival rates `s` (length n - 1) on the subdiagonal.
pub fn leslie(f: &Array, s: &Array) -> Result<Array> {
    let n = vector("leslie", f)?;
    let k = vector("leslie", s)?;
    if n < 1 || k + 1 != n {
        return Err(Error::InvalidArgument(format!(
            "leslie: s must have length len(f) - 1 = {}, got {k}",
            n as i64 - 1
        )));
    }
    let refs = [f, s];
    let v = jnp::promote::promote_dtypes("leslie", &refs)?;
    let (f, s) = (&v[0], &v[1]);
    let dt = f.dtype();
    let sub = jnp::concatenate(&[jnp::diag(s, 0)?, jnp::zeros(&[k, 1], dt)?], 1)?;
    jnp::concatenate(&[lax::expand_dims(f, &[0])?, sub], 0)
}

/// `jax.scipy.linalg.hilbert(n)`: `1 / (i + j + 1)` in `f32`.
pub fn hilbert(n: usize) -> Result<Array> {
    let v = (0..n)
        .flat_map(|i| (0..n).map(move |j| 1.0 / (i + j + 1) as f32))
        .collect();
    Ok(Array::from_vec::<f32>(v, &[n, n]))
}

/// `jax.scipy.linalg.helmert(n, full)`: the Helmert matrix in `f32` (its
/// first row `1/sqrt(n)` only when `full`).
pub fn helmert(n: usize, full: bool) -> Result<Array> {
    if n == 0 {
        return Err(Error::InvalidArgument("helmert: n must be positive".into()));
    }
    let mut rows = Vec::with_capacity(n * n);
    for i in 0..n {
        let d = if i == 0 {
            n as f64
        } else {
            (i * (i + 1)) as f64
        };
        for j in 0..n {
            let h = if i == 0 || j < i {
                1.0
            } else if j == i {
                -(i as f64)
            } else {
                0.0
            };
            rows.push((h / d.sqrt()) as f32);
        }
    }
    let skip = if full { 0 } else { n };
    let m = if full { n } else { n - 1 };
    Ok(Array::from_vec::<f32>(rows[skip..].to_vec(), &[m, n]))
}

/// `jax.scipy.linalg.hadamard(n, dtype)`: Sylvester's construction, `n` a
/// power of two.
pub fn hadamard(n: usize, dtype: DType) -> Result<Array> {
    if n == 0 || !n.is_power_of_two() {
        return Err(Error::InvalidArgument(format!(
            "hadamard: n must be a positive power of 2, got {n}"
        )));
    }
    let v: Vec<i32> = (0..n)
        .flat_map(|i| (0..n).map(move |j| if (i & j).count_ones() % 2 == 0 { 1 } else { -1 }))
        .collect();
    lax::convert_element_type(&Array::from_vec(v, &[n, n]), dtype, false)
}

/// `jax.scipy.linalg.schur(a, output)`: `(t, z)` with `a = z t z^T`, staged
/// as JAX stages it (a `jit` named `_schur` around one `schur` equation).
/// `output` is `"real"` (quasi upper triangular `t`); `"complex"` needs
/// complex decompositions, which jaxon does not have yet: an error.
pub fn schur(a: &Array, output: &str) -> Result<(Array, Array)> {
    matrix("schur", a)?;
    match output {
        "real" => {}
        "complex" => {
            return Err(Error::Unsupported(
                "schur: output='complex' is not supported yet (no complex decompositions)".into(),
            ))
        }
        o => {
            return Err(Error::InvalidArgument(format!(
                "schur: output must be 'real' or 'complex', got '{o}'"
            )))
        }
    }
    let f = |x: &[Array]| la::schur(&x[0], true, false);
    let args = vec![a.clone()];
    let top = crate::core::find_top_trace(&args)?;
    let outs = if top.trace().as_any().is::<crate::eval::EvalTrace>() {
        f(&args)?
    } else {
        crate::jit::jit(move |x: Vec<Array>| crate::error::ok_or_raise(f(&x)))
            .name("_schur")
            .call(args)?
    };
    let [t, z]: [Array; 2] = outs
        .try_into()
        .map_err(|_| Error::InvalidArgument("schur: expected two results".into()))?;
    Ok((t, z))
}
