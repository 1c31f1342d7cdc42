//! Rules of the indexing family (`slice`, `dynamic_slice`,
//! `dynamic_update_slice`, `gather`, the scatters): jvp, transpose and
//! batching, side by side.
//!
//! Invariants: index operands are integers and never carry tangents or
//! cotangents. `scatter` and `scatter-add` are linear in operand and
//! updates; `scatter-mul` only in the operand; `scatter-min`/`-max` are not
//! linear, and their jvp shares the tangent among ties (JAX's scatter
//! extremal jvp: `ṫ = (keep·ẋ + Σ win·u̇) / (keep + Σ win)`); the jvp of
//! `scatter-mul` in its updates needs `unique_indices=True`, as in JAX.
//! Batching puts the batch dimension first and, where both operand and
//! indices are batched, pairs them through `operand_batching_dims` /
//! `*_indices_batching_dims`, so no loop or one-hot is needed.

use super::{
    ct, front1, linear_in, linear_lead, not_linear, only, prepend, shift_ints, sizes, zeros,
    zeros_of, BatchOuts, Cts, JvpOuts,
};
use crate::batch::to_front;
use crate::transpose::LinArg;
use crate::util::{scatter_inverse_gather, zeros_like};
use jaxon_ir::primitive::{
    DynamicSliceParams, GatherDimensionNumbers, GatherParams, GatherScatterMode, Indexing, Ints,
    ScatterDimensionNumbers, ScatterKind, ScatterParams, SliceParams,
};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::dynshape;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, numpy as jnp, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(
    i: &Indexing,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    match i {
        Indexing::Slice(_) => linear_in(p, x, t, &[true]),
        // Trailing operands are start indices.
        Indexing::DynamicSlice(_) => linear_lead(p, x, t, 1),
        Indexing::DynamicUpdateSlice => linear_lead(p, x, t, 2),
        Indexing::Gather(_) => linear_in(p, x, t, &[true, false]),
        Indexing::Scatter(sp) => match sp.kind {
            ScatterKind::Add | ScatterKind::Set => linear_in(p, x, t, &[true, false, true]),
            ScatterKind::Mul => scatter_mul_jvp(sp, p, x, t),
            ScatterKind::Min | ScatterKind::Max => scatter_extremal_jvp(sp, p, x, t),
        },
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    i: &Indexing,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match i {
        Indexing::Slice(sp) => slice_transpose(sp, args, cts),
        Indexing::DynamicSlice(_) => {
            let starts: Vec<Array> = args[1..]
                .iter()
                .map(|a| a.value(p.name()).cloned())
                .collect::<Result<_>>()?;
            let z = zeros_of(&args[0])?;
            let mut out = vec![None; args.len()];
            out[0] = Some(lax::dynamic_update_slice_clamped(&z, &ct(cts)?, &starts)?);
            Ok(out)
        }
        Indexing::DynamicUpdateSlice => dynamic_update_slice_transpose(p, args, cts),
        Indexing::Gather(gp) => gather_transpose(gp, p, args, cts),
        Indexing::Scatter(sp) => match sp.kind {
            ScatterKind::Add | ScatterKind::Set => scatter_transpose(sp, p, args, cts),
            ScatterKind::Mul => {
                // Linear in the operand alone: `x ↦ x ⊙ Πu` scales each
                // element, so it is its own transpose.
                if args[1].is_linear() || args[2].is_linear() {
                    return not_linear(p);
                }
                let idx = args[1].value(p.name())?.clone();
                let upd = args[2].value(p.name())?.clone();
                Ok(only(args, 0, bind1(p, &[ct(cts)?, idx, upd])?))
            }
            ScatterKind::Min | ScatterKind::Max => not_linear(p),
        },
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    i: &Indexing,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match i {
        Indexing::Slice(SliceParams {
            start_indices,
            limit_indices,
            strides,
        }) => {
            let q = SliceParams {
                start_indices: prepend(start_indices, 0),
                limit_indices: prepend(limit_indices, n as i64),
                strides: strides.as_ref().map(|s| prepend(s, 1)),
            };
            front1(p, x, d, n, q.into())
        }
        Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
            dynamic_slice_batch(slice_sizes, x, d, n)
        }
        Indexing::DynamicUpdateSlice => dynamic_update_slice_batch(x, d, n),
        Indexing::Gather(gp) => gather_batch(gp, x, d, n),
        Indexing::Scatter(sp) => scatter_batch(sp, x, d, n),
    }
}

// ---------------------------------------------------------------- jvp --

/// The scatter-add placing updates exactly where the scatter `sp` places
/// them.
fn scatter_add_like(sp: &ScatterParams) -> Primitive {
    ScatterParams {
        kind: ScatterKind::Add,
        update_jaxpr: None,
        ..sp.clone()
    }
    .into()
}

/// `scatter-min` / `scatter-max`: ties share the tangent.
fn scatter_extremal_jvp(
    sp: &ScatterParams,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let out = bind1(p, x)?;
    if t[0].is_none() && t[2].is_none() {
        return Ok((vec![out], vec![None]));
    }
    let ScatterParams {
        dimension_numbers,
        indices_are_sorted,
        mode,
        unique_indices,
        ..
    } = sp;
    let (operand, idx, upd) = (&x[0], &x[1], &x[2]);
    let dtype = operand.dtype();
    let t_operand = t[0].clone().map_or_else(|| zeros_like(operand), Ok)?;
    let t_updates = t[2].clone().map_or_else(|| zeros_like(upd), Ok)?;
    // The result at each update's destination, and which updates won.
    let at_dest = scatter_inverse_gather(
        dimension_numbers,
        &out,
        idx,
        &upd.try_shape()?,
        *indices_are_sorted,
        *mode,
        *unique_indices,
    )?;
    let won = lax::convert_element_type(&lax::eq(upd, &at_dest)?, dtype, false)?;
    let kept = lax::convert_element_type(&lax::eq(operand, &out)?, dtype, false)?;
    let add = scatter_add_like(sp);
    let zeros = zeros_like(operand)?;
    let winners = bind1(&add, &[zeros.clone(), idx.clone(), won.clone()])?;
    let count = lax::add(&kept, &winners)?;
    let from_updates = bind1(&add, &[zeros, idx.clone(), lax::mul(&won, &t_updates)?])?;
    let total = lax::add(&lax::mul(&kept, &t_operand)?, &from_updates)?;
    Ok((vec![out], vec![Some(lax::div(&total, &count)?)]))
}

/// `scatter-mul`: linear in the operand; the updates' part needs unique
/// indices.
fn scatter_mul_jvp(
    sp: &ScatterParams,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let out = bind1(p, x)?;
    let (operand, idx, upd) = (&x[0], &x[1], &x[2]);
    let mut parts = Vec::new();
    if let Some(t_operand) = &t[0] {
        parts.push(bind1(p, &[t_operand.clone(), idx.clone(), upd.clone()])?);
    }
    if let Some(t_updates) = &t[2] {
        let unique = sp.unique_indices;
        if !unique {
            return Err(Error::Unsupported(format!(
                "differentiation of `{}` with respect to the updates: scatter_mul gradients \
                 are only implemented if `unique_indices=True` (with repeated indices the \
                 derivative with respect to one update is the product of the others)",
                p.name()
            )));
        }
        let spread = bind1(
            &scatter_add_like(sp),
            &[zeros_like(operand)?, idx.clone(), t_updates.clone()],
        )?;
        parts.push(lax::mul(operand, &spread)?);
    }
    let mut parts = parts.into_iter();
    let tangent = match (parts.next(), parts.next()) {
        (None, _) => None,
        (Some(a), None) => Some(a),
        (Some(a), Some(b)) => Some(lax::add(&a, &b)?),
    };
    Ok((vec![out], vec![tangent]))
}

// ---------------------------------------------------------- transpose --

/// The cotangent padded back into the operand's shape (strides become
/// interior padding).
fn slice_transpose(sp: &SliceParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let SliceParams {
        start_indices,
        limit_indices,
        strides,
    } = sp;
    let c = ct(cts)?;
    let in_shape = sizes(args[0].ty());
    let out_shape = c.try_shape()?;
    let config: Vec<(i64, i64, i64)> = (0..in_shape.len())
        .map(|d| {
            let s = strides.as_ref().map_or(1, |s| s[d]);
            let lo = start_indices[d];
            let last = if out_shape[d] == 0 {
                lo - 1
            } else {
                lo + (out_shape[d] as i64 - 1) * s
            };
            let hi = in_shape[d] as i64 - last - 1;
            (lo, hi, s - 1)
        })
        .collect();
    let _ = limit_indices;
    let zero = lax::convert_element_type(&Array::weak(0.0), c.dtype(), false)?;
    Ok(only(args, 0, lax::pad(&c, &zero, &config)?))
}

/// The cotangent with the update's window zeroed (operand), and that
/// window (update).
fn dynamic_update_slice_transpose(
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let name = p.name();
    let lin = |i: usize| args[i].is_linear();
    let c = ct(cts)?;
    let starts: Vec<Array> = args[2..]
        .iter()
        .map(|a| a.value(name).cloned())
        .collect::<Result<_>>()?;
    let upd = args[1].ty();
    let mut out = vec![None; args.len()];
    if upd.static_sizes().is_none() {
        // A dynamic update: its sizes are values in this trace.
        let us = args[1].sizes()?;
        if lin(0) {
            let z = dynshape::zeros(&us, upd.dtype)?;
            out[0] = Some(lax::dynamic_update_slice_clamped(&c, &z, &starts)?);
        }
        if lin(1) {
            out[1] = Some(dynshape::dynamic_slice(&c, &starts, &us)?);
        }
        return Ok(out);
    }
    if lin(0) {
        out[0] = Some(lax::dynamic_update_slice_clamped(
            &c,
            &zeros(upd)?,
            &starts,
        )?);
    }
    if lin(1) {
        out[1] = Some(lax::dynamic_slice_clamped(&c, &starts, &sizes(upd))?);
    }
    Ok(out)
}

/// A gather's transpose is the scatter-add of the cotangent into zeros.
fn gather_transpose(
    gp: &GatherParams,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let GatherParams {
        dimension_numbers: d,
        indices_are_sorted,
        mode,
        unique_indices,
        ..
    } = gp;
    let scatter: Primitive = ScatterParams {
        kind: ScatterKind::Add,
        dimension_numbers: ScatterDimensionNumbers {
            update_window_dims: d.offset_dims.clone(),
            inserted_window_dims: d.collapsed_slice_dims.clone(),
            scatter_dims_to_operand_dims: d.start_index_map.clone(),
            operand_batching_dims: d.operand_batching_dims.clone(),
            scatter_indices_batching_dims: d.start_indices_batching_dims.clone(),
        },
        indices_are_sorted: *indices_are_sorted,
        mode: *mode,
        unique_indices: *unique_indices,
        update_jaxpr: None,
    }
    .into();
    let z = zeros_of(&args[0])?;
    let idx = args[1].value(p.name())?.clone();
    Ok(only(args, 0, bind1(&scatter, &[z, idx, ct(cts)?])?))
}

/// `scatter` and `scatter-add`: the updates' cotangent is the gather of
/// the cotangent where they were written; the operand's is the cotangent
/// (less the overwritten positions for `scatter`).
fn scatter_transpose(
    sp: &ScatterParams,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let name = p.name();
    let lin = |i: usize| args[i].is_linear();
    let ScatterParams {
        kind,
        dimension_numbers: d,
        indices_are_sorted,
        mode,
        unique_indices,
        ..
    } = sp;
    let c = ct(cts)?;
    let idx = args[1].value(name)?.clone();
    let upd_shape = sizes(args[2].ty());
    let inverse = |v: &Array| {
        scatter_inverse_gather(
            d,
            v,
            &idx,
            &upd_shape,
            *indices_are_sorted,
            *mode,
            *unique_indices,
        )
    };
    let mut out = vec![None, None, None];
    if *kind == ScatterKind::Set && !*unique_indices {
        // Repeated indices: only the update that won a position
        // (and only operand positions no update touched) receive
        // its cotangent. Which update won is learnt by scattering
        // distinct ids the same way and gathering them back.
        let (ids, won) = scatter_winners(sp, &idx, &sizes(args[0].ty()), &upd_shape)?;
        let untouched = lax::eq(&won, &jnp::zeros_like(&won)?)?;
        if lin(2) {
            let hit = lax::eq(&ids, &inverse(&won)?)?;
            let g = inverse(&c)?;
            out[2] = Some(lax::select_n(&hit, &[jnp::zeros_like(&g)?, g])?);
        }
        if lin(0) {
            out[0] = Some(lax::select_n(&untouched, &[jnp::zeros_like(&c)?, c])?);
        }
        return Ok(out);
    }
    if lin(2) {
        out[2] = Some(inverse(&c)?);
    }
    if lin(0) {
        out[0] = Some(if *kind == ScatterKind::Set {
            // Positions overwritten by the updates get no cotangent.
            let z = zeros_of(&args[2])?;
            bind1(p, &[c, idx, z])?
        } else {
            c
        });
    }
    Ok(out)
}

/// Distinct positive ids for the update windows of a set-scatter `sp`
/// (broadcast over each window, shaped like the updates), and the scatter
/// of those ids into zeros: per operand element, the id of the update that
/// was written there, 0 where none was.
fn scatter_winners(
    sp: &ScatterParams,
    idx: &Array,
    op_shape: &[usize],
    upd_shape: &[usize],
) -> Result<(Array, Array)> {
    let d = &sp.dimension_numbers;
    let mut ids_shape = upd_shape.to_vec();
    for &w in d.update_window_dims.iter() {
        ids_shape[w as usize] = 1;
    }
    let n: usize = ids_shape.iter().product();
    let one = lax::convert_element_type(&Array::weak(1.0), DType::I32, false)?;
    let ids = lax::add(&lax::reshape(&lax::iota(DType::I32, n)?, &ids_shape)?, &one)?;
    let all: Vec<usize> = (0..ids_shape.len()).collect();
    let ids = lax::broadcast_in_dim(&ids, upd_shape, &all)?;
    // Same placement as `sp`, but no combiner: the ids are integers.
    let set: Primitive = ScatterParams {
        update_jaxpr: None,
        ..sp.clone()
    }
    .into();
    let won = bind1(
        &set,
        &[jnp::zeros(op_shape, DType::I32)?, idx.clone(), ids.clone()],
    )?;
    Ok((ids, won))
}

// -------------------------------------------------------------- batch --

fn range_ints(lo: usize, hi: usize) -> Ints {
    Ints::new((lo as i64..hi as i64).collect())
}

/// The starts as a `[n, k]` index array (each start batched or broadcast),
/// in one integer dtype.
fn stacked_starts(starts: &[Array], d: &[Option<usize>], n: usize) -> Result<Array> {
    let dtype = starts
        .iter()
        .map(Array::dtype)
        .find(|t| *t == DType::I64)
        .unwrap_or(DType::I32);
    let cols = starts
        .iter()
        .zip(d)
        .map(|(s, b)| {
            let s = lax::convert_element_type(&to_front(s, *b, n)?, dtype, false)?;
            lax::broadcast_in_dim(&s, &[n, 1], &[0])
        })
        .collect::<Result<Vec<_>>>()?;
    lax::concatenate(&cols, 1)
}

/// A zero start of the dtype the other starts use.
fn zero_start(starts: &[Array]) -> Result<Array> {
    let dtype = starts.first().map_or(DType::I32, Array::dtype);
    lax::convert_element_type(&Array::weak(0), dtype, false)
}

fn dynamic_slice_batch(
    sizes: &Ints,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let operand = to_front(&x[0], d[0], n)?;
    let starts = &x[1..];
    let rank = starts.len();
    if d[1..].iter().all(Option::is_none) {
        let mut args = vec![operand, zero_start(starts)?];
        args.extend(starts.iter().cloned());
        let q = Primitive::from(DynamicSliceParams {
            slice_sizes: prepend(sizes, n as i64),
        });
        return Ok((vec![bind1(&q, &args)?], vec![Some(0)]));
    }
    // dynamic_slice clamps its starts into bounds, as a CLIP gather does.
    let indices = stacked_starts(starts, &d[1..], n)?;
    let q = Primitive::from(GatherParams {
        dimension_numbers: GatherDimensionNumbers {
            offset_dims: range_ints(1, rank + 1),
            collapsed_slice_dims: Ints::default(),
            start_index_map: range_ints(1, rank + 1),
            operand_batching_dims: Ints::new(vec![0]),
            start_indices_batching_dims: Ints::new(vec![0]),
        },
        fill_value: None,
        indices_are_sorted: false,
        mode: GatherScatterMode::Clip,
        slice_sizes: prepend(sizes, 1),
        unique_indices: false,
    });
    Ok((vec![bind1(&q, &[operand, indices])?], vec![Some(0)]))
}

fn dynamic_update_slice_batch(x: &[Array], d: &[Option<usize>], n: usize) -> Result<BatchOuts> {
    let operand = to_front(&x[0], d[0], n)?;
    let update = to_front(&x[1], d[1], n)?;
    let starts = &x[2..];
    let rank = starts.len();
    if d[2..].iter().all(Option::is_none) {
        let mut args = vec![operand, update, zero_start(starts)?];
        args.extend(starts.iter().cloned());
        return Ok((
            vec![bind1(
                &Primitive::Indexing(Indexing::DynamicUpdateSlice),
                &args,
            )?],
            vec![Some(0)],
        ));
    }
    let indices = stacked_starts(starts, &d[2..], n)?;
    let q = Primitive::from(ScatterParams {
        kind: ScatterKind::Set,
        dimension_numbers: ScatterDimensionNumbers {
            update_window_dims: range_ints(1, rank + 1),
            inserted_window_dims: Ints::default(),
            scatter_dims_to_operand_dims: range_ints(1, rank + 1),
            operand_batching_dims: Ints::new(vec![0]),
            scatter_indices_batching_dims: Ints::new(vec![0]),
        },
        indices_are_sorted: true,
        mode: GatherScatterMode::Clip,
        unique_indices: true,
        update_jaxpr: None,
    });
    Ok((vec![bind1(&q, &[operand, indices, update])?], vec![Some(0)]))
}

fn gather_batch(
    gp: &GatherParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let GatherParams {
        dimension_numbers: dn,
        fill_value,
        indices_are_sorted,
        mode,
        slice_sizes,
        unique_indices,
    } = gp;
    let (operand, indices, new_dn, sizes) = match (d[0], d[1]) {
        (Some(_), None) => {
            // The batch dim is a full-size window dimension that lands first.
            let dn = GatherDimensionNumbers {
                offset_dims: prepend(&shift_ints(&dn.offset_dims), 0),
                collapsed_slice_dims: shift_ints(&dn.collapsed_slice_dims),
                start_index_map: shift_ints(&dn.start_index_map),
                operand_batching_dims: shift_ints(&dn.operand_batching_dims),
                start_indices_batching_dims: dn.start_indices_batching_dims.clone(),
            };
            (
                to_front(&x[0], d[0], n)?,
                x[1].clone(),
                dn,
                prepend(slice_sizes, n as i64),
            )
        }
        (None, Some(_)) => {
            // A leading batch dim of the indices is a leading output dim.
            let dn = GatherDimensionNumbers {
                offset_dims: shift_ints(&dn.offset_dims),
                start_indices_batching_dims: shift_ints(&dn.start_indices_batching_dims),
                ..dn.clone()
            };
            (
                x[0].clone(),
                to_front(&x[1], d[1], n)?,
                dn,
                slice_sizes.clone(),
            )
        }
        _ => {
            let dn = GatherDimensionNumbers {
                offset_dims: shift_ints(&dn.offset_dims),
                collapsed_slice_dims: shift_ints(&dn.collapsed_slice_dims),
                start_index_map: shift_ints(&dn.start_index_map),
                operand_batching_dims: prepend(&shift_ints(&dn.operand_batching_dims), 0),
                start_indices_batching_dims: prepend(
                    &shift_ints(&dn.start_indices_batching_dims),
                    0,
                ),
            };
            (
                to_front(&x[0], d[0], n)?,
                to_front(&x[1], d[1], n)?,
                dn,
                prepend(slice_sizes, 1),
            )
        }
    };
    let q = Primitive::from(GatherParams {
        dimension_numbers: new_dn,
        fill_value: *fill_value,
        indices_are_sorted: *indices_are_sorted,
        mode: *mode,
        slice_sizes: sizes,
        unique_indices: *unique_indices,
    });
    Ok((vec![bind1(&q, &[operand, indices])?], vec![Some(0)]))
}

fn scatter_batch(
    sp: &ScatterParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let ScatterParams {
        kind,
        dimension_numbers: dn,
        indices_are_sorted,
        mode,
        unique_indices,
        update_jaxpr,
    } = sp;
    // Operand, indices and updates all get a leading batch dim, paired
    // through the batching dims (update dim 0 is then a scatter dim that
    // matches indices dim 0).
    let args = x
        .iter()
        .zip(d)
        .map(|(a, b)| to_front(a, *b, n))
        .collect::<Result<Vec<_>>>()?;
    let q = Primitive::from(ScatterParams {
        kind: *kind,
        dimension_numbers: ScatterDimensionNumbers {
            update_window_dims: shift_ints(&dn.update_window_dims),
            inserted_window_dims: shift_ints(&dn.inserted_window_dims),
            scatter_dims_to_operand_dims: shift_ints(&dn.scatter_dims_to_operand_dims),
            operand_batching_dims: prepend(&shift_ints(&dn.operand_batching_dims), 0),
            scatter_indices_batching_dims: prepend(
                &shift_ints(&dn.scatter_indices_batching_dims),
                0,
            ),
        },
        indices_are_sorted: *indices_are_sorted,
        mode: *mode,
        unique_indices: *unique_indices,
        update_jaxpr: update_jaxpr.clone(),
    });
    Ok((vec![bind1(&q, &args)?], vec![Some(0)]))
}
