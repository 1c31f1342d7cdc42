//! Rules of the structural family (broadcasts, reshapes, transposes,
//! pads, concatenations, splits, tiles, stacks, iotas): jvp, transpose and
//! batching, side by side.
//!
//! Invariants: every structural primitive but `iota` and `empty2` is
//! linear in its array operands (trailing dynamic-size operands are
//! fixed), so its jvp is the primitive applied to the tangents and its
//! transpose undoes the movement (summing where the forward copied).
//! Batching moves the batch dim to the front and shifts the axis params by
//! one (`rev` keeps it in place).

use super::{
    all_front, around, ct, front1, linear_in, linear_lead, logical_shape, no_tangent, not_linear,
    only, prepend, prepend0u, shift, shift_ints, sizes, BatchOuts, Cts, JvpOuts,
};
use crate::batch::to_front;
use crate::transpose::LinArg;
use jaxon_ir::primitive::{
    BroadcastInDimParams, ConcatenateParams, Ints, PadParams, ReduceOp, ReshapeParams, RevParams,
    SplitParams, SqueezeParams, StackParams, Structural, TileParams, TransposeParams,
};
use jaxon_ir::Primitive;
use jaxon_trace::dynshape;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, numpy as jnp, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(
    s: &Structural,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    match s {
        // Trailing operands are dynamic sizes.
        Structural::BroadcastInDim(_) | Structural::Reshape(_) => linear_lead(p, x, t, 1),
        Structural::Transpose(_)
        | Structural::Squeeze(_)
        | Structural::Rev(_)
        | Structural::Tile(_)
        | Structural::Split(_) => linear_in(p, x, t, &[true]),
        Structural::Concatenate(_) | Structural::Stack(_) => {
            linear_in(p, x, t, &vec![true; x.len()])
        }
        Structural::Pad(_) => linear_in(p, x, t, &[true, true]),
        Structural::Iota(_) | Structural::Empty2(_) => no_tangent(p, x),
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    s: &Structural,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match s {
        Structural::BroadcastInDim(bp) => broadcast_in_dim_transpose(bp, args, cts),
        Structural::Reshape(_) | Structural::Squeeze(_) => reshape_transpose(args, cts),
        Structural::Transpose(TransposeParams { permutation }) => {
            let mut inv = vec![0; permutation.len()];
            for (i, &p) in permutation.iter().enumerate() {
                inv[p] = i;
            }
            Ok(only(args, 0, lax::transpose(&ct(cts)?, &inv)?))
        }
        Structural::Rev(RevParams { dimensions }) => {
            Ok(only(args, 0, lax::rev(&ct(cts)?, dimensions)?))
        }
        Structural::Pad(pp) => pad_transpose(pp, args, cts),
        Structural::Concatenate(cp) => concatenate_transpose(cp, args, cts),
        Structural::Split(sp) => split_transpose(sp, p, args, cts),
        Structural::Tile(tp) => tile_transpose(tp, args, cts),
        Structural::Stack(sp) => stack_transpose(sp, args, cts),
        Structural::Iota(_) | Structural::Empty2(_) => not_linear(p),
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    s: &Structural,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match s {
        Structural::BroadcastInDim(BroadcastInDimParams {
            shape,
            broadcast_dimensions,
        }) => {
            let mut s = vec![Some(n)];
            s.extend(shape.iter().copied());
            let q = BroadcastInDimParams {
                shape: s,
                broadcast_dimensions: prepend(&shift_ints(broadcast_dimensions), 0),
            };
            front1(p, x, d, n, q.into())
        }
        Structural::Reshape(ReshapeParams {
            new_sizes,
            dimensions,
        }) => {
            let mut s = vec![Some(n)];
            s.extend(new_sizes.iter().copied());
            let q = ReshapeParams {
                new_sizes: s,
                dimensions: dimensions.as_ref().map(|perm| prepend0u(&shift(perm))),
            };
            front1(p, x, d, n, q.into())
        }
        Structural::Transpose(TransposeParams { permutation }) => {
            let q = TransposeParams {
                permutation: prepend0u(&shift(permutation)),
            };
            front1(p, x, d, n, q.into())
        }
        Structural::Squeeze(SqueezeParams { dimensions }) => {
            let q = SqueezeParams {
                dimensions: shift(dimensions),
            };
            front1(p, x, d, n, q.into())
        }
        Structural::Rev(RevParams { dimensions }) => {
            let bd = d[0].unwrap_or(0);
            let q = RevParams {
                dimensions: around(dimensions, bd),
            };
            let out = bind1(&q.into(), &x[..1])?;
            Ok((vec![out], vec![Some(bd)]))
        }
        Structural::Pad(PadParams { padding_config }) => pad_batch(p, padding_config, x, d, n),
        Structural::Concatenate(ConcatenateParams { dimension }) => {
            let q = ConcatenateParams {
                dimension: dimension + 1,
            };
            all_front(x, d, n, q.into())
        }
        Structural::Stack(StackParams { axis }) => {
            all_front(x, d, n, StackParams { axis: axis + 1 }.into())
        }
        Structural::Split(SplitParams { sizes, axis }) => {
            let q = SplitParams {
                sizes: sizes.clone(),
                axis: axis + 1,
            };
            front1(p, x, d, n, q.into())
        }
        Structural::Tile(TileParams { reps }) => {
            let q = TileParams {
                reps: prepend(reps, 1),
            };
            front1(p, x, d, n, q.into())
        }
        Structural::Iota(_) | Structural::Empty2(_) => Err(Error::Unsupported(format!(
            "vmap of `{}` with a batched dynamic size is not supported",
            p.name()
        ))),
    }
}

// ---------------------------------------------------------- transpose --

/// Sums over the new dimensions and the size-1 ones that grew (by type,
/// so dynamic sizes work: they are never a static 1).
fn broadcast_in_dim_transpose(
    bp: &BroadcastInDimParams,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let broadcast_dimensions = &bp.broadcast_dimensions;
    let c = ct(cts)?;
    let in_ty = args[0].ty();
    let out_dims = c.ty().shape.clone();
    let bd = broadcast_dimensions.to_usizes();
    let one = |d: &jaxon_ir::Dim| matches!(d, jaxon_ir::Dim::Const(1));
    let mut axes: Vec<usize> = (0..out_dims.len()).filter(|d| !bd.contains(d)).collect();
    for (i, &d) in bd.iter().enumerate() {
        if one(&in_ty.shape[i]) && !one(&out_dims[d]) {
            axes.push(d);
        }
    }
    axes.sort_unstable();
    let summed = lax::reduce(ReduceOp::Sum, &c, &axes)?;
    let mut out = vec![None; args.len()];
    out[0] = Some(if summed.ndim() == in_ty.shape.len() {
        summed
    } else if in_ty.static_sizes().is_some() {
        lax::reshape(&summed, &sizes(in_ty))?
    } else {
        dynshape::reshape(&summed, &args[0].sizes()?)?
    });
    Ok(out)
}

/// Back to the operand's shape (its dynamic sizes are values here).
fn reshape_transpose(args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let mut out = vec![None; args.len()];
    let c = ct(cts)?;
    out[0] = Some(
        if args[0].ty().static_sizes().is_none() || dynshape::is_dynamic(&c) {
            // Back to the operand's dynamic sizes (values here).
            dynshape::reshape(&c, &args[0].sizes()?)?
        } else {
            lax::reshape(&c, &sizes(args[0].ty()))?
        },
    );
    Ok(out)
}

/// Undoes negative padding, then slices out the operand; the padding
/// value's cotangent is what the operand did not receive.
fn pad_transpose(pp: &PadParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let padding_config = &pp.padding_config;
    let lin = |i: usize| args[i].is_linear();
    let c = ct(cts)?;
    let shape = c.try_shape()?;
    let zero = lax::convert_element_type(&Array::weak(0.0), c.dtype(), false)?;
    // Undo negative padding first, then slice out the operand.
    let unneg: Vec<(i64, i64, i64)> = padding_config
        .iter()
        .map(|cfg| ((-cfg[0]).max(0), (-cfg[1]).max(0), 0))
        .collect();
    let widened = lax::pad(&c, &zero, &unneg)?;
    let wshape = widened.try_shape()?;
    let start: Vec<usize> = padding_config
        .iter()
        .map(|c| c[0].max(0) as usize)
        .collect();
    let limit: Vec<usize> = padding_config
        .iter()
        .zip(&wshape)
        .map(|(c, &n)| n - c[1].max(0) as usize)
        .collect();
    let strides: Vec<usize> = padding_config.iter().map(|c| c[2] as usize + 1).collect();
    let op_ct = lax::slice(&widened, &start, &limit, Some(&strides))?;
    let mut out = vec![None, None];
    if lin(1) {
        let all: Vec<usize> = (0..shape.len()).collect();
        let total = lax::reduce(ReduceOp::Sum, &c, &all)?;
        let inner = lax::reduce(ReduceOp::Sum, &op_ct, &all)?;
        out[1] = Some(lax::sub(&total, &inner)?);
    }
    if lin(0) {
        out[0] = Some(op_ct);
    }
    Ok(out)
}

/// Each linear operand's slice of the cotangent.
fn concatenate_transpose(
    cp: &ConcatenateParams,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let dimension = &cp.dimension;
    let c = ct(cts)?;
    let shape = c.try_shape()?;
    let mut out = Vec::with_capacity(args.len());
    let mut offset = 0;
    for a in args {
        let n = sizes(a.ty())[*dimension];
        if a.is_linear() {
            let mut start = vec![0; shape.len()];
            let mut limit = shape.clone();
            start[*dimension] = offset;
            limit[*dimension] = offset + n;
            out.push(Some(lax::slice(&c, &start, &limit, None)?));
        } else {
            out.push(None);
        }
        offset += n;
    }
    Ok(out)
}

/// The pieces' cotangents (zeros for the missing ones) concatenated.
fn split_transpose(
    sp: &SplitParams,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let axis = &sp.axis;
    let pieces = cts
        .iter()
        .zip(bind_shapes_of_split(args[0].ty(), p)?)
        .map(|(c, shape)| match c {
            Some(c) => Ok(c.clone()),
            None => jnp::zeros(&shape, args[0].ty().dtype),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(only(args, 0, lax::concatenate(&pieces, *axis)?))
}

fn bind_shapes_of_split(t: &jaxon_ir::ShapedArray, p: &Primitive) -> Result<Vec<Vec<usize>>> {
    let outs = jaxon_ir::abstract_eval(p, &[jaxon_ir::Aval::Array(t.clone())], &[])?;
    Ok(outs.iter().map(|a| sizes(a.array())).collect())
}

/// `out = x` repeated: view each dim as `(rep, size)` and sum the reps.
fn tile_transpose(tp: &TileParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let reps = &tp.reps;
    let shape = sizes(args[0].ty());
    let mut split = Vec::with_capacity(2 * shape.len());
    for (d, &n) in shape.iter().enumerate() {
        split.push(reps[d].max(0) as usize);
        split.push(n);
    }
    let r = lax::reshape(&ct(cts)?, &split)?;
    let axes: Vec<usize> = (0..shape.len()).map(|d| 2 * d).collect();
    Ok(only(
        args,
        0,
        lax::reshape(&lax::reduce(ReduceOp::Sum, &r, &axes)?, &shape)?,
    ))
}

/// Each linear operand's slice of the cotangent along the new axis.
fn stack_transpose(sp: &StackParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let axis = &sp.axis;
    let c = ct(cts)?;
    let shape = c.try_shape()?;
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        if a.is_linear() {
            let mut start = vec![0; shape.len()];
            let mut limit = shape.clone();
            start[*axis] = i;
            limit[*axis] = i + 1;
            let piece = lax::slice(&c, &start, &limit, None)?;
            out.push(Some(lax::reshape(&piece, &sizes(a.ty()))?));
        } else {
            out.push(None);
        }
    }
    Ok(out)
}

// -------------------------------------------------------------- batch --

/// `pad`: a batched padding value is applied with a select over a mask of
/// the padded positions.
fn pad_batch(
    p: &Primitive,
    config: &[Ints],
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let mut cfg = vec![Ints::new(vec![0, 0, 0])];
    cfg.extend(config.iter().cloned());
    let q = Primitive::from(PadParams {
        padding_config: cfg,
    });
    let operand = to_front(&x[0], d[0], n)?;
    if d[1].is_none() {
        let out = jaxon_trace::bind1(&q, &[operand, x[1].clone()])?;
        return Ok((vec![out], vec![Some(0)]));
    }
    let zero = crate::util::scalar_like(&x[1], 0.0)?;
    let padded = jaxon_trace::bind1(&q, &[operand, zero])?;
    let in_shape = logical_shape(&x[0], d[0])?;
    let inside = lax::broadcast_in_dim(&Array::scalar(true), &in_shape, &[])?;
    let mask = jaxon_trace::bind1(p, &[inside, Array::scalar(false)])?;
    let full = padded.try_shape()?;
    let dims: Vec<usize> = (1..full.len()).collect();
    let mask = lax::broadcast_in_dim(&mask, &full, &dims)?;
    let value = lax::broadcast_in_dim(&to_front(&x[1], d[1], n)?, &full, &[0])?;
    let out = lax::select_n(&mask, &[value, padded])?;
    Ok((vec![out], vec![Some(0)]))
}
