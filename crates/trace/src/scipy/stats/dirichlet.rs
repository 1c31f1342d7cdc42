//! `jax.scipy.stats.dirichlet`: the Dirichlet distribution on the simplex
//! (`logpdf`, `pdf`). The components are on `x`'s first axis (any further
//! axes are a batch); `x` may leave out the last component, which is then
//! `1 - sum(x)`.

use super::{k, neg_inf};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy::{self as jnp, promote::promote_dtypes_inexact};
use crate::scipy::special::{gammaln, xlogy};
use jaxon_ir::shape::fmt_aval;

/// `dirichlet.logpdf(x, alpha)`: `sum((alpha - 1) log x) -
/// (sum(gammaln(alpha)) - gammaln(sum(alpha)))`, `-inf` off the simplex
/// (a non-positive component, or components not summing to 1 within
/// `1e-6`). `alpha` must be 1-D and `x.shape[0]` be `alpha.len()` or one
/// less, else an error naming both shapes.
pub fn logpdf(x: &Array, alpha: &Array) -> Result<Array> {
    let v = promote_dtypes_inexact("dirichlet.logpdf", &[x, alpha])?;
    let (x, alpha) = (&v[0], &v[1]);
    let ash = alpha.try_shape()?;
    let xsh = x.try_shape()?;
    let [kk] = ash[..] else {
        return Err(Error::InvalidArgument(format!(
            "dirichlet.logpdf: `alpha` must be one-dimensional; got alpha {}",
            fmt_aval(alpha.aval())
        )));
    };
    let Some(&kx) = xsh.first().filter(|&&n| n == kk || n + 1 == kk) else {
        return Err(Error::ShapeMismatch {
            op: "dirichlet.logpdf: `x` must have as many entries on its first axis as `alpha`, \
                 or one fewer"
                .into(),
            lhs: fmt_aval(x.aval()),
            rhs: fmt_aval(alpha.aval()),
        });
    };
    let one = k(x, 1.0)?;
    let x = if kx != kk {
        let last = lax::sub(&one, &jnp::sum(x, 0isize, true)?)?;
        jnp::concatenate(&[x.clone(), last], 0)?
    } else {
        x.clone()
    };
    let normalize = lax::sub(
        &jnp::sum(&gammaln(alpha)?, jnp::All, false)?,
        &gammaln(&jnp::sum(alpha, jnp::All, false)?)?,
    )?;
    let alpha = if x.ndim() > 1 {
        let mut shape = vec![kk];
        shape.extend(std::iter::repeat_n(1, x.ndim() - 1));
        lax::broadcast_in_dim(alpha, &shape, &[0])?
    } else {
        alpha.clone()
    };
    let terms = xlogy(&lax::sub(&alpha, &k(&alpha, 1.0)?)?, &x)?;
    let lp = lax::sub(&jnp::sum(&terms, 0isize, false)?, &normalize)?;
    let positive = jnp::all(&lax::gt(&x, &k(&x, 0.0)?)?, 0isize, false)?;
    let total = jnp::sum(&x, 0isize, false)?;
    let near_one = lax::lt(
        &lax::abs(&lax::sub(&total, &k(&total, 1.0)?)?)?,
        &k(&total, 1e-6)?,
    )?;
    jnp::where_(&jnp::logical_and(&positive, &near_one)?, &lp, &neg_inf())
}

/// `dirichlet.pdf(x, alpha)`: `exp(logpdf)`.
pub fn pdf(x: &Array, alpha: &Array) -> Result<Array> {
    lax::exp(&logpdf(x, alpha)?)
}
