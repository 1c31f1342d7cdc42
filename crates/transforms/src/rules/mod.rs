//! The rules of every primitive for the three transforms, grouped by
//! family as in autodidax: each family's jvp, transpose and batching rules
//! sit side by side in one module (one folder for `control`, one file per
//! primitive there).
//!
//! Each family module exports `jvp`, `transpose` and `batch`, one
//! exhaustive `match` on its family enum (no catch-all arm); the
//! transforms' dispatch (`jvp::jvp_rule`, `transpose::transpose_rule`,
//! `batch::batch_rule`) matches `Primitive`'s families and calls them.
//! Rules take their primitive's typed params (`&ScanParams`); a rule that
//! binds the same primitive again also gets the `&Primitive`.
//!
//! Contracts, per transform:
//! - jvp: given primals `x` and tangents `t` (`None` = zero, at least one
//!   non-zero), the primal outputs and their tangents; primal outputs come
//!   from binds on primals alone.
//! - transpose: given the operands (linear ones as types only, never read)
//!   and the output cotangents (`None` = zero), one cotangent per operand
//!   (`None` for non-linear operands and zeros); a primitive that is not
//!   linear in an operand marked linear is an error.
//! - batch: given the operands' values and batch dims (at least one
//!   batched, except for collectives), the outputs' values and batch dims.
//!
//! Rules only bind primitives (through `lax`/`bind`), so they work on any
//! trace below, eager or staged. This file holds the helpers rules of
//! several families share.

pub(crate) mod callback;
pub(crate) mod collective;
pub(crate) mod control;
pub(crate) mod decomp;
pub(crate) mod elementwise;
pub(crate) mod indexing;
pub(crate) mod linalg;
pub(crate) mod marker;
pub(crate) mod pallas;
pub(crate) mod random;
pub(crate) mod reduction;
mod special;
pub(crate) mod state;
pub(crate) mod structural;
pub(crate) mod window;
pub(crate) mod window_generic;

use crate::batch::to_front;
use crate::transpose::LinArg;
use crate::util::{broadcast_operand, zeros_like};
use jaxon_ir::primitive::{BroadcastInDimParams, Ints};
use jaxon_ir::{Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, dynshape, lax, numpy as jnp, Array};

/// A jvp rule's result: primal outputs and their tangents (`None` = zero).
pub(crate) type JvpOuts = (Vec<Array>, Vec<Option<Array>>);

/// A transpose rule's result: one cotangent per operand (`None` = zero or
/// not linear).
pub(crate) type Cts = Vec<Option<Array>>;

/// A batching rule's result: output values and their batch dimensions.
pub(crate) type BatchOuts = (Vec<Array>, Vec<Option<usize>>);

// ---------------------------------------------------------------- jvp --

/// The error of a primitive without a jvp rule.
pub(crate) fn jvp_unsupported(p: &Primitive) -> Result<JvpOuts> {
    Err(Error::Unsupported(format!(
        "differentiation of `{}` is not implemented yet",
        p.name()
    )))
}

/// Primal outputs with zero tangents.
pub(crate) fn no_tangent(p: &Primitive, x: &[Array]) -> Result<JvpOuts> {
    let outs = bind(p, x)?;
    let n = outs.len();
    Ok((outs, vec![None; n]))
}

/// Multiplies a tangent by a factor (`None` stays zero).
pub(crate) fn tmul(t: Option<&Array>, factor: &Array) -> Result<Option<Array>> {
    t.map(|t| lax::mul(t, factor)).transpose()
}

/// The sum of some tangents (`None` when there are none).
pub(crate) fn sum_tangents(ts: impl Iterator<Item = Array>) -> Result<Option<Array>> {
    let mut acc: Option<Array> = None;
    for t in ts {
        acc = Some(match acc {
            None => t,
            Some(a) => lax::add(&a, &t)?,
        });
    }
    Ok(acc)
}

/// `p` is linear in the operands marked `linear` (the others are fixed):
/// its tangent is `p` applied to the tangents, zeros instantiated.
pub(crate) fn linear_in(
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
    linear: &[bool],
) -> Result<JvpOuts> {
    let outs = bind(p, x)?;
    let any = x
        .iter()
        .zip(t)
        .zip(linear)
        .any(|((_, t), l)| *l && t.is_some());
    if !any {
        let n = outs.len();
        return Ok((outs, vec![None; n]));
    }
    let args = x
        .iter()
        .zip(t)
        .zip(linear)
        .map(|((xi, ti), l)| match (l, ti) {
            (true, Some(ti)) => Ok(ti.clone()),
            (true, None) => zeros_like(xi),
            (false, _) => Ok(xi.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    let touts = bind(p, &args)?;
    Ok((outs, touts.into_iter().map(Some).collect()))
}

/// `linear_in` with operand 0 linear and the trailing operands (dynamic
/// sizes, start indices) fixed; `lead` operands are linear.
pub(crate) fn linear_lead(
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
    lead: usize,
) -> Result<JvpOuts> {
    let mut lin = vec![true; lead];
    lin.resize(x.len(), false);
    linear_in(p, x, t, &lin)
}

/// `p` is linear in each operand separately: the tangent is the sum over
/// operands of `p` with that operand replaced by its tangent.
pub(crate) fn bilinear(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let out = jaxon_trace::bind1(p, x)?;
    let mut parts = Vec::new();
    for (i, ti) in t.iter().enumerate() {
        if let Some(ti) = ti {
            let mut args = x.to_vec();
            args[i] = ti.clone();
            parts.push(jaxon_trace::bind1(p, &args)?);
        }
    }
    Ok((vec![out], vec![sum_tangents(parts.into_iter())?]))
}

/// `v` (an operand or tangent of an elementwise op) at the shape of the
/// op's result `y`: the same shape, or a scalar broadcast (static or
/// dynamic shapes).
pub(crate) fn like_result(v: &Array, y: &Array) -> Result<Array> {
    if let Ok(shape) = y.try_shape() {
        return broadcast_operand(v, &shape);
    }
    let (vs, ys) = (dynshape::sizes(v)?, dynshape::sizes(y)?);
    if vs.len() == ys.len() {
        // Equal ranks of one elementwise op's operands are equal shapes.
        return Ok(v.clone());
    }
    dynshape::broadcast_in_dim(v, &ys, &[])
}

// ---------------------------------------------------------- transpose --

/// The error of transposing a primitive that is not linear.
pub(crate) fn not_linear(p: &Primitive) -> Result<Cts> {
    Err(Error::InvalidArgument(format!(
        "transpose: `{}` is not a linear primitive",
        p.name()
    )))
}

/// The error of a primitive without a transpose rule.
pub(crate) fn transpose_unsupported(p: &Primitive) -> Result<Cts> {
    Err(Error::Unsupported(format!(
        "transposition of `{}` is not implemented yet",
        p.name()
    )))
}

/// Zeros of a static type; a dynamic one is an error (its sizes are
/// values of the trace: use [`zeros_of`]).
pub(crate) fn zeros(t: &ShapedArray) -> Result<Array> {
    let shape = t.static_sizes().ok_or_else(|| {
        Error::Unsupported(format!(
            "zeros of the dynamically shaped {} outside a rule that knows its sizes",
            jaxon_ir::shape::fmt_ty(t)
        ))
    })?;
    jnp::zeros(&shape, t.dtype)
}

/// Zeros shaped like a transpose rule's argument, dynamic dimensions
/// included (their values come with the argument).
pub(crate) fn zeros_of(a: &LinArg) -> Result<Array> {
    dynshape::zeros(&a.sizes()?, a.ty().dtype)
}

/// The static sizes of a type (empty when dynamic).
pub(crate) fn sizes(t: &ShapedArray) -> Vec<usize> {
    t.static_sizes().unwrap_or_default()
}

/// The cotangent of a single-output primitive (zero cotangents were
/// skipped by the backward pass).
pub(crate) fn ct(cts: &[Option<Array>]) -> Result<Array> {
    cts[0]
        .clone()
        .ok_or_else(|| Error::InvalidArgument("transpose: missing cotangent".into()))
}

/// Cotangents with only operand `i`'s set.
pub(crate) fn only(args: &[LinArg], i: usize, ct: Array) -> Cts {
    let mut v = vec![None; args.len()];
    v[i] = Some(ct);
    v
}

/// The known (non-linear) operands, in order.
pub(crate) fn values(args: &[LinArg]) -> Vec<Array> {
    args.iter()
        .filter_map(|a| match a {
            LinArg::Value(v) => Some(v.clone()),
            LinArg::Linear(_) | LinArg::LinearDyn(..) => None,
        })
        .collect()
}

// -------------------------------------------------------------- batch --

/// Every dim index shifted past a new leading batch dimension.
pub(crate) fn shift(v: &[usize]) -> Vec<usize> {
    v.iter().map(|a| a + 1).collect()
}

/// [`shift`] on `Ints`.
pub(crate) fn shift_ints(v: &Ints) -> Ints {
    Ints::new(v.iter().map(|a| a + 1).collect())
}

/// `v` with `0` in front.
pub(crate) fn prepend0u(v: &[usize]) -> Vec<usize> {
    let mut out = vec![0];
    out.extend_from_slice(v);
    out
}

/// `v` with `first` in front.
pub(crate) fn prepend(v: &Ints, first: i64) -> Ints {
    let mut out = vec![first];
    out.extend_from_slice(v);
    Ints::new(out)
}

/// Errors unless the operands after the first are unbatched (dynamic sizes
/// and similar scalar params).
pub(crate) fn rest_unbatched(p: &Primitive, d: &[Option<usize>]) -> Result<()> {
    if d.iter().skip(1).any(Option::is_some) {
        return Err(Error::Unsupported(format!(
            "vmap of `{}` with a batched dynamic size operand is not supported",
            p.name()
        )));
    }
    Ok(())
}

/// Binds `q` with operand 0 batched at the front and the other operands
/// as they are; every output is batched at the front.
pub(crate) fn front1(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    q: Primitive,
) -> Result<BatchOuts> {
    rest_unbatched(p, d)?;
    let mut args = x.to_vec();
    args[0] = to_front(&x[0], d[0], n)?;
    let outs = bind(&q, &args)?;
    let k = outs.len();
    Ok((outs, vec![Some(0); k]))
}

/// Binds `q` with every operand batched at the front (broadcast if not).
pub(crate) fn all_front(
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    q: Primitive,
) -> Result<BatchOuts> {
    let args = x
        .iter()
        .zip(d)
        .map(|(a, b)| to_front(a, *b, n))
        .collect::<Result<Vec<_>>>()?;
    let outs = bind(&q, &args)?;
    let k = outs.len();
    Ok((outs, vec![Some(0); k]))
}

/// The logical shape of a value with batch dimension `d`.
pub(crate) fn logical_shape(x: &Array, d: Option<usize>) -> Result<Vec<usize>> {
    let mut s = x.try_shape()?;
    if let Some(d) = d {
        s.remove(d);
    }
    Ok(s)
}

/// `broadcast_in_dim` with the dims spelled `np.int64(..)`, as JAX's
/// batching rules stage them (so printed jaxprs match JAX's).
pub(crate) fn broadcast_np(x: &Array, shape: &[usize], dims: &[usize]) -> Result<Array> {
    let dims = Ints {
        values: dims.iter().map(|&v| v as i64).collect(),
        np_int64: vec![true; dims.len()],
    };
    jaxon_trace::bind1(
        &BroadcastInDimParams {
            shape: shape.iter().map(|&v| Some(v)).collect(),
            broadcast_dimensions: dims,
        }
        .into(),
        std::slice::from_ref(x),
    )
}

/// Maps logical axes to value axes around the batch dim `bd`.
pub(crate) fn around(axes: &[usize], bd: usize) -> Vec<usize> {
    axes.iter()
        .map(|&a| if a >= bd { a + 1 } else { a })
        .collect()
}
