//! Devices, meshes and sharded arrays: JAX's `jax.devices()`,
//! `jax.make_mesh`, `NamedSharding`, `PartitionSpec` (the [`P!`](crate::P)
//! macro) and `jax.device_put(x, sharding)`.
//!
//! A host backend (the CPU backend, the interpreter) has the host device
//! count of this process (`JAXON_CPU_DEVICES`, or [`set_cpu_device_count`]:
//! JAX's `jax_num_cpu_devices`; 1 by default). Under
//! [`distributed`](crate::distributed) every process contributes its local
//! devices to [`devices()`], numbered process by process.
//!
//! A sharded array ([`device_put_sharded`]) holds one buffer per device of
//! its mesh: device `d` holds the block its coordinates select under the
//! spec (replicated along the axes the spec does not name). It reads back
//! whole ([`Array::to_vec`], `to_host`) by assembling the blocks, and every
//! operation accepts it as an ordinary array (it is gathered first).
//!
//! Invariant: a sharded buffer has exactly `mesh.size()` shards in device
//! (row-major mesh) order, each of the shard type of its spec.

use crate::{Array, Error, Result};
use jaxon_ir::array::HostArray;
use jaxon_ir::backend::Buffer;
use jaxon_ir::primitive::ShardingMesh;
use jaxon_ir::spmd as run;
use jaxon_ir::{IrError, ShapedArray};
pub use jaxon_transforms::spmd::{make_mesh, Mesh, NamedSharding, PartitionSpec, SpecEntry, Specs};
use std::any::Any;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// One device a program may run on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// The global id: position in [`devices()`].
    pub id: usize,
    /// The process that owns it (0 without `distributed`).
    pub process_index: usize,
    /// `"cpu"` for the host backends, `"gpu"` for CUDA.
    pub platform: &'static str,
}

impl fmt::Display for Device {
    /// JAX's repr: `CpuDevice(id=0)`, `CudaDevice(id=0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.platform {
            "gpu" => write!(f, "CudaDevice(id={})", self.id),
            _ => write!(f, "CpuDevice(id={})", self.id),
        }
    }
}

/// `jax.config.update("jax_num_cpu_devices", n)`: the number of host
/// devices of this process from now on (it takes precedence over
/// `JAXON_CPU_DEVICES`). An error outside 1..=4096.
pub fn set_cpu_device_count(n: usize) -> Result<()> {
    Ok(jaxon_ir::devices::set_host_device_count(n)?)
}

/// `jax.local_device_count()`: the current backend's devices in this
/// process. A malformed `JAXON_CPU_DEVICES` is an error that quotes it.
pub fn local_device_count() -> Result<usize> {
    let backend = crate::eval_backend()?;
    if matches!(backend.name(), "cpu" | "interpreter") {
        return Ok(jaxon_ir::devices::host_device_count()?);
    }
    Ok(backend.device_count())
}

fn platform() -> Result<&'static str> {
    Ok(match crate::eval_backend()?.name() {
        "cuda" | "cuda-sim" => "gpu",
        _ => "cpu",
    })
}

/// `jax.default_backend()`: the platform of the backend that runs
/// programs now, `"cpu"` (the CPU backend, the interpreter) or `"gpu"`
/// (`cuda`, `cuda-sim`).
pub fn default_backend() -> Result<&'static str> {
    platform()
}

/// `jax.devices()`: every device of every process, process by process.
pub fn devices() -> Result<Vec<Device>> {
    let (n, platform) = (local_device_count()?, platform()?);
    Ok((0..crate::distributed::process_count() * n)
        .map(|id| Device {
            id,
            process_index: id / n,
            platform,
        })
        .collect())
}

/// `jax.local_devices()`: this process's devices.
pub fn local_devices() -> Result<Vec<Device>> {
    let me = crate::distributed::process_index();
    Ok(devices()?
        .into_iter()
        .filter(|d| d.process_index == me)
        .collect())
}

/// `jax.device_count()`: the number of devices of every process.
pub fn device_count() -> Result<usize> {
    Ok(devices()?.len())
}

/// `NamedSharding(mesh, spec)`.
pub fn named_sharding(mesh: &Mesh, spec: PartitionSpec) -> NamedSharding {
    NamedSharding {
        mesh: ShardingMesh::Concrete(mesh.clone()),
        spec,
        memory_kind: None,
    }
}

/// One device's block of an array.
#[derive(Clone, Debug)]
pub struct Shard {
    /// The device's position in the mesh (row-major).
    pub device: usize,
    /// The block of the global array it holds, per dimension.
    pub index: Vec<Range<usize>>,
    /// Its values.
    pub data: Array,
}

/// The array buffer of a sharded array: one buffer per mesh device.
#[derive(Debug)]
struct ShardedBuffer {
    aval: ShapedArray,
    sharding: NamedSharding,
    shards: Vec<Arc<dyn Buffer>>,
}

/// Where device `rank`'s block of an array of `global` sizes starts, and
/// its sizes, under `sharding`.
fn block(
    sharding: &NamedSharding,
    global: &[usize],
    rank: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let mesh = sharding.mesh.mesh();
    let sizes = mesh
        .shard_sizes(&sharding.spec, global)
        .map_err(|e| Error::InvalidArgument(format!("device_put: {e}")))?;
    let coords = mesh.coords(rank);
    let start = (0..global.len())
        .map(|d| mesh.shard_index(&sharding.spec, d, &coords) * sizes[d])
        .collect();
    Ok((start, sizes))
}

impl Buffer for ShardedBuffer {
    fn aval(&self) -> ShapedArray {
        self.aval.clone()
    }

    /// Assembles the blocks (the first copy of each).
    fn to_host(&self) -> Result<HostArray, IrError> {
        let blocks = self
            .shards
            .iter()
            .map(|s| Ok(vec![s.to_host()?]))
            .collect::<Result<Vec<_>, IrError>>()?;
        let mesh = self.sharding.mesh.mesh();
        let mut whole = run::assemble(mesh, std::slice::from_ref(&self.sharding.spec), blocks)?;
        whole
            .pop()
            .ok_or_else(|| IrError::Eval("a sharded array with no blocks".into()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn block_until_ready(&self) -> Result<(), IrError> {
        self.shards.iter().try_for_each(|s| s.block_until_ready())
    }
}

/// `jax.device_put(x, sharding)`: `x` split over the devices of
/// `sharding`'s mesh, one block per device (copied to each device that
/// holds it). An error when the mesh needs more devices than the backend
/// has, or a dimension does not divide by its shard count.
pub fn device_put_sharded(x: &Array, sharding: &NamedSharding) -> Result<Array> {
    let mesh = sharding.mesh.mesh();
    jaxon_transforms::spmd::check_mesh(mesh, "device_put")?;
    let host = x.try_to_host("device_put")?;
    let backend = crate::eval_backend()?;
    let blocks = run::split_operands(mesh, std::slice::from_ref(&sharding.spec), &[&host])
        .map_err(|e| Error::InvalidArgument(format!("device_put: {e}")))?;
    let shards = blocks
        .into_iter()
        .flatten()
        .map(|b| backend.to_device(&b))
        .collect::<Result<Vec<_>, IrError>>()?;
    let buffer = ShardedBuffer {
        aval: host.aval(),
        sharding: sharding.clone(),
        shards,
    };
    Ok(Array::from_buffer_weak(Arc::new(buffer), x.weak_type()))
}

/// `jax.lax.with_sharding_constraint(x, sharding)`: the same values, laid
/// out as `sharding` says. On a concrete array it is
/// [`device_put_sharded`]; inside a trace it stages JAX's
/// `sharding_constraint` equation (an identity on values for every
/// transform and backend), after checking that `sharding` fits `x`.
pub fn with_sharding_constraint(x: &Array, sharding: &NamedSharding) -> Result<Array> {
    let mesh = sharding.mesh.mesh();
    jaxon_transforms::spmd::check_mesh(mesh, "with_sharding_constraint")?;
    let shape = x.try_shape()?;
    mesh.shard_sizes(&sharding.spec, &shape)
        .map_err(|e| Error::InvalidArgument(format!("with_sharding_constraint: {e}")))?;
    if !x.is_tracer() {
        return device_put_sharded(x, sharding);
    }
    let mut sharding = sharding.clone();
    sharding.memory_kind.get_or_insert_with(|| "device".into());
    let params = jaxon_ir::primitive::ShardingConstraintParams {
        context_mesh: jaxon_ir::primitive::Mesh::new(&[]),
        layout: "None".into(),
        sharding,
        unconstrained_dims: Vec::new(),
    };
    jaxon_trace::core::bind1(&params.into(), std::slice::from_ref(x))
}

fn sharded(x: &Array) -> Option<&ShardedBuffer> {
    x.buffer()?.as_any().downcast_ref::<ShardedBuffer>()
}

/// `x.sharding` for a sharded array; `None` for an array on one device.
pub fn sharding_of(x: &Array) -> Option<NamedSharding> {
    sharded(x).map(|s| s.sharding.clone())
}

/// `x.addressable_shards`: each device's block with its index (one shard
/// covering the whole array on device 0 for an unsharded array).
pub fn addressable_shards(x: &Array) -> Result<Vec<Shard>> {
    let Some(s) = sharded(x) else {
        let shape = x.try_shape()?;
        return Ok(vec![Shard {
            device: 0,
            index: shape.iter().map(|&n| 0..n).collect(),
            data: x.clone(),
        }]);
    };
    let global = s
        .aval
        .static_sizes()
        .ok_or_else(|| Error::Unsupported("a sharded array of a dynamic shape".into()))?;
    s.shards
        .iter()
        .enumerate()
        .map(|(rank, b)| {
            let (start, sizes) = block(&s.sharding, &global, rank)?;
            Ok(Shard {
                device: rank,
                index: start.iter().zip(&sizes).map(|(&a, &n)| a..a + n).collect(),
                data: Array::from_buffer_weak(b.clone(), x.weak_type()),
            })
        })
        .collect()
}
