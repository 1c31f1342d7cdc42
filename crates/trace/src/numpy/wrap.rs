//! Helpers shared by the `jnp` functions: JAX's named `jit` wrappers
//! (`jit[name=_where]`, ...) and constant literals of a given dtype.

use crate::array::Array;
use crate::error::{ok_or_raise, Result};
use crate::lax;
use jaxon_ir::DType;

/// Calls `f` on `args` through a `jit` named `name`, as JAX's jnp does
/// for its `@jit`-decorated helpers: under a trace it is a `jit` equation.
/// Eagerly the body runs op by op: a fresh `Jit` per call would compile
/// (and never reuse) an executable every time.
pub(crate) fn jitted(
    name: &str,
    args: Vec<Array>,
    f: impl Fn(&[Array]) -> Result<Array>,
) -> Result<Array> {
    let top = crate::core::find_top_trace(&args)?;
    if top.trace().as_any().is::<crate::eval::EvalTrace>() {
        return f(&args);
    }
    crate::jit::jit(move |a: Vec<Array>| ok_or_raise(f(&a)))
        .name(name)
        .call(args)
}

/// A strongly typed scalar constant (staged as a literal).
pub(crate) fn lit(v: f64, dtype: DType) -> Result<Array> {
    let w = if dtype.is_float() {
        Array::weak(v)
    } else {
        Array::weak(v as i64)
    };
    lax::convert_element_type(&w, dtype, false)
}
