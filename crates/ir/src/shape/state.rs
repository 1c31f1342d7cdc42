//! Shape rules of the state and Pallas primitives: `get`, `swap`,
//! `addupdate`, masked `load`/`store`, atomics and `pallas_call`.
//!
//! Operand layout: the `Ref` first, then the dynamic index operands (at the
//! eqn positions their `IndexValue::Dynamic(k)` / `IndexEntry::Array(k)`
//! name), then the value, mask and `other` operands where present.

use super::elementwise::broadcast_shapes;
use super::{fmt_aval, fmt_shape, fmt_ty, same_type, Cx};
use crate::aval::{Aval, Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{AtomicOp, BlockMapping, IndexEntry, IndexValue, Indexer};

/// The referenced type and the number of index operands after the ref.
fn ref_and_indices<'a>(
    cx: &'a Cx,
    indexers: &[Indexer],
) -> Result<(&'a ShapedArray, usize), IrError> {
    cx.min_arity(1)?;
    let r = match &cx.avals[0] {
        Aval::Ref(r) => &r.inner,
        a @ Aval::Array(_) => {
            return Err(cx.err(format!(
                "the first operand must be a Ref, got {}",
                fmt_aval(a)
            )))
        }
    };
    let mut positions = Vec::new();
    for e in indexers.iter().flat_map(|ix| &ix.entries) {
        match e {
            IndexEntry::Slice {
                start: IndexValue::Dynamic(k),
                ..
            }
            | IndexEntry::Int(IndexValue::Dynamic(k))
            | IndexEntry::Array(k) => positions.push(*k),
            IndexEntry::Slice {
                start: IndexValue::Static(_),
                ..
            }
            | IndexEntry::Int(IndexValue::Static(_)) => {}
        }
    }
    positions.sort_unstable();
    positions.dedup();
    let n = positions.len();
    if positions.iter().any(|&k| k == 0 || k > n) || cx.avals.len() < 1 + n {
        return Err(cx.err(format!(
            "index operand positions {positions:?} must be 1..={n} within {} operand(s)",
            cx.avals.len()
        )));
    }
    Ok((r, n))
}

/// The type of `ref[indexers...]`.
fn indexed(cx: &Cx, r: &ShapedArray, indexers: &[Indexer]) -> Result<ShapedArray, IrError> {
    let mut cur = r.clone();
    for ix in indexers {
        if ix.entries.len() != cur.ndim() {
            return Err(cx.err(format!(
                "an indexer has {} entries for a Ref of type {}",
                ix.entries.len(),
                fmt_ty(&cur)
            )));
        }
        let mut int_shapes: Vec<ShapedArray> = Vec::new();
        let mut is_int = Vec::new();
        let mut slice_shape = Vec::new();
        for (e, &d) in ix.entries.iter().zip(&cur.shape) {
            match e {
                IndexEntry::Slice {
                    start,
                    size,
                    stride,
                } => {
                    if *stride == 0 {
                        return Err(cx.err("slice strides must be positive"));
                    }
                    match start {
                        IndexValue::Static(s) => {
                            let last = *s + (*size as i64 - 1).max(0) * *stride as i64;
                            let fits = *s >= 0
                                && match d {
                                    Dim::Const(n) => *size == 0 || last < n as i64,
                                    Dim::Var(_) => true,
                                };
                            if !fits {
                                return Err(cx.err(format!(
                                    "slice start={s} size={size} stride={stride} is out of bounds for {}",
                                    fmt_ty(&cur)
                                )));
                            }
                        }
                        IndexValue::Dynamic(k) => cx.int_scalar(*k, "a dynamic slice start")?,
                    }
                    is_int.push(false);
                    slice_shape.push(Dim::Const(*size));
                }
                IndexEntry::Int(v) => {
                    if let IndexValue::Dynamic(k) = v {
                        cx.int_scalar(*k, "an integer index")?;
                    }
                    is_int.push(true);
                    int_shapes.push(ShapedArray::scalar(DType::I32));
                }
                IndexEntry::Array(k) => {
                    let a = cx.arr(*k)?;
                    if !a.dtype.is_int() {
                        return Err(
                            cx.err(format!("an array index must be integer, got {}", fmt_ty(a)))
                        );
                    }
                    is_int.push(true);
                    int_shapes.push(a.clone());
                }
            }
        }
        let refs: Vec<&ShapedArray> = int_shapes.iter().collect();
        let int_shape = broadcast_shapes(cx, &refs)?;
        let pos: Vec<usize> = (0..is_int.len()).filter(|&i| is_int[i]).collect();
        let contiguous = pos.windows(2).all(|w| w[1] == w[0] + 1);
        let shape = match pos.first() {
            None => slice_shape,
            Some(_) if !contiguous => int_shape.into_iter().chain(slice_shape).collect(),
            Some(&p) => {
                let mut s = slice_shape[..p].to_vec();
                s.extend(int_shape);
                s.extend_from_slice(&slice_shape[p..]);
                s
            }
        };
        cur = ShapedArray {
            dtype: cur.dtype,
            shape,
            weak_type: cur.weak_type,
        };
    }
    Ok(cur)
}

fn value_like(cx: &Cx, i: usize, want: &ShapedArray, what: &str) -> Result<(), IrError> {
    let v = cx.arr(i)?;
    if v.dtype != want.dtype || v.shape != want.shape {
        return Err(cx.err(format!(
            "{what} must have the indexed type {}, got {}",
            fmt_ty(want),
            fmt_ty(v)
        )));
    }
    Ok(())
}

fn mask_like(cx: &Cx, i: usize, want: &ShapedArray) -> Result<(), IrError> {
    let m = cx.arr(i)?;
    if m.dtype != DType::Bool || m.shape != want.shape {
        return Err(cx.err(format!(
            "mask must be bool{}, got {}",
            fmt_shape(&want.shape),
            fmt_ty(m)
        )));
    }
    Ok(())
}

/// `get ref *idx`.
pub(crate) fn get(cx: &Cx, indexers: &[Indexer]) -> Result<ShapedArray, IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    cx.arity(1 + n)?;
    indexed(cx, r, indexers)
}

/// `swap ref *idx value`: the old value.
pub(crate) fn swap(cx: &Cx, indexers: &[Indexer]) -> Result<ShapedArray, IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    cx.arity(2 + n)?;
    let t = indexed(cx, r, indexers)?;
    value_like(cx, 1 + n, &t, "the value")?;
    Ok(t)
}

/// `addupdate ref *idx value`: no results.
pub(crate) fn addupdate(cx: &Cx, indexers: &[Indexer]) -> Result<(), IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    cx.arity(2 + n)?;
    let t = indexed(cx, r, indexers)?;
    value_like(cx, 1 + n, &t, "the value")
}

/// Masked `load ref *idx [mask] [other]`.
pub(crate) fn load(
    cx: &Cx,
    indexers: &[Indexer],
    has_mask: bool,
    has_other: bool,
) -> Result<ShapedArray, IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    cx.arity(1 + n + has_mask as usize + has_other as usize)?;
    let t = indexed(cx, r, indexers)?;
    if has_mask {
        mask_like(cx, 1 + n, &t)?;
    }
    if has_other {
        let o = cx.arr(1 + n + has_mask as usize)?;
        if o.dtype != t.dtype || (!o.shape.is_empty() && o.shape != t.shape) {
            return Err(cx.err(format!(
                "other must be a scalar or have the indexed type {}, got {}",
                fmt_ty(&t),
                fmt_ty(o)
            )));
        }
    }
    Ok(t)
}

/// Masked `store ref *idx value [mask]`: the old values, as `swap` (JAX's
/// `masked_swap`).
pub(crate) fn store(cx: &Cx, indexers: &[Indexer], has_mask: bool) -> Result<ShapedArray, IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    cx.arity(2 + n + has_mask as usize)?;
    let t = indexed(cx, r, indexers)?;
    value_like(cx, 1 + n, &t, "the stored value")?;
    if has_mask {
        mask_like(cx, 2 + n, &t)?;
    }
    Ok(t)
}

/// `atomic_rmw ref *idx value [mask]`: the old value.
pub(crate) fn atomic_rmw(
    cx: &Cx,
    indexers: &[Indexer],
    op: AtomicOp,
) -> Result<ShapedArray, IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    if cx.avals.len() != 2 + n && cx.avals.len() != 3 + n {
        return Err(cx.err(format!(
            "expected {} or {} operand(s), got {}",
            2 + n,
            3 + n,
            cx.avals.len()
        )));
    }
    let t = indexed(cx, r, indexers)?;
    value_like(cx, 1 + n, &t, "the value")?;
    if cx.avals.len() == 3 + n {
        mask_like(cx, 2 + n, &t)?;
    }
    let bitwise = matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor);
    if bitwise && t.dtype.is_float() {
        return Err(cx.err(format!(
            "bitwise atomics need integer types, got {}",
            fmt_ty(&t)
        )));
    }
    Ok(t)
}

/// `atomic_cas ref *idx cmp new`: the old value.
pub(crate) fn atomic_cas(cx: &Cx, indexers: &[Indexer]) -> Result<ShapedArray, IrError> {
    let (r, n) = ref_and_indices(cx, indexers)?;
    cx.arity(3 + n)?;
    let t = indexed(cx, r, indexers)?;
    value_like(cx, 1 + n, &t, "the compared value")?;
    value_like(cx, 2 + n, &t, "the new value")?;
    Ok(t)
}

/// `pallas_call *inputs`: the declared `out_avals`.
pub(crate) fn pallas_call(
    cx: &Cx,
    block_mappings: &[BlockMapping],
    out_avals: &[ShapedArray],
) -> Result<Vec<ShapedArray>, IrError> {
    if block_mappings.len() == cx.avals.len() + out_avals.len() {
        for (i, (a, bm)) in cx.avals.iter().zip(block_mappings).enumerate() {
            let want = Aval::Array(bm.array_aval.clone());
            if !same_type(a, &want) {
                return Err(cx.err(format!(
                    "input {i} has type {} but its block mapping expects {}",
                    fmt_aval(a),
                    fmt_ty(&bm.array_aval)
                )));
            }
        }
        for (k, (o, bm)) in out_avals
            .iter()
            .zip(&block_mappings[cx.avals.len()..])
            .enumerate()
        {
            if o.dtype != bm.array_aval.dtype || o.shape != bm.array_aval.shape {
                return Err(cx.err(format!(
                    "output {k} has type {} but its block mapping expects {}",
                    fmt_ty(o),
                    fmt_ty(&bm.array_aval)
                )));
            }
        }
    } else if !block_mappings.is_empty() {
        return Err(cx.err(format!(
            "{} block mapping(s) for {} input(s) and {} output(s)",
            block_mappings.len(),
            cx.avals.len(),
            out_avals.len()
        )));
    }
    Ok(out_avals.to_vec())
}
