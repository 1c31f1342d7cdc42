//! The `Backend` implementations: `cuda-sim` lowers a jaxpr to a
//! [`Program`] and runs it on the kernel simulator with host-side buffers;
//! `cuda` lowers to the same program and runs it on a GPU through
//! `runtime/` (an error naming what is missing when there is none).
//!
//! Invariant: both backends compile through [`super::lower`], so the plan
//! the simulator checks is the plan a GPU runs.

use super::gpu::Loaded;
use super::plan::Program;
use super::run::run_simulated;
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::{Backend, Buffer, ClosedJaxpr, Executable, HostArray, IrError};
use std::sync::{Arc, Mutex};

/// The simulator backend, `"cuda-sim"`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaSimBackend;

impl CudaSimBackend {
    /// A new simulator backend.
    pub fn new() -> CudaSimBackend {
        CudaSimBackend
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
fn check_program_memory(prog: &super::plan::Program) -> Result<(), IrError> {
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
        let program = super::lower(jaxpr)?;
        Ok(Arc::new(SimExecutable { program }))
    }

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
        let arrays = host_arrays(args)?;
        let cuda = |e| IrError::Eval(format!("cuda: {e}"));
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(Loaded::new(&self.program).map_err(cuda)?);
        }
        let loaded = slot
            .as_mut()
            .ok_or_else(|| IrError::Eval("cuda: the program is not loaded".into()))?;
        let outs = loaded.run(&self.program, &arrays).map_err(cuda)?;
        Ok(outs
            .into_iter()
            .map(|array| Arc::new(HostBuffer { array }) as Arc<dyn Buffer>)
            .collect())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &str {
        "cuda"
    }

    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        check_consts(jaxpr)?;
        let program = super::lower(jaxpr)?;
        Ok(Arc::new(GpuExecutable {
            program,
            loaded: Mutex::new(None),
        }))
    }

    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        Ok(Arc::new(HostBuffer {
            array: array.clone(),
        }))
    }
}
