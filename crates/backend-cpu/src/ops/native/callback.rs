//! The callback family (`debug_print`, `debug_callback`, `pure_callback`)
//! as native steps: each calls back into the host program through the
//! interpreter's kernel (`jaxon_ir::interp::ops::callback`), on the
//! calling thread, with the operands copied to host arrays.

use super::NativeOp;
use jaxon_ir::primitive::Callback;
use jaxon_ir::{HostArray, IrError, Primitive};

/// One callback equation's primitive.
#[derive(Debug)]
pub(crate) struct CallbackOp {
    prim: Primitive,
}

impl CallbackOp {
    /// The step of `p`.
    pub(crate) fn new(p: &Callback) -> CallbackOp {
        CallbackOp {
            prim: Primitive::Callback(p.clone()),
        }
    }
}

impl NativeOp for CallbackOp {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let args: Vec<HostArray> = inputs.iter().map(|a| (*a).clone()).collect();
        jaxon_ir::interp::ops::eval_op(&self.prim, &args)
    }
}
