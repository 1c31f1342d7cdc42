//! Products and differences: `outer`, `kron`, `tensordot`, `polyval`,
//! `diff` and `meshgrid`, built from broadcasting, `dot_general` and
//! slices as JAX builds them.

use super::promote::promote_dtypes;
use super::{broadcast_to, multiply, normalize_axis, subtract};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::DotDimensionNumbers;
use jaxon_ir::shape::fmt_aval;

/// `jnp.outer(a, b)`: `a` and `b` flattened, `out[i, j] = a[i] · b[j]`.
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    let (n, m) = (a.size(), b.size());
    let a = lax::reshape(a, &[n, 1])?;
    let b = lax::reshape(b, &[1, m])?;
    multiply(&a, &b)
}

/// `jnp.kron(a, b)`: the Kronecker product; the lower-rank operand gets
/// leading size-1 dimensions.
pub fn kron(a: &Array, b: &Array) -> Result<Array> {
    let r = a.ndim().max(b.ndim());
    let lead = |x: &Array| -> Result<Vec<usize>> {
        let mut s = vec![1; r - x.ndim()];
        s.extend(x.try_shape()?);
        Ok(s)
    };
    let (sa, sb) = (lead(a)?, lead(b)?);
    // a[i0, 1, i1, 1, ..] * b[1, j0, 1, j1, ..], then merge each pair.
    let interleave = |s: &[usize], first: bool| -> Vec<usize> {
        s.iter()
            .flat_map(|&n| if first { [n, 1] } else { [1, n] })
            .collect()
    };
    let a2 = lax::reshape(a, &interleave(&sa, true))?;
    let b2 = lax::reshape(b, &interleave(&sb, false))?;
    let p = multiply(&a2, &b2)?;
    let out: Vec<usize> = sa.iter().zip(&sb).map(|(x, y)| x * y).collect();
    lax::reshape(&p, &out)
}

/// `jnp.tensordot(a, b, axes)`: contracts `axes.0` of `a` with `axes.1` of
/// `b` (pairwise, equal sizes); the result has `a`'s free dimensions then
/// `b`'s.
pub fn tensordot(a: &Array, b: &Array, axes: (&[isize], &[isize])) -> Result<Array> {
    let (ca, cb) = axes;
    if ca.len() != cb.len() {
        return Err(Error::InvalidArgument(format!(
            "tensordot: {} axes of a and {} of b",
            ca.len(),
            cb.len()
        )));
    }
    let ca = ca
        .iter()
        .map(|&x| normalize_axis(x, a.ndim(), "tensordot"))
        .collect::<Result<Vec<_>>>()?;
    let cb = cb
        .iter()
        .map(|&x| normalize_axis(x, b.ndim(), "tensordot"))
        .collect::<Result<Vec<_>>>()?;
    let (sa, sb) = (a.try_shape()?, b.try_shape()?);
    if ca.iter().zip(&cb).any(|(&i, &j)| sa[i] != sb[j]) {
        return Err(Error::ShapeMismatch {
            op: format!("tensordot over axes {ca:?} and {cb:?}"),
            lhs: fmt_aval(a.aval()),
            rhs: fmt_aval(b.aval()),
        });
    }
    let ab = promote_dtypes("tensordot", &[a, b])?;
    lax::dot_general(
        &ab[0],
        &ab[1],
        DotDimensionNumbers {
            lhs_contracting: ca,
            rhs_contracting: cb,
            lhs_batch: Vec::new(),
            rhs_batch: Vec::new(),
        },
        None,
    )
}

/// `jnp.polyval(p, x)`: `p[0]·x^(n-1) + … + p[n-1]` by Horner's rule, for
/// 1-D coefficients `p`.
pub fn polyval(p: &Array, x: &Array) -> Result<Array> {
    let [n] = p.try_shape()?[..] else {
        return Err(Error::InvalidArgument(format!(
            "polyval: coefficients must be 1-D, got {}",
            fmt_aval(p.aval())
        )));
    };
    let ab = promote_dtypes("polyval", &[p, x])?;
    let (p, x) = (&ab[0], &ab[1]);
    let mut y = super::zeros_like(x)?;
    for k in 0..n {
        let c = lax::reshape(&lax::slice(p, &[k], &[k + 1], None)?, &[])?;
        y = super::add(&multiply(&y, x)?, &c)?;
    }
    Ok(y)
}

/// `jnp.diff(a, n, axis)`: the `n`-th forward difference along `axis`
/// (`a[1:] - a[:-1]`, `n` times).
pub fn diff(a: &Array, n: usize, axis: isize) -> Result<Array> {
    let ax = normalize_axis(axis, a.ndim(), "diff")?;
    let mut x = a.clone();
    for _ in 0..n {
        let shape = x.try_shape()?;
        if shape[ax] == 0 {
            break;
        }
        let start = vec![0; shape.len()];
        let mut hi = shape.clone();
        let mut lo1 = start.clone();
        lo1[ax] = 1;
        let upper = lax::slice(&x, &lo1, &shape, None)?;
        hi[ax] -= 1;
        let lower = lax::slice(&x, &start, &hi, None)?;
        x = if x.dtype() == jaxon_ir::DType::Bool {
            lax::ne(&upper, &lower)?
        } else {
            subtract(&upper, &lower)?
        };
    }
    Ok(x)
}

/// `jnp.meshgrid(*xs, indexing)`: coordinate arrays of the grid of 1-D
/// `xs`; `indexing = "xy"` (JAX's default) swaps the first two output
/// dimensions, `"ij"` keeps the inputs' order.
pub fn meshgrid(xs: &[Array], indexing: &str) -> Result<Vec<Array>> {
    let xy = match indexing {
        "xy" => true,
        "ij" => false,
        other => {
            return Err(Error::InvalidArgument(format!(
                "meshgrid: indexing must be \"xy\" or \"ij\", got {other:?}"
            )))
        }
    };
    let mut shape: Vec<usize> = xs.iter().map(Array::size).collect();
    if xy && shape.len() >= 2 {
        shape.swap(0, 1);
    }
    xs.iter()
        .enumerate()
        .map(|(k, x)| {
            let mut dim = k;
            if xy && xs.len() >= 2 && k < 2 {
                dim = 1 - k;
            }
            let mut s = vec![1; xs.len()];
            s[dim] = x.size();
            broadcast_to(&lax::reshape(x, &s)?, &shape)
        })
        .collect()
}

/// `jnp.inner(a, b)`: the sum product over the last axes (a product for
/// scalars).
pub fn inner(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return multiply(a, b);
    }
    tensordot(a, b, (&[-1], &[-1]))
}

/// `jnp.vdot(a, b)`: `Σ conj(a)·b` over the flattened arrays.
pub fn vdot(a: &Array, b: &Array) -> Result<Array> {
    let (a, b) = (super::ravel(&super::conj(a)?)?, super::ravel(b)?);
    tensordot(&a, &b, (&[0], &[0]))
}

/// `jnp.cross(a, b)`: the cross product of 3-vectors along the last axes
/// (broadcasting the rest), or the `z` component of 2-vectors' product.
pub fn cross(a: &Array, b: &Array) -> Result<Array> {
    let (sa, sb) = (a.try_shape()?, b.try_shape()?);
    let comp = |x: &Array, i: usize| -> Result<Array> {
        let last = x.ndim() - 1;
        lax::squeeze(&super::slice_axis(x, last, i, i + 1)?, &[last])
    };
    match (sa.last(), sb.last()) {
        (Some(3), Some(3)) => {
            let (a0, a1, a2) = (comp(a, 0)?, comp(a, 1)?, comp(a, 2)?);
            let (b0, b1, b2) = (comp(b, 0)?, comp(b, 1)?, comp(b, 2)?);
            let c0 = subtract(&multiply(&a1, &b2)?, &multiply(&a2, &b1)?)?;
            let c1 = subtract(&multiply(&a2, &b0)?, &multiply(&a0, &b2)?)?;
            let c2 = subtract(&multiply(&a0, &b1)?, &multiply(&a1, &b0)?)?;
            super::stack(&[c0, c1, c2], -1)
        }
        (Some(2), Some(2)) => {
            let (a0, a1, b0, b1) = (comp(a, 0)?, comp(a, 1)?, comp(b, 0)?, comp(b, 1)?);
            subtract(&multiply(&a0, &b1)?, &multiply(&a1, &b0)?)
        }
        _ => Err(Error::ShapeMismatch {
            op: "cross (the last axes must both be 3, or both 2)".into(),
            lhs: fmt_aval(a.aval()),
            rhs: fmt_aval(b.aval()),
        }),
    }
}

/// `jnp.vecdot(a, b)`: `Σ conj(a)·b` over the last axes, broadcasting the
/// rest.
pub fn vecdot(a: &Array, b: &Array) -> Result<Array> {
    let p = multiply(&super::conj(a)?, b)?;
    super::sum(&p, -1isize, false)
}

/// `jnp.matvec(m, v)`: `m @ v` over the last axes, broadcasting the rest.
pub fn matvec(m: &Array, v: &Array) -> Result<Array> {
    let v = super::expand_dims(v, &[-2])?;
    super::sum(&multiply(m, &v)?, -1isize, false)
}

/// `jnp.vecmat(v, m)`: `conj(v) @ m` over the last axes of `v` and the
/// second-to-last of `m`, broadcasting the rest.
pub fn vecmat(v: &Array, m: &Array) -> Result<Array> {
    let v = super::expand_dims(&super::conj(v)?, &[-1])?;
    super::sum(&multiply(&v, m)?, -2isize, false)
}

/// How [`convolve`] and [`correlate`] pad: NumPy's `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvolveMode {
    /// Every overlap (length `n + m − 1`).
    Full,
    /// Centred, the length of the longer input.
    Same,
    /// Only complete overlaps (length `|n − m| + 1`).
    Valid,
}

fn conv1d(x: &Array, y: &Array, mode: ConvolveMode, correlate: bool) -> Result<Array> {
    let op = if correlate { "correlate" } else { "convolve" };
    if x.ndim() != 1 || y.ndim() != 1 {
        return Err(Error::ShapeMismatch {
            op: format!("{op} (both inputs must be 1-D)"),
            lhs: fmt_aval(x.aval()),
            rhs: fmt_aval(y.aval()),
        });
    }
    let a = super::promote::promote_dtypes_inexact(op, &[x, y])?;
    let (mut x, mut y) = (a[0].clone(), a[1].clone());
    let (n, m) = (x.try_shape()?[0], y.try_shape()?[0]);
    if n == 0 || m == 0 {
        return Err(Error::InvalidArgument(format!(
            "{op}: inputs cannot be empty, got lengths {n} and {m}"
        )));
    }
    let mut reverse = false;
    if correlate {
        y = super::conj(&y)?;
        if n < m {
            std::mem::swap(&mut x, &mut y);
            reverse = true;
        }
    } else {
        if n < m {
            std::mem::swap(&mut x, &mut y);
        }
        y = lax::rev(&y, &[0])?;
    }
    let k = y.try_shape()?[0] as i64;
    let pad = match mode {
        ConvolveMode::Valid => (0, 0),
        ConvolveMode::Same => (k / 2, k - k / 2 - 1),
        ConvolveMode::Full => (k - 1, k - 1),
    };
    let out = lax::conv_general_dilated(
        &super::reshape(&x, &[1, 1, -1])?,
        &super::reshape(&y, &[1, 1, -1])?,
        &[1],
        lax::Padding::Explicit(vec![pad]),
        lax::ConvOptions::default(),
    )?;
    let out = super::reshape(&out, &[-1])?;
    if reverse {
        lax::rev(&out, &[0])
    } else {
        Ok(out)
    }
}

/// `jnp.convolve(a, v, mode)` of 1-D arrays.
pub fn convolve(a: &Array, v: &Array, mode: ConvolveMode) -> Result<Array> {
    conv1d(a, v, mode, false)
}

/// `jnp.correlate(a, v, mode)` of 1-D arrays: `c[k] = Σ a[n + k]·conj(v[n])`.
pub fn correlate(a: &Array, v: &Array, mode: ConvolveMode) -> Result<Array> {
    conv1d(a, v, mode, true)
}

/// `jnp.trapezoid(y, dx, axis)`: the trapezoidal rule with spacing `dx`.
pub fn trapezoid(y: &Array, dx: f64, axis: isize) -> Result<Array> {
    let y = super::promote::promote_dtypes_inexact("trapezoid", &[y])?.remove(0);
    let shape = y.try_shape()?;
    let ax = normalize_axis(axis, shape.len(), "trapezoid")?;
    let n = shape[ax];
    if n < 2 {
        return super::sum(
            &multiply(&y, &super::wrap::lit(0.0, y.dtype())?)?,
            ax as isize,
            false,
        );
    }
    let pairs = super::add(
        &super::slice_axis(&y, ax, 1, n)?,
        &super::slice_axis(&y, ax, 0, n - 1)?,
    )?;
    let half = super::wrap::lit(dx / 2.0, y.dtype())?;
    super::sum(&multiply(&pairs, &half)?, ax as isize, false)
}

/// `jnp.ediff1d(x)`: the differences of consecutive flattened elements.
pub fn ediff1d(x: &Array) -> Result<Array> {
    let flat = super::ravel(x)?;
    let n = flat.try_shape()?[0];
    if n < 2 {
        return lax::slice(&flat, &[0], &[0], None);
    }
    subtract(
        &lax::slice(&flat, &[1], &[n], None)?,
        &lax::slice(&flat, &[0], &[n - 1], None)?,
    )
}
