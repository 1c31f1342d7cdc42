//! The integration tests of `jaxon-pallas`.
//!
//! One test binary for the crate's integration tests (each file is a
//! module): linking one binary instead of one per file is most of what
//! `cargo test` costs. Tests that change process-wide state (the default
//! backend, environment variables, panic hooks, global caches) stay in
//! their own binaries beside this folder.

mod common;

mod acceptance;
mod kernel_api;
mod ops;
mod staging;
mod transforms;
