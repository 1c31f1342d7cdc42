//! `shard_map` and the named-axis collectives: their lowering to
//! `Step::ShardMap` and `Step::Collective`, and the host side of running
//! them, shared by the simulator and the GPU ([`run_shard_map`],
//! [`host_collective`]).
//!
//! A `shard_map`'s body lowers once, as a [`Program`] of its own, with the
//! enclosing program's options. Its step reads the (global) operands back
//! to the host, and `jaxon_ir::spmd::shard_map` splits them by `in_specs`,
//! runs one instance per mesh device, each on its own host thread inside
//! its device context, and assembles the results by `out_specs`; the
//! results are written into the step's buffers. On the simulator an
//! instance is `run_simulated`; on a GPU it runs on GPU `rank`
//! (`spmd_gpu.rs`).
//!
//! A collective step on the simulator is the interpreter's definition
//! (`interp::ops::eval_op`, which exchanges through the running
//! instance's `jaxon_ir::spmd::Communicator`), so its results are the
//! interpreter's bit for bit. Outside a `shard_map` naming its axes the
//! same call gives the interpreter's error for an unbound axis.
//!
//! Invariants: a mesh larger than `LowerOptions::devices` is a compile
//! error naming both numbers; literal operands are materialised, so every
//! operand is a buffer of its declared shape; a failing instance poisons
//! the communicator (`jaxon_ir::spmd::run_instances`), so no other instance
//! waits for it; results are checked against their buffers before they are
//! written.

use super::kernel::materialize;
use super::plan::{BufId, Program, ShardBody, Step};
use super::run::{array_from_bytes, fills, host_bytes, Target};
use super::{atom_type, bind_outputs, Ctx, Env};
use crate::error::{CudaError, Result};
use jaxon_ir::primitive::{Collective, Primitive, ShardMapParams};
use jaxon_ir::{Eqn, HostArray, IrError, Jaxpr};
use std::sync::Arc;

/// The operands of an equation as buffers with their shapes (literals
/// materialised), and its results' buffers, bound.
pub(crate) type Io = (Vec<(BufId, Vec<usize>)>, Vec<(BufId, Vec<usize>)>);

pub(crate) fn operands(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> std::result::Result<Io, IrError> {
    let mut args = Vec::with_capacity(eqn.inputs.len());
    for a in &eqn.inputs {
        let (dt, shape) = atom_type(jaxpr, a)?;
        let b = materialize(ctx, steps, env.atom(a)?, dt, shape.iter().product())?;
        args.push((b, shape));
    }
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?
        .into_iter()
        .map(|(b, _, shape)| (b, shape))
        .collect();
    Ok((args, outs))
}

/// Lowers a `shard_map`: its body compiled as its own program, one step.
pub(crate) fn shard_map(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &ShardMapParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> std::result::Result<(), IrError> {
    p.mesh
        .validate()
        .map_err(|e| IrError::Invalid(format!("shard_map: {e}")))?;
    let n = p.mesh.size();
    let devices = ctx.opts.devices;
    if n > devices {
        return Err(IrError::Invalid(format!(
            "shard_map: the mesh {} has {n} devices but the cuda backend has {devices} \
             (JAXON_CUDA_SIM_DEVICES or CudaSimBackend::with_devices on the simulator; the \
             visible GPUs on a GPU)",
            p.mesh
        )));
    }
    let body = &p.jaxpr.jaxpr;
    if body.invars.len() != p.in_specs.len()
        || body.outvars.len() != p.out_specs.len()
        || eqn.inputs.len() != p.in_specs.len()
        || eqn.outputs.len() != p.out_specs.len()
    {
        return Err(IrError::Invalid(format!(
            "shard_map: a body of {} arguments and {} results and an equation of {} operands \
             and {} results for {} in_specs and {} out_specs",
            body.invars.len(),
            body.outvars.len(),
            eqn.inputs.len(),
            eqn.outputs.len(),
            p.in_specs.len(),
            p.out_specs.len()
        )));
    }
    let program = super::lower_with(&p.jaxpr, ctx.opts)?;
    let (args, outs) = operands(ctx, jaxpr, eqn, env, steps)?;
    steps.push(Step::ShardMap {
        body: Arc::new(ShardBody {
            program,
            mesh: p.mesh.clone(),
            in_specs: p.in_specs.clone(),
            out_specs: p.out_specs.clone(),
        }),
        args,
        outs,
    });
    Ok(())
}

/// Lowers a named-axis collective to one step (positional all-reduces
/// became reductions in `simplify`).
pub(crate) fn collective(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Collective,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> std::result::Result<(), IrError> {
    // One arm per collective, so that a new one is decided here.
    match p {
        Collective::AllReduce(_)
        | Collective::AllGather(_)
        | Collective::AxisIndex(_)
        | Collective::Ppermute(_)
        | Collective::AllToAll(_)
        | Collective::ReduceScatter(_)
        | Collective::Pvary(_)
        | Collective::PsumInvariant(_) => {}
    }
    let (args, outs) = operands(ctx, jaxpr, eqn, env, steps)?;
    steps.push(Step::Collective {
        op: p.clone(),
        args,
        outs,
    });
    Ok(())
}

fn step_err(name: &str, message: String) -> CudaError {
    CudaError::Launch {
        kernel: name.to_string(),
        message,
    }
}

/// Reads buffers back to the host as arrays of their shapes.
pub(crate) fn read_arrays<T: Target>(
    t: &mut T,
    prog: &Program,
    name: &str,
    args: &[(BufId, Vec<usize>)],
) -> Result<Vec<HostArray>> {
    let mut arrays = Vec::with_capacity(args.len());
    for (b, shape) in args {
        let d = prog
            .buffers
            .get(b.index())
            .copied()
            .ok_or_else(|| step_err(name, format!("no buffer {}", b.0)))?;
        let bytes = if d.len == 0 { Vec::new() } else { t.read(*b)? };
        let a =
            array_from_bytes(d.dtype, shape, &bytes).map_err(|e| step_err(name, e.to_string()))?;
        arrays.push(a);
    }
    Ok(arrays)
}

/// Writes `results` into `outs`, each checked against its buffer's type.
pub(crate) fn write_arrays<T: Target>(
    t: &mut T,
    prog: &Program,
    name: &str,
    results: &[HostArray],
    outs: &[(BufId, Vec<usize>)],
) -> Result<()> {
    if results.len() != outs.len() {
        return Err(step_err(
            name,
            format!("{} results for {} outputs", results.len(), outs.len()),
        ));
    }
    for (r, (b, shape)) in results.iter().zip(outs) {
        let d = prog
            .buffers
            .get(b.index())
            .copied()
            .ok_or_else(|| step_err(name, format!("no buffer {}", b.0)))?;
        if r.shape() != &shape[..] || !fills(r, d.dtype, d.len) {
            return Err(step_err(
                name,
                format!(
                    "a result of {}{:?} for {}{:?}",
                    r.dtype(),
                    r.shape(),
                    d.dtype,
                    shape
                ),
            ));
        }
        if d.len > 0 {
            t.write(*b, &host_bytes(r))?;
        }
    }
    Ok(())
}

/// The rank of the device this thread runs an instance for (inside
/// `jaxon_ir::spmd::run_instances`).
pub(crate) fn current_rank() -> Option<usize> {
    jaxon_ir::spmd::context_for(&[]).map(|cx| cx.rank())
}

/// Runs a `ShardMap` step: operands read, `jaxon_ir::spmd::shard_map`
/// with `instance(rank, shards)` per device, results written.
pub(crate) fn run_shard_map<T, F>(
    t: &mut T,
    prog: &Program,
    body: &ShardBody,
    args: &[(BufId, Vec<usize>)],
    outs: &[(BufId, Vec<usize>)],
    instance: F,
) -> Result<()>
where
    T: Target,
    F: Fn(usize, Vec<HostArray>) -> Result<Vec<HostArray>> + Sync,
{
    let arrays = read_arrays(t, prog, "shard_map", args)?;
    let refs: Vec<&HostArray> = arrays.iter().collect();
    let results =
        jaxon_ir::spmd::shard_map(&body.mesh, &body.in_specs, &body.out_specs, &refs, |mine| {
            let rank = current_rank()
                .ok_or_else(|| IrError::Eval("shard_map: an instance without a device".into()))?;
            instance(rank, mine).map_err(|e| IrError::Eval(e.to_string()))
        })
        .map_err(|e| step_err("shard_map", e.to_string()))?;
    write_arrays(t, prog, "shard_map", &results, outs)
}

/// Runs a collective step on the host: operands read, the interpreter's
/// definition (an exchange through the instance's communicator), results
/// written.
pub(crate) fn host_collective<T: Target>(
    t: &mut T,
    prog: &Program,
    op: &Collective,
    args: &[(BufId, Vec<usize>)],
    outs: &[(BufId, Vec<usize>)],
) -> Result<()> {
    let name = op.name();
    let arrays = read_arrays(t, prog, name, args)?;
    let results = jaxon_ir::interp::ops::eval_op(&Primitive::Collective(op.clone()), &arrays)
        .map_err(|e| step_err(name, e.to_string()))?;
    write_arrays(t, prog, name, &results, outs)
}
