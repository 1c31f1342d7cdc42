//! NCCL communicators across the processes of a session, bootstrapped over
//! MPI ([`nccl_communicator`]): process 0 makes NCCL's unique id, the
//! session broadcasts its 128 bytes, and every process joins as its rank
//! with one GPU of its own.
//!
//! Invariants:
//! - No process enters `ncclCommInitRank` unless every process is ready to:
//!   each first checks its own GPU and NCCL, the processes all-gather the
//!   outcome, and a failure anywhere is an `Err` on every process naming
//!   the processes that failed and why (NCCL's init waits for every rank,
//!   so one absent rank would hang the others).
//! - Process 0's id travels with a flag: if making it fails there, every
//!   process returns that error instead of waiting in NCCL.
//! - A group of one needs no MPI: the communicator is `ncclCommInitAll`
//!   over the one GPU.

use super::{all_gather, broadcast, process_count, process_index};
use crate::backend_cuda::nccl::{nccl_unique_id, nccl_version, NcclComm, NcclId};
use crate::backend_cuda::runtime::Device;
use crate::{Array, Error, Result};
use std::sync::Arc;

/// This process's rank of an NCCL communicator over every process of the
/// session, on GPU `device` (its ordinal on this host): rank
/// [`process_index`] of [`process_count`]. Every process must call it.
///
/// Without the session (one process) the communicator has one rank. A
/// missing GPU or NCCL on any process is an `Err` on all of them.
pub fn nccl_communicator(device: usize) -> Result<NcclComm> {
    let (rank, size) = (process_index(), process_count());
    let opened = ready(device);
    if size == 1 {
        let dev = opened?;
        return NcclComm::for_opened(&[dev]).map_err(|e| cuda_error("the communicator", e));
    }
    // Everyone's readiness, before anyone waits in NCCL.
    let mine = Array::from_vec(vec![u8::from(opened.is_ok())], &[1]);
    let all = all_gather(&mine)?.to_vec::<u8>();
    let failed: Vec<usize> = (0..size).filter(|&p| all.get(p) != Some(&1)).collect();
    let dev = match (opened, failed.is_empty()) {
        (Ok(dev), true) => dev,
        (Err(e), _) => return Err(e),
        (Ok(_), false) => {
            return Err(Error::Unsupported(format!(
                "distributed::nccl_communicator: process(es) {failed:?} of {size} have no \
                 usable GPU or NCCL (each reports why); process {rank} is ready"
            )))
        }
    };
    // Process 0's id, with a flag saying whether it could make one.
    let id_here = if rank == 0 {
        Some(nccl_unique_id().map_err(|e| cuda_error("ncclGetUniqueId", e)))
    } else {
        None
    };
    let mut bytes = vec![0u8; 129];
    if let Some(Ok(id)) = &id_here {
        bytes[0] = 1;
        bytes[1..].copy_from_slice(id.as_bytes());
    }
    let bytes = broadcast(&Array::from_vec(bytes, &[129]), 0)?.to_vec::<u8>();
    if let Some(Err(e)) = id_here {
        return Err(e);
    }
    if bytes.first() != Some(&1) {
        return Err(Error::Unsupported(
            "distributed::nccl_communicator: process 0 could not make NCCL's unique id \
             (its error says why)"
                .into(),
        ));
    }
    let id = NcclId::from_bytes(&bytes[1..]).map_err(|e| cuda_error("the unique id", e))?;
    NcclComm::from_unique_id(&dev, &id, rank, size).map_err(|e| cuda_error("ncclCommInitRank", e))
}

/// GPU `device` opened, and NCCL loaded, on this process.
fn ready(device: usize) -> Result<Arc<Device>> {
    let dev = Device::open(device).map_err(|e| cuda_error("opening the GPU", e))?;
    nccl_version().map_err(|e| cuda_error("loading NCCL", e))?;
    Ok(dev)
}

fn cuda_error(what: &str, e: crate::backend_cuda::CudaError) -> Error {
    Error::Unsupported(format!(
        "distributed::nccl_communicator on process {} of {}: {what}: {e}",
        process_index(),
        process_count()
    ))
}
