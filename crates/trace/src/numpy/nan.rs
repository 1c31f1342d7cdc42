//! Non-finite values: `isnan`, `isinf`, `isfinite`, `isclose`,
//! `allclose`, `nan_to_num`, and the reductions that skip NaNs (`nansum`,
//! `nanprod`, `nanmean`, `nanmax`, `nanmin`), with JAX's semantics: an
//! all-NaN slice gives NaN for `nanmax`/`nanmin`/`nanmean`, `0`/`1` for
//! `nansum`/`nanprod`; integer inputs have no NaNs.

use super::promote::promote_args_inexact;
use super::wrap::lit;
use super::{
    all, equal, logical_and, logical_not, logical_or, max, min, prod, sum, where_, IntoAxes,
};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use jaxon_ir::DType;

/// `jnp.isnan`: `x != x` (all false for integers and bools).
pub fn isnan(x: &Array) -> Result<Array> {
    if x.dtype().is_float() {
        lax::ne(x, x)
    } else {
        super::full_like(x, &Array::scalar(false))
            .and_then(|a| lax::convert_element_type(&a, DType::Bool, false))
    }
}

/// `jnp.isinf`: `|x| == inf` (all false for integers and bools).
pub fn isinf(x: &Array) -> Result<Array> {
    if x.dtype().is_float() {
        lax::eq(&lax::abs(x)?, &lit(f64::INFINITY, x.dtype())?)
    } else {
        isnan(x)
    }
}

/// `jnp.isfinite` (all true for integers and bools).
pub fn isfinite(x: &Array) -> Result<Array> {
    if x.dtype().is_float() {
        lax::is_finite(x)
    } else {
        logical_not(&isnan(x)?)
    }
}

/// `jnp.isclose(a, b, rtol, atol, equal_nan)`: `|a - b| <= atol + rtol·|b|`
/// elementwise; infinities are close only to themselves, NaN to nothing
/// (or to NaN when `equal_nan`). JAX's defaults: `rtol = 1e-5`,
/// `atol = 1e-8`.
pub fn isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let ab = promote_args_inexact("isclose", &[a, b])?;
    let (a, b) = (&ab[0], &ab[1]);
    let dt = a.dtype();
    let tol = lax::add(&lit(atol, dt)?, &lax::mul(&lit(rtol, dt)?, &lax::abs(b)?)?)?;
    let mut out = lax::le(&lax::abs(&lax::sub(a, b)?)?, &tol)?;
    let (a_inf, b_inf) = (isinf(a)?, isinf(b)?);
    out = logical_and(&out, &logical_not(&logical_or(&a_inf, &b_inf)?)?)?;
    let same_inf = logical_and(&logical_and(&a_inf, &b_inf)?, &equal(a, b)?)?;
    out = logical_or(&out, &same_inf)?;
    let (a_nan, b_nan) = (isnan(a)?, isnan(b)?);
    out = logical_and(&out, &logical_not(&logical_or(&a_nan, &b_nan)?)?)?;
    if equal_nan {
        out = logical_or(&out, &logical_and(&a_nan, &b_nan)?)?;
    }
    Ok(out)
}

/// `jnp.allclose`: whether every element [`isclose`].
pub fn allclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    all(&isclose(a, b, rtol, atol, equal_nan)?, super::All, false)
}

/// `jnp.nan_to_num(x, nan, posinf, neginf)`: NaN becomes `nan`, `±inf`
/// become `posinf`/`neginf` (by default the largest finite values of the
/// dtype). Integers are returned unchanged.
pub fn nan_to_num(x: &Array, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Array> {
    let dt = x.dtype();
    if !dt.is_float() {
        return Ok(x.clone());
    }
    let big = match dt {
        DType::F16 => half::f16::MAX.to_f64(),
        DType::BF16 => half::bf16::MAX.to_f64(),
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    let inf = lit(f64::INFINITY, dt)?;
    let out = where_(&isnan(x)?, &lit(nan, dt)?, x)?;
    let out = where_(
        &lax::eq(&out, &inf)?,
        &lit(posinf.unwrap_or(big), dt)?,
        &out,
    )?;
    let out = where_(
        &lax::eq(&out, &lax::neg(&inf)?)?,
        &lit(neginf.unwrap_or(-big), dt)?,
        &out,
    )?;
    Ok(out)
}

/// `x` with its NaNs replaced by `fill` (integers unchanged).
pub(super) fn fill_nan(x: &Array, fill: f64) -> Result<Array> {
    if x.dtype().is_float() {
        where_(&isnan(x)?, &lit(fill, x.dtype())?, x)
    } else {
        Ok(x.clone())
    }
}

/// `jnp.nansum`: the sum, NaNs counted as zero.
pub fn nansum(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    sum(&fill_nan(x, 0.0)?, axes, keepdims)
}

/// `jnp.nanprod`: the product, NaNs counted as one.
pub fn nanprod(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    prod(&fill_nan(x, 1.0)?, axes, keepdims)
}

/// `jnp.nanmean`: the mean of the non-NaN elements (NaN where there are
/// none).
pub fn nanmean(x: &Array, axes: impl IntoAxes + Clone, keepdims: bool) -> Result<Array> {
    let x = promote_args_inexact("nanmean", &[x])?.remove(0);
    let dt = x.dtype();
    let count = lax::convert_element_type(&logical_not(&isnan(&x)?)?, dt, false)?;
    let n = sum(&count, axes.clone(), keepdims)?;
    lax::div(&nansum(&x, axes, keepdims)?, &n)
}

/// `jnp.nanmax`: the maximum of the non-NaN elements (NaN where there are
/// none).
pub fn nanmax(x: &Array, axes: impl IntoAxes + Clone, keepdims: bool) -> Result<Array> {
    nan_extremum(x, axes, keepdims, true)
}

/// `jnp.nanmin`: the minimum of the non-NaN elements (NaN where there are
/// none).
pub fn nanmin(x: &Array, axes: impl IntoAxes + Clone, keepdims: bool) -> Result<Array> {
    nan_extremum(x, axes, keepdims, false)
}

fn nan_extremum(
    x: &Array,
    axes: impl IntoAxes + Clone,
    keepdims: bool,
    is_max: bool,
) -> Result<Array> {
    if !x.dtype().is_float() {
        return if is_max {
            max(x, axes, keepdims)
        } else {
            min(x, axes, keepdims)
        };
    }
    let dt = x.dtype();
    let nan = isnan(x)?;
    let fill = if is_max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let filled = where_(&nan, &lit(fill, dt)?, x)?;
    let out = if is_max {
        max(&filled, axes.clone(), keepdims)?
    } else {
        min(&filled, axes.clone(), keepdims)?
    };
    let none = all(&nan, axes, keepdims)?;
    where_(&none, &lit(f64::NAN, dt)?, &out)
}
