//! A `shard_map`'s body, compiled here once (with the backend's own
//! pipeline, when the enclosing program compiles) and handed to its step
//! (`ops::native::spmd::ShardMapOp`), which runs one instance of it per
//! device of the mesh. A mesh larger than the backend's devices (times the
//! processes of a registered `jaxon_ir::spmd::ProcessGroup`) is an error
//! naming both numbers.
//!
//! Like `plan::pallas`, this closes the crate's intended import cycle: a
//! body is a nested program (`prep` → `opaque` → here → `compile` →
//! `prep`).

use crate::ops::native::spmd::ShardMapOp;
use crate::run::executable::CpuExecutable;
use crate::util::Options;
use jaxon_ir::primitive::{Platform, ShardMapParams};
use jaxon_ir::IrError;
use std::sync::Arc;

/// The op of a `shard_map`: its body compiled for a backend with
/// `opts.device_count()` devices.
pub(crate) fn shard_map_op(p: &ShardMapParams, opts: Options) -> Result<ShardMapOp, IrError> {
    let devices = opts.device_count();
    p.mesh
        .validate()
        .map_err(|e| IrError::Invalid(format!("shard_map: {e}")))?;
    let n = p.mesh.size();
    // Under a process group, a mesh may hold every process's devices
    // (`jaxon_ir::spmd::shard_map_on` checks the exact count at run time).
    let procs = jaxon_ir::spmd::process_count();
    if n > devices * procs {
        let whose = if procs > 1 {
            format!(
                "the {procs} processes have {} ({procs} × {devices} cpu devices)",
                devices * procs
            )
        } else {
            format!("the cpu backend has {devices}")
        };
        return Err(IrError::Invalid(format!(
            "shard_map: the mesh {} has {n} devices but {whose} \
             (JAXON_CPU_DEVICES, CpuBackend::with_devices)",
            p.mesh
        )));
    }
    if p.jaxpr.jaxpr.invars.len() != p.in_specs.len()
        || p.jaxpr.jaxpr.outvars.len() != p.out_specs.len()
    {
        return Err(IrError::Invalid(format!(
            "shard_map: a body of {} arguments and {} results for {} in_specs and {} out_specs",
            p.jaxpr.jaxpr.invars.len(),
            p.jaxpr.jaxpr.outvars.len(),
            p.in_specs.len(),
            p.out_specs.len()
        )));
    }
    let simple = jaxon_ir::passes::simplify(&p.jaxpr, Platform::Cpu)?;
    let key = crate::util::fingerprint(&simple.jaxpr);
    let sig = jaxon_ir::spmd::signature(key.as_bytes());
    let program = crate::compile::compile_program(&simple, &key, opts)?;
    let body = CpuExecutable {
        program: Arc::new(program),
        consts: simple.consts,
        threads: 1,
        pool: Arc::new(crate::run::pool::Pool::default()),
    };
    Ok(ShardMapOp::new(
        body,
        devices,
        sig,
        p.mesh.clone(),
        p.in_specs.clone(),
        p.out_specs.clone(),
    ))
}
