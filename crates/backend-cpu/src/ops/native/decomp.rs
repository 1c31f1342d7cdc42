//! The matrix decompositions and solves (`cholesky`, `triangular_solve`,
//! `lu`, `qr`, `eigh`, `svd`, `tridiagonal_solve`) as native steps: each
//! runs the interpreter's f64 reference kernel over the batch of matrices,
//! so the CPU backend's factors (and their sign conventions) are
//! bit-identical to the interpreter's.

use super::NativeOp;
use jaxon_ir::primitive::Linalg;
use jaxon_ir::{HostArray, IrError, Primitive};

/// One decomposition equation's primitive.
#[derive(Debug)]
pub(crate) struct Decomp {
    prim: Primitive,
}

impl Decomp {
    /// The step of `p` (a decomposition or solve).
    pub(crate) fn new(p: &Linalg) -> Decomp {
        Decomp {
            prim: Primitive::Linalg(p.clone()),
        }
    }
}

impl NativeOp for Decomp {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let args: Vec<HostArray> = inputs.iter().map(|a| (*a).clone()).collect();
        jaxon_ir::interp::ops::eval_op(&self.prim, &args)
    }
}
