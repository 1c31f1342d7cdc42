//! The interpreter's `shard_map` and mesh collectives: one instance of the
//! body per device of the mesh, each on a scoped thread with its device
//! context (`crate::spmd`), meeting at collectives through the mesh's
//! communicator.
//!
//! Operands are split by `in_specs`; results are assembled by `out_specs`
//! (a result replicated over an axis its spec does not name is taken from
//! the devices at coordinate 0 of that axis). The first failing instance's
//! error is returned; it poisons the communicator so that no other
//! instance waits for it.

use super::ops::{concatenate, elementwise_binary, reduce_arrays, slice_block, stack};
use super::{call_closed, Ctx, Value};
use crate::array::HostArray;
use crate::error::IrError;
use crate::primitive::{
    AllGatherParams, AllReduceParams, AllToAllParams, AxisRef, BinaryOp, Collective, CollectiveOp,
    PartitionSpec, ReduceOp, ShardMapParams,
};
use crate::spmd::{context_for, with_context, Communicator, DeviceContext};
use std::sync::Arc;

/// Splits `x` into device `coords`' shard under `spec`.
fn shard_of(
    mesh: &crate::primitive::Mesh,
    spec: &PartitionSpec,
    x: &HostArray,
    coords: &[usize],
) -> Result<HostArray, IrError> {
    let sizes = mesh
        .shard_sizes(spec, x.shape())
        .map_err(|e| IrError::Eval(format!("shard_map: {e}")))?;
    let start: Vec<usize> = (0..x.ndim())
        .map(|d| mesh.shard_index(spec, d, coords) * sizes[d])
        .collect();
    slice_block(x, &start, &sizes)
}

/// Evaluates `shard_map` on the whole operands.
pub(crate) fn shard_map(
    ctx: &Ctx,
    p: &ShardMapParams,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let mesh = &p.mesh;
    mesh.validate()
        .map_err(|e| IrError::Eval(format!("shard_map: {e}")))?;
    if args.len() != p.in_specs.len() {
        return Err(IrError::Eval(format!(
            "shard_map: {} operands for {} in_specs",
            args.len(),
            p.in_specs.len()
        )));
    }
    let arrays: Vec<&HostArray> = args
        .iter()
        .map(|v| match v {
            Value::Array(a) => Ok(a),
            Value::Ref(_) => Err(IrError::Eval("shard_map: a Ref operand".into())),
        })
        .collect::<Result<_, _>>()?;
    let n = mesh.size();
    let comm = Arc::new(Communicator::new(n, crate::spmd::default_timeout()));
    let mut shards = Vec::with_capacity(n);
    for rank in 0..n {
        let coords = mesh.coords(rank);
        let mine = arrays
            .iter()
            .zip(&p.in_specs)
            .map(|(x, spec)| shard_of(mesh, spec, x, &coords).map(Value::Array))
            .collect::<Result<Vec<_>, _>>()?;
        shards.push((coords, mine));
    }
    let results: Vec<Result<Vec<Value>, IrError>> = std::thread::scope(|s| {
        let handles: Vec<_> = shards
            .into_iter()
            .map(|(coords, mine)| {
                let cx = DeviceContext {
                    mesh: mesh.clone(),
                    coords,
                    comm: comm.clone(),
                };
                let comm = comm.clone();
                let body = &p.jaxpr;
                std::thread::Builder::new()
                    .name("jaxon-spmd".into())
                    .stack_size(64 << 20)
                    .spawn_scoped(s, move || {
                        let r = with_context(cx, || call_closed(ctx, body, &mine));
                        match &r {
                            Ok(_) => comm.finish(),
                            Err(e) => comm.poison(&e.to_string()),
                        }
                        r
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    comm.poison("a device's program panicked");
                    Err(IrError::Eval(
                        "shard_map: a device's program panicked".into(),
                    ))
                }),
                Err(e) => {
                    comm.poison("a device thread could not start");
                    Err(IrError::Eval(format!(
                        "shard_map: cannot start a thread: {e}"
                    )))
                }
            })
            .collect()
    });
    // The first error that is not a consequence of another's failure.
    let mut outs = Vec::with_capacity(n);
    let mut first_err: Option<IrError> = None;
    for r in results {
        match r {
            Ok(v) => outs.push(v),
            Err(e) => {
                let aborted = e.to_string().contains("collective aborted");
                match &first_err {
                    None => first_err = Some(e),
                    Some(f) if f.to_string().contains("collective aborted") && !aborted => {
                        first_err = Some(e)
                    }
                    Some(_) => {}
                }
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    assemble(p, &outs)
}

/// Builds each global result from the devices' results.
fn assemble(p: &ShardMapParams, outs: &[Vec<Value>]) -> Result<Vec<Value>, IrError> {
    let mesh = &p.mesh;
    let mut results = Vec::with_capacity(p.out_specs.len());
    for (k, spec) in p.out_specs.iter().enumerate() {
        let named = spec.all_axes();
        let mut blocks: Vec<(Vec<usize>, HostArray)> = Vec::new();
        for (rank, out) in outs.iter().enumerate() {
            let coords = mesh.coords(rank);
            // Replicated over the axes the spec does not name: keep one copy.
            let canonical = mesh
                .axes
                .iter()
                .enumerate()
                .all(|(i, (a, _))| named.contains(&a.as_str()) || coords[i] == 0);
            if !canonical {
                continue;
            }
            let v = match out.get(k) {
                Some(Value::Array(a)) => a.clone(),
                _ => {
                    return Err(IrError::Eval(format!(
                        "shard_map: device {rank} gave no array result {k}"
                    )))
                }
            };
            let idx: Vec<usize> = (0..v.ndim())
                .map(|d| mesh.shard_index(spec, d, &coords))
                .collect();
            blocks.push((idx, v));
        }
        results.push(Value::Array(place_blocks(mesh, spec, blocks)?));
    }
    Ok(results)
}

/// Concatenates blocks indexed by their shard index along each dimension.
fn place_blocks(
    mesh: &crate::primitive::Mesh,
    spec: &PartitionSpec,
    mut blocks: Vec<(Vec<usize>, HostArray)>,
) -> Result<HostArray, IrError> {
    let rank = blocks.first().map_or(0, |(_, b)| b.ndim());
    // Concatenate from the last dimension to the first: group blocks that
    // agree on every earlier index.
    for d in (0..rank).rev() {
        let parts = mesh
            .dim_parts(spec, d)
            .map_err(|e| IrError::Eval(format!("shard_map: {e}")))?;
        if parts == 1 {
            for (idx, _) in blocks.iter_mut() {
                idx.truncate(d);
            }
            continue;
        }
        blocks.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(Vec<usize>, HostArray)> = Vec::new();
        for chunk in blocks.chunks(parts) {
            let arrays: Vec<HostArray> = chunk.iter().map(|(_, a)| a.clone()).collect();
            let prefix = chunk[0].0[..d].to_vec();
            merged.push((prefix, concatenate(&arrays, d)?));
        }
        blocks = merged;
    }
    match blocks.len() {
        1 => Ok(blocks.remove(0).1),
        n => Err(IrError::Eval(format!(
            "shard_map: {n} blocks left assembling a result with spec {spec}"
        ))),
    }
}

/// The named axes of a collective, for finding its device context.
fn named_axes(c: &Collective) -> Vec<String> {
    match c {
        Collective::AllReduce(AllReduceParams { axes, .. }) => axes
            .iter()
            .filter_map(|a| a.name().map(str::to_string))
            .collect(),
        Collective::AllGather(AllGatherParams { axis_name, .. }) => axis_name.clone(),
        Collective::AxisIndex(p) => vec![p.axis_name.clone()],
        Collective::Ppermute(p) => p.axis_name.clone(),
        Collective::AllToAll(p) => p.axis_name.clone(),
        Collective::ReduceScatter(p) => p.axis_name.clone(),
        Collective::Pvary(p) => p.axes.clone(),
        Collective::PsumInvariant(p) => p.axes.clone(),
    }
}

/// Evaluates a collective inside a `shard_map` whose mesh has its axes;
/// `None` when no enclosing `shard_map` has them (the caller falls back
/// to the positional/vmap semantics or reports the unbound axis).
pub(crate) fn collective(
    c: &Collective,
    args: &[HostArray],
) -> Option<Result<Vec<HostArray>, IrError>> {
    let axes = named_axes(c);
    if axes.is_empty() {
        return None;
    }
    let refs: Vec<&str> = axes.iter().map(|s| s.as_str()).collect();
    let cx = context_for(&refs)?;
    Some(eval_collective(&cx, c, &axes, args).map(|v| vec![v]))
}

fn one_arg<'a>(name: &str, args: &'a [HostArray]) -> Result<&'a HostArray, IrError> {
    match args {
        [x] => Ok(x),
        _ => Err(IrError::ty(
            name,
            format!("expected 1 operand, got {}", args.len()),
        )),
    }
}

/// The reduction of a group's values, in group order.
fn combine(op: CollectiveOp, values: &[HostArray]) -> Result<HostArray, IrError> {
    let bop = match op {
        CollectiveOp::Sum => BinaryOp::Add,
        CollectiveOp::Max => BinaryOp::Max,
        CollectiveOp::Min => BinaryOp::Min,
    };
    let mut it = values.iter();
    let mut acc = it
        .next()
        .cloned()
        .ok_or_else(|| IrError::Eval("collective over an empty group".into()))?;
    for v in it {
        acc = elementwise_binary(bop, &acc, v)?;
    }
    Ok(acc)
}

fn eval_collective(
    cx: &DeviceContext,
    c: &Collective,
    axes: &[String],
    args: &[HostArray],
) -> Result<HostArray, IrError> {
    let name = c.name();
    match c {
        Collective::AxisIndex(p) => {
            let (pos, _) = cx.axis(name, &p.axis_name)?;
            let i = i32::try_from(cx.coords[pos])
                .map_err(|_| IrError::Eval(format!("{name}: index overflows i32")))?;
            HostArray::new(Vec::new(), crate::array::Storage::I32(vec![i]))
        }
        Collective::Pvary(_) => Ok(one_arg(name, args)?.clone()),
        Collective::PsumInvariant(_) => {
            let x = one_arg(name, args)?.clone();
            let (vals, _) = cx.gather_group(name, axes, x)?;
            combine(CollectiveOp::Sum, &vals)
        }
        Collective::AllReduce(AllReduceParams { op, axes: refs }) => {
            let mut x = one_arg(name, args)?.clone();
            let pos: Vec<usize> = refs
                .iter()
                .filter_map(|a| match a {
                    AxisRef::Pos(p) => Some(*p),
                    AxisRef::Name(_) => None,
                })
                .collect();
            if !pos.is_empty() {
                let rop = match op {
                    CollectiveOp::Sum => ReduceOp::Sum,
                    CollectiveOp::Max => ReduceOp::Max,
                    CollectiveOp::Min => ReduceOp::Min,
                };
                x = reduce_arrays(rop, &x, &pos)?;
            }
            let (vals, _) = cx.gather_group(name, axes, x)?;
            combine(*op, &vals)
        }
        Collective::AllGather(AllGatherParams {
            all_gather_dimension,
            axis_size,
            tiled,
            ..
        }) => {
            let x = one_arg(name, args)?.clone();
            let (vals, _) = cx.gather_group(name, axes, x)?;
            if vals.len() != *axis_size {
                return Err(IrError::Eval(format!(
                    "{name}: axis_size={axis_size} but the axes {axes:?} have {} devices",
                    vals.len()
                )));
            }
            if *tiled {
                concatenate(&vals, *all_gather_dimension)
            } else {
                stack(&vals, *all_gather_dimension)
            }
        }
        Collective::ReduceScatter(p) => {
            let x = one_arg(name, args)?.clone();
            let (vals, me) = cx.gather_group(name, axes, x)?;
            if vals.len() != p.axis_size {
                return Err(IrError::Eval(format!(
                    "{name}: axis_size={} but the axes {axes:?} have {} devices",
                    p.axis_size,
                    vals.len()
                )));
            }
            let sum = combine(CollectiveOp::Sum, &vals)?;
            block_along(&sum, p.scatter_dimension, vals.len(), me, !p.tiled)
        }
        Collective::Ppermute(p) => {
            let x = one_arg(name, args)?.clone();
            let (vals, me) = cx.gather_group(name, axes, x.clone())?;
            for (s, d) in &p.perm {
                if *s >= vals.len() || *d >= vals.len() {
                    return Err(IrError::Eval(format!(
                        "{name}: perm pair ({s}, {d}) is outside the {} devices of {axes:?}",
                        vals.len()
                    )));
                }
            }
            match p.perm.iter().find(|(_, d)| *d == me) {
                Some((s, _)) => Ok(vals[*s].clone()),
                None => Ok(HostArray::zeros(x.dtype(), x.shape())),
            }
        }
        Collective::AllToAll(p) => all_to_all(cx, name, axes, p, one_arg(name, args)?),
    }
}

/// Block `i` of `n` along `dim` (removing `dim` when `squeeze`: then it
/// has size `n` and block `i` is index `i`).
fn block_along(
    x: &HostArray,
    dim: usize,
    n: usize,
    i: usize,
    squeeze: bool,
) -> Result<HostArray, IrError> {
    let size = *x
        .shape()
        .get(dim)
        .ok_or_else(|| IrError::Eval(format!("dimension {dim} out of range")))?;
    if n == 0 || size % n != 0 {
        return Err(IrError::Eval(format!(
            "dimension {dim} of size {size} does not split into {n} blocks"
        )));
    }
    let b = size / n;
    let mut start = vec![0; x.ndim()];
    let mut sizes = x.shape().to_vec();
    start[dim] = i * b;
    sizes[dim] = b;
    let blk = slice_block(x, &start, &sizes)?;
    if squeeze {
        let mut shape = blk.shape().to_vec();
        shape.remove(dim);
        HostArray::new(shape, blk.into_storage())
    } else {
        Ok(blk)
    }
}

/// `all_to_all`: chunk `j` of `x` along `split_axis` goes to member `j`;
/// the received chunks are concatenated along `concat_axis` in member order.
fn all_to_all(
    cx: &DeviceContext,
    name: &str,
    axes: &[String],
    p: &AllToAllParams,
    x: &HostArray,
) -> Result<HostArray, IrError> {
    let (vals, me) = cx.gather_group(name, axes, x.clone())?;
    let n = vals.len();
    let chunks = vals
        .iter()
        .map(|v| block_along(v, p.split_axis, n, me, false))
        .collect::<Result<Vec<_>, _>>()?;
    concatenate(&chunks, p.concat_axis)
}
