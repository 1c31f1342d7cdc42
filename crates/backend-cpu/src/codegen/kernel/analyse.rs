//! Analysis of a fused group for code generation: its members and their
//! operands, the reads of its inputs with per-dimension strides, the
//! simplified iteration space, fused multiply-add contraction and the
//! vector width.

use super::half;
use super::ops::{calls_libm, vector_ok, Math};
use super::{err, row_major, static_shape, Gen, GenError, Leaf, Node, Src};
use jaxon_ir::passes::{operand_map, Group, GroupKind};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::primitive::{Elementwise, Reduction};
use jaxon_ir::{Atom, Binder, DType, Jaxpr, Primitive};

pub(super) fn analyse(jaxpr: &Jaxpr, group: &Group, math: Math) -> Result<Gen, GenError> {
    let rank = group.space.len();
    let reduce = match &group.kind {
        GroupKind::Loop => None,
        GroupKind::Reduce { op, .. } => Some(*op),
        GroupKind::Opaque => return Err(err(None, "opaque group has no loop kernel")),
    };
    let mut nodes: Vec<Node> = Vec::new();
    let mut leaves: Vec<Leaf> = Vec::new();
    let mut result = None;
    for (p, &e) in group.eqns.iter().enumerate() {
        let eqn = jaxpr
            .eqns
            .get(e)
            .ok_or_else(|| err(Some(e), "equation out of range"))?;
        let map = group
            .maps
            .get(p)
            .ok_or_else(|| err(Some(e), "missing index map"))?;
        let mut srcs = Vec::new();
        let mut in_dts = Vec::new();
        for (slot, a) in eqn.inputs.iter().enumerate() {
            let dt = jaxpr
                .atom_aval(a)
                .ok_or_else(|| err(Some(e), "operand out of range"))?
                .dtype();
            in_dts.push(dt);
            let src = match a {
                Atom::Lit(l) => Src::Lit(*l),
                Atom::Var(v) => {
                    if let Some(q) = group.eqns[..p].iter().position(|&f| {
                        jaxpr.eqns[f]
                            .outputs
                            .iter()
                            .any(|o| matches!(o, Binder::Var(w) if w == v))
                    }) {
                        Src::Val(q)
                    } else {
                        let arg = group
                            .inputs
                            .iter()
                            .position(|w| w == v)
                            .ok_or_else(|| err(Some(e), "operand is not a group input"))?;
                        let shape = static_shape(jaxpr, a)
                            .ok_or_else(|| err(Some(e), "dynamic operand shape"))?;
                        let m = operand_map(jaxpr, eqn, map, slot)
                            .ok_or_else(|| err(Some(e), "operand cannot be indexed"))?;
                        let leaf = Leaf {
                            arg,
                            dt,
                            base: m.base(&shape),
                            strides: m.strides(&shape),
                        };
                        let i = match leaves.iter().position(|l| *l == leaf) {
                            Some(i) => i,
                            None => {
                                leaves.push(leaf);
                                leaves.len() - 1
                            }
                        };
                        Src::Leaf(i)
                    }
                }
            };
            srcs.push(src);
        }
        let out_dt = match eqn.outputs.as_slice() {
            [b] => jaxpr
                .binder_aval(b)
                .ok_or_else(|| err(Some(e), "output out of range"))?
                .dtype(),
            _ => return Err(err(Some(e), "fused equations have one output")),
        };
        if !half::storable(out_dt) {
            return Err(err(Some(e), format!("dtype {out_dt} is not supported yet")));
        }
        if let Some(d) = in_dts.iter().find(|d| !half::storable(**d)) {
            return Err(err(Some(e), format!("dtype {d} is not supported yet")));
        }
        let is_root = p + 1 == group.eqns.len();
        if is_root && reduce.is_some() {
            if !matches!(eqn.primitive, Primitive::Reduction(Reduction::Reduce(_))) {
                return Err(err(Some(e), "reduce group without a reduction root"));
            }
            result = Some(srcs[0].clone());
        } else {
            if let Primitive::Reduction(Reduction::Reduce(_)) = eqn.primitive {
                return Err(err(Some(e), "reduction inside a loop group"));
            }
            if is_root {
                result = Some(Src::Val(p));
            }
        }
        nodes.push(Node {
            eqn: e,
            prim: eqn.primitive.clone(),
            fused_mul: None,
            skip: false,
            srcs,
            in_dts,
            out_dt,
        });
    }
    let result = result.ok_or_else(|| err(None, "empty group"))?;
    let root = nodes.last().ok_or_else(|| err(None, "empty group"))?;
    // Half-precision reductions are widened to f32 ones before planning
    // (`rewrite::widen_half_reductions`): the output buffer is sized for
    // the declared dtype, so the kernel must not accumulate in a wider one.
    let out_dt = root.out_dt;
    if reduce.is_some() && half::is_half(out_dt) {
        return Err(err(
            None,
            format!("internal error: {out_dt} reduction was not widened to f32"),
        ));
    }
    let out_strides: Vec<i64> = match &group.kind {
        GroupKind::Reduce { axes, .. } => {
            let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).collect();
            let kept_shape: Vec<usize> = kept.iter().map(|&d| group.space[d]).collect();
            let ks = row_major(&kept_shape);
            (0..rank)
                .map(|d| kept.iter().position(|&k| k == d).map_or(0, |i| ks[i]))
                .collect()
        }
        _ => row_major(&group.space),
    };
    // Simplify the space: drop size-1 dims, merge contiguous neighbours.
    let mut dims: Vec<usize> = Vec::new();
    let mut all: Vec<Vec<i64>> = leaves.iter().map(|l| l.strides.clone()).collect();
    all.push(out_strides);
    let mut merged: Vec<Vec<i64>> = vec![Vec::new(); all.len()];
    for d in 0..rank {
        let n = group.space[d];
        if n == 1 {
            continue;
        }
        let can_merge = !dims.is_empty()
            && all.iter().zip(&merged).all(|(s, m)| {
                let last = *m.last().unwrap_or(&0);
                last == s[d] * n as i64
            });
        if can_merge {
            let last = dims.len() - 1;
            dims[last] *= n;
            for (s, m) in all.iter().zip(merged.iter_mut()) {
                let k = m.len() - 1;
                m[k] = s[d];
            }
        } else {
            dims.push(n);
            for (s, m) in all.iter().zip(merged.iter_mut()) {
                m.push(s[d]);
            }
        }
    }
    if dims.is_empty() {
        dims.push(1);
        for m in merged.iter_mut() {
            m.push(0);
        }
    }
    let out_strides = merged.pop().unwrap_or_default();
    for (l, m) in leaves.iter_mut().zip(merged) {
        l.strides = m;
    }
    let mut gen = Gen {
        nodes,
        leaves,
        dims,
        out_strides,
        out_dt,
        reduce,
        result,
        gdt: out_dt,
        lanes: 1,
        n_inputs: group.inputs.len(),
        tile: None,
        math,
    };
    gen.lanes = gen.vector_lanes();
    Ok(gen)
}

impl Gen {
    /// Marks `a*b + c`, `a*b - c` and `c - a*b` (float, the product used
    /// only there) to be emitted as one fused multiply-add.
    pub(super) fn contract_fma(&mut self) {
        use jaxon_ir::primitive::BinaryOp;
        let mut uses = vec![0usize; self.nodes.len()];
        let srcs = self.nodes.iter().flat_map(|n| n.srcs.iter());
        for s in srcs.chain(std::iter::once(&self.result)) {
            if let Src::Val(q) = s {
                uses[*q] += 1;
            }
        }
        let last = if self.reduce.is_some() {
            self.nodes.len().saturating_sub(1)
        } else {
            self.nodes.len()
        };
        for p in 0..last {
            let n = &self.nodes[p];
            let add_like = matches!(
                n.prim,
                Primitive::Elementwise(Elementwise::Binary(
                    BinaryOp::Add | BinaryOp::AddAny | BinaryOp::Sub
                ))
            );
            if !add_like || !matches!(n.out_dt, DType::F32 | DType::F64) || n.srcs.len() != 2 {
                continue;
            }
            let found = (0..2).find_map(|slot| match n.srcs[slot] {
                Src::Val(q)
                    if uses[q] == 1
                        && !self.nodes[q].skip
                        && self.nodes[q].prim
                            == Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul))
                        && self.nodes[q].out_dt == n.out_dt =>
                {
                    Some((q, slot))
                }
                _ => None,
            });
            if let Some((q, slot)) = found {
                self.nodes[q].skip = true;
                self.nodes[p].fused_mul = Some((q, slot));
            }
        }
    }

    /// The SIMD width for this group, or 1 for scalar code.
    fn vector_lanes(&self) -> u8 {
        let lanes = match self.gdt {
            DType::F32 => 4,
            DType::F64 => 2,
            _ => return 1,
        };
        let inner = self.dims.len() - 1;
        let contiguous = |s: &[i64]| s[inner] == 0 || s[inner] == 1;
        let leaves_ok = self
            .leaves
            .iter()
            .all(|l| l.dt == self.gdt && contiguous(&l.strides));
        let nodes_ok = self.nodes.iter().enumerate().all(|(p, n)| {
            let is_reduce_root = self.reduce.is_some() && p + 1 == self.nodes.len();
            is_reduce_root
                || (vector_ok(&n.prim, &n.in_dts, n.out_dt, self.gdt)
                    && !(self.math == Math::Libm && calls_libm(&n.prim))
                    && n.srcs.iter().all(|s| match s {
                        Src::Lit(l) => l.dtype == self.gdt || l.dtype == DType::Bool,
                        _ => true,
                    }))
        });
        let reduce_ok = match self.reduce {
            None => true,
            Some(op) => matches!(
                op,
                ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod
            ),
        };
        let result_ok = match &self.result {
            Src::Val(p) => self.nodes[*p].out_dt == self.gdt,
            Src::Leaf(_) => true,
            Src::Lit(_) => false,
        };
        if leaves_ok && nodes_ok && reduce_ok && result_ok && contiguous(&self.out_strides) {
            lanes
        } else {
            1
        }
    }
}
