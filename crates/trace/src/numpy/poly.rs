//! `jnp`'s polynomial functions on 1-D coefficient arrays (highest power
//! first): `polyadd`, `polysub`, `polymul`, `polyder`, `polyint`, `poly`,
//! `polyfit` and `vander`, as JAX 0.10 computes them.

use super::promote::{promote_dtypes, promote_dtypes_inexact};

use super::*;

fn one_d(op: &str, p: &Array) -> Result<()> {
    if p.ndim() != 1 {
        return Err(Error::InvalidArgument(format!(
            "{op}: coefficients must be a 1-D array, got {}",
            fmt_aval(p.aval())
        )));
    }
    Ok(())
}

/// `p` with `n` zeros in front.
fn pad_front(p: &Array, n: usize) -> Result<Array> {
    if n == 0 {
        return Ok(p.clone());
    }
    concatenate(&[zeros(&[n], p.dtype())?, p.clone()], 0)
}

/// A 1-D constant of `dtype` from host values.
fn consts(values: &[f64], dtype: DType) -> Result<Array> {
    let host = jaxon_ir::HostArray::from_f64(dtype, &[values.len()], values)?;
    Ok(Array::from_host(host))
}

/// `jnp.polyadd(a1, a2)`: the sum of two polynomials (the shorter padded
/// in front).
pub fn polyadd(a1: &Array, a2: &Array) -> Result<Array> {
    one_d("polyadd", a1)?;
    one_d("polyadd", a2)?;
    let v = promote_dtypes("polyadd", &[a1, a2])?;
    let (n1, n2) = (v[0].size(), v[1].size());
    let len = n1.max(n2);
    add(&pad_front(&v[0], len - n1)?, &pad_front(&v[1], len - n2)?)
}

/// `jnp.polysub(a1, a2)`: `a1 - a2`.
pub fn polysub(a1: &Array, a2: &Array) -> Result<Array> {
    one_d("polysub", a1)?;
    one_d("polysub", a2)?;
    let v = promote_dtypes("polysub", &[a1, a2])?;
    polyadd(&v[0], &negative(&v[1])?)
}

/// `jnp.polymul(a1, a2)`: the product (a full convolution), inexact.
pub fn polymul(a1: &Array, a2: &Array) -> Result<Array> {
    one_d("polymul", a1)?;
    one_d("polymul", a2)?;
    let v = promote_dtypes_inexact("polymul", &[a1, a2])?;
    let nonempty = |a: &Array| -> Result<Array> {
        if a.size() == 0 {
            zeros(&[1], a.dtype())
        } else {
            Ok(a.clone())
        }
    };
    convolve(&nonempty(&v[0])?, &nonempty(&v[1])?, ConvolveMode::Full)
}

/// `jnp.polyder(p, m)`: the `m`-th derivative.
pub fn polyder(p: &Array, m: usize) -> Result<Array> {
    one_d("polyder", p)?;
    let p = promote_dtypes_inexact("polyder", &[p])?.remove(0);
    if m == 0 {
        return Ok(p);
    }
    let n = p.size();
    let keep = n.saturating_sub(m);
    // Coefficient k (power n-1-k) gains (n-1-k)! / (n-1-k-m)!.
    let coeff: Vec<f64> = (0..keep)
        .map(|k| {
            let v = (n - 1 - k) as f64;
            (0..m).map(|i| v - i as f64).product()
        })
        .collect();
    multiply(&slice_axis(&p, 0, 0, keep)?, &consts(&coeff, p.dtype())?)
}

/// `jnp.polyint(p, m, k)`: the `m`-th antiderivative with integration
/// constants `k` (one per integration, or one for all; default zeros).
pub fn polyint(p: &Array, m: usize, k: Option<&[f64]>) -> Result<Array> {
    one_d("polyint", p)?;
    let p = promote_dtypes_inexact("polyint", &[p])?.remove(0);
    if m == 0 {
        return Ok(p);
    }
    let ks: Vec<f64> = match k {
        None => vec![0.0; m],
        Some([k]) => vec![*k; m],
        Some(k) if k.len() == m => k.to_vec(),
        Some(k) => {
            return Err(Error::InvalidArgument(format!(
                "polyint: k must have 1 or m = {m} elements, got {}",
                k.len()
            )))
        }
    };
    let len = p.size() + m;
    // Entry j (from the end) divides by max(1, j) max(1, j-1) ...
    let mut coeff: Vec<f64> = (0..len)
        .map(|j| (0..m).map(|i| (j as f64 - i as f64).max(1.0)).product())
        .collect();
    coeff.reverse();
    let all = concatenate(&[p.clone(), consts(&ks, p.dtype())?], 0)?;
    divide(&all, &consts(&coeff, p.dtype())?)
}

/// `jnp.poly(seq_of_zeros)`: the monic polynomial with these (1-D) roots.
pub fn poly(seq_of_zeros: &Array) -> Result<Array> {
    if seq_of_zeros.ndim() != 1 {
        return Err(Error::Unsupported(format!(
            "poly: roots must be a 1-D array (the characteristic polynomial of a matrix \
             needs general eigenvalues), got {}",
            fmt_aval(seq_of_zeros.aval())
        )));
    }
    let z = promote_dtypes_inexact("poly", &[seq_of_zeros])?.remove(0);
    let dt = z.dtype();
    let mut a = ones(&[1], dt)?;
    for k in 0..z.size() {
        let root = slice_axis(&z, 0, k, k + 1)?;
        let factor = concatenate(&[ones(&[1], dt)?, negative(&root)?], 0)?;
        a = convolve(&a, &factor, ConvolveMode::Full)?;
    }
    Ok(a)
}

/// `jnp.vander(x, n, increasing)`: the columns `x^(n-1), ..., x^0`
/// (`x^0, ..., x^(n-1)` when `increasing`); `n` defaults to `len(x)`.
pub fn vander(x: &Array, n: Option<usize>, increasing: bool) -> Result<Array> {
    one_d("vander", x)?;
    let len = x.size();
    let n = n.unwrap_or(len);
    let mut iota = lax::iota(x.dtype(), n)?;
    if !increasing {
        iota = lax::rev(&iota, &[0])?;
    }
    let col = lax::reshape(x, &[len, 1])?;
    let row = lax::reshape(&iota, &[1, n])?;
    power(
        &broadcast_to(&col, &[len, n])?,
        &broadcast_to(&row, &[len, n])?,
    )
}

/// `jnp.polyfit(x, y, deg, w)`: the least-squares polynomial of degree
/// `deg` through the points (each column of a 2-D `y` fitted on its own),
/// with optional weights `w`; the columns of the Vandermonde matrix are
/// scaled to unit norm first, as NumPy and JAX do.
pub fn polyfit(x: &Array, y: &Array, deg: usize, w: Option<&Array>) -> Result<Array> {
    one_d("polyfit", x)?;
    let n = x.size();
    if n == 0 {
        return Err(Error::InvalidArgument(
            "polyfit: x must not be empty".into(),
        ));
    }
    if y.ndim() < 1 || y.ndim() > 2 || y.try_shape()?[0] != n {
        return Err(Error::ShapeMismatch {
            op: "polyfit (y must be 1-D or 2-D with len(x) rows)".into(),
            lhs: fmt_aval(x.aval()),
            rhs: fmt_aval(y.aval()),
        });
    }
    let v = promote_dtypes_inexact("polyfit", &[x, y])?;
    let (x, y) = (&v[0], &v[1]);
    let order = deg + 1;
    let mut lhs = vander(x, Some(order), false)?;
    let mut rhs = y.clone();
    if let Some(w) = w {
        if w.try_shape()? != [n] {
            return Err(Error::ShapeMismatch {
                op: "polyfit (w must be 1-D of len(x))".into(),
                lhs: fmt_aval(x.aval()),
                rhs: fmt_aval(w.aval()),
            });
        }
        let w = lax::convert_element_type(w, x.dtype(), false)?;
        let wc = lax::reshape(&w, &[n, 1])?;
        lhs = multiply(&lhs, &wc)?;
        rhs = if y.ndim() == 1 {
            multiply(&rhs, &w)?
        } else {
            multiply(&rhs, &wc)?
        };
    }
    let scale = sqrt(&sum(&multiply(&lhs, &lhs)?, 0usize, false)?)?;
    let lhs = divide(&lhs, &lax::reshape(&scale, &[1, order])?)?;
    let c = linalg::lstsq(&lhs, &rhs)?;
    if c.ndim() == 1 {
        divide(&c, &scale)
    } else {
        divide(&c, &lax::reshape(&scale, &[order, 1])?)
    }
}
