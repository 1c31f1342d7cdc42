//! The integration tests of `jaxon-ir`.
//!
//! One test binary for the crate's integration tests (each file is a
//! module): linking one binary instead of one per file is most of what
//! `cargo test` costs. Tests that change process-wide state (the default
//! backend, environment variables, panic hooks, global caches) stay in
//! their own binaries beside this folder.

mod callbacks;
mod deep_input;
mod gather_scatter_oob;
mod huge_shapes;
mod rng_bit_generator;
mod roundtrip_prop;
mod schur;
mod spmd;
