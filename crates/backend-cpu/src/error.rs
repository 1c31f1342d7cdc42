//! backend-cpu's error type. Rules and op builders return a [`CpuError`],
//! so a caller can tell "this backend cannot lower it" from "these operands
//! do not fit the rule" from a failure while running; at the layer
//! boundary (`From<CpuError> for IrError`) `Unsupported` becomes
//! `IrError::Unsupported` and a run-time failure `IrError::Eval`.
//!
//! Invariant: each variant prints the text the backend reported before its
//! errors were typed, so users see the same messages.

use jaxon_ir::{DType, IrError};
use thiserror::Error;

/// What went wrong while compiling or running on the cpu backend.
#[derive(Clone, Debug, Error, PartialEq)]
pub(crate) enum CpuError {
    /// The backend cannot compile `primitive`: why, and where (the
    /// equation).
    #[error("the {backend} backend cannot compile `{primitive}`: {why}")]
    Unsupported {
        /// Always `"cpu"`.
        backend: &'static str,
        /// The primitive's name.
        primitive: String,
        /// Why, and the equation, in words.
        why: String,
    },
    /// A primitive with no native step.
    #[error("`{primitive}` has no native step")]
    NoNativeStep {
        /// The primitive's name.
        primitive: &'static str,
    },
    /// A primitive that is not an elementwise rule of the fused kernels.
    #[error("`{primitive}` is not an elementwise rule")]
    NotElementwise {
        /// The primitive's name.
        primitive: &'static str,
    },
    /// An elementwise op on a dtype the kernels do not support.
    #[error("{op} on {dtype} is not supported yet")]
    DType {
        /// The op's name.
        op: &'static str,
        /// The offending dtype.
        dtype: DType,
    },
    /// Operands, results or params a rule cannot take (the message names
    /// them).
    #[error("{0}")]
    Operands(String),
    /// A failure while running a compiled program or a native step.
    #[error("cpu backend: {0}")]
    Run(String),
}

impl CpuError {
    /// The cpu backend cannot compile `primitive`, because of `why`.
    pub(crate) fn unsupported(primitive: &str, why: impl Into<String>) -> CpuError {
        CpuError::Unsupported {
            backend: "cpu",
            primitive: primitive.into(),
            why: why.into(),
        }
    }
}

/// A failure while running: [`CpuError::Run`] as the `IrError` it becomes.
pub(crate) fn run_error(m: impl Into<String>) -> IrError {
    CpuError::Run(m.into()).into()
}

impl From<String> for CpuError {
    fn from(m: String) -> CpuError {
        CpuError::Operands(m)
    }
}

impl From<&str> for CpuError {
    fn from(m: &str) -> CpuError {
        CpuError::Operands(m.into())
    }
}

impl From<CpuError> for IrError {
    fn from(e: CpuError) -> IrError {
        match e {
            CpuError::Unsupported {
                backend,
                primitive,
                why,
            } => IrError::unsupported(backend, primitive, why),
            CpuError::Run(_)
            | CpuError::NoNativeStep { .. }
            | CpuError::NotElementwise { .. }
            | CpuError::DType { .. }
            | CpuError::Operands(_) => IrError::Eval(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CpuError;
    use jaxon_ir::IrError;

    #[test]
    fn unsupported_maps_to_ir_unsupported_and_run_to_eval() {
        let e: IrError = CpuError::unsupported("foo", "why (eqn 0)").into();
        assert_eq!(e, IrError::unsupported("cpu", "foo", "why (eqn 0)"));
        assert_eq!(
            e.to_string(),
            "the cpu backend cannot compile `foo`: why (eqn 0)"
        );
        let r: IrError = CpuError::Run("bad".into()).into();
        assert_eq!(r.to_string(), "evaluation failed: cpu backend: bad");
    }
}
