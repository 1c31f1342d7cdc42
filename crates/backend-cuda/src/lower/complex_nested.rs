//! Complex values through control flow (`cond`, `while`, `scan`): each
//! nested jaxpr is rewritten on its own by [`split_inner`] (the program's
//! rewrite, minus the simplification the program already had), so that a
//! complex value crossing its boundary — an operand, a carry, a stacked
//! `scan` slice, a result — is a real array of shape `S ++ [2]`, parts
//! interleaved, as at the program's own boundary. The equation keeps its
//! primitive with the rewritten jaxprs: its complex operands are packed
//! into that form before it and its complex results unpacked into pairs
//! after it.
//!
//! Invariants: a rewritten nested jaxpr has the arity of the source one
//! (one real value per complex value), so the counts in the params
//! (`num_carry`, `num_consts`, `cond_nconsts`, ...) stay right; `scan`
//! slices stacked operands along axis 0, so a stacked `[T, S.., 2]` array
//! gives the body its `[S.., 2]` slice; an open nested jaxpr to which the
//! rewrite would add constants is refused.

use super::complex::{has_complex, interleaved, refuse, split_inner, Rw, Val};
use jaxon_ir::aval::static_shape;
use jaxon_ir::primitive::{Control, NestedJaxprMut, Primitive};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, Eqn, IrError, ShapedArray};

/// Whether `e` is a `cond`, `while` or `scan` with a complex value in an
/// operand, a result or a nested jaxpr.
pub(crate) fn applies(rw: &Rw, e: &Eqn) -> Result<bool, IrError> {
    let Primitive::Control(c) = &e.primitive else {
        return Ok(false);
    };
    let handled = match c {
        Control::Cond(_) | Control::While(_) | Control::Scan(_) => true,
        Control::ForLoop(_)
        | Control::Jit(_)
        | Control::CustomJvpCall(_)
        | Control::CustomVjpCall(_)
        | Control::Remat(_)
        | Control::CustomLinearSolve(_)
        | Control::ShardMap(_) => false,
    };
    if !handled {
        return Ok(false);
    }
    for a in &e.inputs {
        if rw.src_type(a)?.0.is_complex() {
            return Ok(true);
        }
    }
    for b in &e.outputs {
        if rw.src_out_type(b)?.0.is_complex() {
            return Ok(true);
        }
    }
    Ok(e.primitive.sub_jaxprs().iter().any(|j| has_complex(j)))
}

/// Rewrites `e` (for which [`applies`] holds) and binds its results.
pub(crate) fn rewrite(rw: &mut Rw, e: &Eqn) -> Result<(), IrError> {
    let name = e.primitive.name();
    let mut prim = e.primitive.clone();
    for slot in prim.param_jaxprs_mut() {
        match slot {
            NestedJaxprMut::Closed(c) => *c = split_inner(c)?.closed,
            NestedJaxprMut::Open(j) => {
                let s = split_inner(&ClosedJaxpr::without_consts((**j).clone()))?;
                if !s.closed.consts.is_empty() {
                    return Err(refuse(name, "constants added to an open nested jaxpr"));
                }
                *j = s.closed.jaxpr.clone();
            }
        }
    }
    let mut ins = Vec::with_capacity(e.inputs.len());
    for a in &e.inputs {
        let (dt, shape) = rw.src_type(a)?;
        ins.push(match rw.val(a)? {
            Val::Real(x) => x,
            Val::Cx(p) => rw.pack(p, dt, &shape),
        });
    }
    let mut outs = Vec::with_capacity(e.outputs.len());
    let mut bound = Vec::new();
    for b in &e.outputs {
        let (dt, shape) = rw.src_out_type(b)?;
        let aval = if dt.is_complex() {
            ShapedArray::new(dt.real_dtype(), static_shape(&interleaved(&shape)))
        } else {
            ShapedArray::new(dt, static_shape(&shape))
        };
        match b {
            Binder::Drop(_) => outs.push(Binder::Drop(aval.into())),
            Binder::Var(_) => {
                let v = rw.out.new_var(aval);
                outs.push(Binder::Var(v));
                bound.push((b, v, dt, shape));
            }
        }
    }
    rw.out.eqns.push(Eqn {
        primitive: prim,
        inputs: ins,
        outputs: outs,
    });
    for (b, v, dt, shape) in bound {
        let val = if dt.is_complex() {
            Val::Cx(rw.unpack(Atom::Var(v), dt, &shape))
        } else {
            Val::Real(Atom::Var(v))
        };
        rw.bind(b, val);
    }
    Ok(())
}
