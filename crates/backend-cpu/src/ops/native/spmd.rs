//! SPMD on the CPU devices of one process: `shard_map` and the mesh
//! collectives as native steps.
//!
//! [`ShardMapOp`] holds its body compiled once (`plan::spmd`) and runs one
//! instance of it per device of the mesh, each on its own thread inside
//! its device context (`jaxon_ir::spmd`: the split by `in_specs`, the
//! threads, the poisoning on failure and the assembly by `out_specs` are
//! the interpreter's code), with an equal share of the step's threads.
//!
//! [`MeshCollective`] exchanges through the communicator of the running
//! instance (shared memory). `psum` of f32/f64 runs on the step's buffers
//! (`run_raw`): every device deposits the addresses of its operand and
//! result, sums its 1/n chunk of the group's operands (in group order, as
//! the interpreter does) and writes it into every group member's result,
//! then waits at a barrier; so each byte is read once and written once,
//! with no copies. Every other collective is `jaxon_ir::spmd::collective`
//! on copies (one exchange of the arrays). Outside a `shard_map` naming its
//! axes a collective is the interpreter's: a positional `psum` reduces, a
//! named axis is an error naming it.
//!
//! Invariants (the `unsafe` below): a device reads another's operand and
//! writes another's result only between the address exchange and the
//! barrier that follows it; both devices are inside the same step then,
//! so the buffers are alive, the operands are not written and the results
//! not read by their owners. Result ranges written by different devices
//! are disjoint (each writes its own chunk).

use super::{NativeOp, RawArg};
use crate::run::executable::CpuExecutable;
use jaxon_ir::primitive::{
    AllReduceParams, AxisRef, Collective, CollectiveOp, Mesh, PartitionSpec, Primitive,
};
use jaxon_ir::spmd::{context_for, Token};
use jaxon_ir::{DType, HostArray, IrError};
use std::sync::Arc;

/// A `shard_map` with its body compiled.
pub(crate) struct ShardMapOp {
    body: CpuExecutable,
    mesh: Mesh,
    in_specs: Vec<PartitionSpec>,
    out_specs: Vec<PartitionSpec>,
}

impl std::fmt::Debug for ShardMapOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardMapOp")
            .field("mesh", &self.mesh)
            .field("in_specs", &self.in_specs)
            .field("out_specs", &self.out_specs)
            .finish_non_exhaustive()
    }
}

impl ShardMapOp {
    /// The op running `body` over `mesh`.
    pub(crate) fn new(
        body: CpuExecutable,
        mesh: Mesh,
        in_specs: Vec<PartitionSpec>,
        out_specs: Vec<PartitionSpec>,
    ) -> ShardMapOp {
        ShardMapOp {
            body,
            mesh,
            in_specs,
            out_specs,
        }
    }
}

impl NativeOp for ShardMapOp {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        // Each device gets an equal share of the threads; on one thread
        // per device no parallel region opens, and a device that opens one
        // never waits in it for another device (collectives run between
        // steps, on the device's own thread).
        let per_device = (threads / self.mesh.size().max(1)).max(1);
        jaxon_ir::spmd::shard_map(
            &self.mesh,
            &self.in_specs,
            &self.out_specs,
            inputs,
            |mine| {
                let args: Vec<&HostArray> = mine.iter().collect();
                self.body
                    .run_threads(&args, per_device)?
                    .iter()
                    .map(|b| b.to_host())
                    .collect()
            },
        )
    }
}

/// A mesh collective.
#[derive(Debug)]
pub(crate) struct MeshCollective {
    c: Collective,
    /// The named axes of a `psum` that may run on the step's buffers.
    sum_axes: Option<Vec<String>>,
}

impl MeshCollective {
    /// The op of collective `c` on operands of shapes `ins`.
    pub(crate) fn new(c: &Collective, ins: &[Vec<usize>]) -> MeshCollective {
        let sum_axes = match c {
            Collective::AllReduce(AllReduceParams {
                op: CollectiveOp::Sum,
                axes,
            }) if ins.len() == 1 && !axes.is_empty() => axes
                .iter()
                .map(|a| match a {
                    AxisRef::Name(n) => Some(n.clone()),
                    AxisRef::Pos(_) => None,
                })
                .collect(),
            _ => None,
        };
        MeshCollective {
            c: c.clone(),
            sum_axes,
        }
    }
}

impl NativeOp for MeshCollective {
    fn run(&self, inputs: &[&HostArray], _threads: usize) -> Result<Vec<HostArray>, IrError> {
        let owned: Vec<HostArray> = inputs.iter().map(|a| (*a).clone()).collect();
        jaxon_ir::interp::ops::eval_op(&Primitive::Collective(self.c.clone()), &owned)
    }

    unsafe fn run_raw(&self, ins: &[RawArg<'_>], outs: &[RawArg<'_>]) -> Option<Result<(), IrError>> {
        let axes = self.sum_axes.as_ref()?;
        let ([x], [y]) = (ins, outs) else {
            return None;
        };
        if x.dtype != y.dtype || x.shape != y.shape || !matches!(x.dtype, DType::F32 | DType::F64)
        {
            return None;
        }
        let refs: Vec<&str> = axes.iter().map(String::as_str).collect();
        // Outside a `shard_map` naming the axes: the generic path's error.
        let cx = context_for(&refs)?;
        let len: usize = x.shape.iter().product();
        // SAFETY: the caller's contract (`x` and `y` hold `len` elements of
        // their dtype, not aliasing); the module invariants for the peers'.
        Some(unsafe { psum_raw(&cx, axes, x.dtype, x.ptr, y.ptr, len) })
    }
}

/// What a device deposits for a `psum` on buffers.
struct SumBufs {
    dtype: DType,
    len: usize,
    src: usize,
    dst: usize,
}

/// Elements summed per block: the block of the first result stays in
/// cache while it is copied to the others.
const BLOCK: usize = 1 << 14;

/// `psum` over `axes` of `len` elements at `src` into `dst`: a
/// reduce-scatter into every group member's result.
///
/// # Safety
/// `src` and `dst` hold `len` elements of `dtype` and do not overlap; the
/// module invariants.
unsafe fn psum_raw(
    cx: &jaxon_ir::spmd::DeviceContext,
    axes: &[String],
    dtype: DType,
    src: *mut u8,
    dst: *mut u8,
    len: usize,
) -> Result<(), IrError> {
    let (ranks, me) = cx.group("psum", axes)?;
    let rank = cx.rank();
    let mine: Token = Arc::new(SumBufs {
        dtype,
        len,
        src: src as usize,
        dst: dst as usize,
    });
    let all = cx.comm.exchange_token(rank, mine)?;
    let mut group: Vec<&SumBufs> = Vec::with_capacity(ranks.len());
    let mut bad = None;
    for &r in &ranks {
        match all.get(r).and_then(|t| t.downcast_ref::<SumBufs>()) {
            Some(b) if b.dtype == dtype && b.len == len => group.push(b),
            _ => bad = Some(r),
        }
    }
    if let Some(r) = bad {
        let why = format!("psum: device {r} did not reach the same psum (dtype {dtype}, {len} elements)");
        cx.comm.poison(&why);
        return Err(IrError::Eval(why));
    }
    let g = group.len();
    let (lo, hi) = (me * len / g, (me + 1) * len / g);
    match dtype {
        // SAFETY: the function's contract: every member's buffers hold
        // `len` elements of `dtype`; the chunk `lo..hi` is this device's.
        DType::F32 => unsafe { sum_chunk::<f32>(&group, lo, hi) },
        // SAFETY: as above.
        DType::F64 => unsafe { sum_chunk::<f64>(&group, lo, hi) },
        _ => return Err(IrError::Eval(format!("psum: no buffer path for {dtype}"))),
    }
    cx.comm.barrier(rank)
}

/// Sums elements `lo..hi` of every member's operand, in group order, into
/// every member's result.
///
/// # Safety
/// Every member's `src` and `dst` hold at least `hi` elements of `T`, the
/// range `lo..hi` of the results is written by no one else meanwhile, and
/// no operand is written (module invariants).
unsafe fn sum_chunk<T: Copy + std::ops::Add<Output = T>>(group: &[&SumBufs], lo: usize, hi: usize) {
    let Some((first, rest)) = group.split_first() else {
        return;
    };
    let mut start = lo;
    while start < hi {
        let n = BLOCK.min(hi - start);
        // SAFETY: `start..start + n` lies in `lo..hi` (the contract).
        let acc = unsafe { std::slice::from_raw_parts_mut((first.dst as *mut T).add(start), n) };
        // SAFETY: as above; operands are only read.
        let s0 = unsafe { std::slice::from_raw_parts((first.src as *const T).add(start), n) };
        acc.copy_from_slice(s0);
        for m in rest {
            // SAFETY: as above.
            let s = unsafe { std::slice::from_raw_parts((m.src as *const T).add(start), n) };
            for (a, b) in acc.iter_mut().zip(s) {
                *a = *a + *b;
            }
        }
        for m in rest {
            // SAFETY: as above; results of different members are distinct
            // buffers.
            let d = unsafe { std::slice::from_raw_parts_mut((m.dst as *mut T).add(start), n) };
            d.copy_from_slice(acc);
        }
        start += n;
    }
}
