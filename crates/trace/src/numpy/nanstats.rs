//! The NaN-ignoring statistics of `jnp` beyond the plain reductions
//! (`nan.rs`): `nanvar`, `nanstd`, `nancumsum`, `nancumprod`,
//! `nanargmin`, `nanargmax`, `nanquantile`, `nanpercentile` and
//! `nanmedian`, as JAX 0.10 computes them.

use super::nan::fill_nan;
use super::promote::promote_dtypes_inexact;
use super::wrap::lit;
use super::*;

/// `jnp.nanvar(x, axis, ddof, keepdims)`: the variance of the non-NaN
/// elements, NaN where fewer than `ddof + 1` remain.
pub fn nanvar(x: &Array, axes: impl IntoAxes + Clone, ddof: i64, keepdims: bool) -> Result<Array> {
    let x = promote_dtypes_inexact("nanvar", &[x])?.remove(0);
    let dt = x.dtype();
    let nan = isnan(&x)?;
    let mean = nanmean(&x, axes.clone(), true)?;
    let centered = where_(&nan, &lit(0.0, dt)?, &subtract(&x, &mean)?)?;
    let total = sum(&square(&centered)?, axes.clone(), keepdims)?;
    let count = sum(
        &lax::convert_element_type(&logical_not(&nan)?, DType::I32, false)?,
        axes,
        keepdims,
    )?;
    let count = lax::sub(&count, &lit(ddof as f64, DType::I32)?)?;
    let none = lax::le(&count, &lit(0.0, DType::I32)?)?;
    let total = where_(&none, &lit(f64::NAN, dt)?, &total)?;
    let divisor = where_(&none, &lit(1.0, DType::I32)?, &count)?;
    lax::div(&total, &lax::convert_element_type(&divisor, dt, false)?)
}

/// `jnp.nanstd`: the square root of [`nanvar`].
pub fn nanstd(x: &Array, axes: impl IntoAxes + Clone, ddof: i64, keepdims: bool) -> Result<Array> {
    sqrt(&nanvar(x, axes, ddof, keepdims)?)
}

/// `jnp.nancumsum(x, axis)`: the running sum, NaNs counted as zero.
pub fn nancumsum(x: &Array, axis: Option<isize>) -> Result<Array> {
    cumsum(&fill_nan(x, 0.0)?, axis)
}

/// `jnp.nancumprod(x, axis)`: the running product, NaNs counted as one.
pub fn nancumprod(x: &Array, axis: Option<isize>) -> Result<Array> {
    cumprod(&fill_nan(x, 1.0)?, axis)
}

fn nan_arg(x: &Array, axis: Option<isize>, keepdims: bool, is_max: bool) -> Result<Array> {
    let pick = |x: &Array| {
        if is_max {
            argmax(x, axis, keepdims)
        } else {
            argmin(x, axis, keepdims)
        }
    };
    if !x.dtype().is_float() {
        return pick(x);
    }
    let nan = isnan(x)?;
    let fill = if is_max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let res = pick(&where_(&nan, &lit(fill, x.dtype())?, x)?)?;
    let none = all(&nan, axis, keepdims)?;
    where_(&none, &lit(-1.0, DType::I32)?, &res)
}

/// `jnp.nanargmax(x, axis, keepdims)`: the index of the largest non-NaN
/// element (`-1` where all are NaN).
pub fn nanargmax(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    nan_arg(x, axis, keepdims, true)
}

/// `jnp.nanargmin(x, axis, keepdims)`: the index of the smallest non-NaN
/// element (`-1` where all are NaN).
pub fn nanargmin(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    nan_arg(x, axis, keepdims, false)
}

/// `jnp.nanquantile(x, q, axis, keepdims)` ("linear" method): the
/// quantiles of the non-NaN elements of each line along `axis` (`None`:
/// all elements), NaN for a line of NaNs. Shapes as in [`quantile`].
pub fn nanquantile(x: &Array, qs: &[f64], axis: Option<isize>, keepdims: bool) -> Result<Array> {
    if let Some(q) = qs.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(Error::InvalidArgument(format!(
            "nanquantile: q must be in [0, 1], got {q}"
        )));
    }
    let x = promote_dtypes_inexact("nanquantile", &[x])?.remove(0);
    let rank = x.ndim();
    let (x, ax) = match axis {
        Some(a) => (x.clone(), normalize_axis(a, x.ndim(), "nanquantile")?),
        None => (ravel(&x)?, 0),
    };
    if x.try_shape()?[ax] == 0 {
        return Err(Error::InvalidArgument(
            "nanquantile: an empty axis has no quantiles".into(),
        ));
    }
    let d = x.dtype();
    // NaNs sort last, so the first `count` elements of a line are its
    // non-NaN ones.
    let sorted = sort(&x, Some(ax as isize))?;
    let count = sum(
        &lax::convert_element_type(&logical_not(&isnan(&x)?)?, d, false)?,
        ax,
        true,
    )?;
    let last = subtract(&count, &lit(1.0, d)?)?;
    let zero = lit(0.0, d)?;
    let mut outs = Vec::with_capacity(qs.len());
    for &q in qs {
        let pos = multiply(&lit(q, d)?, &last)?;
        let (lo, hi) = (floor(&pos)?, ceil(&pos)?);
        let w = subtract(&pos, &lo)?;
        let clampi = |i: &Array| -> Result<Array> {
            let i = maximum(&zero, &minimum(i, &last)?)?;
            lax::convert_element_type(&i, DType::I32, false)
        };
        let a = take_along_axis(&sorted, &clampi(&lo)?, Some(ax as isize))?;
        let b = take_along_axis(&sorted, &clampi(&hi)?, Some(ax as isize))?;
        let v = add(
            &multiply(&a, &subtract(&lit(1.0, d)?, &w)?)?,
            &multiply(&b, &w)?,
        )?;
        outs.push(match (keepdims, axis) {
            (true, Some(_)) => v,
            (true, None) => lax::reshape(&v, &vec![1; rank])?,
            (false, _) => lax::squeeze(&v, &[ax])?,
        });
    }
    match outs.len() {
        1 => Ok(outs.remove(0)),
        _ => stack(&outs, 0),
    }
}

/// `jnp.nanpercentile`: [`nanquantile`] with `q` in percent.
pub fn nanpercentile(x: &Array, ps: &[f64], axis: Option<isize>, keepdims: bool) -> Result<Array> {
    let qs: Vec<f64> = ps.iter().map(|p| p / 100.0).collect();
    nanquantile(x, &qs, axis, keepdims)
}

/// `jnp.nanmedian`: the 0.5 [`nanquantile`].
pub fn nanmedian(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    nanquantile(x, &[0.5], axis, keepdims)
}
