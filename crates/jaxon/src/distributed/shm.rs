//! Sums over the processes of one host through an MPI-3 shared-memory
//! window (`MPI_Win_allocate_shared` on the node communicator): each
//! process writes its packed buffer into its own segment, then sums its
//! share of the elements over every segment in process order into process
//! 0's result area, which every process then reads. On two local processes
//! this moves each byte about half as often as Open MPI's shared-memory
//! all-reduce (3.2 MiB: see `docs/distributed.md`).
//!
//! Invariants:
//! - Used only when every process of the world shares this host, only
//!   after the handshake (so every process asks for a sum of the same
//!   length and dtype), and only under the session's lock.
//! - The window is locked for the session (`MPI_Win_lock_all`); each phase
//!   ends with `MPI_Win_sync`, a barrier and `MPI_Win_sync` (MPI-3's
//!   unified memory model), so a phase's stores are seen by every process
//!   in the next. Within a phase, a process writes only its own input
//!   segment (phase 1) or its own element range of the result (phase 2).
//! - A sum returned to the caller stays valid until the next call: the
//!   next call's first barrier is only passed once every process has
//!   finished reading it.
//! - Element `i` of the result is `((x₀ + x₁) + x₂) + …` in process order
//!   on every process, so every process gets the same bits.
//! - The window grows collectively (every process needs the same size) and
//!   only when `/dev/shm` has room for it on every process; otherwise the
//!   caller falls back to MPI's all-reduce.

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use std::ops::Add;

/// The element types summed here.
pub(super) trait Summable: Copy + Add<Output = Self> + mpi::datatype::Equivalence {}
impl Summable for f32 {}
impl Summable for f64 {}

/// The processes of this host, with their shared window.
pub(super) struct NodeSum {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
    win: Option<Window>,
}

struct Window {
    raw: ffi::MPI_Win,
    /// Bytes of each process's input segment (a multiple of 64).
    cap: usize,
    /// Each process's segment (process 0's holds the result after its
    /// input).
    bases: Vec<*mut u8>,
}

/// Bytes of the first window: the window then doubles as needed.
const FIRST_CAP: usize = 1 << 20;

impl NodeSum {
    /// The node group, when the world has several processes and all of
    /// them share this host (a collective call over `world`).
    pub(super) fn new(world: &SimpleCommunicator) -> Option<NodeSum> {
        let comm = world.split_shared(0);
        let on_one_host = comm.size() == world.size() && world.size() > 1;
        let off = std::env::var("JAXON_DISTRIBUTED_SHM").is_ok_and(|v| v == "0");
        (on_one_host && !off).then(|| NodeSum {
            rank: usize::try_from(comm.rank()).unwrap_or(0),
            size: usize::try_from(comm.size()).unwrap_or(1),
            comm,
            win: None,
        })
    }

    /// The element-wise sum over the processes of the `n` elements that
    /// `fill` writes (every process must call this with the same `n`);
    /// `None` when the window cannot hold them (the caller then uses MPI's
    /// all-reduce; every process decides alike).
    pub(super) fn sum<T: Summable>(
        &mut self,
        n: usize,
        fill: impl FnOnce(&mut [T]),
    ) -> Option<&[T]> {
        let bytes = n.checked_mul(std::mem::size_of::<T>())?;
        if !self.reserve(bytes) {
            return None;
        }
        let (rank, size) = (self.rank, self.size);
        let w = self.win.as_ref()?;
        let aligned = w
            .bases
            .iter()
            .all(|b| (*b as usize).is_multiple_of(std::mem::align_of::<T>()));
        if !aligned {
            // Every process sees the same bases (`MPI_Win_shared_query`).
            return None;
        }
        // SAFETY: every segment holds at least `cap >= bytes` bytes,
        // aligned for `T`, and process 0's `2·cap`; in this phase only
        // this process touches its own segment.
        let mine = unsafe { std::slice::from_raw_parts_mut(w.bases[rank].cast::<T>(), n) };
        fill(mine);
        self.phase();
        let w = self.win.as_ref()?;
        let lo = n * rank / size;
        let hi = n * (rank + 1) / size;
        // SAFETY: in this phase the input segments are only read, and this
        // process alone writes `result[lo..hi]`, which lies inside process
        // 0's second `cap` bytes.
        unsafe {
            let input =
                |p: usize| std::slice::from_raw_parts(w.bases[p].cast::<T>().add(lo), hi - lo);
            let out =
                std::slice::from_raw_parts_mut(w.bases[0].add(w.cap).cast::<T>().add(lo), hi - lo);
            out.copy_from_slice(input(0));
            for p in 1..size {
                for (o, x) in out.iter_mut().zip(input(p)) {
                    *o = *o + *x;
                }
            }
        }
        self.phase();
        let w = self.win.as_ref()?;
        // SAFETY: the result is complete (every process passed the
        // barrier) and nobody writes it before every process has entered
        // the next call's first phase.
        Some(unsafe { std::slice::from_raw_parts(w.bases[0].add(w.cap).cast::<T>(), n) })
    }

    /// Ends a phase: this process's stores are visible to all, and theirs
    /// to it.
    fn phase(&self) {
        if let Some(w) = &self.win {
            // SAFETY: the window is live and locked for the session.
            unsafe { ffi::MPI_Win_sync(w.raw) };
        }
        self.comm.barrier();
        if let Some(w) = &self.win {
            // SAFETY: as above.
            unsafe { ffi::MPI_Win_sync(w.raw) };
        }
    }

    /// Makes the window hold `bytes` per process; `false` when it cannot
    /// (not enough room in `/dev/shm` on some process).
    fn reserve(&mut self, bytes: usize) -> bool {
        if self.win.as_ref().is_some_and(|w| w.cap >= bytes) {
            return true;
        }
        let Some(cap) = bytes
            .max(FIRST_CAP)
            .checked_next_power_of_two()
            .filter(|c| *c <= isize::MAX as usize / (self.size + 1))
        else {
            return false;
        };
        // Every process must agree: a window larger than the free shared
        // memory would fault when touched.
        let room = shm_free().is_some_and(|free| free / 2 >= cap * (self.size + 1));
        let mut all = 0u8;
        self.comm.all_reduce_into(
            &u8::from(room),
            &mut all,
            mpi::collective::SystemOperation::min(),
        );
        if all == 0 {
            return false;
        }
        self.free();
        let mine = if self.rank == 0 { 2 * cap } else { cap };
        let mut base: *mut u8 = std::ptr::null_mut();
        let mut raw: ffi::MPI_Win = unsafe { ffi::RSMPI_WIN_NULL };
        // SAFETY: a collective call over the node communicator with valid
        // out-pointers; MPI's default error handler aborts on failure.
        let rc = unsafe {
            ffi::MPI_Win_allocate_shared(
                mine as ffi::MPI_Aint,
                1,
                ffi::RSMPI_INFO_NULL,
                self.comm.as_raw(),
                (&mut base as *mut *mut u8).cast(),
                &mut raw,
            )
        };
        if rc != ffi::MPI_SUCCESS as i32 {
            return false;
        }
        let mut bases = Vec::with_capacity(self.size);
        for p in 0..self.size {
            let (mut len, mut unit, mut b): (ffi::MPI_Aint, i32, *mut u8) =
                (0, 0, std::ptr::null_mut());
            // SAFETY: `raw` is a shared window over this communicator and
            // `p` one of its ranks.
            unsafe {
                ffi::MPI_Win_shared_query(
                    raw,
                    p as i32,
                    &mut len,
                    &mut unit,
                    (&mut b as *mut *mut u8).cast(),
                )
            };
            bases.push(b);
        }
        // SAFETY: a fresh window, locked once for the session.
        unsafe { ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as i32, raw) };
        self.win = Some(Window { raw, cap, bases });
        true
    }

    /// Frees the window (collective).
    fn free(&mut self) {
        if let Some(mut w) = self.win.take() {
            // SAFETY: the window is live and locked; every process frees it
            // at the same point (a reserve or the session's end).
            unsafe {
                ffi::MPI_Win_unlock_all(w.raw);
                ffi::MPI_Win_free(&mut w.raw);
            }
        }
    }
}

impl Drop for NodeSum {
    fn drop(&mut self) {
        self.free();
    }
}

/// Bytes free in `/dev/shm`, where Open MPI backs shared windows.
fn shm_free() -> Option<usize> {
    let path = std::ffi::CString::new("/dev/shm").ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a valid out-pointer.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| (st.f_bavail as usize).saturating_mul(st.f_frsize as usize))
}
