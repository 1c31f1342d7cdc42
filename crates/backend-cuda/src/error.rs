//! The CUDA backend's error type: one enum for every stage (KIR checks, the
//! simulator, NVRTC, the driver), each variant naming what failed and where.

use thiserror::Error;

/// Errors of the CUDA backend.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CudaError {
    /// A kernel is not well typed or not well formed (see `kir::verify`).
    #[error("kernel `{kernel}`: invalid KIR: {message}")]
    InvalidKir {
        /// The kernel's name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The simulator found an access outside a buffer, a race on shared
    /// memory between two barriers, or another fault a GPU would have.
    #[error("kernel `{kernel}`: block {block:?} thread {thread:?}: {message}")]
    SimFault {
        /// The kernel's name.
        kernel: String,
        /// The faulting thread's block index.
        block: [u32; 3],
        /// The faulting thread's index in its block.
        thread: [u32; 3],
        /// What went wrong.
        message: String,
    },
    /// A launch does not fit the device or does not match the kernel.
    #[error("kernel `{kernel}`: bad launch: {message}")]
    Launch {
        /// The kernel's name.
        kernel: String,
        /// What is wrong (block size, shared memory, arguments).
        message: String,
    },
    /// NVRTC could not be loaded; the message says how to get it.
    #[error("NVRTC is not available: {0}")]
    NvrtcMissing(String),
    /// NVRTC rejected a program; the log is NVRTC's own.
    #[error("kernel `{kernel}`: NVRTC failed:\n{log}")]
    Compile {
        /// The kernel's name.
        kernel: String,
        /// NVRTC's log.
        log: String,
    },
    /// No CUDA driver or no device.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(String),
    /// NCCL could not be loaded: `libnccl.so.2` is missing, too old, or
    /// lacks an entry point; the message says which.
    #[error("NCCL is not available: {0}")]
    NcclMissing(String),
    /// An NCCL call failed; the message is NCCL's own.
    #[error("NCCL: {0}")]
    Nccl(String),
    /// A collective's arguments do not fit its communicator: a dtype NCCL
    /// cannot carry, buffers of different lengths, the wrong number of
    /// buffers, a rank out of range.
    #[error("NCCL {op}: {message}")]
    Collective {
        /// The collective, e.g. `all_reduce`.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// A run failed as the reference interpreter's would, on a value only
    /// known on the device (a `for_loop` step of 0); the message is the
    /// interpreter's.
    #[error("{0}")]
    Eval(String),
    /// Reading or writing the on-disk kernel cache failed.
    #[error("kernel cache: {0}")]
    Cache(String),
}

/// Results of the CUDA backend.
pub type Result<T, E = CudaError> = std::result::Result<T, E>;
