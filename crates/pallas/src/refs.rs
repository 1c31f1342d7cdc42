//! `Ref`: a kernel's view of one block of an operand, read and written with
//! NumPy-style indices (`get`/`set`/`add`, whole-ref `load`/`store`), masked
//! `load`/`store` builders and the atomics.
//!
//! Every access binds a state primitive (`get`, `swap`, `addupdate`, the
//! Pallas `load`/`store`, `atomic_rmw`, `atomic_cas`) whose first operand is
//! the ref and whose next operands are the index's traced parts. A value
//! written is broadcast to the indexed shape; a weakly typed value (a Rust
//! scalar) takes the ref's dtype, as a Python scalar does in JAX.

use crate::index::{lower, IntoValue, RefIndex};
use jaxon_ir::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicRmwParams, GetParams, LoadParams, StoreParams,
    SwapParams,
};
use jaxon_ir::primitive::{AtomicOp, IndexEntry, IndexValue, Indexer};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{abstract_eval, Atom, Aval, DType, Primitive, ShapedArray, Var};
use jaxon_trace::error::{ok_or_raise, Error, Result};
use jaxon_trace::{bind, lax, numpy as jnp, Array};

/// A mutable reference to a block, handed to a kernel (inputs, then
/// outputs). Read it (`get`, `load`) to get an `Array`; write `Array`s into
/// it (`set`, `add`, `store`).
#[derive(Clone, Debug)]
pub struct Ref {
    r: Array,
}

impl Ref {
    /// Wraps a tracer of `Ref` type.
    pub(crate) fn new(r: Array) -> Result<Ref> {
        match r.aval() {
            Aval::Ref(_) => Ok(Ref { r }),
            a => Err(Error::InvalidArgument(format!(
                "expected a Ref, got a value of type {}",
                fmt_aval(a)
            ))),
        }
    }

    /// The referenced array type.
    pub fn ty(&self) -> &ShapedArray {
        self.r.ty()
    }

    /// The referenced shape (static inside kernels).
    pub fn shape(&self) -> Vec<usize> {
        self.r.shape()
    }

    /// The referenced dtype.
    pub fn dtype(&self) -> DType {
        self.r.dtype()
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.r.ndim()
    }

    /// The ref as the tracer it is. Ordinary primitives reject it (a `Ref`
    /// must be read first); control flow may capture it.
    pub fn as_array(&self) -> &Array {
        &self.r
    }

    fn lowered(&self, idx: RefIndex, what: &str) -> Result<(Vec<Indexer>, Vec<Array>)> {
        lower(&self.r.try_shape()?, &idx, what)
    }

    /// The type of `self[indexers]`.
    fn indexed_type(&self, indexers: &[Indexer], ops: &[Array]) -> Result<ShapedArray> {
        let mut avals = vec![self.r.aval().clone()];
        avals.extend(ops.iter().map(|o| o.aval().clone()));
        let atoms: Vec<Atom> = (0..avals.len()).map(|i| Atom::Var(Var(i as u32))).collect();
        let p = Primitive::from(GetParams {
            indexers: indexers.to_vec(),
        });
        let out = abstract_eval(&p, &avals, &atoms)?;
        Ok(out[0].array().clone())
    }

    fn operands(&self, ops: Vec<Array>, tail: impl IntoIterator<Item = Array>) -> Vec<Array> {
        let mut v = vec![self.r.clone()];
        v.extend(ops);
        v.extend(tail);
        v
    }

    /// `x_ref[idx]`: reads the indexed elements.
    pub fn try_get(&self, idx: impl Into<RefIndex>) -> Result<Array> {
        let (indexers, ops) = self.lowered(idx.into(), "get")?;
        let out = bind(
            &Primitive::from(GetParams { indexers }),
            &self.operands(ops, []),
        )?;
        Ok(out.into_iter().next().expect("get has one result"))
    }

    /// `x_ref[idx]`; raises on a bad index (caught by `pallas_call`).
    pub fn get(&self, idx: impl Into<RefIndex>) -> Array {
        ok_or_raise(self.try_get(idx))
    }

    /// `x_ref[...]`: the whole block.
    pub fn load(&self) -> Array {
        self.get(())
    }

    /// Swaps `v` into `x_ref[idx]`, returning the old value.
    pub fn try_swap(&self, idx: impl Into<RefIndex>, v: impl IntoValue) -> Result<Array> {
        let (indexers, ops) = self.lowered(idx.into(), "swap")?;
        let t = self.indexed_type(&indexers, &ops)?;
        let v = fit(v.into_value(), &t, "the value written")?;
        let out = bind(
            &Primitive::from(SwapParams { indexers }),
            &self.operands(ops, [v]),
        )?;
        Ok(out.into_iter().next().expect("swap has one result"))
    }

    /// Swaps `v` into `x_ref[idx]`, returning the old value.
    pub fn swap(&self, idx: impl Into<RefIndex>, v: impl IntoValue) -> Array {
        ok_or_raise(self.try_swap(idx, v))
    }

    /// `x_ref[idx] = v`.
    pub fn set(&self, idx: impl Into<RefIndex>, v: impl IntoValue) {
        ok_or_raise(self.try_swap(idx, v));
    }

    /// `x_ref[...] = v`: writes the whole block.
    pub fn store(&self, v: impl IntoValue) {
        self.set((), v)
    }

    /// `x_ref[idx] += v`.
    pub fn try_add(&self, idx: impl Into<RefIndex>, v: impl IntoValue) -> Result<()> {
        let (indexers, ops) = self.lowered(idx.into(), "addupdate")?;
        let t = self.indexed_type(&indexers, &ops)?;
        let v = fit(v.into_value(), &t, "the value added")?;
        bind(
            &Primitive::from(AddUpdateParams { indexers }),
            &self.operands(ops, [v]),
        )?;
        Ok(())
    }

    /// `x_ref[idx] += v`.
    pub fn add(&self, idx: impl Into<RefIndex>, v: impl IntoValue) {
        ok_or_raise(self.try_add(idx, v))
    }
}

/// Converts a weak value to `t`'s dtype and broadcasts it to `t`'s shape.
fn fit(v: Array, t: &ShapedArray, what: &str) -> Result<Array> {
    let v = if v.dtype() != t.dtype && v.weak_type() {
        lax::convert_element_type(&v, t.dtype, false)?
    } else {
        v
    };
    if v.dtype() != t.dtype {
        return Err(Error::DTypeMismatch {
            op: format!("{what} must have the Ref's dtype"),
            lhs: jaxon_ir::shape::fmt_ty(t),
            rhs: fmt_aval(v.aval()),
        });
    }
    let shape = jaxon_ir::aval::static_sizes(&t.shape)
        .ok_or_else(|| Error::InvalidArgument(format!("{what}: a Ref block must be static")))?;
    jnp::broadcast_to(&v, &shape)
}

/// Broadcasts a mask to the indexed shape.
fn fit_mask(m: Array, t: &ShapedArray) -> Result<Array> {
    if m.dtype() != DType::Bool {
        return Err(Error::InvalidArgument(format!(
            "a mask must be boolean, got {}",
            fmt_aval(m.aval())
        )));
    }
    let shape = jaxon_ir::aval::static_sizes(&t.shape)
        .ok_or_else(|| Error::InvalidArgument("a Ref block must be static".into()))?;
    jnp::broadcast_to(&m, &shape).map_err(|_| {
        Error::InvalidArgument(format!(
            "the mask of type {} does not broadcast to the indexed shape {shape:?}",
            fmt_aval(m.aval())
        ))
    })
}

/// A masked read being built: `load(&x_ref, idx).mask(m).other(v).read()`.
#[derive(Clone, Debug)]
#[must_use = "a load does nothing until `.read()` (or `Array::from`)"]
pub struct Load {
    r: Ref,
    idx: RefIndex,
    mask: Option<Array>,
    other: Option<Array>,
}

/// `pl.load(x_ref, idx)`: a read that can be masked; finish with
/// [`Load::read`].
pub fn load(r: &Ref, idx: impl Into<RefIndex>) -> Load {
    Load {
        r: r.clone(),
        idx: idx.into(),
        mask: None,
        other: None,
    }
}

impl Load {
    /// Only lanes where `m` is true are read; `m` broadcasts to the
    /// indexed shape.
    pub fn mask(mut self, m: impl IntoValue) -> Load {
        self.mask = Some(m.into_value());
        self
    }

    /// The value of masked-off lanes (needs a mask).
    pub fn other(mut self, v: impl IntoValue) -> Load {
        self.other = Some(v.into_value());
        self
    }

    /// Performs the read.
    pub fn try_read(self) -> Result<Array> {
        let (indexers, ops) = self.r.lowered(self.idx, "load")?;
        let t = self.r.indexed_type(&indexers, &ops)?;
        if self.mask.is_none() && self.other.is_some() {
            return Err(Error::InvalidArgument(
                "load: `other` is only meaningful with a `mask`".into(),
            ));
        }
        let mask = self.mask.map(|m| fit_mask(m, &t)).transpose()?;
        let other = self
            .other
            .map(|o| fit(o, &t, "load's `other`"))
            .transpose()?;
        let p = Primitive::from(LoadParams {
            indexers,
            has_mask: mask.is_some(),
            has_other: other.is_some(),
        });
        let out = bind(&p, &self.r.operands(ops, mask.into_iter().chain(other)))?;
        Ok(out.into_iter().next().expect("load has one result"))
    }

    /// Performs the read; raises on an error (caught by `pallas_call`).
    pub fn read(self) -> Array {
        ok_or_raise(self.try_read())
    }
}

impl From<Load> for Array {
    fn from(l: Load) -> Array {
        l.read()
    }
}

/// A masked write being built: `store(&o_ref, idx, v).mask(m);` writes when
/// dropped (or on [`Store::run`]).
#[derive(Debug)]
pub struct Store {
    r: Ref,
    idx: RefIndex,
    value: Option<Array>,
    mask: Option<Array>,
}

/// `pl.store(o_ref, idx, v)`: a write that can be masked. It happens when
/// the returned `Store` is dropped (the end of the statement), so
/// `store(&o, idx, v).mask(m);` reads like JAX.
pub fn store(r: &Ref, idx: impl Into<RefIndex>, v: impl IntoValue) -> Store {
    Store {
        r: r.clone(),
        idx: idx.into(),
        value: Some(v.into_value()),
        mask: None,
    }
}

impl Store {
    /// Only lanes where `m` is true are written.
    pub fn mask(mut self, m: impl IntoValue) -> Store {
        self.mask = Some(m.into_value());
        self
    }

    /// Performs the write now.
    pub fn try_run(mut self) -> Result<()> {
        self.write()
    }

    /// Performs the write now; raises on an error.
    pub fn run(self) {
        ok_or_raise(self.try_run())
    }

    fn write(&mut self) -> Result<()> {
        let Some(v) = self.value.take() else {
            return Ok(());
        };
        let idx = std::mem::take(&mut self.idx);
        let (indexers, ops) = self.r.lowered(idx, "store")?;
        let t = self.r.indexed_type(&indexers, &ops)?;
        let v = fit(v, &t, "the stored value")?;
        let mask = self.mask.take().map(|m| fit_mask(m, &t)).transpose()?;
        let p = Primitive::from(StoreParams {
            indexers,
            has_mask: mask.is_some(),
        });
        let mut tail = vec![v];
        tail.extend(mask);
        bind(&p, &self.r.operands(ops, tail))?;
        Ok(())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.value.is_some() && !std::thread::panicking() {
            ok_or_raise(self.write());
        }
    }
}

/// `indexers` and their operands `ops` (eqn inputs `1..`) with every
/// static integer index made an `i32` scalar operand, and the operands
/// renumbered in order of appearance: JAX's `atomic_rmw` takes its integer
/// indices as operands, and its printed `args_tree` has no place for a
/// static one.
fn int_indices_as_operands(
    indexers: Vec<Indexer>,
    ops: Vec<Array>,
) -> Result<(Vec<Indexer>, Vec<Array>)> {
    let mut out_ops: Vec<Array> = Vec::with_capacity(ops.len());
    let mut operand = |a: Option<&Array>| -> Result<usize> {
        let a = a.ok_or_else(|| Error::InvalidArgument("atomic_rmw: a missing index".into()))?;
        out_ops.push(a.clone());
        Ok(out_ops.len())
    };
    let old = |k: usize| ops.get(k.wrapping_sub(1));
    let mut out = Vec::with_capacity(indexers.len());
    for ix in indexers {
        let mut entries = Vec::with_capacity(ix.entries.len());
        for e in ix.entries {
            entries.push(match e {
                IndexEntry::Int(IndexValue::Static(k)) => {
                    let k = i32::try_from(k).map_err(|_| {
                        Error::InvalidArgument(format!("atomic_rmw: index {k} does not fit i32"))
                    })?;
                    IndexEntry::Int(IndexValue::Dynamic(operand(Some(&Array::scalar(k)))?))
                }
                IndexEntry::Int(IndexValue::Dynamic(k)) => {
                    IndexEntry::Int(IndexValue::Dynamic(operand(old(k))?))
                }
                IndexEntry::Slice {
                    start: IndexValue::Dynamic(k),
                    size,
                    stride,
                } => IndexEntry::Slice {
                    start: IndexValue::Dynamic(operand(old(k))?),
                    size,
                    stride,
                },
                e @ IndexEntry::Slice {
                    start: IndexValue::Static(_),
                    ..
                } => e,
                IndexEntry::Array(k) => IndexEntry::Array(operand(old(k))?),
            });
        }
        out.push(Indexer { entries });
    }
    Ok((out, out_ops))
}

fn atomic(r: &Ref, idx: RefIndex, op: AtomicOp, v: Array) -> Result<Array> {
    let (indexers, ops) = r.lowered(idx, "atomic_rmw")?;
    let (indexers, ops) = int_indices_as_operands(indexers, ops)?;
    let t = r.indexed_type(&indexers, &ops)?;
    let v = fit(v, &t, "the atomic operand")?;
    let out = bind(
        &Primitive::from(AtomicRmwParams { indexers, op }),
        &r.operands(ops, [v]),
    )?;
    Ok(out.into_iter().next().expect("atomic_rmw has one result"))
}

macro_rules! atomics {
    ($($name:ident => $op:ident, $doc:literal;)*) => {$(
        #[doc = $doc]
        pub fn $name(r: &Ref, idx: impl Into<RefIndex>, v: impl IntoValue) -> Array {
            ok_or_raise(atomic(r, idx.into(), AtomicOp::$op, v.into_value()))
        }
    )*};
}

atomics! {
    atomic_add => Add, "`pl.atomic_add`: `r[idx] += v` atomically; returns the old value.";
    atomic_max => Max, "`pl.atomic_max`: `r[idx] = max(r[idx], v)`; returns the old value.";
    atomic_min => Min, "`pl.atomic_min`: `r[idx] = min(r[idx], v)`; returns the old value.";
    atomic_and => And, "`pl.atomic_and`: `r[idx] &= v`; returns the old value.";
    atomic_or => Or, "`pl.atomic_or`: `r[idx] |= v`; returns the old value.";
    atomic_xor => Xor, "`pl.atomic_xor`: `r[idx] ^= v`; returns the old value.";
    atomic_xchg => Xchg, "`pl.atomic_xchg`: `r[idx] = v`; returns the old value.";
}

/// `pl.atomic_cas`: where `r[idx] == cmp`, writes `new`; returns the old
/// value.
pub fn atomic_cas(
    r: &Ref,
    idx: impl Into<RefIndex>,
    cmp: impl IntoValue,
    new: impl IntoValue,
) -> Array {
    ok_or_raise((|| {
        let (indexers, ops) = r.lowered(idx.into(), "atomic_cas")?;
        let t = r.indexed_type(&indexers, &ops)?;
        let c = fit(cmp.into_value(), &t, "the compared value")?;
        let n = fit(new.into_value(), &t, "the new value")?;
        let out = bind(
            &Primitive::from(AtomicCasParams { indexers }),
            &r.operands(ops, [c, n]),
        )?;
        Ok(out.into_iter().next().expect("atomic_cas has one result"))
    })())
}
