//! The MPI transport of `jaxon::distributed` (the `mpi` feature): the
//! session (MPI's world, initialised for serialised use from any thread)
//! and the exchanges. Each exchange is a handshake, then the data:
//! - the handshake all-gathers every process's signature of the collective
//!   through a nonblocking MPI call polled against the collective timeout,
//!   so a process that does not take part is an error, not a hang;
//! - once every process has shown the same signature, the data moves in
//!   MPI's blocking collectives (Open MPI's tuned algorithms: on two local
//!   processes a 3 MiB `MPI_Iallreduce` through libnbc took 15–20 ms where
//!   the blocking `MPI_Allreduce` took 1.2–14 ms, on a loaded 2-vCPU VM).
//!   Every process then makes the same sequence of calls, decided by the
//!   agreed signature alone; a process that dies inside one ends the job
//!   through `mpirun`.
//!
//! Invariants:
//! - One session per process, held in `SESSION`; every MPI call happens
//!   under its lock (MPI_THREAD_SERIALIZED).
//! - A buffer handed to the nonblocking handshake is leaked for the call's
//!   duration (`'static`, so MPI may write it whenever it likes) and taken
//!   back only after MPI reports the call complete. On a timeout the call
//!   cannot be cancelled: its buffers stay leaked, the session is poisoned,
//!   and it is never finalized (MPI_Finalize would wait for the call).

use super::pack::{pack_all, unpack_all, Packed};
use super::plan::{stack, Kind, Plan, ReduceOp};
use super::shm::NodeSum;
use crate::{Error, Result};
use jaxon_ir::{HostArray, Storage};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::request::{Request, StaticScope};
use mpi::topology::Communicator;
use mpi::traits::*;
use mpi::Threading;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct State {
    universe: mpi::environment::Universe,
    rank: usize,
    size: usize,
    /// Why the session can no longer be used (a collective timed out).
    poisoned: Option<String>,
    /// The packed buffers of the float all-reduces, kept for the session.
    scratch: Scratch,
    /// The shared-memory sum, when every process is on this host.
    node: Option<NodeSum>,
}

/// Buffers handed to MPI's all-reduce, reused from call to call (they keep
/// the largest size seen). Open MPI's shared-memory path is far slower on
/// freshly mapped buffers: a 3.2 MiB all-reduce between two local
/// processes took 3–4 ms on new buffers and 1.1–1.9 ms on reused ones
/// (2-vCPU Zen 4 VM, 2026-11-28, machine otherwise idle).
#[derive(Default)]
struct Scratch {
    narrow: Buffers<f32>,
    wide: Buffers<f64>,
}

#[derive(Default)]
struct Buffers<T> {
    send: Vec<T>,
    recv: Vec<T>,
}

/// A packing width with its scratch buffers.
trait WithBuffers: Packed {
    fn buffers(s: &mut Scratch) -> &mut Buffers<Self>;
}

impl WithBuffers for f32 {
    fn buffers(s: &mut Scratch) -> &mut Buffers<f32> {
        &mut s.narrow
    }
}

impl WithBuffers for f64 {
    fn buffers(s: &mut Scratch) -> &mut Buffers<f64> {
        &mut s.wide
    }
}

// SAFETY: the universe is only touched under `SESSION`'s lock, and MPI is
// initialised with `Threading::Serialized`, which allows calls from any
// thread as long as they do not overlap.
unsafe impl Send for State {}

static SESSION: Mutex<Option<State>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<State>> {
    SESSION.lock().unwrap_or_else(|p| p.into_inner())
}

/// The joined group; leaving it finalizes MPI.
pub(super) struct Session;

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(mut state) = lock().take() {
            if state.poisoned.is_some() {
                // A collective is still pending: finalizing (or freeing
                // the shared window, also collective) would wait for it
                // forever. Exit without them (mpirun reports the job).
                std::mem::forget(state.node);
                std::mem::forget(state.universe);
            } else {
                // The window before MPI_Finalize.
                drop(state.node.take());
            }
        }
    }
}

pub(super) fn initialize() -> Result<Session> {
    let mut slot = lock();
    if slot.is_some() {
        return Err(Error::InvalidArgument(
            "distributed::initialize: this process has already joined its group".into(),
        ));
    }
    let (universe, level) =
        mpi::initialize_with_threading(Threading::Serialized).ok_or_else(|| {
            Error::Unsupported(
                "distributed::initialize: MPI was already initialised and finalised in this \
             process (a group can be joined once)"
                    .into(),
            )
        })?;
    if level < Threading::Serialized {
        return Err(Error::Unsupported(format!(
            "distributed::initialize: the MPI library offers thread level {level:?}, \
             jaxon needs Serialized"
        )));
    }
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    *slot = Some(State {
        universe,
        rank: usize::try_from(rank).unwrap_or(0),
        size: usize::try_from(size).unwrap_or(1),
        poisoned: None,
        scratch: Scratch::default(),
        node: NodeSum::new(&world),
    });
    tracing::debug!(rank, size, "joined the MPI world");
    Ok(Session)
}

pub(super) fn rank_and_size() -> Option<(usize, usize)> {
    lock().as_ref().map(|s| (s.rank, s.size))
}

/// A collective that did not complete in time.
struct TimedOut;

/// Polls `req` until it completes or `deadline` passes; on a timeout the
/// request is forgotten (its buffers stay leaked).
fn wait<D: ?Sized>(
    mut req: Request<'static, D, StaticScope>,
    deadline: Instant,
) -> std::result::Result<(), TimedOut> {
    let mut spins = 0u32;
    loop {
        match req.test() {
            Ok(_) => return Ok(()),
            Err(r) => req = r,
        }
        if Instant::now() >= deadline {
            std::mem::forget(req);
            return Err(TimedOut);
        }
        spins += 1;
        if spins < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// A vector leaked for a nonblocking call: `'static` references to it, and
/// the vector back once the call is complete.
struct Leaked<T: 'static>(*mut [T]);

impl<T: 'static> Leaked<T> {
    fn new(v: Vec<T>) -> Leaked<T> {
        Leaked(Box::into_raw(v.into_boxed_slice()))
    }

    /// SAFETY: no other reference to the buffer may be alive.
    unsafe fn slice(&self) -> &'static [T] {
        unsafe { &*self.0 }
    }

    /// SAFETY: no other reference to the buffer may be alive.
    unsafe fn slice_mut(&self) -> &'static mut [T] {
        unsafe { &mut *self.0 }
    }

    /// SAFETY: the call that borrowed the buffer has completed.
    unsafe fn take(self) -> Vec<T> {
        unsafe { Box::from_raw(self.0) }.into_vec()
    }
}

struct Comm<'a> {
    world: mpi::topology::SimpleCommunicator,
    deadline: Instant,
    state: &'a mut State,
}

impl Comm<'_> {
    fn timed_out(&mut self, what: &str) -> Error {
        let msg = format!(
            "distributed: {what} on process {} of {} timed out after {:?}: another process \
             did not take part (it may have died or be waiting elsewhere); this session can \
             no longer be used",
            self.state.rank,
            self.state.size,
            super::timeout()
        );
        self.state.poisoned = Some(msg.clone());
        Error::Unsupported(msg)
    }

    fn all_gather<T: Equivalence + Copy + Default + 'static>(
        &mut self,
        mine: Vec<T>,
        what: &str,
    ) -> Result<Vec<T>> {
        let n = mine.len() * self.state.size;
        let send = Leaked::new(mine);
        let recv = Leaked::new(vec![T::default(); n]);
        // SAFETY: both buffers are only reachable through these references
        // until the request completes.
        let req = unsafe {
            self.world
                .immediate_all_gather_into(StaticScope, send.slice(), recv.slice_mut())
        };
        if wait(req, self.deadline).is_err() {
            return Err(self.timed_out(what));
        }
        // SAFETY: the request completed.
        unsafe {
            drop(send.take());
            Ok(recv.take())
        }
    }

    /// Every process's `mine`, concatenated in rank order (blocking: after
    /// the handshake).
    fn all_gather_now<T: Equivalence + Copy + Default>(&mut self, mine: &[T]) -> Vec<T> {
        let mut all = vec![T::default(); mine.len() * self.state.size];
        self.world.all_gather_into(mine, &mut all[..]);
        all
    }

    /// The element-wise `op` of every process's `mine` (blocking: after the
    /// handshake).
    fn all_reduce<T: Equivalence + Copy + Default>(&mut self, mine: &[T], op: ReduceOp) -> Vec<T> {
        let mut out = vec![T::default(); mine.len()];
        self.all_reduce_into(mine, &mut out, op);
        out
    }

    /// [`Comm::all_reduce`] into `out` (of `mine`'s length).
    fn all_reduce_into<T: Equivalence>(&mut self, mine: &[T], out: &mut [T], op: ReduceOp) {
        let sys = match op {
            ReduceOp::Sum | ReduceOp::Mean => SystemOperation::sum(),
            ReduceOp::Max => SystemOperation::max(),
            ReduceOp::Min => SystemOperation::min(),
        };
        self.world.all_reduce_into(mine, out, sys);
    }

    /// `bytes` of process `root` on every process (blocking: after the
    /// handshake, which checked `root` and the length).
    fn broadcast(&mut self, mut bytes: Vec<u8>, root: usize) -> Result<Vec<u8>> {
        let root = i32::try_from(root).map_err(|_| Error::InvalidArgument("root".into()))?;
        self.world
            .process_at_rank(root)
            .broadcast_into(&mut bytes[..]);
        Ok(bytes)
    }
}

/// Runs `plan` with the other processes of the session.
pub(super) fn exchange(plan: Plan) -> Result<Vec<HostArray>> {
    let mut guard = lock();
    let state = guard.as_mut().ok_or_else(|| {
        Error::InvalidArgument("distributed: no session (call distributed::initialize)".into())
    })?;
    if let Some(why) = &state.poisoned {
        return Err(Error::Unsupported(why.clone()));
    }
    let mut comm = Comm {
        world: state.universe.world(),
        deadline: Instant::now() + super::timeout(),
        state,
    };
    agree(&mut comm, &plan)?;
    match plan.kind {
        Kind::Reduce(op) => reduce_all(&mut comm, plan.leaves, op),
        Kind::Gather => gather(&mut comm, &plan.leaves),
        Kind::Broadcast(root) => {
            let bytes: Vec<u8> = plan
                .leaves
                .iter()
                .flat_map(HostArray::to_le_bytes)
                .collect();
            let bytes = comm.broadcast(bytes, root)?;
            split(&plan.leaves, &bytes)
        }
    }
}

/// Every process's signature must equal this one's: else an error on
/// every process, naming the first that differs.
fn agree(comm: &mut Comm<'_>, plan: &Plan) -> Result<()> {
    let root = match plan.kind {
        Kind::Broadcast(r) => r as u64,
        Kind::Reduce(_) | Kind::Gather => 0,
    };
    let mine = vec![plan.signature(), plan.leaves.len() as u64, root];
    let all = comm.all_gather(mine.clone(), "the signature exchange")?;
    for (p, theirs) in all.chunks(mine.len()).enumerate() {
        if theirs != mine.as_slice() {
            return Err(Error::InvalidArgument(format!(
                "distributed: process {p} called a different collective than process {} \
                 ({} leaves, signature {:#x}; here: {}, {} leaves, signature {:#x}); every \
                 process must call the same collective on leaves of the same dtypes and shapes",
                comm.state.rank,
                theirs.get(1).copied().unwrap_or(0),
                theirs.first().copied().unwrap_or(0),
                plan.describe(),
                mine[1],
                mine[0],
            )));
        }
    }
    Ok(())
}

/// Reduces every leaf, in place. The floating and complex leaves travel
/// packed, one sum for all the f32-computed ones (f32, f16, bf16, c64) and
/// one for the f64 ones (f64, c128): through the shared window when every
/// process is on this host and the reduction is a sum, else MPI's
/// all-reduce. Other dtypes go one leaf per MPI call.
fn reduce_all(
    comm: &mut Comm<'_>,
    mut leaves: Vec<HostArray>,
    op: ReduceOp,
) -> Result<Vec<HostArray>> {
    reduce_width::<f32>(comm, &mut leaves, op);
    reduce_width::<f64>(comm, &mut leaves, op);
    for l in &mut leaves {
        let dtype = l.dtype();
        match l.data_mut() {
            Storage::Bool(v) => {
                let bytes: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
                let r = comm.all_reduce(&bytes, op);
                *v = r.into_iter().map(|b| b != 0).collect();
            }
            Storage::I8(v) => *v = comm.all_reduce(v, op),
            Storage::I16(v) => *v = comm.all_reduce(v, op),
            Storage::I32(v) => *v = comm.all_reduce(v, op),
            Storage::I64(v) => *v = comm.all_reduce(v, op),
            Storage::U8(v) => *v = comm.all_reduce(v, op),
            Storage::U16(v) => *v = comm.all_reduce(v, op),
            Storage::U32(v) => *v = comm.all_reduce(v, op),
            Storage::U64(v) => *v = comm.all_reduce(v, op),
            // Reduced packed above.
            Storage::F32(_)
            | Storage::F16(_)
            | Storage::BF16(_)
            | Storage::C64(_)
            | Storage::F64(_)
            | Storage::C128(_) => {}
            Storage::Key(_) => {
                return Err(Error::InvalidArgument(format!(
                    "distributed: key leaves ({dtype}) cannot be reduced"
                )))
            }
        }
    }
    Ok(leaves)
}

/// Reduces the leaves of width `T` (packed), in place.
fn reduce_width<T: WithBuffers>(comm: &mut Comm<'_>, leaves: &mut [HostArray], op: ReduceOp) {
    let total: usize = leaves.iter().map(T::count).sum();
    if total == 0 {
        return;
    }
    let mean_of = (op == ReduceOp::Mean).then_some(comm.state.size);
    let fill = |buf: &mut [T]| pack_all(leaves, buf);
    if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        if let Some(sum) = comm.state.node.as_mut().and_then(|n| n.sum(total, fill)) {
            unpack_all(leaves, sum, mean_of);
            return;
        }
    }
    // Taken for the call and put back after it.
    let mut b = std::mem::take(T::buffers(&mut comm.state.scratch));
    b.send.clear();
    b.send.resize(total, T::default());
    b.recv.resize(total, T::default());
    fill(&mut b.send);
    comm.all_reduce_into(&b.send, &mut b.recv, op);
    unpack_all(leaves, &b.recv, mean_of);
    *T::buffers(&mut comm.state.scratch) = b;
}

/// Every leaf's bytes from every process, stacked per leaf.
fn gather(comm: &mut Comm<'_>, leaves: &[HostArray]) -> Result<Vec<HostArray>> {
    let mine: Vec<u8> = leaves.iter().flat_map(HostArray::to_le_bytes).collect();
    let per = mine.len();
    let all = comm.all_gather_now(&mine);
    let parts: Vec<Vec<HostArray>> = (0..comm.state.size)
        .map(|p| split(leaves, all.get(p * per..(p + 1) * per).unwrap_or(&[])))
        .collect::<Result<_>>()?;
    (0..leaves.len())
        .map(|i| stack(parts.iter().map(|p| p[i].clone()).collect()))
        .collect()
}

/// `bytes` cut into arrays of the dtypes and shapes of `like`.
fn split(like: &[HostArray], bytes: &[u8]) -> Result<Vec<HostArray>> {
    let mut at = 0;
    like.iter()
        .map(|l| {
            let n = l.len() * l.dtype().size_bytes();
            let part = bytes.get(at..at + n).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "distributed: received {} bytes, expected at least {}",
                    bytes.len(),
                    at + n
                ))
            })?;
            at += n;
            Ok(HostArray::from_le_bytes(l.dtype(), l.shape(), part)?)
        })
        .collect()
}

/// The third word of a global mesh's handshake: never a broadcast root, so
/// a mesh round that meets an eager collective is a mismatch on both.
const MESH_MARK: u64 = u64::MAX - 1;

/// The session's processes as `jaxon_ir`'s global meshes see them
/// (registered by `distributed::initialize`).
pub(super) struct MeshGroup {
    pub(super) rank: usize,
    pub(super) size: usize,
}

impl jaxon_ir::spmd::ProcessGroup for MeshGroup {
    fn index(&self) -> usize {
        self.rank
    }

    fn count(&self) -> usize {
        self.size
    }

    /// The polled handshake on `[sig, length, MESH_MARK]`, then one
    /// blocking all-gather of the bytes.
    fn all_gather(&self, sig: u64, mine: &[u8]) -> std::result::Result<Vec<u8>, String> {
        let mut guard = lock();
        let state = guard
            .as_mut()
            .ok_or_else(|| "the distributed session has ended".to_string())?;
        if let Some(why) = &state.poisoned {
            return Err(why.clone());
        }
        let mut comm = Comm {
            world: state.universe.world(),
            deadline: Instant::now() + super::timeout(),
            state,
        };
        let hs = vec![sig, mine.len() as u64, MESH_MARK];
        let all = comm
            .all_gather(hs.clone(), "a global mesh's handshake")
            .map_err(|e| e.to_string())?;
        for (p, theirs) in all.chunks(hs.len()).enumerate() {
            if theirs == hs.as_slice() {
                continue;
            }
            let here = comm.state.rank;
            return Err(if theirs.first() == Some(&jaxon_ir::spmd::ABORT) {
                format!("process {p} stopped (a device program there failed; see its error)")
            } else if sig == jaxon_ir::spmd::ABORT {
                format!("process {here} stopped (a device program here failed)")
            } else if theirs.get(2) != Some(&MESH_MARK) {
                format!(
                    "process {p} called an eager distributed collective where process {here} \
                     runs a global mesh's step"
                )
            } else {
                format!(
                    "process {p} runs a different program than process {here} (signature \
                     {:#x} of {} bytes there, {sig:#x} of {} bytes here); every process must \
                     run the same program on arrays of the same dtypes and shapes",
                    theirs.first().copied().unwrap_or(0),
                    theirs.get(1).copied().unwrap_or(0),
                    mine.len()
                )
            });
        }
        if mine.is_empty() {
            return Ok(Vec::new());
        }
        Ok(comm.all_gather_now(mine))
    }
}
