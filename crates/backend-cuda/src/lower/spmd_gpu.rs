//! `shard_map` on real GPUs: instance `rank` of a mesh runs on GPU `rank`
//! ([`run_instance`]), and a collective between instances goes through
//! NCCL ([`nccl_collective`]) when NCCL is there and the collective is one
//! of its flat-buffer forms: `psum`/`pmax`/`pmin` (and `psum_invariant`)
//! as an all-reduce, `all_gather` along dimension 0 (tiled or stacked) as
//! an all-gather, `psum_scatter` along dimension 0 as a reduce-scatter,
//! `ppermute` as send/receive pairs, `all_to_all` with `split_axis =
//! concat_axis = 0` as NCCL's all-to-all. Every other case (another
//! dimension, a group of one device, no NCCL, `axis_index`, `pvary`)
//! returns `None` and the caller runs the host definition
//! (`spmd::host_collective`), which is exact and uniform across the mesh.
//!
//! The exchange: every instance deposits its operand buffer in the mesh's
//! `jaxon_ir::spmd::Communicator` (one round), the first member of each
//! group issues the grouped NCCL call for all members' buffers on their
//! devices' streams (a communicator per group of GPUs, made once and
//! cached), and deposits the results in a second round, from which each
//! member takes its own. The decision NCCL-or-host depends only on the
//! collective, the shape, the dtype and the group size, so every instance
//! of a mesh takes the same path and the rounds match.
//!
//! Invariants: a leader that fails poisons the communicator, so no member
//! waits for results that will not come; NCCL sums in its own order, so a
//! float `psum` between GPUs may differ from the interpreter's (group
//! order) in the last bits. Nothing here has run on a GPU yet: the tests
//! run the simulator, and without a GPU every entry point is a `CudaError`.

use super::gpu::{device_at, Loaded};
use super::plan::Program;
use crate::error::{CudaError, Result};
use crate::nccl::{nccl_version, NcclComm, ReduceOp};
use crate::runtime::DeviceBuffer;
use jaxon_ir::primitive::{
    AllGatherParams, AllReduceParams, AllToAllParams, AxisRef, Collective, CollectiveOp,
    PpermuteParams, ReduceScatterParams,
};
use jaxon_ir::{DType, HostArray};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Runs one instance of a `shard_map` body on GPU `rank`.
pub(crate) fn run_instance(
    rank: usize,
    program: &Program,
    shards: Vec<HostArray>,
) -> Result<Vec<HostArray>> {
    let device = device_at(rank)?;
    Loaded::on(device, program)?.run(program, &shards)
}

/// The NCCL call a collective is, if it is one.
enum Call {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter,
    Ppermute(Vec<(usize, usize)>),
    AllToAll,
}

/// The NCCL form of `op` on an operand of `dtype[shape]`, or `None`.
fn call_of(op: &Collective, dtype: DType) -> Option<(Call, Vec<String>)> {
    // NCCL's reduction types (`nccl::wire`); bool, i16/u16 and keys take
    // the host definition.
    let reducible = matches!(
        dtype,
        DType::F16
            | DType::BF16
            | DType::F32
            | DType::F64
            | DType::I8
            | DType::U8
            | DType::I32
            | DType::U32
            | DType::I64
            | DType::U64
    );
    match op {
        Collective::AllReduce(AllReduceParams { op, axes }) if reducible => {
            let names: Option<Vec<String>> = axes
                .iter()
                .map(|a| match a {
                    AxisRef::Name(n) => Some(n.clone()),
                    AxisRef::Pos(_) => None,
                })
                .collect();
            let red = match op {
                CollectiveOp::Sum => ReduceOp::Sum,
                CollectiveOp::Max => ReduceOp::Max,
                CollectiveOp::Min => ReduceOp::Min,
            };
            Some((Call::AllReduce(red), names?))
        }
        Collective::PsumInvariant(p) if reducible => {
            Some((Call::AllReduce(ReduceOp::Sum), p.axes.clone()))
        }
        Collective::AllGather(AllGatherParams {
            axis_name,
            all_gather_dimension: 0,
            ..
        }) => Some((Call::AllGather, axis_name.clone())),
        Collective::ReduceScatter(ReduceScatterParams {
            axis_name,
            scatter_dimension: 0,
            ..
        }) if reducible => Some((Call::ReduceScatter, axis_name.clone())),
        Collective::Ppermute(PpermuteParams { axis_name, perm }) => {
            Some((Call::Ppermute(perm.clone()), axis_name.clone()))
        }
        Collective::AllToAll(AllToAllParams {
            axis_name,
            split_axis: 0,
            concat_axis: 0,
            ..
        }) => Some((Call::AllToAll, axis_name.clone())),
        Collective::AllReduce(_)
        | Collective::PsumInvariant(_)
        | Collective::AllGather(_)
        | Collective::ReduceScatter(_)
        | Collective::AllToAll(_)
        | Collective::AxisIndex(_)
        | Collective::Pvary(_) => None,
    }
}

/// The NCCL communicators made so far, by the GPUs of their group.
type Comms = Mutex<HashMap<Vec<usize>, Arc<Mutex<NcclComm>>>>;

fn comm_for(ordinals: &[usize]) -> Result<Arc<Mutex<NcclComm>>> {
    static COMMS: std::sync::OnceLock<Comms> = std::sync::OnceLock::new();
    let comms = COMMS.get_or_init(Comms::default);
    let mut map = comms.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = map.get(ordinals) {
        return Ok(c.clone());
    }
    let devices = ordinals
        .iter()
        .map(|&o| device_at(o))
        .collect::<Result<Vec<_>>>()?;
    let c = Arc::new(Mutex::new(NcclComm::for_opened(&devices)?));
    map.insert(ordinals.to_vec(), c.clone());
    Ok(c)
}

fn fail(op: &str, message: String) -> CudaError {
    CudaError::Collective {
        op: op.to_string(),
        message,
    }
}

/// What a group's leader deposits in the second round: each member's
/// result, taken once by its owner.
type Results = Mutex<Vec<Option<DeviceBuffer>>>;

/// Runs collective `op` through NCCL for this instance, whose operand is
/// `input` (`None` when the collective has no operand), or `None` when the
/// host definition should run instead (see the module header).
pub(crate) fn nccl_collective(
    op: &Collective,
    input: Option<&Arc<DeviceBuffer>>,
) -> Result<Option<DeviceBuffer>> {
    let Some(input) = input else {
        return Ok(None);
    };
    let Some((call, axes)) = call_of(op, input.dtype()) else {
        return Ok(None);
    };
    if nccl_version().is_err() {
        return Ok(None);
    }
    let refs: Vec<&str> = axes.iter().map(String::as_str).collect();
    let Some(cx) = jaxon_ir::spmd::context_for(&refs) else {
        return Ok(None);
    };
    let name = op.name();
    let err = |e: jaxon_ir::IrError| fail(name, e.to_string());
    let (ranks, me) = cx.group(name, &axes).map_err(err)?;
    if ranks.len() < 2 {
        return Ok(None);
    }
    let rank = cx.rank();
    let all = cx
        .comm
        .exchange_token(rank, input.clone() as jaxon_ir::spmd::Token)
        .map_err(err)?;
    let leader = me == 0;
    let mine: jaxon_ir::spmd::Token = if leader {
        let outcome = lead(&call, name, &ranks, &all);
        match outcome {
            Ok(v) => Arc::new(Mutex::new(v.into_iter().map(Some).collect::<Vec<_>>())),
            Err(e) => {
                cx.comm.poison(&e.to_string());
                return Err(e);
            }
        }
    } else {
        Arc::new(())
    };
    let all = cx.comm.exchange_token(rank, mine).map_err(err)?;
    let results = all
        .get(ranks[0])
        .and_then(|t| t.downcast_ref::<Results>())
        .ok_or_else(|| fail(name, format!("no results from device {}", ranks[0])))?;
    let mut slots = results.lock().unwrap_or_else(|p| p.into_inner());
    slots
        .get_mut(me)
        .and_then(Option::take)
        .map(Some)
        .ok_or_else(|| fail(name, format!("no result for member {me}")))
}

/// The leader's part: the grouped NCCL call over the members' buffers.
fn lead(
    call: &Call,
    name: &str,
    ranks: &[usize],
    all: &[jaxon_ir::spmd::Token],
) -> Result<Vec<DeviceBuffer>> {
    let mut bufs: Vec<&DeviceBuffer> = Vec::with_capacity(ranks.len());
    for &r in ranks {
        let b = all
            .get(r)
            .and_then(|t| t.downcast_ref::<DeviceBuffer>())
            .ok_or_else(|| fail(name, format!("device {r} gave no buffer")))?;
        bufs.push(b);
    }
    // Instance `r` runs on GPU `r` (`run_instance`).
    let comm = comm_for(ranks)?;
    let comm = comm.lock().unwrap_or_else(|p| p.into_inner());
    match call {
        Call::AllReduce(op) => comm.all_reduce(&bufs, *op),
        Call::AllGather => comm.all_gather(&bufs),
        Call::ReduceScatter => comm.reduce_scatter(&bufs, ReduceOp::Sum),
        Call::Ppermute(perm) => comm.ppermute(&bufs, perm),
        Call::AllToAll => comm.all_to_all(&bufs),
    }
}
