//! The native side of a running program: the context a program function
//! receives, the `extern "C"` trampolines it calls for work that is not
//! generated code (threaded kernels, GEMM, other native steps), and the one
//! call into a program function.
//!
//! `unsafe` here relies on these invariants:
//! - A program function is only called (in [`call_program`]) with an `io`
//!   table holding one pointer per program input, constant and output
//!   buffer, each to at least the bytes of its compiled type (the caller
//!   checks argument types), and an arena of at least the program's planned
//!   size, aligned to 64 bytes; the generated code only touches those
//!   buffers, the arena, and the program's own constant pool.
//! - The `ctx` pointer a trampoline receives is the [`RunCtx`] built by
//!   [`call_program`], alive for the whole call; the indices it passes were
//!   emitted from the same program's tables, so they are in range.
//! - The pointer tables a trampoline receives hold, per operand and result,
//!   a pointer to at least the bytes of its compiled type; results never
//!   alias operands (the memory plan keeps live values apart).
//! - Panics never unwind into generated code: each trampoline catches them
//!   and records an error in the context, which the caller returns.

use crate::error::run_error;
use crate::exec::Program;
use crate::jit::{KernelFn, ProgramFn};
use jaxon_ir::{with_storage, DType, HostArray, IrError, Storage};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a program function may reach while it runs.
pub(crate) struct RunCtx<'a> {
    pub program: &'a Program,
    pub threads: usize,
    /// The first error a trampoline hit.
    pub error: Mutex<Option<IrError>>,
}

impl RunCtx<'_> {
    fn fail(&self, e: IrError) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
    }
}

/// Calls a program function. See the module invariants.
pub(crate) fn call_program(
    f: ProgramFn,
    io: &[*mut u8],
    arena: &mut [u64],
    ctx: &RunCtx,
) -> Result<(), IrError> {
    let need = ctx.program.arena_bytes;
    if arena.len() * 8 < need || io.len() != ctx.program.io_len() {
        return Err(run_error("program called with a bad frame"));
    }
    // SAFETY: module invariants: the io pointers and arena were sized by
    // the caller from the program's compiled types and memory plan
    // (checked above); `ctx` outlives the call.
    unsafe {
        f(
            io.as_ptr(),
            arena.as_mut_ptr().cast::<u8>(),
            ctx as *const RunCtx,
        )
    };
    match ctx.error.lock() {
        Ok(mut e) => e.take().map_or(Ok(()), Err),
        Err(_) => Err(run_error("a native step panicked")),
    }
}

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
/// too, with the helpers of [`team`](crate::team), which stay awake
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
    if crate::team::run(threads, &work) {
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

/// Runs a large splittable kernel of the program on the context's threads.
pub(crate) extern "C" fn tramp_par_kernel(ctx: *const RunCtx, k: u64, ptrs: *const *mut u8) {
    // SAFETY: module invariants (`ctx` is live during the call).
    let ctx = unsafe { &*ctx };
    let Some(kernel) = ctx.program.par_kernels.get(k as usize) else {
        ctx.fail(run_error("bad kernel index"));
        return;
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `ptrs` holds this kernel's arguments (module invariants)
        // and only splittable kernels are registered as parallel.
        let threads = if kernel.splittable() { ctx.threads } else { 1 };
        unsafe { run_split(kernel.entry(), ptrs, kernel.extent(), threads) }
    }));
    if r.is_err() {
        ctx.fail(run_error("a kernel thread panicked"));
    }
}

/// Runs `dot_general` number `k` of the program: `ptrs = [lhs, rhs, out]`.
pub(crate) extern "C" fn tramp_dot(ctx: *const RunCtx, k: u64, ptrs: *const *mut u8) {
    // SAFETY: module invariants.
    let ctx = unsafe { &*ctx };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let plan = ctx
            .program
            .dots
            .get(k as usize)
            .ok_or_else(|| run_error("bad dot index"))?;
        // SAFETY: three pointers to the operands and the result, each of
        // its compiled size; the result does not alias the operands.
        let (l, r, o) = unsafe { (*ptrs, *ptrs.add(1), *ptrs.add(2)) };
        plan.run_raw(l, r, o, ctx.threads)
    }));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctx.fail(e),
        Err(_) => ctx.fail(run_error("dot_general panicked")),
    }
}

/// Runs native step `k` of the program on copies of its operands:
/// `ptrs = [operands..., results...]`.
pub(crate) extern "C" fn tramp_step(ctx: *const RunCtx, k: u64, ptrs: *const *mut u8) {
    // SAFETY: module invariants.
    let ctx = unsafe { &*ctx };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let call = ctx
            .program
            .steps
            .get(k as usize)
            .ok_or_else(|| run_error("bad step index"))?;
        let n = call.ins.len() + call.outs.len();
        // SAFETY: the table holds one pointer per operand and result.
        let table = unsafe { std::slice::from_raw_parts(ptrs, n) };
        // SAFETY: the table's pointers are the step's planned buffers
        // (module invariants).
        if let Some(done) = unsafe { crate::native::run_step_raw(call, table, ctx.threads) } {
            return done;
        }
        let ins = call
            .ins
            .iter()
            .zip(table)
            .map(|((_, dt, shape), &p)| {
                // SAFETY: `p` points to a value of this type (module
                // invariants).
                unsafe { read_array(p, *dt, shape) }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outs = crate::exec::run_step_call(call, ins, ctx.threads)?;
        for ((a, (_, dt, shape)), &p) in outs.iter().zip(&call.outs).zip(&table[call.ins.len()..]) {
            if a.dtype() != *dt || a.shape() != shape.as_slice() {
                return Err(run_error(format!(
                    "a native step returned {:?} where {dt}{shape:?} was planned",
                    a.aval()
                )));
            }
            // SAFETY: `p` points to room for a value of this type, not
            // aliasing anything read here (module invariants).
            unsafe { write_array(a, p) };
        }
        Ok(())
    }));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctx.fail(e),
        Err(_) => ctx.fail(run_error("a native step panicked")),
    }
}

/// A copy of the array of `dt` and `shape` at `p`.
///
/// # Safety
/// `p` points to `shape.product()` initialised elements of `dt`, aligned
/// for it.
pub(crate) unsafe fn read_array(
    p: *const u8,
    dt: DType,
    shape: &[usize],
) -> Result<HostArray, IrError> {
    let n: usize = shape.iter().product();
    // Not zeroed first: every element is copied in.
    let mut s = Storage::zeros(dt, 0);
    with_storage!(&mut s, v => {
        v.reserve_exact(n);
        // SAFETY: the caller's contract: `p` holds `n` initialised elements
        // of `dt` (valid values of the element type); `v` has room for `n`,
        // all of which are initialised by the copy before `set_len`.
        unsafe {
            std::ptr::copy_nonoverlapping(p.cast(), v.as_mut_ptr(), n);
            v.set_len(n);
        }
    });
    HostArray::new(shape.to_vec(), s)
}

/// Copies `a`'s elements to `p`.
///
/// # Safety
/// `p` has room for `a.len()` elements of its dtype and does not overlap
/// `a`.
unsafe fn write_array(a: &HostArray, p: *mut u8) {
    with_storage!(a.data(), v => {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p.cast(), v.len()) }
    });
}

/// Runs kernel `entry` of a flat run (`dynamic::flat`) over `0..n`.
/// `inputs` are the kernel's inputs with the dtype it was compiled for and
/// whether it reads them whole (stride 1) or as a scalar (stride 0); the
/// output is whole, or a scalar for a reduction. Everything the kernel's
/// memory accesses rely on is checked here first.
pub(crate) fn run_flat_kernel(
    kernel: &crate::jit::Kernel,
    inputs: &[(&HostArray, DType, bool)],
    out: &mut HostArray,
    reduce: bool,
    n: usize,
    threads: usize,
) -> Result<(), IrError> {
    let bad = |what: String| Err(run_error(format!("flat kernel: {what}")));
    for (k, (a, dt, full)) in inputs.iter().enumerate() {
        let want = if *full { n } else { 1 };
        if a.dtype() != *dt || a.len() != want {
            return bad(format!(
                "input {k} is {}{:?}, expected {dt} with {want} elements",
                a.dtype(),
                a.shape()
            ));
        }
    }
    if out.len() != if reduce { 1 } else { n } {
        return bad(format!("output has {} elements for size {n}", out.len()));
    }
    if n == 0 {
        return Ok(());
    }
    let mut ptrs: Vec<*mut u8> = inputs
        .iter()
        // Kernels only read through input pointers.
        .map(|(a, _, _)| with_storage!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()))
        .collect();
    ptrs.push(with_storage!(out.data_mut(), v => v.as_mut_ptr().cast::<u8>()));
    let threads = if kernel.splittable() && n >= PARALLEL_MIN_WORK {
        threads
    } else {
        1
    };
    // SAFETY: every input holds `n` elements (whole) or one (scalar) of the
    // dtype the kernel was compiled for, as it reads them over `0..n`; the
    // output holds what it writes and does not alias an input (it is
    // borrowed mutably); a kernel is only split when splittable.
    unsafe { run_split(kernel.entry(), ptrs.as_ptr(), n, threads) };
    Ok(())
}
