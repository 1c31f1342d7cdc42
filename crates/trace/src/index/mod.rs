//! NumPy-style indexing of `Array`s: `x.index(idx![..])` and
//! `x.at(idx![..]).set(v)` / `.add` / `.mul` / `.min` / `.max` / `.get`.
//!
//! An index is a list of [`Idx`] entries: integers (negative count from
//! the end), slices with steps, `NewAxis`, one `Ellipsis`, integer arrays
//! and boolean masks. Lowering follows JAX 0.10: static integers and
//! slices become `slice`/`rev`/`squeeze`/`broadcast_in_dim`; scalar traced
//! integers a `dynamic_slice`; integer arrays a `gather` (or `scatter` for
//! `.at`). Boolean masks need a concrete value: a traced mask is an error,
//! like JAX's `NonConcreteBooleanIndexError`.

mod normalize;
mod plan;
mod slicing;

use crate::array::Array;
use crate::error::{ok_or_raise, Result};
use crate::ops::IntoArray;
use jaxon_ir::primitive::ScatterKind;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// One entry of a NumPy-style index.
#[derive(Clone, Debug)]
pub enum Idx {
    /// An integer; negative values count from the end. Removes the axis.
    I(i64),
    /// `start:stop:step` with Python's defaults and clamping.
    Slice {
        /// First index (default: 0, or the end for a negative step).
        start: Option<i64>,
        /// Exclusive bound (default: the end, or before 0 for a negative step).
        stop: Option<i64>,
        /// Step (default 1; nonzero).
        step: Option<i64>,
    },
    /// `None` / `np.newaxis`: a new axis of size 1.
    NewAxis,
    /// `...`: as many full slices as needed.
    Ellipsis,
    /// An integer array (gather), or a 0-d integer (maybe traced) scalar.
    Array(Array),
    /// A boolean mask over as many axes as it has; must be concrete.
    Mask(Array),
}

/// `np.newaxis`, for [`idx!`](crate::idx!).
pub const NEWAXIS: Idx = Idx::NewAxis;
/// `...`, for [`idx!`](crate::idx!).
pub const ELLIPSIS: Idx = Idx::Ellipsis;

impl Idx {
    /// The full slice `:`.
    pub fn full() -> Idx {
        Idx::Slice {
            start: None,
            stop: None,
            step: None,
        }
    }

    /// `start:stop:step`.
    pub fn slice(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> Idx {
        Idx::Slice { start, stop, step }
    }

    /// This slice with a step (`idx![1..5;2]`); other entries unchanged.
    pub fn with_step(self, step: i64) -> Idx {
        match self {
            Idx::Slice { start, stop, .. } => Idx::Slice {
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
        impl From<$t> for Idx {
            fn from(i: $t) -> Idx {
                Idx::I(i as i64)
            }
        }
        impl From<Range<$t>> for Idx {
            fn from(r: Range<$t>) -> Idx {
                Idx::slice(Some(r.start as i64), Some(r.end as i64), None)
            }
        }
        impl From<RangeInclusive<$t>> for Idx {
            fn from(r: RangeInclusive<$t>) -> Idx {
                let end = *r.end() as i64;
                // `a..=-1` reaches the end.
                let stop = if end == -1 { None } else { Some(end + 1) };
                Idx::slice(Some(*r.start() as i64), stop, None)
            }
        }
        impl From<RangeFrom<$t>> for Idx {
            fn from(r: RangeFrom<$t>) -> Idx {
                Idx::slice(Some(r.start as i64), None, None)
            }
        }
        impl From<RangeTo<$t>> for Idx {
            fn from(r: RangeTo<$t>) -> Idx {
                Idx::slice(None, Some(r.end as i64), None)
            }
        }
        impl From<RangeToInclusive<$t>> for Idx {
            fn from(r: RangeToInclusive<$t>) -> Idx {
                let end = r.end as i64;
                let stop = if end == -1 { None } else { Some(end + 1) };
                Idx::slice(None, stop, None)
            }
        }
    )*};
}

int_idx!(i32, i64, isize, usize);

impl From<RangeFull> for Idx {
    fn from(_: RangeFull) -> Idx {
        Idx::full()
    }
}

impl From<Array> for Idx {
    fn from(a: Array) -> Idx {
        if a.dtype().is_bool() {
            Idx::Mask(a)
        } else {
            Idx::Array(a)
        }
    }
}

impl From<&Array> for Idx {
    fn from(a: &Array) -> Idx {
        Idx::from(a.clone())
    }
}

/// Builds a `Vec<Idx>`: `idx![1, .., 2..5;2, NEWAXIS, ELLIPSIS, &arr]`.
/// `range;step` sets a slice's step (`idx![..;-1]` reverses).
#[macro_export]
macro_rules! idx {
    ($($e:expr $(; $step:expr)?),* $(,)?) => {
        vec![$($crate::index::Idx::from($e)$(.with_step($step))?),*]
    };
}

/// A whole index: a list of entries, or one entry.
#[derive(Clone, Debug)]
pub struct Index(pub Vec<Idx>);

impl From<Vec<Idx>> for Index {
    fn from(v: Vec<Idx>) -> Index {
        Index(v)
    }
}

impl<const N: usize> From<[Idx; N]> for Index {
    fn from(v: [Idx; N]) -> Index {
        Index(v.into())
    }
}

impl<T: Into<Idx>> From<T> for Index {
    fn from(v: T) -> Index {
        Index(vec![v.into()])
    }
}

/// `x[idx]`.
pub fn index(x: &Array, idx: &[Idx]) -> Result<Array> {
    let entries = normalize::normalize(x, idx)?;
    if let Some(out) = slicing::try_static(x, &entries)? {
        return Ok(out);
    }
    if let Some(out) = slicing::try_dynamic(x, &entries)? {
        return Ok(out);
    }
    plan::gather(x, &entries)
}

/// `x.at[idx].<kind>(v)`: a functional update.
pub fn scatter(x: &Array, idx: &[Idx], kind: ScatterKind, v: &Array) -> Result<Array> {
    let entries = normalize::normalize(x, idx)?;
    plan::scatter(x, &entries, kind, v)
}

/// The result of `x.at(idx)`: pick the update.
#[derive(Clone, Debug)]
pub struct At {
    x: Array,
    idx: Vec<Idx>,
}

impl At {
    /// `x.at[idx].get()`: the same as `x[idx]`.
    pub fn get(&self) -> Array {
        ok_or_raise(index(&self.x, &self.idx))
    }

    /// `x.at[idx].set(v)`.
    pub fn set(&self, v: impl IntoArray) -> Array {
        ok_or_raise(scatter(
            &self.x,
            &self.idx,
            ScatterKind::Set,
            &v.into_array(),
        ))
    }

    /// `x.at[idx].add(v)` (repeated indices accumulate).
    pub fn add(&self, v: impl IntoArray) -> Array {
        ok_or_raise(scatter(
            &self.x,
            &self.idx,
            ScatterKind::Add,
            &v.into_array(),
        ))
    }

    /// `x.at[idx].multiply(v)`.
    pub fn mul(&self, v: impl IntoArray) -> Array {
        ok_or_raise(scatter(
            &self.x,
            &self.idx,
            ScatterKind::Mul,
            &v.into_array(),
        ))
    }

    /// `x.at[idx].min(v)`.
    pub fn min(&self, v: impl IntoArray) -> Array {
        ok_or_raise(scatter(
            &self.x,
            &self.idx,
            ScatterKind::Min,
            &v.into_array(),
        ))
    }

    /// `x.at[idx].max(v)`.
    pub fn max(&self, v: impl IntoArray) -> Array {
        ok_or_raise(scatter(
            &self.x,
            &self.idx,
            ScatterKind::Max,
            &v.into_array(),
        ))
    }
}

impl Array {
    /// NumPy indexing `x[idx]`: `x.index(2)`, `x.index(idx![.., 1..;2])`.
    pub fn index(&self, idx: impl Into<Index>) -> Array {
        ok_or_raise(index(self, &idx.into().0))
    }

    /// JAX's `x.at[idx]`, for functional updates.
    pub fn at(&self, idx: impl Into<Index>) -> At {
        At {
            x: self.clone(),
            idx: idx.into().0,
        }
    }
}
