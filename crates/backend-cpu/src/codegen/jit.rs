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
//! - A [`ProgramFn`] is only created from a program function of the same
//!   module, kept alive the same way (`Program` holds the module), and is
//!   only called through `runtime::call_program` (see its invariants).
//! - The code module is never used after `finalize_definitions` except to be
//!   dropped, which is why sharing it across threads is sound; dropping the
//!   last `Arc<CodeModule>` frees the code, so nothing may keep a pointer
//!   into it without an `Arc`.
//! - Trampoline symbols registered here are the `extern "C"` functions of
//!   `runtime` with the signature the program emitter declares for them.

use crate::error::run_error;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir;
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Module, ModuleReloc};
use jaxon_ir::IrError;
use std::sync::Arc;

/// A kernel's entry point.
pub(crate) type KernelFn = unsafe extern "C" fn(*const *mut u8, i64, i64);

/// The run context a program function passes through to the trampolines
/// it calls, opaque to generated code (`runtime::RunCtx` behind the
/// pointer).
pub(crate) enum OpaqueCtx {}

/// A program function's entry point: `(io table, arena, run context)`.
pub(crate) type ProgramFn = unsafe extern "C" fn(*const *mut u8, *mut u8, *const OpaqueCtx);

/// Names of the trampolines generated programs import.
pub(crate) const TRAMP_PAR_KERNEL: &str = "jaxon_cpu_par_kernel";
/// See [`TRAMP_PAR_KERNEL`].
pub(crate) const TRAMP_DOT: &str = "jaxon_cpu_dot";
/// See [`TRAMP_PAR_KERNEL`].
pub(crate) const TRAMP_STEP: &str = "jaxon_cpu_step";
/// See [`TRAMP_PAR_KERNEL`]; `fn(ctx, reverse, step)`.
pub(crate) const TRAMP_FOR_STEP: &str = "jaxon_cpu_for_step";

/// Finalised machine code. Only kept alive, never touched again; when the
/// last `Arc` to it drops, its code and data memory are freed (cranelift's
/// `JITModule` keeps them on a plain drop).
pub(crate) struct CodeModule {
    // Held for its memory; `None` only while dropping.
    module: Option<JITModule>,
}

impl Drop for CodeModule {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: every pointer into this module is stored next to an
            // `Arc<CodeModule>` (module invariants: `Kernel`, `Program`),
            // and this is the last one, so no function of the module is
            // running or can be called again.
            unsafe { module.free_memory() };
        }
    }
}

// SAFETY: after `finalize_definitions` the module is immutable; we never call
// any method on it again (see the module invariants). Its raw pointers refer
// to code memory that stays valid until drop.
unsafe impl Send for CodeModule {}
// SAFETY: as above; shared references give no access to the module.
unsafe impl Sync for CodeModule {}

/// Builds Cranelift functions into one JIT module. Functions are declared
/// as they are defined and compiled together (on two threads when there
/// is enough work) by [`CodeBuilder::compile_all`] or [`CodeBuilder::finish`].
pub(crate) struct CodeBuilder {
    module: JITModule,
    funcs: Vec<(FuncId, Option<Shape>)>,
    /// Defined, not yet compiled.
    pending: Vec<Pending>,
    /// Disassembly of every function, when asked for (`JAXON_DUMP`).
    pub disasm: Option<String>,
}

/// A defined function waiting to be compiled.
struct Pending {
    name: String,
    id: FuncId,
    func: ir::Function,
}

/// One function's machine code, ready to be placed in the module.
struct Compiled {
    id: FuncId,
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<ModuleReloc>,
    disasm: Option<String>,
}

/// Instructions below which compiling on one thread beats spawning one.
const PARALLEL_COMPILE_MIN_INSTS: usize = 1500;

/// Compiles one function for `isa`.
fn compile_one(isa: &dyn TargetIsa, p: Pending, disasm: bool) -> Result<Compiled, IrError> {
    let Pending { name, id, func } = p;
    let mut ctx = cranelift_codegen::Context::for_function(func);
    ctx.set_disasm(disasm);
    ctx.compile(isa, &mut ControlPlane::default())
        .map_err(|e| run_error(format!("{name}: cannot compile: {:?}", e.inner)))?;
    let code = ctx
        .compiled_code()
        .ok_or_else(|| run_error(format!("{name}: no code")))?;
    let alignment = (code.buffer.alignment as u64)
        .max(isa.function_alignment().minimum as u64)
        .max(isa.symbol_alignment());
    let bytes = code.code_buffer().to_vec();
    let disasm = disasm.then(|| code.vcode.clone().unwrap_or_default());
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    Ok(Compiled {
        id,
        bytes,
        alignment,
        relocs,
        disasm,
    })
}

/// What the runtime needs to know about a kernel's loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Extent of the outermost loop.
    pub extent: usize,
    /// Whether sub-ranges may run concurrently (see the module docs).
    pub splittable: bool,
}

/// The host ISA with speed optimisation.
pub(crate) fn host_isa() -> Result<OwnedTargetIsa, IrError> {
    let err = |e: String| run_error(format!("cannot set up the host ISA: {e}"));
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
    // The IR verifier costs about a tenth of compile time; debug builds
    // (the test suites) keep it to catch malformed functions.
    flags
        .set(
            "enable_verifier",
            if cfg!(debug_assertions) {
                "true"
            } else {
                "false"
            },
        )
        .map_err(|e| err(e.to_string()))?;
    let isa = cranelift_native::builder().map_err(|e| err(e.to_string()))?;
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| err(e.to_string()))
}

impl CodeBuilder {
    /// A builder whose code may call `imports` (name, address): the
    /// runtime's trampolines (`runtime::trampolines`).
    pub fn new(imports: &[(&'static str, *const u8)]) -> Result<CodeBuilder, IrError> {
        let mut builder = JITBuilder::with_isa(host_isa()?, default_libcall_names());
        for &(name, f) in imports {
            builder.symbol(name, f);
        }
        Ok(CodeBuilder {
            module: JITModule::new(builder),
            funcs: Vec::new(),
            pending: Vec::new(),
            disasm: None,
        })
    }

    /// The module, to make contexts and query the target.
    pub fn module(&mut self) -> &mut JITModule {
        &mut self.module
    }

    /// The module id of function `idx` (to call it from another function).
    pub fn func_id(&self, idx: usize) -> Option<FuncId> {
        self.funcs.get(idx).map(|f| f.0)
    }

    /// Declares an imported trampoline `fn(ctx, index, pointers)`.
    pub fn import_trampoline(&mut self, name: &str) -> Result<FuncId, IrError> {
        let mut sig = self.module.make_signature();
        for _ in 0..3 {
            sig.params.push(ir::AbiParam::new(ir::types::I64));
        }
        self.module
            .declare_function(name, cranelift_module::Linkage::Import, &sig)
            .map_err(|e| run_error(format!("{name}: {e}")))
    }

    /// Declares `func` for compilation and returns its index. `shape` is
    /// given for kernels (taking a pointer array and a range), `None` for
    /// program functions.
    pub fn define(
        &mut self,
        name: &str,
        func: ir::Function,
        shape: Option<Shape>,
    ) -> Result<usize, IrError> {
        let id = self
            .module
            .declare_function(name, cranelift_module::Linkage::Local, &func.signature)
            .map_err(|e| run_error(format!("{name}: {e}")))?;
        self.pending.push(Pending {
            name: name.to_string(),
            id,
            func,
        });
        self.funcs.push((id, shape));
        Ok(self.funcs.len() - 1)
    }

    /// Compiles every defined function, splitting them over two threads
    /// when there is enough work (Cranelift compiles each function on its
    /// own; only placing the code in the module is sequential).
    pub fn compile_all(&mut self) -> Result<(), IrError> {
        let mut pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            return Ok(());
        }
        let disasm = self.disasm.is_some();
        let isa = self.module.isa();
        let size = |p: &Pending| p.func.dfg.num_insts();
        let insts: usize = pending.iter().map(size).sum();
        let compiled: Vec<Result<Compiled, IrError>> =
            if insts < PARALLEL_COMPILE_MIN_INSTS || pending.len() < 2 {
                pending
                    .drain(..)
                    .map(|p| compile_one(isa, p, disasm))
                    .collect()
            } else {
                // Largest first, each to the less loaded of two threads;
                // results go back to definition order.
                let mut indexed: Vec<(usize, Pending)> = pending.drain(..).enumerate().collect();
                indexed.sort_by_key(|(_, p)| std::cmp::Reverse(size(p)));
                let (mut mine, mut theirs) = (Vec::new(), Vec::new());
                let (mut load_mine, mut load_theirs) = (0, 0);
                for item in indexed {
                    if load_mine <= load_theirs {
                        load_mine += size(&item.1);
                        mine.push(item);
                    } else {
                        load_theirs += size(&item.1);
                        theirs.push(item);
                    }
                }
                let run = |part: Vec<(usize, Pending)>| -> Vec<(usize, Result<Compiled, IrError>)> {
                    part.into_iter()
                        .map(|(k, p)| (k, compile_one(isa, p, disasm)))
                        .collect()
                };
                let (a, b) = std::thread::scope(|sc| {
                    let other = sc.spawn(|| run(theirs));
                    (run(mine), other.join())
                });
                let b = b.map_err(|_| run_error("the compiler panicked"))?;
                let mut all: Vec<_> = a.into_iter().chain(b).collect();
                all.sort_by_key(|(k, _)| *k);
                all.into_iter().map(|(_, r)| r).collect()
            };
        for c in compiled {
            let c = c?;
            let id = c.id;
            let name = self
                .module
                .declarations()
                .get_function_decl(id)
                .linkage_name(id)
                .into_owned();
            self.module
                .define_function_bytes(id, c.alignment, &c.bytes, &c.relocs)
                .map_err(|e| run_error(format!("{name}: cannot place code: {e}")))?;
            if let (Some(d), Some(text)) = (self.disasm.as_mut(), c.disasm) {
                d.push_str(&format!("; {name}\n{text}\n"));
            }
        }
        Ok(())
    }

    /// Finalises all functions; returns the module, one callable kernel per
    /// kernel `define` (`None` for program functions) and the program
    /// function `program`.
    pub fn finish(self, program: usize) -> Result<Finished, IrError> {
        let (ptrs, code) = self.finalize()?;
        let entry = match ptrs.get(program) {
            Some((p, None)) => *p,
            _ => return Err(run_error("missing program function")),
        };
        let kernels = ptrs
            .into_iter()
            .map(|(p, shape)| shape.map(|shape| kernel(p, shape, &code)))
            .collect();
        Ok(Finished {
            // SAFETY: `entry` is the finalised program function of `code`
            // with the program signature; `code` is returned beside it and
            // the caller keeps both together (module invariants).
            program: unsafe { std::mem::transmute::<*const u8, ProgramFn>(entry) },
            kernels,
            code,
        })
    }

    /// Finalises a module of kernels only; returns one callable kernel per
    /// defined function, in definition order.
    pub fn finish_kernels(self) -> Result<Vec<Kernel>, IrError> {
        let (ptrs, code) = self.finalize()?;
        ptrs.into_iter()
            .map(|(p, shape)| {
                let shape =
                    shape.ok_or_else(|| run_error("a kernel module holds a program function"))?;
                Ok(kernel(p, shape, &code))
            })
            .collect()
    }

    /// Compiles what is pending and finalises the module: each function's
    /// address (with its kernel shape, `None` for program functions) and
    /// the code that keeps them valid.
    fn finalize(mut self) -> Result<Finalized, IrError> {
        self.compile_all()?;
        self.module
            .finalize_definitions()
            .map_err(|e| run_error(format!("cannot finalise code: {e}")))?;
        let ptrs = self
            .funcs
            .iter()
            .map(|(id, n)| (self.module.get_finalized_function(*id), *n))
            .collect();
        let code = Arc::new(CodeModule {
            module: Some(self.module),
        });
        Ok((ptrs, code))
    }
}

/// Each function's address and kernel shape, and the code they live in.
type Finalized = (Vec<(*const u8, Option<Shape>)>, Arc<CodeModule>);

/// The kernel at `p`, a finalised kernel function of `code`.
fn kernel(p: *const u8, shape: Shape, code: &Arc<CodeModule>) -> Kernel {
    Kernel {
        // SAFETY: `p` is a finalised function of `code` with the kernel
        // signature (module invariants); `code` is stored in the kernel, so
        // the pointer stays valid.
        entry: unsafe { std::mem::transmute::<*const u8, KernelFn>(p) },
        shape,
        _code: code.clone(),
    }
}

/// A finalised module.
pub(crate) struct Finished {
    /// The program function.
    pub program: ProgramFn,
    /// Per defined function, the kernel (`None` for program functions).
    pub kernels: Vec<Option<Kernel>>,
    /// The code, to keep alive while `program` may be called.
    pub code: Arc<CodeModule>,
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

impl Kernel {
    /// The entry point (valid while `self` lives).
    pub fn entry(&self) -> KernelFn {
        self.entry
    }

    /// The extent of the outermost loop.
    pub fn extent(&self) -> usize {
        self.shape.extent
    }

    /// Whether disjoint ranges may run concurrently.
    pub fn splittable(&self) -> bool {
        self.shape.splittable
    }
}
