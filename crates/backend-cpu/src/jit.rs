//! The JIT code holder and the one place that calls generated code.
//!
//! `unsafe` here relies on these invariants:
//! - A [`KernelFn`] is only created from a function that [`CodeModule`]
//!   finalised, and the `Arc<CodeModule>` that owns its memory is stored next
//!   to it (in [`Kernel`]), so the code outlives every call.
//! - Every generated kernel has the signature
//!   `extern "C" fn(*const *mut u8, lo: i64, hi: i64)`, reads exactly
//!   `n_args` pointers from its first argument and runs the outermost loop
//!   over `lo..hi` (`0 <= lo <= hi <= extent`); the element offsets it
//!   accesses through pointer `k` are below the element count the compiler
//!   computed for argument `k` from its static shape. [`Kernel::call`]
//!   checks that each buffer holds at least that many bytes before calling.
//! - A *splittable* kernel writes disjoint output elements for disjoint
//!   `lo..hi` ranges, so [`Kernel::call`] may run sub-ranges on several
//!   threads at once (the inputs are only read).
//! - The code module is never used after `finalize_definitions` except to be
//!   dropped, which is why sharing it across threads is sound.

use cranelift_codegen::ir;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Module};
use jaxon_ir::IrError;
use std::sync::Arc;

/// A kernel's entry point.
type KernelFn = unsafe extern "C" fn(*const *mut u8, i64, i64);

/// Finalised machine code. Only kept alive, never touched again.
pub(crate) struct CodeModule {
    // Held for its memory; dropping it frees the code.
    _module: JITModule,
}

// SAFETY: after `finalize_definitions` the module is immutable; we never call
// any method on it again (see the module invariants). Its raw pointers refer
// to code memory that stays valid until drop.
unsafe impl Send for CodeModule {}
// SAFETY: as above; shared references give no access to the module.
unsafe impl Sync for CodeModule {}

/// Builds Cranelift functions into one JIT module.
pub(crate) struct CodeBuilder {
    module: JITModule,
    funcs: Vec<(FuncId, Shape)>,
}

/// What the runtime needs to know about a kernel's loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Buffers it takes.
    pub n_args: usize,
    /// Extent of the outermost loop.
    pub extent: usize,
    /// Whether sub-ranges may run concurrently (see the module docs).
    pub splittable: bool,
    /// Elements of work per outermost iteration (for the threading decision).
    pub work_per_step: usize,
}

/// The host ISA with speed optimisation.
pub(crate) fn host_isa() -> Result<OwnedTargetIsa, IrError> {
    let err = |e: String| IrError::Eval(format!("cpu backend: cannot set up the host ISA: {e}"));
    let mut flags = settings::builder();
    flags
        .set("opt_level", "speed")
        .map_err(|e| err(e.to_string()))?;
    flags
        .set("use_colocated_libcalls", "false")
        .map_err(|e| err(e.to_string()))?;
    flags
        .set("is_pic", "false")
        .map_err(|e| err(e.to_string()))?;
    let isa = cranelift_native::builder().map_err(|e| err(e.to_string()))?;
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| err(e.to_string()))
}

impl CodeBuilder {
    pub fn new() -> Result<CodeBuilder, IrError> {
        let builder = JITBuilder::with_isa(host_isa()?, default_libcall_names());
        Ok(CodeBuilder {
            module: JITModule::new(builder),
            funcs: Vec::new(),
        })
    }

    /// The module, to make contexts and query the target.
    pub fn module(&mut self) -> &mut JITModule {
        &mut self.module
    }

    /// Compiles `func` (taking one pointer argument) and returns its index.
    pub fn define(
        &mut self,
        name: &str,
        func: ir::Function,
        shape: Shape,
    ) -> Result<usize, IrError> {
        let mut ctx = self.module.make_context();
        ctx.func = func;
        let id = self
            .module
            .declare_function(name, cranelift_module::Linkage::Local, &ctx.func.signature)
            .map_err(|e| IrError::Eval(format!("cpu backend: {name}: {e}")))?;
        self.module
            .define_function(id, &mut ctx)
            .map_err(|e| IrError::Eval(format!("cpu backend: {name}: cannot compile: {e:?}")))?;
        self.module.clear_context(&mut ctx);
        self.funcs.push((id, shape));
        Ok(self.funcs.len() - 1)
    }

    /// Finalises all functions; returns one callable kernel per `define`.
    pub fn finish(mut self) -> Result<Vec<Kernel>, IrError> {
        self.module
            .finalize_definitions()
            .map_err(|e| IrError::Eval(format!("cpu backend: cannot finalise code: {e}")))?;
        let ptrs: Vec<(*const u8, Shape)> = self
            .funcs
            .iter()
            .map(|(id, n)| (self.module.get_finalized_function(*id), *n))
            .collect();
        let code = Arc::new(CodeModule {
            _module: self.module,
        });
        Ok(ptrs
            .into_iter()
            .map(|(p, shape)| Kernel {
                // SAFETY: `p` is a finalised function of `code` with the
                // kernel signature (module invariants); `code` is stored in
                // the kernel, so the pointer stays valid.
                entry: unsafe { std::mem::transmute::<*const u8, KernelFn>(p) },
                shape,
                _code: code.clone(),
            })
            .collect())
    }
}

/// A compiled kernel, keeping its code alive.
#[derive(Clone)]
pub(crate) struct Kernel {
    entry: KernelFn,
    shape: Shape,
    _code: Arc<CodeModule>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({:?})", self.shape)
    }
}

/// One kernel argument: a buffer's base address, its size in bytes, and
/// the bytes the kernel may touch through it.
pub(crate) struct Arg {
    pub ptr: *mut u8,
    pub len_bytes: usize,
    pub need_bytes: usize,
}

/// Work (elements) below which a kernel runs on one thread: spawning a
/// thread costs tens of microseconds.
const PARALLEL_MIN_WORK: usize = 1 << 18;

/// The argument pointer array, shared by the threads of one call.
struct SharedPtrs<'a>(&'a [*mut u8]);

// SAFETY: the pointers refer to buffers that outlive the scoped threads of
// one `Kernel::call`; concurrent kernels only read inputs and write disjoint
// output elements (splittable kernels, module invariants).
unsafe impl Send for SharedPtrs<'_> {}
// SAFETY: as above.
unsafe impl Sync for SharedPtrs<'_> {}

impl Kernel {
    /// Runs the kernel on `args` (inputs first, the output last), on up to
    /// `threads` threads when it is splittable and large enough.
    pub fn call(&self, args: &[Arg], threads: usize) -> Result<(), IrError> {
        let n_args = self.shape.n_args;
        if args.len() != n_args {
            return Err(IrError::Eval(format!(
                "cpu backend: kernel expects {} buffers, got {}",
                n_args,
                args.len()
            )));
        }
        if let Some(a) = args.iter().find(|a| a.len_bytes < a.need_bytes) {
            return Err(IrError::Eval(format!(
                "cpu backend: buffer of {} bytes where the kernel reads {}",
                a.len_bytes, a.need_bytes
            )));
        }
        let ptrs: Vec<*mut u8> = args.iter().map(|a| a.ptr).collect();
        let extent = self.shape.extent;
        let work = extent.saturating_mul(self.shape.work_per_step);
        let threads = if self.shape.splittable && work >= PARALLEL_MIN_WORK {
            threads.clamp(1, extent.max(1))
        } else {
            1
        };
        let shared = SharedPtrs(&ptrs);
        let run = |p: &SharedPtrs, lo: usize, hi: usize| {
            // SAFETY: the kernel reads `n_args` pointers (checked above) and
            // touches at most `need_bytes` bytes through each, all inside
            // live buffers (`len_bytes >= need_bytes`); `lo..hi` lies in
            // `0..extent`; only the output is written, and concurrent calls
            // write disjoint parts of it (splittable kernels).
            unsafe { (self.entry)(p.0.as_ptr(), lo as i64, hi as i64) }
        };
        if threads <= 1 {
            run(&shared, 0, extent);
            return Ok(());
        }
        let chunk = extent.div_ceil(threads);
        std::thread::scope(|s| {
            let shared = &shared;
            let run = &run;
            for t in 1..threads {
                let (lo, hi) = ((t * chunk).min(extent), ((t + 1) * chunk).min(extent));
                s.spawn(move || run(shared, lo, hi));
            }
            run(shared, 0, chunk.min(extent));
        });
        Ok(())
    }
}
