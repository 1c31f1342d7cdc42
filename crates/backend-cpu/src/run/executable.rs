//! A compiled program with its constants, as the `Executable` the backend
//! hands out: arguments checked against the program's types, outputs from
//! the pool, the arena reused from call to call, one `runtime::call_program`
//! per call.

use crate::error::run_error;
use crate::run::exec::{Program, ResultSrc};
use crate::run::pool::{Pool, PooledBuffer};
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::{with_storage, Buffer, Executable, HostArray, IrError};
use smallvec::SmallVec;
use std::sync::{Arc, Mutex};

/// A program with its constants: what `compile` returns.
pub(crate) struct CpuExecutable {
    pub program: Arc<Program>,
    pub consts: Arc<[HostArray]>,
    /// Threads a large kernel may use.
    pub threads: usize,
    /// Where outputs come from and return to.
    pub pool: Arc<Pool>,
}

/// The host array behind a buffer of this backend (or of the interpreter).
fn host_array(b: &Arc<dyn Buffer>) -> Option<&HostArray> {
    let any = b.as_any();
    any.downcast_ref::<HostBuffer>()
        .map(|h| &h.array)
        .or_else(|| any.downcast_ref::<PooledBuffer>().map(|p| p.array()))
}

impl CpuExecutable {
    /// Runs the program: outputs come from the pool, intermediates live in
    /// a reused arena. Small programs' working lists live on the stack: a
    /// dispatch allocates only what it returns.
    pub(crate) fn run(&self, args: &[&HostArray]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        self.run_threads(args, self.threads)
    }

    /// [`CpuExecutable::run`] with large kernels on at most `threads`
    /// threads (a `shard_map` instance's share).
    pub(crate) fn run_threads(
        &self,
        args: &[&HostArray],
        threads: usize,
    ) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let p = &*self.program;
        if args.len() != p.in_avals.len() || self.consts.len() != p.n_consts {
            return Err(run_error(format!(
                "expected {} arguments, got {}",
                p.in_avals.len(),
                args.len()
            )));
        }
        for (a, want) in args.iter().zip(&p.in_avals) {
            // Compared in place: building the argument's aval would
            // allocate on every dispatch.
            let same_shape = a.shape().len() == want.shape.len()
                && a.shape()
                    .iter()
                    .zip(want.shape.iter())
                    .all(|(&n, d)| d.as_const() == Some(n));
            if a.dtype() != want.dtype || !same_shape {
                let got = a.aval();
                return Err(run_error(format!(
                    "argument of type {got:?} where {want:?} was compiled"
                )));
            }
        }
        let mut outs = p
            .out_bufs
            .iter()
            .map(|(dt, shape)| HostArray::new(shape.clone(), self.pool.take(*dt, shape)?).map(Some))
            .collect::<Result<SmallVec<[Option<HostArray>; 2]>, _>>()?;
        // The pointer table lives on the stack for small programs (no
        // allocation on the dispatch path).
        let mut io_stack = [std::ptr::null_mut::<u8>(); 16];
        let mut io_heap = Vec::new();
        let io: &mut [*mut u8] = if p.io_len() <= io_stack.len() {
            &mut io_stack[..p.io_len()]
        } else {
            io_heap.resize(p.io_len(), std::ptr::null_mut());
            &mut io_heap
        };
        let ins = args.iter().copied().chain(self.consts.iter());
        let mut slots = io.iter_mut();
        // (`ins` first: a zip pulls from its left side first, and must
        // not consume a slot when the inputs run out.)
        for (a, slot) in ins.zip(slots.by_ref()) {
            // Generated code only reads through argument pointers.
            *slot = with_storage!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut());
        }
        for (slot, o) in slots.zip(outs.iter_mut().flatten()) {
            *slot = with_storage!(o.data_mut(), v => v.as_mut_ptr().cast::<u8>());
        }
        let cached = p.arenas.lock().ok().and_then(|mut a| a.pop());
        let mut arena = match cached {
            Some(a) => a,
            None => {
                let _ = p.arena_pool.set(self.pool.clone());
                self.pool.take_arena(p.arena_bytes.div_ceil(8))?
            }
        };
        let ctx = crate::run::runtime::RunCtx {
            program: p,
            threads: threads.max(1),
            error: Mutex::new(None),
        };
        let res = crate::run::runtime::call_program(p.entry, io, &mut arena, &ctx);
        if let Ok(mut a) = p.arenas.lock() {
            a.push(arena);
        }
        res?;
        let mut results: Vec<Arc<dyn Buffer>> = Vec::with_capacity(p.results.len());
        for r in &p.results {
            let b: Arc<dyn Buffer> = match r {
                ResultSrc::Buffer(i) => {
                    let a = outs
                        .get_mut(*i)
                        .and_then(Option::take)
                        .ok_or_else(|| run_error("output buffer used twice"))?;
                    Arc::new(PooledBuffer::new(a, self.pool.clone()))
                }
                ResultSrc::Input(i) => host(args[*i].clone()),
                ResultSrc::Const(i) => host(self.consts[*i].clone()),
                ResultSrc::Literal(a) => host(a.clone()),
                // Buffers are immutable: a repeated result shares one.
                ResultSrc::Again(i) => results
                    .get(*i)
                    .cloned()
                    .ok_or_else(|| run_error("bad repeated result"))?,
            };
            results.push(b);
        }
        Ok(results)
    }
}

fn host(array: HostArray) -> Arc<dyn Buffer> {
    Arc::new(HostBuffer { array })
}

/// Runs `f` on host views of `args`: this backend's buffers (and the
/// interpreter's) are borrowed, others are copied to the host first.
pub(crate) fn with_host_args<R>(
    args: &[Arc<dyn Buffer>],
    f: impl FnOnce(&[&HostArray]) -> Result<R, IrError>,
) -> Result<R, IrError> {
    // Arrays already on the host (every eager and `jit` call) are lent
    // without a second vector.
    if let Some(arrays) = args
        .iter()
        .map(host_array)
        .collect::<Option<SmallVec<[_; 8]>>>()
    {
        return f(&arrays);
    }
    let mut owned: Vec<Option<HostArray>> = Vec::with_capacity(args.len());
    for b in args {
        owned.push(match host_array(b) {
            Some(_) => None,
            None => Some(b.to_host()?),
        });
    }
    let arrays: Vec<&HostArray> = args
        .iter()
        .zip(&owned)
        .map(|(b, o)| match o {
            Some(a) => Ok(a),
            None => host_array(b).ok_or_else(|| run_error("buffer vanished")),
        })
        .collect::<Result<_, _>>()?;
    f(&arrays)
}

impl Executable for CpuExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        with_host_args(args, |arrays| self.run(arrays))
    }
}
