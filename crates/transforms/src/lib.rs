//! `jaxon-transforms`: forward mode (`jvp`), reverse mode (`linearize`,
//! `vjp`, `grad`) and Jacobians, plugged into `jaxon-trace`'s interpreter
//! stack through its `Trace` trait.
//!
//! Reverse mode is partial evaluation by trace levels: `linearize` pushes a
//! staging main *below* a jvp main, so primal work (on values from below)
//! runs now, while tangent work (on the staging tracers) is recorded as a
//! linear jaxpr whose constants are the residuals. `transpose` runs that
//! jaxpr backwards.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod batch;
pub mod checkpoint;
pub mod checkpoint_policies;
pub mod custom;
pub mod jac;
pub mod jvp;
pub mod lax_fns;
pub mod linear_solve;
pub mod linearize;
pub mod partial_eval;
pub mod prefix;
mod rules;
pub mod spmd;
pub mod transpose;
mod util;
pub mod vectorize;

pub use api::{
    grad_and_aux, grad_with, linear_transpose_tree, value_and_grad_with, Argnums, GradOutput,
};
pub use batch::{
    all_gather, axis_index, batch_jaxpr, batch_jaxpr_named, pmax, pmean, pmin, psum, vmap, Axes,
    BatchTrace, Vmap,
};
pub use checkpoint::{checkpoint, remat, Checkpoint};
pub use custom::{custom_jvp, custom_vjp, CustomJvp, CustomVjp};
pub use jac::{hessian, jacfwd, jacobian, jacrev, Jacobian};
pub use jvp::{jvp, jvp_jaxpr, jvp_jaxpr_with, JvpOutputs, JvpTrace};
pub use linearize::{grad, linearize, value_and_grad, vjp};
pub use spmd::{make_mesh, pmap, shard_map, Pmap, ShardMap, Specs};
pub use transpose::{backward_pass, linear_transpose};
