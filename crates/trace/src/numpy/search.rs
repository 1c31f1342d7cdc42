//! `searchsorted`, `repeat` and `bincount`: insertion points by counting
//! comparisons (JAX's `method="compare_all"`, NaNs sorting last as in its
//! sorts), repetition with static counts as a gather, and counting as a
//! scatter-add.

use super::{broadcast_to, normalize_axis, sum, take};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// `x < y` in the total order of JAX's sorts: NaN after every number.
fn less_total(x: &Array, y: &Array) -> Result<Array> {
    let lt = lax::lt(x, y)?;
    if !x.dtype().is_float() {
        return Ok(lt);
    }
    let (xn, yn) = (lax::ne(x, x)?, lax::ne(y, y)?);
    lax::bitwise_or(&lt, &lax::bitwise_and(&yn, &lax::not(&xn)?)?)
}

/// `jnp.searchsorted(a, v, side)`: for each element of `v`, the index at
/// which inserting it into the sorted 1-D `a` keeps `a` sorted — before
/// equal elements for `side = "left"`, after them for `"right"`. The
/// result is `i32` of `v`'s shape.
pub fn searchsorted(a: &Array, v: &Array, side: &str) -> Result<Array> {
    let right = match side {
        "left" => false,
        "right" => true,
        other => {
            return Err(Error::InvalidArgument(format!(
                "searchsorted: side must be \"left\" or \"right\", got {other:?}"
            )))
        }
    };
    if a.ndim() != 1 {
        return Err(Error::InvalidArgument(format!(
            "searchsorted: a must be 1-D, got {}",
            fmt_aval(a.aval())
        )));
    }
    let ab = super::promote::promote_dtypes("searchsorted", &[a, v])?;
    let (a, v) = (&ab[0], &ab[1]);
    let vs = v.try_shape()?;
    let n = a.size();
    // Compare every query (a new last axis) with every element of `a`.
    let mut full = vs.clone();
    full.push(n);
    let mut ve = vs.clone();
    ve.push(1);
    let vb = broadcast_to(&lax::reshape(v, &ve)?, &full)?;
    let ab = broadcast_to(a, &full)?;
    // left: how many a < v; right: how many a <= v, i.e. not v < a.
    let before = if right {
        lax::not(&less_total(&vb, &ab)?)?
    } else {
        less_total(&ab, &vb)?
    };
    let counts = lax::convert_element_type(&before, DType::I32, false)?;
    sum(&counts, vs.len(), false)
}

/// `jnp.repeat(x, repeats, axis)` with static counts: each element (each
/// slice along `axis`) `repeats[i]` times, or every one `repeats[0]` times
/// when one count is given. `axis = None` repeats the flattened array.
pub fn repeat(x: &Array, repeats: &[usize], axis: Option<isize>) -> Result<Array> {
    let (x, axis) = match axis {
        Some(ax) => (x.clone(), normalize_axis(ax, x.ndim(), "repeat")?),
        None => (lax::reshape(x, &[x.size()])?, 0),
    };
    let n = x.try_shape()?[axis];
    let counts: Vec<usize> = match repeats {
        [r] => vec![*r; n],
        rs if rs.len() == n => rs.to_vec(),
        rs => {
            return Err(Error::InvalidArgument(format!(
                "repeat: {} counts for {n} elements along axis {axis}",
                rs.len()
            )))
        }
    };
    let idx: Vec<i32> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &r)| std::iter::repeat_n(i as i32, r))
        .collect();
    let len = idx.len();
    take(&x, &Array::from_vec(idx, &[len]), Some(axis as isize))
}

/// `jnp.bincount(x, weights, length)`: for non-negative integers `x`
/// (1-D), how many times each value `0..length` occurs (summing `weights`
/// instead when given); values outside `0..length` are dropped. `length`
/// is static, as `jit` requires in JAX.
pub fn bincount(x: &Array, weights: Option<&Array>, length: usize) -> Result<Array> {
    if x.ndim() != 1 || !x.dtype().is_int() {
        return Err(Error::InvalidArgument(format!(
            "bincount: x must be a 1-D integer array, got {}",
            fmt_aval(x.aval())
        )));
    }
    let n = x.size();
    let w = match weights {
        Some(w) if w.try_shape()? == [n] => w.clone(),
        Some(w) => {
            return Err(Error::ShapeMismatch {
                op: "bincount (weights)".into(),
                lhs: fmt_aval(x.aval()),
                rhs: fmt_aval(w.aval()),
            })
        }
        None => super::ones(&[n], DType::I32)?,
    };
    // One-hot rows of `x` against `0..length`, weighted and summed.
    let bins = lax::broadcasted_iota(x.dtype(), &[1, length], 1)?;
    let hit = lax::eq(&lax::reshape(x, &[n, 1])?, &bins)?;
    let hit = lax::convert_element_type(&hit, w.dtype(), false)?;
    let wcol = lax::reshape(&w, &[n, 1])?;
    sum(
        &lax::mul(&hit, &broadcast_to(&wcol, &[n, length])?)?,
        0usize,
        false,
    )
}
