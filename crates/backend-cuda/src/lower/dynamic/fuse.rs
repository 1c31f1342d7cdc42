//! Fused elementwise runs of dynamic-shape programs: consecutive
//! elementwise equations (and broadcasts of scalars) over one shape are
//! evaluated per element in one grid-stride kernel whose extent is a size
//! parameter, storing only the results used after the run. A run followed
//! by a `reduce_*` of one of its results, with nothing else of the run
//! used later, is fused into the reduction: its warp-per-output kernel
//! evaluates the run's members at each element it reduces, and the run
//! stores nothing.
//!
//! Invariant: members are evaluated in equation order at the element's
//! linear index; a scalar operand is read at index 0 (every other operand
//! has the run's shape, `run_member` checks it).

use super::build::{
    bind_outputs, cannot, load, loop_kernel, out_ty, store, ty, SArgs, Scope, B, DV,
};
use super::reduce::{reduce_kernel, Reduce};
use super::sym::Sz;
use super::SStep;
use crate::kir::{Expr, KernelBuilder};
use crate::lower::elementwise;
use crate::lower::kernel::{compute, i64c};
use jaxon_ir::primitive::{Elementwise, Primitive, ReduceParams, Reduction, Structural};
use jaxon_ir::{Atom, Binder, DType, Eqn, IrError, Jaxpr, Var};
use std::collections::{HashMap, HashSet};

/// Whether `q` can be a member of an elementwise run over `shape`: an
/// elementwise equation or a broadcast of a scalar, with one output of
/// that shape, whose array operands have that shape or are scalars.
fn run_member(jaxpr: &Jaxpr, scope: &Scope, q: &Eqn, shape: &[Sz]) -> bool {
    let [o] = q.outputs.as_slice() else {
        return false;
    };
    let ok_prim = match &q.primitive {
        // Complex values never reach a kernel; a width-changing bitcast
        // has operands of another shape and fails the check below.
        Primitive::Elementwise(e) => !matches!(
            e,
            Elementwise::Complex | Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_)
        ),
        Primitive::Structural(Structural::BroadcastInDim(_)) => q
            .inputs
            .first()
            .and_then(|a| ty(jaxpr, scope, a).ok())
            .is_some_and(|(_, s)| s.is_empty()),
        _ => false,
    };
    if !ok_prim {
        return false;
    }
    let Ok((odt, oshape)) = out_ty(jaxpr, scope, o) else {
        return false;
    };
    if oshape != shape || odt.is_complex() || odt == DType::KeyFry {
        return false;
    }
    let operands = match &q.primitive {
        Primitive::Structural(_) => &q.inputs[..1],
        _ => &q.inputs[..],
    };
    operands.iter().all(|a| match ty(jaxpr, scope, a) {
        Ok((dt, s)) => !dt.is_complex() && dt != DType::KeyFry && (s.is_empty() || s == shape),
        Err(_) => false,
    })
}

/// The end of the elementwise run starting at `e` (`e` when there is
/// none).
pub(crate) fn run_end(jaxpr: &Jaxpr, scope: &Scope, e: usize) -> usize {
    let Some(first) = jaxpr.eqns.get(e) else {
        return e;
    };
    let Some(Ok((_, shape))) = first.outputs.first().map(|o| out_ty(jaxpr, scope, o)) else {
        return e;
    };
    let mut end = e;
    while end < jaxpr.eqns.len() && run_member(jaxpr, scope, &jaxpr.eqns[end], &shape) {
        end += 1;
    }
    end
}

/// The variables `eqns` and the outvars read.
fn used_by(jaxpr: &Jaxpr, eqns: &[Eqn]) -> HashSet<Var> {
    let var = |a: &Atom| match a {
        Atom::Var(v) => Some(*v),
        Atom::Lit(_) => None,
    };
    let mut used: HashSet<Var> = eqns
        .iter()
        .flat_map(|q| q.inputs.iter().filter_map(var))
        .collect();
    used.extend(jaxpr.outvars.iter().filter_map(var));
    used
}

/// A member's operand types and result dtype.
type MemberTypes = (Vec<(DType, Vec<Sz>)>, DType);

/// A run's members with their operand types and result dtypes.
struct Run<'a> {
    members: &'a [Eqn],
    types: Vec<MemberTypes>,
}

impl<'a> Run<'a> {
    fn new(jaxpr: &Jaxpr, scope: &Scope, members: &'a [Eqn]) -> Result<Run<'a>, IrError> {
        let mut types = Vec::new();
        for q in members {
            let ts = q
                .inputs
                .iter()
                .map(|a| ty(jaxpr, scope, a))
                .collect::<Result<_, _>>()?;
            types.push((ts, out_ty(jaxpr, scope, &q.outputs[0])?.0));
        }
        Ok(Run { members, types })
    }

    /// Every member's value at linear index `lin` (compute dtype).
    fn eval(
        &self,
        k: &mut KernelBuilder,
        args: &mut SArgs,
        b: &B,
        scope: &Scope,
        lin: &Expr,
    ) -> Result<HashMap<Var, Expr>, IrError> {
        let mut vals: HashMap<Var, Expr> = HashMap::new();
        for (q, (ts, odt)) in self.members.iter().zip(&self.types) {
            let n_ops = match &q.primitive {
                Primitive::Structural(_) => 1,
                _ => q.inputs.len(),
            };
            let mut xs = Vec::new();
            let mut dts = Vec::new();
            for (a, (dt, s)) in q.inputs.iter().zip(ts).take(n_ops) {
                dts.push(*dt);
                let x = match a {
                    Atom::Var(v) if vals.contains_key(v) => vals[v].clone(),
                    a => {
                        let at = if s.is_empty() { i64c(0) } else { lin.clone() };
                        load(k, args, b, scope.atom(a)?, at)?
                    }
                };
                xs.push(x);
            }
            let r = match &q.primitive {
                Primitive::Elementwise(ew) => elementwise::scalar(k, ew, *odt, &dts, xs)
                    .map_err(|err| cannot(q, err.to_string()))?,
                _ => xs
                    .into_iter()
                    .next()
                    .ok_or_else(|| IrError::Invalid("broadcast without operand".into()))?,
            };
            let v = k.let_("v", compute(*odt), r);
            if let Binder::Var(var) = &q.outputs[0] {
                vals.insert(*var, Expr::var(v));
            }
        }
        Ok(vals)
    }
}

/// Lowers the run `e..end`; `true` when equation `end` (a reduction of
/// the run) was lowered with it.
pub(crate) fn lower(
    b: &mut B,
    jaxpr: &Jaxpr,
    scope: &mut Scope,
    e: usize,
    end: usize,
    steps: &mut Vec<SStep>,
) -> Result<bool, IrError> {
    let members = &jaxpr.eqns[e..end];
    let run = Run::new(jaxpr, scope, members)?;
    let (_, shape) = out_ty(jaxpr, scope, &members[0].outputs[0])?;
    let results: HashSet<Var> = members
        .iter()
        .filter_map(|q| match &q.outputs[0] {
            Binder::Var(v) => Some(*v),
            Binder::Drop(_) => None,
        })
        .collect();
    // A reduction of a run result, nothing else of the run used later.
    if let Some(q) = jaxpr.eqns.get(end) {
        if let (
            Primitive::Reduction(Reduction::Reduce(ReduceParams { op, axes, .. })),
            [Atom::Var(x)],
            [_],
        ) = (&q.primitive, q.inputs.as_slice(), q.outputs.as_slice())
        {
            let later = used_by(jaxpr, jaxpr.eqns.get(end + 1..).unwrap_or(&[]));
            if results.contains(x) && results.is_disjoint(&later) {
                let (xdt, xs) = ty(jaxpr, scope, &q.inputs[0])?;
                let outs = bind_outputs(b, jaxpr, q, scope)?;
                let (out, odt, _) = outs[0].clone();
                let red = Reduce {
                    q,
                    op: *op,
                    axes,
                    xdt,
                    xs: &xs,
                    out,
                    odt,
                };
                let x = *x;
                let scope_ro: &Scope = scope;
                reduce_kernel(b, steps, &red, |k, args, b, at| {
                    let at = k.let_("at", DType::I64, at);
                    let vals = run.eval(k, args, b, scope_ro, &Expr::var(at))?;
                    vals.get(&x).cloned().ok_or_else(|| {
                        IrError::Invalid("cuda lowering: a fused operand is missing".into())
                    })
                })?;
                return Ok(true);
            }
        }
    }
    let used = used_by(jaxpr, &jaxpr.eqns[end..]);
    let mut stored = Vec::new();
    for q in members {
        if let Binder::Var(v) = &q.outputs[0] {
            if used.contains(v) {
                let (dt, _) = out_ty(jaxpr, scope, &q.outputs[0])?;
                stored.push((*v, b.alloc(dt, &shape)?));
            }
        }
    }
    let scope_ro: &Scope = scope;
    let name = format!("ew_{}", members[members.len() - 1].primitive.name());
    loop_kernel(b, steps, &name, &shape, |k, args, b, lin, _| {
        let vals = run.eval(k, args, b, scope_ro, lin)?;
        for (v, buf) in &stored {
            let x = vals
                .get(v)
                .cloned()
                .ok_or_else(|| IrError::Invalid("cuda lowering: a run result is missing".into()))?;
            store(k, args, b, *buf, lin.clone(), x)?;
        }
        Ok(())
    })?;
    for (v, buf) in stored {
        scope.bind(v, DV::Buf(buf), None);
    }
    Ok(false)
}
