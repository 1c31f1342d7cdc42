//! The matrix decompositions and solves (`cholesky`, `triangular_solve`,
//! `lu`, `qr`, `eigh`, `svd`, `schur`, `tridiagonal_solve`) as native steps: the
//! interpreter's batching and checks over faer's factorisations
//! (`decomp_faer.rs`); `qr` (LAPACK's reflector signs) and the O(n)
//! `tridiagonal_solve` keep the reference kernels. Values agree with the
//! interpreter's to rounding, eigen- and singular vectors up to sign.

use super::decomp_faer::Faer;
use super::NativeOp;
use jaxon_ir::interp::ops::decomp as d;
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
        let Primitive::Linalg(l) = &self.prim else {
            return Err(IrError::Invalid(format!(
                "{} is not a decomposition",
                self.prim.name()
            )));
        };
        match (l, inputs) {
            (Linalg::Cholesky, [x]) => Ok(vec![d::cholesky(x, &Faer)?]),
            (Linalg::TriangularSolve(p), [a, b]) => Ok(vec![d::triangular_solve(a, b, p, &Faer)?]),
            (Linalg::Lu, [x]) => d::lu(x, &Faer),
            (Linalg::Qr(p), [x]) => d::qr(x, p, &Faer),
            (Linalg::Eigh(p), [x]) => d::eigh(x, p.lower, p.sort_eigenvalues, &Faer),
            (Linalg::Svd(p), [x]) => d::svd(x, p, &Faer),
            (Linalg::Schur(p), [x]) => d::schur(x, p, &Faer),
            (Linalg::TridiagonalSolve(_), [dl, dd, du, b]) => {
                Ok(vec![d::tridiagonal_solve([dl, dd, du, b])?])
            }
            _ => Err(IrError::Invalid(format!(
                "{}: a decomposition step with {} operands",
                self.prim.name(),
                inputs.len()
            ))),
        }
    }
}
