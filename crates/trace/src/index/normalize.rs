//! Normalising an index against an operand shape: the ellipsis expanded,
//! trailing axes filled with full slices, integers and slices resolved
//! with Python's rules, boolean masks turned into integer arrays.

use super::Idx;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// One resolved index entry.
#[derive(Clone, Debug)]
pub(crate) enum Entry {
    /// A static in-bounds integer on operand dim `dim`.
    Int { dim: usize, i: usize },
    /// `len` elements from `start` by `step` (nonzero) on operand dim `dim`.
    Slice {
        dim: usize,
        start: usize,
        len: usize,
        step: i64,
        /// The exclusive bound `slice` uses (Python's clamped stop for
        /// positive steps, `start + 1` for negative ones).
        stop: usize,
    },
    /// An integer array (maybe 0-d, maybe traced) on operand dim `dim`.
    Array { dim: usize, a: Array },
    /// A new axis of size 1.
    NewAxis,
}

fn resolve_slice(
    n: usize,
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
) -> Result<(usize, usize, i64, usize)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(Error::InvalidArgument("slice step cannot be zero".into()));
    }
    let n = n as i64;
    let fix = |v: i64| if v < 0 { v + n } else { v };
    if step > 0 {
        let s = start.map_or(0, fix).clamp(0, n);
        let e = stop.map_or(n, fix).clamp(0, n);
        let len = if e > s { (e - s + step - 1) / step } else { 0 };
        Ok((s as usize, len as usize, step, e.max(s) as usize))
    } else {
        let s = start.map_or(n - 1, fix).clamp(-1, n - 1);
        let e = stop.map_or(-1, fix).clamp(-1, n - 1);
        let len = if s > e {
            (s - e + (-step) - 1) / (-step)
        } else {
            0
        };
        Ok((
            s.max(0) as usize,
            len as usize,
            step,
            (s + 1).max(0) as usize,
        ))
    }
}

/// The nonzero coordinates of a concrete boolean mask, one `i32` array
/// per mask axis.
fn mask_indices(m: &Array) -> Result<Vec<Array>> {
    if m.is_tracer() {
        return Err(Error::Concretization {
            op: format!(
                "boolean mask indexing (NonConcreteBooleanIndexError: the mask {} \
                 decides the result's shape, so it must be concrete; use \
                 jnp.where(mask, x, fill) for a traced mask)",
                fmt_aval(m.aval())
            ),
            aval: fmt_aval(m.aval()),
        });
    }
    let shape = m.try_shape()?;
    let host = m.try_to_host("boolean mask indexing")?;
    let strides: Vec<usize> = (0..shape.len())
        .map(|d| shape[d + 1..].iter().product())
        .collect();
    let mut coords: Vec<Vec<i32>> = vec![Vec::new(); shape.len()];
    for flat in 0..host.len() {
        if host.data().get_f64(flat) != 0.0 {
            for d in 0..shape.len() {
                coords[d].push(((flat / strides[d]) % shape[d]) as i32);
            }
        }
    }
    coords
        .into_iter()
        .map(|c| {
            let n = c.len();
            Array::try_from_vec(c, &[n])
        })
        .collect()
}

/// Resolves `idx` against `x`'s shape.
pub(crate) fn normalize(x: &Array, idx: &[Idx]) -> Result<Vec<Entry>> {
    let shape = x.try_shape()?;
    // Expand masks first: a k-dim mask consumes k axes.
    let mut items: Vec<Idx> = Vec::with_capacity(idx.len());
    for i in idx {
        match i {
            Idx::Mask(m) if m.ndim() == 0 => {
                return Err(Error::Unsupported(
                    "indexing with a 0-d boolean mask".into(),
                ))
            }
            Idx::Mask(m) => items.extend(mask_indices(m)?.into_iter().map(Idx::Array)),
            Idx::Array(a) if a.dtype() == DType::Bool => {
                items.extend(mask_indices(a)?.into_iter().map(Idx::Array))
            }
            other => items.push(other.clone()),
        }
    }
    let consumed = items
        .iter()
        .filter(|i| !matches!(i, Idx::NewAxis | Idx::Ellipsis))
        .count();
    let ellipses = items.iter().filter(|i| matches!(i, Idx::Ellipsis)).count();
    if ellipses > 1 {
        return Err(Error::InvalidArgument(
            "an index can only have a single ellipsis".into(),
        ));
    }
    if consumed > shape.len() {
        return Err(Error::InvalidArgument(format!(
            "too many indices for an array of type {}: {consumed} non-None/Ellipsis \
             indices for {} dimensions",
            fmt_aval(x.aval()),
            shape.len()
        )));
    }
    let fill = shape.len() - consumed;
    let mut expanded: Vec<Idx> = Vec::new();
    for i in items {
        if matches!(i, Idx::Ellipsis) {
            expanded.extend((0..fill).map(|_| Idx::full()));
        } else {
            expanded.push(i);
        }
    }
    if ellipses == 0 {
        expanded.extend((0..fill).map(|_| Idx::full()));
    }
    let mut dim = 0;
    let mut out = Vec::with_capacity(expanded.len());
    for i in expanded {
        let e = match i {
            Idx::NewAxis => Entry::NewAxis,
            Idx::I(i) => {
                let n = shape[dim] as i64;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(Error::InvalidArgument(format!(
                        "index {i} is out of bounds for axis {dim} with size {n}"
                    )));
                }
                Entry::Int { dim, i: j as usize }
            }
            Idx::Slice { start, stop, step } => {
                let (start, len, step, stop) = resolve_slice(shape[dim], start, stop, step)?;
                Entry::Slice {
                    dim,
                    start,
                    len,
                    step,
                    stop,
                }
            }
            Idx::Array(a) => {
                if !a.dtype().is_int() {
                    return Err(Error::DTypeMismatch {
                        op: "indexing".into(),
                        lhs: fmt_aval(a.aval()),
                        rhs: "an integer or boolean index".into(),
                    });
                }
                let a = if a.dtype() == DType::I32 {
                    a
                } else {
                    lax::convert_element_type(&a, DType::I32, false)?
                };
                Entry::Array { dim, a }
            }
            Idx::Mask(_) | Idx::Ellipsis => unreachable!("expanded above"),
        };
        if !matches!(e, Entry::NewAxis) {
            dim += 1;
        }
        out.push(e);
    }
    Ok(out)
}
