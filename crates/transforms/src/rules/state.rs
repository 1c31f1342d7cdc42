//! Rules of the state family (`get`, `swap`, `addupdate` over `Ref`s): jvp,
//! transpose and batching, side by side.
//!
//! Jvp: a `Ref`'s tangent is a second `Ref` of the same type (JAX's pair
//! of refs): reads of the primal ref read the tangent ref at the same
//! indices, and writes into the primal ref write the value's tangent into
//! the tangent ref. The primal outputs always come from a bind on primal
//! operands alone, so linearize keeps the primal work known.
//!
//! Transpose: not implemented (refs are discharged before reverse mode).
//!
//! Batching: refs cannot be transposed, so a batched ref keeps its batch
//! dimension where it is. Every case is rewritten into the most general
//! indexer: one integer-array index per dimension of the (batched) ref,
//! all broadcast to `[n, *unbatched result shape]`. Slices become `start +
//! stride * iota`, integer indices are broadcast, the ref's batch
//! dimension is indexed by `iota(n)`, and batched index operands simply
//! keep their batch axis at 0. An all-array indexer is contiguous, so the
//! result is `[n, *shape]` batched at 0, and a written value is moved to
//! that layout. Starts are clamped here as the unbatched primitive would
//! clamp them (slices fit inside the dimension, dynamic integers into it),
//! since the array form only clamps element by element.

use super::{transpose_unsupported, BatchOuts, Cts, JvpOuts};
use crate::batch::to_front;
use crate::transpose::LinArg;
use crate::util::zeros_like;
use jaxon_ir::primitive::{AddUpdateParams, GetParams, State, SwapParams};
use jaxon_ir::primitive::{BinaryOp, IndexEntry, IndexValue, Indexer};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, lax, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(s: &State, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match s {
        State::Get(GetParams { indexers }) => jvp_state(StateOp::Get, indexers, p, x, t),
        State::Swap(SwapParams { indexers }) => jvp_state(StateOp::Swap, indexers, p, x, t),
        State::AddUpdate(AddUpdateParams { indexers }) => {
            jvp_state(StateOp::AddUpdate, indexers, p, x, t)
        }
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    s: &State,
    p: &Primitive,
    _args: &[LinArg],
    _cts: &[Option<Array>],
) -> Result<Cts> {
    match s {
        State::Get(_) | State::Swap(_) | State::AddUpdate(_) => transpose_unsupported(p),
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    s: &State,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match s {
        State::Get(GetParams { indexers }) => batch_state(StateOp::Get, indexers, p, x, d, n),
        State::Swap(SwapParams { indexers }) => batch_state(StateOp::Swap, indexers, p, x, d, n),
        State::AddUpdate(AddUpdateParams { indexers }) => {
            batch_state(StateOp::AddUpdate, indexers, p, x, d, n)
        }
    }
}

/// Which state primitive a rule is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateOp {
    /// `get`.
    Get,
    /// `swap`.
    Swap,
    /// `addupdate`.
    AddUpdate,
}

/// The position of the first operand after the ref and its index operands.
pub(crate) fn value_pos(indexers: &[Indexer]) -> usize {
    let mut end = 1;
    for e in indexers.iter().flat_map(|ix| &ix.entries) {
        if let IndexEntry::Slice {
            start: IndexValue::Dynamic(k),
            ..
        }
        | IndexEntry::Int(IndexValue::Dynamic(k))
        | IndexEntry::Array(k) = e
        {
            end = end.max(k + 1);
        }
    }
    end
}

// ---------------------------------------------------------------- jvp --

/// The jvp of `get`, `swap` or `addupdate` (`x[0]` is the ref).
fn jvp_state(
    op: StateOp,
    indexers: &[Indexer],
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let k = value_pos(indexers);
    let p_out = bind(p, x)?;
    let with_ref = |r: &Array, v: Option<Array>| -> Vec<Array> {
        let mut ops = vec![r.clone()];
        ops.extend_from_slice(&x[1..k]);
        ops.extend(v);
        ops
    };
    let ref_t = t[0].as_ref();
    let val_t = t.get(k).cloned().flatten();
    let t_out = match op {
        // Index operands are integers, so a non-zero tangent is the ref's.
        StateOp::Get => match ref_t {
            Some(r) => vec![Some(bind(p, &with_ref(r, None))?.remove(0))],
            None => vec![None],
        },
        StateOp::Swap => match (ref_t, val_t) {
            (Some(r), v) => {
                let v = match v {
                    Some(v) => v,
                    None => zeros_like(&x[k])?,
                };
                vec![Some(bind(p, &with_ref(r, Some(v)))?.remove(0))]
            }
            (None, Some(_)) => return Err(no_tangent_ref(p)),
            (None, None) => vec![None],
        },
        StateOp::AddUpdate => match (ref_t, val_t) {
            (Some(r), Some(v)) => {
                bind(p, &with_ref(r, Some(v)))?;
                Vec::new()
            }
            (None, Some(_)) => return Err(no_tangent_ref(p)),
            (_, None) => Vec::new(),
        },
    };
    Ok((p_out, t_out))
}

/// A tangent written into a ref that has none: its tangent ref would have
/// to be created by whoever allocated the ref (e.g. `run_state`), which is
/// outside this equation.
fn no_tangent_ref(p: &Primitive) -> Error {
    Error::Unsupported(format!(
        "jvp of `{}`: a value with a non-zero tangent is written into a Ref without a \
         tangent Ref; mark the Ref's tangent as non-zero (jvp_jaxpr's `nonzero`)",
        p.name()
    ))
}

// -------------------------------------------------------------- batch --

fn unsupported(p: &Primitive, why: &str) -> Error {
    Error::Unsupported(format!("vmap of `{}`: {why}", p.name()))
}

/// An `i32` array of shape `full`, broadcasting `x` (whose dims go to
/// `dims`).
fn bcast_i32(x: &Array, full: &[usize], dims: &[usize]) -> Result<Array> {
    let x = if x.dtype() == DType::I32 {
        x.clone()
    } else {
        lax::convert_element_type(x, DType::I32, false)?
    };
    lax::broadcast_in_dim(&x, full, dims)
}

fn const_i32(v: i64, full: &[usize]) -> Result<Array> {
    bcast_i32(&Array::scalar(v as i32), full, &[])
}

/// `x` clamped into `[lo, hi]` (all of shape `full`).
fn clamp_i32(x: &Array, lo: i64, hi: i64, full: &[usize]) -> Result<Array> {
    let x = lax::binary(BinaryOp::Min, x, &const_i32(hi, full)?)?;
    lax::binary(BinaryOp::Max, &x, &const_i32(lo, full)?)
}

/// NumPy broadcasting of index shapes.
fn broadcast_shapes(p: &Primitive, shapes: &[Vec<usize>]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1; rank];
    for s in shapes {
        for (j, &n) in s.iter().enumerate() {
            let o = &mut out[rank - s.len() + j];
            if *o == 1 {
                *o = n;
            } else if n != 1 && n != *o {
                return Err(unsupported(
                    p,
                    &format!("index shapes {shapes:?} do not broadcast"),
                ));
            }
        }
    }
    Ok(out)
}

/// The result axis of the slice entry `j` of `entries` (NumPy layout:
/// integer-index dimensions stay in place when adjacent, else go first).
fn slice_out_axis(entries: &[IndexEntry], x: &[Array], j: usize) -> usize {
    let mut int_pos = Vec::new();
    let mut block_rank = 0;
    for (i, e) in entries.iter().enumerate() {
        match e {
            IndexEntry::Slice { .. } => {}
            IndexEntry::Int(_) => int_pos.push(i),
            IndexEntry::Array(k) => {
                int_pos.push(i);
                block_rank = block_rank.max(x.get(*k).map_or(0, Array::ndim));
            }
        }
    }
    let before = entries[..j]
        .iter()
        .filter(|e| matches!(e, IndexEntry::Slice { .. }))
        .count();
    let contiguous = int_pos.windows(2).all(|w| w[1] == w[0] + 1);
    let block_at = match int_pos.first() {
        Some(&f) if contiguous => f,
        _ => 0,
    };
    if int_pos.is_empty() || before < block_at {
        before
    } else {
        before + block_rank
    }
}

/// The common case of a batched ref with unbatched indices: a full slice
/// over the batch dimension joins each indexer, and the batch dimension
/// moves to wherever that slice lands in the result.
fn batched_ref_only(
    op: StateOp,
    indexers: &[Indexer],
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    rd: usize,
    k_val: usize,
) -> Result<BatchOuts> {
    let mut q = rd;
    let mut new = Vec::with_capacity(indexers.len());
    for ix in indexers {
        let mut entries = ix.entries.clone();
        entries.insert(
            q.min(entries.len()),
            IndexEntry::Slice {
                start: IndexValue::Static(0),
                size: n,
                stride: 1,
            },
        );
        q = slice_out_axis(&entries, x, q);
        new.push(Indexer { entries });
    }
    let mut ops = x[..k_val].to_vec();
    let q_prim = match op {
        StateOp::Get => Primitive::from(GetParams { indexers: new }),
        StateOp::Swap => Primitive::from(SwapParams { indexers: new }),
        StateOp::AddUpdate => Primitive::from(AddUpdateParams { indexers: new }),
    };
    if op != StateOp::Get {
        let v = x
            .get(k_val)
            .ok_or_else(|| unsupported(&q_prim, "missing value operand"))?;
        ops.push(crate::batch::move_bdim(v, d[k_val], q, n)?);
    }
    let outs = bind(&q_prim, &ops)?;
    let dims = vec![Some(q); outs.len()];
    Ok((outs, dims))
}

/// The batching rule of `get` / `swap` / `addupdate` (`x[0]` is the ref).
fn batch_state(
    op: StateOp,
    indexers: &[Indexer],
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let k_val = value_pos(indexers);
    let rd = d[0];
    if let Some(r) = rd {
        if d[1..k_val.min(d.len())].iter().all(Option::is_none) {
            return batched_ref_only(op, indexers, x, d, n, r, k_val);
        }
    }
    if rd.is_none() && op != StateOp::Get {
        return Err(unsupported(
            p,
            "a batched value or index written into an unbatched Ref (every batch element \
             would write the same memory)",
        ));
    }
    let mut ref_shape = x[0].try_shape()?;
    if let Some(r) = rd {
        ref_shape.remove(r);
    }
    let entries: Vec<IndexEntry> = match indexers {
        [] => ref_shape
            .iter()
            .map(|&s| IndexEntry::Slice {
                start: IndexValue::Static(0),
                size: s,
                stride: 1,
            })
            .collect(),
        [ix] => ix.entries.clone(),
        _ => {
            return Err(unsupported(
                p,
                "more than one indexer (apply them one at a time)",
            ))
        }
    };
    if entries.len() != ref_shape.len() {
        return Err(unsupported(p, "an indexer shorter than the Ref"));
    }
    // Unbatched shape of each array index operand.
    let ushape = |k: usize| -> Result<Vec<usize>> {
        let mut s = x[k].try_shape()?;
        if let Some(b) = d[k] {
            s.remove(b);
        }
        Ok(s)
    };
    let mut int_shapes = Vec::new();
    let mut int_pos = Vec::new();
    for (j, e) in entries.iter().enumerate() {
        match e {
            IndexEntry::Slice { .. } => {}
            IndexEntry::Int(_) => {
                int_pos.push(j);
                int_shapes.push(Vec::new());
            }
            IndexEntry::Array(k) => {
                int_pos.push(j);
                int_shapes.push(ushape(*k)?);
            }
        }
    }
    let block = broadcast_shapes(p, &int_shapes)?;
    let contiguous = int_pos.windows(2).all(|w| w[1] == w[0] + 1);
    // Where the integer block starts in the unbatched result.
    let block_at = match int_pos.first() {
        Some(&f) if contiguous => f,
        _ => 0,
    };
    // Result axis of each slice entry, and the unbatched result shape.
    let mut out_shape = Vec::new();
    let mut slice_axis = vec![0; entries.len()];
    for (j, e) in entries.iter().enumerate() {
        if let IndexEntry::Slice { size, .. } = e {
            let i = out_shape.len();
            slice_axis[j] = if i < block_at || int_pos.is_empty() {
                i
            } else {
                i + block.len()
            };
            out_shape.push(*size);
        }
    }
    if !int_pos.is_empty() {
        out_shape.splice(block_at..block_at, block.iter().copied());
    }
    let mut full = vec![n];
    full.extend_from_slice(&out_shape);
    // Index operand k, broadcast to `full` with its own dims at `dims`.
    let operand = |k: usize, dims: &[usize]| -> Result<Array> {
        match d[k] {
            Some(b) => {
                let v = to_front(&x[k], Some(b), n)?;
                let mut all = vec![0];
                all.extend_from_slice(dims);
                bcast_i32(&v, &full, &all)
            }
            None => bcast_i32(&x[k], &full, dims),
        }
    };
    let mut arrays = Vec::with_capacity(entries.len() + 1);
    for (j, e) in entries.iter().enumerate() {
        let dim = ref_shape[j] as i64;
        let a = match e {
            IndexEntry::Slice {
                start,
                size,
                stride,
            } => {
                let span = if *size == 0 {
                    0
                } else {
                    ((size - 1) * stride + 1) as i64
                };
                let s = match start {
                    IndexValue::Static(s) => const_i32((*s).clamp(0, (dim - span).max(0)), &full)?,
                    IndexValue::Dynamic(k) => {
                        clamp_i32(&operand(*k, &[])?, 0, (dim - span).max(0), &full)?
                    }
                };
                let io = lax::broadcasted_iota(DType::I32, &full, 1 + slice_axis[j])?;
                let io = lax::binary(BinaryOp::Mul, &io, &const_i32(*stride as i64, &full)?)?;
                lax::binary(BinaryOp::Add, &s, &io)?
            }
            IndexEntry::Int(IndexValue::Static(s)) => {
                let s = if *s < 0 { s + dim } else { *s };
                const_i32(s.clamp(0, (dim - 1).max(0)), &full)?
            }
            IndexEntry::Int(IndexValue::Dynamic(k)) => {
                clamp_i32(&operand(*k, &[])?, 0, (dim - 1).max(0), &full)?
            }
            IndexEntry::Array(k) => {
                let r = ushape(*k)?.len();
                let off = 1 + block_at + block.len() - r;
                let dims: Vec<usize> = (off..off + r).collect();
                operand(*k, &dims)?
            }
        };
        arrays.push(a);
    }
    if let Some(r) = rd {
        arrays.insert(r, lax::broadcasted_iota(DType::I32, &full, 0)?);
    }
    let new_entries = (0..arrays.len())
        .map(|i| IndexEntry::Array(i + 1))
        .collect();
    let indexers = vec![Indexer {
        entries: new_entries,
    }];
    let mut ops = vec![x[0].clone()];
    ops.extend(arrays);
    let q = match op {
        StateOp::Get => Primitive::from(GetParams { indexers }),
        StateOp::Swap => Primitive::from(SwapParams { indexers }),
        StateOp::AddUpdate => Primitive::from(AddUpdateParams { indexers }),
    };
    if op != StateOp::Get {
        let v = x
            .get(k_val)
            .ok_or_else(|| unsupported(p, "missing value operand"))?;
        ops.push(to_front(v, d[k_val], n)?);
    }
    let outs = bind(&q, &ops)?;
    let dims = vec![Some(0); outs.len()];
    Ok((outs, dims))
}
