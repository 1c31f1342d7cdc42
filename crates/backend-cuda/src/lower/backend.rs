//! The `Backend` implementations: `cuda-sim` lowers a jaxpr to a
//! [`Program`] and runs it on the kernel simulator with host-side buffers;
//! `cuda` lowers to the same program and runs it on a GPU through
//! `runtime/` (an error naming what is missing when there is none).
//!
//! Arrays of the `cuda` backend stay on the GPU ([`CudaArray`]): a
//! program's results are device buffers, bound to the next program's
//! inputs without a copy, and read back only by `to_host` (`to_vec`).
//!
//! Invariant: both backends compile through [`super::lower`], so the plan
//! the simulator checks is the plan a GPU runs.

use super::dynamic::DynProgram;
use super::gpu::{device0, Arg, Loaded, Resident};
use super::plan::Program;
use super::precision::LowerOptions;
use super::run::run_simulated;
use super::run::{buffer_dtype, host_bytes};
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::{Backend, Buffer, ClosedJaxpr, Executable, HostArray, IrError, ShapedArray};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// An array on the GPU: a `cuda` program's result, or a host array
/// copied there by [`CudaBackend::to_device`].
#[derive(Debug)]
pub struct CudaArray(pub Resident);

impl Buffer for CudaArray {
    fn aval(&self) -> ShapedArray {
        ShapedArray::of(self.0.dtype, &self.0.shape)
    }

    fn to_host(&self) -> Result<HostArray, IrError> {
        self.0
            .to_host()
            .map_err(|e| IrError::Eval(format!("cuda: {e}")))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn block_until_ready(&self) -> Result<(), IrError> {
        self.0
            .buffer
            .device()
            .synchronize()
            .map_err(|e| IrError::Eval(format!("cuda: {e}")))
    }
}

/// The simulator backend, `"cuda-sim"`. It has `JAXON_CUDA_SIM_DEVICES`
/// simulated devices (read whenever they are needed; 1 by default), or
/// the count given to [`CudaSimBackend::with_devices`]: a `shard_map` runs
/// one instance of its body per device of its mesh, each on its own host
/// thread, and a mesh larger than the count is a compile error.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaSimBackend {
    devices: Option<usize>,
}

/// The simulator's device count variable.
pub const SIM_DEVICES_ENV: &str = "JAXON_CUDA_SIM_DEVICES";

/// The simulated device count `JAXON_CUDA_SIM_DEVICES` asks for (1 when it
/// is unset); a value that is not a whole number from 1 to
/// `jaxon_ir::devices::MAX_HOST_DEVICES` is an error quoting it.
pub fn sim_devices_from_env() -> Result<usize, IrError> {
    let max = jaxon_ir::devices::MAX_HOST_DEVICES;
    match std::env::var(SIM_DEVICES_ENV) {
        Err(_) => Ok(1),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(IrError::Invalid(format!(
                "{SIM_DEVICES_ENV}={v:?} is not a device count (a whole number from 1 to {max})"
            ))),
        },
    }
}

impl CudaSimBackend {
    /// A new simulator backend with `JAXON_CUDA_SIM_DEVICES` devices; a
    /// bad value is reported on stderr once and 1 is used
    /// ([`sim_devices_from_env`] returns the error).
    pub fn new() -> CudaSimBackend {
        if let Err(e) = sim_devices_from_env() {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| eprintln!("jaxon: {e}; using 1 cuda-sim device"));
        }
        CudaSimBackend { devices: None }
    }

    /// This backend with `devices` simulated devices (at least 1).
    pub fn with_devices(mut self, devices: usize) -> CudaSimBackend {
        self.devices = Some(devices.max(1));
        self
    }
}

/// A program compiled for the simulator.
pub struct SimExecutable {
    /// The lowered program.
    pub program: Program,
}

fn host_arrays(args: &[Arc<dyn Buffer>]) -> Result<Vec<HostArray>, IrError> {
    args.iter()
        .map(|b| match b.as_any().downcast_ref::<HostBuffer>() {
            Some(h) => Ok(h.array.clone()),
            None => b.to_host(),
        })
        .collect()
}

impl Executable for SimExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let arrays = host_arrays(args)?;
        check_program_memory(&self.program)?;
        let outs = run_simulated(&self.program, &arrays)
            .map_err(|e| IrError::Eval(format!("cuda-sim: {e}")))?;
        Ok(outs
            .into_iter()
            .map(|array| Arc::new(HostBuffer { array }) as Arc<dyn Buffer>)
            .collect())
    }
}

/// Checks that all of a program's buffers together fit the memory limit
/// (each was checked on its own when it was declared): the simulator holds
/// them all at once.
pub(crate) fn check_program_memory(prog: &super::plan::Program) -> Result<(), IrError> {
    let total = prog.buffers.iter().try_fold(0usize, |acc, d| {
        d.len
            .checked_mul(d.dtype.size_bytes())
            .and_then(|b| acc.checked_add(b))
    });
    let total = total.unwrap_or(usize::MAX);
    jaxon_ir::memory::check_alloc(
        "cuda-sim device memory (every buffer of the program)",
        jaxon_ir::DType::U8,
        &[total],
        0,
    )?;
    Ok(())
}

fn check_consts(jaxpr: &ClosedJaxpr) -> Result<(), IrError> {
    if jaxpr.consts.len() != jaxpr.jaxpr.constvars.len() {
        return Err(IrError::Invalid(format!(
            "closed jaxpr has {} constvars but {} consts",
            jaxpr.jaxpr.constvars.len(),
            jaxpr.consts.len()
        )));
    }
    Ok(())
}

impl Backend for CudaSimBackend {
    fn name(&self) -> &str {
        "cuda-sim"
    }

    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        check_consts(jaxpr)?;
        let opts = LowerOptions {
            devices: self.device_count(),
            ..LowerOptions::simulator()?
        };
        if super::dynamic::is_dynamic(&jaxpr.jaxpr) {
            let program = super::dynamic::compile_with(jaxpr, opts)?;
            return Ok(Arc::new(DynSimExecutable { program }));
        }
        let program = super::lower_with(jaxpr, opts)?;
        Ok(Arc::new(SimExecutable { program }))
    }

    /// `with_devices`' count, else `JAXON_CUDA_SIM_DEVICES` (1 when it is
    /// unset or bad).
    fn device_count(&self) -> usize {
        self.devices
            .unwrap_or_else(|| sim_devices_from_env().unwrap_or(1))
    }

    /// The simulator's arrays live in host memory.
    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        Ok(Arc::new(HostBuffer {
            array: array.clone(),
        }))
    }
}

/// The GPU backend, `"cuda"`: the same programs, run through the runtime.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaBackend;

impl CudaBackend {
    /// A new GPU backend (the device is opened on first use).
    pub fn new() -> CudaBackend {
        CudaBackend
    }
}

/// A program compiled for a GPU: loaded on the device at its first run
/// (so that compiling needs no GPU), and reused by every later run.
pub struct GpuExecutable {
    /// The lowered program.
    pub program: Program,
    loaded: Mutex<Option<Loaded>>,
}

impl Executable for GpuExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        run_gpu(&self.program, &self.loaded, args)
    }
}

/// Runs `program` on the GPU with `args`, loading it into `loaded` at the
/// first call (a later call must run a program with the same kernels).
fn run_gpu(
    program: &Program,
    loaded: &Mutex<Option<Loaded>>,
    args: &[Arc<dyn Buffer>],
) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
    let cuda = |e| IrError::Eval(format!("cuda: {e}"));
    // Resident arrays are bound as they are; anything else comes from
    // the host.
    let hosts: Vec<Option<HostArray>> = args
        .iter()
        .map(|b| match b.as_any().downcast_ref::<CudaArray>() {
            Some(_) => Ok(None),
            None => b.to_host().map(Some),
        })
        .collect::<Result<_, IrError>>()?;
    let bound: Vec<Arg<'_>> = args
        .iter()
        .zip(&hosts)
        .map(|(b, h)| match (b.as_any().downcast_ref::<CudaArray>(), h) {
            (Some(d), _) => Ok(Arg::Device(&d.0.buffer)),
            (None, Some(h)) => Ok(Arg::Host(h)),
            (None, None) => Err(IrError::Eval("cuda: an argument went missing".into())),
        })
        .collect::<Result<_, IrError>>()?;
    let mut slot = loaded.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(Loaded::new(program).map_err(cuda)?);
    }
    let loaded = slot
        .as_mut()
        .ok_or_else(|| IrError::Eval("cuda: the program is not loaded".into()))?;
    let outs = loaded.run_resident(program, &bound).map_err(cuda)?;
    Ok(outs
        .into_iter()
        .map(|r| Arc::new(CudaArray(r)) as Arc<dyn Buffer>)
        .collect())
}

/// A dynamic-shape program compiled for the simulator: instantiated for
/// each call's sizes, its kernels built once.
pub struct DynSimExecutable {
    /// The compiled program.
    pub program: DynProgram,
}

impl Executable for DynSimExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let arrays = host_arrays(args)?;
        let outs = super::dynamic::run_simulated(&self.program, &arrays)?;
        Ok(outs
            .into_iter()
            .map(|array| Arc::new(HostBuffer { array }) as Arc<dyn Buffer>)
            .collect())
    }
}

/// A dynamic-shape program compiled for a GPU: each call's instantiation
/// runs on the module loaded (and compiled by NVRTC) at the first call,
/// since the kernels do not depend on the sizes.
pub struct DynGpuExecutable {
    /// The compiled program.
    pub program: DynProgram,
    loaded: Mutex<Option<Loaded>>,
}

impl Executable for DynGpuExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let mut vals = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for (k, a) in args.iter().enumerate() {
            let aval = a.aval();
            let shape = aval
                .static_sizes()
                .ok_or_else(|| IrError::Invalid("cuda: an argument with a dynamic shape".into()))?;
            vals.push(if self.program.is_size_input(k) && shape.is_empty() {
                let h = match a.as_any().downcast_ref::<HostBuffer>() {
                    Some(h) => h.array.clone(),
                    None => a.to_host()?,
                };
                h.data().get_i64(0)
            } else {
                0
            });
            types.push((aval.dtype, shape));
        }
        self.program.check_args(&vals, &types)?;
        let program = self.program.instantiate(&vals)?;
        run_gpu(&program, &self.loaded, args)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &str {
        "cuda"
    }

    /// Empties the NVRTC compiler's memory cache (`jax.clear_caches()`);
    /// executables already compiled keep their loaded modules, and the
    /// disk cache stays.
    fn clear_cache(&self) {
        crate::nvrtc::Compiler::global().clear_memory();
    }

    /// The GPUs the driver reports (1 without a GPU, where nothing runs),
    /// asked once per process.
    fn device_count(&self) -> usize {
        static GPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *GPUS.get_or_init(|| crate::runtime::device_count().unwrap_or(1).max(1))
    }

    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        check_consts(jaxpr)?;
        let opts = LowerOptions {
            devices: self.device_count(),
            ..LowerOptions::gpu()?
        };
        if super::dynamic::is_dynamic(&jaxpr.jaxpr) {
            let program = super::dynamic::compile_with(jaxpr, opts)?;
            return Ok(Arc::new(DynGpuExecutable {
                program,
                loaded: Mutex::new(None),
            }));
        }
        let program = super::lower_with(jaxpr, opts)?;
        Ok(Arc::new(GpuExecutable {
            program,
            loaded: Mutex::new(None),
        }))
    }

    /// Copies `array` to GPU 0 (a key as two `u32` words per key). Complex
    /// arrays stay on the host; a program takes them as interleaved parts.
    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        let Some(device_dtype) = buffer_dtype(array.dtype()) else {
            return Ok(Arc::new(HostBuffer {
                array: array.clone(),
            }));
        };
        let cuda = |e| IrError::Eval(format!("cuda: {e}"));
        let device = device0().map_err(cuda)?;
        let buffer = device
            .upload(device_dtype, &host_bytes(array))
            .map_err(cuda)?;
        Ok(Arc::new(CudaArray(Resident {
            buffer: Arc::new(buffer),
            dtype: array.dtype(),
            shape: array.shape().to_vec(),
        })))
    }
}
