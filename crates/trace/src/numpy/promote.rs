//! JAX's implicit promotion for the NumPy API: dtypes (with weak types) and
//! rank promotion, lowered to the same primitive sequence as `jnp`.
//!
//! Rules: weak types follow JAX's lattice; a 64-bit result that no operand
//! explicitly has (Rust scalars, `i32 + u32`) gets the 32-bit dtype, as in
//! JAX's default x32 mode, while explicitly 64-bit arrays keep their width. Rank-0 operands are not broadcast (the
//! primitives accept them); other operands of lower rank get leading
//! size-1 dimensions through `broadcast_in_dim`.

use super::config::{dtype_promotion, rank_promotion, DtypePromotion, RankPromotion};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// The dtype and weak flag `op`'s operands promote to.
pub fn result_type(op: &str, args: &[&Array]) -> Result<(DType, bool)> {
    let pairs: Vec<(DType, bool)> = args.iter().map(|a| (a.dtype(), a.weak_type())).collect();
    if dtype_promotion() == DtypePromotion::Strict && !strict_allows(&pairs) {
        let names: Vec<String> = pairs
            .iter()
            .map(|&(d, w)| {
                if w {
                    format!("weak {d}")
                } else {
                    d.to_string()
                }
            })
            .collect();
        return Err(Error::InvalidArgument(format!(
            "{op}: input dtypes ({}) have no implicit promotion path when \
             numpy_dtype_promotion is strict; cast the inputs explicitly",
            names.join(", ")
        )));
    }
    let (mut dtype, weak) = jaxon_ir::result_type(&pairs).map_err(|e| Error::DTypeMismatch {
        op: op.to_string(),
        lhs: args.first().map(|a| fmt_aval(a.aval())).unwrap_or_default(),
        rhs: format!("{e}"),
    })?;
    // JAX's x32 mode canonicalises 64-bit results (`i32 + u32` is `i64` in
    // the lattice, `i32` in JAX); jaxon keeps 64 bits only when an operand
    // explicitly has them.
    let has = |d: DType| pairs.iter().any(|&(x, _)| x == d);
    dtype = match dtype {
        DType::F64 if !has(DType::F64) => DType::F32,
        DType::I64 if !has(DType::I64) && !has(DType::U64) => DType::I32,
        DType::U64 if !has(DType::U64) => DType::U32,
        d => d,
    };
    Ok((dtype, weak))
}

/// Whether strict dtype promotion allows these operands: the strongly
/// typed ones share one dtype, and each weakly typed one (a Rust literal)
/// is of that dtype's kind or a narrower one (a weak int joins integers,
/// floats and complex numbers; a weak float joins floats and complex
/// numbers), as JAX's strict lattice.
fn strict_allows(pairs: &[(DType, bool)]) -> bool {
    let mut strong = pairs.iter().filter(|(_, w)| !w).map(|&(d, _)| d);
    let Some(d) = strong.next() else {
        return true;
    };
    let reaches = |w: DType| {
        if w.is_int() {
            d.is_int() || d.is_inexact()
        } else if w.is_float() {
            d.is_inexact()
        } else if w.is_complex() {
            d.is_complex()
        } else {
            w == d
        }
    };
    strong.all(|s| s == d) && pairs.iter().filter(|(_, w)| *w).all(|&(w, _)| reaches(w))
}

/// Converts every operand to `op`'s promoted dtype.
pub fn promote_dtypes(op: &str, args: &[&Array]) -> Result<Vec<Array>> {
    let (dtype, weak) = result_type(op, args)?;
    args.iter()
        .map(|a| lax::convert_element_type(a, dtype, weak))
        .collect()
}

/// The default float dtype results of `sin`, `/` and friends take.
pub fn float_dtype_of(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        DType::F32
    }
}

/// Like [`promote_dtypes`], then casts non-floats to the default float.
pub fn promote_dtypes_inexact(op: &str, args: &[&Array]) -> Result<Vec<Array>> {
    let (dtype, weak) = result_type(op, args)?;
    let dtype = float_dtype_of(dtype);
    args.iter()
        .map(|a| lax::convert_element_type(a, dtype, weak))
        .collect()
}

/// NumPy broadcasting of two shapes, naming both on failure.
pub fn broadcast_shapes(op: &str, a: &Array, b: &Array) -> Result<Vec<usize>> {
    broadcast_shape_lists(op, &a.try_shape()?, &b.try_shape()?).map_err(|_| Error::ShapeMismatch {
        op: op.to_string(),
        lhs: fmt_aval(a.aval()),
        rhs: fmt_aval(b.aval()),
    })
}

/// NumPy broadcasting of two static shapes.
pub fn broadcast_shape_lists(op: &str, sa: &[usize], sb: &[usize]) -> Result<Vec<usize>> {
    let n = sa.len().max(sb.len());
    let pad = |s: &[usize]| {
        let mut v = vec![1; n - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (pa, pb) = (pad(sa), pad(sb));
    pa.iter()
        .zip(&pb)
        .map(|(&x, &y)| match (x, y) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(Error::ShapeMismatch {
                op: op.to_string(),
                lhs: format!("{sa:?}"),
                rhs: format!("{sb:?}"),
            }),
        })
        .collect()
}

/// Under `numpy_rank_promotion` `raise` (`warn`), operands of different
/// nonzero ranks are an error (a warning) naming their types.
fn check_rank_promotion(op: &str, args: &[Array]) -> Result<()> {
    let mode = rank_promotion();
    if mode == RankPromotion::Allow {
        return Ok(());
    }
    let mut ranked = args.iter().filter(|a| a.ndim() > 0);
    let Some(first) = ranked.next() else {
        return Ok(());
    };
    let Some(other) = ranked.find(|a| a.ndim() != first.ndim()) else {
        return Ok(());
    };
    let (lhs, rhs) = (fmt_aval(first.aval()), fmt_aval(other.aval()));
    match mode {
        RankPromotion::Raise => Err(Error::InvalidArgument(format!(
            "{op}: operands of types {lhs} and {rhs} would need implicit rank promotion, \
             which numpy_rank_promotion forbids (raise); add the axes explicitly"
        ))),
        RankPromotion::Warn => {
            tracing::warn!("{op}: implicit rank promotion of {lhs} and {rhs}");
            Ok(())
        }
        RankPromotion::Allow => Ok(()),
    }
}

/// Rank promotion: operands of rank > 0 below the highest rank get leading
/// size-1 dimensions. Checks the shapes broadcast.
pub fn promote_shapes(op: &str, args: Vec<Array>) -> Result<Vec<Array>> {
    // Fast path: equal shapes, or scalars against one shape (the common
    // `x * 2.0`), need neither checks nor broadcasts.
    let mut shaped = args.iter().map(|a| &a.ty().shape).filter(|s| !s.is_empty());
    if let Some(first) = shaped.next() {
        if shaped.all(|s| s == first) {
            return Ok(args);
        }
    } else {
        return Ok(args);
    }
    check_rank_promotion(op, &args)?;
    // Dynamic dimensions are equal only when they are the same variable;
    // only a static 1 broadcasts against them.
    if args.iter().any(crate::dynshape::is_dynamic) {
        return broadcast_dynamic(op, args, true);
    }
    for i in 1..args.len() {
        broadcast_shapes(op, &args[0], &args[i])?;
    }
    let rank = args.iter().map(Array::ndim).max().unwrap_or(0);
    args.into_iter()
        .map(|a| {
            let nd = a.ndim();
            if nd == 0 || nd == rank {
                Ok(a)
            } else {
                let mut shape = vec![1; rank - nd];
                shape.extend(a.try_shape()?);
                let dims: Vec<usize> = (rank - nd..rank).collect();
                lax::broadcast_in_dim(&a, &shape, &dims)
            }
        })
        .collect()
}

/// NumPy broadcasting of `args` where some sizes are traced: per axis the
/// sizes must be the same (a dynamic size is the same only as itself) or a
/// static 1, which broadcasts. Every operand is broadcast to the common
/// sizes, except scalars when `keep_scalars`. Errors name both types.
pub fn broadcast_dynamic(op: &str, args: Vec<Array>, keep_scalars: bool) -> Result<Vec<Array>> {
    use crate::dynshape::{self as dyn_, Size};
    let rank = args.iter().map(Array::ndim).max().unwrap_or(0);
    let padded = |a: &Array| -> Result<Vec<Size>> {
        let mut v = vec![Size::Const(1); rank - a.ndim()];
        v.extend(dyn_::sizes(a)?);
        Ok(v)
    };
    let mut out: Vec<Size> = vec![Size::Const(1); rank];
    let mut from: Vec<usize> = vec![0; rank];
    for (i, a) in args.iter().enumerate() {
        for (axis, s) in padded(a)?.into_iter().enumerate() {
            if matches!(s, Size::Const(1)) {
                continue;
            }
            if matches!(out[axis], Size::Const(1)) {
                out[axis] = s;
                from[axis] = i;
            } else if !out[axis].same(&s) {
                return Err(Error::ShapeMismatch {
                    op: op.to_string(),
                    lhs: fmt_aval(args[from[axis]].aval()),
                    rhs: fmt_aval(a.aval()),
                });
            }
        }
    }
    args.into_iter()
        .map(|a| {
            if a.ndim() == 0 && keep_scalars {
                return Ok(a);
            }
            let lead = rank - a.ndim();
            let sizes = dyn_::sizes(&a)?;
            if lead == 0 && sizes.iter().zip(&out).all(|(x, y)| x.same(y)) {
                return Ok(a);
            }
            // Size-1 dimensions that grow are squeezed first.
            let mut squeeze = Vec::new();
            let mut dims = Vec::new();
            for (k, s) in sizes.iter().enumerate() {
                if s.same(&out[lead + k]) {
                    dims.push(lead + k);
                } else {
                    squeeze.push(k);
                }
            }
            let a = if squeeze.is_empty() {
                a
            } else {
                lax::squeeze(&a, &squeeze)?
            };
            dyn_::broadcast_in_dim(&a, &out, &dims)
        })
        .collect()
}

/// Promotes dtypes and shapes of the operands of a NumPy binary op.
pub fn promote_args(op: &str, args: &[&Array]) -> Result<Vec<Array>> {
    promote_shapes(op, promote_dtypes(op, args)?)
}

/// Like [`promote_args`], casting to a float dtype.
pub fn promote_args_inexact(op: &str, args: &[&Array]) -> Result<Vec<Array>> {
    promote_shapes(op, promote_dtypes_inexact(op, args)?)
}

/// Broadcasts `x` to `shape` (NumPy's `broadcast_to`).
pub fn broadcast_to(x: &Array, shape: &[usize]) -> Result<Array> {
    let xs = x.try_shape()?;
    if xs.as_slice() == shape {
        return Ok(x.clone());
    }
    if xs.len() > shape.len() {
        return Err(Error::ShapeMismatch {
            op: "broadcast_to".into(),
            lhs: fmt_aval(x.aval()),
            rhs: format!("{shape:?}"),
        });
    }
    let lead = shape.len() - xs.len();
    // Size-1 dimensions that grow are squeezed first, as jnp does.
    let mut squeeze = Vec::new();
    let mut dims = Vec::new();
    for (i, &d) in xs.iter().enumerate() {
        let target = shape[lead + i];
        if d == target {
            dims.push(lead + i);
        } else if d == 1 {
            squeeze.push(i);
        } else {
            return Err(Error::ShapeMismatch {
                op: "broadcast_to".into(),
                lhs: fmt_aval(x.aval()),
                rhs: format!("{shape:?}"),
            });
        }
    }
    let x = lax::squeeze(x, &squeeze)?;
    lax::broadcast_in_dim(&x, shape, &dims)
}
