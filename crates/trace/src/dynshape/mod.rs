//! Dynamic shapes (seeds 000 and 003): array sizes that are traced integer
//! scalars, creation and structural operations that accept them, and
//! dimension arithmetic.
//!
//! Representation: a tracer's aval may hold `Dim::Var`s; the tracer keeps
//! one scalar integer array per `Dim::Var` (its *dimension tracers*, see
//! `TracerRef::dim_tracers`), so `Size::Dyn(n)` is the trace-level
//! dimension and staging maps it to the jaxpr variable of `n`. Dimension
//! values are `i64`. Two dynamic dimensions are equal exactly when they are
//! the same variable.

mod ops;

pub use ops::{
    arange, broadcast_in_dim, broadcasted_iota, concatenate, dynamic_slice, empty, full, iota,
    ones, reshape, zeros,
};

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{DType, Dim, HostArray};

/// One dimension at trace level: a static size or a scalar integer array
/// (a tracer, whose value is only known when the program runs).
#[derive(Clone, Debug)]
pub enum Size {
    /// A static size.
    Const(usize),
    /// A scalar integer array holding the size.
    Dyn(Array),
}

impl From<usize> for Size {
    fn from(n: usize) -> Size {
        Size::Const(n)
    }
}

impl From<&Array> for Size {
    fn from(a: &Array) -> Size {
        Size::Dyn(a.clone())
    }
}

impl From<Array> for Size {
    fn from(a: Array) -> Size {
        Size::Dyn(a)
    }
}

impl Size {
    /// Normalises a size: a concrete array becomes its static value, a
    /// non-`i64` integer tracer is converted to `i64` (dimension variables
    /// are `i64`); anything else is an error.
    pub fn normalize(self) -> Result<Size> {
        match self {
            Size::Const(n) => Ok(Size::Const(n)),
            Size::Dyn(a) => {
                let ok = a.ndim() == 0 && (a.dtype().is_int());
                if !ok {
                    return Err(Error::InvalidArgument(format!(
                        "a dimension must be a scalar integer, got {}",
                        fmt_aval(a.aval())
                    )));
                }
                if !a.is_tracer() {
                    let v = a.try_to_host("dimension")?.data().get_i64(0);
                    return usize::try_from(v).map(Size::Const).map_err(|_| {
                        Error::InvalidArgument(format!("a dimension is negative: {v}"))
                    });
                }
                if a.dtype() == DType::I64 {
                    Ok(Size::Dyn(a))
                } else {
                    lax::convert_element_type(&a, DType::I64, false).map(Size::Dyn)
                }
            }
        }
    }

    /// The static size, if known.
    pub fn as_const(&self) -> Option<usize> {
        match self {
            Size::Const(n) => Some(*n),
            Size::Dyn(_) => None,
        }
    }

    /// The size as an `i64` scalar array (a concrete one for a constant).
    pub fn to_array(&self) -> Array {
        match self {
            Size::Const(n) => Array::from_host(HostArray::scalar(DType::I64, *n as f64)),
            Size::Dyn(a) => a.clone(),
        }
    }

    /// Whether two sizes are the same: equal constants or the same
    /// variable (the same tracer).
    pub fn same(&self, other: &Size) -> bool {
        match (self, other) {
            (Size::Const(a), Size::Const(b)) => a == b,
            (Size::Dyn(a), Size::Dyn(b)) => same_value(a, b),
            _ => false,
        }
    }
}

/// Whether two arrays are the same value: the same array, or tracers of one
/// staging trace standing for the same variable.
pub fn same_value(a: &Array, b: &Array) -> bool {
    if a.identity() == b.identity() {
        return true;
    }
    match (a.as_tracer(), b.as_tracer()) {
        (Some(x), Some(y)) => {
            std::sync::Arc::ptr_eq(x.main(), y.main())
                && x.payload::<jaxon_ir::Atom>().is_some()
                && x.payload::<jaxon_ir::Atom>() == y.payload::<jaxon_ir::Atom>()
        }
        _ => false,
    }
}

/// The trace-level dimensions of `x`: static sizes and the dimension
/// tracers of its dynamic ones.
pub fn sizes(x: &Array) -> Result<Vec<Size>> {
    let dims = x.as_tracer().map(|t| t.dim_tracers()).unwrap_or(&[]);
    let mut it = dims.iter();
    x.ty()
        .shape
        .iter()
        .map(|d| match d {
            Dim::Const(n) => Ok(Size::Const(*n)),
            Dim::Var(_) => it.next().cloned().map(Size::Dyn).ok_or_else(|| {
                Error::Unsupported(format!(
                    "an array of dynamic type {} without its dimension values",
                    fmt_aval(x.aval())
                ))
            }),
        })
        .collect()
}

/// The size of `x` along `axis` as an `i64` scalar array (a tracer for a
/// dynamic dimension).
pub fn size_of(x: &Array, axis: usize) -> Result<Array> {
    sizes(x)?
        .get(axis)
        .map(Size::to_array)
        .ok_or_else(|| Error::InvalidArgument(format!("{} has no axis {axis}", fmt_aval(x.aval()))))
}

/// The dimension tracers of `x` for every axis but `skip`: what a tracer
/// wrapping `x` (a jvp primal, or a batched value whose batch axis is
/// `skip`) carries as its own.
pub fn dim_tracers_except(x: &Array, skip: Option<usize>) -> Vec<Array> {
    let Some(t) = x.as_tracer() else {
        return Vec::new();
    };
    let mut it = t.dim_tracers().iter();
    let mut out = Vec::new();
    for (axis, d) in x.ty().shape.iter().enumerate() {
        if let Dim::Var(_) = d {
            if let Some(tr) = it.next() {
                if Some(axis) != skip {
                    out.push(tr.clone());
                }
            }
        }
    }
    out
}

/// Whether `x` has a dynamic dimension.
pub fn is_dynamic(x: &Array) -> bool {
    x.ty().shape.iter().any(|d| matches!(d, Dim::Var(_)))
}

/// `a + b` as a size: static sums stay static, otherwise an `i64` `add`
/// is staged and its result is the new dimension.
pub fn add_sizes(a: &Size, b: &Size) -> Result<Size> {
    match (a, b) {
        (Size::Const(x), Size::Const(y)) => Ok(Size::Const(x + y)),
        (Size::Const(0), s) | (s, Size::Const(0)) => Ok(s.clone()),
        _ => lax::add(&a.to_array(), &b.to_array()).map(Size::Dyn),
    }
}

/// `a * b` as a size (see [`add_sizes`]).
pub fn mul_sizes(a: &Size, b: &Size) -> Result<Size> {
    match (a, b) {
        (Size::Const(x), Size::Const(y)) => Ok(Size::Const(x * y)),
        (Size::Const(1), s) | (s, Size::Const(1)) => Ok(s.clone()),
        _ => lax::mul(&a.to_array(), &b.to_array()).map(Size::Dyn),
    }
}

/// Normalises sizes; returns the static shape param (`None` for dynamic
/// sizes) and the dynamic size operands, in order.
pub(crate) fn shape_param(shape: Vec<Size>) -> Result<(Vec<Option<usize>>, Vec<Array>)> {
    let mut param = Vec::with_capacity(shape.len());
    let mut operands = Vec::new();
    for s in shape {
        match s.normalize()? {
            Size::Const(n) => param.push(Some(n)),
            Size::Dyn(a) => {
                param.push(None);
                operands.push(a);
            }
        }
    }
    Ok((param, operands))
}
