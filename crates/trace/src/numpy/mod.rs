//! `numpy`: JAX's `jnp` API over `Array`s — broadcasting, promotion with
//! weak types, reductions over axes, creation functions and linear algebra.
//!
//! Invariant: each function lowers to the primitive sequence JAX 0.10's
//! `jnp` emits for the same call, so staged jaxprs print as JAX's do.

mod aliases;
mod block;
mod complex;
mod config;
mod creation;
mod dtypes;
mod einsum;
pub mod fft;
mod histogram;
mod integer;
pub mod linalg;
mod manip;
mod nan;
mod nanstats;
mod order;
mod poly;
mod products;
pub mod promote;
mod reductions;
mod search;
mod sets;
mod shapes;
mod splits;
mod stats;
mod windows;
mod wrap;

pub use aliases::*;
pub use block::{block, Block};
pub use complex::{angle, conj, conjugate, imag, real};
pub use config::{
    dtype_promotion, numpy_dtype_promotion, numpy_rank_promotion, rank_promotion, DtypePromotion,
    PromotionGuard, RankPromotion,
};
pub use creation::{arange_dtype, arange_range, eye, linspace, tri, tril, triu};
pub use dtypes::{
    asarray, bitwise_count, iscomplexobj, isrealobj, issubdtype, promote_types, DTypeCategory,
};
pub use einsum::einsum;
pub use histogram::{histogram, histogram_bin_edges, interp, Bins};
pub use integer::{gcd, lcm};
pub(crate) use manip::gather as manip_gather;
pub use manip::{
    argsort, cummax, cummin, cumprod, cumsum, lexsort, pad, sort, split, take, take_along_axis,
    Sections,
};
pub(crate) use manip::{gather, wrap_negative};
pub use nan::{
    allclose, isclose, isfinite, isinf, isnan, nan_to_num, nanmax, nanmean, nanmin, nanprod, nansum,
};
pub use nanstats::{
    nanargmax, nanargmin, nancumprod, nancumsum, nanmedian, nanpercentile, nanquantile, nanstd,
    nanvar,
};
pub use order::{average, corrcoef, cov, median, percentile, quantile};
pub use poly::{poly, polyadd, polyder, polyfit, polyint, polymul, polysub, vander};
pub use products::{
    convolve, correlate, cross, diff, ediff1d, inner, kron, matvec, meshgrid, outer, polyval,
    tensordot, trapezoid, vdot, vecdot, vecmat, ConvolveMode,
};
pub use promote::{broadcast_shapes, broadcast_to, result_type};
pub use reductions::*;
pub use search::{bincount, repeat, searchsorted};
pub use sets::{
    argwhere, digitize, flatnonzero, isin, nonzero, unique, unique_all, unique_all_axis,
    unique_axis, unique_counts, unique_inverse, unique_values, UniqueAll,
};
pub use shapes::*;
pub use splits::{
    array_split, diag_indices, diag_indices_from, dsplit, hsplit, tril_indices, tril_indices_from,
    triu_indices, triu_indices_from, vsplit,
};
pub use stats::{logsumexp, std, var};
pub use windows::{bartlett, blackman, hamming, hanning, kaiser};
pub(crate) use wrap::jitted;

use crate::array::{Array, Element, WeakScalar};
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::DotDimensionNumbers;
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;
use promote::{promote_args, promote_args_inexact, promote_dtypes_inexact};

macro_rules! inexact_unary {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`jnp.", stringify!($name), "` (integers become `f32`).")]
        pub fn $name(x: &Array) -> Result<Array> {
            let x = promote_dtypes_inexact(stringify!($name), &[x])?.remove(0);
            lax::unary(UnaryOp::$op, &x)
        }
    )*};
}

inexact_unary! {
    sin => Sin, cos => Cos, tan => Tan, arcsin => Asin, arccos => Acos,
    arctan => Atan, sinh => Sinh, cosh => Cosh, tanh => Tanh,
    arcsinh => Asinh, arccosh => Acosh, arctanh => Atanh,
    exp => Exp, exp2 => Exp2, log => Log, log1p => Log1p, expm1 => Expm1,
    sqrt => Sqrt, cbrt => Cbrt,
}

macro_rules! exact_unary {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`jnp.", stringify!($name), "`.")]
        pub fn $name(x: &Array) -> Result<Array> {
            lax::unary(UnaryOp::$op, x)
        }
    )*};
}

exact_unary! { negative => Neg, sign => Sign, abs => Abs, square => Square }

/// `jnp.floor` (a no-op on integers, as in JAX).
pub fn floor(x: &Array) -> Result<Array> {
    if x.dtype().is_float() {
        lax::floor(x)
    } else {
        Ok(x.clone())
    }
}

/// `jnp.round(x, decimals)` (`around`): halves to even, at `decimals`
/// digits after the point (before it when negative) by scaling, as JAX
/// does (f16 scales in f32). A no-op on integers with `decimals >= 0`.
pub fn round(x: &Array, decimals: i32) -> Result<Array> {
    use jaxon_ir::primitive::RoundingMethod::ToNearestEven;
    let dt = x.dtype();
    if !dt.is_float() {
        return if decimals >= 0 {
            Ok(x.clone())
        } else {
            Err(Error::InvalidArgument(format!(
                "round: integer inputs take decimals >= 0, got {decimals}"
            )))
        };
    }
    if decimals == 0 {
        return lax::round(x, ToNearestEven);
    }
    let max = match dt {
        DType::F16 => half::f16::MAX.to_f64(),
        DType::BF16 => half::bf16::MAX.to_f64(),
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    if decimals as f64 > max.log10() {
        return Ok(x.clone());
    }
    let xs = if dt == DType::F16 {
        lax::convert_element_type(x, DType::F32, false)?
    } else {
        x.clone()
    };
    let factor =
        lax::convert_element_type(&Array::scalar(10f64.powi(decimals)), xs.dtype(), false)?;
    let out = lax::div(
        &lax::round(&lax::mul(&xs, &factor)?, ToNearestEven)?,
        &factor,
    )?;
    if dt == DType::F16 {
        lax::convert_element_type(&out, dt, false)
    } else {
        Ok(out)
    }
}

/// `jnp.ceil` (a no-op on integers).
pub fn ceil(x: &Array) -> Result<Array> {
    if x.dtype().is_float() {
        lax::ceil(x)
    } else {
        Ok(x.clone())
    }
}

/// `jnp.logical_not` / `~` on bools, bitwise not on integers.
pub fn logical_not(x: &Array) -> Result<Array> {
    lax::not(x)
}

macro_rules! promoting_binary {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`jnp.", stringify!($name), "` with broadcasting and promotion.")]
        pub fn $name(x: &Array, y: &Array) -> Result<Array> {
            let a = promote_args(stringify!($name), &[x, y])?;
            lax::binary(BinaryOp::$op, &a[0], &a[1])
        }
    )*};
}

/// `jnp.add` (`+`); on bools it is `logical_or`, as in NumPy.
pub fn add(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("add", &[x, y])?;
    let op = if a[0].dtype() == DType::Bool {
        BinaryOp::Or
    } else {
        BinaryOp::Add
    };
    lax::binary(op, &a[0], &a[1])
}

/// `jnp.multiply` (`*`); on bools it is `logical_and`, as in NumPy.
pub fn multiply(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("multiply", &[x, y])?;
    let op = if a[0].dtype() == DType::Bool {
        BinaryOp::And
    } else {
        BinaryOp::Mul
    };
    lax::binary(op, &a[0], &a[1])
}

promoting_binary! {
    subtract => Sub, maximum => Max, minimum => Min,
    equal => Eq, not_equal => Ne, less => Lt, less_equal => Le,
    greater => Gt, greater_equal => Ge,
    bitwise_and => And, bitwise_or => Or, bitwise_xor => Xor,
    left_shift => ShiftLeft, right_shift => ShiftRightArithmetic,
}

/// `jnp.logical_and` (bools).
pub fn logical_and(x: &Array, y: &Array) -> Result<Array> {
    bitwise_and(x, y)
}

/// `jnp.logical_or` (bools).
pub fn logical_or(x: &Array, y: &Array) -> Result<Array> {
    bitwise_or(x, y)
}

/// `jnp.true_divide` (`/`): integers divide as floats.
pub fn divide(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args_inexact("divide", &[x, y])?;
    lax::div(&a[0], &a[1])
}

/// `jnp.arctan2`.
pub fn arctan2(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args_inexact("arctan2", &[x, y])?;
    lax::atan2(&a[0], &a[1])
}

/// `jnp.floor_divide` (`//`).
pub fn floor_divide(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("floor_divide", &[x, y])?;
    if a[0].dtype().is_float() {
        return lax::floor(&lax::div(&a[0], &a[1])?);
    }
    // Integer division rounds toward zero; step down where the signs differ
    // and there is a remainder, as NumPy does.
    let q = lax::div(&a[0], &a[1])?;
    if a[0].dtype().is_unsigned_int() {
        return Ok(q);
    }
    let zero = lax::convert_element_type(&Array::weak(0), a[0].dtype(), false)?;
    let r = lax::rem(&a[0], &a[1])?;
    let sx = lax::lt(&a[0], &zero)?;
    let sy = lax::lt(&a[1], &zero)?;
    let differ = lax::ne(&sx, &sy)?;
    let nonzero = lax::ne(&r, &zero)?;
    let fix = lax::bitwise_and(&differ, &nonzero)?;
    let one = lax::convert_element_type(&Array::weak(1), a[0].dtype(), false)?;
    let q1 = lax::sub(&q, &one)?;
    lax::select_n(&fix, &[q, q1])
}

/// `jnp.remainder` (`%`): the result takes the divisor's sign.
pub fn remainder(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("remainder", &[x, y])?;
    let r = lax::rem(&a[0], &a[1])?;
    if a[0].dtype().is_unsigned_int() {
        return Ok(r);
    }
    let zero = lax::convert_element_type(&Array::weak(0), a[0].dtype(), false)?;
    let rs = lax::lt(&r, &zero)?;
    let ys = lax::lt(&a[1], &zero)?;
    let differ = lax::ne(&rs, &ys)?;
    let nonzero = lax::ne(&r, &zero)?;
    let fix = lax::bitwise_and(&differ, &nonzero)?;
    let shifted = lax::add(&r, &a[1])?;
    lax::select_n(&fix, &[r, shifted])
}

/// `jnp.power` (`**`). An integer Rust exponent becomes `integer_pow`.
pub fn power(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("power", &[x, y])?;
    lax::pow(&a[0], &a[1])
}

/// `x ** n` for a static integer `n` (`integer_pow`, as JAX does for a
/// Python int exponent).
pub fn power_int(x: &Array, n: i64) -> Result<Array> {
    lax::integer_pow(x, n)
}

/// `jnp.where(condition, x, y)`: `x` where `condition` holds, else `y`
/// (JAX's `jit[name=_where]`).
pub fn where_(condition: &Array, x: &Array, y: &Array) -> Result<Array> {
    wrap::jitted(
        "_where",
        vec![condition.clone(), x.clone(), y.clone()],
        |a| where_body(&a[0], &a[1], &a[2]),
    )
}

fn where_body(condition: &Array, x: &Array, y: &Array) -> Result<Array> {
    let c = if condition.dtype() == DType::Bool {
        condition.clone()
    } else {
        let zero = lax::convert_element_type(&Array::weak(0), condition.dtype(), false)?;
        lax::ne(condition, &zero)?
    };
    let v = promote::promote_dtypes("where", &[x, y])?;
    if [&c, &v[0], &v[1]]
        .into_iter()
        .any(crate::dynshape::is_dynamic)
    {
        let all = promote::broadcast_dynamic("where", vec![c, v[0].clone(), v[1].clone()], false)?;
        return lax::select_n(&all[0], &[all[2].clone(), all[1].clone()]);
    }
    let shape = broadcast_shapes("where", &c, &v[0])?;
    let shape = promote::broadcast_shape_lists("where", &shape, &v[1].try_shape()?)?;
    // A scalar predicate selects whole arrays: `select_n` takes it as is.
    let c = if c.ndim() == 0 {
        c
    } else {
        broadcast_to(&c, &shape)?
    };
    let xb = broadcast_to(&v[0], &shape)?;
    let yb = broadcast_to(&v[1], &shape)?;
    lax::select_n(&c, &[yb, xb])
}

/// `jnp.clip(x, lo, hi)` (JAX's `jit[name=clip]`).
pub fn clip(x: &Array, lo: Option<&Array>, hi: Option<&Array>) -> Result<Array> {
    let mut args = vec![x.clone()];
    args.extend(lo.cloned());
    args.extend(hi.cloned());
    let (has_lo, has_hi) = (lo.is_some(), hi.is_some());
    wrap::jitted("clip", args, move |a| {
        let mut out = a[0].clone();
        let mut k = 1;
        if has_lo {
            out = maximum(&a[k], &out)?;
            k += 1;
        }
        if has_hi {
            out = minimum(&a[k], &out)?;
        }
        Ok(out)
    })
}

/// `jnp.full(shape, value, dtype)`.
pub fn full(shape: &[usize], value: &Array, dtype: Option<DType>) -> Result<Array> {
    let dtype = dtype.unwrap_or_else(|| value.dtype());
    let v = lax::convert_element_type(value, dtype, false)?;
    broadcast_to(&v, shape)
}

/// `jnp.zeros(shape, dtype)`.
pub fn zeros(shape: &[usize], dtype: DType) -> Result<Array> {
    full(shape, &Array::weak(0.0), Some(dtype))
}

/// `jnp.ones(shape, dtype)`.
pub fn ones(shape: &[usize], dtype: DType) -> Result<Array> {
    full(shape, &Array::weak(1.0), Some(dtype))
}

/// `jnp.zeros_like(x)`.
pub fn zeros_like(x: &Array) -> Result<Array> {
    if crate::dynshape::is_dynamic(x) {
        return crate::dynshape::zeros(&crate::dynshape::sizes(x)?, x.dtype());
    }
    zeros(&x.try_shape()?, x.dtype())
}

/// `jnp.ones_like(x)`.
pub fn ones_like(x: &Array) -> Result<Array> {
    if crate::dynshape::is_dynamic(x) {
        return crate::dynshape::ones(&crate::dynshape::sizes(x)?, x.dtype());
    }
    ones(&x.try_shape()?, x.dtype())
}

/// `jnp.full_like(x, value)`.
pub fn full_like(x: &Array, value: &Array) -> Result<Array> {
    full(&x.try_shape()?, value, Some(x.dtype()))
}

/// `jnp.arange(stop)` with `i32` elements (an `iota`).
pub fn arange(stop: usize) -> Result<Array> {
    lax::iota(DType::I32, stop)
}

/// `jnp.asarray` of host data.
pub fn array<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Array> {
    Array::try_from_vec(data, shape)
}

/// A weakly typed scalar (what a Rust literal becomes in an expression).
pub fn scalar<T: WeakScalar>(x: T) -> Array {
    Array::weak(x)
}

/// `matmul` of vectors and matrices with dynamic dimensions: the
/// contracted dimensions must be the same (variable or constant).
fn matmul_dynamic(a: &Array, b: &Array) -> Result<Array> {
    let (sa, sb) = (&a.ty().shape, &b.ty().shape);
    let ok_rank = (1..=2).contains(&sa.len()) && (1..=2).contains(&sb.len());
    let rc = if sb.len() == 1 {
        0
    } else {
        sb.len().saturating_sub(2)
    };
    if !ok_rank || sa[sa.len() - 1] != sb[rc] {
        return Err(Error::ShapeMismatch {
            op: "matmul".into(),
            lhs: fmt_aval(a.aval()),
            rhs: fmt_aval(b.aval()),
        });
    }
    let dn = DotDimensionNumbers {
        lhs_contracting: vec![sa.len() - 1],
        rhs_contracting: vec![rc],
        lhs_batch: Vec::new(),
        rhs_batch: Vec::new(),
    };
    lax::dot_general(a, b, dn, Some(a.dtype()))
}

/// `jnp.matmul(a, b)` (`@`): vectors, matrices, and broadcast batches of
/// matrices.
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    let v = promote::promote_dtypes("matmul", &[a, b])?;
    let (a, b) = (&v[0], &v[1]);
    if crate::dynshape::is_dynamic(a) || crate::dynshape::is_dynamic(b) {
        return matmul_dynamic(a, b);
    }
    let (sa, sb) = (a.try_shape()?, b.try_shape()?);
    let mismatch = || Error::ShapeMismatch {
        op: "matmul".into(),
        lhs: fmt_aval(a.aval()),
        rhs: fmt_aval(b.aval()),
    };
    if sa.is_empty() || sb.is_empty() {
        return Err(mismatch());
    }
    let dt = Some(a.dtype());
    let dn = |lc: usize, rc: usize, batch: usize| DotDimensionNumbers {
        lhs_contracting: vec![lc],
        rhs_contracting: vec![rc],
        lhs_batch: (0..batch).collect(),
        rhs_batch: (0..batch).collect(),
    };
    match (sa.len(), sb.len()) {
        (1, 1) | (2, 1) | (1, 2) | (2, 2) => {
            let rc = if sb.len() == 1 { 0 } else { sb.len() - 2 };
            if sa[sa.len() - 1] != sb[rc] {
                return Err(mismatch());
            }
            lax::dot_general(a, b, dn(sa.len() - 1, rc, 0), dt)
        }
        (na, nb) => {
            // Batched: broadcast the leading dims, then one dot_general
            // with batch dims.
            let (a, b) = (
                if na == 1 {
                    lax::expand_dims(a, &[0])?
                } else {
                    a.clone()
                },
                if nb == 1 {
                    lax::expand_dims(b, &[1])?
                } else {
                    b.clone()
                },
            );
            let (sa, sb) = (a.try_shape()?, b.try_shape()?);
            if sa[sa.len() - 1] != sb[sb.len() - 2] {
                return Err(mismatch());
            }
            let ba = &sa[..sa.len() - 2];
            let bb = &sb[..sb.len() - 2];
            let nbatch = ba.len().max(bb.len());
            let batch = promote::broadcast_shape_lists("matmul", ba, bb)?;
            let mut ta = batch.clone();
            ta.extend(&sa[sa.len() - 2..]);
            let mut tb = batch.clone();
            tb.extend(&sb[sb.len() - 2..]);
            let a = broadcast_to(&a, &ta)?;
            let b = broadcast_to(&b, &tb)?;
            let out = lax::dot_general(&a, &b, dn(nbatch + 1, nbatch, nbatch), dt)?;
            let mut squeeze = Vec::new();
            if na == 1 {
                squeeze.push(nbatch);
            }
            if nb == 1 {
                squeeze.push(out.ndim() - 1);
            }
            lax::squeeze(&out, &squeeze)
        }
    }
}

/// `jnp.dot(a, b)`: matmul for arrays up to 2-D, scaling for scalars.
pub fn dot(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return multiply(a, b);
    }
    matmul(a, b)
}

/// `jnp.transpose(x, axes)`; `None` reverses the axes.
pub fn transpose(x: &Array, axes: Option<&[usize]>) -> Result<Array> {
    let perm: Vec<usize> = match axes {
        Some(a) => a.to_vec(),
        None => (0..x.ndim()).rev().collect(),
    };
    lax::transpose(x, &perm)
}

/// `jnp.reshape(x, shape)`; one `-1` entry is inferred.
pub fn reshape(x: &Array, shape: &[isize]) -> Result<Array> {
    let size: usize = x.try_shape()?.iter().product();
    let known: usize = shape
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| d as usize)
        .product();
    let holes = shape.iter().filter(|&&d| d < 0).count();
    let bad = || Error::ShapeMismatch {
        op: "reshape".into(),
        lhs: fmt_aval(x.aval()),
        rhs: format!("{shape:?}"),
    };
    let sizes: Vec<usize> = match holes {
        0 => shape.iter().map(|&d| d as usize).collect(),
        1 if known > 0 && size.is_multiple_of(known) => shape
            .iter()
            .map(|&d| if d < 0 { size / known } else { d as usize })
            .collect(),
        _ => return Err(bad()),
    };
    if sizes.iter().product::<usize>() != size {
        return Err(bad());
    }
    lax::reshape(x, &sizes)
}

/// `jnp.concatenate(arrays, axis)`, promoting dtypes.
pub fn concatenate(arrays: &[Array], axis: isize) -> Result<Array> {
    let first = arrays
        .first()
        .ok_or_else(|| Error::InvalidArgument("concatenate needs at least one array".into()))?;
    let axis = normalize_axis(axis, first.ndim(), "concatenate")?;
    let refs: Vec<&Array> = arrays.iter().collect();
    let v = promote::promote_dtypes("concatenate", &refs)?;
    lax::concatenate(&v, axis)
}

/// `jnp.stack(arrays, axis)`.
pub fn stack(arrays: &[Array], axis: isize) -> Result<Array> {
    let first = arrays
        .first()
        .ok_or_else(|| Error::InvalidArgument("stack needs at least one array".into()))?;
    let axis = normalize_axis(axis, first.ndim() + 1, "stack")?;
    let expanded = arrays
        .iter()
        .map(|a| lax::expand_dims(a, &[axis]))
        .collect::<Result<Vec<_>>>()?;
    concatenate(&expanded, axis as isize)
}

/// `x[.., lo:hi, ..]` along axis `axis` (already normalised), every other
/// axis whole.
pub(crate) fn slice_axis(x: &Array, axis: usize, lo: usize, hi: usize) -> Result<Array> {
    let shape = x.try_shape()?;
    let mut start = vec![0; shape.len()];
    let mut limit = shape;
    start[axis] = lo;
    limit[axis] = hi;
    lax::slice(x, &start, &limit, None)
}

/// Resolves a possibly negative axis against `ndim`.
pub fn normalize_axis(axis: isize, ndim: usize, op: &str) -> Result<usize> {
    let a = if axis < 0 { axis + ndim as isize } else { axis };
    if a < 0 || a as usize >= ndim.max(1) && !(ndim == 0 && a == 0) {
        return Err(Error::InvalidArgument(format!(
            "{op}: axis {axis} is out of bounds for an array of rank {ndim}"
        )));
    }
    Ok(a as usize)
}
