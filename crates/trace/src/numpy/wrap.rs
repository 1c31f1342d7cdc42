//! Helpers shared by the `jnp` functions: JAX's named `jit` wrappers
//! (`jit[name=_where]`, ...) and constant literals of a given dtype.

use crate::array::Array;
use crate::error::{ok_or_raise, Result};
use crate::lax;
use jaxon_ir::DType;

/// Calls `f` on `args` through a `jit` named `name`, as JAX's jnp does
/// for its `@jit`-decorated helpers: staged, it is a `jit` equation; eager,
/// it runs the staged function on the default backend.
pub(crate) fn jitted(
    name: &str,
    args: Vec<Array>,
    f: impl Fn(&[Array]) -> Result<Array>,
) -> Result<Array> {
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
