//! `jax.scipy.stats`: the densities, mass functions and distribution
//! functions of JAX 0.10.2, one module per distribution, each staged with
//! JAX's formula (so values, edge cases and derivatives match JAX's).
//!
//! # Conventions
//!
//! - Every argument is an `&Array`; arguments are promoted together to an
//!   inexact dtype and broadcast against each other as JAX does (integers
//!   become the default float; shapes that do not broadcast are an
//!   [`Error::ShapeMismatch`](crate::error::Error::ShapeMismatch) naming
//!   both shapes).
//! - The arguments JAX gives defaults (`loc = 0`, `scale = 1`) are
//!   `Option<&Array>`: `None` is JAX's default, passed as a weakly typed
//!   scalar so it never changes the result's dtype. So
//!   `jax.scipy.stats.norm.logpdf(x)` is `norm::logpdf(&x, None, None)`
//!   and `norm.logpdf(x, 1.0, s)` is
//!   `norm::logpdf(&x, Some(&Array::weak(1.0)), Some(&s))`.
//! - Outside the support a log-density is `-inf` and a density 0; invalid
//!   parameters give NaN where JAX gives NaN.

use crate::array::Array;
use crate::error::Result;
use crate::lax;
use crate::numpy::promote::promote_args_inexact;

pub mod bernoulli;
pub mod beta;
pub mod betabinom;
pub mod binom;
pub mod cauchy;
pub mod chi2;
mod circular;
pub mod dirichlet;
pub mod expon;
pub mod gamma;
pub mod geom;
mod gumbel;
pub mod laplace;
pub mod logistic;
pub mod multinomial;
pub mod multivariate_normal;
pub mod nbinom;
pub mod norm;
pub mod pareto;
pub mod poisson;
pub mod t;
pub mod truncnorm;
pub mod uniform;
pub mod vonmises;

pub use circular::{gennorm, wrapcauchy};
pub use gumbel::{gumbel_l, gumbel_r};

/// JAX's `promote_args_inexact(name, *args)`.
pub(crate) fn promote(name: &str, args: &[&Array]) -> Result<Vec<Array>> {
    promote_args_inexact(name, args)
}

/// `loc`, or JAX's default `0`.
pub(crate) fn loc_or_0(loc: Option<&Array>) -> Array {
    loc.cloned().unwrap_or_else(|| Array::weak(0))
}

/// `scale`, or JAX's default `1`.
pub(crate) fn scale_or_1(scale: Option<&Array>) -> Array {
    scale.cloned().unwrap_or_else(|| Array::weak(1))
}

/// A scalar of `x`'s dtype (JAX's `_lax_const`).
pub(crate) fn k(x: &Array, v: f64) -> Result<Array> {
    lax::convert_element_type(&Array::weak(v), x.dtype(), false)
}

/// A weakly typed `-inf` (NumPy's `-np.inf` in a `jnp.where`).
pub(crate) fn neg_inf() -> Array {
    Array::weak(f64::NEG_INFINITY)
}

/// A weakly typed NaN.
pub(crate) fn nan() -> Array {
    Array::weak(f64::NAN)
}

/// `(x - loc) / scale`.
pub(crate) fn standardize(x: &Array, loc: &Array, scale: &Array) -> Result<Array> {
    lax::div(&lax::sub(x, loc)?, scale)
}

/// Defines `pdf`/`pmf` (or another `exp(log...)` function) as `exp` of
/// the log-function with the same arguments, as JAX does.
macro_rules! exp_of {
    ($(#[$doc:meta])* $name:ident = $log:ident($($a:ident: $t:ty),*)) => {
        $(#[$doc])*
        pub fn $name($($a: $t),*) -> crate::error::Result<crate::array::Array> {
            crate::lax::exp(&$log($($a),*)?)
        }
    };
}
pub(crate) use exp_of;
