//! `jaxon-trace`: tracing for jaxon — `Array`, the interpreter stack with an
//! explicit eval base, staging (`make_jaxpr`, `jit`), the `lax` and `numpy`
//! APIs, control flow and pytrees.
//!
//! The design follows the omnistaging seed and JAX's autodidax: see
//! [`core`] for the stack and `bind`, [`staging`] for the jaxpr builder,
//! [`jit`](mod@jit) for the compile cache.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// `#[derive(Pytree)]` names this crate as `::jaxon_trace` (see `jaxon-macros`).
extern crate self as jaxon_trace;

pub mod array;
pub mod callback;
pub mod control;
pub mod core;
pub mod debug;
pub mod dynshape;
pub mod error;
pub mod eval;
pub mod index;
pub mod interpret;
pub mod jit;
pub mod jit_cache;
pub mod lax;
pub mod nn;
pub mod numpy;
mod ops;
pub mod pytree;
pub mod random;
pub mod scipy;
pub mod stage;
pub mod staging;
pub mod tree_util;

pub use array::{Array, Element, WeakScalar};
pub use callback::{pure_callback, VmapMethod};
pub use control::{cond, fori_loop, scan, switch, while_loop, LoopBound};
pub use core::{
    bind, bind1, new_base_main, new_dynamic_main, new_main, MainGuard, MainTrace, Trace,
};
pub use error::{catch, catch_flat, raise, Error, Result};
pub use eval::{register_backend, set_default_backend, with_backend};
pub use jit::{jit, Jit};
pub use jit_cache::clear_caches;
pub use pytree::{Pytree, Static, TreeDef};
pub use stage::{eval_shape, make_jaxpr};
