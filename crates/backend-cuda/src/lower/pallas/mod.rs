//! The Pallas family on CUDA: `pallas_call` lowers to one kernel with one
//! thread block per program (`call.rs`); the kernel body is evaluated by
//! the block (`block.rs`), array primitives as per-element values
//! (`ops.rs`), f16/bf16 `dot_general` on tensor cores (`mma.rs`), refs as
//! windows of global memory (`refs.rs`) and control flow on uniform
//! scalars (`control.rs`). The other Pallas primitives only exist inside a
//! kernel.
//!
//! Values live in shared memory (or global scratch, per dtype), a thread
//! per element; half-precision dots are `mma.sync.m16n8k16` per warp with
//! register blocking and `ldmatrix` fragments, other dots an FMA loop.
//! `cp.async` pipelines and register-resident accumulators are the GPU
//! performance work's.

mod block;
mod call;
mod control;
mod lazy;
mod mma;
mod ops;
mod refs;

use super::plan::Step;
use super::{Ctx, Env};
use jaxon_ir::primitive::Pallas;
use jaxon_ir::{Eqn, IrError, Jaxpr};

/// Lowers a Pallas-family equation at the top level of a program.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Pallas,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    match p {
        Pallas::PallasCall(params) => call::lower(ctx, jaxpr, eqn, params, env, steps),
        Pallas::ProgramId(_)
        | Pallas::NumPrograms(_)
        | Pallas::Load(_)
        | Pallas::Store(_)
        | Pallas::AtomicRmw(_)
        | Pallas::AtomicCas(_) => Err(IrError::ty(p.name(), "used outside a pallas_call kernel")),
    }
}
