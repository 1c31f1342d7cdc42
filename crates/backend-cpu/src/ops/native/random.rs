//! The random family (`random_seed`, `random_bits`, `threefry2x32`,
//! `random_gamma`, ...) as native steps: each runs the interpreter's kernel
//! (`jaxon_ir::interp::ops::random`), so the CPU backend's bits and samples
//! are bit-identical to the interpreter's. Programs holding typed keys take
//! the host path (`crate::complex`); `threefry2x32` on `u32`s runs here.

use super::NativeOp;
use jaxon_ir::primitive::Random;
use jaxon_ir::{HostArray, IrError, Primitive};

/// One random-family equation's primitive.
#[derive(Debug)]
pub(crate) struct RandomOp {
    prim: Primitive,
}

impl RandomOp {
    /// The step of `p`.
    pub(crate) fn new(p: &Random) -> RandomOp {
        RandomOp {
            prim: Primitive::Random(p.clone()),
        }
    }
}

impl NativeOp for RandomOp {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let args: Vec<HostArray> = inputs.iter().map(|a| (*a).clone()).collect();
        jaxon_ir::interp::ops::eval_op(&self.prim, &args)
    }
}
