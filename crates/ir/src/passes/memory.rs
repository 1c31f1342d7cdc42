//! Memory planning: liveness-based placement of a fusion plan's
//! intermediate values in one arena, so that values whose live ranges do
//! not overlap share storage.
//!
//! Time is measured in groups of the [`FusionPlan`]: a value produced by
//! group `d` and last read by group `u` is live over `[d, u]` (inclusive;
//! an outvar is live to the end). A group's inputs and outputs are live at
//! the same time, so a kernel never reads and writes one buffer. Callers
//! can exclude values (those that live elsewhere, such as a program's
//! results written straight into output buffers) and ask for per-group
//! scratch space (a loop's carries and its body's own arena), live only
//! during that group.
//!
//! Placement is greedy first fit, largest first: each value takes the
//! lowest aligned offset that does not overlap any already placed value
//! whose live range intersects its own. [`MemoryPlan::check`] verifies the
//! invariant independently of how placement was done.

use super::fusion::{FusionPlan, GroupKind};
use crate::error::IrError;
use crate::jaxpr::{Binder, Jaxpr, Var};
use std::collections::HashSet;
use std::fmt;

/// What a memory plan should place.
#[derive(Clone, Debug)]
pub struct MemoryOptions {
    /// Alignment of every offset and size, in bytes (a power of two).
    pub alignment: usize,
    /// Values not to place (they live elsewhere).
    pub exclude: HashSet<Var>,
    /// Extra bytes a group needs while it runs, by group index.
    pub scratch: Vec<(usize, usize)>,
    /// Inclusive group ranges that run interleaved (row runs): a value live
    /// in any of their groups is live in all of them.
    pub spans: Vec<(usize, usize)>,
}

impl Default for MemoryOptions {
    fn default() -> MemoryOptions {
        MemoryOptions {
            alignment: 64,
            exclude: HashSet::new(),
            scratch: Vec::new(),
            spans: Vec::new(),
        }
    }
}

/// A value placed in the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placed {
    /// The materialised result of a group (its root equation's output).
    Var(Var),
    /// Scratch space of the group with this index.
    Scratch(usize),
}

/// One placement: `bytes` bytes at `offset`, live over groups `live.0..=live.1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// What is placed.
    pub value: Placed,
    /// Byte offset in the arena (a multiple of the alignment).
    pub offset: usize,
    /// Bytes it needs (before rounding up to the alignment).
    pub bytes: usize,
    /// First and last group during which it is live.
    pub live: (usize, usize),
}

/// The placement of a plan's intermediate values in one arena.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MemoryPlan {
    /// Every placement, in the order of the values' definitions.
    pub allocations: Vec<Allocation>,
    /// Arena size in bytes.
    pub size: usize,
    /// The alignment used.
    pub alignment: usize,
}

/// Bytes a value of this aval needs, if its shape is static.
pub fn value_bytes(aval: &crate::aval::Aval) -> Option<usize> {
    let a = aval.as_array()?;
    let n: usize = a.static_sizes()?.iter().product();
    Some(n * a.dtype.size_bytes())
}

fn round_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

impl MemoryPlan {
    /// The offset of a placed variable.
    pub fn offset(&self, v: Var) -> Option<usize> {
        self.find(Placed::Var(v))
    }

    /// The offset of group `g`'s scratch space.
    pub fn scratch(&self, g: usize) -> Option<usize> {
        self.find(Placed::Scratch(g))
    }

    fn find(&self, p: Placed) -> Option<usize> {
        self.allocations
            .iter()
            .find(|a| a.value == p)
            .map(|a| a.offset)
    }

    /// Checks the plan's invariants: offsets aligned, every placement
    /// inside the arena, and no two placements live at the same time share
    /// a byte.
    pub fn check(&self) -> Result<(), String> {
        let al = self.alignment.max(1);
        for a in &self.allocations {
            if a.offset % al != 0 {
                return Err(format!("{:?} at unaligned offset {}", a.value, a.offset));
            }
            if a.offset + a.bytes > self.size {
                return Err(format!("{:?} ends past the arena", a.value));
            }
        }
        for (i, a) in self.allocations.iter().enumerate() {
            for b in &self.allocations[i + 1..] {
                let time = a.live.0 <= b.live.1 && b.live.0 <= a.live.1;
                let space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
                if time && space && a.bytes > 0 && b.bytes > 0 {
                    return Err(format!(
                        "{:?} and {:?} are live together and overlap",
                        a.value, b.value
                    ));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: usize = self.allocations.iter().map(|a| a.bytes).sum();
        writeln!(
            f,
            "memory plan: arena {} bytes for {} values of {} bytes",
            self.size,
            self.allocations.len(),
            total
        )?;
        for a in &self.allocations {
            let what = match a.value {
                Placed::Var(v) => format!("v{}", v.0),
                Placed::Scratch(g) => format!("scratch(g{g})"),
            };
            writeln!(
                f,
                "  {what} @{} +{} live g{}..=g{}",
                a.offset, a.bytes, a.live.0, a.live.1
            )?;
        }
        Ok(())
    }
}

/// Plans the arena of `jaxpr` executed group by group as `plan` says.
///
/// Placed are the outputs of each group's root equation (for opaque
/// groups, all of its non-dropped outputs) except those in
/// `opts.exclude`, plus the requested scratch. Invars and constvars are
/// never placed. Errors on dynamic shapes.
pub fn plan_memory(
    jaxpr: &Jaxpr,
    plan: &FusionPlan,
    opts: &MemoryOptions,
) -> Result<MemoryPlan, IrError> {
    let n_groups = plan.groups.len();
    let nv = jaxpr.vars.len();
    let mut def: Vec<Option<usize>> = vec![None; nv];
    let mut last: Vec<usize> = vec![0; nv];
    let mut order: Vec<Var> = Vec::new();
    for (gi, g) in plan.groups.iter().enumerate() {
        let eqn = jaxpr
            .eqns
            .get(g.root())
            .ok_or_else(|| IrError::Invalid(format!("group {gi} has no root equation")))?;
        let outs: Vec<Var> = match g.kind {
            GroupKind::Opaque => eqn
                .outputs
                .iter()
                .filter_map(|b| match b {
                    Binder::Var(v) => Some(*v),
                    Binder::Drop(_) => None,
                })
                .collect(),
            GroupKind::Loop | GroupKind::Reduce { .. } => match eqn.outputs.as_slice() {
                [Binder::Var(v)] => vec![*v],
                _ => Vec::new(),
            },
        };
        for v in outs {
            if v.index() >= nv {
                return Err(IrError::Invalid(format!("variable {} out of range", v.0)));
            }
            if def[v.index()].is_none() {
                def[v.index()] = Some(gi);
                last[v.index()] = gi;
                order.push(v);
            }
        }
        for v in &g.inputs {
            if let Some(l) = last.get_mut(v.index()) {
                *l = (*l).max(gi);
            }
        }
    }
    let end = n_groups.saturating_sub(1);
    for a in &jaxpr.outvars {
        if let crate::jaxpr::Atom::Var(v) = a {
            if let Some(l) = last.get_mut(v.index()) {
                *l = end;
            }
        }
    }
    let mut reqs: Vec<Allocation> = Vec::new();
    for v in order {
        if opts.exclude.contains(&v) {
            continue;
        }
        let aval = jaxpr
            .try_aval(v)
            .ok_or_else(|| IrError::Invalid(format!("variable {} out of range", v.0)))?;
        let bytes = value_bytes(aval).ok_or_else(|| {
            IrError::Invalid(format!(
                "memory plan: variable {} has a dynamic or non-array type",
                v.0
            ))
        })?;
        let d = def[v.index()].unwrap_or(0);
        let mut live = (d, last[v.index()].max(d));
        for &(first, end) in &opts.spans {
            if live.0 <= end && first <= live.1 {
                live = (live.0.min(first), live.1.max(end));
            }
        }
        reqs.push(Allocation {
            value: Placed::Var(v),
            offset: 0,
            bytes,
            live,
        });
    }
    for &(g, bytes) in &opts.scratch {
        if g >= n_groups {
            return Err(IrError::Invalid(format!("scratch for missing group {g}")));
        }
        reqs.push(Allocation {
            value: Placed::Scratch(g),
            offset: 0,
            bytes,
            live: (g, g),
        });
    }
    Ok(place(reqs, opts.alignment.max(1)))
}

/// Greedy first fit, largest first; returns allocations in request order.
fn place(mut reqs: Vec<Allocation>, al: usize) -> MemoryPlan {
    let mut by_size: Vec<usize> = (0..reqs.len()).collect();
    by_size.sort_by_key(|&i| (std::cmp::Reverse(reqs[i].bytes), reqs[i].live.0, i));
    let mut placed: Vec<usize> = Vec::new();
    let mut size = 0usize;
    for i in by_size {
        let need = round_up(reqs[i].bytes, al);
        if need == 0 {
            continue;
        }
        let (lo, hi) = reqs[i].live;
        let mut busy: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| reqs[j].live.0 <= hi && lo <= reqs[j].live.1)
            .map(|&j| (reqs[j].offset, reqs[j].offset + round_up(reqs[j].bytes, al)))
            .collect();
        busy.sort_unstable();
        let mut at = 0usize;
        for (s, e) in busy {
            if at + need <= s {
                break;
            }
            at = at.max(e);
        }
        reqs[i].offset = at;
        size = size.max(at + need);
        placed.push(i);
    }
    MemoryPlan {
        allocations: reqs,
        size,
        alignment: al,
    }
}
