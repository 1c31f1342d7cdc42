//! The jvp of Catalyst's `for_loop`: one loop carrying primals and their
//! tangents, the consts' tangents passed as extra consts.
//!
//! The body `(consts, i, carry) -> carry` becomes
//! `(consts, consts_t, i, carry, carry_t) -> (carry, carry_t)`; which
//! carries have a tangent is found by a fixpoint, as for `while`. Loops
//! with implicit (dimension) operands are differentiated once dynamic
//! shapes reach the transforms.

use super::control::{carry_fixpoint, count, instantiated, needs_split, open_consts, split_outs};
use super::jvp_jaxpr;
use super::rules::Outs;
use jaxon_ir::{ClosedJaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, Array};

/// Operands of a `for_loop` after the consts and implicit ones: lower,
/// upper, step and the index start.
const BOUNDS: usize = 4;

pub(super) fn for_loop(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::ForLoop {
        body_jaxpr,
        body_nconsts: bn,
        nimplicit,
        preserve_dimensions,
        apply_reverse_transform,
    } = p
    else {
        return Err(Error::InvalidArgument(format!(
            "the for_loop jvp rule was given `{}`",
            p.name()
        )));
    };
    if *nimplicit != 0 {
        return Err(Error::Unsupported(format!(
            "differentiation of `for_loop` with {nimplicit} implicit dimension operands \
             (dynamic-shape carries) is not implemented yet"
        )));
    }
    let bn = *bn;
    let nk = x.len() - bn - BOUNDS;
    let carry0 = bn + BOUNDS;
    // Body inputs: consts, the index, carries. The index has no tangent.
    let mut nz: Vec<bool> = t[..bn].iter().map(Option::is_some).collect();
    nz.push(false);
    nz.extend(t[carry0..].iter().map(Option::is_some));
    carry_fixpoint(body_jaxpr, &mut nz, bn + 1, nk)?;
    let carry_nz = nz[bn + 1..].to_vec();
    let (bj, out_nz) = jvp_jaxpr(body_jaxpr, &nz, &carry_nz)?;
    if out_nz != carry_nz {
        return Err(Error::InvalidArgument(
            "for_loop jvp: the body's tangent carries do not match its inputs".into(),
        ));
    }
    let nbt = count(&nz[..bn]);
    let (mut bj, hoisted) = open_consts(bj);
    // [hoisted, consts, i, carry, consts_t, carry_t] ->
    // [hoisted, consts, consts_t, i, carry, carry_t].
    let nh = hoisted.len();
    let inv = bj.invars.clone();
    let tan = &inv[nh + bn + 1 + nk..];
    bj.invars = inv[..nh + bn]
        .iter()
        .chain(&tan[..nbt])
        .chain(&inv[nh + bn..nh + bn + 1 + nk])
        .chain(&tan[nbt..])
        .copied()
        .collect();
    let combined = Primitive::ForLoop {
        body_jaxpr: ClosedJaxpr::without_consts(bj),
        body_nconsts: nh + bn + nbt,
        nimplicit: 0,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: *apply_reverse_transform,
    };
    let mut args = hoisted;
    args.extend(x[..bn].iter().cloned());
    args.extend(instantiated(&x[..bn], &t[..bn], &nz[..bn])?);
    args.extend(x[bn..carry0].iter().cloned());
    args.extend(x[carry0..].iter().cloned());
    args.extend(instantiated(&x[carry0..], &t[carry0..], &carry_nz)?);
    let outs = bind(&combined, &args)?;
    let (primals, tangents) = split_outs(outs, nk, &carry_nz);
    if needs_split(x, t)? {
        // Under linearize the primal results come from the loop on primals
        // alone, so no tangent work is needed to produce them.
        return Ok((bind(p, x)?, tangents));
    }
    Ok((primals, tangents))
}
