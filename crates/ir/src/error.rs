//! The `ir` crate's error type.

use crate::dtype::DType;
use thiserror::Error;

/// Errors from building, checking and evaluating jaxprs.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum IrError {
    /// An array's element count does not match its shape.
    #[error("array of shape {shape:?} cannot hold {len} elements")]
    ArrayLength {
        /// The shape.
        shape: Vec<usize>,
        /// The number of elements given.
        len: usize,
    },
    /// A primitive was applied to operands of the wrong types.
    #[error("{primitive}: {message}")]
    Type {
        /// The primitive's name.
        primitive: String,
        /// What is wrong, naming the offending types.
        message: String,
    },
    /// A dtype is not supported by an operation.
    #[error("{primitive}: dtype {dtype} is not supported")]
    UnsupportedDType {
        /// The primitive's name.
        primitive: String,
        /// The offending dtype.
        dtype: DType,
    },
    /// A malformed jaxpr (scoping, arity, types).
    #[error("invalid jaxpr: {0}")]
    Invalid(String),
    /// A runtime failure while evaluating.
    #[error("evaluation failed: {0}")]
    Eval(String),
    /// A buffer whose size comes from a shape cannot be allocated: over the
    /// memory limit, refused by the allocator, or too large to address
    /// (XLA's `RESOURCE_EXHAUSTED`).
    #[error(
        "RESOURCE_EXHAUSTED: {what}: cannot allocate {bytes} bytes for {dtype}{shape:?}: {reason}"
    )]
    ResourceExhausted {
        /// What was being allocated (a primitive, an arena, a result).
        what: String,
        /// The buffer's dtype.
        dtype: DType,
        /// The buffer's shape.
        shape: Vec<usize>,
        /// The buffer's size in bytes (saturating, so overflow shows).
        bytes: u128,
        /// Why it was refused.
        reason: String,
    },
    /// A backend cannot compile a primitive (or an equation of it) that is
    /// valid in the IR: the program is fine, the backend lacks support.
    #[error("the {backend} backend cannot compile `{primitive}`: {why}")]
    Unsupported {
        /// The backend's name (`"cpu"`, ...).
        backend: String,
        /// The primitive's name.
        primitive: String,
        /// Why, and where (the equation), in words.
        why: String,
    },
}

impl IrError {
    /// A type error for `primitive`.
    pub fn ty(primitive: impl Into<String>, message: impl Into<String>) -> IrError {
        IrError::Type {
            primitive: primitive.into(),
            message: message.into(),
        }
    }

    /// `backend` cannot compile `primitive`, because of `why`.
    pub fn unsupported(
        backend: impl Into<String>,
        primitive: impl Into<String>,
        why: impl Into<String>,
    ) -> IrError {
        IrError::Unsupported {
            backend: backend.into(),
            primitive: primitive.into(),
            why: why.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::IrError;

    #[test]
    fn unsupported_names_backend_primitive_and_reason() {
        let e = IrError::unsupported("cpu", "foo", "not supported yet");
        assert_eq!(
            e.to_string(),
            "the cpu backend cannot compile `foo`: not supported yet"
        );
        assert!(matches!(
            e,
            IrError::Unsupported { ref backend, ref primitive, .. }
                if backend == "cpu" && primitive == "foo"
        ));
    }
}
