//! The fusion planner: partitions a jaxpr's top-level equations into groups
//! that a backend compiles as one kernel each.
//!
//! - A **loop** group is a chain of elementwise, `broadcast_in_dim`,
//!   `transpose`, `slice`, `rev`, `convert_element_type`,
//!   `reshape`/`squeeze`, `select_n`, `clamp` and `integer_pow` equations evaluated in one loop nest over its root's
//!   output shape (the group's *space*).
//! - A **reduce** group is a reduction over its operand's shape (the space)
//!   that absorbs the elementwise producers of its operand (input fusion).
//! - Everything else is an **opaque** group of one equation.
//!
//! Every equation of a fused group carries an [`IndexMap`] from the space to
//! its result, so a backend knows at which index to evaluate it and with
//! which strides to read each group input (stride 0 where broadcast).
//!
//! Invariants of a plan (checked by the tests by evaluating group by group):
//! - groups are in a topological order; each equation is in exactly one group;
//! - only a group's root produces values read outside it (its `outputs`);
//!   absorbed producers have all their uses inside their group;
//! - an equation absorbed under a broadcast (its result has fewer elements
//!   than the space) is a cheap data-movement op, never arithmetic that would
//!   be recomputed per broadcast element.

use crate::aval::{static_sizes, Aval};
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, Eqn, Jaxpr, Var};
use crate::primitive::{
    BroadcastInDimParams, Elementwise, Indexing, ReduceParams, Reduction, ReshapeParams, RevParams,
    SliceParams, Structural, TransposeParams,
};
use crate::primitive::{Primitive, ReduceOp};
use std::fmt;

/// Where a group's loop index `i` (one entry per space dimension) lands in a
/// value of the group: an affine map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexMap {
    /// The value's multi-index is `rows · i + offset`: one row (of `width`
    /// entries, one per space dimension) and one offset per value dimension.
    Multi {
        /// One row per value dimension.
        rows: Vec<Vec<i64>>,
        /// One offset per value dimension.
        offset: Vec<i64>,
        /// The rank of the space.
        width: usize,
    },
    /// Only the value's row-major linear offset is known:
    /// `strides · i + offset` (what is left after a `reshape`).
    Flat {
        /// One stride per space dimension.
        strides: Vec<i64>,
        /// The constant offset.
        offset: i64,
    },
}

impl IndexMap {
    /// The identity map of a space of rank `rank`.
    pub fn identity(rank: usize) -> IndexMap {
        IndexMap::Multi {
            rows: (0..rank)
                .map(|r| (0..rank).map(|c| (r == c) as i64).collect())
                .collect(),
            offset: vec![0; rank],
            width: rank,
        }
    }

    /// The map of a rank-0 value (every index reads its single element).
    pub fn scalar(width: usize) -> IndexMap {
        IndexMap::Multi {
            rows: Vec::new(),
            offset: Vec::new(),
            width,
        }
    }

    /// The rank of the space.
    pub fn width(&self) -> usize {
        match self {
            IndexMap::Multi { width, .. } => *width,
            IndexMap::Flat { strides, .. } => strides.len(),
        }
    }

    /// The element strides, one per space dimension, with which a row-major
    /// array of `shape` is read under this map (0 where broadcast).
    pub fn strides(&self, shape: &[usize]) -> Vec<i64> {
        match self {
            IndexMap::Flat { strides, .. } => strides.clone(),
            IndexMap::Multi { rows, width, .. } => {
                let mut out = vec![0i64; *width];
                let mut stride = 1i64;
                for (k, row) in rows.iter().enumerate().rev() {
                    for (o, r) in out.iter_mut().zip(row) {
                        *o += stride * r;
                    }
                    stride *= shape.get(k).copied().unwrap_or(1) as i64;
                }
                out
            }
        }
    }

    /// The element offset (row-major in `shape`) read at index 0.
    pub fn base(&self, shape: &[usize]) -> i64 {
        match self {
            IndexMap::Flat { offset, .. } => *offset,
            IndexMap::Multi { offset, .. } => {
                let mut acc = 0i64;
                let mut stride = 1i64;
                for (k, o) in offset.iter().enumerate().rev() {
                    acc += stride * o;
                    stride *= shape.get(k).copied().unwrap_or(1) as i64;
                }
                acc
            }
        }
    }
}

/// What kind of kernel a group is.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupKind {
    /// One loop nest over the root's output shape.
    Loop,
    /// A reduction of the root's operand (the space) over `axes`.
    Reduce {
        /// Which reduction.
        op: ReduceOp,
        /// Reduced axes of the space.
        axes: Vec<usize>,
    },
    /// A single equation compiled on its own.
    Opaque,
}

/// One group of equations of a jaxpr.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The kind of kernel.
    pub kind: GroupKind,
    /// Indices of the member equations, ascending (the root is last).
    pub eqns: Vec<usize>,
    /// Per member: the map from the space to its result; for a reduce root,
    /// the map to its operand (the identity). Empty for opaque groups.
    pub maps: Vec<IndexMap>,
    /// The iteration space (static sizes); empty for opaque groups.
    pub space: Vec<usize>,
    /// Variables read by the group and bound outside it, in first-use order.
    pub inputs: Vec<Var>,
    /// Variables the group binds that are read outside it (or are outvars).
    pub outputs: Vec<Var>,
}

impl Group {
    /// The root equation (the last member).
    pub fn root(&self) -> usize {
        self.eqns.last().copied().unwrap_or(0)
    }

    /// The map of member equation `eqn`, if it is a member of a fused group.
    pub fn map_of(&self, eqn: usize) -> Option<&IndexMap> {
        self.eqns
            .iter()
            .position(|&e| e == eqn)
            .and_then(|p| self.maps.get(p))
    }
}

/// A partition of a jaxpr's equations into groups, in execution order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FusionPlan {
    /// The groups, topologically ordered.
    pub groups: Vec<Group>,
    /// Per group, the printed name of each member primitive (for dumps).
    names: Vec<Vec<&'static str>>,
}

impl FusionPlan {
    /// The sub-jaxpr of group `g`: its inputs as invars, its members as
    /// equations and its outputs as outvars (evaluating it gives the group's
    /// outputs).
    pub fn group_jaxpr(&self, jaxpr: &Jaxpr, g: usize) -> Result<Jaxpr, IrError> {
        use super::rewrite::{Rewriter, VarMap};
        let group = self
            .groups
            .get(g)
            .ok_or_else(|| IrError::Invalid(format!("no group {g}")))?;
        let mut rw = Rewriter::new();
        let mut map = VarMap::new(jaxpr.vars.len());
        for v in &group.inputs {
            let nv = rw.fresh(jaxpr, &mut map, *v)?;
            rw.out.invars.push(nv);
        }
        for &e in &group.eqns {
            let eqn = jaxpr
                .eqns
                .get(e)
                .ok_or_else(|| IrError::Invalid(format!("no equation {e}")))?;
            rw.copy_eqn(jaxpr, &mut map, eqn)?;
        }
        rw.out.outvars = group
            .outputs
            .iter()
            .map(|v| map.atom(&Atom::Var(*v)))
            .collect::<Result<_, _>>()?;
        Ok(rw.out)
    }
}

impl fmt::Display for FusionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "fusion plan: {} groups", self.groups.len())?;
        let vars = |vs: &[Var]| {
            vs.iter()
                .map(|v| format!("v{}", v.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (i, g) in self.groups.iter().enumerate() {
            let kind = match &g.kind {
                GroupKind::Loop => format!("loop{:?}", g.space),
                GroupKind::Reduce { op, axes } => {
                    format!("{}{:?} axes={:?}", op.name(), g.space, axes)
                }
                GroupKind::Opaque => "opaque".to_string(),
            };
            let members = g
                .eqns
                .iter()
                .zip(self.names.get(i).into_iter().flatten())
                .map(|(e, n)| format!("e{e}:{n}"))
                .collect::<Vec<_>>()
                .join(" ");
            writeln!(
                f,
                "  g{i} {kind} ({}) -> ({}): {members}",
                vars(&g.inputs),
                vars(&g.outputs)
            )?;
        }
        Ok(())
    }
}

fn static_array(aval: &Aval) -> Option<Vec<usize>> {
    aval.as_array().and_then(|a| static_sizes(&a.shape))
}

/// The single static array result of an equation, if it has one.
fn single_out(jaxpr: &Jaxpr, eqn: &Eqn) -> Option<(Var, Vec<usize>)> {
    match eqn.outputs.as_slice() {
        [Binder::Var(v)] => Some((*v, static_array(jaxpr.try_aval(*v)?)?)),
        _ => None,
    }
}

/// Whether `p` maps its operands element by element (operands of the
/// result's shape, or scalars): what a loop kernel evaluates per index.
pub fn is_elementwise(p: &Primitive) -> bool {
    matches!(
        p,
        Primitive::Elementwise(Elementwise::Unary(_))
            | Primitive::Elementwise(Elementwise::Binary(_))
            | Primitive::Elementwise(Elementwise::IntegerPow(_))
            | Primitive::Elementwise(Elementwise::Round(_))
            | Primitive::Elementwise(Elementwise::ConvertElementType(_))
            | Primitive::Elementwise(Elementwise::SelectN)
            | Primitive::Elementwise(Elementwise::Clamp)
            | Primitive::Elementwise(Elementwise::RegularizedIncompleteBeta)
    )
}

/// Whether an equation can be a member of a loop group.
fn fusible(jaxpr: &Jaxpr, eqn: &Eqn) -> bool {
    if single_out(jaxpr, eqn).is_none() {
        return false;
    }
    let inputs_static = eqn.inputs.iter().all(|a| match a {
        Atom::Var(v) => jaxpr.try_aval(*v).and_then(static_array).is_some(),
        Atom::Lit(_) => true,
    });
    if !inputs_static {
        return false;
    }
    if is_elementwise(&eqn.primitive) {
        return true;
    }
    match &eqn.primitive {
        Primitive::Structural(Structural::Squeeze(_)) => true,
        Primitive::Structural(Structural::BroadcastInDim(_))
        | Primitive::Structural(Structural::Transpose(_))
        | Primitive::Indexing(Indexing::Slice(_))
        | Primitive::Structural(Structural::Rev(_)) => eqn.inputs.len() == 1,
        Primitive::Structural(Structural::Reshape(ReshapeParams { dimensions, .. })) => {
            dimensions.is_none() && eqn.inputs.len() == 1
        }
        _ => false,
    }
}

/// Whether `p` only moves data: inside a fused group its index map does
/// the work (a strided read) and its value is its operand's.
pub fn moves_data(p: &Primitive) -> bool {
    matches!(
        p,
        Primitive::Structural(Structural::BroadcastInDim(_))
            | Primitive::Structural(Structural::Transpose(_))
            | Primitive::Indexing(Indexing::Slice(_))
            | Primitive::Structural(Structural::Rev(_))
            | Primitive::Structural(Structural::Reshape(_))
            | Primitive::Structural(Structural::Squeeze(_))
    )
}

/// Data movement that is free to recompute under a broadcast.
fn cheap(p: &Primitive) -> bool {
    moves_data(p)
        || matches!(
            p,
            Primitive::Elementwise(Elementwise::ConvertElementType(_))
        )
}

/// The map at which a fused equation reads its operand `slot`, given the
/// map of its result (for a reduce root: the map of its operand). `None`
/// when the operand cannot be indexed from the space (the planner then
/// does not fuse across that edge).
pub fn operand_map(jaxpr: &Jaxpr, eqn: &Eqn, out_map: &IndexMap, slot: usize) -> Option<IndexMap> {
    let Atom::Var(v) = eqn.inputs.get(slot)? else {
        return None;
    };
    let in_shape = static_array(jaxpr.try_aval(*v)?)?;
    if let Primitive::Reduction(Reduction::Reduce(_)) = eqn.primitive {
        return Some(out_map.clone());
    }
    let (_, out_shape) = single_out(jaxpr, eqn)?;
    let width = out_map.width();
    let multi = |rows: Vec<Vec<i64>>, offset: Vec<i64>| IndexMap::Multi {
        rows,
        offset,
        width,
    };
    // Most rules need the result's multi-index.
    let (rows, offset) = match out_map {
        IndexMap::Multi { rows, offset, .. } => (rows, offset),
        IndexMap::Flat { .. } => {
            return match &eqn.primitive {
                Primitive::Structural(Structural::Reshape(_))
                | Primitive::Structural(Structural::Squeeze(_)) => Some(out_map.clone()),
                // A reordering reads its operand at a permuted multi-index,
                // which a flat map cannot express, even when the shapes
                // agree (`rev`, a square `transpose`).
                Primitive::Structural(Structural::Rev(_))
                | Primitive::Structural(Structural::Transpose(_)) => None,
                _ if in_shape == out_shape => Some(out_map.clone()),
                _ if in_shape.is_empty() => Some(IndexMap::scalar(width)),
                _ => None,
            };
        }
    };
    if rows.len() != out_shape.len() || offset.len() != out_shape.len() {
        return None;
    }
    match &eqn.primitive {
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        })) => {
            let (mut op_rows, mut op_off) = (Vec::new(), Vec::new());
            for (k, &n) in in_shape.iter().enumerate() {
                let d = usize::try_from(*broadcast_dimensions.get(k)?).ok()?;
                if n == *out_shape.get(d)? {
                    op_rows.push(rows[d].clone());
                    op_off.push(offset[d]);
                } else if n == 1 {
                    op_rows.push(vec![0; width]);
                    op_off.push(0);
                } else {
                    return None;
                }
            }
            Some(multi(op_rows, op_off))
        }
        Primitive::Structural(Structural::Transpose(TransposeParams { permutation })) => {
            // Result dim i is operand dim permutation[i].
            if permutation.len() != in_shape.len() {
                return None;
            }
            let mut op_rows = vec![Vec::new(); in_shape.len()];
            let mut op_off = vec![0; in_shape.len()];
            for (i, &p) in permutation.iter().enumerate() {
                *op_rows.get_mut(p)? = rows[i].clone();
                *op_off.get_mut(p)? = offset[i];
            }
            Some(multi(op_rows, op_off))
        }
        Primitive::Indexing(Indexing::Slice(SliceParams {
            start_indices,
            strides,
            ..
        })) => {
            // Operand index k = start_k + step_k * result index k.
            if start_indices.len() != in_shape.len() {
                return None;
            }
            let step = |k: usize| strides.as_ref().map_or(Some(1), |s| s.get(k).copied());
            let mut op_rows = Vec::new();
            let mut op_off = Vec::new();
            for k in 0..in_shape.len() {
                let st = step(k)?;
                op_rows.push(rows[k].iter().map(|r| r * st).collect());
                op_off.push(start_indices[k] + st * offset[k]);
            }
            Some(multi(op_rows, op_off))
        }
        Primitive::Structural(Structural::Rev(RevParams { dimensions })) => {
            let mut op_rows = rows.clone();
            let mut op_off = offset.clone();
            for &d in dimensions {
                let n = *in_shape.get(d)? as i64;
                op_rows[d] = rows[d].iter().map(|r| -r).collect();
                op_off[d] = n - 1 - offset[d];
            }
            Some(multi(op_rows, op_off))
        }
        Primitive::Structural(Structural::Reshape(_))
        | Primitive::Structural(Structural::Squeeze(_)) => Some(IndexMap::Flat {
            strides: out_map.strides(&out_shape),
            offset: out_map.base(&out_shape),
        }),
        _ => {
            if in_shape == out_shape {
                Some(out_map.clone())
            } else if in_shape.is_empty() {
                Some(IndexMap::scalar(width))
            } else if in_shape.len() == out_shape.len() {
                // Equal-rank operands broadcast through size-1 dimensions.
                let mut op_rows = Vec::new();
                let mut op_off = Vec::new();
                for k in 0..in_shape.len() {
                    if in_shape[k] == out_shape[k] {
                        op_rows.push(rows[k].clone());
                        op_off.push(offset[k]);
                    } else if in_shape[k] == 1 {
                        op_rows.push(vec![0; width]);
                        op_off.push(0);
                    } else {
                        return None;
                    }
                }
                Some(multi(op_rows, op_off))
            } else {
                None
            }
        }
    }
}

struct Building {
    kind: GroupKind,
    space: Vec<usize>,
    members: Vec<(usize, IndexMap)>,
}

/// Partitions the top-level equations of `jaxpr` into fusion groups.
pub fn plan_fusion(jaxpr: &Jaxpr) -> Result<FusionPlan, IrError> {
    let n = jaxpr.eqns.len();
    let mut uses: Vec<Vec<(usize, usize)>> = vec![Vec::new(); jaxpr.vars.len()];
    let mut is_out = vec![false; jaxpr.vars.len()];
    for (e, eqn) in jaxpr.eqns.iter().enumerate() {
        for (s, a) in eqn.inputs.iter().enumerate() {
            if let Atom::Var(v) = a {
                uses.get_mut(v.index())
                    .ok_or_else(|| IrError::Invalid(format!("variable {} out of range", v.0)))?
                    .push((e, s));
            }
        }
    }
    for a in &jaxpr.outvars {
        if let Atom::Var(v) = a {
            if let Some(slot) = is_out.get_mut(v.index()) {
                *slot = true;
            }
        }
    }
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut map_of: Vec<Option<IndexMap>> = vec![None; n];
    let mut building: Vec<Building> = Vec::new();
    for e in (0..n).rev() {
        let eqn = &jaxpr.eqns[e];
        if fusible(jaxpr, eqn) {
            let (v, shape) = single_out(jaxpr, eqn).ok_or_else(|| {
                IrError::Invalid(format!("equation {e} has no single static output"))
            })?;
            if let Some((g, m)) = absorb_target(
                jaxpr, eqn, v, &shape, &uses, &is_out, &group_of, &map_of, &building,
            ) {
                building[g].members.push((e, m.clone()));
                group_of[e] = Some(g);
                map_of[e] = Some(m);
                continue;
            }
            let m = IndexMap::identity(shape.len());
            building.push(Building {
                kind: GroupKind::Loop,
                space: shape,
                members: vec![(e, m.clone())],
            });
            group_of[e] = Some(building.len() - 1);
            map_of[e] = Some(m);
            continue;
        }
        if let (
            Primitive::Reduction(Reduction::Reduce(ReduceParams { op, axes, .. })),
            Some(_),
            [Atom::Var(x)],
        ) = (
            &eqn.primitive,
            single_out(jaxpr, eqn),
            eqn.inputs.as_slice(),
        ) {
            if let Some(space) = jaxpr.try_aval(*x).and_then(static_array) {
                let m = IndexMap::identity(space.len());
                building.push(Building {
                    kind: GroupKind::Reduce {
                        op: *op,
                        axes: axes.clone(),
                    },
                    space,
                    members: vec![(e, m.clone())],
                });
                group_of[e] = Some(building.len() - 1);
                map_of[e] = Some(m);
                continue;
            }
        }
        building.push(Building {
            kind: GroupKind::Opaque,
            space: Vec::new(),
            members: vec![(e, IndexMap::scalar(0))],
        });
        group_of[e] = Some(building.len() - 1);
    }
    // Roots were created last-to-first: reversing gives ascending roots,
    // which is a topological order (see the module invariants).
    building.reverse();
    let mut plan = FusionPlan::default();
    for mut b in building {
        b.members.sort_by_key(|(e, _)| *e);
        let eqns: Vec<usize> = b.members.iter().map(|(e, _)| *e).collect();
        let inside = |v: &Var| {
            eqns.iter().any(|&e| {
                jaxpr.eqns[e]
                    .outputs
                    .iter()
                    .any(|o| matches!(o, Binder::Var(w) if w == v))
            })
        };
        let mut inputs: Vec<Var> = Vec::new();
        for &e in &eqns {
            for a in &jaxpr.eqns[e].inputs {
                if let Atom::Var(v) = a {
                    if !inside(v) && !inputs.contains(v) {
                        inputs.push(*v);
                    }
                }
            }
        }
        let root = *eqns
            .last()
            .ok_or_else(|| IrError::Invalid("empty group".into()))?;
        let outputs: Vec<Var> = jaxpr.eqns[root]
            .outputs
            .iter()
            .filter_map(|o| match o {
                Binder::Var(v) => Some(*v),
                Binder::Drop(_) => None,
            })
            .collect();
        let opaque = b.kind == GroupKind::Opaque;
        plan.names.push(
            eqns.iter()
                .map(|&e| jaxpr.eqns[e].primitive.name())
                .collect(),
        );
        plan.groups.push(Group {
            kind: b.kind,
            maps: if opaque {
                Vec::new()
            } else {
                b.members.into_iter().map(|(_, m)| m).collect()
            },
            space: b.space,
            eqns,
            inputs,
            outputs,
        });
    }
    Ok(plan)
}

/// The group a fusible producer can join, with its map there: all its uses
/// are in one fused group, they agree on the map, and a broadcast recompute
/// only happens for cheap data movement.
#[allow(clippy::too_many_arguments)]
fn absorb_target(
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    v: Var,
    shape: &[usize],
    uses: &[Vec<(usize, usize)>],
    is_out: &[bool],
    group_of: &[Option<usize>],
    map_of: &[Option<IndexMap>],
    building: &[Building],
) -> Option<(usize, IndexMap)> {
    if is_out.get(v.index()).copied().unwrap_or(true) {
        return None;
    }
    let us = uses.get(v.index())?;
    let (first, _) = us.first()?;
    let g = group_of[*first]?;
    let b = building.get(g)?;
    if b.kind == GroupKind::Opaque {
        return None;
    }
    let mut map: Option<IndexMap> = None;
    for &(u, slot) in us {
        if group_of[u] != Some(g) {
            return None;
        }
        let m = operand_map(jaxpr, &jaxpr.eqns[u], map_of[u].as_ref()?, slot)?;
        match &map {
            None => map = Some(m),
            Some(prev) if *prev == m => {}
            Some(_) => return None,
        }
    }
    let map = map?;
    // Every operand must be readable from the space under the new map.
    for (slot, a) in eqn.inputs.iter().enumerate() {
        if matches!(a, Atom::Var(_)) {
            operand_map(jaxpr, eqn, &map, slot)?;
        }
    }
    let numel: usize = shape.iter().product();
    let space: usize = b.space.iter().product();
    if numel != space && !cheap(&eqn.primitive) {
        return None;
    }
    Some((g, map))
}
