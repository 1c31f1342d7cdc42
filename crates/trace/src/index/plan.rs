//! The general indexing path: an index becomes `gather` (reads) or
//! `scatter` (`.at` updates) dimension numbers, as JAX's
//! `_index_to_gather` does.
//!
//! Layout: integer arrays (and, alongside them, integers) are "advanced"
//! and broadcast together; their dims go where the first of them was when
//! they are adjacent, else first (NumPy's rule). Unit-step slices are
//! window (offset) dims; other slices are `iota`-built index columns with a
//! batch dim of their own. Gather places batch dims anywhere, so no
//! transpose is needed.

use super::normalize::Entry;
use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy::{broadcast_to, promote::broadcast_shape_lists};
use crate::stage::{trace_flat, StageMode};
use jaxon_ir::primitive::ScatterParams;
use jaxon_ir::primitive::{
    GatherDimensionNumbers, GatherScatterMode, Ints, ScatterDimensionNumbers, ScatterKind,
};
use jaxon_ir::{Aval, DType, Primitive, ShapedArray};
use std::sync::Arc;

/// One dim of the result (without new axes).
#[derive(Clone, Copy, Debug)]
enum OutDim {
    /// A window dim over operand dim `.0`.
    Offset(usize),
    /// Dim `.0` of the advanced indices' broadcast shape.
    Adv(usize),
    /// The batch dim of the strided slice on operand dim `.0`.
    Strided(usize),
}

struct Plan {
    dnums: GatherDimensionNumbers,
    indices: Option<Array>,
    slice_sizes: Vec<usize>,
    out_shape: Vec<usize>,
    /// Result positions of new axes.
    newaxes: Vec<usize>,
    /// No arrays: indices are sorted and unique.
    static_only: bool,
    /// Result dims (without new axes) of negative-step slices, gathered in
    /// ascending order and reversed afterwards.
    reversed: Vec<usize>,
}

fn ints(v: &[usize]) -> Ints {
    Ints::from(v)
}

fn plan(x: &Array, entries: &[Entry]) -> Result<Plan> {
    let shape = x.try_shape()?;
    let has_array = entries.iter().any(|e| matches!(e, Entry::Array { .. }));
    let is_adv = |e: &Entry| match e {
        Entry::Array { .. } => true,
        Entry::Int { .. } => has_array,
        _ => false,
    };
    // Broadcast shape of the advanced indices, and their placement.
    let mut bshape: Vec<usize> = Vec::new();
    for e in entries {
        if let Entry::Array { a, .. } = e {
            bshape = broadcast_shape_lists("indexing", &bshape, &a.try_shape()?)?;
        }
    }
    let adv_pos: Vec<usize> = (0..entries.len())
        .filter(|&i| is_adv(&entries[i]))
        .collect();
    let adjacent = adv_pos.windows(2).all(|w| w[1] == w[0] + 1);
    let mut layout: Vec<OutDim> = Vec::new();
    let mut newaxes = Vec::new();
    let mut placed = false;
    let place = |layout: &mut Vec<OutDim>| layout.extend((0..bshape.len()).map(OutDim::Adv));
    if !adv_pos.is_empty() && !adjacent {
        place(&mut layout);
        placed = true;
    }
    for e in entries {
        match e {
            Entry::NewAxis => newaxes.push(layout.len() + newaxes.len()),
            Entry::Slice { dim, step: 1, .. } => layout.push(OutDim::Offset(*dim)),
            Entry::Slice { dim, .. } => layout.push(OutDim::Strided(*dim)),
            e if is_adv(e) => {
                if !placed {
                    place(&mut layout);
                    placed = true;
                }
            }
            Entry::Int { .. } | Entry::Array { .. } => {}
        }
    }
    let slice_len = |d: usize| {
        entries.iter().find_map(|e| match e {
            Entry::Slice { dim, len, .. } if *dim == d => Some(*len),
            _ => None,
        })
    };
    let out_shape: Vec<usize> = layout
        .iter()
        .map(|o| match *o {
            OutDim::Offset(d) | OutDim::Strided(d) => slice_len(d).unwrap_or(shape[d]),
            OutDim::Adv(k) => bshape[k],
        })
        .collect();
    let batch_pos: Vec<usize> = (0..layout.len())
        .filter(|&i| !matches!(layout[i], OutDim::Offset(_)))
        .collect();
    let mut ishape: Vec<usize> = batch_pos.iter().map(|&i| out_shape[i]).collect();
    ishape.push(1);
    let batch_index = |out_pos: usize| batch_pos.iter().position(|&p| p == out_pos).expect("batch");
    let adv_dims: Vec<usize> = (0..layout.len())
        .filter(|&i| matches!(layout[i], OutDim::Adv(_)))
        .map(batch_index)
        .collect();
    // First pass, in entry order: arrays wrap negative indices, strided
    // slices build their index vectors (ascending, reversed back after).
    let mut first: Vec<Option<Array>> = Vec::new();
    let mut reversed = Vec::new();
    for e in entries {
        first.push(match e {
            Entry::Array { dim, a } => Some(crate::numpy::wrap_negative(a, shape[*dim], false)?),
            Entry::Slice {
                dim,
                start,
                len,
                step,
                ..
            } if *step != 1 => {
                let iota = lax::iota(DType::I32, *len)?;
                let scaled = lax::mul(&Array::scalar(*step as i32), &iota)?;
                let idx = lax::add(&Array::scalar(*start as i32), &scaled)?;
                if *step < 0 {
                    let pos = layout
                        .iter()
                        .position(|o| matches!(o, OutDim::Strided(d) if d == dim))
                        .expect("strided dim");
                    reversed.push(pos);
                    Some(lax::rev(&idx, &[0])?)
                } else {
                    Some(idx)
                }
            }
            _ => None,
        });
    }
    // Second pass: one index column per indexed operand dim.
    let mut columns = Vec::new();
    let mut start_index_map = Vec::new();
    let mut collapsed = Vec::new();
    let mut slice_sizes = shape.clone();
    let column = |v: &Array, dims: &[usize]| lax::broadcast_in_dim(v, &ishape, dims);
    for (e, v) in entries.iter().zip(&first) {
        let dim = match e {
            Entry::Array { dim, a } => {
                let v = v.as_ref().expect("wrapped");
                let off = bshape.len() - a.ndim();
                if a.try_shape()? == bshape[off..] {
                    let dims: Vec<usize> = (0..a.ndim()).map(|k| adv_dims[off + k]).collect();
                    columns.push(column(v, &dims)?);
                } else {
                    // Size-1 dims broadcast first.
                    columns.push(column(&broadcast_to(v, &bshape)?, &adv_dims)?);
                }
                *dim
            }
            Entry::Int { dim, i } if has_array => {
                // Alongside arrays an integer is a (weak) scalar index
                // broadcast to the arrays' shape, as JAX does.
                let b = lax::broadcast_in_dim(&Array::weak(*i as i32), &bshape, &[])?;
                let b = lax::convert_element_type(&b, DType::I32, false)?;
                columns.push(column(&b, &adv_dims)?);
                *dim
            }
            Entry::Int { dim, i } => {
                columns.push(column(&Array::scalar(*i as i32), &[])?);
                *dim
            }
            Entry::Slice {
                dim,
                start,
                len,
                step: 1,
                ..
            } => {
                slice_sizes[*dim] = *len;
                if *start != 0 {
                    columns.push(column(&Array::scalar(*start as i32), &[])?);
                    start_index_map.push(*dim);
                }
                continue;
            }
            Entry::Slice { dim, .. } => {
                let pos = layout
                    .iter()
                    .position(|o| matches!(o, OutDim::Strided(d) if d == dim))
                    .expect("strided dim");
                let v = v.as_ref().expect("strided index");
                columns.push(column(v, &[batch_index(pos)])?);
                *dim
            }
            Entry::NewAxis => continue,
        };
        start_index_map.push(dim);
        collapsed.push(dim);
        slice_sizes[dim] = 1;
    }
    collapsed.sort_unstable();
    let indices = match columns.len() {
        0 => None,
        1 => columns.pop(),
        _ => Some(lax::concatenate(&columns, ishape.len() - 1)?),
    };
    let offset_dims: Vec<usize> = (0..layout.len())
        .filter(|&i| matches!(layout[i], OutDim::Offset(_)))
        .collect();
    Ok(Plan {
        dnums: GatherDimensionNumbers {
            offset_dims: ints(&offset_dims),
            collapsed_slice_dims: ints(&collapsed),
            start_index_map: ints(&start_index_map),
            ..Default::default()
        },
        indices,
        slice_sizes,
        out_shape,
        newaxes,
        static_only: !has_array,
        reversed,
    })
}

/// `x[idx]` through `gather`.
pub(crate) fn gather(x: &Array, entries: &[Entry]) -> Result<Array> {
    let p = plan(x, entries)?;
    let out = match &p.indices {
        Some(ind) => crate::numpy::gather(
            x,
            ind,
            p.dnums.clone(),
            &p.slice_sizes,
            GatherScatterMode::PromiseInBounds,
            None,
            false,
        )?,
        None => x.clone(),
    };
    let out = if p.reversed.is_empty() {
        out
    } else {
        lax::rev(&out, &p.reversed)?
    };
    if p.newaxes.is_empty() {
        Ok(out)
    } else {
        lax::expand_dims(&out, &p.newaxes)
    }
}

/// The scalar combiner jaxpr JAX attaches to `scatter-add` and friends.
fn combiner(kind: ScatterKind, dtype: DType) -> Result<Option<Arc<jaxon_ir::Jaxpr>>> {
    let f: fn(&Array, &Array) -> Result<Array> = match kind {
        ScatterKind::Set => return Ok(None),
        ScatterKind::Add => lax::add,
        ScatterKind::Mul => lax::mul,
        ScatterKind::Min => lax::min,
        ScatterKind::Max => lax::max,
    };
    let aval = Aval::Array(ShapedArray::scalar(dtype));
    let staged = trace_flat(StageMode::Base, &[aval.clone(), aval], |t| {
        Ok(vec![f(&t[0], &t[1])?])
    })?;
    Ok(Some(Arc::new(staged.jaxpr)))
}

/// `x.at[idx].<kind>(v)` through `scatter` (out-of-bounds updates drop).
pub(crate) fn scatter(x: &Array, entries: &[Entry], kind: ScatterKind, v: &Array) -> Result<Array> {
    let p = plan(x, entries)?;
    let v = lax::convert_element_type(v, x.dtype(), false)?;
    // Updates lose the new axes (which must be size 1 there).
    let v = {
        let vs = v.try_shape()?;
        if vs.len() > p.out_shape.len() {
            let extra = vs.len() - p.out_shape.len();
            if vs[..extra].iter().any(|&d| d != 1) {
                return Err(Error::ShapeMismatch {
                    op: "scatter update".into(),
                    lhs: format!("{vs:?}"),
                    rhs: format!("{:?}", p.out_shape),
                });
            }
            lax::reshape(&v, &vs[extra..])?
        } else {
            v
        }
    };
    let updates = broadcast_to(&v, &p.out_shape)?;
    let updates = if p.reversed.is_empty() {
        updates
    } else {
        lax::rev(&updates, &p.reversed)?
    };
    let Some(indices) = p.indices else {
        // The index covers the whole array: a plain elementwise update.
        return match kind {
            ScatterKind::Set => Ok(updates),
            ScatterKind::Add => lax::add(x, &updates),
            ScatterKind::Mul => lax::mul(x, &updates),
            ScatterKind::Min => lax::min(x, &updates),
            ScatterKind::Max => lax::max(x, &updates),
        };
    };
    let d = p.dnums;
    bind1(
        &Primitive::from(ScatterParams {
            kind,
            dimension_numbers: ScatterDimensionNumbers {
                update_window_dims: d.offset_dims,
                inserted_window_dims: d.collapsed_slice_dims,
                scatter_dims_to_operand_dims: d.start_index_map,
                ..Default::default()
            },
            indices_are_sorted: p.static_only,
            mode: GatherScatterMode::FillOrDrop,
            unique_indices: p.static_only,
            update_jaxpr: combiner(kind, x.dtype())?,
        }),
        &[x.clone(), indices, updates],
    )
}
