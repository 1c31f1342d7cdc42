//! `jax.pure_callback`: a host function from arrays to arrays of declared
//! types, callable inside `jit` (the CPU backend and the interpreter call
//! back into Rust with host arrays) and `vmap` (by its [`VmapMethod`]); not
//! differentiable, as in JAX.

use crate::array::Array;
use crate::core::bind;
use crate::error::Result;
use jaxon_ir::primitive::{HostCallback, PureCallbackParams};
use jaxon_ir::{HostArray, Primitive, ShapedArray};
use std::sync::Arc;

/// How `vmap` batches a `pure_callback` (JAX's `vmap_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmapMethod {
    /// `None`: batching is an error.
    Unbatchable,
    /// `"sequential"`: one call per batch element, results stacked.
    Sequential,
    /// `"expand_dims"`: one call; unbatched operands get a leading 1.
    ExpandDims,
    /// `"broadcast_all"`: one call; every operand broadcast to the batch.
    BroadcastAll,
}

impl VmapMethod {
    fn text(self) -> Option<String> {
        match self {
            VmapMethod::Unbatchable => None,
            VmapMethod::Sequential => Some("sequential".into()),
            VmapMethod::ExpandDims => Some("expand_dims".into()),
            VmapMethod::BroadcastAll => Some("broadcast_all".into()),
        }
    }
}

/// `jax.pure_callback(f, result_shape_dtypes, *args, vmap_method=..)`:
/// `f` maps the operands' values (host arrays) to results of the types in
/// `result_avals`; a result of another type, or an `Err` from `f`, fails
/// the program with a message naming it. Differentiating through it is an
/// error.
pub fn pure_callback<F>(
    f: F,
    result_avals: &[ShapedArray],
    args: &[&Array],
    vmap_method: VmapMethod,
) -> Result<Vec<Array>>
where
    F: Fn(&[HostArray]) -> std::result::Result<Vec<HostArray>, String> + Send + Sync + 'static,
{
    let text = format!(
        "_FlatCallback(callback_func=<function <lambda> at 0xXXXXXXXXXXXX>, in_tree={})",
        in_tree(args.len())
    );
    let params = PureCallbackParams {
        callback: HostCallback::new(text, Arc::new(f)),
        result_avals: result_avals.to_vec(),
        sharding: "None".into(),
        vmap_method: vmap_method.text(),
    };
    let operands: Vec<Array> = args.iter().map(|a| (*a).clone()).collect();
    bind(&Primitive::from(params), &operands)
}

/// `PyTreeDef(((*, *), {}))` for `n` positional operands.
fn in_tree(n: usize) -> String {
    let stars = vec!["*"; n];
    match n {
        1 => "PyTreeDef(((*,), {}))".into(),
        _ => format!("PyTreeDef((({}), {{}}))", stars.join(", ")),
    }
}
