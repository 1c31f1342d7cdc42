//! The integration tests of `jaxon` (the facade).
//!
//! One test binary for the crate's integration tests (each file is a
//! module): linking one binary instead of one per file is most of what
//! `cargo test` costs. Tests that change process-wide state (the default
//! backend, environment variables, panic hooks, global caches) stay in
//! their own binaries beside this folder.

mod api_top;
mod cnn_train;
mod cuda_sim_backend;
mod default_backend;
mod facade_exports;
mod io;
mod jax_conventions;
mod jax_model;
mod lax_fns_cpu;
mod markers;
mod scipy_special;
mod scipy_stats_cpu;
