//! Planning: from a simplified jaxpr to groups ready to emit. `rewrite`
//! (jaxpr rewrites before planning), `discharge` (`Ref` arguments become
//! arrays), `prep` (fusion and memory plans, one kernel per fused group),
//! `rows` (row runs), `dot_fuse` (GEMM peepholes), `epilogue` (bias and
//! relu fused into a GEMM's stores), `opaque` (the step of
//! each equation that is neither fused nor control flow), `pallas` (a
//! `pallas_call`'s kernel compiled for its step), `spmd` (a `shard_map`'s
//! body compiled for its step), over the vocabulary of `groups`.
//!
//! Invariant: nothing here emits a program function or runs code; the one
//! import cycle through this folder is the intended one, a `pallas_call`'s
//! kernel or a `shard_map`'s body compiled as a nested program (`prep` →
//! `opaque` → `pallas`/`spmd` → `compile` → `prep`).

pub(crate) mod discharge;
pub(crate) mod dot_fuse;
pub(crate) mod epilogue;
pub(crate) mod groups;
pub(crate) mod opaque;
pub(crate) mod pallas;
pub(crate) mod prep;
pub(crate) mod rewrite;
pub(crate) mod rows;
pub(crate) mod spmd;
