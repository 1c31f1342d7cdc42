//! `jax.scipy.stats.vonmises`: the von Mises distribution on the circle
//! (`logpdf`, `pdf`), normalized through `i0e` (stable for large
//! `kappa`).

use super::{exp_of, k, nan, promote};
use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy as jnp;

/// `vonmises.logpdf(x, kappa)`: `kappa (cos x - 1) - log(2 pi i0e(kappa))`,
/// NaN where `kappa <= 0`.
pub fn logpdf(x: &Array, kappa: &Array) -> Result<Array> {
    let v = promote("vonmises.logpdf", &[x, kappa])?;
    let (x, kappa) = (&v[0], &v[1]);
    let cos_term = jnp::multiply(kappa, &jnp::subtract(&jnp::cos(x)?, &Array::weak(1))?)?;
    let norm = jnp::log(&jnp::multiply(
        &Array::weak(2.0 * std::f64::consts::PI),
        &lax::bessel_i0e(kappa)?,
    )?)?;
    let lp = jnp::subtract(&cos_term, &norm)?;
    jnp::where_(&lax::gt(kappa, &k(kappa, 0.0)?)?, &lp, &nan())
}

exp_of! {
    /// `vonmises.pdf(x, kappa)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, kappa: &Array)
}
