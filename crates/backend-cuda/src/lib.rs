//! jaxon's CUDA backend.
//!
//! Kernels are written in **KIR** ([`kir`]), a small typed SIMT language.
//! KIR has two consumers: a CUDA C printer whose output NVRTC compiles to
//! a CUBIN for the device, and a simulator in Rust that runs a launch on the
//! host, thread by thread in lockstep, and reports out-of-bounds accesses and
//! shared-memory races. Every kernel is tested for values on the simulator
//! on machines with no GPU, and on a GPU whenever one is present.
//!
//! Jaxprs lower to launch plans in [`lower`]; a jaxpr with dimension
//! variables compiles once into a symbolic plan (`lower::dynamic`: sizes
//! are kernel parameters, grids and GEMM plans are computed per call) that
//! is instantiated for each call's sizes, so one compiled program (and one
//! NVRTC module on a GPU) serves every size.
//!
//! Invariants:
//! - Nothing here panics when CUDA, NVRTC or a GPU is missing: every driver
//!   and NVRTC entry point is guarded and reports a [`CudaError`].
//! - A kernel is verified ([`kir::verify`]) before it is printed or
//!   simulated; the printer and the simulator may assume a well-typed kernel.

pub mod blas;
pub mod catalog;
pub mod cuda_c;
pub mod error;
pub mod host;
pub mod kir;
pub mod lower;
pub mod nccl;
pub mod nvrtc;
pub mod runtime;
pub mod sim;

pub use error::{CudaError, Result};
