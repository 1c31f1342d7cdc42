//! `jax.distributed`: one program on many processes (SPMD), joined through
//! MPI, with collectives over the processes for pytrees of arrays.
//!
//! ```no_run
//! # fn main() -> jaxon::Result<()> {
//! use jaxon::prelude::*;
//! use jaxon::distributed;
//!
//! // Started as `mpirun -np 2 ./train`: every process runs this.
//! let _session = distributed::initialize()?;
//! let (me, n) = (distributed::process_index(), distributed::process_count());
//! let local_grad = Array::from_vec(vec![me as f32; 4], &[4]);
//! // The mean over the processes, the same on each.
//! let grad = distributed::pmean(&local_grad)?;
//! assert_eq!(grad.to_vec::<f32>(), vec![(n as f32 - 1.0) / 2.0; 4]);
//! # Ok(()) }
//! ```
//!
//! The transport is Open MPI through the `mpi` crate, behind this crate's
//! `mpi` feature, so a default build needs no MPI. Without the feature, or
//! before [`initialize`], there is one process: [`process_count`] is 1 and
//! every collective returns its input's values.
//!
//! A session also makes every process's devices one global mesh: a
//! `shard_map` over more devices than this process has runs this process's
//! instances, and its collectives cross processes (`jaxon_ir::spmd`'s
//! `ProcessGroup`, registered here; see `docs/distributed.md`).
//!
//! Invariants:
//! - Every collective is collective: each process calls it with a pytree of
//!   the same structure, dtypes and shapes. Before moving data, the
//!   processes exchange a signature (the operation and a hash of every
//!   leaf's dtype and shape); a mismatch is an `Err` on every process,
//!   naming the first process that differs, never a hang or corrupt data.
//! - No collective waits forever: a process that does not take part within
//!   [`timeout`] (default 300 s, `JAXON_COLLECTIVE_TIMEOUT_S` seconds, or
//!   [`set_timeout`]) makes the others' call an `Err`. The session is then
//!   unusable (MPI cannot cancel a collective), and every later collective
//!   returns the same error.
//! - Results are deterministic and equal on every process: sums through
//!   the shared window (`shm.rs`, processes on one host) add in process
//!   order, MPI's reductions in rank order.

#[cfg(feature = "mpi")]
mod pack;
#[cfg(feature = "mpi")]
mod shm;
#[cfg(feature = "mpi")]
mod transport;
#[cfg(not(feature = "mpi"))]
mod transport {
    //! The stand-in transport of a build without the `mpi` feature.
    use crate::{Error, Result};

    pub(super) struct Session;

    pub(super) fn initialize() -> Result<Session> {
        Err(Error::Unsupported(
            "jaxon::distributed::initialize: this build has no MPI; enable jaxon's `mpi` \
             feature (it needs Open MPI: Debian's libopenmpi-dev and openmpi-bin)"
                .into(),
        ))
    }

    pub(super) fn rank_and_size() -> Option<(usize, usize)> {
        None
    }

    pub(super) fn exchange(_: super::Plan) -> Result<Vec<jaxon_ir::HostArray>> {
        Err(Error::Unsupported(
            "jaxon::distributed: this build has no MPI".into(),
        ))
    }
}
mod nccl;
mod plan;

pub use nccl::nccl_communicator;

use crate::{Array, Error, Pytree, Result};
use plan::{Plan, ReduceOp};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A joined group of processes. Dropping it leaves the group
/// (`jax.distributed.shutdown`); keep it alive while collectives run.
#[must_use = "dropping the session leaves the process group at once"]
pub struct Session {
    _inner: transport::Session,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "distributed::Session(process {} of {})",
            process_index(),
            process_count()
        )
    }
}

/// Joins the processes started together by `mpirun` (MPI's world), like
/// `jax.distributed.initialize()`. A process started alone forms a group
/// of one. Calling it while a session is alive is an error, and so is a
/// build without the `mpi` feature.
pub fn initialize() -> Result<Session> {
    let inner = transport::initialize()?;
    register();
    Ok(Session { _inner: inner })
}

/// Makes the session's processes the group of global meshes
/// (`jaxon_ir::spmd::ProcessGroup`): a `shard_map` over more devices than
/// this process has spans every process's devices.
#[cfg(feature = "mpi")]
fn register() {
    if let Some((rank, size)) = transport::rank_and_size() {
        jaxon_ir::spmd::set_process_group(Some(std::sync::Arc::new(transport::MeshGroup {
            rank,
            size,
        })));
    }
}

#[cfg(not(feature = "mpi"))]
fn register() {}

impl Drop for Session {
    fn drop(&mut self) {
        jaxon_ir::spmd::set_process_group(None);
    }
}

/// This process's index in the group (`jax.process_index()`): 0 when no
/// session is alive.
pub fn process_index() -> usize {
    transport::rank_and_size().map_or(0, |(r, _)| r)
}

/// How many processes the group has (`jax.process_count()`): 1 when no
/// session is alive.
pub fn process_count() -> usize {
    transport::rank_and_size().map_or(1, |(_, n)| n)
}

static TIMEOUT_MS: AtomicU64 = AtomicU64::new(0);

/// How long a collective waits for the other processes before it fails.
pub fn timeout() -> Duration {
    match TIMEOUT_MS.load(Ordering::Relaxed) {
        0 => std::env::var("JAXON_COLLECTIVE_TIMEOUT_S")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(Duration::from_secs(300), Duration::from_secs_f64),
        ms => Duration::from_millis(ms),
    }
}

/// Sets [`timeout`] for this process (at least 1 ms).
pub fn set_timeout(t: Duration) {
    let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1);
    TIMEOUT_MS.store(ms, Ordering::Relaxed);
}

/// The sum over the processes of every leaf (`psum` over all processes).
/// Bool and key leaves are an error.
pub fn psum<T: Pytree>(tree: &T) -> Result<T> {
    reduce(tree, ReduceOp::Sum, "psum")
}

/// The mean over the processes of every leaf (`pmean`): the sum divided by
/// [`process_count`], in the leaf's dtype. Leaves must be floating or
/// complex.
pub fn pmean<T: Pytree>(tree: &T) -> Result<T> {
    reduce(tree, ReduceOp::Mean, "pmean")
}

/// The elementwise maximum over the processes of every leaf (`pmax`).
pub fn pmax<T: Pytree>(tree: &T) -> Result<T> {
    reduce(tree, ReduceOp::Max, "pmax")
}

/// The elementwise minimum over the processes of every leaf (`pmin`).
pub fn pmin<T: Pytree>(tree: &T) -> Result<T> {
    reduce(tree, ReduceOp::Min, "pmin")
}

/// Every process's leaf, stacked along a new leading axis in process order
/// (`all_gather(x, tiled=False)`): a leaf of shape `s` becomes
/// `[process_count, *s]`.
pub fn all_gather<T: Pytree>(tree: &T) -> Result<T> {
    let (leaves, def) = tree.flatten();
    let hosts = hosts(&leaves, "all_gather")?;
    let out = run(Plan::gather(hosts))?;
    T::unflatten(&def, out.into_iter().map(Array::from_host).collect())
}

/// Process `root`'s leaves, on every process (`broadcast_one_to_all`): for
/// parameters initialised on one process.
pub fn broadcast<T: Pytree>(tree: &T, root: usize) -> Result<T> {
    let n = process_count();
    if root >= n {
        return Err(Error::InvalidArgument(format!(
            "distributed::broadcast: root process {root} is not one of the {n} processes"
        )));
    }
    let (leaves, def) = tree.flatten();
    let hosts = hosts(&leaves, "broadcast")?;
    let out = run(Plan::broadcast(hosts, root))?;
    T::unflatten(&def, out.into_iter().map(Array::from_host).collect())
}

fn reduce<T: Pytree>(tree: &T, op: ReduceOp, name: &str) -> Result<T> {
    let (leaves, def) = tree.flatten();
    T::unflatten(&def, reduce_leaves(&leaves, op, name)?)
}

fn reduce_leaves(leaves: &[Array], op: ReduceOp, name: &str) -> Result<Vec<Array>> {
    let hosts = hosts(leaves, name)?;
    for h in &hosts {
        op.check(h.dtype(), name)?;
    }
    let out = run(Plan::reduce(hosts, op))?;
    Ok(out.into_iter().map(Array::from_host).collect())
}

/// The leaves' host values; a tracer is an error (these collectives run
/// between staged programs, on concrete values).
fn hosts(leaves: &[Array], name: &str) -> Result<Vec<jaxon_ir::HostArray>> {
    leaves
        .iter()
        .map(|l| l.try_to_host(&format!("distributed::{name}")))
        .collect()
}

/// Runs a plan: locally when there is one process, else through MPI.
fn run(plan: Plan) -> Result<Vec<jaxon_ir::HostArray>> {
    match transport::rank_and_size() {
        None | Some((_, 1)) => plan.alone(),
        Some(_) => transport::exchange(plan),
    }
}
