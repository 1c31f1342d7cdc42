//! Backend-independent jaxpr passes: simplification (inline `jit`, dead code
//! elimination, common subexpression elimination, constant folding) and the
//! fusion planner that partitions a jaxpr into loop and reduction groups,
//! the row runs of groups that may execute a block of rows at a time,
//! and the memory planner that places a plan's values in one arena.
//!
//! Every pass takes a jaxpr and returns a new one that evaluates to the same
//! values (checked against the reference interpreter in the tests). Passes
//! never panic on well-formed input; they return `IrError` on malformed
//! jaxprs (unknown variables, arity mismatches) instead.

mod algebra;
mod collectives;
mod fusion;
mod markers;
mod memory;
mod rewrite;
mod rows;
mod scan_sums;
mod simplify;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_algebra;
#[cfg(test)]
mod tests_fusion;
#[cfg(test)]
mod tests_memory;
#[cfg(test)]
mod tests_rows;
#[cfg(test)]
mod tests_scan_sums;

pub use algebra::{outer_products_to_mul, transposed_products};
pub use collectives::lower_positional_collectives;
pub use fusion::{
    is_elementwise, moves_data, operand_map, plan_fusion, FusionPlan, Group, GroupKind, IndexMap,
};
pub use markers::resolve_markers;
pub use memory::{plan_memory, value_bytes, Allocation, MemoryOptions, MemoryPlan, Placed};
pub use rows::row_runs;
pub use scan_sums::scan_sums_out;
pub use simplify::{cse, dce, fold_constants, has_effect, inline_calls, inline_jit};

use crate::error::IrError;
use crate::jaxpr::ClosedJaxpr;
use crate::primitive::Platform;

/// The simplification pipeline before compilation for `platform`: resolve
/// the markers (`resolve_markers`), inline calls (`jit`,
/// and the primal bodies of `custom_jvp_call`/`custom_vjp_call`/`remat2`),
/// lower positional collectives to reductions, uncontracted `dot_general`s
/// to `mul`s of broadcasts, products summed over a scan out of the scan,
/// transposed products to swapped products, fold constants, CSE, then DCE (last, so that it removes what folding
/// and CSE made dead).
pub fn simplify(closed: &ClosedJaxpr, platform: Platform) -> Result<ClosedJaxpr, IrError> {
    let inlined = inline_calls(&resolve_markers(closed, platform)?)?;
    let lowered = outer_products_to_mul(&lower_positional_collectives(&inlined.jaxpr))?;
    let lowered = scan_sums_out(&lowered)?;
    let lowered = transposed_products(&lowered)?;
    let folded = fold_constants(&lowered)?;
    let shared = cse(&folded)?;
    let live = dce(&shared)?;
    Ok(ClosedJaxpr {
        jaxpr: live.into(),
        consts: inlined.consts,
    })
}
