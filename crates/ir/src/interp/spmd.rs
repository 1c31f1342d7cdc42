//! The interpreter's `shard_map`: one instance of the body per device of
//! the mesh, each on a scoped thread with its device context
//! (`crate::spmd`), meeting at collectives (`crate::spmd::collective`)
//! through the mesh's communicator. Splitting, running and assembling are
//! `crate::spmd`'s, shared with the CPU backend; a mesh larger than this
//! process's host devices spans the processes of the registered group
//! (`crate::spmd::shard_map_on`).

use super::{call_closed, Ctx, Value};
use crate::array::HostArray;
use crate::error::IrError;
use crate::primitive::ShardMapParams;

/// Evaluates `shard_map` on the whole operands.
pub(crate) fn shard_map(
    ctx: &Ctx,
    p: &ShardMapParams,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let arrays: Vec<&HostArray> = args
        .iter()
        .map(|v| match v {
            Value::Array(a) => Ok(a),
            Value::Ref(_) => Err(IrError::Eval("shard_map: a Ref operand".into())),
        })
        .collect::<Result<_, _>>()?;
    let body = &p.jaxpr;
    // Across processes (`crate::spmd::shard_map_on`) the bodies must agree.
    let local = crate::devices::host_device_count().unwrap_or(1);
    let sig = if crate::spmd::process_count() > 1 {
        crate::spmd::signature(body.to_string().as_bytes())
    } else {
        0
    };
    let (mesh, ins, outs) = (&p.mesh, &p.in_specs, &p.out_specs);
    let outs = crate::spmd::shard_map_on(mesh, ins, outs, &arrays, local, sig, |mine| {
        let mine: Vec<Value> = mine.into_iter().map(Value::Array).collect();
        call_closed(ctx, body, &mine)?
            .into_iter()
            .enumerate()
            .map(|(k, v)| match v {
                Value::Array(a) => Ok(a),
                Value::Ref(_) => Err(IrError::Eval(format!(
                    "shard_map: result {k} of the body is a Ref"
                ))),
            })
            .collect()
    })?;
    Ok(outs.into_iter().map(Value::Array).collect())
}
