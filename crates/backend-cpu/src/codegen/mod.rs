//! Code generation with Cranelift: `kernel` (loop and reduce groups),
//! `program` (the program function running a whole jaxpr), `jit` (the
//! module that holds and finalises them).
//!
//! Invariant: code here reads plans and emits code; it never runs what it
//! emits, and it reaches the runtime only through the trampoline names and
//! addresses its callers hand to `jit::CodeBuilder::new`.

pub(crate) mod jit;
pub(crate) mod kernel;
pub(crate) mod program;
