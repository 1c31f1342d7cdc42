//! The interpreter's allocation guard: before an equation runs, each
//! result's declared type (dimension variables resolved from the
//! environment) must be allocatable with the kernels' working memory, else
//! the equation fails with `IrError::ResourceExhausted` instead of
//! aborting the process inside a kernel; and the nesting guard that turns
//! a too-deep jaxpr into an error instead of a stack overflow.

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
        // (Named only on failure: this runs before every equation.)
        check_alloc("", a.dtype, &shape, WORK_PER_ELEM).map_err(|e| match e {
            IrError::ResourceExhausted {
                dtype,
                shape,
                bytes,
                reason,
                ..
            } => IrError::ResourceExhausted {
                what: format!("equation {n} ({})", eqn.primitive.name()),
                dtype,
                shape,
                bytes,
                reason,
            },
            other => other,
        })?;
    }
    Ok(())
}

thread_local! {
    /// Jaxprs being evaluated on this thread (nested calls, loop bodies).
    static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of nested evaluation; refused past
/// [`crate::check::MAX_NESTING`] so a deep jaxpr is an error, not a stack
/// overflow. The level ends when the guard drops.
pub(super) struct Nesting(());

impl Nesting {
    pub(super) fn enter() -> Result<Nesting, IrError> {
        let limit = crate::check::MAX_NESTING;
        DEPTH.with(|d| {
            if d.get() > limit {
                return Err(IrError::Eval(format!(
                    "jaxprs nested over the nesting limit of {limit}"
                )));
            }
            d.set(d.get() + 1);
            Ok(Nesting(()))
        })
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}
