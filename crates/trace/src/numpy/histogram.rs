//! `jnp.interp` (with `left`/`right`/`period`), `jnp.histogram` and
//! `jnp.histogram_bin_edges` (bins as a count or as edges, `range`,
//! `weights`, `density`), as JAX 0.10 computes them.

use super::promote::promote_dtypes_inexact;
use super::wrap::lit;
use super::*;

/// `a[i]` for an `i32` index array `i` into the 1-D `a`.
fn at(a: &Array, i: &Array) -> Result<Array> {
    take(a, i, Some(0))
}

/// `a[k]` of the 1-D `a` as a scalar.
fn elem(a: &Array, k: usize) -> Result<Array> {
    lax::reshape(&slice_axis(a, 0, k, k + 1)?, &[])
}

/// `jnp.interp(x, xp, fp, left, right, period)`: the piecewise-linear
/// interpolant through `(xp, fp)` (`xp` increasing) at `x`; outside
/// `xp` it is `left`/`right` (default the end values of `fp`). With
/// `period` the points wrap around (and `left`/`right` are unused).
pub fn interp(
    x: &Array,
    xp: &Array,
    fp: &Array,
    left: Option<f64>,
    right: Option<f64>,
    period: Option<f64>,
) -> Result<Array> {
    if xp.ndim() != 1 || xp.try_shape()? != fp.try_shape()? {
        return Err(Error::InvalidArgument(format!(
            "interp: xp and fp must be one-dimensional arrays of equal size, got {} and {}",
            fmt_aval(xp.aval()),
            fmt_aval(fp.aval())
        )));
    }
    if xp.size() == 0 {
        return Err(Error::InvalidArgument(
            "interp: xp and fp must not be empty".into(),
        ));
    }
    if x.dtype().is_complex() {
        return Err(Error::InvalidArgument(
            "interp: complex x values are not supported".into(),
        ));
    }
    let v = promote_dtypes_inexact("interp", &[x, xp])?;
    let (mut x, mut xp) = (v[0].clone(), v[1].clone());
    let mut fp = promote_dtypes_inexact("interp", &[fp])?.remove(0);
    if let Some(p) = period {
        if p == 0.0 {
            return Err(Error::InvalidArgument(
                "interp: period must be nonzero".into(),
            ));
        }
        let p = Array::weak(p.abs());
        x = remainder(&x, &p)?;
        xp = remainder(&xp, &p)?;
        let order = argsort(&xp, Some(0))?;
        xp = at(&xp, &order)?;
        fp = at(&fp, &order)?;
        let n = xp.try_shape()?[0];
        xp = concatenate(
            &[
                subtract(&slice_axis(&xp, 0, n - 1, n)?, &p)?,
                xp.clone(),
                add(&slice_axis(&xp, 0, 0, 1)?, &p)?,
            ],
            0,
        )?;
        fp = concatenate(
            &[
                slice_axis(&fp, 0, n - 1, n)?,
                fp.clone(),
                slice_axis(&fp, 0, 0, 1)?,
            ],
            0,
        )?;
    }
    let n = xp.try_shape()?[0];
    if n == 1 {
        // One point: the constant, with the sides outside it.
        let f0 = broadcast_to(&elem(&fp, 0)?, &x.try_shape()?)?;
        let x0 = elem(&xp, 0)?;
        let l = left.map_or_else(|| elem(&fp, 0), |l| Ok(Array::weak(l)))?;
        let r = right.map_or_else(|| elem(&fp, 0), |r| Ok(Array::weak(r)))?;
        let f = where_(&less(&x, &x0)?, &l, &f0)?;
        return where_(&greater(&x, &x0)?, &r, &f);
    }
    let i = searchsorted(&xp, &x, "right")?;
    let i = clip(
        &i,
        Some(&lit(1.0, DType::I32)?),
        Some(&lit((n - 1) as f64, DType::I32)?),
    )?;
    let im1 = lax::sub(&i, &lit(1.0, DType::I32)?)?;
    let (fp_lo, xp_lo) = (at(&fp, &im1)?, at(&xp, &im1)?);
    let df = subtract(&at(&fp, &i)?, &fp_lo)?;
    let dx = subtract(&at(&xp, &i)?, &xp_lo)?;
    let delta = subtract(&x, &xp_lo)?;
    // numpy.spacing(finfo(dtype).eps): the gap above machine epsilon.
    let epsilon = match xp.dtype() {
        DType::F64 => 2f64.powi(-104),
        DType::F32 => 2f64.powi(-46),
        DType::F16 => 2f64.powi(-20),
        DType::BF16 => 2f64.powi(-14),
        _ => 0.0,
    };
    let dx0 = less_equal(&abs(&dx)?, &lit(epsilon, dx.dtype())?)?;
    let safe_dx = where_(&dx0, &Array::weak(1.0), &dx)?;
    let step = add(&fp_lo, &multiply(&divide(&delta, &safe_dx)?, &df)?)?;
    let mut f = where_(&dx0, &fp_lo, &step)?;
    if period.is_none() {
        let l = left.map_or_else(|| elem(&fp, 0), |l| Ok(Array::weak(l)))?;
        f = where_(&less(&x, &elem(&xp, 0)?)?, &l, &f)?;
        let r = right.map_or_else(|| elem(&fp, n - 1), |r| Ok(Array::weak(r)))?;
        f = where_(&greater(&x, &elem(&xp, n - 1)?)?, &r, &f)?;
    }
    Ok(f)
}

/// The `bins` argument of [`histogram`]: a number of equal-width bins, or
/// the (increasing) bin edges.
#[derive(Clone, Debug)]
pub enum Bins {
    /// This many equal bins over `range` (default the data's min and max).
    Count(usize),
    /// The bin edges, 1-D.
    Edges(Array),
}

/// `jnp.histogram_bin_edges(a, bins, range)`: the edges [`histogram`]
/// uses, in `a`'s inexact dtype. A zero-width range is widened by 0.5 on
/// each side, as NumPy does.
pub fn histogram_bin_edges(a: &Array, bins: &Bins, range: Option<(f64, f64)>) -> Result<Array> {
    let a = ravel(a)?;
    let dtype = promote::float_dtype_of(a.dtype());
    let (lo, hi, count) = match bins {
        Bins::Edges(e) => {
            if e.ndim() != 1 {
                return Err(Error::InvalidArgument(format!(
                    "histogram: bin edges must be 1-D, got {}",
                    fmt_aval(e.aval())
                )));
            }
            return lax::convert_element_type(e, dtype, false);
        }
        Bins::Count(0) => {
            return Err(Error::InvalidArgument(
                "histogram: the number of bins must be positive, got 0".into(),
            ))
        }
        Bins::Count(b) => match range {
            Some((lo, hi)) if lo > hi || !lo.is_finite() || !hi.is_finite() => {
                return Err(Error::InvalidArgument(format!(
                    "histogram: range must be finite with min <= max, got ({lo}, {hi})"
                )))
            }
            Some((lo, hi)) => (lit(lo, dtype)?, lit(hi, dtype)?, *b),
            None => {
                if a.size() == 0 {
                    return Err(Error::InvalidArgument(
                        "histogram: an empty array needs an explicit range".into(),
                    ));
                }
                let a = lax::convert_element_type(&a, dtype, false)?;
                (min(&a, All, false)?, max(&a, All, false)?, *b)
            }
        },
    };
    let flat = equal(&subtract(&hi, &lo)?, &lit(0.0, dtype)?)?;
    let half = lit(0.5, dtype)?;
    let lo = where_(&flat, &subtract(&lo, &half)?, &lo)?;
    let hi = where_(&flat, &add(&hi, &half)?, &hi)?;
    linspace(&lo, &hi, count + 1, true, Some(dtype))
}

/// `jnp.histogram(a, bins, range, weights, density)`: the (weighted)
/// number of elements of `a` in each bin (the last bin closed on the
/// right), and the bin edges. With `density` the counts are normalised so
/// that they integrate to 1 over the range.
pub fn histogram(
    a: &Array,
    bins: &Bins,
    range: Option<(f64, f64)>,
    weights: Option<&Array>,
    density: bool,
) -> Result<(Array, Array)> {
    let (a, w) = match weights {
        None => {
            let a = promote_dtypes_inexact("histogram", &[a])?.remove(0);
            let w = ones_like(&a)?;
            (a, w)
        }
        Some(w) => {
            if w.try_shape()? != a.try_shape()? {
                return Err(Error::ShapeMismatch {
                    op: "histogram (weights should have the same shape as a)".into(),
                    lhs: fmt_aval(a.aval()),
                    rhs: fmt_aval(w.aval()),
                });
            }
            let v = promote_dtypes_inexact("histogram", &[a, w])?;
            (v[0].clone(), v[1].clone())
        }
    };
    let (a, w) = (ravel(&a)?, ravel(&w)?);
    let edges = histogram_bin_edges(&a, bins, range)?;
    let ne = edges.try_shape()?[0];
    if ne == 0 {
        return Err(Error::InvalidArgument(
            "histogram: bin edges must not be empty".into(),
        ));
    }
    let idx = searchsorted(&edges, &a, "right")?;
    let on_last = equal(&a, &elem(&edges, ne - 1)?)?;
    let idx = where_(&on_last, &lit((ne - 1) as f64, DType::I32)?, &idx)?;
    let counts = bincount(&idx, Some(&w), ne)?;
    let mut counts = slice_axis(&counts, 0, 1, ne)?;
    if density {
        let widths = diff(&edges, 1, 0)?;
        counts = divide(&divide(&counts, &widths)?, &sum(&counts, All, false)?)?;
    }
    Ok((counts, edges))
}
