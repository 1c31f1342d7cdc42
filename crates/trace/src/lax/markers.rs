//! The marker primitives as functions: `checkpoint_name` (JAX's
//! `jax.ad_checkpoint.checkpoint_name`) and `optimization_barrier`. Both
//! return their operands unchanged.

use crate::array::Array;
use crate::core::{bind, bind1};
use crate::error::Result;
use crate::pytree::Pytree;
use jaxon_ir::primitive::{NameParams, OptimizationBarrierParams};
use jaxon_ir::Primitive;

/// `checkpoint_name(x, name)`: `x`, named for the rematerialisation
/// policies of `checkpoint`; staged as `name[name=..]`.
pub fn checkpoint_name(x: &Array, name: &str) -> Result<Array> {
    let p = Primitive::from(NameParams {
        name: name.to_string(),
    });
    bind1(&p, std::slice::from_ref(x))
}

/// `lax.optimization_barrier(x)`: the leaves of `x` unchanged, with no
/// computation moved across the barrier by the compiler; staged as one
/// `optimization_barrier` equation over every leaf.
pub fn optimization_barrier<T: Pytree>(x: T) -> Result<T> {
    let (leaves, def) = x.flatten();
    if leaves.is_empty() {
        return T::unflatten(&def, leaves);
    }
    let outs = bind(&Primitive::from(OptimizationBarrierParams), &leaves)?;
    T::unflatten(&def, outs)
}
