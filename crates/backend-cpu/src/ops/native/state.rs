//! The state primitives `get`, `swap` and `addupdate` and the Pallas
//! memory primitives `load` and `store` (masked), `atomic_rmw` and
//! `atomic_cas` in discharged form:
//! a `Ref` is a variable holding an array, and a write rebinds it to the
//! updated array (functional update; JAX's `discharge_state`). Indexers
//! follow the interpreter: NumPy semantics, integer and integer-array
//! indices broadcast together (their dims stay in place when adjacent,
//! else go first), and every index clamps into bounds (negative static and
//! array indices count from the end) for the state primitives; the Pallas
//! ones do not clamp (out-of-bounds lanes read the uninitialised value and
//! are not written), as the interpreter does.

use super::{map_same, map_same2, next_index, strides, Elem, NativeOp, RawArg};
use crate::error::run_error;
use jaxon_ir::primitive::{AtomicOp, IndexEntry, IndexValue, Indexer};
use jaxon_ir::{HostArray, IrError};

fn err(prim: &str, m: impl std::fmt::Display) -> IrError {
    run_error(format!("{prim}: {m}"))
}

/// Which state primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Get,
    Swap,
    AddUpdate,
    Load { has_mask: bool, has_other: bool },
    Store { has_mask: bool },
    Atomic(AtomicOp),
    Cas,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Get => "get",
            Kind::Swap => "swap",
            Kind::AddUpdate => "addupdate",
            Kind::Load { .. } => "load",
            Kind::Store { .. } => "store",
            Kind::Atomic(_) => "atomic_rmw",
            Kind::Cas => "atomic_cas",
        }
    }

    fn pallas(self) -> bool {
        matches!(
            self,
            Kind::Load { .. } | Kind::Store { .. } | Kind::Atomic(_) | Kind::Cas
        )
    }
}

/// The elements an indexed ref names: a shape and flat positions.
struct View {
    shape: Vec<usize>,
    /// `None`: out of bounds (Pallas primitives only).
    pos: Vec<Option<usize>>,
}

enum Ent {
    Slice(Vec<Option<usize>>),
    Int(Vec<usize>, Vec<Option<usize>>),
}

fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    (0..n)
        .map(|i| {
            let (x, y) = (at(a, i), at(b, i));
            if x == y || y == 1 {
                Some(x)
            } else if x == 1 {
                Some(y)
            } else {
                None
            }
        })
        .collect()
}

fn broadcast_flat(src: &[usize], idx: &[usize]) -> usize {
    let off = idx.len() - src.len();
    src.iter().enumerate().fold(0, |f, (d, &n)| {
        f * n + if n == 1 { 0 } else { idx[off + d] }
    })
}

fn scalar(prim: &str, v: &IndexValue, args: &[&HostArray]) -> Result<(i64, bool), IrError> {
    match v {
        IndexValue::Static(i) => Ok((*i, true)),
        IndexValue::Dynamic(k) => {
            let a = args
                .get(*k)
                .filter(|a| a.len() == 1 && !a.dtype().is_float())
                .ok_or_else(|| err(prim, format!("index operand {k} must be an integer scalar")))?;
            Ok((a.data().get_i64(0), false))
        }
    }
}

fn clamp_pos(raw: i64, dim: usize, wrap: bool, pallas: bool) -> Option<usize> {
    let d = dim as i64;
    if pallas {
        return (0..d).contains(&raw).then_some(raw as usize);
    }
    let r = if wrap && raw < 0 { raw + d } else { raw };
    Some(r.clamp(0, d - 1) as usize)
}

fn apply(
    prim: &str,
    view: View,
    ix: &Indexer,
    args: &[&HostArray],
    pallas: bool,
) -> Result<View, IrError> {
    let nd = view.shape.len();
    if ix.entries.len() > nd {
        return Err(err(prim, "too many indices"));
    }
    let mut ents = Vec::with_capacity(nd);
    for (d, &dim) in view.shape.iter().enumerate() {
        ents.push(match ix.entries.get(d) {
            None => Ent::Slice((0..dim).map(Some).collect()),
            Some(IndexEntry::Slice {
                start,
                size,
                stride,
            }) => {
                let (raw, _) = scalar(prim, start, args)?;
                let span = if *size == 0 {
                    0
                } else {
                    (size - 1) * stride + 1
                };
                if *stride == 0 || (span > dim && !pallas) {
                    return Err(err(prim, "slice does not fit its dimension"));
                }
                let s = if pallas {
                    raw
                } else {
                    raw.clamp(0, (dim - span) as i64)
                };
                Ent::Slice(
                    (0..*size)
                        .map(|k| {
                            let p = s + (k * stride) as i64;
                            (0..dim as i64).contains(&p).then_some(p as usize)
                        })
                        .collect(),
                )
            }
            Some(IndexEntry::Int(v)) => {
                let (raw, is_static) = scalar(prim, v, args)?;
                if dim == 0 && !pallas {
                    return Err(err(prim, "index into an empty dimension"));
                }
                Ent::Int(Vec::new(), vec![clamp_pos(raw, dim, is_static, pallas)])
            }
            Some(IndexEntry::Array(k)) => {
                let a = args
                    .get(*k)
                    .filter(|a| !a.dtype().is_float())
                    .ok_or_else(|| err(prim, format!("index array operand {k}")))?;
                if dim == 0 && !a.is_empty() && !pallas {
                    return Err(err(prim, "index into an empty dimension"));
                }
                let pos = (0..a.len())
                    .map(|i| clamp_pos(a.data().get_i64(i), dim, true, pallas))
                    .collect();
                Ent::Int(a.shape().to_vec(), pos)
            }
        });
    }
    let int_dims: Vec<usize> = (0..nd)
        .filter(|&d| matches!(ents[d], Ent::Int(..)))
        .collect();
    let mut bshape: Vec<usize> = Vec::new();
    for &d in &int_dims {
        if let Ent::Int(s, _) = &ents[d] {
            bshape = broadcast_shapes(&bshape, s)
                .ok_or_else(|| err(prim, "index arrays do not broadcast"))?;
        }
    }
    let contiguous = int_dims.windows(2).all(|w| w[1] == w[0] + 1);
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

/// A `get`, `swap` or `addupdate` on the discharged ref (operand 0).
#[derive(Debug)]
pub(crate) struct StateOp {
    pub kind: Kind,
    pub indexers: Vec<Indexer>,
}

/// Positions of the value (broadcast NumPy-style to `shape`) per element.
fn value_index(vshape: &[usize], shape: &[usize]) -> Option<Vec<usize>> {
    if broadcast_shapes(vshape, shape).as_deref() != Some(shape) {
        return None;
    }
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n > 0 {
        let mut idx = vec![0; shape.len()];
        loop {
            out.push(broadcast_flat(vshape, &idx));
            if !next_index(&mut idx, shape) {
                break;
            }
        }
    }
    Some(out)
}

/// Writes (or adds) the values lane by lane, in order; the old values are
/// read just before each write, so repeated positions see earlier writes
/// (as the interpreter's read-modify-write does). Returns the updated ref
/// followed by the old values.
fn write<T: Elem>(
    r: &[T],
    pos: &[Option<usize>],
    val: &[T],
    vi: &[usize],
    add: bool,
    mask: Option<&[bool]>,
) -> Vec<T> {
    let mut out = r.to_vec();
    let mut old = Vec::with_capacity(pos.len());
    for (k, (p, &i)) in pos.iter().zip(vi).enumerate() {
        match (p, mask.is_none_or(|m| m[k])) {
            (Some(p), true) => {
                old.push(out[*p]);
                out[*p] = if add { out[*p].add(val[i]) } else { val[i] };
            }
            (None, true) => old.push(T::uninit()),
            (_, false) => old.push(T::zero()),
        }
    }
    out.extend(old);
    out
}

/// An atomic read-modify-write, lane by lane: the updated ref followed by
/// the old values (zero where masked off, uninitialised out of bounds);
/// `None` when the operation does not apply to the dtype.
fn rmw<T: Elem>(
    r: &[T],
    pos: &[Option<usize>],
    val: &[T],
    vi: &[usize],
    op: AtomicOp,
    mask: Option<&[bool]>,
) -> Option<Vec<T>> {
    let mut out = r.to_vec();
    let mut old = Vec::with_capacity(pos.len());
    for (k, (p, &i)) in pos.iter().zip(vi).enumerate() {
        match (p, mask.is_none_or(|m| m[k])) {
            (Some(p), true) => {
                old.push(out[*p]);
                out[*p] = out[*p].combine(val[i], op)?;
            }
            (None, true) => old.push(T::uninit()),
            (_, false) => old.push(T::zero()),
        }
    }
    out.extend(old);
    Some(out)
}

/// Compare-and-swap lane by lane: the updated ref followed by the old
/// values.
fn cas<T: Elem + PartialEq>(r: &[T], pos: &[Option<usize>], cmp: &[T], val: &[T]) -> Vec<T> {
    let mut out = r.to_vec();
    let mut old = Vec::with_capacity(pos.len());
    for (k, p) in pos.iter().enumerate() {
        match p {
            Some(p) => {
                let o = out[*p];
                if o == cmp[k] {
                    out[*p] = val[k];
                }
                old.push(o);
            }
            None => old.push(T::uninit()),
        }
    }
    out.extend(old);
    out
}

/// Per lane: the element read, `other` (or zero) where masked off, the
/// uninitialised value out of bounds.
fn load_lanes<T: Elem>(
    r: &[T],
    pos: &[Option<usize>],
    mask: Option<&[bool]>,
    other: Option<(&[T], &[usize])>,
) -> Vec<T> {
    pos.iter()
        .enumerate()
        .map(|(k, p)| match (mask.is_none_or(|m| m[k]), p) {
            (true, Some(p)) => r[*p],
            (true, None) => T::uninit(),
            (false, _) => other.map_or(T::zero(), |(o, oi)| o[oi[k]]),
        })
        .collect()
}

/// A bool mask operand broadcast to `shape`.
fn mask_arg(prim: &str, m: &HostArray, shape: &[usize]) -> Result<Vec<bool>, IrError> {
    let jaxon_ir::Storage::Bool(mv) = m.data() else {
        return Err(err(
            prim,
            format!("mask has dtype {}, expected bool", m.dtype()),
        ));
    };
    let mi = value_index(m.shape(), shape)
        .ok_or_else(|| err(prim, "mask does not broadcast to the indexed shape"))?;
    Ok(mi.iter().map(|&i| mv[i]).collect())
}

impl StateOp {
    /// The box that indexers of stride-1 slices and scalar integers name
    /// (each applied to the view the previous ones left, bounds relative
    /// to it), when it lies inside the ref: (start, size, result shape).
    #[allow(clippy::type_complexity)]
    fn boxed(
        &self,
        shape: &[usize],
        args: &[&HostArray],
    ) -> Result<Option<(Vec<usize>, Vec<usize>, Vec<usize>)>, IrError> {
        let prim = self.kind.name();
        let pallas = self.kind.pallas();
        let mut start = vec![0usize; shape.len()];
        let mut size = shape.to_vec();
        // The ref dims still in the view.
        let mut view: Vec<usize> = (0..shape.len()).collect();
        for ix in &self.indexers {
            if ix.entries.len() > view.len() {
                return Ok(None);
            }
            let mut next = Vec::with_capacity(view.len());
            for (j, &d) in view.iter().enumerate() {
                let dim = size[d];
                let di = dim as i64;
                match ix.entries.get(j) {
                    None => next.push(d),
                    Some(IndexEntry::Slice {
                        start: st,
                        size: n,
                        stride: 1,
                    }) => {
                        let (raw, _) = scalar(prim, st, args)?;
                        let n = *n;
                        let s = if pallas {
                            if raw < 0 || raw + n as i64 > di {
                                return Ok(None);
                            }
                            raw
                        } else {
                            if n > dim {
                                return Ok(None);
                            }
                            raw.clamp(0, (dim - n) as i64)
                        };
                        start[d] += s as usize;
                        size[d] = n;
                        next.push(d);
                    }
                    Some(IndexEntry::Int(v)) => {
                        let (raw, is_static) = scalar(prim, v, args)?;
                        if dim == 0 || (pallas && !(0..di).contains(&raw)) {
                            return Ok(None);
                        }
                        match clamp_pos(raw, dim, is_static, pallas) {
                            Some(p) => start[d] += p,
                            None => return Ok(None),
                        }
                        size[d] = 1;
                    }
                    Some(_) => return Ok(None),
                }
            }
            view = next;
        }
        let out = view.iter().map(|&d| size[d]).collect();
        Ok(Some((start, size, out)))
    }

    /// Row copies for unmasked reads and writes of a box (`None`: take
    /// the general path).
    fn fast(&self, args: &[&HostArray], vp: usize) -> Result<Option<Vec<HostArray>>, IrError> {
        let prim = self.kind.name();
        let r = args[0];
        let simple = matches!(
            self.kind,
            Kind::Get
                | Kind::Swap
                | Kind::AddUpdate
                | Kind::Load {
                    has_mask: false,
                    has_other: false
                }
                | Kind::Store { has_mask: false }
        );
        if !simple {
            return Ok(None);
        }
        let Some((start, size, shape)) = self.boxed(r.shape(), args)? else {
            return Ok(None);
        };
        let rows = super::pallas::box_rows(r.shape(), &start, &size);
        let n: usize = size.iter().product();
        match self.kind {
            Kind::Get | Kind::Load { .. } => {
                let d = map_same!(r.data(), v => {
                    let mut o = Vec::with_capacity(n);
                    for &(off, _, len) in &rows {
                        o.extend_from_slice(&v[off..off + len]);
                    }
                    o
                });
                Ok(Some(vec![HostArray::new(shape, d)?]))
            }
            _ => {
                let val = args[vp];
                if val.shape() != shape.as_slice() {
                    return Ok(None);
                }
                let (swap, add) = (self.kind == Kind::Swap, self.kind == Kind::AddUpdate);
                let total = r.len();
                let mut both = map_same2!(r.data(), val.data(), (rv, vv) => {
                    let mut out = rv.to_vec();
                    let mut old = Vec::with_capacity(if swap { n } else { 0 });
                    for &(off, b, len) in &rows {
                        if swap {
                            old.extend_from_slice(&out[off..off + len]);
                        }
                        if add {
                            for (o, v) in out[off..off + len].iter_mut().zip(&vv[b..b + len]) {
                                *o = o.add(*v);
                            }
                        } else {
                            out[off..off + len].copy_from_slice(&vv[b..b + len]);
                        }
                    }
                    out.extend(old);
                    out
                }, err(prim, "value and ref dtypes differ"));
                let old = map_same!(&mut both, v => v.split_off(total));
                let new = HostArray::new(r.shape().to_vec(), both)?;
                Ok(Some(if swap {
                    vec![HostArray::new(shape, old)?, new]
                } else {
                    vec![new]
                }))
            }
        }
    }
}

impl StateOp {
    /// Unmasked reads of a box (stride-1 slices, scalar indices) inside the
    /// ref, straight from the ref's buffer into the result's: the reads in
    /// Pallas kernels, which would otherwise copy the whole ref in and the
    /// box out per call.
    ///
    /// # Safety
    /// As [`NativeOp::run_raw`].
    unsafe fn read_raw(
        &self,
        ins: &[RawArg<'_>],
        outs: &[RawArg<'_>],
    ) -> Option<Result<(), IrError>> {
        let (r, [out]) = (ins.first()?, outs) else {
            return None;
        };
        if out.dtype != r.dtype || ins.len() != jaxon_ir::primitive::value_operand(&self.indexers) {
            return None;
        }
        // The index operands, all integer scalars; the ref's slot is a
        // placeholder (`boxed` takes its shape separately).
        let mut scalars = vec![HostArray::zeros(r.dtype, &[])];
        for a in &ins[1..] {
            if !a.shape.is_empty() || a.dtype.is_float() {
                return None;
            }
            // SAFETY: the caller's contract: a scalar of this dtype.
            scalars.push(unsafe { crate::run::raw::read_array(a.ptr, a.dtype, &[]) }.ok()?);
        }
        let args: Vec<&HostArray> = scalars.iter().collect();
        let (start, size, shape) = match self.boxed(r.shape, &args) {
            Ok(Some(b)) => b,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        if shape.as_slice() != out.shape {
            return None;
        }
        let es = r.dtype.size_bytes();
        for (off, b, len) in super::pallas::box_rows(r.shape, &start, &size) {
            // SAFETY: the box lies inside the ref (`boxed`) and the result
            // holds its `size` elements; the buffers do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(r.ptr.add(off * es), out.ptr.add(b * es), len * es)
            };
        }
        Some(Ok(()))
    }
}

impl NativeOp for StateOp {
    fn read_box(
        &self,
        shape: &[usize],
        args: &[&HostArray],
    ) -> Option<Result<Option<(Vec<usize>, Vec<usize>, Vec<usize>)>, IrError>> {
        match self.kind {
            Kind::Get
            | Kind::Load {
                has_mask: false,
                has_other: false,
            } => Some(self.boxed(shape, args)),
            _ => None,
        }
    }

    unsafe fn run_raw(
        &self,
        ins: &[RawArg<'_>],
        outs: &[RawArg<'_>],
    ) -> Option<Result<(), IrError>> {
        match self.kind {
            Kind::Get
            | Kind::Load {
                has_mask: false,
                has_other: false,
            } => {
                // SAFETY: the caller's contract.
                unsafe { self.read_raw(ins, outs) }
            }
            _ => None,
        }
    }

    fn run(&self, args: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let prim = self.kind.name();
        let vp = jaxon_ir::primitive::value_operand(&self.indexers);
        let want = match self.kind {
            Kind::Get => vp,
            Kind::Swap | Kind::AddUpdate => vp + 1,
            Kind::Load {
                has_mask,
                has_other,
            } => vp + has_mask as usize + has_other as usize,
            Kind::Store { has_mask } => vp + 1 + has_mask as usize,
            // An optional mask follows the value.
            Kind::Atomic(_) if args.len() == vp + 2 => vp + 2,
            Kind::Atomic(_) => vp + 1,
            Kind::Cas => vp + 2,
        };
        if args.len() != want {
            return Err(err(prim, format!("expected {want} operands")));
        }
        let r = args[0];
        if let Some(out) = self.fast(args, vp)? {
            return Ok(out);
        }
        let mut view = View {
            shape: r.shape().to_vec(),
            pos: (0..r.len()).map(Some).collect(),
        };
        let pallas = self.kind.pallas();
        for ix in &self.indexers {
            view = apply(prim, view, ix, args, pallas)?;
        }
        match self.kind {
            Kind::Get | Kind::Load { .. } => {
                let (mask, other) = match self.kind {
                    Kind::Load {
                        has_mask,
                        has_other,
                    } => {
                        let m = match has_mask {
                            true => Some(mask_arg(prim, args[vp], &view.shape)?),
                            false => None,
                        };
                        let o = args.get(vp + has_mask as usize).filter(|_| has_other);
                        (m, o)
                    }
                    _ => (None, None),
                };
                let oi = match other {
                    Some(o) => Some(value_index(o.shape(), &view.shape).ok_or_else(|| {
                        err(prim, "other does not broadcast to the indexed shape")
                    })?),
                    None => None,
                };
                let d = match other {
                    Some(o) => map_same2!(r.data(), o.data(), (rv, ov) =>
                        load_lanes(rv, &view.pos, mask.as_deref(), Some((ov, oi.as_deref().unwrap_or(&[])))),
                        err(prim, "other and ref dtypes differ")),
                    None => {
                        map_same!(r.data(), v => load_lanes(v, &view.pos, mask.as_deref(), None))
                    }
                };
                Ok(vec![HostArray::new(view.shape.clone(), d)?])
            }
            Kind::Atomic(op) => {
                let val = args[vp];
                let vi = value_index(val.shape(), &view.shape)
                    .ok_or_else(|| err(prim, "value does not broadcast to the indexed shape"))?;
                let mask = match args.get(vp + 1) {
                    Some(m) => Some(mask_arg(prim, m, &view.shape)?),
                    None => None,
                };
                let n = r.len();
                let mut both = map_same2!(r.data(), val.data(), (rv, vv) =>
                    rmw(rv, &view.pos, vv, &vi, op, mask.as_deref())
                        .ok_or_else(|| err(prim, format!("{op:?} of {}", r.dtype())))?,
                    err(prim, "value and ref dtypes differ"));
                let old = map_same!(&mut both, v => v.split_off(n));
                Ok(vec![
                    HostArray::new(view.shape.clone(), old)?,
                    HostArray::new(r.shape().to_vec(), both)?,
                ])
            }
            Kind::Cas => {
                let (cmp, val) = (args[vp], args[vp + 1]);
                let ci = value_index(cmp.shape(), &view.shape)
                    .ok_or_else(|| err(prim, "cmp does not broadcast to the indexed shape"))?;
                let vi = value_index(val.shape(), &view.shape)
                    .ok_or_else(|| err(prim, "value does not broadcast to the indexed shape"))?;
                let both = map_same2!(cmp.data(), val.data(), (cv, vv) => {
                    let cs: Vec<_> = ci.iter().map(|&i| cv[i]).collect();
                    let vs: Vec<_> = vi.iter().map(|&i| vv[i]).collect();
                    let mut joined = cs;
                    joined.extend(vs);
                    joined
                }, err(prim, "cmp and value dtypes differ"));
                let lanes = view.pos.len();
                let n = r.len();
                let mut out = map_same2!(r.data(), &both, (rv, cvv) => {
                    let (c, v) = cvv.split_at(lanes);
                    cas(rv, &view.pos, c, v)
                }, err(prim, "cmp/value and ref dtypes differ"));
                let old = map_same!(&mut out, v => v.split_off(n));
                Ok(vec![
                    HostArray::new(view.shape.clone(), old)?,
                    HostArray::new(r.shape().to_vec(), out)?,
                ])
            }
            Kind::Swap | Kind::AddUpdate | Kind::Store { .. } => {
                let val = args[vp];
                let vi = value_index(val.shape(), &view.shape)
                    .ok_or_else(|| err(prim, "value does not broadcast to the indexed shape"))?;
                let mask = match self.kind {
                    Kind::Store { has_mask: true } => {
                        Some(mask_arg(prim, args[vp + 1], &view.shape)?)
                    }
                    _ => None,
                };
                let add = self.kind == Kind::AddUpdate;
                let n = r.len();
                let mut both = map_same2!(r.data(), val.data(), (rv, vv) => write(rv, &view.pos, vv, &vi, add, mask.as_deref()),
                    err(prim, "value and ref dtypes differ"));
                let old = map_same!(&mut both, v => v.split_off(n));
                let new = HostArray::new(r.shape().to_vec(), both)?;
                Ok(if self.kind != Kind::Swap {
                    vec![new]
                } else {
                    vec![HostArray::new(view.shape.clone(), old)?, new]
                })
            }
        }
    }
}
