//! `jaxon-transforms`: forward mode (`jvp`), reverse mode (`linearize`,
//! `vjp`, `grad`) and Jacobians, plugged into `jaxon-trace`'s interpreter
//! stack through its `Trace` trait.
//!
//! Reverse mode is partial evaluation by trace levels: `linearize` pushes a
//! staging main *below* a jvp main, so primal work (on values from below)
//! runs now, while tangent work (on the staging tracers) is recorded as a
//! linear jaxpr whose constants are the residuals. `transpose` runs that
//! jaxpr backwards.

#![warn(missing_docs)]

pub mod batch;
pub mod jvp;
pub mod linearize;
pub mod transpose;
mod util;

pub use batch::{
    all_gather, axis_index, batch_jaxpr, pmax, pmean, psum, vmap, Axes, BatchTrace, Vmap,
};
pub use jvp::{jvp, jvp_jaxpr, JvpTrace};
pub use linearize::{grad, linearize, value_and_grad, vjp};
pub use transpose::{backward_pass, linear_transpose};
