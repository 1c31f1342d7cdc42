//! The integration tests of `jaxon-backend-cpu`.
//!
//! One test binary for the crate's integration tests (each file is a
//! module): linking one binary instead of one per file is most of what
//! `cargo test` costs. Tests that change process-wide state (the default
//! backend, environment variables, panic hooks, global caches) stay in
//! their own binaries beside this folder.

#[path = "../common/mod.rs"]
mod common;

/// Guard pages after each array, for the threads that switch guarding on
/// (`common::guard::guarded`: the differential, coverage and wide-math tests).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: common::guard::GuardAlloc = common::guard::GuardAlloc;

mod pallas_util;

mod backend;
mod callbacks;
mod collectives;
mod control_flow;
mod coverage;
mod differential;
mod dot_half;
mod dynamic;
mod dynamic_native;
mod exact_math;
mod fusion_maps;
mod gather_oob;
mod gemm_epilogue;
mod huge_shapes;
mod math_ulp;
mod memory;
mod pallas;
mod pallas_inplace;
mod random_samplers_cpu;
mod rng_bit_generator_cpu;
mod wide_math;
mod window_ops;
