//! Jaxpr rewrites run before fusion and memory planning so that every
//! value the planner places has its declared type and is written once:
//! discharging `Ref` arguments (each state write binds a new variable) and
//! widening half-precision reductions to f32 ones between two casts.

use jaxon_ir::primitive::{ConvertElementTypeParams, Elementwise, Reduction};
use jaxon_ir::{Atom, Aval, Binder, ClosedJaxpr, DType, Eqn, Jaxpr, Primitive, ShapedArray};
use std::sync::Arc;

/// Rewrites each `reduce_*` whose result is f16 or bf16 into an f32
/// reduction of the operand cast to f32, cast back to the declared
/// dtype: the interpreter accumulates half-precision reductions in f32 and
/// rounds once, and this way every planned value keeps its declared
/// dtype (the f32 accumulator is a variable of its own). `None` when there
/// is nothing to rewrite.
pub(crate) fn widen_half_reductions(closed: &ClosedJaxpr) -> Option<ClosedJaxpr> {
    let src = &*closed.jaxpr;
    let is_half_reduce = |e: &Eqn| {
        matches!(e.primitive, Primitive::Reduction(Reduction::Reduce(_)))
            && matches!(e.outputs.as_slice(), [b] if src.binder_aval(b)
                .is_some_and(|a| matches!(a.dtype(), DType::F16 | DType::BF16)))
    };
    if !src.eqns.iter().any(is_half_reduce) {
        return None;
    }
    let mut j: Jaxpr = src.clone();
    let eqns = std::mem::take(&mut j.eqns);
    let mut out = Vec::with_capacity(eqns.len() + 4);
    for eqn in eqns {
        if !is_half_reduce(&eqn) {
            out.push(eqn);
            continue;
        }
        let (Some(x), Some(Binder::Var(y))) = (eqn.inputs.first(), eqn.outputs.first()) else {
            // A dropped result: nothing reads it.
            continue;
        };
        let (Some(in_aval), Some(out_aval)) = (j.atom_aval(x), j.try_aval(*y).cloned()) else {
            out.push(eqn);
            continue;
        };
        let (Some(ia), Some(oa)) = (in_aval.as_array(), out_aval.as_array()) else {
            out.push(eqn);
            continue;
        };
        let to_f32 = |a: &ShapedArray| ShapedArray {
            dtype: DType::F32,
            shape: a.shape.clone(),
            weak_type: false,
        };
        let (wide_in, wide_out) = (to_f32(ia), to_f32(oa));
        let declared = oa.dtype;
        let xw = j.new_var(Aval::Array(wide_in));
        let acc = j.new_var(Aval::Array(wide_out));
        out.push(Eqn {
            primitive: Primitive::Elementwise(Elementwise::ConvertElementType(
                ConvertElementTypeParams {
                    new_dtype: DType::F32,
                    weak_type: false,
                },
            )),
            inputs: vec![*x],
            outputs: vec![Binder::Var(xw)],
        });
        out.push(Eqn {
            primitive: eqn.primitive.clone(),
            inputs: vec![Atom::Var(xw)],
            outputs: vec![Binder::Var(acc)],
        });
        out.push(Eqn {
            primitive: Primitive::Elementwise(Elementwise::ConvertElementType(
                ConvertElementTypeParams {
                    new_dtype: declared,
                    weak_type: oa.weak_type,
                },
            )),
            inputs: vec![Atom::Var(acc)],
            outputs: vec![Binder::Var(*y)],
        });
    }
    j.eqns = out;
    Some(ClosedJaxpr {
        jaxpr: Arc::new(j),
        consts: closed.consts.clone(),
    })
}
