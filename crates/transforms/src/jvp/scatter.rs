//! The jvp of the combining scatters `scatter-mul`, `scatter-min` and
//! `scatter-max` (`scatter` and `scatter-add` are linear and need no rule
//! of their own).
//!
//! - min/max: every contender equal to the result, the operand element and
//!   each update written to it, shares the tangent equally, as JAX's
//!   scatter extremal jvp does: `ṫ = (keep·ẋ + Σ win·u̇) / (keep + Σ win)`.
//! - mul: `out = x ⊙ Π u` is linear in `x`; the updates' tangent
//!   `x ⊙ Σ u̇` is only right when no two updates meet, so, as in JAX, it
//!   needs `unique_indices=True`.

use super::rules::Outs;
use crate::util::{scatter_inverse_gather, zeros_like};
use jaxon_ir::primitive::ScatterKind;
use jaxon_ir::primitive::{Indexing, ScatterParams};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, Array};

/// The scatter-add placing updates exactly where `p` places them.
fn scatter_add_like(p: &Primitive) -> Primitive {
    let mut add = p.clone();
    if let Primitive::Indexing(Indexing::Scatter(ScatterParams {
        kind, update_jaxpr, ..
    })) = &mut add
    {
        *kind = ScatterKind::Add;
        *update_jaxpr = None;
    }
    add
}

/// `scatter-min` / `scatter-max`: ties share the tangent.
pub(super) fn extremal(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let out = bind1(p, x)?;
    if t[0].is_none() && t[2].is_none() {
        return Ok((vec![out], vec![None]));
    }
    let Primitive::Indexing(Indexing::Scatter(ScatterParams {
        dimension_numbers,
        indices_are_sorted,
        mode,
        unique_indices,
        ..
    })) = p
    else {
        return Err(Error::InvalidArgument(format!(
            "the scatter jvp rule was given `{}`",
            p.name()
        )));
    };
    let (operand, idx, upd) = (&x[0], &x[1], &x[2]);
    let dtype = operand.dtype();
    let t_operand = t[0].clone().map_or_else(|| zeros_like(operand), Ok)?;
    let t_updates = t[2].clone().map_or_else(|| zeros_like(upd), Ok)?;
    // The result at each update's destination, and which updates won.
    let at_dest = scatter_inverse_gather(
        dimension_numbers,
        &out,
        idx,
        &upd.try_shape()?,
        *indices_are_sorted,
        *mode,
        *unique_indices,
    )?;
    let won = lax::convert_element_type(&lax::eq(upd, &at_dest)?, dtype, false)?;
    let kept = lax::convert_element_type(&lax::eq(operand, &out)?, dtype, false)?;
    let add = scatter_add_like(p);
    let zeros = zeros_like(operand)?;
    let winners = bind1(&add, &[zeros.clone(), idx.clone(), won.clone()])?;
    let count = lax::add(&kept, &winners)?;
    let from_updates = bind1(&add, &[zeros, idx.clone(), lax::mul(&won, &t_updates)?])?;
    let total = lax::add(&lax::mul(&kept, &t_operand)?, &from_updates)?;
    Ok((vec![out], vec![Some(lax::div(&total, &count)?)]))
}

/// `scatter-mul`: linear in the operand; the updates' part needs unique
/// indices.
pub(super) fn mul(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let out = bind1(p, x)?;
    let (operand, idx, upd) = (&x[0], &x[1], &x[2]);
    let mut parts = Vec::new();
    if let Some(t_operand) = &t[0] {
        parts.push(bind1(p, &[t_operand.clone(), idx.clone(), upd.clone()])?);
    }
    if let Some(t_updates) = &t[2] {
        let unique = matches!(
            p,
            Primitive::Indexing(Indexing::Scatter(ScatterParams {
                unique_indices: true,
                ..
            }))
        );
        if !unique {
            return Err(Error::Unsupported(format!(
                "differentiation of `{}` with respect to the updates: scatter_mul gradients \
                 are only implemented if `unique_indices=True` (with repeated indices the \
                 derivative with respect to one update is the product of the others)",
                p.name()
            )));
        }
        let spread = bind1(
            &scatter_add_like(p),
            &[zeros_like(operand)?, idx.clone(), t_updates.clone()],
        )?;
        parts.push(lax::mul(operand, &spread)?);
    }
    let mut parts = parts.into_iter();
    let tangent = match (parts.next(), parts.next()) {
        (None, _) => None,
        (Some(a), None) => Some(a),
        (Some(a), Some(b)) => Some(lax::add(&a, &b)?),
    };
    Ok((vec![out], vec![tangent]))
}
