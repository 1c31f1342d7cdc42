//! Shape rules of `shard_map` and of the mesh collectives (`ppermute`,
//! `all_to_all`, `reduce_scatter`, `pvary`, `psum_invariant`).
//!
//! Inside a `shard_map` the body sees per-device shard types: dimension `d`
//! of an operand whose spec entry names axes `A` is divided by the product
//! of `A`'s sizes; the results are multiplied back by the out specs.

use super::{check_axis, fmt_aval, fmt_ty, same_type, Cx};
use crate::aval::{Aval, Dim, ShapedArray};
use crate::error::IrError;
use crate::jaxpr::Atom;
use crate::primitive::{AllToAllParams, ReduceScatterParams, ShardMapParams};

/// The static sizes of `a`, or an error naming the operand.
fn sizes(cx: &Cx, a: &ShapedArray, what: &str) -> Result<Vec<usize>, IrError> {
    a.static_sizes()
        .ok_or_else(|| cx.err(format!("{what} has a dynamic shape {}", fmt_ty(a))))
}

/// `shard_map`: operand `i` split by `in_specs[i]` must have the type of
/// the body's invar `i`; result `j` is the body's outvar `j` assembled by
/// `out_specs[j]`.
pub(crate) fn shard_map(cx: &Cx, p: &ShardMapParams) -> Result<Vec<Aval>, IrError> {
    p.mesh.validate().map_err(|e| cx.err(e))?;
    let j = &p.jaxpr.jaxpr;
    cx.arity(j.invars.len())?;
    if p.in_specs.len() != cx.avals.len() {
        return Err(cx.err(format!(
            "{} in_specs for {} operands",
            p.in_specs.len(),
            cx.avals.len()
        )));
    }
    if p.out_specs.len() != j.outvars.len() {
        return Err(cx.err(format!(
            "{} out_specs for {} results of the body",
            p.out_specs.len(),
            j.outvars.len()
        )));
    }
    for a in &p.newly_manual_axes {
        if p.mesh.axis_size(a).is_none() {
            return Err(cx.err(format!("manual axis '{a}' is not in {}", p.mesh)));
        }
    }
    for (i, (spec, v)) in p.in_specs.iter().zip(&j.invars).enumerate() {
        let x = cx.arr(i)?;
        let shard = p
            .mesh
            .shard_sizes(spec, &sizes(cx, x, &format!("operand {i}"))?)
            .map_err(|e| cx.err(format!("operand {i} of type {}: {e}", fmt_ty(x))))?;
        let want = Aval::Array(ShapedArray::of(x.dtype, &shard));
        let inner = j
            .try_aval(*v)
            .ok_or_else(|| cx.err(format!("body input {i} is not in its variable table")))?;
        if !same_type(inner, &want) {
            return Err(cx.err(format!(
                "body input {i} has type {} but operand {i} of type {} split by {spec} over {} gives {}",
                fmt_aval(inner),
                fmt_ty(x),
                p.mesh,
                fmt_aval(&want)
            )));
        }
    }
    p.out_specs
        .iter()
        .zip(&j.outvars)
        .enumerate()
        .map(|(k, (spec, o))| {
            let inner = match o {
                Atom::Var(v) => j
                    .try_aval(*v)
                    .and_then(Aval::as_array)
                    .cloned()
                    .ok_or_else(|| cx.err(format!("body result {k} is not an array variable")))?,
                Atom::Lit(l) => ShapedArray::scalar(l.dtype),
            };
            let global = p
                .mesh
                .global_sizes(spec, &sizes(cx, &inner, &format!("body result {k}"))?)
                .map_err(|e| cx.err(format!("result {k} of type {}: {e}", fmt_ty(&inner))))?;
            Ok(Aval::Array(
                ShapedArray::of(inner.dtype, &global).with_weak(inner.weak_type),
            ))
        })
        .collect()
}

/// An identity on one operand's type (`ppermute`, `pvary`, `psum_invariant`).
pub(crate) fn same(cx: &Cx, axes: &[String]) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    if axes.is_empty() {
        return Err(cx.err("needs at least one axis name"));
    }
    Ok(cx.arr(0)?.clone())
}

/// `ppermute`: the operand's type; the pairs must form a partial permutation.
pub(crate) fn ppermute(
    cx: &Cx,
    axes: &[String],
    perm: &[(usize, usize)],
) -> Result<ShapedArray, IrError> {
    for (i, (s, d)) in perm.iter().enumerate() {
        if perm[..i].iter().any(|(s2, d2)| s2 == s || d2 == d) {
            return Err(cx.err(format!(
                "perm {perm:?} is not a permutation ({s} or {d} repeats)"
            )));
        }
    }
    same(cx, axes)
}

/// `all_to_all`: `split_axis` shrinks `n` times, `concat_axis` grows `n`
/// times (`n` the axis size; the shape is unchanged when they coincide).
pub(crate) fn all_to_all(cx: &Cx, p: &AllToAllParams) -> Result<ShapedArray, IrError> {
    let x = same(cx, &p.axis_name)?;
    check_axis(cx, p.split_axis, x.ndim(), "split_axis")?;
    check_axis(cx, p.concat_axis, x.ndim(), "concat_axis")?;
    if p.split_axis == p.concat_axis {
        return Ok(x);
    }
    let Some(n) = p.axis_size.filter(|n| *n > 0) else {
        return Err(cx.err("the axis size is not known (the types do not show it)"));
    };
    let mut shape = x.shape.clone();
    match shape[p.split_axis] {
        Dim::Const(m) if m % n == 0 => shape[p.split_axis] = Dim::Const(m / n),
        _ => {
            return Err(cx.err(format!(
                "split_axis {} of {} is not divisible by the axis size {n}",
                p.split_axis,
                fmt_ty(&x)
            )))
        }
    }
    match shape[p.concat_axis] {
        Dim::Const(m) => shape[p.concat_axis] = Dim::Const(m * n),
        Dim::Var(_) => return Err(cx.err(format!("a dynamic concat_axis in {}", fmt_ty(&x)))),
    }
    Ok(ShapedArray { shape, ..x })
}

/// `reduce_scatter` (`psum_scatter`): tiled, `scatter_dimension` shrinks
/// `axis_size` times; untiled, it must equal `axis_size` and is removed.
pub(crate) fn reduce_scatter(cx: &Cx, p: &ReduceScatterParams) -> Result<ShapedArray, IrError> {
    let x = same(cx, &p.axis_name)?;
    let d = p.scatter_dimension;
    check_axis(cx, d, x.ndim(), "scatter_dimension")?;
    let n = p.axis_size;
    let mut shape = x.shape.clone();
    match (shape[d], p.tiled) {
        (Dim::Const(m), true) if n > 0 && m % n == 0 => shape[d] = Dim::Const(m / n),
        (Dim::Const(m), false) if m == n => {
            shape.remove(d);
        }
        _ => {
            return Err(cx.err(format!(
                "scatter_dimension {d} of {} does not fit axis_size {n} (tiled={})",
                fmt_ty(&x),
                p.tiled
            )))
        }
    }
    Ok(ShapedArray { shape, ..x })
}
