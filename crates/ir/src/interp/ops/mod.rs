//! Numeric kernels of the reference interpreter: every primitive without a
//! nested jaxpr or mutable state, on host arrays.

use crate::array::HostArray;
use crate::error::IrError;
use crate::primitive::Primitive;

/// Applies a first-order primitive to host arrays.
pub fn eval_op(primitive: &Primitive, args: &[HostArray]) -> Result<Vec<HostArray>, IrError> {
    let _ = args;
    Err(IrError::Eval(format!(
        "{} not implemented",
        primitive.name()
    )))
}
