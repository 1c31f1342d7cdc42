//! Mutable state: `get`, `swap`, `addupdate` and the Pallas memory
//! primitives `load`, `store`, `atomic_rmw`, `atomic_cas` on `Ref`s.
//!
//! An indexed `Ref` is a *view*: a shape and, per element, the flat position
//! in the buffer it names (or `None` when it is out of bounds). Indexers are
//! applied one after another to the view, with NumPy semantics: integer and
//! integer-array indices broadcast together; their dimensions stay in place
//! when they are adjacent, else they go first.
//!
//! Bounds: the state primitives clamp (like `dynamic_slice` and gathers in
//! JAX; negative static and array indices count from the end). The Pallas
//! primitives do not clamp: out-of-bounds lanes are `None`; masked-off lanes
//! are never touched, unmasked out-of-bounds loads read the uninitialised
//! value (NaN, integer minimum, false) as JAX's interpret mode does, and
//! unmasked out-of-bounds stores are dropped.

use super::util::{
    broadcast_flat, broadcast_shapes, broadcast_to, next_index, same_storage, strides, Combine,
    Elem,
};
use super::Value;
use crate::array::{HostArray, Storage};
use crate::error::IrError;
use crate::primitive::{AtomicOp, IndexEntry, IndexValue, Indexer};
use crate::with_storage;
use std::sync::MutexGuard;

/// How indices outside the ref are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Clamp into bounds (`get`, `swap`, `addupdate`).
    Clamp,
    /// Keep out-of-bounds lanes as `None` (Pallas primitives).
    Pallas,
}

/// The elements an indexed ref names.
#[derive(Clone, Debug)]
struct View {
    shape: Vec<usize>,
    pos: Vec<Option<usize>>,
}

/// One indexer entry, evaluated.
enum Ent {
    /// Positions along the dimension.
    Slice(Vec<Option<usize>>),
    /// Integer (array) index: its shape and positions.
    Int(Vec<usize>, Vec<Option<usize>>),
}

fn operand<'a>(prim: &str, args: &'a [Value], k: usize) -> Result<&'a HostArray, IrError> {
    match args.get(k) {
        Some(Value::Array(a)) if k > 0 => Ok(a),
        Some(Value::Array(_)) | Some(Value::Ref(_)) => Err(IrError::ty(
            prim,
            format!("operand {k} must be an array index or value"),
        )),
        None => Err(IrError::ty(
            prim,
            format!("index operand {k} is missing ({} operands)", args.len()),
        )),
    }
}

fn index_value(prim: &str, v: &IndexValue, args: &[Value]) -> Result<(i64, bool), IrError> {
    match v {
        IndexValue::Static(i) => Ok((*i, true)),
        IndexValue::Dynamic(k) => {
            let a = operand(prim, args, *k)?;
            if a.len() != 1 || a.ndim() != 0 || a.dtype().is_float() {
                return Err(IrError::ty(
                    prim,
                    format!(
                        "index operand {k} must be an integer scalar, got {}{:?}",
                        a.dtype(),
                        a.shape()
                    ),
                ));
            }
            Ok((a.data().get_i64(0), false))
        }
    }
}

/// An integer index into a dimension of size `dim`.
fn int_pos(raw: i64, dim: usize, wrap: bool, mode: Mode) -> Option<usize> {
    let d = dim as i64;
    match mode {
        Mode::Clamp => {
            if dim == 0 {
                return None;
            }
            let r = if wrap && raw < 0 { raw + d } else { raw };
            Some(r.clamp(0, d - 1) as usize)
        }
        Mode::Pallas => (0..d).contains(&raw).then_some(raw as usize),
    }
}

/// Applies one indexer to a view.
fn apply(
    prim: &str,
    view: View,
    ix: &Indexer,
    args: &[Value],
    mode: Mode,
) -> Result<View, IrError> {
    let nd = view.shape.len();
    if ix.entries.len() > nd {
        return Err(IrError::ty(
            prim,
            format!(
                "{} indices for a ref of shape {:?}",
                ix.entries.len(),
                view.shape
            ),
        ));
    }
    let mut ents = Vec::with_capacity(nd);
    for (d, &dim) in view.shape.iter().enumerate() {
        let ent = match ix.entries.get(d) {
            None => Ent::Slice((0..dim).map(Some).collect()),
            Some(IndexEntry::Slice {
                start,
                size,
                stride,
            }) => {
                let (raw, _) = index_value(prim, start, args)?;
                let stride = *stride;
                if stride == 0 {
                    return Err(IrError::ty(prim, "slice stride 0"));
                }
                let span = if *size == 0 {
                    0
                } else {
                    (size - 1) * stride + 1
                };
                let start = match mode {
                    Mode::Clamp => {
                        if span > dim {
                            return Err(IrError::ty(
                                prim,
                                format!("slice of {size} (stride {stride}) does not fit dimension {dim}"),
                            ));
                        }
                        raw.clamp(0, (dim - span) as i64)
                    }
                    Mode::Pallas => raw,
                };
                let pos = (0..*size)
                    .map(|k| {
                        let p = start + (k * stride) as i64;
                        (0..dim as i64).contains(&p).then_some(p as usize)
                    })
                    .collect();
                Ent::Slice(pos)
            }
            Some(IndexEntry::Int(v)) => {
                let (raw, is_static) = index_value(prim, v, args)?;
                Ent::Int(Vec::new(), vec![int_pos(raw, dim, is_static, mode)])
            }
            Some(IndexEntry::Array(k)) => {
                let a = operand(prim, args, *k)?;
                if !(a.dtype().is_int() || a.dtype().is_bool()) {
                    return Err(IrError::ty(
                        prim,
                        format!("index array operand {k} has dtype {}", a.dtype()),
                    ));
                }
                let pos = (0..a.len())
                    .map(|i| int_pos(a.data().get_i64(i), dim, true, mode))
                    .collect();
                Ent::Int(a.shape().to_vec(), pos)
            }
        };
        ents.push(ent);
    }
    // The result shape.
    let int_dims: Vec<usize> = (0..nd)
        .filter(|&d| matches!(ents[d], Ent::Int(..)))
        .collect();
    let mut bshape: Vec<usize> = Vec::new();
    for &d in &int_dims {
        if let Ent::Int(s, _) = &ents[d] {
            bshape = broadcast_shapes(&bshape, s).ok_or_else(|| {
                IrError::ty(
                    prim,
                    format!("index arrays of shapes {bshape:?} and {s:?} do not broadcast"),
                )
            })?;
        }
    }
    let contiguous = int_dims.windows(2).all(|w| w[1] == w[0] + 1);
    // Where the broadcast int dims go among the result dims.
    let insert_at = match int_dims.first() {
        Some(&first) if contiguous => ents[..first]
            .iter()
            .filter(|e| matches!(e, Ent::Slice(_)))
            .count(),
        _ => 0,
    };
    let slice_sizes: Vec<usize> = ents
        .iter()
        .filter_map(|e| match e {
            Ent::Slice(p) => Some(p.len()),
            Ent::Int(..) => None,
        })
        .collect();
    let mut shape = slice_sizes[..insert_at].to_vec();
    shape.extend_from_slice(&bshape);
    shape.extend_from_slice(&slice_sizes[insert_at..]);
    let vstrides = strides(&view.shape);
    let n: usize = shape.iter().product();
    let mut pos = Vec::with_capacity(n);
    if n > 0 {
        let nb = bshape.len();
        let mut o = vec![0; shape.len()];
        loop {
            let b_idx = &o[insert_at..insert_at + nb];
            let mut flat = Some(0usize);
            let mut slot = 0;
            for (d, e) in ents.iter().enumerate() {
                let p = match e {
                    Ent::Slice(ps) => {
                        let r = if slot < insert_at { slot } else { slot + nb };
                        slot += 1;
                        ps[o[r]]
                    }
                    Ent::Int(s, ps) => ps[broadcast_flat(s, b_idx)],
                };
                flat = match (flat, p) {
                    (Some(f), Some(p)) => Some(f + p * vstrides[d]),
                    _ => None,
                };
            }
            pos.push(flat.and_then(|f| view.pos[f]));
            if !next_index(&mut o, &shape) {
                break;
            }
        }
    }
    Ok(View { shape, pos })
}

/// Locks the ref operand and computes the view of its indexers.
fn open<'a>(
    prim: &str,
    indexers: &[Indexer],
    args: &'a [Value],
    mode: Mode,
) -> Result<(MutexGuard<'a, HostArray>, View), IrError> {
    let r = match args.first() {
        Some(Value::Ref(r)) => r,
        Some(Value::Array(_)) => {
            return Err(IrError::ty(prim, "operand 0 must be a Ref, got an array"))
        }
        None => return Err(IrError::ty(prim, "missing the Ref operand")),
    };
    let buf = r
        .lock()
        .map_err(|_| IrError::Eval(format!("{prim}: a Ref's lock is poisoned")))?;
    let mut view = View {
        shape: buf.shape().to_vec(),
        pos: (0..buf.len()).map(Some).collect(),
    };
    for ix in indexers {
        view = apply(prim, view, ix, args, mode)?;
    }
    Ok((buf, view))
}

fn check_arity(prim: &str, args: &[Value], want: usize) -> Result<(), IrError> {
    if args.len() != want {
        return Err(IrError::ty(
            prim,
            format!("expected {want} operands, got {}", args.len()),
        ));
    }
    Ok(())
}

/// A value operand of the ref's dtype, broadcast to the view.
fn value_arg(
    prim: &str,
    args: &[Value],
    k: usize,
    buf: &HostArray,
    view: &View,
) -> Result<HostArray, IrError> {
    let a = operand(prim, args, k)?;
    if a.dtype() != buf.dtype() {
        return Err(IrError::ty(
            prim,
            format!(
                "value has dtype {}, the ref holds {}",
                a.dtype(),
                buf.dtype()
            ),
        ));
    }
    broadcast_to(a, &view.shape, prim)
}

/// A bool mask operand broadcast to the view.
fn mask_arg(prim: &str, args: &[Value], k: usize, view: &View) -> Result<Vec<bool>, IrError> {
    let a = operand(prim, args, k)?;
    match broadcast_to(a, &view.shape, prim)?.into_parts().1 {
        Storage::Bool(m) => Ok(m),
        other => Err(IrError::ty(
            prim,
            format!("mask has dtype {}, expected bool", other.dtype()),
        )),
    }
}

fn all_in_bounds(prim: &str, view: &View) -> Result<Vec<Option<usize>>, IrError> {
    if view.pos.iter().any(|p| p.is_none()) {
        return Err(IrError::Eval(format!("{prim}: index out of bounds")));
    }
    Ok(view.pos.clone())
}

/// Per lane: reads the old value and combines in the new one.
fn rmw<T: Elem>(
    buf: &mut [T],
    pos: &[Option<usize>],
    vals: &[T],
    mask: Option<&[bool]>,
    op: Combine,
) -> Option<Vec<T>> {
    let mut old = Vec::with_capacity(pos.len());
    for (k, p) in pos.iter().enumerate() {
        let on = mask.is_none_or(|m| m[k]);
        match (on, p) {
            (true, Some(p)) => {
                let o = buf[*p];
                buf[*p] = o.combine(vals[k], op)?;
                old.push(o);
            }
            (true, None) => old.push(T::uninit()),
            (false, _) => old.push(T::zero()),
        }
    }
    Some(old)
}

/// Applies [`rmw`] to storages of one dtype.
fn rmw_storage(
    prim: &str,
    buf: &mut HostArray,
    view: &View,
    vals: &HostArray,
    mask: Option<&[bool]>,
    op: Combine,
) -> Result<HostArray, IrError> {
    let dtype = buf.dtype();
    let old: Option<Storage> = same_storage!(buf.data_mut(), vals.data(), (b, v) => {
        rmw(b, &view.pos, v, mask, op).map(Elem::wrap)
    }, else return Err(IrError::ty(prim, "value and ref dtypes differ")));
    let old = old.ok_or_else(|| IrError::UnsupportedDType {
        primitive: prim.to_string(),
        dtype,
    })?;
    HostArray::new(view.shape.clone(), old)
}

/// `get`: reads the indexed elements.
pub(crate) fn get(indexers: &[Indexer], args: &[Value]) -> Result<Vec<Value>, IrError> {
    check_arity("get", args, crate::primitive::value_operand(indexers))?;
    let (buf, view) = open("get", indexers, args, Mode::Clamp)?;
    let pos = all_in_bounds("get", &view)?;
    let pos: Vec<usize> = pos.into_iter().flatten().collect();
    let out = HostArray::new(view.shape, super::util::gather(buf.data(), &pos))?;
    Ok(vec![Value::Array(out)])
}

/// `swap`: writes a value, returning the old one.
pub(crate) fn swap(indexers: &[Indexer], args: &[Value]) -> Result<Vec<Value>, IrError> {
    let vp = crate::primitive::value_operand(indexers);
    check_arity("swap", args, vp + 1)?;
    let (mut buf, view) = open("swap", indexers, args, Mode::Clamp)?;
    all_in_bounds("swap", &view)?;
    let val = value_arg("swap", args, vp, &buf, &view)?;
    let old = rmw_storage("swap", &mut buf, &view, &val, None, Combine::Xchg)?;
    Ok(vec![Value::Array(old)])
}

/// `addupdate`: adds a value in place.
pub(crate) fn addupdate(indexers: &[Indexer], args: &[Value]) -> Result<Vec<Value>, IrError> {
    let vp = crate::primitive::value_operand(indexers);
    check_arity("addupdate", args, vp + 1)?;
    let (mut buf, view) = open("addupdate", indexers, args, Mode::Clamp)?;
    all_in_bounds("addupdate", &view)?;
    let val = value_arg("addupdate", args, vp, &buf, &view)?;
    rmw_storage("addupdate", &mut buf, &view, &val, None, Combine::Add)?;
    Ok(Vec::new())
}

fn load_lanes<T: Elem>(
    buf: &[T],
    pos: &[Option<usize>],
    mask: Option<&[bool]>,
    other: Option<&[T]>,
) -> Vec<T> {
    pos.iter()
        .enumerate()
        .map(|(k, p)| match (mask.is_none_or(|m| m[k]), p) {
            (true, Some(p)) => buf[*p],
            (true, None) => T::uninit(),
            (false, _) => other.map_or(T::zero(), |o| o[k]),
        })
        .collect()
}

/// Pallas `load`: masked-off lanes give `other` (or 0) and are not read.
pub(crate) fn load(
    indexers: &[Indexer],
    has_mask: bool,
    has_other: bool,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let vp = crate::primitive::value_operand(indexers);
    check_arity("load", args, vp + has_mask as usize + has_other as usize)?;
    let (buf, view) = open("load", indexers, args, Mode::Pallas)?;
    let mask = if has_mask {
        Some(mask_arg("load", args, vp, &view)?)
    } else {
        None
    };
    let other = if has_other {
        Some(value_arg(
            "load",
            args,
            vp + has_mask as usize,
            &buf,
            &view,
        )?)
    } else {
        None
    };
    let out: Storage = with_storage!(buf.data(), b => {
        let o = match &other {
            Some(o) => Some(Elem::view(o.data()).ok_or_else(|| IrError::ty("load", "other and ref dtypes differ"))?),
            None => None,
        };
        Elem::wrap(load_lanes(b, &view.pos, mask.as_deref(), o))
    });
    Ok(vec![Value::Array(HostArray::new(view.shape, out)?)])
}

/// Pallas `store` (JAX's `masked_swap`): masked-off lanes are not written.
/// Returns the old values: every in-bounds lane's, masked or not (as JAX's
/// discharge reads them), and the uninitialised value out of bounds.
pub(crate) fn store(
    indexers: &[Indexer],
    has_mask: bool,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let vp = crate::primitive::value_operand(indexers);
    check_arity("store", args, vp + 1 + has_mask as usize)?;
    let (mut buf, view) = open("store", indexers, args, Mode::Pallas)?;
    let val = value_arg("store", args, vp, &buf, &view)?;
    let mask = if has_mask {
        Some(mask_arg("store", args, vp + 1, &view)?)
    } else {
        None
    };
    let old: Storage =
        with_storage!(buf.data(), b => Elem::wrap(load_lanes(b, &view.pos, None, None)));
    rmw_storage(
        "store",
        &mut buf,
        &view,
        &val,
        mask.as_deref(),
        Combine::Xchg,
    )?;
    Ok(vec![Value::Array(HostArray::new(view.shape, old)?)])
}

/// Pallas `atomic_rmw`: combines lane by lane, returning the old values. An
/// optional mask follows the value.
pub(crate) fn atomic_rmw(
    indexers: &[Indexer],
    op: AtomicOp,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let vp = crate::primitive::value_operand(indexers);
    let has_mask = args.len() == vp + 2;
    if !has_mask {
        check_arity("atomic_rmw", args, vp + 1)?;
    }
    let (mut buf, view) = open("atomic_rmw", indexers, args, Mode::Pallas)?;
    let val = value_arg("atomic_rmw", args, vp, &buf, &view)?;
    let mask = if has_mask {
        Some(mask_arg("atomic_rmw", args, vp + 1, &view)?)
    } else {
        None
    };
    let combine = match op {
        AtomicOp::Add => Combine::Add,
        AtomicOp::Max => Combine::Max,
        AtomicOp::Min => Combine::Min,
        AtomicOp::And => Combine::And,
        AtomicOp::Or => Combine::Or,
        AtomicOp::Xor => Combine::Xor,
        AtomicOp::Xchg => Combine::Xchg,
    };
    let old = rmw_storage(
        "atomic_rmw",
        &mut buf,
        &view,
        &val,
        mask.as_deref(),
        combine,
    )?;
    Ok(vec![Value::Array(old)])
}

fn cas_lanes<T: Elem>(buf: &mut [T], pos: &[Option<usize>], cmp: &[T], val: &[T]) -> Vec<T> {
    pos.iter()
        .enumerate()
        .map(|(k, p)| match p {
            Some(p) => {
                let o = buf[*p];
                if o == cmp[k] {
                    buf[*p] = val[k];
                }
                o
            }
            None => T::uninit(),
        })
        .collect()
}

/// Pallas `atomic_cas`: `ref, *idx, cmp, val`; returns the old values.
pub(crate) fn atomic_cas(indexers: &[Indexer], args: &[Value]) -> Result<Vec<Value>, IrError> {
    let vp = crate::primitive::value_operand(indexers);
    check_arity("atomic_cas", args, vp + 2)?;
    let (mut buf, view) = open("atomic_cas", indexers, args, Mode::Pallas)?;
    let cmp = value_arg("atomic_cas", args, vp, &buf, &view)?;
    let val = value_arg("atomic_cas", args, vp + 1, &buf, &view)?;
    let out: Storage = with_storage!(buf.data_mut(), b => {
        let (c, v) = match (Elem::view(cmp.data()), Elem::view(val.data())) {
            (Some(c), Some(v)) => (c, v),
            _ => return Err(IrError::ty("atomic_cas", "cmp/val and ref dtypes differ")),
        };
        Elem::wrap(cas_lanes(b, &view.pos, c, v))
    });
    Ok(vec![Value::Array(HostArray::new(view.shape, out)?)])
}
