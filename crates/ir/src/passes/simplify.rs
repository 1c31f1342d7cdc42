//! Simplification passes: `inline_jit`, `dce`, `cse`, `fold_constants`.
//!
//! All four rebuild the jaxpr through [`Rewriter`], so the result has a
//! compact variable table in binding order. Nested jaxprs of control-flow
//! primitives are left untouched (they are separate scopes); only `jit`
//! bodies are inlined, recursively.

use super::rewrite::{rewrite_eqns, Rewriter, VarMap};
use crate::array::{HostArray, Storage};
use crate::aval::{Aval, Dim};
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var};
use crate::literal::{Literal, Scalar};
use crate::primitive::Primitive;
use crate::primitive::{
    Control, CustomJvpCallParams, CustomVjpCallParams, Elementwise, JitParams, RematParams,
    Structural,
};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Inlines every `jit` equation's body into its caller, recursively. The
/// bodies' constants become constvars of the result (appended after the
/// caller's own).
pub fn inline_jit(closed: &ClosedJaxpr) -> Result<ClosedJaxpr, IrError> {
    inline(closed, false)
}

/// Like [`inline_jit`], and also replaces `custom_jvp_call`,
/// `custom_vjp_call` and `remat2` by their primal bodies. For compilation
/// only: the custom differentiation rules and the rematerialisation hint
/// are dropped, so run it after all transforms.
pub fn inline_calls(closed: &ClosedJaxpr) -> Result<ClosedJaxpr, IrError> {
    inline(closed, true)
}

fn inline(closed: &ClosedJaxpr, all_calls: bool) -> Result<ClosedJaxpr, IrError> {
    let old = &closed.jaxpr;
    if old.constvars.len() != closed.consts.len() {
        return Err(IrError::Invalid(format!(
            "closed jaxpr has {} constvars but {} consts",
            old.constvars.len(),
            closed.consts.len()
        )));
    }
    let mut rw = Rewriter::new();
    let mut map = VarMap::new(old.vars.len());
    let mut consts: Vec<HostArray> = closed.consts.to_vec();
    for v in &old.constvars {
        let nv = rw.fresh(old, &mut map, *v)?;
        rw.out.constvars.push(nv);
    }
    for v in &old.invars {
        let nv = rw.fresh(old, &mut map, *v)?;
        rw.out.invars.push(nv);
    }
    inline_eqns(&mut rw, old, &mut map, &mut consts, all_calls)?;
    rw.out.outvars = old
        .outvars
        .iter()
        .map(|a| map.atom(a))
        .collect::<Result<_, _>>()?;
    Ok(ClosedJaxpr::new(rw.out, consts))
}

fn inline_eqns(
    rw: &mut Rewriter,
    old: &Jaxpr,
    map: &mut VarMap,
    consts: &mut Vec<HostArray>,
    all_calls: bool,
) -> Result<(), IrError> {
    for eqn in &old.eqns {
        // (body, its consts, the operands it takes)
        let empty: &[HostArray] = &[];
        let (inner, body_consts, operands): (&Jaxpr, &[HostArray], Cow<[Atom]>) =
            match &eqn.primitive {
                Primitive::Control(Control::Jit(JitParams { jaxpr: body, .. })) => {
                    (&body.jaxpr, &body.consts, Cow::Borrowed(&eqn.inputs))
                }
                Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
                    call_jaxpr,
                    num_consts,
                    ..
                }))
                | Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
                    call_jaxpr,
                    num_consts,
                    ..
                })) if all_calls => {
                    // The primal takes every operand, or those after the consts.
                    let n = call_jaxpr.jaxpr.invars.len();
                    let ops = if n == eqn.inputs.len() {
                        &eqn.inputs[..]
                    } else {
                        eqn.inputs.get(*num_consts..).unwrap_or(&[])
                    };
                    (&call_jaxpr.jaxpr, &call_jaxpr.consts, Cow::Borrowed(ops))
                }
                Primitive::Control(Control::Remat(RematParams { jaxpr, .. })) if all_calls => {
                    (jaxpr, empty, Cow::Borrowed(&eqn.inputs))
                }
                // What JAX runs: `solve` on its consts and `b`.
                Primitive::Control(Control::CustomLinearSolve(p)) if all_calls => {
                    let (Some(solve), Some(consts), Some(b)) = (
                        &p.jaxprs.solve,
                        eqn.inputs.get(p.consts_range(2)),
                        eqn.inputs.get(p.num_consts()..),
                    ) else {
                        rw.copy_eqn(old, map, eqn)?;
                        continue;
                    };
                    let ops: Vec<Atom> = consts.iter().chain(b).copied().collect();
                    (&solve.jaxpr, &solve.consts, Cow::Owned(ops))
                }
                _ => {
                    rw.copy_eqn(old, map, eqn)?;
                    continue;
                }
            };
        let name = eqn.primitive.name();
        if inner.constvars.len() != body_consts.len()
            || inner.invars.len() != operands.len()
            || inner.outvars.len() != eqn.outputs.len()
        {
            return Err(IrError::Invalid(format!(
                "{name}: arity mismatch ({} consts for {} constvars, {} inputs for {} invars, {} outputs for {} outvars)",
                body_consts.len(),
                inner.constvars.len(),
                operands.len(),
                inner.invars.len(),
                eqn.outputs.len(),
                inner.outvars.len()
            )));
        }
        let mut inner_map = VarMap::new(inner.vars.len());
        for (v, c) in inner.constvars.iter().zip(body_consts.iter()) {
            let nv = rw.fresh(inner, &mut inner_map, *v)?;
            rw.out.constvars.push(nv);
            consts.push(c.clone());
        }
        for (v, a) in inner.invars.iter().zip(operands.iter()) {
            inner_map.set(*v, map.atom(a)?)?;
        }
        inline_eqns(rw, inner, &mut inner_map, consts, all_calls)?;
        for (b, o) in eqn.outputs.iter().zip(&inner.outvars) {
            if let Binder::Var(v) = b {
                map.set(*v, inner_map.atom(o)?)?;
            }
        }
    }
    Ok(())
}

/// True when an equation must stay even if its results are unused (or must
/// not be merged with an identical one): it writes through a `Ref`, or reads
/// or passes one (whose contents may change between two reads), or calls
/// the host for an effect (`debug_print`).
pub fn has_effect(jaxpr: &Jaxpr, eqn: &Eqn) -> bool {
    let effect_prim = eqn.primitive.writes_refs() || eqn.primitive.has_host_effect();
    let is_ref = |a: &Atom| match a {
        Atom::Var(v) => jaxpr.try_aval(*v).is_none_or(Aval::is_ref),
        Atom::Lit(_) => false,
    };
    let out_ref = eqn
        .outputs
        .iter()
        .any(|b| jaxpr.binder_aval(b).is_none_or(Aval::is_ref));
    effect_prim || out_ref || eqn.inputs.iter().any(is_ref)
}

fn mark_dims(aval: &Aval, live: &mut [bool]) {
    for d in aval.shape() {
        if let Dim::Var(v) = d {
            if let Some(slot) = live.get_mut(v.index()) {
                *slot = true;
            }
        }
    }
}

/// Removes equations whose results are unused and that have no effect;
/// unused results of kept multi-output equations become `_` binders.
pub fn dce(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    let mut live = vec![false; jaxpr.vars.len()];
    let mark = |a: &Atom, live: &mut Vec<bool>| {
        if let Atom::Var(v) = a {
            if let Some(slot) = live.get_mut(v.index()) {
                *slot = true;
            }
        }
    };
    for a in &jaxpr.outvars {
        mark(a, &mut live);
        if let Some(av) = jaxpr.atom_aval(a) {
            mark_dims(&av, &mut live);
        }
    }
    let mut keep = vec![false; jaxpr.eqns.len()];
    for (i, eqn) in jaxpr.eqns.iter().enumerate().rev() {
        let used = eqn.outputs.iter().any(|b| match b {
            Binder::Var(v) => live.get(v.index()).copied().unwrap_or(false),
            Binder::Drop(_) => false,
        });
        if used || has_effect(jaxpr, eqn) {
            keep[i] = true;
            for a in &eqn.inputs {
                mark(a, &mut live);
            }
            for b in &eqn.outputs {
                if let Some(av) = jaxpr.binder_aval(b) {
                    mark_dims(av, &mut live);
                }
            }
        }
    }
    let mut next = 0usize;
    rewrite_eqns(jaxpr, |rw, map, eqn| {
        let kept = keep.get(next).copied().unwrap_or(true);
        next += 1;
        if !kept {
            return Ok(true);
        }
        let pruned = Eqn {
            primitive: eqn.primitive.clone(),
            inputs: eqn.inputs.clone(),
            outputs: eqn
                .outputs
                .iter()
                .map(|b| match b {
                    Binder::Var(v) if !live.get(v.index()).copied().unwrap_or(false) => {
                        Binder::Drop(jaxpr.aval(*v).clone())
                    }
                    other => other.clone(),
                })
                .collect(),
        };
        rw.copy_eqn(jaxpr, map, &pruned)?;
        Ok(true)
    })
}

/// Bitwise identity of atoms: literals compare by dtype and bit pattern, so
/// `0.0` and `-0.0` differ and `NaN` equals itself.
fn atom_key(a: &Atom) -> (u8, u128, u8) {
    match a {
        Atom::Var(v) => (0, v.0 as u128, 0),
        Atom::Lit(l) => {
            let bits = match l.value {
                Scalar::Bool(b) => b as u128,
                Scalar::Int(i) => i as u64 as u128,
                Scalar::UInt(u) => u as u128,
                Scalar::Float(x) => x.to_bits() as u128,
                Scalar::Complex(re, im) => ((re.to_bits() as u128) << 64) | im.to_bits() as u128,
            };
            (1, bits, l.dtype as u8)
        }
    }
}

/// Whether CSE may merge two equal applications of this primitive: pure,
/// first-order, and not an uninitialised value.
fn cse_candidate(p: &Primitive) -> bool {
    p.sub_jaxprs().is_empty() && !matches!(p, Primitive::Structural(Structural::Empty2(_)))
}

/// Merges equations that apply the same primitive (equal params) to the same
/// operands; later copies are replaced by the first one's results.
pub fn cse(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
    rewrite_eqns(jaxpr, |rw, map, eqn| {
        let candidate = cse_candidate(&eqn.primitive)
            && !has_effect(jaxpr, eqn)
            && eqn.outputs.iter().all(|b| matches!(b, Binder::Var(_)));
        if !candidate {
            return Ok(false);
        }
        let inputs = eqn
            .inputs
            .iter()
            .map(|a| map.atom(a))
            .collect::<Result<Vec<_>, _>>()?;
        let keys: Vec<_> = inputs.iter().map(atom_key).collect();
        let mut h = DefaultHasher::new();
        eqn.primitive.name().hash(&mut h);
        keys.hash(&mut h);
        let hash = h.finish();
        let out_avals: Vec<Aval> = eqn
            .outputs
            .iter()
            .map(|b| jaxpr.binder_aval(b).map(|a| map.aval(a)))
            .collect::<Option<_>>()
            .ok_or_else(|| IrError::Invalid("equation output out of range".into()))?;
        let found = seen.get(&hash).and_then(|idxs| {
            idxs.iter().copied().find(|&i| {
                let prev = &rw.out.eqns[i];
                prev.primitive == eqn.primitive
                    && prev.inputs.iter().map(atom_key).eq(keys.iter().copied())
                    && prev.outputs.len() == out_avals.len()
                    && prev
                        .outputs
                        .iter()
                        .zip(&out_avals)
                        .all(|(b, a)| rw.out.binder_aval(b) == Some(a))
            })
        });
        match found {
            Some(i) => {
                let prev_outs: Vec<Binder> = rw.out.eqns[i].outputs.clone();
                for (b, pb) in eqn.outputs.iter().zip(prev_outs) {
                    if let (Binder::Var(v), Binder::Var(pv)) = (b, pb) {
                        map.set(*v, Atom::Var(pv))?;
                    }
                }
            }
            None => {
                rw.copy_eqn(jaxpr, map, eqn)?;
                seen.entry(hash).or_default().push(rw.out.eqns.len() - 1);
            }
        }
        Ok(true)
    })
}

/// Primitives whose scalar applications to literals are folded.
fn foldable(p: &Primitive) -> bool {
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

/// A scalar host array holding a literal's exact value.
pub(crate) fn literal_array(l: &Literal) -> HostArray {
    use crate::dtype::DType;
    let data = match (l.value, l.dtype) {
        (Scalar::Int(i), DType::I64) => Storage::I64(vec![i]),
        (Scalar::UInt(u), DType::U64) => Storage::U64(vec![u]),
        (Scalar::Int(i), dt) => Storage::from_f64(dt, &[i as f64]),
        (Scalar::UInt(u), dt) => Storage::from_f64(dt, &[u as f64]),
        (Scalar::Bool(b), dt) => Storage::from_f64(dt, &[b as u8 as f64]),
        (Scalar::Float(x), dt) => Storage::from_f64(dt, &[x]),
        (Scalar::Complex(re, im), dt) => {
            Storage::from_c128(dt, &[num_complex::Complex64::new(re, im)])
        }
    };
    HostArray::new(Vec::new(), data).unwrap_or_else(|_| HostArray::scalar(l.dtype, l.as_f64()))
}

/// The literal held by a one-element host array.
pub(crate) fn array_literal(a: &HostArray) -> Option<Literal> {
    if a.len() != 1 {
        return None;
    }
    let value = match a.data() {
        Storage::Bool(v) => Scalar::Bool(v[0]),
        Storage::I8(v) => Scalar::Int(v[0] as i64),
        Storage::I16(v) => Scalar::Int(v[0] as i64),
        Storage::I32(v) => Scalar::Int(v[0] as i64),
        Storage::I64(v) => Scalar::Int(v[0]),
        Storage::U8(v) => Scalar::UInt(v[0] as u64),
        Storage::U16(v) => Scalar::UInt(v[0] as u64),
        Storage::U32(v) => Scalar::UInt(v[0] as u64),
        Storage::U64(v) => Scalar::UInt(v[0]),
        Storage::F16(v) => Scalar::Float(v[0].to_f64()),
        Storage::BF16(v) => Scalar::Float(v[0].to_f64()),
        Storage::F32(v) => Scalar::Float(v[0] as f64),
        Storage::F64(v) => Scalar::Float(v[0]),
        Storage::C64(v) => Scalar::Complex(v[0].re as f64, v[0].im as f64),
        Storage::C128(v) => Scalar::Complex(v[0].re, v[0].im),
        Storage::Key(_) => return None,
    };
    Some(Literal {
        value,
        dtype: a.dtype(),
    })
}

/// Evaluates scalar elementwise equations whose operands are all literals
/// with the reference interpreter's kernels, replacing their result by a
/// literal. Anything else (arrays, calls, failures) is kept as is.
pub fn fold_constants(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    rewrite_eqns(jaxpr, |_, map, eqn| match try_fold(jaxpr, map, eqn)? {
        Some((v, lit)) => {
            map.set(v, Atom::Lit(lit))?;
            Ok(true)
        }
        None => Ok(false),
    })
}

fn try_fold(jaxpr: &Jaxpr, map: &VarMap, eqn: &Eqn) -> Result<Option<(Var, Literal)>, IrError> {
    if !foldable(&eqn.primitive) {
        return Ok(None);
    }
    let [Binder::Var(out)] = eqn.outputs.as_slice() else {
        return Ok(None);
    };
    let scalar_out = jaxpr
        .try_aval(*out)
        .and_then(Aval::as_array)
        .is_some_and(|a| a.shape.is_empty());
    if !scalar_out {
        return Ok(None);
    }
    let mut args = Vec::with_capacity(eqn.inputs.len());
    for a in &eqn.inputs {
        match map.atom(a)? {
            Atom::Lit(l) => args.push(literal_array(&l)),
            Atom::Var(_) => return Ok(None),
        }
    }
    let result = match crate::interp::ops::eval_op(&eqn.primitive, &args) {
        Ok(r) => r,
        Err(_) => return Ok(None),
    };
    let lit = match result.as_slice() {
        [a] => array_literal(a),
        _ => None,
    };
    Ok(lit
        .filter(|l| jaxpr.try_aval(*out).map(Aval::dtype) == Some(l.dtype))
        .map(|l| (*out, l)))
}
