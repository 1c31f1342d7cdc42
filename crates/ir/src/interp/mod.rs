//! The reference interpreter: evaluates any jaxpr on host arrays, simply and
//! obviously correctly. It is the oracle every backend is tested against.

pub mod ops;

use crate::array::HostArray;
use crate::error::IrError;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use std::sync::{Arc, Mutex};

/// A runtime value: an array, or a mutable reference to one (state/Pallas).
#[derive(Clone, Debug)]
pub enum Value {
    /// An immutable array.
    Array(HostArray),
    /// A mutable buffer shared by every holder of the reference.
    Ref(Arc<Mutex<HostArray>>),
}

/// Evaluates `jaxpr` with values for its constvars and invars.
pub fn eval_jaxpr(jaxpr: &Jaxpr, consts: &[Value], args: &[Value]) -> Result<Vec<Value>, IrError> {
    let _ = (jaxpr, consts, args);
    Err(IrError::Eval("interpreter not implemented".into()))
}

/// Evaluates a closed jaxpr on arrays.
pub fn eval_closed_jaxpr(
    closed: &ClosedJaxpr,
    args: &[HostArray],
) -> Result<Vec<HostArray>, IrError> {
    let consts: Vec<Value> = closed.consts.iter().cloned().map(Value::Array).collect();
    let args: Vec<Value> = args.iter().cloned().map(Value::Array).collect();
    eval_jaxpr(&closed.jaxpr, &consts, &args)?
        .into_iter()
        .map(|v| match v {
            Value::Array(a) => Ok(a),
            Value::Ref(_) => Err(IrError::Eval("a jaxpr returned a Ref".into())),
        })
        .collect()
}
