//! The integration tests of `jaxon-trace`.
//!
//! One test binary for the crate's integration tests (each file is a
//! module): linking one binary instead of one per file is most of what
//! `cargo test` costs. Tests that change process-wide state (the default
//! backend, environment variables, panic hooks, global caches) stay in
//! their own binaries beside this folder.

mod common;

mod api_breadth;
mod control_golden;
mod control_more;
mod control_numeric;
mod core_semantics;
mod dyn_control;
mod dyn_create;
mod dyn_for_loop;
mod golden_seeds;
mod index_masks_errors;
mod lax_conv;
mod lax_table;
mod nn_activations;
mod nn_initializers;
mod nn_more;
mod nn_oracle;
mod numpy_breadth;
mod numpy_goldens;
mod numpy_linalg;
mod numpy_misc;
mod numpy_more;
mod numpy_nan;
mod numpy_products;
mod numpy_promotion;
mod numpy_search;
mod numpy_values;
mod pytree_deep;
mod pytree_derive;
mod pytree_map;
mod random_jax;
mod random_samplers_jax;
mod random_staging;
mod scipy_linalg_more;
mod take_along_axis;
