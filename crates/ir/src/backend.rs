//! The `Backend` trait: compile a closed jaxpr into an `Executable` that runs
//! on device buffers. The reference interpreter is backend `"interpreter"`.

use crate::array::HostArray;
use crate::error::IrError;
use crate::jaxpr::ClosedJaxpr;
use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

/// An array resident on some backend's device.
pub trait Buffer: Debug + Send + Sync {
    /// The array's type.
    fn aval(&self) -> crate::aval::ShapedArray;
    /// Copies the array to the host.
    fn to_host(&self) -> Result<HostArray, IrError>;
    /// Downcasting support for backends.
    fn as_any(&self) -> &dyn Any;
    /// Waits until the array's value has been computed (work on a device
    /// runs asynchronously), reporting the first error of that work. Host
    /// buffers are always ready.
    fn block_until_ready(&self) -> Result<(), IrError> {
        Ok(())
    }
}

/// A compiled jaxpr.
pub trait Executable: Send + Sync {
    /// Runs on device buffers, one per invar, returning one per outvar.
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError>;
}

/// A compiler from jaxprs to executables, with buffer transfer.
pub trait Backend: Send + Sync {
    /// The backend's name (`"interpreter"`, `"cpu"`, `"cuda"`).
    fn name(&self) -> &str;
    /// Compiles a closed jaxpr.
    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError>;
    /// Copies a host array to the device.
    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError>;
    /// Drops every compiled executable the backend keeps for reuse (JAX's
    /// `jax.clear_caches()`), so the next `compile` of any jaxpr compiles
    /// afresh. Executables already handed out stay valid.
    fn clear_cache(&self) {}
    /// How many devices of this backend a program's mesh may span in this
    /// process (XLA's device count for the platform). A `shard_map` over a
    /// mesh with more devices is an error on backends that run meshes on
    /// real devices. The default is one device.
    fn device_count(&self) -> usize {
        1
    }
}
