//! Scheduling of split work over threads: a splittable kernel's range in
//! chunks taken from a shared counter (`run_split`, `share_ranges`, also
//! the packed GEMM's scheduler) on the caller and `team`'s helpers. It
//! knows nothing of programs or steps.
//!
//! `unsafe` here relies on the invariant that the argument pointers of one
//! call refer to buffers outliving its scoped tasks, and that concurrent
//! chunks of a splittable kernel only read inputs and write disjoint output
//! elements (the `jit` module's invariants).

use crate::codegen::jit::KernelFn;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Work (elements) below which a kernel runs on one thread: handing a
/// chunk to another thread and waiting for it costs microseconds.
pub(crate) const PARALLEL_MIN_WORK: usize = 1 << 18;

/// The argument pointer array, shared by the threads of one call.
struct SharedPtrs(*const *mut u8);

// SAFETY: the pointers refer to buffers that outlive the scoped tasks of
// one call; concurrent kernels only read inputs and write disjoint output
// elements (splittable kernels, `jit` module invariants).
unsafe impl Send for SharedPtrs {}
// SAFETY: as above.
unsafe impl Sync for SharedPtrs {}

/// Chunks per thread a split kernel's range is cut into. Threads take
/// chunks from a shared counter until none is left, so a thread that
/// starts late or runs on a slowed core takes fewer: a static split into
/// one range per thread waits for its slowest thread.
const CHUNKS_PER_THREAD: usize = 8;

/// Runs a splittable kernel over `0..extent` on up to `threads` threads.
///
/// # Safety
/// `ptrs` holds the kernel's argument pointers (as for a direct call) and
/// the kernel is splittable.
pub(crate) unsafe fn run_split(
    entry: KernelFn,
    ptrs: *const *mut u8,
    extent: usize,
    threads: usize,
) {
    let threads = threads.clamp(1, extent.max(1));
    let shared = SharedPtrs(ptrs);
    let chunk = chunk_len(extent, threads);
    share_ranges(extent, chunk, threads, |lo, hi| {
        let p = &shared;
        // SAFETY: the caller's contract; `lo..hi` lies in `0..extent` and
        // concurrent ranges write disjoint outputs.
        unsafe { entry(p.0, lo as i64, hi as i64) }
    });
}

/// Calls `f(lo, hi)` on ranges of `chunk` indices covering `0..count`, on
/// up to `threads` threads that take ranges from a shared counter, so a
/// thread on a slowed core takes fewer. The calling thread takes ranges
/// too, with the helpers of [`team`](crate::run::team), which stay awake
/// between calls; when the team is busy (another thread's call, or a
/// call from inside one), with rayon's pool. On one thread, `f(0, count)`
/// once.
pub(crate) fn share_ranges(
    count: usize,
    chunk: usize,
    threads: usize,
    f: impl Fn(usize, usize) + Sync,
) {
    let chunk = chunk.max(1);
    let threads = threads.clamp(1, count.div_ceil(chunk).max(1));
    if threads <= 1 {
        f(0, count);
        return;
    }
    let next = AtomicUsize::new(0);
    let work = || loop {
        let lo = next.fetch_add(chunk, Ordering::Relaxed);
        if lo >= count {
            break;
        }
        f(lo, (lo + chunk).min(count));
    };
    if crate::run::team::run(threads, &work) {
        return;
    }
    rayon::in_place_scope(|s| {
        let work = &work;
        for _ in 1..threads {
            s.spawn(move |_| work());
        }
        work();
    });
}

/// The length of the chunks [`run_split`] hands out: about
/// `CHUNKS_PER_THREAD` per thread, whole multiples of 64 when that long,
/// so neighbouring chunks share no cache line of a dense output.
fn chunk_len(extent: usize, threads: usize) -> usize {
    let chunk = extent.div_ceil(threads * CHUNKS_PER_THREAD).max(1);
    if chunk > 64 {
        chunk.next_multiple_of(64)
    } else {
        chunk
    }
}
