//! The interpreter's allocation guard: before an equation runs, each
//! result's declared type (dimension variables resolved from the
//! environment) must be allocatable with the kernels' working memory, else
//! the equation fails with `IrError::ResourceExhausted` instead of
//! aborting the process inside a kernel.

use crate::aval::Dim;
use crate::error::IrError;
use crate::jaxpr::{Binder, Eqn, Jaxpr, Var};
use crate::memory::check_alloc;

/// Working bytes per result element that kernels may hold besides the
/// result: an index map (`usize`) and a widened copy (8 bytes).
const WORK_PER_ELEM: usize = 16;

/// Checks every result of `eqn` (equation `n` of `jaxpr`); `dim` resolves a
/// dimension variable bound in the environment (an unbound one is skipped:
/// the value check after the equation catches a mismatch).
pub(super) fn check_results(
    jaxpr: &Jaxpr,
    n: usize,
    eqn: &Eqn,
    dim: &dyn Fn(Var) -> Option<usize>,
) -> Result<(), IrError> {
    for b in &eqn.outputs {
        let aval = match b {
            Binder::Var(v) => match jaxpr.try_aval(*v) {
                Some(a) => a,
                None => continue,
            },
            Binder::Drop(a) => a,
        };
        let a = aval.array();
        let shape: Vec<usize> = a
            .shape
            .iter()
            .map(|d| match d {
                Dim::Const(k) => *k,
                Dim::Var(v) => dim(*v).unwrap_or(0),
            })
            .collect();
        let what = format!("equation {n} ({})", eqn.primitive.name());
        check_alloc(&what, a.dtype, &shape, WORK_PER_ELEM)?;
    }
    Ok(())
}
