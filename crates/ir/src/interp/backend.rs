//! The reference interpreter as a [`Backend`] named `"interpreter"`: buffers
//! are host arrays and executables evaluate the jaxpr.

use super::eval_closed_jaxpr;
use crate::array::HostArray;
use crate::aval::ShapedArray;
use crate::backend::{Backend, Buffer, Executable};
use crate::error::IrError;
use crate::jaxpr::ClosedJaxpr;
use std::any::Any;
use std::sync::Arc;

/// A buffer of the interpreter backend: an array in host memory.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    /// The array.
    pub array: HostArray,
}

impl Buffer for HostBuffer {
    fn aval(&self) -> ShapedArray {
        self.array.aval()
    }

    fn to_host(&self) -> Result<HostArray, IrError> {
        Ok(self.array.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The reference interpreter backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct InterpreterBackend;

impl InterpreterBackend {
    /// A new interpreter backend.
    pub fn new() -> InterpreterBackend {
        InterpreterBackend
    }
}

/// A "compiled" jaxpr: the closed jaxpr, evaluated on each call.
struct InterpExecutable {
    jaxpr: ClosedJaxpr,
}

impl Executable for InterpExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let arrays = args
            .iter()
            .map(|b| match b.as_any().downcast_ref::<HostBuffer>() {
                Some(h) => Ok(h.array.clone()),
                None => b.to_host(),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outs = eval_closed_jaxpr(&self.jaxpr, &arrays)?;
        Ok(outs
            .into_iter()
            .map(|array| Arc::new(HostBuffer { array }) as Arc<dyn Buffer>)
            .collect())
    }
}

impl Backend for InterpreterBackend {
    fn name(&self) -> &str {
        "interpreter"
    }

    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        if jaxpr.consts.len() != jaxpr.jaxpr.constvars.len() {
            return Err(IrError::Invalid(format!(
                "closed jaxpr has {} constvars but {} consts",
                jaxpr.jaxpr.constvars.len(),
                jaxpr.consts.len()
            )));
        }
        Ok(Arc::new(InterpExecutable {
            jaxpr: jaxpr.clone(),
        }))
    }

    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        Ok(Arc::new(HostBuffer {
            array: array.clone(),
        }))
    }

    /// The host device count (`crate::devices`); 1 when it is malformed
    /// (`jaxon::devices()` reports that as an error).
    fn device_count(&self) -> usize {
        crate::devices::host_device_count().unwrap_or(1)
    }
}
