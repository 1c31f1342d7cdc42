//! Algebraic rewrites that expose more fusion: a `dot_general` without
//! contracting dimensions (an outer product per batch element, as
//! per-example gradients make) is an elementwise `mul` of two broadcasts,
//! which the fusion planner then fuses with its consumers (the transpose
//! that usually follows) instead of calling a GEMM per batch element.
//!
//! Invariant: each product is the same single multiplication of the same
//! two elements, so results are bit-identical.

use super::rewrite::{Rewriter, VarMap};
use crate::aval::Aval;
use crate::dtype::DType;
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, Eqn, Jaxpr, Var};
use crate::primitive::{BinaryOp, Ints, Primitive};

/// Rewrites every uncontracted `dot_general` of static shapes and one
/// dtype into broadcasts and a `mul`.
pub fn outer_products_to_mul(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    let mut rw = Rewriter::new();
    let mut map = VarMap::new(jaxpr.vars.len());
    for v in &jaxpr.constvars {
        let nv = rw.fresh(jaxpr, &mut map, *v)?;
        rw.out.constvars.push(nv);
    }
    for v in &jaxpr.invars {
        let nv = rw.fresh(jaxpr, &mut map, *v)?;
        rw.out.invars.push(nv);
    }
    for eqn in &jaxpr.eqns {
        if !rewrite_outer(jaxpr, &mut rw, &mut map, eqn)? {
            rw.copy_eqn(jaxpr, &mut map, eqn)?;
        }
    }
    rw.out.outvars = jaxpr
        .outvars
        .iter()
        .map(|a| map.atom(a))
        .collect::<Result<_, _>>()?;
    Ok(rw.out)
}

/// Static sizes and dtype of an atom.
fn sizes(jaxpr: &Jaxpr, a: &Atom) -> Option<(DType, Vec<usize>)> {
    let av = jaxpr.atom_aval(a)?;
    let s = av.as_array()?;
    Some((s.dtype, s.static_sizes()?))
}

/// Emits the rewrite of `eqn` when it is an uncontracted product; returns
/// whether it did.
fn rewrite_outer(
    jaxpr: &Jaxpr,
    rw: &mut Rewriter,
    map: &mut VarMap,
    eqn: &Eqn,
) -> Result<bool, IrError> {
    let Primitive::DotGeneral {
        dimension_numbers: dn,
        preferred_element_type,
        ..
    } = &eqn.primitive
    else {
        return Ok(false);
    };
    let ([l, r], [Binder::Var(out)]) = (eqn.inputs.as_slice(), eqn.outputs.as_slice()) else {
        return Ok(false);
    };
    if !dn.lhs_contracting.is_empty() || !dn.rhs_contracting.is_empty() {
        return Ok(false);
    }
    let (Some((ldt, ls)), Some((rdt, rs))) = (sizes(jaxpr, l), sizes(jaxpr, r)) else {
        return Ok(false);
    };
    let Some(out_aval) = jaxpr.try_aval(*out).and_then(Aval::as_array) else {
        return Ok(false);
    };
    let same_dtype = ldt == rdt && preferred_element_type.is_none_or(|p| p == ldt);
    if !same_dtype || ldt == DType::Bool || out_aval.static_sizes().is_none() {
        return Ok(false);
    }
    let out_sizes = out_aval.static_sizes().unwrap_or_default();
    let nb = dn.lhs_batch.len();
    let nfl = ls.len() - nb;
    // Operand dims in output order: batch dims, then its free dims.
    let order = |batch: &[usize], rank: usize| -> Vec<usize> {
        let free = (0..rank).filter(|d| !batch.contains(d));
        batch.iter().copied().chain(free).collect()
    };
    let l_dims: Vec<usize> = (0..nb).chain(nb..nb + nfl).collect();
    let r_dims: Vec<usize> = (0..nb).chain(nb + nfl..out_sizes.len()).collect();
    let lb = broadcast(
        rw,
        map.atom(l)?,
        ldt,
        &ls,
        &order(&dn.lhs_batch, ls.len()),
        &out_sizes,
        &l_dims,
    );
    let rb = broadcast(
        rw,
        map.atom(r)?,
        rdt,
        &rs,
        &order(&dn.rhs_batch, rs.len()),
        &out_sizes,
        &r_dims,
    );
    let nv = rw.fresh(jaxpr, map, *out)?;
    rw.out.eqns.push(Eqn {
        primitive: Primitive::Binary(BinaryOp::Mul),
        inputs: vec![lb, rb],
        outputs: vec![Binder::Var(nv)],
    });
    Ok(true)
}

/// `x` (of `dt` and `shape`) permuted by `perm` (when it is not the
/// identity), then broadcast to `out` along `dims`.
fn broadcast(
    rw: &mut Rewriter,
    x: Atom,
    dt: DType,
    shape: &[usize],
    perm: &[usize],
    out: &[usize],
    dims: &[usize],
) -> Atom {
    let mut x = x;
    if perm.iter().copied().ne(0..perm.len()) {
        let permuted: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let v = new_array(rw, dt, &permuted);
        rw.out.eqns.push(Eqn {
            primitive: Primitive::Transpose {
                permutation: perm.to_vec(),
            },
            inputs: vec![x],
            outputs: vec![Binder::Var(v)],
        });
        x = Atom::Var(v);
    }
    let v = new_array(rw, dt, out);
    rw.out.eqns.push(Eqn {
        primitive: Primitive::BroadcastInDim {
            shape: out.iter().map(|&n| Some(n)).collect(),
            broadcast_dimensions: Ints::new(dims.iter().map(|&d| d as i64).collect()),
        },
        inputs: vec![x],
        outputs: vec![Binder::Var(v)],
    });
    Atom::Var(v)
}

fn new_array(rw: &mut Rewriter, dt: DType, sizes: &[usize]) -> Var {
    rw.out.new_var(crate::aval::ShapedArray::of(dt, sizes))
}
