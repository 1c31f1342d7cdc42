//! `jaxon-backend-cpu`: compiles jaxprs to native code with Cranelift.
//!
//! Pipeline ([`CpuBackend::compile`]): the backend-independent passes of
//! `jaxon_ir::passes` (inline `jit`, constant folding, CSE, DCE), the
//! fusion planner and the memory planner (`prep`); each loop or reduce
//! group becomes one Cranelift function with a vectorised loop nest
//! (`kernel`), and the whole jaxpr becomes one Cranelift *program
//! function* (`program`) that calls those kernels directly, calls
//! `extern "C"` trampolines (`runtime`) for GEMM (`dot`, the `gemm` crate),
//! for kernels split over threads and for the other native steps (`exec`),
//! and runs `while`, `scan` and `cond` as native loops and branches with
//! their bodies inlined. Compiled programs are cached by the printed text
//! of the simplified jaxpr, which includes every type, in a bounded LRU
//! cache (`program_cache`: 1024 static and 1024 dynamic-shape programs by
//! default; [`CpuBackend::with_program_cache_limit`] or
//! `JAXON_CPU_PROGRAM_CACHE_SIZE`); `Backend::clear_cache` empties it.
//!
//! Memory: every intermediate value (at every nesting level) has a fixed
//! offset in one arena per program, planned by liveness
//! (`jaxon_ir::passes::plan_memory`), so values that are not live at the
//! same time share storage; arenas are reused across calls. Results are
//! written straight into output buffers taken from a pool keyed by dtype
//! and length; when the caller drops a result buffer its storage returns
//! to the pool, so steady-state calls do not page-fault. Loop carries are
//! double-buffered in their loop's scratch, and results computed in a loop
//! body or `cond` branch are written straight to their destination (the
//! next carry set, a `ys` row, the `cond` output).
//!
//! Unsupported primitives and dtypes are compile errors naming the
//! equation; static-shape programs never call the interpreter.
//!
//! # What compiles
//!
//! Every primitive of `jaxon_ir::Primitive`. `pallas_call` (`native/pallas.rs`)
//! compiles its kernel once with this pipeline in discharged form and runs
//! it over the grid in JAX's order. Each operand reaches the kernel as a
//! window at its block's first element with the array's strides (no
//! copy); only partial edge blocks are copied, padded with NaN/integer
//! minimum as interpret mode pads them, and results are written in place
//! when their block is contiguous. Programs run in parallel over the grid
//! axes whose out specs keep writes disjoint. `program_id`/`num_programs` read the running grid point;
//! masked `load` (with `other`), `store`, `atomic_rmw` and `atomic_cas`
//! are native steps on the discharged refs (unmasked whole-ref reads and
//! writes become plain bindings, so simple kernels fuse);
//! `tests/pallas.rs` compares with the interpreter.
//! `tests/coverage.rs` holds the table (an exhaustive match over
//! `Primitive`) and runs every row against the interpreter.
//!
//! - Fused into Cranelift loop kernels (scalar code for every dtype;
//!   `F32X4`/`F64X2` vector code, 4× unrolled with a vector and a scalar
//!   tail, when a group is all f32 or all f64 plus boolean masks, its ops
//!   have vector rules and its inner reads are contiguous or broadcast):
//!   every unary and binary elementwise op, `integer_pow`, `round`,
//!   `select_n`, `clamp`, `convert_element_type`, and the data movement
//!   `broadcast_in_dim reshape squeeze transpose slice rev` (as strided
//!   reads). `exp expm1 log log1p tanh logistic sin cos tan exp2 sinh
//!   cosh asin acos atan atan2 asinh acosh atanh`, f32 `erf` and f32 `pow`
//!   (through f64, within 1 ulp, C99 special cases) are inline vectorised
//!   polynomials or rational functions (`kernel/math.rs`,
//!   `kernel/math_inv.rs`; table below). `cbrt`, f64 `erf`, `erfc`,
//!   `erf_inv`, float `rem`, f64 `pow`, `nextafter` and the special
//!   functions (`lgamma digamma igamma igammac igamma_grad_a
//!   random_gamma_grad polygamma zeta bessel_i0e bessel_i1e
//!   regularized_incomplete_beta`) call out-of-line Rust helpers
//!   (`kernel/libm.rs`: std's libm and the interpreter's scalar functions,
//!   so they are bit-identical to it; scalar code).
//! - Wide tiles (`kernel/wide/`, `kernel/tiled.rs`): Cranelift 0.135
//!   emits at most 128-bit vectors, so on CPUs with AVX2 and FMA `exp
//!   expm1 log log1p tanh logistic sin cos tan exp2 sinh cosh`, division
//!   by a scalar and row `reduce_sum/max/min` are also precompiled as
//!   8-lane f32 and 4-lane f64 `ymm` routines, and 16-lane/8-lane `zmm`
//!   ones used where `isa::isa()` is AVX-512, from the same `math.rs` source
//!   (the `Lanes` trait), and a fused float loop over long rows runs them
//!   over 512-element tiles held in stack slots while the rest of the
//!   group stays inline. Results are bit-identical to the inline code;
//!   `CpuBackend::with_wide_math(false)` or `JAXON_CPU_WIDE_MATH=0` keeps
//!   everything inline.
//! - f16/bf16 (`kernel/half.rs`): values live in f32 registers, each
//!   rounding op re-rounds to the half type (inline integer code,
//!   bit-exact with the `half` crate, NaN payloads included; scalar code),
//!   as the interpreter computes them; half reductions are rewritten
//!   before planning into f32 reductions between two casts
//!   (`rewrite::widen_half_reductions`), so they accumulate in f32 and
//!   round once.
//! - Reduce kernels with input fusion: `reduce_sum/max/min/prod/and/or/xor`
//!   over any axes (register accumulators along a reduced inner dimension,
//!   accumulation into the output otherwise).
//! - Native steps, called from generated code through one trampoline
//!   that runs the step on copies of its operands: `dot_general` (gemm for
//!   f32/f64 through its own trampoline, loops for integers; f16/bf16, bool
//!   and mixed dtypes cast first), `iota`, `pad`, `concatenate`, `split`,
//!   `cumsum/cumprod/cummax/cummin/cumlogsumexp`, `argmax/argmin`,
//!   `empty2`; and in `native/`, safe Rust over slices: `gather`, `scatter`
//!   and `scatter-add/mul/min/max` (every mode, batching dims),
//!   `dynamic_slice`, `dynamic_update_slice`, `sort` (several operands,
//!   `num_keys`, NaNs last, stable), `top_k`, `conv_general_dilated`
//!   (im2col then one batched gemm per feature or batch group; strides,
//!   padding, both dilations), `bitcast_convert_type`, `reduce_precision`,
//!   `tile`, `stack`, `reshape` with `dimensions`, the state primitives
//!   `get`/`swap`/`addupdate` and the Pallas ones.
//! - Control flow: `cond`, `while`, `scan` (and so `fori_loop`) and
//!   Catalyst's `for_loop` (runtime bounds; a step the interpreter rejects
//!   runs no iteration) are native branches and loops of the program
//!   function; `jit`, `custom_jvp_call`, `custom_vjp_call` and `remat2` are
//!   inlined by `jaxon_ir::passes::simplify`.
//! - `Ref` arguments (stateful jaxprs) compile in discharged form, as JAX's
//!   `discharge_state` (`discharge::discharge_refs`): each `Ref` argument is
//!   passed as an array, each write binds the ref's updated copy to a new
//!   variable (not in place yet), and the executable returns the jaxpr's
//!   outputs followed by the final contents of each `Ref` argument, in
//!   order.
//!   `Ref`s passed to `scan`, `while` and `cond` are discharged inside
//!   the bodies too (`discharge.rs`): refs a body writes become carries or
//!   extra branch results, refs only read stay constants.
//! - Dynamic shapes (`dynamic`): a jaxpr with dimension variables compiles
//!   once into a step list that serves every size. Elementwise runs and
//!   full reductions are the same fused kernels, compiled over a flat space
//!   whose extent is a call argument; `dot_general` plans its GEMM per
//!   call; loops and branches run their bodies' steps from a native driver;
//!   every other primitive is a native step with the runtime shapes
//!   (strided copies, axis folds, the native ops built for those shapes).
//! - SPMD on CPU devices: the backend has `JAXON_CPU_DEVICES` devices
//!   (default 1, as XLA's host-platform device count;
//!   [`CpuBackend::with_devices`]). A `shard_map` compiles its body once
//!   (`plan/spmd.rs`) and runs one instance per device of its mesh, each
//!   on its own thread inside its `jaxon_ir::spmd` device context, with
//!   an equal share of the backend's threads (`ops/native/spmd.rs`);
//!   operands are split and results assembled as the interpreter does
//!   (the same code). The mesh collectives are native steps exchanging
//!   through the instance's communicator (shared memory); `psum` of
//!   f32/f64 runs on the buffers as a reduce-scatter into every member's
//!   result. A mesh larger than the devices is a compile error naming
//!   both; one failing instance poisons the communicator, so the others
//!   fail instead of waiting.
//! - Not yet: `Ref` operands of `for_loop`.
//!
//! Elementwise rules are bit-identical to the reference interpreter (XLA's
//! semantics). `a*b+c` is contracted to one fused multiply-add only with
//! [`CpuBackend::with_fma_contraction`] (off by default, so that results
//! stay bit-identical); the transcendental polynomials always use fma. Float reductions along a reduced inner dimension use 16
//! partial sums (reassociated); f32 and f64 products of at least
//! 2^24 multiply-adds, at least 6 rows and one register tile (16 f32 or 8
//! f64 columns) wide, use our own packed GEMM on x86-64 with AVX2 and FMA
//! (`dot/packed.rs`, 6×16 and 6×8 register tiles;
//! `JAXON_CPU_PACKED_GEMM=0` turns it off), others gemm's blocking.
//!
//! Kernels run their outermost loop over a `lo..hi` range: kernels of at
//! least 2^18 elements whose output rows are independent split it over the
//! available cores (`JAXON_CPU_THREADS` overrides the count), in chunks
//! that threads take from a shared counter, so a thread on a slowed core
//! takes fewer. The packed GEMM packs both operands in one parallel pass
//! and hands out tiles of the result the same way. Those threads are the
//! caller and the helpers of `team`, which spin for 300 µs after a job
//! before they sleep: waking a sleeping thread on these virtual CPUs
//! takes 50–600 µs, and programs open parallel regions back to back.
//! Other products of at least 2^22 multiply-adds use gemm's rayon
//! parallelism (smaller ones stay on one thread: waking a second core per
//! loop step costs more); those of at least 2^31 multiply-adds run
//! as balanced blocks of rows or columns, one single-threaded gemm each
//! (`dot/split.rs`; `JAXON_CPU_GEMM_SPLIT=0` turns that off).
//!
//! `unsafe` lives in four small modules, each stating its invariants:
//! `jit` (holding JIT'ed code and turning it into callable pointers),
//! `runtime` (calling a program function and the trampolines it calls
//! back), `team` (handing a borrowed closure to helper threads while its
//! caller waits) and `dot` (the `gemm` call, its column blocks, viewing
//! raw operand buffers, and the packed GEMM's register tiles, panel
//! cast, prefetches and tile writes), besides the native ops that run on
//! raw buffers (`ops/native/pallas`, `ops/native/spmd`: `psum` reading
//! and writing its peers' buffers between two barriers). The
//! helpers kernels call (`kernel/libm.rs`) are safe `extern "C"` functions
//! whose addresses are `fn` items, valid for the whole program.
//!
//! Memory safety check (issue 6): the differential and coverage tests
//! (`tests/differential.rs`, `tests/coverage.rs`) install a guard-page
//! global allocator (`tests/common/guard.rs`, Linux): while a program
//! executes, every array it is given or allocates ends exactly at an
//! inaccessible page, and freed pages become inaccessible and are never
//! reused. Every case (all primitives, shapes with vector tails, 2 kernel
//! threads) runs clean: no out-of-bounds read or write past an array's end
//! and no use after free (last run: every differential and coverage test
//! passes). Accesses before an array's start are not caught.
//!
//! Debugging: `JAXON_DUMP=dir` writes, per compiled jaxpr, its text, its
//! fusion and memory plans (of every nested jaxpr too), the CLIF of every
//! generated function (kernels and the program function) and their
//! machine code.
//!
//! # Accuracy of the inline transcendental functions
//!
//! Maximum error in ulp, measured by `tests/math_ulp.rs` against f64 (for
//! f32) or a double-double evaluation (for f64) on a dense sweep of the
//! whole range plus special values (±0, ±inf, NaN, subnormals, overflow and
//! underflow thresholds):
//!
//! | function | f32 max ulp | f64 max ulp | bound asserted |
//! |---|---|---|---|
//! | `exp` | 1.00 | 1.00 | 2 |
//! | `expm1` | 1.60 | 2.00 | 2 |
//! | `log` | 1.83 | 2.00 | 2 |
//! | `log1p` | 2.98 | 3.00 | 3 |
//! | `tanh` | 4.48 | 3.00 | 5 / 3 |
//! | `logistic` | 1.74 | 2.00 | 3 |
//! | `sin` | 1.66 | 1.00 | 2 |
//! | `cos` | 1.58 | 1.00 | 2 |
//! | `tan` | 2.75 | 3.00 | 4 |
//! | `exp2` | 1.03 | 1.00 | 2 |
//! | `sinh` | 2.79 | 3.00 | 3 |
//! | `cosh` | 2.79 | 3.00 | 3 |
//! | `atan` | 2.47 | 1.00 | 3 / 2 |
//! | `asin` | 3.41 | 2.00 | 4 / 2 |
//! | `acos` | 3.18 | 2.00 | 4 / 2 |
//! | `asinh` | 3.36 | 3.00 | 4 / 3 |
//! | `acosh` | 2.34 | 2.00 | 3 |
//! | `atanh` | 3.20 | 3.00 | 4 / 3 |
//! | `erf` | 5.07 | helper | 6 / - |
//! | `erf_inv` | 2.99 | helper | 4 / - |
//!
//! `atan2` shares `atan`'s kernel (its reflections add up to an ulp; the
//! coverage test bounds it at 5 ulp from the interpreter). For `asinh`,
//! `acosh` and `atanh` the f64 reference is an accurate closed form where
//! std's libm loses digits (near -1 for `atanh`, near 1 for `acosh`, past
//! 1e150 for both `asinh` and `acosh`); the interpreter uses std's, so
//! near -1 our `atanh` is the more accurate one.
//!
//! The helper-call functions (`cbrt`, f64 `erf`, `erfc`, f64 `erf_inv`, float
//! `rem`, f64 `pow`, `nextafter`, the special functions) are 0 ulp from the interpreter by construction
//! (same code); `tests/coverage.rs` asserts it.
//!
//! `sin`/`cos`/`tan` use a three-part Cody–Waite reduction (by `π` with one
//! odd polynomial for f32, by `π/2` with both quadrant polynomials for f64):
//! the bounds hold for
//! |x| <= 1e5 (f32) and 1e9 (f64). Lanes beyond take a cold branch to the
//! interpreter's libm `sin`/`cos`, which reduce exactly, so there the
//! results are the interpreter's to the bit (`Lanes::patch`).
//!
//! (f32 errors are fractional: measured against the unrounded f64 value, so
//! 0.5 ulp is the rounding floor. f64 errors are measured against std's
//! libm, itself within about 1 ulp, so they bound ours plus the
//! reference's.) Special values are exact: `exp(-inf) = 0`, `log(0) = -inf`,
//! `log(x < 0) = NaN`, `tanh(±inf) = ±1`, `tanh(-0) = -0`, `expm1(-0) = -0`,
//! NaN in gives NaN out.

#![warn(missing_docs)]

mod codegen;
mod compile;
mod complex;
mod dynamic;
mod error;
pub mod isa;
mod ops;
mod plan;
mod program_cache;
mod run;
mod util;

use jaxon_ir::interp::HostBuffer;
use jaxon_ir::{Backend, Buffer, ClosedJaxpr, Executable, HostArray, IrError};
use program_cache::ProgramCache;
pub use program_cache::DEFAULT_PROGRAM_CACHE_SIZE;
use run::executable::CpuExecutable;
use std::sync::{Arc, Mutex, MutexGuard};

/// The Cranelift CPU backend (`"cpu"`).
pub struct CpuBackend {
    cache: Mutex<ProgramCache<Arc<run::exec::Program>>>,
    dyn_cache: Mutex<ProgramCache<Arc<dynamic::DynProgram>>>,
    pool: Arc<run::pool::Pool>,
    threads: usize,
    opts: util::Options,
}

impl Default for CpuBackend {
    fn default() -> CpuBackend {
        CpuBackend::new()
    }
}

/// How many processes of one MPI job share this host (Open MPI's
/// `OMPI_COMM_WORLD_LOCAL_SIZE`, MPICH's `MPI_LOCALNRANKS`), else 1: each
/// takes an equal share of the cores, as data-parallel ranks should.
fn local_processes() -> usize {
    ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

/// The host device count (`jaxon_ir::devices::host_device_count`: the count
/// set with `set_host_device_count`, else `JAXON_CPU_DEVICES`, else 1, as
/// XLA's host-platform device count); a value that is not a whole number
/// from 1 to 4096 is an error naming it.
pub fn devices_from_env() -> Result<usize, IrError> {
    jaxon_ir::devices::host_device_count()
}

impl CpuBackend {
    /// A backend with an empty compilation cache, using every available
    /// core for large kernels, or this process's share of them when MPI
    /// started several processes on this host (`JAXON_CPU_THREADS`
    /// overrides the count), and
    /// wide tile routines where the CPU has AVX2 or AVX-512 (`JAXON_CPU_WIDE_MATH=0`
    /// turns them off). It has the host device count of CPU devices
    /// ([`devices_from_env`], read whenever it is needed; 1 by default); a
    /// bad `JAXON_CPU_DEVICES` is reported on stderr once and 1 is used
    /// ([`devices_from_env`] returns the error).
    pub fn new() -> CpuBackend {
        if let Err(e) = devices_from_env() {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| eprintln!("jaxon: {e}; using 1 cpu device"));
        }
        let threads = std::env::var("JAXON_CPU_THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .map_or(1, |n| n / local_processes());
        // `JAXON_CPU_WIDE_MATH=0` keeps every function inline at 128 bits.
        let wide = std::env::var("JAXON_CPU_WIDE_MATH").map_or(true, |v| v != "0");
        let exact = std::env::var("JAXON_CPU_EXACT_MATH").is_ok_and(|v| v == "1");
        CpuBackend::with_threads(threads)
            .with_wide_math(wide)
            .with_exact_math(exact)
    }

    /// This backend with `devices` CPU devices (at least 1): a
    /// `shard_map` runs one instance of its body per device of its mesh,
    /// on its own thread, each with an equal share of the backend's
    /// threads; a mesh larger than `devices` is a compile error.
    pub fn with_devices(mut self, devices: usize) -> CpuBackend {
        self.opts.devices = devices.max(1);
        self
    }

    /// A backend whose large kernels run on at most `threads` threads (at
    /// least one).
    pub fn with_threads(threads: usize) -> CpuBackend {
        CpuBackend {
            cache: Mutex::new(ProgramCache::new(program_cache::default_limit())),
            dyn_cache: Mutex::new(ProgramCache::new(program_cache::default_limit())),
            pool: Arc::new(run::pool::Pool::default()),
            threads: threads.max(1),
            opts: util::Options::default(),
        }
    }

    /// Whether to contract `a*b + c` (and `a*b - c`, `c - a*b`) in fused
    /// groups into single-rounding fused multiply-adds. Off by default:
    /// results then differ from the interpreter (and XLA) in the last bits.
    pub fn with_fma_contraction(mut self, on: bool) -> CpuBackend {
        self.opts.contract_fma = on;
        self
    }

    /// Whether f32 `exp`, `log`, `tanh`, `logistic`, `sin`, `cos` and their
    /// kin run as precompiled AVX2 or AVX-512 routines (the widest that
    /// `isa::isa()` allows) over tiles of each fused loop (on by default). Off,
    /// they are emitted inline at 128 bits. Both give the same bits.
    pub fn with_wide_math(mut self, on: bool) -> CpuBackend {
        self.opts.narrow_math = !on;
        self
    }

    /// Whether every float function that the backend otherwise
    /// approximates inline (`exp`, `log`, `tanh`, `logistic`, `sin`, `cos`,
    /// their kin, f32 `erf`/`erf_inv`, `pow` and `atan2`) is computed by a
    /// scalar call of the function the reference interpreter uses (off by
    /// default). Elementwise results are then the interpreter's to the
    /// bit; loops holding such functions run scalar, several times
    /// slower. For differential testing (the `diff` fuzz target), and for
    /// users who need the interpreter's bits. `JAXON_CPU_EXACT_MATH=1`
    /// turns it on in [`CpuBackend::new`].
    pub fn with_exact_math(mut self, on: bool) -> CpuBackend {
        self.opts.exact_math = on;
        self
    }

    /// Keeps at most `limit` (at least 1) compiled static-shape programs,
    /// and as many dynamic-shape ones, evicting the least recently used.
    /// The default is `JAXON_CPU_PROGRAM_CACHE_SIZE` if set, else
    /// [`DEFAULT_PROGRAM_CACHE_SIZE`] (1024). Executables already handed
    /// out keep their program alive.
    pub fn with_program_cache_limit(self, limit: usize) -> CpuBackend {
        lock(&self.cache).set_limit(limit);
        lock(&self.dyn_cache).set_limit(limit);
        self
    }

    /// The step plan of the dynamic-shape program compiled for `jaxpr`
    /// (`None` when it has static shapes or was not compiled): which
    /// equations run as fused kernels, GEMMs, native steps and nested
    /// bodies.
    pub fn dynamic_plan(&self, jaxpr: &ClosedJaxpr) -> Option<String> {
        let key = util::fingerprint(&jaxpr.jaxpr);
        lock(&self.dyn_cache).peek(&key).map(|p| p.plan.clone())
    }

    /// Number of compiled programs the caches hold now (static and
    /// dynamic-shape).
    pub fn cached_programs(&self) -> usize {
        lock(&self.cache).len() + lock(&self.dyn_cache).len()
    }
}

/// Locks a program cache; a poisoned lock (a panic elsewhere while it was
/// held) is recovered, as every update leaves the cache consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl CpuBackend {
    /// Compiles a jaxpr with dynamic dimensions once for every size
    /// (`dynamic`).
    fn compile_dynamic(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        let key = util::fingerprint(&jaxpr.jaxpr);
        let cached = lock(&self.dyn_cache).get(&key);
        let program = match cached {
            Some(p) => p,
            None => {
                let p = Arc::new(dynamic::compile(jaxpr, &key, self.opts.contract_fma)?);
                lock(&self.dyn_cache).insert(key, p.clone());
                p
            }
        };
        Ok(Arc::new(dynamic::DynExecutable {
            program,
            threads: self.threads,
            pool: self.pool.clone(),
        }))
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn device_count(&self) -> usize {
        self.opts.device_count()
    }

    fn clear_cache(&self) {
        lock(&self.cache).clear();
        lock(&self.dyn_cache).clear();
    }

    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        if jaxpr.consts.len() != jaxpr.jaxpr.constvars.len() {
            return Err(IrError::Invalid(format!(
                "closed jaxpr has {} constvars but {} consts",
                jaxpr.jaxpr.constvars.len(),
                jaxpr.consts.len()
            )));
        }
        if complex::uses_complex(&jaxpr.jaxpr) {
            // The kernels are real-only: complex programs take the slow path.
            return Ok(Arc::new(complex::ComplexExecutable::new(jaxpr)?));
        }
        if dynamic::is_dynamic(&jaxpr.jaxpr) {
            return self.compile_dynamic(jaxpr);
        }
        let simple = jaxon_ir::passes::simplify(jaxpr, jaxon_ir::primitive::Platform::Cpu)?;
        let key = util::fingerprint(&simple.jaxpr);
        let cached = lock(&self.cache).get(&key);
        let program = match cached {
            Some(p) => p,
            None => {
                let p = Arc::new(compile::compile_program(&simple, &key, self.opts)?);
                lock(&self.cache).insert(key, p.clone());
                p
            }
        };
        Ok(Arc::new(CpuExecutable {
            program,
            consts: simple.consts,
            threads: self.threads,
            pool: self.pool.clone(),
        }))
    }

    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        let bytes = array.len() * array.dtype().size_bytes();
        let array = if bytes >= run::hugepages::MIN_BYTES {
            HostArray::new(array.shape().to_vec(), run::hugepages::copy(array.data()))?
        } else {
            array.clone()
        };
        Ok(Arc::new(HostBuffer { array }))
    }
}
