//! The native side of a running program: the context a program function
//! receives, the `extern "C"` trampolines it calls for work that is not
//! generated code (threaded kernels, GEMM, other native steps), and the one
//! call into a program function. Scheduling is `sched`'s, raw copies
//! `raw`'s.
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

use crate::codegen::jit::{
    OpaqueCtx, ProgramFn, TRAMP_DOT, TRAMP_FOR_STEP, TRAMP_PAR_KERNEL, TRAMP_STEP,
};
use crate::error::run_error;
use crate::ops::native::RawArg;
use crate::run::exec::{Operand, Program, Step, StepCall};
use crate::run::raw::{read_array, write_array};
use crate::run::sched::{run_split, PARALLEL_MIN_WORK};
use jaxon_ir::{with_storage, DType, HostArray, IrError};
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

/// The trampolines generated code imports, by name, for
/// `jit::CodeBuilder::new`.
pub(crate) fn trampolines() -> [(&'static str, *const u8); 4] {
    type Tramp = extern "C" fn(*const RunCtx, u64, *const *mut u8);
    let tramps: [(&str, Tramp); 3] = [
        (TRAMP_PAR_KERNEL, tramp_par_kernel),
        (TRAMP_DOT, tramp_dot),
        (TRAMP_STEP, tramp_step),
    ];
    let [a, b, c] = tramps.map(|(name, f)| (name, f as *const u8));
    type ForStep = extern "C" fn(*const RunCtx, u64, i64);
    let for_step: ForStep = tramp_for_step;
    [a, b, c, (TRAMP_FOR_STEP, for_step as *const u8)]
}

/// Records the interpreter's error for a `for_loop` step it refuses (0, or
/// not positive without `reverse`): generated code calls this only then,
/// runs no iteration, and the program returns the error.
pub(crate) extern "C" fn tramp_for_step(ctx: *const RunCtx, reverse: u64, step: i64) {
    // SAFETY: module invariants (`ctx` is live during the call).
    let ctx = unsafe { &*ctx };
    if let Err(e) = jaxon_ir::interp::support::for_loop_trips(0, 0, step, reverse != 0) {
        ctx.fail(e);
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
            (ctx as *const RunCtx).cast::<OpaqueCtx>(),
        )
    };
    match ctx.error.lock() {
        Ok(mut e) => e.take().map_or(Ok(()), Err),
        Err(_) => Err(run_error("a native step panicked")),
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

/// Runs `dot_general` number `k` of the program: `ptrs = [lhs, rhs, out]`,
/// then `bias` when the plan's epilogue has one.
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
        // its compiled size, and a fourth to the bias when the plan has
        // one (the emitter's table); the result aliases none of them.
        let (l, r, o) = unsafe { (*ptrs, *ptrs.add(1), *ptrs.add(2)) };
        let bias = if plan.epilogue.bias {
            // SAFETY: as above.
            unsafe { *ptrs.add(3) }
        } else {
            std::ptr::null_mut()
        };
        plan.run_raw(l, r, o, bias, ctx.threads)
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
        if let Some(done) = unsafe { run_step_raw(call, table, ctx.threads) } {
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
        let outs = crate::run::exec::run_step_call(call, ins, ctx.threads)?;
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

/// Runs kernel `entry` of a flat run (`dynamic::flat`) over `0..n`.
/// `inputs` are the kernel's inputs with the dtype it was compiled for and
/// whether it reads them whole (stride 1) or as a scalar (stride 0); the
/// output is whole, or a scalar for a reduction. Everything the kernel's
/// memory accesses rely on is checked here first.
pub(crate) fn run_flat_kernel(
    kernel: &crate::codegen::jit::Kernel,
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

/// Runs the op of a step call on its pointer table (operands in
/// `call.ins` order, then results) through [`NativeOp::run_raw`], when the
/// op has a raw path; `None` otherwise.
///
/// # Safety
/// `table` holds one pointer per variable of `call.ins` and `call.outs`,
/// each to a value (or room for one) of the listed type, results not
/// aliasing operands.
pub(crate) unsafe fn run_step_raw(
    call: &StepCall,
    table: &[*mut u8],
    threads: usize,
) -> Option<Result<(), IrError>> {
    let Step { op, inputs, outs } = &call.step;
    let n_in = call.ins.len();
    let mut ins = Vec::with_capacity(inputs.len());
    for o in inputs {
        ins.push(match o {
            Operand::Var(v) => {
                let k = call.ins.iter().position(|(w, _, _)| w == v)?;
                let (_, dtype, shape) = &call.ins[k];
                RawArg {
                    ptr: *table.get(k)?,
                    dtype: *dtype,
                    shape,
                }
            }
            Operand::Const(a) => RawArg {
                // Only read through.
                ptr: jaxon_ir::with_storage!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()),
                dtype: a.dtype(),
                shape: a.shape(),
            },
        });
    }
    let mut res = Vec::with_capacity(outs.len());
    for o in outs {
        let v = (*o)?;
        let k = call.outs.iter().position(|(w, _, _)| *w == v)?;
        let (_, dtype, shape) = &call.outs[k];
        res.push(RawArg {
            ptr: *table.get(n_in + k)?,
            dtype: *dtype,
            shape,
        });
    }
    // SAFETY: the caller's contract, per operand and result.
    unsafe { op.run_raw_threads(&ins, &res, threads) }
}
