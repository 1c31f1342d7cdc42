//! A `pallas_call`'s kernel, compiled here as a nested program and handed
//! to its step: the blocks are laid out (`ops::native::pallas::Blocks`),
//! the kernel is simplified with its refs (effects are kept), discharged,
//! rewritten to take windows of its operands, and compiled with the
//! backend's own pipeline (`compile`). The op only runs it.
//!
//! This is the one intended import cycle of the crate: a kernel is a
//! nested program (`prep` → `opaque` → here → `compile` → `prep`).

use crate::error::CpuError;
use crate::ops::native::pallas::{Blocks, PallasOp};
use jaxon_ir::primitive::{PallasCallParams, Platform};
use jaxon_ir::{ClosedJaxpr, IrError};

/// The op of a `pallas_call` with `n_in` inputs: its kernel compiled.
pub(crate) fn pallas_op(p: &PallasCallParams, n_in: usize) -> Result<PallasOp, CpuError> {
    build(p, n_in).map_err(|e| CpuError::Operands(e.to_string()))
}

fn build(p: &PallasCallParams, n_in: usize) -> Result<PallasOp, IrError> {
    let PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        input_output_aliases,
        ..
    } = p;
    let blocks = Blocks::new(
        kernel,
        grid,
        block_mappings,
        n_in,
        out_avals,
        input_output_aliases,
    )?;
    let simple =
        jaxon_ir::passes::simplify(&ClosedJaxpr::without_consts(kernel.clone()), Platform::Cpu)?;
    let discharged = crate::plan::discharge::discharge_refs(&simple)?.ok_or_else(|| {
        IrError::from(CpuError::Operands(
            "pallas_call: the kernel takes no refs".into(),
        ))
    })?;
    let program = blocks.kernel_program(&discharged);
    let key = crate::util::fingerprint(&program.closed.jaxpr);
    let (compiled, strided) = crate::compile::compile_program_strided(
        &program.closed,
        &key,
        Default::default(),
        &program.want,
    )?;
    PallasOp::new(blocks, program, compiled, strided)
}
