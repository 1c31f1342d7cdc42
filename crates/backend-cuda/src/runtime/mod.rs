//! The GPU runtime: one [`Device`] per GPU, holding its context, its one
//! compute stream, its memory pool and the modules loaded on it.
//!
//! Invariants:
//! - Every driver entry point is reached only after [`Device::open`] found the
//!   driver library (`is_culib_present`) and a device; a missing driver or GPU
//!   is [`CudaError::NoDevice`], never a panic (cudarc panics on a missing
//!   library, so the check comes first, and `open` also catches a panic from a
//!   driver whose symbols are older than CUDA 13.0).
//! - All work of a device goes to its one stream, in order. Nothing waits for
//!   the GPU except reading a result ([`Device::download`]) and
//!   [`Device::synchronize`]; launches and copies into device memory return
//!   at once.
//! - Device memory comes from the device's default memory pool with its
//!   release threshold raised to the maximum, so memory freed on the stream
//!   is reused by later allocations without returning to the driver: a
//!   steady state of calls allocates nothing new from the driver.
//! - cudarc's event tracking is off: one stream needs none.

mod buffer;
mod module;

pub use buffer::DeviceBuffer;
pub use module::{DeviceArg, Function, Module};

use crate::error::{CudaError, Result};
use cudarc::driver::{result as drv, sys, CudaContext, CudaStream, DriverError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// Facts about a device that launches and kernel choices depend on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Threads per block, at most.
    pub max_threads_per_block: u32,
    /// Static shared memory per block, at most (bytes).
    pub max_shared_per_block: u64,
    /// Shared memory per block a kernel may opt into (bytes).
    pub max_shared_per_block_optin: u64,
    /// Global memory (bytes).
    pub total_memory: u64,
    /// The driver's CUDA version, e.g. 13000.
    pub driver_version: i32,
}

impl DeviceInfo {
    /// The `sm_XX` name of the device's architecture.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// One GPU: context, stream, memory pool, pinned staging.
pub struct Device {
    // Fields drop in order: the staging memory and its event, then the
    // stream, then the context they live in.
    /// Pinned host memory that transfers go through (grown on demand).
    staging: Mutex<buffer::Staging>,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("info", &self.info).finish()
    }
}

/// Turns a driver error into ours, with what was being done.
pub(crate) fn driver(what: &str) -> impl Fn(DriverError) -> CudaError + '_ {
    move |e| CudaError::Driver(format!("{what}: {e:?}"))
}

/// True if the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by its names.
    unsafe { sys::is_culib_present() }
}

/// The number of CUDA devices, or why there are none.
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(CudaError::NoDevice(
            "the CUDA driver library (libcuda.so.1) was not found; install an NVIDIA driver".into(),
        ));
    }
    let count = catch_unwind(|| {
        drv::init()?;
        drv::device::get_count()
    })
    .map_err(|_| CudaError::NoDevice("the CUDA driver is older than CUDA 13.0".into()))?
    .map_err(|e| CudaError::NoDevice(format!("the CUDA driver failed to start: {e:?}")))?;
    Ok(count.max(0) as usize)
}

impl Device {
    /// Opens GPU `ordinal`: retains its primary context and creates the
    /// device's stream.
    pub fn open(ordinal: usize) -> Result<Arc<Device>> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice(format!(
                "device {ordinal} was asked for, but the driver reports {count} device(s)"
            )));
        }
        catch_unwind(AssertUnwindSafe(|| Device::open_unchecked(ordinal))).map_err(|_| {
            CudaError::NoDevice("the CUDA driver lacks an entry point of CUDA 13.0".into())
        })?
    }

    fn open_unchecked(ordinal: usize) -> Result<Arc<Device>> {
        let ctx = CudaContext::new(ordinal).map_err(driver("creating the context"))?;
        // SAFETY: all of a device's work goes to its one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(driver("creating the stream"))?;
        let attr = |a: sys::CUdevice_attribute| {
            ctx.attribute(a)
                .map_err(driver("reading a device attribute"))
        };
        use sys::CUdevice_attribute as A;
        let mut driver_version = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(driver("reading the driver version"))?;
        let info = DeviceInfo {
            name: ctx.name().map_err(driver("reading the device name"))?,
            compute_capability: ctx
                .compute_capability()
                .map_err(driver("reading the compute capability"))?,
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
            max_shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u64,
            max_shared_per_block_optin: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as u64,
            total_memory: ctx.total_mem().map_err(driver("reading the memory size"))? as u64,
            driver_version,
        };
        // Keep freed memory in the pool: raise its release threshold.
        // SAFETY: the device handle comes from the context just created; the
        // attribute takes a u64.
        unsafe {
            let pool = drv::device::get_default_mem_pool(ctx.cu_device())
                .map_err(driver("getting the memory pool"))?;
            let mut threshold = u64::MAX;
            drv::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
            .map_err(driver("setting the pool's release threshold"))?;
        }
        tracing::info!(
            device = %info.name,
            arch = %info.arch(),
            sms = info.sm_count,
            "opened CUDA device {ordinal}"
        );
        Ok(Arc::new(Device {
            ctx,
            stream,
            info,
            staging: Mutex::new(buffer::Staging::default()),
        }))
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's ordinal (its index in the driver's list).
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// Makes the device's context current on this thread.
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the context"))
    }

    /// The raw stream all work goes to.
    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// Waits until all work queued on the device has finished, and reports
    /// the first asynchronous error of that work (a faulting kernel).
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        self.stream
            .synchronize()
            .map_err(driver("waiting for the stream"))
    }
}
