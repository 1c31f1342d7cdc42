//! Array manipulation of the NumPy API: `split`, `pad`, `take`, `sort`,
//! `argsort` and the cumulative reductions, in JAX 0.10's sequences
//! (including its named `jit` wrappers).

use super::wrap::{jitted, lit};
use super::{broadcast_to, normalize_axis, where_};
use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::{
    CumulativeOp, FillValue, GatherDimensionNumbers, GatherScatterMode, Ints,
};
use jaxon_ir::primitive::{GatherParams, PadParams, SplitParams};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{DType, Primitive};

/// Ints printed as NumPy scalars (`np.int64(2)`), as JAX computes them.
fn np_ints(values: Vec<i64>) -> Ints {
    let np_int64 = vec![true; values.len()];
    Ints { values, np_int64 }
}

/// How `split` cuts an axis.
#[derive(Clone, Debug)]
pub enum Sections {
    /// This many equal pieces.
    Equal(usize),
    /// Cut before each of these (sorted) indices.
    At(Vec<usize>),
}

/// `jnp.split(x, sections, axis)`: one `split` equation.
pub fn split(x: &Array, sections: Sections, axis: isize) -> Result<Vec<Array>> {
    let axis = normalize_axis(axis, x.ndim(), "split")?;
    let n = x.try_shape()?[axis];
    let sizes: Vec<i64> = match sections {
        Sections::Equal(k) => {
            if k == 0 || n % k != 0 {
                return Err(Error::InvalidArgument(format!(
                    "split: array split does not result in an equal division \
                     ({n} into {k} sections)"
                )));
            }
            vec![(n / k) as i64; k]
        }
        Sections::At(points) => {
            let mut prev = 0usize;
            let mut sizes = Vec::new();
            for &p in points.iter().chain(std::iter::once(&n)) {
                let p = p.min(n);
                sizes.push(p.saturating_sub(prev) as i64);
                prev = prev.max(p);
            }
            sizes
        }
    };
    bind(
        &Primitive::from(SplitParams {
            sizes: np_ints(sizes),
            axis,
        }),
        std::slice::from_ref(x),
    )
}

/// `jnp.pad(x, pad_width, constant_values=value)` (constant mode):
/// `(before, after)` per axis.
pub fn pad(x: &Array, pad_width: &[(usize, usize)], value: &Array) -> Result<Array> {
    if pad_width.len() != x.ndim() {
        return Err(Error::InvalidArgument(format!(
            "pad: {} (before, after) pairs for an array of rank {}",
            pad_width.len(),
            x.ndim()
        )));
    }
    let config: Vec<Ints> = pad_width
        .iter()
        .map(|&(lo, hi)| Ints {
            values: vec![lo as i64, hi as i64, 0],
            np_int64: vec![true, true, false],
        })
        .collect();
    jitted("_pad", vec![x.clone(), value.clone()], move |a| {
        let v = lax::convert_element_type(&a[1], a[0].dtype(), false)?;
        crate::core::bind1(
            &Primitive::from(PadParams {
                padding_config: config.clone(),
            }),
            &[a[0].clone(), v],
        )
    })
}

/// Wraps negative indices: `where(i < 0, i + n, i)`, through `jnp.where`
/// (as `take` does) or a bare `select_n` (as indexing does).
pub(crate) fn wrap_negative(i: &Array, n: usize, via_where: bool) -> Result<Array> {
    if i.dtype().is_unsigned_int() {
        return Ok(i.clone());
    }
    let neg = lax::lt(i, &lit(0.0, i.dtype())?)?;
    let shifted = lax::add(i, &lit(n as f64, i.dtype())?)?;
    if via_where {
        where_(&neg, &shifted, i)
    } else {
        lax::select_n(&neg, &[i.clone(), shifted])
    }
}

/// `jnp.take(x, indices, axis)` with JAX's default `mode="fill"`:
/// out-of-bounds indices give NaN (floats) or the dtype's extreme.
/// `axis=None` takes from the flattened array.
pub fn take(x: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    if !indices.dtype().is_int() {
        return Err(Error::DTypeMismatch {
            op: "take".into(),
            lhs: fmt_aval(indices.aval()),
            rhs: "an integer index dtype".into(),
        });
    }
    jitted("_take", vec![x.clone(), indices.clone()], move |a| {
        let (mut x, idx) = (a[0].clone(), &a[1]);
        let axis = match axis {
            Some(ax) => normalize_axis(ax, x.ndim(), "take")?,
            None => {
                x = lax::reshape(&x, &[x.size()])?;
                0
            }
        };
        let shape = x.try_shape()?;
        let idx = wrap_negative(idx, shape[axis], true)?;
        let ishape = idx.try_shape()?;
        let mut ishape1 = ishape.clone();
        ishape1.push(1);
        let dims: Vec<usize> = (0..ishape.len()).collect();
        let gidx = lax::broadcast_in_dim(&idx, &ishape1, &dims)?;
        let out_rank = shape.len() - 1 + ishape.len();
        let offset_dims: Vec<usize> = (0..axis).chain(axis + ishape.len()..out_rank).collect();
        let mut slice_sizes = shape.clone();
        slice_sizes[axis] = 1;
        let fill = default_fill(x.dtype());
        gather(
            &x,
            &gidx,
            GatherDimensionNumbers {
                offset_dims: Ints::from(offset_dims.as_slice()),
                collapsed_slice_dims: Ints::new(vec![axis as i64]),
                start_index_map: Ints::new(vec![axis as i64]),
                ..Default::default()
            },
            &slice_sizes,
            GatherScatterMode::FillOrDrop,
            fill,
            false,
        )
    })
}

/// `jnp.take_along_axis(x, indices, axis)` with JAX's default
/// `mode="fill"`: `out[.., i, ..] = x[.., indices[.., i, ..], ..]` along
/// `axis`, every other dimension matched (broadcast when one side has
/// size 1). Negative indices count from the end; out-of-bounds ones give
/// the fill of [`take`]. `axis=None` takes from the flattened array with
/// 1-D indices.
pub fn take_along_axis(x: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    if !indices.dtype().is_int() {
        return Err(Error::DTypeMismatch {
            op: "take_along_axis".into(),
            lhs: fmt_aval(indices.aval()),
            rhs: "an integer index dtype".into(),
        });
    }
    // `axis=None` flattens `x` (inside the staged function, as JAX).
    let (flat, axis) = match axis {
        Some(ax) => (false, normalize_axis(ax, x.ndim(), "take_along_axis")?),
        None if indices.ndim() == 1 => (true, 0),
        None => {
            return Err(Error::InvalidArgument(format!(
                "take_along_axis: with axis=None the indices must be 1-D, got {}",
                fmt_aval(indices.aval())
            )))
        }
    };
    let xs = if flat { vec![x.size()] } else { x.try_shape()? };
    let is = indices.try_shape()?;
    if xs.len() != is.len() {
        return Err(Error::ShapeMismatch {
            op: "take_along_axis".into(),
            lhs: fmt_aval(x.aval()),
            rhs: fmt_aval(indices.aval()),
        });
    }
    // Every dimension but `axis` broadcasts to a common size.
    let mut common = Vec::with_capacity(xs.len());
    for (d, (&a, &b)) in xs.iter().zip(&is).enumerate() {
        common.push(match (a, b) {
            _ if d == axis => 0,
            (a, b) if a == b || b == 1 => a,
            (1, b) => b,
            _ => {
                return Err(Error::ShapeMismatch {
                    op: format!("take_along_axis (dimension {d})"),
                    lhs: fmt_aval(x.aval()),
                    rhs: fmt_aval(indices.aval()),
                })
            }
        });
    }
    let with_axis = |n: usize| {
        let mut s = common.clone();
        s[axis] = n;
        s
    };
    let x = if flat || xs == with_axis(xs[axis]) {
        x.clone()
    } else {
        broadcast_to(x, &with_axis(xs[axis]))?
    };
    let indices = if is == with_axis(is[axis]) {
        indices.clone()
    } else {
        broadcast_to(indices, &with_axis(is[axis]))?
    };
    jitted("take_along_axis", vec![x, indices], move |a| {
        let (x, idx) = (&a[0], &a[1]);
        let x = &if flat {
            lax::reshape(x, &[x.size()])?
        } else {
            x.clone()
        };
        let shape = x.try_shape()?;
        let idx = wrap_negative(idx, shape[axis], false)?;
        let mut ishape1 = idx.try_shape()?;
        ishape1.push(1);
        let gidx = lax::reshape(&idx, &ishape1)?;
        let batch: Vec<i64> = (0..shape.len() as i64)
            .filter(|&d| d != axis as i64)
            .collect();
        gather(
            x,
            &gidx,
            GatherDimensionNumbers {
                offset_dims: Ints::new(Vec::new()),
                collapsed_slice_dims: Ints::new(vec![axis as i64]),
                start_index_map: Ints::new(vec![axis as i64]),
                operand_batching_dims: Ints::new(batch.clone()),
                start_indices_batching_dims: Ints::new(batch),
            },
            &vec![1; shape.len()],
            GatherScatterMode::FillOrDrop,
            default_fill(x.dtype()),
            false,
        )
    })
}

/// The fill JAX's `take` states for out-of-bounds reads: NaN for floats,
/// the lowest signed / highest unsigned integer, `None` (the default,
/// `true`) for bools.
fn default_fill(d: DType) -> Option<FillValue> {
    let int = |v: i64| Some(FillValue::Int(v));
    match d {
        DType::I8 => int(i8::MIN as i64),
        DType::I16 => int(i16::MIN as i64),
        DType::I32 => int(i32::MIN as i64),
        DType::I64 => int(i64::MIN),
        DType::U8 => int(u8::MAX as i64),
        DType::U16 => int(u16::MAX as i64),
        DType::U32 => int(u32::MAX as i64),
        d if d.is_float() => Some(FillValue::Float(f64::NAN)),
        _ => None,
    }
}

/// `lax.gather` with the given dimension numbers.
pub(crate) fn gather(
    x: &Array,
    indices: &Array,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: &[usize],
    mode: GatherScatterMode,
    fill_value: Option<FillValue>,
    sorted_unique: bool,
) -> Result<Array> {
    crate::core::bind1(
        &Primitive::from(GatherParams {
            dimension_numbers,
            fill_value,
            indices_are_sorted: sorted_unique,
            mode,
            slice_sizes: Ints::from(slice_sizes),
            unique_indices: sorted_unique,
        }),
        &[x.clone(), indices.clone()],
    )
}

/// Resolves `axis=None` by flattening.
fn axis_or_flat(x: &Array, axis: Option<isize>, op: &str) -> Result<(Array, usize)> {
    match axis {
        Some(a) => Ok((x.clone(), normalize_axis(a, x.ndim(), op)?)),
        None => Ok((lax::reshape(x, &[x.size()])?, 0)),
    }
}

/// `jnp.sort(x, axis)` (stable; `None` sorts the flattened array).
pub fn sort(x: &Array, axis: Option<isize>) -> Result<Array> {
    jitted("sort", vec![x.clone()], move |a| {
        let (x, axis) = axis_or_flat(&a[0], axis, "sort")?;
        Ok(lax::sort(&[x], axis, true, 1)?.remove(0))
    })
}

/// `jnp.argsort(x, axis)`: `i32` indices of a stable ascending sort.
pub fn argsort(x: &Array, axis: Option<isize>) -> Result<Array> {
    jitted("argsort", vec![x.clone()], move |a| {
        let (x, axis) = axis_or_flat(&a[0], axis, "argsort")?;
        let iota = lax::broadcasted_iota(DType::I32, &x.try_shape()?, axis)?;
        Ok(lax::sort(&[x, iota], axis, true, 1)?.remove(1))
    })
}

/// `jnp.lexsort(keys, axis)`: `i32` indices that sort along `axis` by the
/// last key, ties broken by the one before it, and so on (a stable sort).
/// The keys must share one shape.
pub fn lexsort(keys: &[Array], axis: isize) -> Result<Array> {
    let Some(first) = keys.first() else {
        return Err(Error::InvalidArgument(
            "lexsort: needs at least one key".into(),
        ));
    };
    let shape = first.try_shape()?;
    if let Some(k) = keys.iter().find(|k| k.shape() != shape) {
        return Err(Error::ShapeMismatch {
            op: "lexsort".into(),
            lhs: fmt_aval(first.aval()),
            rhs: fmt_aval(k.aval()),
        });
    }
    if shape.is_empty() {
        return Err(Error::InvalidArgument(
            "lexsort: the keys must have at least one axis".into(),
        ));
    }
    let axis = normalize_axis(axis, shape.len(), "lexsort")?;
    let mut operands: Vec<Array> = keys.iter().rev().cloned().collect();
    operands.push(lax::broadcasted_iota(DType::I32, &shape, axis)?);
    let n = keys.len();
    lax::sort(&operands, axis, true, n)?
        .pop()
        .ok_or_else(|| Error::InvalidArgument("lexsort: sort returned nothing".into()))
}

fn cumulative(
    name: &'static str,
    op: CumulativeOp,
    x: &Array,
    axis: Option<isize>,
) -> Result<Array> {
    jitted(name, vec![x.clone()], move |a| {
        let (mut x, axis) = axis_or_flat(&a[0], axis, name)?;
        if x.dtype() == DType::Bool {
            x = lax::convert_element_type(&x, DType::I32, false)?;
        }
        lax::cumulative(op, &x, axis, false)
    })
}

/// `jnp.cumsum(x, axis)` (`None`: over the flattened array).
pub fn cumsum(x: &Array, axis: Option<isize>) -> Result<Array> {
    cumulative("cumsum", CumulativeOp::Cumsum, x, axis)
}

/// `jnp.cumprod(x, axis)`.
pub fn cumprod(x: &Array, axis: Option<isize>) -> Result<Array> {
    cumulative("cumprod", CumulativeOp::Cumprod, x, axis)
}

/// The running maximum along `axis` (`lax.cummax`; JAX has no jnp
/// wrapper, so no `jit` equation).
pub fn cummax(x: &Array, axis: isize, reverse: bool) -> Result<Array> {
    let axis = normalize_axis(axis, x.ndim(), "cummax")?;
    lax::cumulative(CumulativeOp::Cummax, x, axis, reverse)
}

/// The running minimum along `axis` (`lax.cummin`).
pub fn cummin(x: &Array, axis: isize, reverse: bool) -> Result<Array> {
    let axis = normalize_axis(axis, x.ndim(), "cummin")?;
    lax::cumulative(CumulativeOp::Cummin, x, axis, reverse)
}
