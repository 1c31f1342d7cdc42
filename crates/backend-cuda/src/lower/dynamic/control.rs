//! Dynamic-shape control flow and calls: `cond`, `while`, `scan` and
//! `for_loop` become the plan's host-driven steps over bodies compiled
//! once; calls (`jit`, `custom_jvp_call`, `custom_vjp_call`, `remat2`) are
//! inlined.
//!
//! A `for_loop` whose bounds the host knows (literals or sizes) and whose
//! step is a positive literal is a `Scan` step of a size-expression length
//! (no readback per iteration); otherwise a `While` on a trip count
//! computed on the device.
//!
//! Invariants: a loop's carries keep their shapes (a body result whose
//! resolved shape differs from its carry's is `Unsupported`, naming the
//! equation), and a carry is a dimension variable of the body only when
//! the body returns it unchanged (`for_loop`'s implicit sizes), so every
//! iteration runs with the sizes the call resolved.

use super::build::{
    bind_outputs, body, cannot, copy_into, gather, i64_lit, load, materialize, ty, Out, Scope, B,
    DV,
};
use super::sym::{Sz, SzOp};
use super::SStep;
use crate::lower::kernel::i64c;
use crate::lower::plan::{BufId, CarryUpdate};
use jaxon_ir::primitive::{CondParams, Control, ForLoopParams, ScanParams, WhileParams};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Eqn, IrError, Jaxpr};

/// Lowers a control-flow or call equation.
pub(crate) fn lower(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &Control,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let args = |scope: &Scope, atoms: &[Atom]| -> Result<Vec<(DV, Option<Sz>)>, IrError> {
        atoms
            .iter()
            .map(|a| Ok((scope.atom(a)?, scope.size_of(a))))
            .collect()
    };
    match p {
        Control::ShardMap(_) | Control::CustomLinearSolve(_) => {
            Err(cannot(q, "no dynamic-shape lowering yet"))
        }
        Control::Jit(_)
        | Control::CustomJvpCall(_)
        | Control::CustomVjpCall(_)
        | Control::Remat(_) => {
            let all = args(scope, &q.inputs)?;
            let (callee, skip) = super::super::control::inlined_call(p, all.len())
                .ok_or_else(|| cannot(q, "not a call"))?;
            let a = all.get(skip..).unwrap_or(&[]).to_vec();
            call(b, q, &callee, &a, scope, steps)
        }
        Control::Cond(c) => cond(b, jaxpr, q, c, scope, steps),
        Control::While(w) => while_(b, jaxpr, q, w, scope, steps),
        Control::Scan(s) => scan(b, jaxpr, q, s, scope, steps),
        Control::ForLoop(f) => for_loop(b, jaxpr, q, f, scope, steps),
    }
}

/// An inlined call: the body's results are the equation's results.
fn call(
    b: &mut B,
    q: &Eqn,
    callee: &ClosedJaxpr,
    args: &[(DV, Option<Sz>)],
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let outs = body(b, callee, args, steps)?;
    if outs.len() != q.outputs.len() {
        return Err(IrError::Invalid(format!(
            "{}: {} results for {} outputs",
            q.primitive.name(),
            outs.len(),
            q.outputs.len()
        )));
    }
    for (o, r) in q.outputs.iter().zip(outs) {
        if let Binder::Var(v) = o {
            scope.bind(*v, r.dv, r.size);
        }
    }
    Ok(())
}

/// Copies a body's results into `outs`, checking their shapes.
fn copy_results(
    b: &mut B,
    q: &Eqn,
    steps: &mut Vec<SStep>,
    vals: &[Out],
    outs: &[(BufId, DType, Vec<Sz>)],
) -> Result<(), IrError> {
    if vals.len() != outs.len() {
        return Err(IrError::Invalid(format!(
            "{}: {} results for {} outputs",
            q.primitive.name(),
            vals.len(),
            outs.len()
        )));
    }
    for (j, (v, (buf, _, shape))) in vals.iter().zip(outs).enumerate() {
        same_shape(q, j, &v.shape, shape)?;
        copy_into(b, steps, v.dv, *buf, &Sz::prod(shape))?;
    }
    Ok(())
}

fn same_shape(q: &Eqn, j: usize, got: &[Sz], want: &[Sz]) -> Result<(), IrError> {
    if got != want {
        return Err(cannot(
            q,
            format!(
                "result {j} has shape {got:?} where its output or carry has {want:?} (a \
                 shape that changes in a loop or between branches)"
            ),
        ));
    }
    Ok(())
}

fn cond(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &CondParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let (index, ops) = q
        .inputs
        .split_first()
        .ok_or_else(|| IrError::Invalid("cond: no index".into()))?;
    if p.branches.is_empty() {
        return Err(IrError::Invalid("cond: no branches".into()));
    }
    let a: Vec<(DV, Option<Sz>)> = ops
        .iter()
        .map(|x| Ok((scope.atom(x)?, scope.size_of(x))))
        .collect::<Result<_, IrError>>()?;
    let idx = scope.atom(index)?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    match idx {
        DV::Lit(l) => {
            let i = l
                .as_i64()
                .unwrap_or(0)
                .clamp(0, p.branches.len() as i64 - 1) as usize;
            let vals = body(b, &p.branches[i], &a, steps)?;
            copy_results(b, q, steps, &vals, &outs)
        }
        DV::Buf(ib) => {
            let mut branches = Vec::new();
            for br in &p.branches {
                let mut bsteps = Vec::new();
                let vals = body(b, br, &a, &mut bsteps)?;
                copy_results(b, q, &mut bsteps, &vals, &outs)?;
                branches.push(bsteps);
            }
            steps.push(SStep::Cond {
                index: ib,
                branches,
            });
            Ok(())
        }
    }
}

/// Whether a loop body returns its input `first + j` unchanged as result
/// `out0 + j` (so that it may size the body's values).
fn invariant(body: &ClosedJaxpr, first: usize, out0: usize, j: usize) -> bool {
    match (
        body.jaxpr.invars.get(first + j),
        body.jaxpr.outvars.get(out0 + j),
    ) {
        (Some(v), Some(Atom::Var(o))) => v == o,
        _ => false,
    }
}

/// The carry updates from a body's results into the carry buffers.
fn carry_updates(
    b: &mut B,
    q: &Eqn,
    steps: &mut Vec<SStep>,
    vals: &[Out],
    carries: &[(BufId, DType, Vec<Sz>)],
) -> Result<Vec<CarryUpdate>, IrError> {
    let mut ups = Vec::new();
    for (j, (v, (dst, dt, shape))) in vals.iter().zip(carries).enumerate() {
        same_shape(q, j, &v.shape, shape)?;
        let src = materialize(b, steps, v.dv, *dt, shape)?;
        if src != *dst {
            let temp = Some(b.alloc(*dt, shape)?);
            ups.push(CarryUpdate {
                src,
                temp,
                dst: *dst,
            });
        }
    }
    Ok(ups)
}

/// Carry buffers initialised from `init` (of types `types`), with the
/// sizes of the loop-invariant ones.
#[allow(clippy::type_complexity)]
fn carries(
    b: &mut B,
    steps: &mut Vec<SStep>,
    init: &[(DV, Option<Sz>)],
    types: &[(DType, Vec<Sz>)],
    keep: impl Fn(usize) -> bool,
) -> Result<(Vec<(BufId, DType, Vec<Sz>)>, Vec<(DV, Option<Sz>)>), IrError> {
    let mut bufs = Vec::new();
    let mut args = Vec::new();
    for (j, ((v, s), (dt, shape))) in init.iter().zip(types).enumerate() {
        let buf = b.alloc(*dt, shape)?;
        copy_into(b, steps, *v, buf, &Sz::prod(shape))?;
        bufs.push((buf, *dt, shape.clone()));
        args.push((DV::Buf(buf), if keep(j) { s.clone() } else { None }));
    }
    Ok((bufs, args))
}

fn bind_carries(
    q: &Eqn,
    scope: &mut Scope,
    bufs: &[(BufId, DType, Vec<Sz>)],
    sizes: &[(DV, Option<Sz>)],
) {
    for ((o, (buf, _, _)), (_, s)) in q.outputs.iter().zip(bufs).zip(sizes) {
        if let Binder::Var(v) = o {
            scope.bind(*v, DV::Buf(*buf), s.clone());
        }
    }
}

fn while_(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &WhileParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let (cn, bn) = (p.cond_nconsts, p.body_nconsts);
    if q.inputs.len() < cn + bn || q.outputs.len() != q.inputs.len() - cn - bn {
        return Err(IrError::Invalid(
            "while: operands and results differ".into(),
        ));
    }
    let at =
        |a: &Atom| -> Result<(DV, Option<Sz>), IrError> { Ok((scope.atom(a)?, scope.size_of(a))) };
    let cconsts: Vec<_> = q.inputs[..cn].iter().map(at).collect::<Result<_, _>>()?;
    let bconsts: Vec<_> = q.inputs[cn..cn + bn]
        .iter()
        .map(at)
        .collect::<Result<_, _>>()?;
    let init: Vec<_> = q.inputs[cn + bn..]
        .iter()
        .map(at)
        .collect::<Result<_, _>>()?;
    let types: Vec<_> = q.inputs[cn + bn..]
        .iter()
        .map(|a| ty(jaxpr, scope, a))
        .collect::<Result<_, _>>()?;
    let (bufs, cargs) = carries(b, steps, &init, &types, |j| {
        invariant(&p.body_jaxpr, bn, 0, j)
    })?;
    let mut csteps = Vec::new();
    let ca: Vec<_> = cconsts.iter().chain(&cargs).cloned().collect();
    let cvals = body(b, &p.cond_jaxpr, &ca, &mut csteps)?;
    let pv = cvals
        .first()
        .map(|o| o.dv)
        .ok_or_else(|| IrError::Invalid("while: predicate without result".into()))?;
    let pred = materialize(b, &mut csteps, pv, DType::Bool, &[])?;
    let mut bsteps = Vec::new();
    let ba: Vec<_> = bconsts.iter().chain(&cargs).cloned().collect();
    let bvals = body(b, &p.body_jaxpr, &ba, &mut bsteps)?;
    if bvals.len() != bufs.len() {
        return Err(IrError::Invalid(
            "while: body results and carries differ".into(),
        ));
    }
    let carry = carry_updates(b, q, &mut bsteps, &bvals, &bufs)?;
    steps.push(SStep::While {
        cond: csteps,
        pred,
        body: bsteps,
        carry,
    });
    bind_carries(q, scope, &bufs, &cargs);
    Ok(())
}

fn scan(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &ScanParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let (nc, ncar) = (p.num_consts, p.num_carry);
    if q.inputs.len() < nc + ncar || q.outputs.len() < ncar {
        return Err(IrError::Invalid("scan: too few operands".into()));
    }
    let at =
        |a: &Atom| -> Result<(DV, Option<Sz>), IrError> { Ok((scope.atom(a)?, scope.size_of(a))) };
    let consts: Vec<_> = q.inputs[..nc].iter().map(at).collect::<Result<_, _>>()?;
    let init: Vec<_> = q.inputs[nc..nc + ncar]
        .iter()
        .map(at)
        .collect::<Result<_, _>>()?;
    let types: Vec<_> = q.inputs[nc..nc + ncar]
        .iter()
        .map(|a| ty(jaxpr, scope, a))
        .collect::<Result<_, _>>()?;
    let mut xs = Vec::new();
    let mut items = Vec::new();
    for a in &q.inputs[nc + ncar..] {
        let (dt, shape) = ty(jaxpr, scope, a)?;
        if shape.first() != Some(&Sz::C(p.length as i64)) {
            return Err(IrError::ty(
                "scan",
                "an xs operand's leading size is not the length",
            ));
        }
        let stacked = materialize(b, steps, scope.atom(a)?, dt, &shape)?;
        let item = b.alloc(dt, &shape[1..])?;
        xs.push((stacked, item, Sz::prod(&shape[1..])));
        items.push((DV::Buf(item), None));
    }
    let (bufs, cargs) = carries(b, steps, &init, &types, |j| invariant(&p.jaxpr, nc, 0, j))?;
    let mut ys_out = Vec::new();
    for o in &q.outputs[ncar..] {
        let (dt, shape) = super::build::out_ty(jaxpr, scope, o)?;
        let buf = b.alloc(dt, &shape)?;
        if let Binder::Var(v) = o {
            scope.bind(*v, DV::Buf(buf), None);
        }
        ys_out.push((buf, dt, shape));
    }
    let mut bsteps = Vec::new();
    let ba: Vec<_> = consts
        .iter()
        .cloned()
        .chain(cargs.iter().cloned())
        .chain(items)
        .collect();
    let bvals = body(b, &p.jaxpr, &ba, &mut bsteps)?;
    if bvals.len() != q.outputs.len() {
        return Err(IrError::Invalid(
            "scan: body results and outputs differ".into(),
        ));
    }
    let carry = carry_updates(b, q, &mut bsteps, &bvals[..ncar], &bufs)?;
    let mut ys = Vec::new();
    for (j, (v, (stacked, dt, shape))) in bvals[ncar..].iter().zip(&ys_out).enumerate() {
        same_shape(q, ncar + j, &v.shape, &shape[1..])?;
        let item = materialize(b, &mut bsteps, v.dv, *dt, &shape[1..])?;
        ys.push((*stacked, item, Sz::prod(&shape[1..])));
    }
    steps.push(SStep::Scan {
        length: Sz::C(p.length as i64),
        reverse: p.reverse,
        xs,
        body: bsteps,
        carry,
        ys,
    });
    bind_carries(q, scope, &bufs, &cargs);
    Ok(())
}

fn for_loop(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &ForLoopParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let (nc, ni) = (p.body_nconsts, p.nimplicit);
    let head = nc + ni;
    if q.inputs.len() < head + 4 || q.outputs.len() != q.inputs.len() - nc - 4 {
        return Err(IrError::Invalid(
            "for_loop: operands and results differ".into(),
        ));
    }
    let at =
        |a: &Atom| -> Result<(DV, Option<Sz>), IrError> { Ok((scope.atom(a)?, scope.size_of(a))) };
    let consts: Vec<_> = q.inputs[..nc].iter().map(at).collect::<Result<_, _>>()?;
    let carry_atoms: Vec<&Atom> = q.inputs[nc..head]
        .iter()
        .chain(&q.inputs[head + 4..])
        .collect();
    let init: Vec<_> = carry_atoms
        .iter()
        .map(|a| at(a))
        .collect::<Result<_, _>>()?;
    let types: Vec<_> = carry_atoms
        .iter()
        .map(|a| ty(jaxpr, scope, a))
        .collect::<Result<_, _>>()?;
    let (index_dtype, _) = ty(jaxpr, scope, &q.inputs[head + 3])?;
    if !index_dtype.is_int() {
        return Err(IrError::ty("for_loop", "the loop index is not an integer"));
    }
    let (lo, hi, step) = (
        scope.atom(&q.inputs[head])?,
        scope.atom(&q.inputs[head + 1])?,
        scope.atom(&q.inputs[head + 2])?,
    );
    // Body invars: consts, implicit carries, the index, the other carries;
    // results: the carries.
    let body_j = &p.body_jaxpr;
    let keep = |j: usize| {
        let input = if j < ni { nc + j } else { nc + j + 1 };
        match (body_j.jaxpr.invars.get(input), body_j.jaxpr.outvars.get(j)) {
            (Some(v), Some(Atom::Var(o))) => v == o,
            _ => false,
        }
    };
    let (bufs, cargs) = carries(b, steps, &init, &types, keep)?;
    let counter = b.alloc(DType::I64, &[])?;
    copy_into(b, steps, DV::Lit(i64_lit(0)), counter, &Sz::C(1))?;
    let mut bsteps = Vec::new();
    let index = b.alloc(index_dtype, &[])?;
    gather(b, &mut bsteps, "for_index", index, &[], |k, args, b, _| {
        let kv = load(k, args, b, DV::Buf(counter), i64c(0))?;
        let lo = load(k, args, b, lo, i64c(0))?.cast(DType::I64);
        let st = load(k, args, b, step, i64c(0))?.cast(DType::I64);
        Ok((lo + kv * st).cast(index_dtype))
    })?;
    let ba: Vec<_> = consts
        .iter()
        .cloned()
        .chain(cargs[..ni].iter().cloned())
        .chain([(DV::Buf(index), None)])
        .chain(cargs[ni..].iter().cloned())
        .collect();
    let bvals = body(b, body_j, &ba, &mut bsteps)?;
    if bvals.len() != bufs.len() {
        return Err(IrError::Invalid(
            "for_loop: body results and carries differ".into(),
        ));
    }
    let mut carry = carry_updates(b, q, &mut bsteps, &bvals, &bufs)?;
    let next = b.alloc(DType::I64, &[])?;
    gather(b, &mut bsteps, "for_next", next, &[], |k, args, b, _| {
        Ok(load(k, args, b, DV::Buf(counter), i64c(0))? + i64c(1))
    })?;
    carry.push(CarryUpdate {
        src: next,
        temp: Some(b.alloc(DType::I64, &[])?),
        dst: counter,
    });
    // Bounds the host knows and a positive literal step: the trip count is
    // a size expression, `max(0, (hi - lo + step - 1) / step)` (truncating;
    // a non-positive numerator gives at most 0), and the loop a `Scan` step
    // with no readback per iteration.
    let host_step = match q.inputs.get(head + 2) {
        Some(Atom::Lit(l)) => l.as_i64().filter(|&s| s > 0),
        _ => None,
    };
    if let (Some(lo_s), Some(hi_s), Some(st)) = (
        scope.size_of(&q.inputs[head]),
        scope.size_of(&q.inputs[head + 1]),
        host_step,
    ) {
        let num = Sz::bin(SzOp::Add, Sz::bin(SzOp::Sub, hi_s, lo_s), Sz::C(st - 1));
        let length = Sz::bin(SzOp::Max, Sz::C(0), Sz::bin(SzOp::Div, num, Sz::C(st)));
        steps.push(SStep::Scan {
            length,
            reverse: false,
            xs: Vec::new(),
            body: bsteps,
            carry,
            ys: Vec::new(),
        });
        bind_carries(q, scope, &bufs, &cargs);
        return Ok(());
    }
    let rev = p.apply_reverse_transform;
    let st = b.alloc(DType::I64, &[])?;
    gather(b, steps, "for_step", st, &[], |k, args, b, _| {
        Ok(load(k, args, b, step, i64c(0))?.cast(DType::I64))
    })?;
    steps.push(SStep::CheckStep {
        step: st,
        reverse: rev,
    });
    let trips = b.alloc(DType::I64, &[])?;
    gather(b, steps, "for_trips", trips, &[], |k, args, b, _| {
        let lo = load(k, args, b, lo, i64c(0))?.cast(DType::I64);
        let hi = load(k, args, b, hi, i64c(0))?.cast(DType::I64);
        let st = load(k, args, b, step, i64c(0))?.cast(DType::I64);
        Ok(crate::lower::for_loop::trip_count(k, lo, hi, st, rev))
    })?;
    let mut csteps = Vec::new();
    let pred = b.alloc(DType::Bool, &[])?;
    gather(b, &mut csteps, "for_pred", pred, &[], |k, args, b, _| {
        let kv = load(k, args, b, DV::Buf(counter), i64c(0))?;
        let t = load(k, args, b, DV::Buf(trips), i64c(0))?;
        Ok(kv.lt(t))
    })?;
    steps.push(SStep::While {
        cond: csteps,
        pred,
        body: bsteps,
        carry,
    });
    bind_carries(q, scope, &bufs, &cargs);
    Ok(())
}
