//! The integration tests of `jaxon-transforms`.
//!
//! One test binary for the crate's integration tests (each file is a
//! module): linking one binary instead of one per file is most of what
//! `cargo test` costs. Tests that change process-wide state (the default
//! backend, environment variables, panic hooks, global caches) stay in
//! their own binaries beside this folder.

mod table_kit;

mod ad_numeric;
mod api_custom;
mod api_jac;
mod cf_ad;
mod cf_nested;
mod checkpoint_policy;
mod dyn_grad;
mod dyn_transforms;
mod golden_grad;
mod jnp_more_grads;
mod lax_fns;
mod linalg_nn_grads;
mod linear_solve;
mod perturbation;
mod random_samplers_grad;
mod rng_bit_generator;
mod rules_conv;
mod rules_extra;
mod schur;
mod scipy_stats;
mod shard_map_api;
mod table_primitives;
mod table_state;
mod vectorize;
mod vmap_collectives_staged;
mod vmap_compose;
mod vmap_golden;
mod vmap_rules;
mod window_generic;
