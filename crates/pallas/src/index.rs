//! Indices into a `Ref`: integers, ranges, `ds(start, size)` with a traced
//! or static start, integer arrays (broadcast against each other) and `...`,
//! lowered to the IR's `Indexer` plus the dynamic index operands.
//!
//! Operand numbering follows the state primitives' layout: the ref is
//! operand 0 and the dynamic index operands follow in index order, so the
//! `k`-th dynamic entry names operand `k + 1`.

use jaxon_ir::primitive::{IndexEntry, IndexValue, Indexer};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::Array;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// The start of a [`ds`] slice: a Rust integer or a (maybe traced) integer
/// scalar.
#[derive(Clone, Debug)]
pub enum Start {
    /// A static start.
    Static(i64),
    /// A start only known when the kernel runs.
    Traced(Array),
}

/// One entry of a `Ref` index.
#[derive(Clone, Debug)]
pub enum RefIdx {
    /// An integer; negative values count from the end. Removes the axis.
    Int(i64),
    /// `start..stop` with a positive step; Python's defaults and clamping.
    Slice {
        /// First index (default 0).
        start: Option<i64>,
        /// Exclusive bound (default: the end).
        stop: Option<i64>,
        /// Step (default 1).
        step: Option<i64>,
    },
    /// `pl.ds(start, size)`: `size` elements from a maybe-traced start.
    Ds {
        /// The start.
        start: Start,
        /// The number of elements.
        size: usize,
    },
    /// A (maybe traced) integer scalar, or an integer array index.
    Array(Array),
    /// `...`: as many full slices as needed.
    Ellipsis,
}

/// `...` for [`ix!`](crate::ix).
pub const ELLIPSIS: RefIdx = RefIdx::Ellipsis;

/// `pl.ds(start, size)` (`pl.dynamic_slice`): `size` elements from `start`,
/// which may be traced (e.g. computed from `program_id`).
pub fn ds(start: impl Into<Start>, size: usize) -> RefIdx {
    RefIdx::Ds {
        start: start.into(),
        size,
    }
}

impl RefIdx {
    /// This slice with a step: `ix![RefIdx::from(0..8).step(2)]`.
    pub fn step(self, step: i64) -> RefIdx {
        match self {
            RefIdx::Slice { start, stop, .. } => RefIdx::Slice {
                start,
                stop,
                step: Some(step),
            },
            other => other,
        }
    }
}

macro_rules! int_idx {
    ($($t:ty),*) => {$(
        impl From<$t> for RefIdx {
            fn from(i: $t) -> RefIdx {
                RefIdx::Int(i as i64)
            }
        }
        impl From<$t> for Start {
            fn from(i: $t) -> Start {
                Start::Static(i as i64)
            }
        }
        impl From<Range<$t>> for RefIdx {
            fn from(r: Range<$t>) -> RefIdx {
                RefIdx::Slice { start: Some(r.start as i64), stop: Some(r.end as i64), step: None }
            }
        }
        impl From<RangeInclusive<$t>> for RefIdx {
            fn from(r: RangeInclusive<$t>) -> RefIdx {
                RefIdx::Slice {
                    start: Some(*r.start() as i64),
                    stop: Some(*r.end() as i64 + 1),
                    step: None,
                }
            }
        }
        impl From<RangeFrom<$t>> for RefIdx {
            fn from(r: RangeFrom<$t>) -> RefIdx {
                RefIdx::Slice { start: Some(r.start as i64), stop: None, step: None }
            }
        }
        impl From<RangeTo<$t>> for RefIdx {
            fn from(r: RangeTo<$t>) -> RefIdx {
                RefIdx::Slice { start: None, stop: Some(r.end as i64), step: None }
            }
        }
        impl From<RangeToInclusive<$t>> for RefIdx {
            fn from(r: RangeToInclusive<$t>) -> RefIdx {
                RefIdx::Slice { start: None, stop: Some(r.end as i64 + 1), step: None }
            }
        }
    )*};
}

int_idx!(i32, i64, isize, usize);

impl From<RangeFull> for RefIdx {
    fn from(_: RangeFull) -> RefIdx {
        RefIdx::Slice {
            start: None,
            stop: None,
            step: None,
        }
    }
}

impl From<Array> for RefIdx {
    fn from(a: Array) -> RefIdx {
        RefIdx::Array(a)
    }
}

impl From<&Array> for RefIdx {
    fn from(a: &Array) -> RefIdx {
        RefIdx::Array(a.clone())
    }
}

impl From<Array> for Start {
    fn from(a: Array) -> Start {
        Start::Traced(a)
    }
}

impl From<&Array> for Start {
    fn from(a: &Array) -> Start {
        Start::Traced(a.clone())
    }
}

/// Builds a `Vec<RefIdx>`: `ix![0, 2..5, .., ds(i, 4), &rows, ELLIPSIS]`.
#[macro_export]
macro_rules! ix {
    ($($e:expr),* $(,)?) => {
        vec![$($crate::RefIdx::from($e)),*]
    };
}

/// A whole `Ref` index: a list of entries, one entry, or `()` for the
/// whole ref (`x_ref[...]`).
#[derive(Clone, Debug, Default)]
pub struct RefIndex(pub Vec<RefIdx>);

impl From<Vec<RefIdx>> for RefIndex {
    fn from(v: Vec<RefIdx>) -> RefIndex {
        RefIndex(v)
    }
}

impl<const N: usize> From<[RefIdx; N]> for RefIndex {
    fn from(v: [RefIdx; N]) -> RefIndex {
        RefIndex(v.into())
    }
}

impl From<()> for RefIndex {
    fn from(_: ()) -> RefIndex {
        RefIndex(Vec::new())
    }
}

impl<T: Into<RefIdx>> From<T> for RefIndex {
    fn from(v: T) -> RefIndex {
        RefIndex(vec![v.into()])
    }
}

/// A value written into a `Ref` (or a mask / `other`): an `Array` or a
/// Rust scalar (weakly typed, as a Python scalar is).
pub trait IntoValue {
    /// The value as an `Array`.
    fn into_value(self) -> Array;
}

impl IntoValue for Array {
    fn into_value(self) -> Array {
        self
    }
}

impl IntoValue for &Array {
    fn into_value(self) -> Array {
        self.clone()
    }
}

macro_rules! weak_value {
    ($($t:ty),*) => {$(
        impl IntoValue for $t {
            fn into_value(self) -> Array {
                Array::weak(self)
            }
        }
    )*};
}

weak_value!(f32, f64, i32, i64);

impl IntoValue for bool {
    fn into_value(self) -> Array {
        Array::scalar(self)
    }
}

/// An index lowered for a ref of `shape`: the IR indexer (empty for the
/// whole ref) and the dynamic operands it names.
pub(crate) fn lower(
    shape: &[usize],
    idx: &RefIndex,
    what: &str,
) -> Result<(Vec<Indexer>, Vec<Array>)> {
    let idx = &idx.0;
    if idx.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let n_ell = idx.iter().filter(|e| matches!(e, RefIdx::Ellipsis)).count();
    if n_ell > 1 {
        return Err(Error::InvalidArgument(format!(
            "{what}: an index can only have a single ellipsis ('...')"
        )));
    }
    let explicit = idx.len() - n_ell;
    if explicit > shape.len() {
        return Err(Error::InvalidArgument(format!(
            "{what}: too many indices for a Ref of shape {shape:?}: {explicit} were given"
        )));
    }
    let mut full: Vec<RefIdx> = Vec::with_capacity(shape.len());
    for e in idx {
        if let RefIdx::Ellipsis = e {
            for _ in 0..shape.len() - explicit {
                full.push(RefIdx::from(..));
            }
        } else {
            full.push(e.clone());
        }
    }
    while full.len() < shape.len() {
        full.push(RefIdx::from(..));
    }
    let mut entries = Vec::with_capacity(shape.len());
    let mut operands: Vec<Array> = Vec::new();
    for (d, (e, &n)) in full.iter().zip(shape).enumerate() {
        let n_i = n as i64;
        let entry = match e {
            RefIdx::Int(i) => {
                let j = if *i < 0 { i + n_i } else { *i };
                if j < 0 || j >= n_i {
                    return Err(Error::InvalidArgument(format!(
                        "{what}: index {i} is out of bounds for axis {d} with size {n}"
                    )));
                }
                IndexEntry::Int(IndexValue::Static(j))
            }
            RefIdx::Slice { start, stop, step } => {
                let step = step.unwrap_or(1);
                if step <= 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{what}: Ref slices need a positive step, got {step}"
                    )));
                }
                let norm = |v: i64| if v < 0 { (v + n_i).max(0) } else { v.min(n_i) };
                let s = norm(start.unwrap_or(0));
                let t = norm(stop.unwrap_or(n_i));
                let size = if t > s { (t - s + step - 1) / step } else { 0 };
                IndexEntry::Slice {
                    start: IndexValue::Static(s),
                    size: size as usize,
                    stride: step as usize,
                }
            }
            RefIdx::Ds { start, size } => {
                let start = match start {
                    Start::Static(s) => {
                        let s = if *s < 0 { s + n_i } else { *s };
                        if s < 0 || s + *size as i64 > n_i {
                            return Err(Error::InvalidArgument(format!(
                                "{what}: ds({s}, {size}) is out of bounds for axis {d} with size {n}"
                            )));
                        }
                        IndexValue::Static(s)
                    }
                    Start::Traced(a) => {
                        scalar_int(a, what, "a ds start")?;
                        operands.push(a.clone());
                        IndexValue::Dynamic(operands.len())
                    }
                };
                IndexEntry::Slice {
                    start,
                    size: *size,
                    stride: 1,
                }
            }
            RefIdx::Array(a) => {
                if !a.dtype().is_int() {
                    return Err(Error::InvalidArgument(format!(
                        "{what}: indices must be integers, got an array of dtype {}",
                        a.dtype()
                    )));
                }
                operands.push(a.clone());
                if a.ndim() == 0 {
                    IndexEntry::Int(IndexValue::Dynamic(operands.len()))
                } else {
                    IndexEntry::Array(operands.len())
                }
            }
            RefIdx::Ellipsis => {
                return Err(Error::InvalidArgument(format!(
                    "{what}: an index can only have a single ellipsis ('...')"
                )))
            }
        };
        entries.push(entry);
    }
    Ok((vec![Indexer { entries }], operands))
}

fn scalar_int(a: &Array, what: &str, role: &str) -> Result<()> {
    if a.ndim() != 0 || !a.dtype().is_int() {
        return Err(Error::InvalidArgument(format!(
            "{what}: {role} must be an integer scalar, got {}",
            jaxon_ir::shape::fmt_aval(a.aval())
        )));
    }
    Ok(())
}
