//! Where an array lives: JAX's `x.devices()`, `x.device` and
//! `jax.device_put(x, device)`.
//!
//! A concrete array is on the GPU when its buffer is a CUDA-resident one
//! (`cuda` backend results, `device_put` under `cuda`), on its mesh's
//! devices when it is sharded, and on the host's device 0 otherwise (the
//! CPU backend and the interpreter keep arrays in host memory).

use crate::sharding::{devices, sharding_of, Device};
use crate::{Array, Error, Result};
use jaxon_backend_cuda::lower::backend::CudaArray;
use jaxon_ir::primitive::ShardingMesh;

fn gpu_resident(x: &Array) -> bool {
    x.buffer()
        .is_some_and(|b| b.as_any().downcast_ref::<CudaArray>().is_some())
}

fn cpu(id: usize) -> Device {
    Device {
        id,
        process_index: crate::distributed::process_index(),
        platform: "cpu",
    }
}

fn gpu(id: usize) -> Device {
    Device {
        id,
        process_index: crate::distributed::process_index(),
        platform: "gpu",
    }
}

/// JAX's `x.devices()` and `x.device`, for [`Array`]s.
pub trait ArrayDevices {
    /// `x.devices()`: the devices holding the array (a sharded array's mesh
    /// devices; one device otherwise). A tracer is a concretization error.
    fn devices(&self) -> Result<Vec<Device>>;

    /// `x.device`: the one device holding the array; an error naming the
    /// devices for a sharded array.
    fn device(&self) -> Result<Device>;
}

impl ArrayDevices for Array {
    fn devices(&self) -> Result<Vec<Device>> {
        if self.is_tracer() {
            return Err(self.concretization_error("x.devices()"));
        }
        if let Some(s) = sharding_of(self) {
            let n = match &s.mesh {
                ShardingMesh::Concrete(m) => m.size(),
                ShardingMesh::Abstract { mesh, .. } => mesh.size(),
            };
            let all = devices()?;
            return Ok(all.into_iter().take(n).collect());
        }
        Ok(vec![if gpu_resident(self) { gpu(0) } else { cpu(0) }])
    }

    fn device(&self) -> Result<Device> {
        let ds = self.devices()?;
        match ds.as_slice() {
            [d] => Ok(d.clone()),
            _ => Err(Error::InvalidArgument(format!(
                "x.device is defined for arrays on one device; this one is sharded over {}",
                ds.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

/// `jax.device_put(x, device)`: `x`'s values on `device`, a GPU (the `cuda`
/// backend's device; only `CudaDevice(id=0)` is driven) or the host. A
/// missing GPU is the `cuda` backend's error naming what is missing.
pub fn device_put_on(x: &Array, device: &Device) -> Result<Array> {
    let host = x.try_to_host("device_put")?;
    match device.platform {
        "gpu" if device.id == 0 => {
            let backend = jaxon_trace::eval::backend("cuda")?;
            let buffer = backend.to_device(&host)?;
            Ok(Array::from_buffer_weak(buffer, x.weak_type()))
        }
        "gpu" => Err(Error::Unsupported(format!(
            "device_put to {device}: the cuda backend drives GPU 0 only"
        ))),
        _ => {
            let backend = jaxon_trace::eval::backend("cpu")?;
            let buffer = backend.to_device(&host)?;
            Ok(Array::from_buffer_weak(buffer, x.weak_type()))
        }
    }
}
