//! Device buffers and the pinned staging memory that transfers go through.
//!
//! Invariants:
//! - A [`DeviceBuffer`] owns `len * dtype.size_bytes()` bytes of device memory
//!   from the pool, freed on the device's stream when it is dropped, so a
//!   kernel queued before the drop still sees the memory.
//! - The staging memory is reused only after the copy that last used it has
//!   completed (an event recorded after each copy is waited on first).

use super::{driver, Device};
use crate::error::{CudaError, Result};
use cudarc::driver::{result as drv, sys};
use jaxon_ir::DType;
use std::sync::Arc;

/// An array's elements in device memory.
pub struct DeviceBuffer {
    device: Arc<Device>,
    ptr: sys::CUdeviceptr,
    dtype: DType,
    len: usize,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({} x {})", self.len, self.dtype)
    }
}

impl DeviceBuffer {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * self.dtype.size_bytes()
    }
    /// The device the buffer lives on.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }
    /// The raw device address (0 for an empty buffer).
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let freed = self.device.bind().and_then(|()| {
            // SAFETY: `ptr` came from `malloc_async` on this stream and is
            // freed once, here.
            unsafe { drv::free_async(self.ptr, self.device.cu_stream()) }
                .map_err(driver("freeing device memory"))
        });
        if let Err(e) = freed {
            tracing::warn!("{e}");
        }
    }
}

/// Pinned host memory for transfers, and the event that says when its last
/// copy finished.
#[derive(Default)]
pub(super) struct Staging {
    ptr: usize,
    capacity: usize,
    event: Option<usize>,
}

// SAFETY: the pointers are owned by the staging area and used under the
// device's mutex only.
unsafe impl Send for Staging {}

impl Staging {
    /// Waits for the last copy, then makes room for `bytes`.
    fn reserve(&mut self, bytes: usize) -> Result<()> {
        if let Some(ev) = self.event {
            // SAFETY: the event was created by `mark` and is live.
            unsafe { drv::event::synchronize(ev as sys::CUevent) }
                .map_err(driver("waiting for a transfer"))?;
        }
        if bytes <= self.capacity {
            return Ok(());
        }
        self.release();
        let capacity = bytes.next_power_of_two().max(1 << 20);
        // SAFETY: allocates pinned host memory; freed in `release`.
        let ptr = unsafe { drv::malloc_host(capacity, 0) }
            .map_err(driver("allocating pinned staging memory"))?;
        self.ptr = ptr as usize;
        self.capacity = capacity;
        Ok(())
    }

    /// The first `bytes` of the staging memory.
    fn slice(&mut self, bytes: usize) -> &mut [u8] {
        // SAFETY: `reserve(bytes)` made `capacity >= bytes` pinned bytes at
        // `ptr`, and no copy is in flight.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, bytes) }
    }

    /// Records that a copy was queued on `stream`.
    fn mark(&mut self, stream: sys::CUstream) -> Result<()> {
        let ev = match self.event {
            Some(ev) => ev as sys::CUevent,
            None => {
                let ev = drv::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                    .map_err(driver("creating an event"))?;
                self.event = Some(ev as usize);
                ev
            }
        };
        // SAFETY: event and stream are live.
        unsafe { drv::event::record(ev, stream) }.map_err(driver("recording an event"))
    }

    fn release(&mut self) {
        if self.ptr != 0 {
            // SAFETY: allocated by `malloc_host`, no copy in flight.
            if let Err(e) = unsafe { drv::free_host(self.ptr as *mut std::ffi::c_void) } {
                tracing::warn!("freeing pinned memory: {e:?}");
            }
            self.ptr = 0;
            self.capacity = 0;
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(ev) = self.event.take() {
            // SAFETY: created by `mark`; waited on before destroying.
            unsafe {
                let _ = drv::event::synchronize(ev as sys::CUevent);
                let _ = drv::event::destroy(ev as sys::CUevent);
            }
        }
        self.release();
    }
}

impl Device {
    /// Allocates `len` elements of `dtype`, uninitialised.
    pub fn alloc(self: &Arc<Self>, dtype: DType, len: usize) -> Result<DeviceBuffer> {
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or_else(|| {
            CudaError::Driver(format!(
                "{len} elements of {dtype} overflow the address space"
            ))
        })?;
        self.bind()?;
        let ptr = if bytes == 0 {
            0
        } else {
            // SAFETY: the stream is live; the memory is freed in Drop.
            unsafe { drv::malloc_async(self.cu_stream(), bytes) }.map_err(|e| {
                CudaError::Driver(format!(
                    "allocating {bytes} bytes ({len} x {dtype}) on {}: {e:?}",
                    self.info.name
                ))
            })?
        };
        Ok(DeviceBuffer {
            device: self.clone(),
            ptr,
            dtype,
            len,
        })
    }

    /// Copies host bytes (`len` little-endian elements of `dtype`) into a new
    /// buffer. Returns once the bytes are staged; the copy itself runs
    /// in stream order.
    pub fn upload(self: &Arc<Self>, dtype: DType, bytes: &[u8]) -> Result<DeviceBuffer> {
        let size = dtype.size_bytes();
        if !bytes.len().is_multiple_of(size) {
            return Err(CudaError::Driver(format!(
                "{} bytes are not a whole number of {dtype} elements",
                bytes.len()
            )));
        }
        let buf = self.alloc(dtype, bytes.len() / size)?;
        if bytes.is_empty() {
            return Ok(buf);
        }
        let mut staging = self.staging.lock().map_err(|_| poisoned())?;
        staging.reserve(bytes.len())?;
        staging.slice(bytes.len()).copy_from_slice(bytes);
        // SAFETY: the destination holds `bytes.len()` bytes; the pinned source
        // stays untouched until the event recorded next has completed.
        unsafe {
            drv::memcpy_htod_async(buf.ptr, staging.slice(bytes.len()), self.cu_stream())
                .map_err(driver("copying to the device"))?;
        }
        staging.mark(self.cu_stream())?;
        Ok(buf)
    }

    /// Copies a buffer's bytes back to the host, after all work queued
    /// before it; reports the first error of that work.
    pub fn download(&self, buf: &DeviceBuffer) -> Result<Vec<u8>> {
        let n = buf.num_bytes();
        self.bind()?;
        if n == 0 {
            self.synchronize()?;
            return Ok(Vec::new());
        }
        let mut staging = self.staging.lock().map_err(|_| poisoned())?;
        staging.reserve(n)?;
        // SAFETY: the source holds `n` bytes; the pinned destination is ours
        // until the stream is synchronised below.
        unsafe {
            drv::memcpy_dtoh_async(staging.slice(n), buf.ptr, self.cu_stream())
                .map_err(driver("copying from the device"))?;
        }
        self.synchronize()?;
        Ok(staging.slice(n).to_vec())
    }
}

fn poisoned() -> CudaError {
    CudaError::Driver("a thread panicked while holding the staging memory".into())
}
