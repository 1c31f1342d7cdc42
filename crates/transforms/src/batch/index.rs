//! Batching of the indexing primitives: `dynamic_slice` and
//! `dynamic_update_slice` (batched starts become a gather / scatter with
//! batching dims), `gather` and `scatter`.
//!
//! Every rule puts the batch dimension first and, where both operand and
//! indices are batched, pairs them through `operand_batching_dims` /
//! `*_indices_batching_dims`, so no loop or one-hot is needed.

use super::rules::{prepend, shift_ints, Outs};
use super::to_front;
use jaxon_ir::primitive::{DynamicSliceParams, GatherParams, Indexing, ScatterParams};
use jaxon_ir::primitive::{
    GatherDimensionNumbers, GatherScatterMode, Ints, ScatterDimensionNumbers, ScatterKind,
};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, Array};

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

pub(super) fn dynamic_slice(
    sizes: &Ints,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<Outs> {
    let operand = to_front(&x[0], d[0], n)?;
    let starts = &x[1..];
    let rank = starts.len();
    if d[1..].iter().all(Option::is_none) {
        let mut args = vec![operand, zero_start(starts)?];
        args.extend(starts.iter().cloned());
        let q = Primitive::Indexing(Indexing::DynamicSlice(DynamicSliceParams {
            slice_sizes: prepend(sizes, n as i64),
        }));
        return Ok((vec![bind1(&q, &args)?], vec![Some(0)]));
    }
    // dynamic_slice clamps its starts into bounds, as a CLIP gather does.
    let indices = stacked_starts(starts, &d[1..], n)?;
    let q = Primitive::Indexing(Indexing::Gather(GatherParams {
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
    }));
    Ok((vec![bind1(&q, &[operand, indices])?], vec![Some(0)]))
}

pub(super) fn dynamic_update_slice(x: &[Array], d: &[Option<usize>], n: usize) -> Result<Outs> {
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
    let q = Primitive::Indexing(Indexing::Scatter(ScatterParams {
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
    }));
    Ok((vec![bind1(&q, &[operand, indices, update])?], vec![Some(0)]))
}

pub(super) fn gather(p: &Primitive, x: &[Array], d: &[Option<usize>], n: usize) -> Result<Outs> {
    let Primitive::Indexing(Indexing::Gather(GatherParams {
        dimension_numbers: dn,
        fill_value,
        indices_are_sorted,
        mode,
        slice_sizes,
        unique_indices,
    })) = p
    else {
        return Err(Error::InvalidArgument(
            "gather rule on another primitive".into(),
        ));
    };
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
    let q = Primitive::Indexing(Indexing::Gather(GatherParams {
        dimension_numbers: new_dn,
        fill_value: *fill_value,
        indices_are_sorted: *indices_are_sorted,
        mode: *mode,
        slice_sizes: sizes,
        unique_indices: *unique_indices,
    }));
    Ok((vec![bind1(&q, &[operand, indices])?], vec![Some(0)]))
}

pub(super) fn scatter(p: &Primitive, x: &[Array], d: &[Option<usize>], n: usize) -> Result<Outs> {
    let Primitive::Indexing(Indexing::Scatter(ScatterParams {
        kind,
        dimension_numbers: dn,
        indices_are_sorted,
        mode,
        unique_indices,
        update_jaxpr,
    })) = p
    else {
        return Err(Error::InvalidArgument(
            "scatter rule on another primitive".into(),
        ));
    };
    // Operand, indices and updates all get a leading batch dim, paired
    // through the batching dims (update dim 0 is then a scatter dim that
    // matches indices dim 0).
    let args = x
        .iter()
        .zip(d)
        .map(|(a, b)| to_front(a, *b, n))
        .collect::<Result<Vec<_>>>()?;
    let q = Primitive::Indexing(Indexing::Scatter(ScatterParams {
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
    }));
    Ok((vec![bind1(&q, &args)?], vec![Some(0)]))
}
