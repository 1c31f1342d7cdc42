//! GEMM peepholes over a prepared (sub)jaxpr's groups: an operand that is
//! a static slice is read in place (`fuse_slices`), and `x + dot(l, r)` is
//! one accumulating GEMM (`fuse_accumulate`).

use crate::ops::dot::DotPlan;
use jaxon_ir::primitive::{Elementwise, Indexing, SliceParams, State};

/// What [`fuse_accumulate`] changed: group spans the memory plan must keep
/// live together, and the product temporaries no longer materialised.
#[derive(Default)]
pub(crate) struct Accumulated {
    pub spans: Vec<(usize, usize)>,
    pub temps: Vec<jaxon_ir::Var>,
}

/// `x + dot_general(l, r)` (a fused group holding only that `add`, whose
/// product is read nowhere else) becomes one accumulating GEMM at the
/// `add`'s place: `x` is copied into the sum's buffer and the GEMM adds
/// the product there (`gemm`'s `dst = dst + l·r`), so the product is never
/// written to a temporary nor read back by a separate pass. This is an
/// in-kernel `acc += dot(a, b)` (a Pallas `block_k` loop). The product's
/// group becomes [`GPrep::Nop`]; the span from it to the `add` keeps the
/// operands live until the GEMM runs.
pub(crate) fn fuse_accumulate(
    jaxpr: &jaxon_ir::Jaxpr,
    plan: &jaxon_ir::passes::FusionPlan,
    groups: &mut [crate::plan::groups::GPrep],
    dots: &mut Vec<DotPlan>,
) -> Accumulated {
    use crate::plan::groups::GPrep;
    use jaxon_ir::primitive::BinaryOp;
    use jaxon_ir::{Atom, Binder, Primitive};
    let mut done = Accumulated::default();
    let uses = use_counts(jaxpr, plan);
    // The group that computes each product, by its result.
    let mut dot_of = std::collections::HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        if let GPrep::Dot { out, acc: None, .. } = g {
            dot_of.insert(*out, gi);
        }
    }
    for gi in 0..groups.len() {
        let pg = &plan.groups[gi];
        let ([e], jaxon_ir::passes::GroupKind::Loop) = (pg.eqns.as_slice(), &pg.kind) else {
            continue;
        };
        let eqn = &jaxpr.eqns[*e];
        let (
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
            [Atom::Var(a), Atom::Var(b)],
            [Binder::Var(out)],
        ) = (
            &eqn.primitive,
            eqn.inputs.as_slice(),
            eqn.outputs.as_slice(),
        )
        else {
            continue;
        };
        if !matches!(&groups[gi], crate::plan::groups::GPrep::Kernel(k) if k.row_run.is_none()) {
            continue;
        }
        let (d, x, gd) = match (dot_of.get(b), dot_of.get(a)) {
            (Some(&gd), _) if b != a => (*b, *a, gd),
            (_, Some(&gd)) if b != a => (*a, *b, gd),
            _ => continue,
        };
        let ty = |v: &jaxon_ir::Var| {
            let t = jaxpr.try_aval(*v)?.as_array()?;
            Some((t.dtype, t.static_sizes()?))
        };
        let (Some(tx), Some(to), Some(td)) = (ty(&x), ty(out), ty(&d)) else {
            continue;
        };
        if tx != to || td != to || uses.get(d.index()) != Some(&1) || gd >= gi {
            continue;
        }
        let bytes = to.0.size_bytes() * to.1.iter().product::<usize>();
        let GPrep::Dot { idx, lhs, rhs, .. } = groups[gd] else {
            continue;
        };
        if !dots[idx].can_accumulate() {
            continue;
        }
        let mut p = dots[idx].clone();
        p.accumulate = true;
        dots.push(p);
        groups[gi] = GPrep::Dot {
            idx: dots.len() - 1,
            lhs,
            rhs,
            out: *out,
            acc: Some((x, bytes)),
            bias: None,
        };
        groups[gd] = GPrep::Nop;
        done.spans.push((gd, gi));
        done.temps.push(d);
    }
    done
}

/// Per variable: how many groups read it, plus one per outvar use.
pub(crate) fn use_counts(
    jaxpr: &jaxon_ir::Jaxpr,
    plan: &jaxon_ir::passes::FusionPlan,
) -> Vec<usize> {
    let mut uses = vec![0usize; jaxpr.vars.len()];
    let vars = plan.groups.iter().flat_map(|g| g.inputs.iter().copied());
    let outs = jaxpr.outvars.iter().filter_map(|a| match a {
        jaxon_ir::Atom::Var(v) => Some(*v),
        jaxon_ir::Atom::Lit(_) => None,
    });
    for v in vars.chain(outs) {
        if let Some(u) = uses.get_mut(v.index()) {
            *u += 1;
        }
    }
    uses
}

/// A `dot_general` operand that is a static unit-stride `slice` of
/// another value (a Pallas block of its window), computed by a group of
/// its own and read nowhere else, is read in place: the GEMM gets the
/// slice's offset and the sliced array's strides, the slice's group
/// becomes [`GPrep::Nop`](crate::plan::groups::GPrep::Nop) and its span to the
/// product keeps the sliced array live.
pub(crate) fn fuse_slices(
    jaxpr: &jaxon_ir::Jaxpr,
    plan: &jaxon_ir::passes::FusionPlan,
    groups: &mut [crate::plan::groups::GPrep],
    dots: &mut Vec<DotPlan>,
) -> Accumulated {
    use crate::plan::groups::GPrep;
    use jaxon_ir::{Atom, Binder, Primitive};
    let mut done = Accumulated::default();
    let uses = use_counts(jaxpr, plan);
    // Single-slice groups by their result: (group, sliced var, start).
    let mut slices = std::collections::HashMap::new();
    for (gi, pg) in plan.groups.iter().enumerate() {
        let ([e], jaxon_ir::passes::GroupKind::Loop) = (pg.eqns.as_slice(), &pg.kind) else {
            continue;
        };
        let eqn = &jaxpr.eqns[*e];
        let (
            Primitive::Indexing(Indexing::Slice(SliceParams {
                start_indices,
                strides,
                ..
            })),
            [Atom::Var(w)],
            [Binder::Var(out)],
        ) = (
            &eqn.primitive,
            eqn.inputs.as_slice(),
            eqn.outputs.as_slice(),
        )
        else {
            continue;
        };
        let unit = strides
            .as_ref()
            .is_none_or(|t| t.values.iter().all(|&x| x == 1));
        let start: Option<Vec<usize>> = start_indices
            .values
            .iter()
            .map(|&x| usize::try_from(x).ok())
            .collect();
        if let (true, Some(start)) = (unit, start) {
            slices.insert(*out, (gi, *w, start));
        }
    }
    for gi in 0..groups.len() {
        let GPrep::Dot {
            idx, lhs, rhs, acc, ..
        } = &groups[gi]
        else {
            continue;
        };
        let (mut idx, mut ops, acc) = (*idx, [*lhs, *rhs], *acc);
        if ops[0] == ops[1] {
            continue;
        }
        for side in 0..2 {
            let s = ops[side];
            let Some((gs, w, start)) = slices.get(&s) else {
                continue;
            };
            let outer = jaxpr
                .try_aval(*w)
                .and_then(|a| a.as_array())
                .and_then(|a| a.static_sizes());
            let ok = *gs < gi
                && uses.get(s.index()) == Some(&1)
                && acc.is_none_or(|(x, _)| x != s)
                && !ops.contains(w);
            let plan = outer
                .filter(|_| ok)
                .and_then(|o| dots[idx].with_operand_view(side, &o, start));
            if let Some(p) = plan {
                dots.push(p);
                idx = dots.len() - 1;
                ops[side] = *w;
                groups[*gs] = GPrep::Nop;
                done.spans.push((*gs, gi));
                done.temps.push(s);
            }
        }
        if let GPrep::Dot {
            idx: i, lhs, rhs, ..
        } = &mut groups[gi]
        {
            *i = idx;
            *lhs = ops[0];
            *rhs = ops[1];
        }
    }
    done
}

/// A product (plain or accumulating) whose operands include `get`s of a
/// box, each computed by a group of its own and read nowhere else, becomes
/// one native step ([`BoxDot`](crate::ops::native::boxdot::BoxDot)) that has the GEMM
/// read the boxes in place; the `get` groups become
/// [`GPrep::Nop`](crate::plan::groups::GPrep::Nop), kept live with the product by
/// their spans. (An in-kernel `acc += dot(x_ref[:, ds(k, bk)], ...)`.)
pub(crate) fn fuse_box_reads(
    jaxpr: &jaxon_ir::Jaxpr,
    plan: &jaxon_ir::passes::FusionPlan,
    groups: &mut [crate::plan::groups::GPrep],
    dots: &[DotPlan],
    steps: &mut Vec<crate::run::exec::StepCall>,
) -> Result<Accumulated, jaxon_ir::IrError> {
    use crate::ops::native::boxdot::{BoxDot, BoxRead};
    use crate::plan::groups::GPrep;
    use crate::run::exec::{Operand, Step, StepCall};
    use jaxon_ir::{Atom, Binder, Primitive};
    let mut done = Accumulated::default();
    let uses = use_counts(jaxpr, plan);
    let ty = |v: jaxon_ir::Var| {
        let a = jaxpr.try_aval(v)?.as_array()?;
        Some((v, a.dtype, a.static_sizes()?))
    };
    for gi in 0..groups.len() {
        let GPrep::Dot {
            idx,
            lhs,
            rhs,
            out,
            acc,
            ..
        } = &groups[gi]
        else {
            continue;
        };
        let (idx, ops, out, acc) = (*idx, [*lhs, *rhs], *out, *acc);
        if ops[0] == ops[1] || !dots[idx].can_accumulate() {
            continue;
        }
        // Per side: the `get` group and its equation.
        let mut gets = [None, None];
        for (side, s) in ops.iter().enumerate() {
            let Some(gs) = (0..gi).find(|&g| {
                let pg = &plan.groups[g];
                pg.eqns.len() == 1
                    && matches!(pg.kind, jaxon_ir::passes::GroupKind::Opaque)
                    && matches!(groups[g], GPrep::Step { .. })
                    && jaxpr.eqns[pg.eqns[0]].outputs.as_slice() == [Binder::Var(*s)]
            }) else {
                continue;
            };
            let e = plan.groups[gs].eqns[0];
            let eqn = &jaxpr.eqns[e];
            let Some(Atom::Var(r)) = eqn.inputs.first() else {
                continue;
            };
            let same_rank =
                matches!((ty(*r), ty(*s)), (Some(a), Some(b)) if a.2.len() == b.2.len());
            if matches!(eqn.primitive, Primitive::State(State::Get(_)))
                && uses.get(s.index()) == Some(&1)
                && same_rank
                && acc.is_none_or(|(x, _)| x != *s)
            {
                gets[side] = Some((gs, e));
            }
        }
        if gets == [None, None] {
            continue;
        }
        let mut inputs: Vec<Operand> = Vec::new();
        let mut reads = [None, None];
        for side in 0..2 {
            match gets[side] {
                None => inputs.push(Operand::Var(ops[side])),
                Some((_, e)) => {
                    let eqn = &jaxpr.eqns[e];
                    let Step { op, .. } = crate::plan::opaque::native_step(jaxpr, e, eqn)?;
                    for a in &eqn.inputs {
                        inputs.push(crate::run::exec::operand(a)?);
                    }
                    reads[side] = Some(BoxRead {
                        get: op,
                        n_idx: eqn.inputs.len() - 1,
                    });
                }
            }
        }
        if let Some((x, _)) = acc {
            inputs.push(Operand::Var(x));
        }
        let mut ins: Vec<jaxon_ir::Var> = Vec::new();
        for o in &inputs {
            if let Operand::Var(v) = o {
                if !ins.contains(v) {
                    ins.push(*v);
                }
            }
        }
        let (Some(typed_ins), Some(typed_out)) = (
            ins.iter().map(|v| ty(*v)).collect::<Option<Vec<_>>>(),
            ty(out),
        ) else {
            continue;
        };
        steps.push(StepCall {
            step: Step {
                op: Box::new(BoxDot {
                    plan: dots[idx].clone(),
                    reads,
                    acc: acc.is_some(),
                }),
                inputs,
                outs: vec![Some(out)],
            },
            ins: typed_ins,
            outs: vec![typed_out],
        });
        groups[gi] = GPrep::Step {
            idx: steps.len() - 1,
            ins,
            outs: vec![out],
        };
        for (side, g) in gets.iter().enumerate() {
            if let Some((gs, _)) = g {
                groups[*gs] = GPrep::Nop;
                done.spans.push((*gs, gi));
                done.temps.push(ops[side]);
            }
        }
    }
    Ok(done)
}
