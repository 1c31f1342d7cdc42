//! `jaxon`: JAX for Rust. Write array programs as Rust closures over
//! [`Array`]s; trace them to jaxprs with [`make_jaxpr`], stage and compile
//! them with [`jit`](fn@jit).
//!
//! ```
//! use jaxon::prelude::*;
//!
//! let f = |x: Array| (x.sin() * 3.0 + 1.0).sum(All);
//! let x = Array::from_vec(vec![0.5f32, -1.0, 2.0], &[3]);
//! println!("{}", make_jaxpr(f)(x.clone())?);
//! let y = jit(f).call(x)?;
//! assert!((y.item::<f32>() - (3.0 + 3.0 * (0.5f32.sin() - 1f32.sin() + 2f32.sin()))).abs() < 1e-5);
//! # Ok::<(), jaxon::Error>(())
//! ```
//!
//! This crate re-exports the user API of the layers below it: `jaxon-ir`
//! (the jaxpr language, as [`ir`]) and `jaxon-trace` (arrays, tracing,
//! `jit`, the `lax` and `numpy` APIs, control flow including `for_loop`,
//! dynamic shapes as [`dynshape`], `random`, pytrees) and
//! `jaxon-transforms` (`jvp`, `vmap`, `grad`, `vjp`, `linearize`,
//! `linear_transpose`, Jacobians, custom rules, `checkpoint`, named-axis
//! [`collectives`]), and `jaxon-pallas` as [`pallas`]. User programs need no
//! other jaxon crate.
//!
//! # Errors
//!
//! Entry points (`jit(..).call`, `grad`, `make_jaxpr`, [`catch`], ...)
//! return `Result<_, Error>`. Operators such as `&a + &b` cannot: inside an
//! entry point their errors come back as that entry point's `Err`; outside
//! any (eager code in `main`) they panic with the error's message.
//!
//! # Backends
//!
//! Eager operations and `jit` run on the CPU backend (`jaxon-backend-cpu`,
//! Cranelift-compiled native code) by default on a machine without a GPU.
//! The reference interpreter
//! stays registered as `"interpreter"`: select it for a block with
//! [`with_backend`], for the process with [`set_default_backend`], or from
//! the environment with `JAXON_BACKEND=interpreter`. The CUDA backends are
//! registered too: `"cuda"` runs the CUDA lowering's launch plans on a GPU
//! and, as in JAX, is the default on a machine with a GPU (and NVRTC);
//! `JAXON_BACKEND=cpu` keeps such a machine on the CPU. `"cuda-sim"` runs
//! the same plans on the kernel simulator (no GPU needed; for testing,
//! slow; never the default). Primitives the CUDA lowering does not cover
//! yet are an [`Error`] naming the primitive, not a panic.

#![warn(missing_docs)]

// `#[derive(Pytree)]` names this crate as `::jaxon` (see `jaxon-macros`).
extern crate self as jaxon;

pub use jaxon_ir as ir;
pub use jaxon_ir::DType;
pub use jaxon_macros::Pytree;
/// Pallas kernels: `Ref`s, `BlockSpec`s and `pallas_call` (`jaxon-pallas`).
pub use jaxon_pallas as pallas;
pub use jaxon_trace::control::{
    cond, for_loop, for_loop_with, fori_loop, scan, switch, while_loop, while_loop_with, ForBound,
    ForLoopOptions, LoopBound,
};
/// Dynamic shapes: sizes that are traced integers (`Size`, `sizes`,
/// `size_of`), and creation and structural operations that accept them.
pub use jaxon_trace::dynshape;
pub use jaxon_trace::error::ok_or_raise;
pub use jaxon_trace::jit::{disable_jit, DisableJit};
pub use jaxon_trace::numpy::{
    numpy_dtype_promotion, numpy_rank_promotion, DtypePromotion, PromotionGuard, RankPromotion,
};
pub use jaxon_trace::pytree::{
    tree_leaves, tree_leaves_with_path, tree_map, tree_map2, tree_map_n, tree_reduce,
    tree_structure, Pytree, TreeDef,
};
/// `jax.tree_util`: flatten and unflatten, key paths, `tree_all`,
/// `tree_transpose`.
pub use jaxon_trace::tree_util;
pub use jaxon_trace::tree_util::{
    keystr, tree_all, tree_flatten, tree_flatten_with_path, tree_map_with_path, tree_transpose,
    tree_unflatten, KeyPath, PathKey,
};
pub use jaxon_trace::{
    catch, catch_flat, eval_shape, jit, make_jaxpr, pytree, raise, random, register_backend,
    set_default_backend, with_backend, Array, Element, Error, Jit, Result, Static, WeakScalar,
};
pub use jaxon_trace::{debug, index, nn, scipy};
/// `jax.pure_callback`: a host function inside traced code.
pub use jaxon_trace::{pure_callback, VmapMethod};
pub mod distributed;
/// `jax.process_index()` and `jax.process_count()`: this process's place
/// in the [`distributed`] group (0 of 1 without a session).
pub use distributed::{process_count, process_index};
pub mod io;
mod placement;
mod program;
pub mod sharding;
/// `jax.checkpoint_policies`: what [`checkpoint()`]`(f).policy(..)` saves.
pub use jaxon_transforms::checkpoint_policies;
/// `jax.jacobian`: JAX's alias of [`jacrev`] (reverse mode).
pub use jaxon_transforms::jacobian;
pub use jaxon_transforms::linearize::{Linearized, Pullback};
/// `P!(...)`: JAX's `PartitionSpec` (`P!()`, `P!("x")`, `P!(None, "x")`).
pub use jaxon_transforms::P;
pub use jaxon_transforms::{
    checkpoint, custom_jvp, custom_vjp, grad, grad_and_aux, grad_with, hessian, jacfwd, jacrev,
    jvp, linear_transpose, linear_transpose_tree, linearize, remat, value_and_grad,
    value_and_grad_with, vjp, vmap, Argnums, Axes, Checkpoint, CustomJvp, CustomVjp, GradOutput,
    Jacobian, Vmap,
};
pub use jaxon_transforms::{pmap, shard_map, Pmap, ShardMap, Specs};
pub use placement::{device_put_on, ArrayDevices};
pub use program::{call_jaxpr, load_jaxpr};
pub use sharding::{
    addressable_shards, default_backend, device_count, device_put_sharded, devices,
    local_device_count, local_devices, make_mesh, named_sharding, set_cpu_device_count,
    sharding_of, with_sharding_constraint, Device, Mesh, NamedSharding, PartitionSpec, Shard,
};
/// `jax.numpy`: `jaxon_trace::numpy`, and `vectorize` (built on `vmap`).
pub mod numpy {
    pub use jaxon_trace::numpy::*;
    pub use jaxon_transforms::vectorize::{vectorize, Vectorized};
}

/// `jax.lax`: one function per primitive (`jaxon_trace::lax`), the
/// functions built on transforms (`custom_linear_solve`, `map`,
/// `custom_root`) and the named-axis collectives (also in
/// [`collectives`]).
pub mod lax {
    pub use crate::sharding::with_sharding_constraint;
    pub use jaxon_trace::lax::*;
    pub use jaxon_transforms::lax_fns::{custom_root, map, RootSolver};
    pub use jaxon_transforms::linear_solve::{custom_linear_solve, Solver, Transpose};
    pub use jaxon_transforms::spmd::{all_to_all, ppermute, psum_scatter};
    pub use jaxon_transforms::{all_gather, axis_index, pmax, pmean, pmin, psum};
}

/// `jax.ad_checkpoint.checkpoint_name`.
pub use jaxon_trace::lax::checkpoint_name;

/// Named-axis collectives: inside `vmap(..).axis_name(..)`, and inside
/// [`shard_map`] and [`pmap`] over their mesh axes (`ppermute`,
/// `all_to_all`, `psum_scatter` and `all_gather_with` over mesh axes only).
pub mod collectives {
    pub use jaxon_transforms::spmd::{all_gather_with, all_to_all, ppermute, psum_scatter};
    pub use jaxon_transforms::{all_gather, axis_index, pmax, pmean, pmin, psum};
}

/// The CPU backend, registered under `"cpu"`: the default backend of every
/// program that links this crate, unless the machine has a GPU.
pub use jaxon_backend_cpu as backend_cpu;

inventory::submit! {
    jaxon_trace::eval::BackendProvider {
        name: "cpu",
        priority: 10,
        make: || std::sync::Arc::new(jaxon_backend_cpu::CpuBackend::new()),
        available: jaxon_trace::eval::always,
    }
}

/// The CUDA backends (`jaxon-backend-cuda`): `"cuda-sim"` runs the lowered
/// launch plans on the kernel simulator (no GPU needed; slow, for testing;
/// never the default), `"cuda"` runs the same plans on GPU 0. As in JAX,
/// `"cuda"` is the default backend when the machine has a GPU (and NVRTC to
/// compile for it), else `"cpu"`; `JAXON_BACKEND` or [`with_backend`]
/// chooses otherwise.
pub use jaxon_backend_cuda as backend_cuda;

/// Whether this machine can run the `cuda` backend: a driver with at least
/// one device, and NVRTC. Asked once, when the backend registry is built;
/// without a driver it costs one failed `dlopen`.
fn gpu_present() -> bool {
    let devices = jaxon_backend_cuda::runtime::device_count().unwrap_or(0);
    devices > 0 && jaxon_backend_cuda::nvrtc::nvrtc_version().is_ok()
}

inventory::submit! {
    jaxon_trace::eval::BackendProvider {
        name: "cuda-sim",
        priority: -10,
        make: || std::sync::Arc::new(jaxon_backend_cuda::lower::CudaSimBackend::new()),
        available: jaxon_trace::eval::always,
    }
}

// Creating `cuda` touches no driver: `CudaBackend::new` only records the
// choice, and the device (driver, NVRTC, cuBLASLt) is opened when a program
// first runs, so a machine without a GPU gets an error naming what is
// missing at that point, never at start-up. `gpu_present` decides whether
// it is the default.
inventory::submit! {
    jaxon_trace::eval::BackendProvider {
        name: "cuda",
        priority: 20,
        make: || std::sync::Arc::new(jaxon_backend_cuda::lower::CudaBackend::new()),
        available: gpu_present,
    }
}

/// The backend eager operations and `jit` use right now.
pub fn eval_backend() -> Result<std::sync::Arc<dyn ir::Backend>> {
    jaxon_trace::eval::current_backend()
}

/// `jax.device_put(x)`: `x`'s values placed on the current backend's
/// device, so that the calls that take it do not copy it there again
/// (under `cuda`, a GPU-resident array; the host backends hold their
/// arrays in host memory anyway). A tracer is a concretization error.
pub fn device_put(x: &Array) -> Result<Array> {
    let host = x.try_to_host("device_put")?;
    let buffer = eval_backend()?.to_device(&host)?;
    Ok(Array::from_buffer_weak(buffer, x.weak_type()))
}

/// `jax.device_get(x)`: every array leaf of `x` copied to host memory (a
/// tracer is a concretization error). Host arrays come back unchanged in
/// value; GPU-resident ones are read back.
pub fn device_get<T: Pytree>(x: &T) -> Result<T> {
    let (leaves, def) = x.flatten();
    let host = leaves
        .iter()
        .map(|a| Ok(Array::from_host(a.try_to_host("device_get")?)))
        .collect::<Result<Vec<_>>>()?;
    T::unflatten(&def, host)
}

/// `jax.typeof(x)` (`typeof` is reserved in Rust): `x`'s abstract value,
/// its shape and dtype (`f32[2,3]`), for concrete arrays and tracers alike.
pub fn typeof_(x: &Array) -> ir::Aval {
    x.aval().clone()
}

/// Empties every compile cache (JAX's `jax.clear_caches()`): the staged
/// signatures of every live `jit` function, every thread's eager-operation
/// cache and every registered backend's compiled programs. The next call
/// of any function traces and compiles afresh (used to time cold
/// compiles); executables and arrays already handed out stay valid.
///
/// The caches are bounded on their own: `jit` keeps 4096 signatures per
/// function (`Jit::cache_limit`, `JAXON_JIT_CACHE_SIZE`) and the CPU
/// backend 1024 programs (`CpuBackend::with_program_cache_limit`,
/// `JAXON_CPU_PROGRAM_CACHE_SIZE`), least recently used first out.
/// Never fails; the `Result` is kept for compatibility.
pub fn clear_caches() -> Result<()> {
    jaxon_trace::clear_caches();
    Ok(())
}

/// Coming from JAX: how `jit`, `grad`, `vmap`, pytrees, static arguments,
/// errors, `random`, `lax` control flow and Pallas are spelled in jaxon
/// (`docs/jax-to-jaxon.md`; its examples run as this crate's doc-tests).
#[doc = include_str!("../../../docs/jax-to-jaxon.md")]
pub mod jax_to_jaxon {}

/// Everything a program usually needs: `use jaxon::prelude::*;`.
pub mod prelude {
    pub use crate::numpy as jnp;
    pub use crate::numpy::All;
    pub use crate::placement::ArrayDevices;
    pub use crate::{
        cond, fori_loop, grad, hessian, jacfwd, jacrev, jit, jvp, lax, make_jaxpr, random, scan,
        switch, value_and_grad, vjp, vmap, while_loop, Array, DType, Error, Result, Static,
    };
    /// The derive only: the `Pytree` trait stays out of the prelude, so its
    /// `flatten` never competes with other traits' methods.
    pub use jaxon_macros::Pytree;
}
