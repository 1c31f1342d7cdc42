//! The kernel simulator: runs one launch of a KIR [`Kernel`] on the host, so
//! that every kernel can be tested for values on machines with no GPU (as
//! Triton's interpreter mode does).
//!
//! Execution model:
//! - Blocks run one after another, in linear block order (`x` fastest).
//! - The threads of a block run **in lockstep** as a SIMT machine with an
//!   active set: each statement is evaluated for all active threads at once,
//!   in linear thread order (`x + y·bx + z·bx·by`). Every variable is a
//!   column of per-thread values. `If` runs `then` with the threads where
//!   the condition holds, then `otherwise` with the rest; `For`/`While`
//!   iterate while any thread is still in the loop. Warps are 32
//!   consecutive linear thread indices; `LaneId` is the linear index mod 32.
//! - Values follow the `kir` module docs exactly (see [`value`]); math
//!   functions use the host's (see [`mathfn`]); `mma` is in [`mma`].
//! - Atomics apply thread by thread in linear thread order.
//! - Expressions are evaluated only for the threads that need them: a
//!   `Select`'s branches for the threads that take them, a masked access's
//!   index and values for the threads whose mask holds, its `other` for the
//!   rest. Binary operators are strict (`And`/`Or` evaluate both sides).
//!
//! Faults ([`CudaError::SimFault`], naming the kernel, the block and a
//! thread): an out-of-bounds load, store or atomic on a global buffer or a
//! shared array (masked-off accesses never fault); a vector access at an
//! index that is not a multiple of its width; integer division or remainder
//! by zero; a barrier reached by only some threads of the block; a shuffle or
//! `mma` executed by only some lanes of a warp (or in a warp the block does
//! not fill); a shared-memory race, i.e. between two barriers an element
//! written by one thread and read, written or atomically updated by another
//! (atomics do not race with each other); and a loop that runs more than
//! [`MAX_LOOP_TRIPS`] times in one block (an infinite loop).
//!
//! Poison: shared memory starts each block, and every local variable
//! starts each thread, holding a poison value instead of a GPU's garbage:
//! a quiet NaN with payload `0xAB…` for floats (`0x7FC0ABAB` for `f32`),
//! every byte `0xAB` for integers, and `true` for `bool`. Reading it is not
//! a fault, but it makes the bug visible in the results.
//!
//! Invariant: [`launch`] verifies the kernel and checks the launch before
//! running anything; after that the executor relies on the kernel being well
//! typed, and still never panics on any kernel or launch contents.

mod eval;
mod exec;
pub mod mathfn;
mod memory;
pub mod mma;
pub mod value;

#[cfg(test)]
mod tests;

pub use memory::SimBuffer;

use crate::error::{CudaError, Result};
use crate::kir::{verify, Const, Kernel, LaunchDims, ParamKind};

/// The most iterations one loop statement may run in one block before the
/// simulator reports it as an infinite loop.
pub const MAX_LOOP_TRIPS: u64 = 1 << 26;

/// A launch argument, in parameter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A global buffer: an index into the `buffers` slice given to
    /// [`launch`]. Two parameters may name the same buffer.
    Buffer(usize),
    /// A scalar, of the parameter's dtype.
    Scalar(Const),
}

/// What the device allows one launch; [`Default`] is an H100 with static
/// shared memory only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Threads in one block (1024).
    pub max_threads_per_block: u32,
    /// Threads in one block per axis (1024, 1024, 64).
    pub max_block: [u32; 3],
    /// Static shared memory per block, in bytes (48 KiB).
    pub max_shared_bytes_per_block: u64,
    /// Blocks in the grid per axis (2^31 - 1, 65535, 65535).
    pub max_grid: [u32; 3],
    /// Threads in a warp (32; the simulator supports only 32).
    pub warp_size: u32,
    /// Streaming multiprocessors of the modelled device (132, an H100
    /// SXM); grid-stride launches are sized from it (`lower::run::sized`).
    pub sm_count: u32,
}

impl Default for DeviceLimits {
    fn default() -> DeviceLimits {
        DeviceLimits {
            max_threads_per_block: 1024,
            max_block: [1024, 1024, 64],
            max_shared_bytes_per_block: 48 * 1024,
            max_grid: [(1 << 31) - 1, 65535, 65535],
            warp_size: 32,
            sm_count: 132,
        }
    }
}

/// What one launch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Blocks run.
    pub blocks: u64,
    /// Threads run (blocks × threads per block).
    pub threads: u64,
    /// Barriers passed, counted once per block.
    pub barriers: u64,
    /// Statements executed, counted once per active thread.
    pub instructions: u64,
    /// Elements loaded from or stored to global memory.
    pub global_accesses: u64,
    /// Elements loaded from or stored to shared memory.
    pub shared_accesses: u64,
    /// Atomic updates, counted once per thread.
    pub atomics: u64,
    /// Warp shuffles, counted once per warp.
    pub shuffles: u64,
    /// Warp `mma` operations, counted once per warp.
    pub mmas: u64,
}

/// A parameter's value during a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParamVal {
    /// An index into the launch's buffers.
    Buffer(usize),
    /// A scalar's bits.
    Scalar(u64),
}

/// Runs one launch of `kernel` on the host, updating `buffers` in place.
///
/// First the kernel is verified ([`verify::verify`]; its errors are
/// [`CudaError::InvalidKir`]) and the launch checked: the argument count and
/// kinds (a buffer of the parameter's dtype, a scalar `Const` of its dtype),
/// block and grid sizes (nonzero, within the kernel's `max_threads` and the
/// limits) and shared memory; those errors are [`CudaError::Launch`]. Then
/// every block runs; faults are [`CudaError::SimFault`].
pub fn launch(
    kernel: &Kernel,
    dims: LaunchDims,
    buffers: &mut [SimBuffer],
    args: &[Arg],
    limits: &DeviceLimits,
) -> Result<SimStats> {
    verify::verify(kernel)?;
    let params = check_launch(kernel, &dims, buffers, args, limits)?;
    exec::run(kernel, dims, buffers, params)
}

/// Checks a launch against the kernel and the device (see [`launch`]) and
/// resolves the arguments.
pub(crate) fn check_launch(
    kernel: &Kernel,
    dims: &LaunchDims,
    buffers: &[SimBuffer],
    args: &[Arg],
    limits: &DeviceLimits,
) -> Result<Vec<ParamVal>> {
    let err = |message: String| CudaError::Launch {
        kernel: kernel.name.clone(),
        message,
    };
    if limits.warp_size != 32 {
        return Err(err(format!(
            "warp size {} is not supported (only 32)",
            limits.warp_size
        )));
    }
    if dims.block.contains(&0) || dims.grid.contains(&0) {
        return Err(err(format!(
            "grid {:?} and block {:?} must have no zero dimension",
            dims.grid, dims.block
        )));
    }
    let threads = dims.threads_per_block();
    if threads > u64::from(kernel.max_threads) {
        return Err(err(format!(
            "block {:?} has {threads} threads, more than the kernel's max_threads {}",
            dims.block, kernel.max_threads
        )));
    }
    if threads > u64::from(limits.max_threads_per_block) {
        return Err(err(format!(
            "block {:?} has {threads} threads; the device allows {}",
            dims.block, limits.max_threads_per_block
        )));
    }
    for axis in 0..3 {
        if dims.block[axis] > limits.max_block[axis] {
            return Err(err(format!(
                "block {:?} exceeds the device's block limits {:?}",
                dims.block, limits.max_block
            )));
        }
        if dims.grid[axis] > limits.max_grid[axis] {
            return Err(err(format!(
                "grid {:?} exceeds the device's grid limits {:?}",
                dims.grid, limits.max_grid
            )));
        }
    }
    let shared = kernel.shared_bytes();
    if shared > limits.max_shared_bytes_per_block {
        return Err(err(format!(
            "the kernel uses {shared} bytes of shared memory; the device allows {}",
            limits.max_shared_bytes_per_block
        )));
    }
    if args.len() != kernel.params.len() {
        return Err(err(format!(
            "{} arguments for {} parameters",
            args.len(),
            kernel.params.len()
        )));
    }
    let mut params = Vec::with_capacity(args.len());
    for (i, (arg, param)) in args.iter().zip(&kernel.params).enumerate() {
        let name = &param.name;
        let val = match (*arg, param.kind) {
            (Arg::Buffer(b), ParamKind::Global { dtype, .. }) => {
                let buf = buffers.get(b).ok_or_else(|| {
                    err(format!(
                        "argument {i} (`{name}`) names buffer {b}, but there are {} buffers",
                        buffers.len()
                    ))
                })?;
                if buf.dtype != dtype {
                    return Err(err(format!(
                        "argument {i} (`{name}`) is a buffer of {}, the parameter wants {dtype}",
                        buf.dtype
                    )));
                }
                if buf.bytes.len() % dtype.size_bytes() != 0 {
                    return Err(err(format!(
                        "argument {i} (`{name}`): {} bytes is not a whole number of {dtype}",
                        buf.bytes.len()
                    )));
                }
                ParamVal::Buffer(b)
            }
            (Arg::Scalar(c), ParamKind::Scalar(dtype)) => {
                if c.dtype != dtype {
                    return Err(err(format!(
                        "argument {i} (`{name}`) is a scalar of {}, the parameter wants {dtype}",
                        c.dtype
                    )));
                }
                ParamVal::Scalar(value::canon(dtype, c.bits))
            }
            (Arg::Scalar(c), ParamKind::Global { dtype, .. }) => {
                return Err(err(format!(
                    "argument {i} (`{name}`) is a scalar of {}, the parameter wants a buffer of {dtype}",
                    c.dtype
                )))
            }
            (Arg::Buffer(_), ParamKind::Scalar(dtype)) => {
                return Err(err(format!(
                    "argument {i} (`{name}`) is a buffer, the parameter wants a scalar of {dtype}"
                )))
            }
        };
        params.push(val);
    }
    Ok(params)
}
