//! The callback family (`debug_print`, `debug_callback`, `pure_callback`):
//! one `Step::Host` each, which reads the operands back to the host, calls
//! the host function the equation holds (as the interpreter does, through
//! `interp::ops::callback`), and writes the results into fresh buffers
//! (`run.rs`). The simulator and the GPU runtime run the same step.
//!
//! Invariants: literal operands are materialised first, so every operand
//! is a buffer of its declared shape; `key<fry>` operands or results do
//! not lower (`unsupported::keys` refuses them first); the effectful
//! callbacks stay in equation order because `simplify` keeps them
//! (`passes::has_effect`) and each is an opaque group, run in order.

use super::plan::Step;
use super::{Ctx, Env};
use jaxon_ir::primitive::Callback;
use jaxon_ir::{Eqn, IrError, Jaxpr};

/// Lowers a callback equation to a host step.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Callback,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (args, outs) = super::spmd::operands(ctx, jaxpr, eqn, env, steps)?;
    steps.push(Step::Host {
        call: p.clone(),
        args,
        outs,
    });
    Ok(())
}
