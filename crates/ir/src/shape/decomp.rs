//! Shape rules of the matrix decompositions and solves: `cholesky`,
//! `triangular_solve`, `lu`, `qr`, `eigh`, `svd`, `schur`, `tridiagonal_solve`.
//!
//! Invariants: the matrices are the two trailing dims (static sizes), any
//! leading dims are batch dims shared by every operand; operands are
//! floating.

use super::{fmt_ty, Cx};
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{QrParams, SchurParams, SvdParams, TriangularSolveParams};

/// Operand `i` as a floating array of rank at least `min_rank` whose
/// trailing `min_rank` dims are static: the array, its batch dims and its
/// trailing sizes.
fn operand<'a>(
    cx: &'a Cx,
    i: usize,
    min_rank: usize,
) -> Result<(&'a ShapedArray, Vec<Dim>, Vec<usize>), IrError> {
    let x = cx.arr(i)?;
    if !x.dtype.is_float() {
        return Err(cx.err(format!("operand {i} must be floating, got {}", fmt_ty(x))));
    }
    if x.ndim() < min_rank {
        return Err(cx.err(format!(
            "operand {i} must have rank at least {min_rank}, got {}",
            fmt_ty(x)
        )));
    }
    let split = x.ndim() - min_rank;
    let mut tail = Vec::with_capacity(min_rank);
    for d in &x.shape[split..] {
        match d {
            Dim::Const(n) => tail.push(*n),
            Dim::Var(_) => {
                return Err(cx.err(format!(
                    "operand {i}'s matrix dims must be static, got {}",
                    fmt_ty(x)
                )))
            }
        }
    }
    Ok((x, x.shape[..split].to_vec(), tail))
}

fn arr(dtype: DType, batch: &[Dim], tail: &[usize]) -> ShapedArray {
    let mut shape = batch.to_vec();
    shape.extend(tail.iter().map(|&n| Dim::Const(n)));
    ShapedArray::new(dtype, shape)
}

fn same_batch(cx: &Cx, a: &[Dim], b: &[Dim], what: &str) -> Result<(), IrError> {
    if a != b {
        return Err(cx.err(format!("{what}: batch dims differ")));
    }
    Ok(())
}

/// A square matrix operand: its type, batch dims and size.
fn square<'a>(cx: &'a Cx) -> Result<(&'a ShapedArray, Vec<Dim>, usize), IrError> {
    let (x, batch, t) = operand(cx, 0, 2)?;
    if t[0] != t[1] {
        return Err(cx.err(format!("expected square matrices, got {}", fmt_ty(x))));
    }
    Ok((x, batch, t[0]))
}

/// `cholesky x`: the same type.
pub(crate) fn cholesky(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let (x, batch, n) = square(cx)?;
    Ok(arr(x.dtype, &batch, &[n, n]))
}

/// `triangular_solve a b`: `b`'s type.
pub(crate) fn triangular_solve(cx: &Cx, p: &TriangularSolveParams) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (a, ab, m) = square(cx)?;
    let (b, bb, bt) = operand(cx, 1, 2)?;
    same_batch(cx, &ab, &bb, "a and b")?;
    if a.dtype != b.dtype {
        return Err(cx.err(format!("dtypes differ: {} and {}", fmt_ty(a), fmt_ty(b))));
    }
    let k = if p.left_side { bt[0] } else { bt[1] };
    if k != m {
        return Err(cx.err(format!(
            "a {} does not fit b {} (left_side={})",
            fmt_ty(a),
            fmt_ty(b),
            p.left_side
        )));
    }
    Ok(arr(b.dtype, &bb, &bt))
}

/// `lu x`: `(lu, pivots: i32[.., k], permutation: i32[.., m])`.
pub(crate) fn lu(cx: &Cx) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    let (x, batch, t) = operand(cx, 0, 2)?;
    let (m, n) = (t[0], t[1]);
    Ok(vec![
        arr(x.dtype, &batch, &[m, n]),
        arr(DType::I32, &batch, &[m.min(n)]),
        arr(DType::I32, &batch, &[m]),
    ])
}

/// `qr x`: `(q, r)`.
pub(crate) fn qr(cx: &Cx, p: &QrParams) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    if p.pivoting {
        return Err(cx.err("pivoting=True is not supported"));
    }
    let (x, batch, t) = operand(cx, 0, 2)?;
    let (m, n) = (t[0], t[1]);
    let qc = if p.full_matrices { m } else { m.min(n) };
    Ok(vec![
        arr(x.dtype, &batch, &[m, qc]),
        arr(x.dtype, &batch, &[qc, n]),
    ])
}

/// `eigh x`: `(v, w)`.
pub(crate) fn eigh(cx: &Cx) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    let (x, batch, n) = square(cx)?;
    Ok(vec![
        arr(x.dtype, &batch, &[n, n]),
        arr(x.dtype, &batch, &[n]),
    ])
}

/// `schur x`: `(t,)` or `(t, z)`, both of `x`'s type; real operands only.
pub(crate) fn schur(cx: &Cx, p: &SchurParams) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    if p.sort_eig_vals {
        return Err(cx.err("sort_eig_vals=True is not supported"));
    }
    let (x, batch, n) = square(cx)?;
    let t = arr(x.dtype, &batch, &[n, n]);
    Ok(if p.compute_schur_vectors {
        vec![t.clone(), t]
    } else {
        vec![t]
    })
}

/// `svd x`: `(s,)` or `(s, u, vt)`.
pub(crate) fn svd(cx: &Cx, p: &SvdParams) -> Result<Vec<ShapedArray>, IrError> {
    cx.arity(1)?;
    let (x, batch, t) = operand(cx, 0, 2)?;
    let (m, n) = (t[0], t[1]);
    let k = m.min(n);
    let s = arr(x.dtype, &batch, &[k]);
    if !p.compute_uv {
        return Ok(vec![s]);
    }
    let (uc, vr) = if p.full_matrices { (m, n) } else { (k, k) };
    Ok(vec![
        s,
        arr(x.dtype, &batch, &[m, uc]),
        arr(x.dtype, &batch, &[vr, n]),
    ])
}

/// `tridiagonal_solve dl d du b`: `b`'s type.
pub(crate) fn tridiagonal_solve(cx: &Cx, perturb_singular: bool) -> Result<ShapedArray, IrError> {
    cx.arity(4)?;
    if perturb_singular {
        return Err(cx.err("perturb_singular=True is not supported"));
    }
    let (b, bb, bt) = operand(cx, 3, 2)?;
    for i in 0..3 {
        let (x, xb, xt) = operand(cx, i, 1)?;
        same_batch(cx, &xb, &bb, "diagonals and b")?;
        if x.dtype != b.dtype || xt[0] != bt[0] {
            return Err(cx.err(format!(
                "diagonal {} does not fit b {}",
                fmt_ty(x),
                fmt_ty(b)
            )));
        }
    }
    Ok(arr(b.dtype, &bb, &bt))
}
