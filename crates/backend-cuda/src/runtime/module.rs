//! Loaded modules (CUBINs), their kernels, and launches.
//!
//! Invariants:
//! - A [`Function`] keeps its [`Module`] alive, and a module its device.
//! - A launch is checked before it reaches the driver: argument count, kind
//!   and dtype against the kernel's parameters, block size against the
//!   kernel's `max_threads` and the device, and static shared memory against
//!   the device, so a bad launch is an error naming the kernel, not a fault.

use super::{driver, Device, DeviceBuffer};
use crate::error::{CudaError, Result};
use crate::kir::{Const, Kernel, LaunchDims, ParamKind};
use cudarc::driver::{result as drv, sys};
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// A CUBIN loaded on a device.
pub struct Module {
    device: Arc<Device>,
    module: sys::CUmodule,
}

// SAFETY: a CUmodule handle may be used from any thread once its context is
// current; every use binds the device's context first.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        let unloaded = self.device.bind().and_then(|()| {
            // SAFETY: loaded by `load_module`, unloaded once, here; functions
            // hold an Arc to the module, so none is left.
            unsafe { drv::module::unload(self.module) }.map_err(driver("unloading a module"))
        });
        if let Err(e) = unloaded {
            tracing::warn!("{e}");
        }
    }
}

/// One kernel of a loaded module, with the signature it was compiled from.
pub struct Function {
    module: Arc<Module>,
    func: sys::CUfunction,
    name: String,
    params: Vec<ParamKind>,
    max_threads: u32,
    shared_bytes: u64,
}

// SAFETY: as for `Module`.
unsafe impl Send for Function {}
unsafe impl Sync for Function {}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One launch argument.
#[derive(Clone, Copy, Debug)]
pub enum DeviceArg<'a> {
    /// A buffer, for a `Global` parameter.
    Buffer(&'a DeviceBuffer),
    /// A value, for a `Scalar` parameter.
    Scalar(Const),
}

impl Device {
    /// Loads a CUBIN.
    pub fn load_module(self: &Arc<Self>, cubin: &[u8]) -> Result<Arc<Module>> {
        self.bind()?;
        // The driver reads the image as an ELF file: give it 8-byte alignment.
        let mut image = vec![0u64; cubin.len().div_ceil(8)];
        // SAFETY: `image` has at least `cubin.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(cubin.as_ptr(), image.as_mut_ptr().cast(), cubin.len())
        };
        // SAFETY: the image is a complete CUBIN the driver copies on load.
        let module = unsafe { drv::module::load_data(image.as_ptr().cast()) }
            .map_err(driver("loading a CUBIN"))?;
        Ok(Arc::new(Module {
            device: self.clone(),
            module,
        }))
    }

    /// Launches `f` with `args` on the device's stream; returns at once.
    pub fn launch(&self, f: &Function, dims: LaunchDims, args: &[DeviceArg<'_>]) -> Result<()> {
        let bad = |message: String| CudaError::Launch {
            kernel: f.name.clone(),
            message,
        };
        self.check_dims(f, dims).map_err(bad)?;
        if args.len() != f.params.len() {
            return Err(bad(format!(
                "{} arguments for {} parameters",
                args.len(),
                f.params.len()
            )));
        }
        // Each argument's bytes, in a u64 slot the driver reads from.
        let mut slots = vec![0u64; args.len()];
        for (i, (arg, param)) in args.iter().zip(&f.params).enumerate() {
            slots[i] = match (*arg, *param) {
                (DeviceArg::Buffer(b), ParamKind::Global { dtype, .. }) => {
                    if b.dtype() != dtype {
                        return Err(bad(format!(
                            "argument {i} is a {} buffer, parameter wants {dtype}",
                            b.dtype()
                        )));
                    }
                    if !Arc::ptr_eq(b.device(), &f.module.device) {
                        return Err(bad(format!("argument {i} lives on another device")));
                    }
                    b.ptr()
                }
                (DeviceArg::Scalar(c), ParamKind::Scalar(dtype)) => {
                    if c.dtype != dtype {
                        return Err(bad(format!(
                            "argument {i} is a {} scalar, parameter wants {dtype}",
                            c.dtype
                        )));
                    }
                    // Little-endian: the value's low bytes come first, as
                    // the kernel reads them at its width.
                    c.bits
                }
                (DeviceArg::Buffer(_), ParamKind::Scalar(d)) => {
                    return Err(bad(format!("argument {i} is a buffer, parameter is a {d}")))
                }
                (DeviceArg::Scalar(_), ParamKind::Global { dtype, .. }) => {
                    return Err(bad(format!(
                        "argument {i} is a scalar, parameter is a {dtype} buffer"
                    )))
                }
            };
        }
        let mut ptrs: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| (s as *mut u64).cast::<c_void>())
            .collect();
        self.bind()?;
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // SAFETY: the function is live (its module is held by `f`), each
        // pointer addresses a slot holding the argument at the parameter's
        // width, and buffers are live device allocations checked above.
        unsafe {
            drv::launch_kernel(
                f.func,
                (gx, gy, gz),
                (bx, by, bz),
                0,
                self.cu_stream(),
                &mut ptrs,
            )
        }
        .map_err(|e| bad(format!("the driver refused the launch: {e:?}")))
    }

    fn check_dims(&self, f: &Function, dims: LaunchDims) -> std::result::Result<(), String> {
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Err(format!("empty launch {dims:?}"));
        }
        let threads = dims.threads_per_block();
        if threads > u64::from(f.max_threads) {
            return Err(format!(
                "{threads} threads per block, the kernel is written for at most {}",
                f.max_threads
            ));
        }
        if threads > u64::from(self.info.max_threads_per_block) {
            return Err(format!(
                "{threads} threads per block, {} allows {}",
                self.info.name, self.info.max_threads_per_block
            ));
        }
        if f.shared_bytes > self.info.max_shared_per_block {
            return Err(format!(
                "{} bytes of shared memory, {} allows {}",
                f.shared_bytes, self.info.name, self.info.max_shared_per_block
            ));
        }
        if dims.grid[1] > 65535 || dims.grid[2] > 65535 || dims.grid[0] > i32::MAX as u32 {
            return Err(format!("grid {:?} exceeds the device's limits", dims.grid));
        }
        Ok(())
    }
}

impl Module {
    /// The kernel `kernel.name` of this module, which must have been compiled
    /// from `kernel`.
    pub fn function(self: &Arc<Self>, kernel: &Kernel) -> Result<Function> {
        self.device.bind()?;
        let cname = CString::new(kernel.name.clone()).map_err(|_| CudaError::InvalidKir {
            kernel: kernel.name.clone(),
            message: "the name holds a NUL byte".into(),
        })?;
        // SAFETY: the module is live.
        let func = unsafe { drv::module::get_function(self.module, cname) }
            .map_err(driver("finding a kernel in its module"))?;
        Ok(Function {
            module: self.clone(),
            func,
            name: kernel.name.clone(),
            params: kernel.params.iter().map(|p| p.kind).collect(),
            max_threads: kernel.max_threads,
            shared_bytes: kernel.shared_bytes(),
        })
    }
}
