//! The mesh collectives inside a `shard_map`, on host arrays: each is one
//! exchange through the running instance's communicator (`super`), then
//! the single-device definition on the group's values (psum = the sum of
//! the group's values in group order, all_gather = their concatenation or
//! stack, psum_scatter = a block of the sum, ppermute = the value of the
//! source device or zeros, all_to_all = blocks exchanged). The interpreter
//! and the CPU backend's collective steps both call [`collective`].

use super::{context_for, DeviceContext};
use crate::array::HostArray;
use crate::error::IrError;
use crate::interp::ops::{concatenate, elementwise_binary, reduce_arrays, slice_block, stack};
use crate::primitive::{
    AllGatherParams, AllReduceParams, AllToAllParams, AxisRef, BinaryOp, Collective, CollectiveOp,
    ReduceOp,
};

/// The named axes of a collective, for finding its device context.
pub fn named_axes(c: &Collective) -> Vec<String> {
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

/// Evaluates a collective inside a `shard_map` whose mesh has its axes
/// (this thread's device context, [`crate::spmd::with_context`]); `None`
/// when no enclosing `shard_map` has them (the caller falls back to the
/// positional/vmap semantics or reports the unbound axis).
pub fn collective(c: &Collective, args: &[HostArray]) -> Option<Result<Vec<HostArray>, IrError>> {
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
