//! `jnp.linalg`: decompositions, solves, determinants, norms and inverses
//! on top of the `lax.linalg` primitives, over the two trailing axes (any
//! leading axes are a batch).
//!
//! Invariants: results match JAX's values; `cholesky` stages as JAX does
//! (`jit[name=cholesky]`: symmetrize, factor, mask the upper triangle);
//! `solve`/`inv` factor with `lu` and solve with two triangular solves
//! directly (JAX wraps the solve in `custom_linear_solve`, so the staged
//! text differs while the values and derivatives agree).

use super::wrap::{jitted, lit};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::lax::linalg::{self as la, mt};
use crate::numpy as jnp;
use jaxon_ir::primitive::TriangularSolveParams;

fn square(name: &str, a: &Array) -> Result<usize> {
    let s = a.try_shape()?;
    match s.as_slice() {
        [.., m, n] if m == n => Ok(*n),
        _ => Err(Error::InvalidArgument(format!(
            "{name}: expected square matrices, got shape {s:?}"
        ))),
    }
}

fn tri(a: &Array, b: &Array, left: bool, lower: bool, trans: bool, unit: bool) -> Result<Array> {
    la::triangular_solve(
        a,
        b,
        TriangularSolveParams {
            left_side: left,
            lower,
            transpose_a: trans,
            conjugate_a: false,
            unit_diagonal: unit,
        },
    )
}

/// The lower triangle mask applied as JAX's `_tril`: `select_n(row >= col,
/// 0, x)`.
pub(crate) fn mask_tril(x: &Array) -> Result<Array> {
    let shape = x.try_shape()?;
    let r = shape.len();
    if r < 2 {
        return Err(Error::InvalidArgument("expected a matrix".into()));
    }
    let mask = super::creation::tri_mask(shape[r - 2], shape[r - 1], 0)?;
    let mask = lax::broadcast(&mask, &shape[..r - 2])?;
    lax::select_n(&mask, &[jnp::zeros_like(x)?, x.clone()])
}

/// `jnp.linalg.cholesky(a)`: the lower factor of `(a + a^T) / 2`.
pub fn cholesky(a: &Array) -> Result<Array> {
    square("cholesky", a)?;
    jitted("cholesky", vec![a.clone()], |x| {
        let x = &x[0];
        let s = jnp::divide(&jnp::add(x, &mt(x)?)?, &lit(2.0, x.dtype())?)?;
        mask_tril(&la::cholesky(&s)?)
    })
}

/// The diagonal of the trailing square matrices.
fn diag(x: &Array) -> Result<Array> {
    let n = square("diagonal", x)?;
    jnp::sum(&jnp::multiply(x, &la::eye_like(x, n, n)?)?, -1isize, false)
}

/// `P` (as a permutation matrix, `P a = L U`), `L` (unit lower) and `U`.
fn plu(a: &Array) -> Result<(Array, Array, Array, Array)> {
    let (lu, piv, perm) = la::lu(a)?;
    let n = square("lu", a)?;
    let iota = lax::iota(perm.dtype(), n)?;
    let p = jnp::equal(&lax::expand_dims(&perm, &[perm.ndim()])?, &iota)?;
    let p = lax::convert_element_type(&p, a.dtype(), false)?;
    Ok((p, lu, piv, perm))
}

/// `jnp.linalg.solve(a, b)`: `b` a matrix (`.. n x k`) or a vector (`.. n`).
pub fn solve(a: &Array, b: &Array) -> Result<Array> {
    let n = square("solve", a)?;
    let vector = b.ndim() + 1 == a.ndim() || b.ndim() == 1;
    let b2 = if vector {
        lax::expand_dims(b, &[b.ndim()])?
    } else {
        b.clone()
    };
    let (p, lu, _, _) = plu(a)?;
    let _ = n;
    let pb = jnp::matmul(&p, &b2)?;
    let y = tri(&lu, &pb, true, true, false, true)?;
    let x = tri(&lu, &y, true, false, false, false)?;
    if vector {
        lax::squeeze(&x, &[x.ndim() - 1])
    } else {
        Ok(x)
    }
}

/// `jnp.linalg.inv(a)`.
pub fn inv(a: &Array) -> Result<Array> {
    let n = square("inv", a)?;
    let e = jnp::broadcast_to(&la::eye_like(a, n, n)?, &a.try_shape()?)?;
    solve(a, &e)
}

/// `jnp.linalg.slogdet(a)`: `(sign, log|det|)`.
pub fn slogdet(a: &Array) -> Result<(Array, Array)> {
    let n = square("slogdet", a)?;
    let (_, lu, piv, _) = plu(a)?;
    let d = diag(&lu)?;
    let iota = lax::iota(piv.dtype(), n)?;
    let swaps = jnp::not_equal(&piv, &iota)?;
    let nswaps = jnp::sum(
        &lax::convert_element_type(&swaps, piv.dtype(), false)?,
        -1isize,
        false,
    )?;
    let parity = jnp::remainder(&nswaps, &lit(2.0, piv.dtype())?)?;
    let psign = lax::convert_element_type(
        &jnp::subtract(
            &lit(1.0, piv.dtype())?,
            &jnp::multiply(&parity, &lit(2.0, piv.dtype())?)?,
        )?,
        a.dtype(),
        false,
    )?;
    let dsign = jnp::prod(&jnp::sign(&d)?, -1isize, false)?;
    let logdet = jnp::sum(&jnp::log(&jnp::abs(&d)?)?, -1isize, false)?;
    Ok((jnp::multiply(&psign, &dsign)?, logdet))
}

/// `jnp.linalg.det(a)`.
pub fn det(a: &Array) -> Result<Array> {
    let (s, l) = slogdet(a)?;
    jnp::multiply(&s, &jnp::exp(&l)?)
}

/// `jnp.linalg.eigh(a)`: `(w, v)`, eigenvalues ascending, eigenvectors as
/// columns (the lower triangle of the symmetrized input).
pub fn eigh(a: &Array) -> Result<(Array, Array)> {
    square("eigh", a)?;
    let s = jnp::divide(&jnp::add(a, &mt(a)?)?, &lit(2.0, a.dtype())?)?;
    let (v, w) = la::eigh(&s, true, true)?;
    Ok((w, v))
}

/// `jnp.linalg.eigvalsh(a)`.
pub fn eigvalsh(a: &Array) -> Result<Array> {
    Ok(eigh(a)?.0)
}

/// `jnp.linalg.svd(a, full_matrices)`: `(u, s, vh)`.
pub fn svd(a: &Array, full_matrices: bool) -> Result<(Array, Array, Array)> {
    let v = la::svd(a, full_matrices, true)?;
    match <[Array; 3]>::try_from(v) {
        Ok([s, u, vt]) => Ok((u, s, vt)),
        Err(_) => Err(Error::InvalidArgument("svd: unexpected results".into())),
    }
}

/// `jnp.linalg.svd(a, compute_uv=False)`: the singular values.
pub fn svdvals(a: &Array) -> Result<Array> {
    la::svd(a, true, false)?
        .pop()
        .ok_or_else(|| Error::InvalidArgument("svd: no results".into()))
}

/// `jnp.linalg.qr(a, mode)`: `(q, r)`, `mode` "reduced" or "complete".
pub fn qr(a: &Array, mode: &str) -> Result<(Array, Array)> {
    let full = match mode {
        "reduced" => false,
        "complete" => true,
        m => return Err(Error::InvalidArgument(format!("qr: unknown mode {m:?}"))),
    };
    la::qr(a, full)
}

/// `jnp.linalg.norm(x, ord)` of matrices: `ord` one of "fro", "nuc", "1",
/// "-1", "2", "-2", "inf", "-inf".
pub fn matrix_norm(x: &Array, ord: &str) -> Result<Array> {
    let r = x.ndim();
    if r < 2 {
        return Err(Error::InvalidArgument("norm: expected a matrix".into()));
    }
    let (ra, ca) = (r as isize - 2, r as isize - 1);
    let abs = || jnp::abs(x);
    match ord {
        "fro" => jnp::sqrt(&jnp::sum(&jnp::multiply(x, x)?, vec![ra, ca], false)?),
        "nuc" => jnp::sum(&svdvals(x)?, -1isize, false),
        "2" => jnp::max(&svdvals(x)?, -1isize, false),
        "-2" => jnp::min(&svdvals(x)?, -1isize, false),
        "1" => jnp::max(&jnp::sum(&abs()?, ra, false)?, -1isize, false),
        "-1" => jnp::min(&jnp::sum(&abs()?, ra, false)?, -1isize, false),
        "inf" => jnp::max(&jnp::sum(&abs()?, ca, false)?, -1isize, false),
        "-inf" => jnp::min(&jnp::sum(&abs()?, ca, false)?, -1isize, false),
        o => Err(Error::InvalidArgument(format!(
            "norm: unknown matrix ord {o:?}"
        ))),
    }
}

/// `jnp.linalg.pinv(a)`: `V diag(1/s) U^T`, singular values below
/// `max(m, n) * eps * s_max` treated as zero.
pub fn pinv(a: &Array) -> Result<Array> {
    let s = a.try_shape()?;
    let (m, n) = match s.as_slice() {
        [.., m, n] => (*m, *n),
        _ => return Err(Error::InvalidArgument("pinv: expected a matrix".into())),
    };
    let (u, sv, vt) = svd(a, false)?;
    let eps = if a.dtype() == jaxon_ir::DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    };
    let smax = jnp::max(&sv, -1isize, true)?;
    let cutoff = jnp::multiply(&smax, &lit(m.max(n) as f64 * eps, a.dtype())?)?;
    let keep = jnp::greater(&sv, &cutoff)?;
    let inv = jnp::where_(
        &keep,
        &jnp::divide(&jnp::ones_like(&sv)?, &sv)?,
        &jnp::zeros_like(&sv)?,
    )?;
    let scaled = jnp::multiply(&mt(&vt)?, &lax::expand_dims(&inv, &[inv.ndim() - 1])?)?;
    jnp::matmul(&scaled, &mt(&u)?)
}

/// `jnp.linalg.matrix_power(a, n)` for `n >= 0` (repeated squaring), or
/// the inverse's power for `n < 0`.
pub fn matrix_power(a: &Array, n: i64) -> Result<Array> {
    let k = square("matrix_power", a)?;
    let mut base = if n < 0 { inv(a)? } else { a.clone() };
    let mut e = n.unsigned_abs();
    let mut acc: Option<Array> = None;
    if e == 0 {
        return jnp::broadcast_to(&la::eye_like(a, k, k)?, &a.try_shape()?);
    }
    while e > 0 {
        if e & 1 == 1 {
            acc = Some(match acc {
                Some(x) => jnp::matmul(&x, &base)?,
                None => base.clone(),
            });
        }
        e >>= 1;
        if e > 0 {
            base = jnp::matmul(&base, &base)?;
        }
    }
    acc.ok_or_else(|| Error::InvalidArgument("matrix_power".into()))
}

/// `jnp.linalg.lstsq(a, b)`'s solution: `pinv(a) b`.
pub fn lstsq(a: &Array, b: &Array) -> Result<Array> {
    jnp::matmul(&pinv(a)?, b)
}

/// `jnp.linalg.norm(x, ord, axis, keepdims)`. With `axis` `None`: the
/// 2-norm of all elements when `ord` is `None`, else a vector norm of a
/// 1-D `x` or a matrix norm of a 2-D one. One axis: a vector norm along
/// it (`ord` `None`/"2", "1", "inf", "-inf", "0" or a number `p`); two
/// axes: a matrix norm of those planes ([`matrix_norm`]'s `ord`s).
pub fn norm(x: &Array, ord: Option<&str>, axis: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let x = jnp::promote::promote_dtypes_inexact("norm", &[x])?.remove(0);
    let n = x.ndim();
    let axes: Vec<usize> = match axis {
        Some(a) => a
            .iter()
            .map(|&a| jnp::normalize_axis(a, n, "norm"))
            .collect::<Result<_>>()?,
        None if ord.is_none() => {
            let all: Vec<usize> = (0..n).collect();
            let sq = jnp::real(&jnp::multiply(&jnp::conj(&x)?, &x)?)?;
            return jnp::sqrt(&jnp::sum(&sq, all, keepdims)?);
        }
        None => (0..n).collect(),
    };
    match axes.as_slice() {
        [a] => {
            let abs = jnp::abs(&x)?;
            let a = *a as isize;
            match ord.unwrap_or("2") {
                "2" => jnp::sqrt(&jnp::sum(&jnp::multiply(&abs, &abs)?, a, keepdims)?),
                "1" => jnp::sum(&abs, a, keepdims),
                "inf" => jnp::max(&abs, a, keepdims),
                "-inf" => jnp::min(&abs, a, keepdims),
                "0" => {
                    let nz = jnp::not_equal(&abs, &lit(0.0, abs.dtype())?)?;
                    jnp::sum(&nz.astype(abs.dtype()), a, keepdims)
                }
                p => {
                    let p: f64 = p.parse().map_err(|_| {
                        Error::InvalidArgument(format!("norm: unknown vector ord {p:?}"))
                    })?;
                    let d = abs.dtype();
                    let s = jnp::sum(&jnp::power(&abs, &lit(p, d)?)?, a, keepdims)?;
                    jnp::power(&s, &lit(1.0 / p, d)?)
                }
            }
        }
        [r, c] => {
            let last = [n as isize - 2, n as isize - 1];
            let moved = jnp::moveaxis(&x, &[*r as isize, *c as isize], &last)?;
            let out = matrix_norm(&moved, ord.unwrap_or("fro"))?;
            if keepdims {
                let mut dims = [*r, *c];
                dims.sort_unstable();
                lax::expand_dims(&out, &dims)
            } else {
                Ok(out)
            }
        }
        _ => Err(Error::InvalidArgument(format!(
            "norm: takes one or two axes, got {axes:?} for {}",
            jaxon_ir::shape::fmt_aval(x.aval())
        ))),
    }
}

/// `jnp.linalg.matmul(a, b)`.
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    jnp::matmul(a, b)
}

/// `jnp.linalg.outer(a, b)` (1-D operands).
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    jnp::outer(a, b)
}

/// `jnp.linalg.tensordot(a, b, axes)`.
pub fn tensordot(a: &Array, b: &Array, axes: (&[isize], &[isize])) -> Result<Array> {
    jnp::tensordot(a, b, axes)
}

/// `jnp.linalg.trace(x, offset)`: over the last two axes.
pub fn trace(x: &Array, offset: isize) -> Result<Array> {
    jnp::trace(x, offset, -2, -1)
}

/// `jnp.linalg.diagonal(x, offset)`: over the last two axes.
pub fn diagonal(x: &Array, offset: isize) -> Result<Array> {
    jnp::diagonal(x, offset, -2, -1)
}

/// `jnp.linalg.matrix_transpose(x)`: the last two axes swapped.
pub fn matrix_transpose(x: &Array) -> Result<Array> {
    jnp::matrix_transpose(x)
}

/// `jnp.linalg.vecdot(a, b)`: over the last axes.
pub fn vecdot(a: &Array, b: &Array) -> Result<Array> {
    jnp::vecdot(a, b)
}

/// `jnp.linalg.cross(a, b)`: 3-vectors along the last axes.
pub fn cross(a: &Array, b: &Array) -> Result<Array> {
    if a.try_shape()?.last() != Some(&3) || b.try_shape()?.last() != Some(&3) {
        return Err(Error::InvalidArgument(
            "linalg.cross: both operands need a last axis of size 3".into(),
        ));
    }
    jnp::cross(a, b)
}

/// `jnp.linalg.vector_norm(x, axis, keepdims, ord)`: `ord` a number, or
/// `inf`/`-inf` as `f64::INFINITY`/`f64::NEG_INFINITY`; `axis` `None`
/// flattens.
pub fn vector_norm(x: &Array, axis: Option<&[isize]>, keepdims: bool, ord: f64) -> Result<Array> {
    let x = jnp::promote::promote_dtypes_inexact("vector_norm", &[x])?.remove(0);
    let all: Vec<isize> = (0..x.ndim() as isize).collect();
    let axes = axis.unwrap_or(&all).to_vec();
    let a = jnp::abs(&x)?;
    if ord == f64::INFINITY {
        return jnp::max(&a, axes.as_slice(), keepdims);
    }
    if ord == f64::NEG_INFINITY {
        return jnp::min(&a, axes.as_slice(), keepdims);
    }
    if ord == 0.0 {
        let nz = jnp::not_equal(&a, &lit(0.0, a.dtype())?)?;
        let nz = lax::convert_element_type(&nz, a.dtype(), false)?;
        return jnp::sum(&nz, axes.as_slice(), keepdims);
    }
    if ord == 1.0 {
        return jnp::sum(&a, axes.as_slice(), keepdims);
    }
    let p = lit(ord, a.dtype())?;
    let s = jnp::sum(&jnp::power(&a, &p)?, axes.as_slice(), keepdims)?;
    jnp::power(&s, &lit(1.0 / ord, a.dtype())?)
}

/// `jnp.linalg.multi_dot(arrays)`: the product of the matrices, left to
/// right (1-D ends as vectors).
pub fn multi_dot(arrays: &[Array]) -> Result<Array> {
    let (first, rest) = arrays
        .split_first()
        .ok_or_else(|| Error::InvalidArgument("multi_dot: expected at least two arrays".into()))?;
    if rest.is_empty() {
        return Err(Error::InvalidArgument(
            "multi_dot: expected at least two arrays".into(),
        ));
    }
    rest.iter()
        .try_fold(first.clone(), |acc, m| jnp::matmul(&acc, m))
}

/// `jnp.linalg.matrix_rank(m, rtol)`: singular values above
/// `rtol * max(s)` (default `rtol`: `max(m, n) * eps`).
pub fn matrix_rank(m: &Array, rtol: Option<f64>) -> Result<Array> {
    let (r, c) = match m.try_shape()?.as_slice() {
        [.., r, c] => (*r, *c),
        s => {
            return Err(Error::InvalidArgument(format!(
                "matrix_rank: expected a matrix, got shape {s:?}"
            )))
        }
    };
    let s = svdvals(m)?;
    let eps = match s.dtype() {
        jaxon_ir::DType::F64 => f64::EPSILON,
        _ => f32::EPSILON as f64,
    };
    let rtol = rtol.unwrap_or(r.max(c) as f64 * eps);
    let smax = jnp::max(&s, -1isize, true)?;
    let tol = jnp::multiply(&smax, &lit(rtol, s.dtype())?)?;
    let above = jnp::greater(&s, &tol)?;
    jnp::sum(
        &lax::convert_element_type(&above, jaxon_ir::DType::I32, false)?,
        -1isize,
        false,
    )
}

/// `jnp.linalg.cond(x)` (the 2-norm condition number): the largest
/// singular value over the smallest.
pub fn cond(x: &Array) -> Result<Array> {
    let s = svdvals(x)?;
    let hi = jnp::max(&s, -1isize, false)?;
    let lo = jnp::min(&s, -1isize, false)?;
    jnp::divide(&hi, &lo)
}
