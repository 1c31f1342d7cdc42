//! Order statistics and moments across arrays: `median`, `quantile`,
//! `percentile` (NumPy's default "linear" method, NaN-propagating like
//! JAX), `average` (with weights), `cov` and `corrcoef`.

use super::promote::promote_dtypes_inexact;
use super::wrap::lit;
use super::*;

/// `jnp.quantile(x, q, axis, keepdims)` with the "linear" method: along
/// `axis` (`None`: over all elements), the `q`-th quantile for each scalar
/// `q` in `qs` (the quantile axis comes first when `qs` has more than one
/// value, as with NumPy's 1-D `q`). A NaN in a line makes its quantiles
/// NaN.
pub fn quantile(x: &Array, qs: &[f64], axis: Option<isize>, keepdims: bool) -> Result<Array> {
    if let Some(q) = qs.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(Error::InvalidArgument(format!(
            "quantile: q must be in [0, 1], got {q}"
        )));
    }
    let x = promote_dtypes_inexact("quantile", &[x])?.remove(0);
    let rank = x.ndim();
    let (x, ax) = match axis {
        Some(a) => (x.clone(), normalize_axis(a, x.ndim(), "quantile")?),
        None => (ravel(&x)?, 0),
    };
    let in_shape = x.try_shape()?;
    let n = in_shape[ax];
    if n == 0 {
        return Err(Error::InvalidArgument(
            "quantile: an empty axis has no quantiles".into(),
        ));
    }
    let d = x.dtype();
    let sorted = sort(&x, Some(ax as isize))?;
    let has_nan = any(&isnan(&x)?, ax as isize, true)?;
    let pick = |i: usize| slice_axis(&sorted, ax, i, i + 1);
    let mut outs = Vec::with_capacity(qs.len());
    for &q in qs {
        let pos = q * (n - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let w = lit(pos - lo as f64, d)?;
        let (a, b) = (pick(lo)?, pick(hi)?);
        let v = add(
            &multiply(&a, &subtract(&lit(1.0, d)?, &w)?)?,
            &multiply(&b, &w)?,
        )?;
        let v = where_(&has_nan, &lit(f64::NAN, d)?, &v)?;
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

/// `jnp.percentile`: [`quantile`] with `q` in percent.
pub fn percentile(x: &Array, ps: &[f64], axis: Option<isize>, keepdims: bool) -> Result<Array> {
    let qs: Vec<f64> = ps.iter().map(|p| p / 100.0).collect();
    quantile(x, &qs, axis, keepdims)
}

/// `jnp.median`: the 0.5 [`quantile`].
pub fn median(x: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    quantile(x, &[0.5], axis, keepdims)
}

/// `jnp.average(x, axis, weights)`: the mean, or `Σ w·x / Σ w` along
/// `axis` (`None`: all elements) with `weights` of `x`'s shape or 1-D of
/// the axis' length.
pub fn average(x: &Array, axis: Option<isize>, weights: Option<&Array>) -> Result<Array> {
    let Some(w) = weights else {
        return match axis {
            Some(a) => mean(x, a, false),
            None => mean(x, All, false),
        };
    };
    let a = promote_dtypes_inexact("average", &[x, w])?;
    let (x, mut w) = (a[0].clone(), a[1].clone());
    let xs = x.try_shape()?;
    if w.try_shape()? != xs {
        let ax = match axis {
            Some(ax) if w.ndim() == 1 => normalize_axis(ax, xs.len(), "average")?,
            _ => {
                return Err(Error::ShapeMismatch {
                    op: "average (weights vs x)".into(),
                    lhs: fmt_aval(w.aval()),
                    rhs: fmt_aval(x.aval()),
                })
            }
        };
        if w.try_shape()?[0] != xs[ax] {
            return Err(Error::ShapeMismatch {
                op: format!("average (1-D weights vs axis {ax})"),
                lhs: fmt_aval(w.aval()),
                rhs: fmt_aval(x.aval()),
            });
        }
        w = lax::broadcast_in_dim(&w, &xs, &[ax])?;
    }
    let wx = multiply(&x, &w)?;
    match axis {
        Some(ax) => divide(&sum(&wx, ax, false)?, &sum(&w, ax, false)?),
        None => divide(&sum(&wx, All, false)?, &sum(&w, All, false)?),
    }
}

/// `jnp.cov(m, rowvar, ddof)`: the covariance of the variables in the rows
/// of `m` (its columns when `rowvar` is false); a 1-D `m` is one variable.
pub fn cov(m: &Array, rowvar: bool, ddof: usize) -> Result<Array> {
    let m = promote_dtypes_inexact("cov", &[m])?.remove(0);
    let x = match m.ndim() {
        0 | 1 => reshape(&m, &[1, -1])?,
        2 if rowvar => m.clone(),
        2 => transpose(&m, None)?,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "cov: expected a 1-D or 2-D array, got {}",
                fmt_aval(m.aval())
            )))
        }
    };
    let n = x.try_shape()?[1];
    let d = x.dtype();
    let centered = subtract(&x, &mean(&x, 1isize, true)?)?;
    let prod = matmul(&centered, &transpose(&conj(&centered)?, None)?)?;
    let c = divide(&prod, &lit(n as f64 - ddof as f64, d)?)?;
    if m.ndim() < 2 {
        reshape(&c, &[])
    } else {
        Ok(c)
    }
}

/// `jnp.corrcoef(x, rowvar)`: the covariance normalised by the standard
/// deviations, clipped to `[-1, 1]`.
pub fn corrcoef(x: &Array, rowvar: bool) -> Result<Array> {
    let c = cov(x, rowvar, 1)?;
    if c.ndim() == 0 {
        return divide(&c, &c);
    }
    let d = diagonal(&c, 0, 0, 1)?;
    let s = sqrt(&d)?;
    let n = s.try_shape()?[0];
    let r = divide(
        &divide(&c, &reshape(&s, &[n as isize, 1])?)?,
        &reshape(&s, &[1, n as isize])?,
    )?;
    let dt = r.dtype();
    clip(&r, Some(&lit(-1.0, dt)?), Some(&lit(1.0, dt)?))
}
