//! The slicing fast paths of indexing: static integers and slices become
//! `slice` (+ `rev` for negative steps) + `squeeze`; scalar traced integers
//! a `dynamic_slice`; `NewAxis` a final `broadcast_in_dim`.

use super::normalize::Entry;
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use jaxon_ir::DType;

/// Output positions of the new axes, given which entries keep an axis.
fn newaxis_positions(entries: &[Entry]) -> Vec<usize> {
    let mut pos = 0;
    let mut out = Vec::new();
    for e in entries {
        match e {
            Entry::NewAxis => {
                out.push(pos);
                pos += 1;
            }
            Entry::Slice { .. } => pos += 1,
            Entry::Array { a, .. } => pos += a.ndim(),
            Entry::Int { .. } => {}
        }
    }
    out
}

fn finish(out: Array, entries: &[Entry], squeeze: &[usize]) -> Result<Array> {
    let out = lax::squeeze(&out, squeeze)?;
    let new = newaxis_positions(entries);
    if new.is_empty() {
        Ok(out)
    } else {
        lax::expand_dims(&out, &new)
    }
}

/// Static integers and slices only: `slice`, `rev`, `squeeze`,
/// `broadcast_in_dim`. `None` when the index has arrays.
pub(crate) fn try_static(x: &Array, entries: &[Entry]) -> Result<Option<Array>> {
    if entries.iter().any(|e| matches!(e, Entry::Array { .. })) {
        return Ok(None);
    }
    let shape = x.try_shape()?;
    let r = shape.len();
    let (mut start, mut limit, mut strides) = (vec![0; r], shape.clone(), vec![1; r]);
    let mut rev = Vec::new();
    let mut squeeze = Vec::new();
    for e in entries {
        match *e {
            Entry::Int { dim, i } => {
                start[dim] = i;
                limit[dim] = i + 1;
                squeeze.push(dim);
            }
            Entry::Slice {
                dim,
                start: s,
                len,
                step,
                stop,
            } => {
                if len == 0 {
                    start[dim] = s.min(shape[dim]);
                    limit[dim] = start[dim];
                } else if step > 0 {
                    start[dim] = s;
                    limit[dim] = stop;
                    strides[dim] = step as usize;
                } else {
                    start[dim] = s - (len - 1) * (-step) as usize;
                    limit[dim] = stop;
                    strides[dim] = (-step) as usize;
                    if len > 1 {
                        rev.push(dim);
                    }
                }
            }
            Entry::NewAxis | Entry::Array { .. } => {}
        }
    }
    let whole = start.iter().all(|&s| s == 0) && limit == shape && strides.iter().all(|&s| s == 1);
    let mut out = x.clone();
    if !whole {
        let st = if strides.iter().all(|&s| s == 1) {
            None
        } else {
            Some(strides.as_slice())
        };
        out = lax::slice(&out, &start, &limit, st)?;
    }
    if !rev.is_empty() {
        out = lax::rev(&out, &rev)?;
    }
    finish(out, entries, &squeeze).map(Some)
}

/// Wraps a negative start: `select_n(s < 0, s, s + n)`, staged as JAX does
/// even for static starts.
fn wrap_start(s: &Array, n: usize) -> Result<Array> {
    let zero = Array::scalar(0i32);
    let neg = lax::lt(s, &zero)?;
    let shifted = lax::add(s, &Array::scalar(n as i32))?;
    lax::select_n(&neg, &[s.clone(), shifted])
}

/// Scalar integer arrays with static integers and unit-step slices:
/// one `dynamic_slice` (starts clamp into bounds) and a `squeeze`.
pub(crate) fn try_dynamic(x: &Array, entries: &[Entry]) -> Result<Option<Array>> {
    let ok = entries.iter().all(|e| match e {
        Entry::Array { a, .. } => a.ndim() == 0,
        Entry::Slice { step, .. } => *step == 1,
        Entry::Int { .. } | Entry::NewAxis => true,
    });
    if !ok {
        return Ok(None);
    }
    let shape = x.try_shape()?;
    let r = shape.len();
    // Traced indices are converted first, then every start wraps.
    let mut raw = Vec::with_capacity(r);
    let mut sizes = shape.clone();
    let mut squeeze = Vec::new();
    for e in entries {
        raw.push(match e {
            Entry::Array { dim, a } => {
                squeeze.push(*dim);
                sizes[*dim] = 1;
                (*dim, lax::convert_element_type(a, DType::I32, false)?)
            }
            Entry::Int { dim, i } => {
                squeeze.push(*dim);
                sizes[*dim] = 1;
                (*dim, Array::scalar(*i as i32))
            }
            Entry::Slice {
                dim, start, len, ..
            } => {
                sizes[*dim] = *len;
                (*dim, Array::scalar(*start as i32))
            }
            Entry::NewAxis => continue,
        });
    }
    let starts = raw
        .iter()
        .map(|(dim, s)| wrap_start(s, shape[*dim]))
        .collect::<Result<Vec<_>>>()?;
    let out = lax::dynamic_slice_clamped(x, &starts, &sizes)?;
    finish(out, entries, &squeeze).map(Some)
}
