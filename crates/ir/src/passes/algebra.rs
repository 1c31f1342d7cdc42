//! Algebraic rewrites that expose more fusion: a `dot_general` without
//! contracting dimensions (an outer product per batch element, as
//! per-example gradients make) is an elementwise `mul` of two broadcasts,
//! which the fusion planner then fuses with its consumers (the transpose
//! that usually follows) instead of calling a GEMM per batch element.
//!
//! And a `transpose` that swaps the free dimensions of a `dot_general`
//! result it alone reads is the product of the swapped operands
//! (`(AB)ᵀ = BᵀAᵀ`): the GEMM writes the transposed layout directly instead
//! of a strided transpose copying it (reverse-mode weight gradients).
//!
//! Invariants: an uncontracted product is the same single multiplication
//! of the same two elements, so results are bit-identical; a swapped
//! product sums the same terms (in the GEMM's order, as any product does).

use super::rewrite::{rewrite_eqns, Rewriter, VarMap};
use crate::aval::Aval;
use crate::dtype::DType;
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, Eqn, Jaxpr, Var};
use crate::primitive::{BinaryOp, DotDimensionNumbers, Ints, Primitive};
use crate::primitive::{
    BroadcastInDimParams, DotGeneralParams, Elementwise, Linalg, Structural, TransposeParams,
};

/// Rewrites every uncontracted `dot_general` of static shapes and one
/// dtype into broadcasts and a `mul`.
pub fn outer_products_to_mul(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    rewrite_eqns(jaxpr, |rw, map, eqn| rewrite_outer(jaxpr, rw, map, eqn))
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
    let Some(DotGeneralParams {
        dimension_numbers: dn,
        preferred_element_type,
        ..
    }) = eqn.primitive.params::<DotGeneralParams>()
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
        primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)),
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
            primitive: Primitive::Structural(Structural::Transpose(TransposeParams {
                permutation: perm.to_vec(),
            })),
            inputs: vec![x],
            outputs: vec![Binder::Var(v)],
        });
        x = Atom::Var(v);
    }
    let v = new_array(rw, dt, out);
    rw.out.eqns.push(Eqn {
        primitive: Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: out.iter().map(|&n| Some(n)).collect(),
            broadcast_dimensions: Ints::new(dims.iter().map(|&d| d as i64).collect()),
        })),
        inputs: vec![x],
        outputs: vec![Binder::Var(v)],
    });
    Atom::Var(v)
}

fn new_array(rw: &mut Rewriter, dt: DType, sizes: &[usize]) -> Var {
    rw.out.new_var(crate::aval::ShapedArray::of(dt, sizes))
}

/// Rewrites `transpose(dot_general(a, b))` whose permutation swaps the
/// product's free dimensions, when the transpose is the product's only
/// reader, into `dot_general(b, a)` (the old product is left for DCE).
pub fn transposed_products(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    let mut uses = vec![0usize; jaxpr.vars.len()];
    let mut producer: Vec<Option<usize>> = vec![None; jaxpr.vars.len()];
    for (e, eqn) in jaxpr.eqns.iter().enumerate() {
        for a in &eqn.inputs {
            if let Atom::Var(v) = a {
                if let Some(u) = uses.get_mut(v.index()) {
                    *u += 1;
                }
            }
        }
        for b in &eqn.outputs {
            if let Binder::Var(v) = b {
                if let Some(p) = producer.get_mut(v.index()) {
                    *p = Some(e);
                }
            }
        }
    }
    for a in &jaxpr.outvars {
        if let Atom::Var(v) = a {
            if let Some(u) = uses.get_mut(v.index()) {
                *u += 1;
            }
        }
    }
    rewrite_eqns(jaxpr, |rw, map, eqn| {
        let swapped = match (
            &eqn.primitive,
            eqn.inputs.as_slice(),
            eqn.outputs.as_slice(),
        ) {
            (
                Primitive::Structural(Structural::Transpose(TransposeParams { permutation })),
                [Atom::Var(x)],
                [Binder::Var(out)],
            ) if uses[x.index()] == 1 => producer[x.index()]
                .and_then(|p| swap_product(jaxpr, &jaxpr.eqns[p], permutation))
                .map(|dot| (dot, *out)),
            _ => None,
        };
        let Some((dot, out)) = swapped else {
            return Ok(false);
        };
        let inputs = dot
            .inputs
            .iter()
            .map(|a| map.atom(a))
            .collect::<Result<Vec<_>, _>>()?;
        let nv = rw.fresh(jaxpr, map, out)?;
        rw.out.eqns.push(Eqn {
            primitive: dot.primitive,
            inputs,
            outputs: vec![Binder::Var(nv)],
        });
        Ok(true)
    })
}

/// The product `dot(b, a)` equal to `transpose(dot(a, b), perm)`, when
/// `perm` keeps the batch dimensions and swaps the free blocks.
fn swap_product(jaxpr: &Jaxpr, dot: &Eqn, perm: &[usize]) -> Option<Eqn> {
    let DotGeneralParams {
        dimension_numbers: dn,
        precision,
        preferred_element_type,
    } = dot.primitive.params::<DotGeneralParams>()?;
    let [a, b] = dot.inputs.as_slice() else {
        return None;
    };
    let rank = |x: &Atom| {
        jaxpr
            .atom_aval(x)
            .and_then(|v| v.as_array().map(|s| s.shape.len()))
    };
    let (la, rb) = (rank(a)?, rank(b)?);
    let nb = dn.lhs_batch.len();
    let nl = la - nb - dn.lhs_contracting.len();
    let nr = rb - nb - dn.rhs_contracting.len();
    let want: Vec<usize> = (0..nb)
        .chain(nb + nl..nb + nl + nr)
        .chain(nb..nb + nl)
        .collect();
    if perm != want.as_slice() || nl == 0 || nr == 0 {
        return None;
    }
    Some(Eqn {
        primitive: Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers: DotDimensionNumbers {
                lhs_contracting: dn.rhs_contracting.clone(),
                rhs_contracting: dn.lhs_contracting.clone(),
                lhs_batch: dn.rhs_batch.clone(),
                rhs_batch: dn.lhs_batch.clone(),
            },
            precision: precision.map(|(p, q)| (q, p)),
            preferred_element_type: *preferred_element_type,
        })),
        inputs: vec![*b, *a],
        outputs: Vec::new(),
    })
}
