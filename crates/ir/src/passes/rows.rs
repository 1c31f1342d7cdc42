//! Row runs: consecutive fused groups that may execute interleaved, a block
//! of rows at a time, instead of one whole group after another.
//!
//! A softmax is four groups over `f32[R, C]` (row max, `exp(x - max)`, row
//! sum, divide). Run one after another, each streams the whole array
//! through memory; run a few rows at a time, the rows stay in cache and the
//! array is read once. This pass finds where that is valid; the backend
//! decides whether it pays.
//!
//! Invariants of a run `first..=last` (checked by the tests by evaluating
//! the groups row block by row block):
//! - every member is a loop or reduce group whose space has rank >= 2 and
//!   the same leading extent `R >= 2`; no reduce member reduces axis 0;
//! - row `r` of a member's output depends only on row `r` of the values
//!   other members of the run produce: each such read maps space row `r`
//!   to value row `r` (and no other value dimension moves with the row);
//! - values from outside the run may be read anyhow (they are complete
//!   before the run starts).
//!
//! Running a run by row blocks, a value produced in it is live from the
//! run's first group to its last: pass the runs to the memory planner
//! (`MemoryOptions::spans`).

use super::fusion::{operand_map, FusionPlan, Group, GroupKind, IndexMap};
use crate::jaxpr::{Atom, Jaxpr, Var};
use std::collections::HashSet;

/// The maximal row runs of `plan`, as inclusive group index ranges of at
/// least two groups each, in order.
pub fn row_runs(jaxpr: &Jaxpr, plan: &FusionPlan) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    // The current run: its first group, its row extent, the values it made.
    let mut cur: Option<(usize, usize, HashSet<Var>)> = None;
    for (gi, g) in plan.groups.iter().enumerate() {
        let rows = row_extent(g);
        let joins = match (&cur, rows) {
            (Some((_, r, made)), Some(rows)) => *r == rows && reads_rows(jaxpr, g, made),
            _ => false,
        };
        if !joins {
            if let Some((first, _, _)) = cur.take() {
                if gi - first >= 2 {
                    runs.push((first, gi - 1));
                }
            }
            cur = rows.map(|r| (gi, r, HashSet::new()));
        }
        if let Some((_, _, made)) = cur.as_mut() {
            made.extend(g.outputs.iter().copied());
        }
    }
    if let Some((first, _, _)) = cur {
        if plan.groups.len() - first >= 2 {
            runs.push((first, plan.groups.len() - 1));
        }
    }
    runs
}

/// The leading extent of a group that may be part of a row run.
fn row_extent(g: &Group) -> Option<usize> {
    let ok_kind = match &g.kind {
        GroupKind::Loop => true,
        GroupKind::Reduce { axes, .. } => !axes.contains(&0),
        GroupKind::Opaque => false,
    };
    let rows = *g.space.first()?;
    (ok_kind && g.space.len() >= 2 && rows >= 2).then_some(rows)
}

/// Whether every read `g` makes of a value in `made` is row-aligned.
fn reads_rows(jaxpr: &Jaxpr, g: &Group, made: &HashSet<Var>) -> bool {
    for (&e, map) in g.eqns.iter().zip(&g.maps) {
        let Some(eqn) = jaxpr.eqns.get(e) else {
            return false;
        };
        for (slot, a) in eqn.inputs.iter().enumerate() {
            let Atom::Var(v) = a else { continue };
            if !made.contains(v) {
                continue;
            }
            match operand_map(jaxpr, eqn, map, slot) {
                Some(m) if row_aligned(&m) => {}
                _ => return false,
            }
        }
    }
    true
}

/// Whether a map sends space row `r` to value row `r` and moves no other
/// value dimension with the row.
fn row_aligned(m: &IndexMap) -> bool {
    match m {
        IndexMap::Multi { rows, offset, .. } => {
            let Some(first) = rows.first() else {
                return false;
            };
            let lead_is_row = first.first() == Some(&1)
                && first.iter().skip(1).all(|&c| c == 0)
                && offset.first() == Some(&0);
            lead_is_row && rows.iter().skip(1).all(|r| r.first() == Some(&0))
        }
        // Only the linear offset is known (after a reshape): be safe.
        IndexMap::Flat { .. } => false,
    }
}
