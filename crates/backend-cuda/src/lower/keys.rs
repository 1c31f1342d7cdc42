//! Data movement on `key<fry>` arrays (`slice`, `squeeze`, `reshape`,
//! `broadcast_in_dim`, `transpose`, `rev`), as `jax.random`
//! traces it to unpack `random.split` results: each equation is rewritten
//! to the same primitive on the keys' `u32` word pairs — a trailing
//! dimension of 2 that every param leaves whole — and lowered as a
//! one-equation jaxpr through the ordinary lowerings.
//!
//! Invariant: a key buffer is a `u32` buffer of `S x 2` elements (see
//! `random.rs`); these rewrites keep each key's two words together.

use super::plan::Step;
use super::{atom_type, lower_closed, out_type, Ctx, Env};
use jaxon_ir::primitive::{
    BroadcastInDimParams, Indexing, Primitive, ReshapeParams, SliceParams, Structural,
    TransposeParams,
};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Eqn, IrError, Jaxpr, ShapedArray};

/// Whether `p` moves keys when its operands are keys.
pub(crate) fn is_key_movement(p: &Primitive) -> bool {
    matches!(
        p,
        Primitive::Indexing(Indexing::Slice(_))
            | Primitive::Structural(
                Structural::Squeeze(_)
                    | Structural::BroadcastInDim(_)
                    | Structural::Transpose(_)
                    | Structural::Rev(_)
            )
    ) || matches!(
        p,
        Primitive::Structural(Structural::Reshape(ReshapeParams {
            dimensions: None,
            ..
        }))
    )
}

/// Whether `eqn` gives a key value (and so must be lowered by [`lower`]).
pub(crate) fn gives_keys(jaxpr: &Jaxpr, eqn: &Eqn) -> bool {
    eqn.outputs.iter().any(|b| {
        jaxpr
            .binder_aval(b)
            .and_then(|a| a.as_array())
            .is_some_and(|a| a.dtype == DType::KeyFry)
    })
}

/// `p` on word pairs: the same primitive with the trailing dimension of 2
/// added to every param, for operands of rank `rank`.
fn on_words(p: &Primitive, rank: usize) -> Result<Primitive, IrError> {
    let mut q = p.clone();
    match &mut q {
        Primitive::Indexing(Indexing::Slice(SliceParams {
            start_indices,
            limit_indices,
            strides,
        })) => {
            start_indices.values.push(0);
            start_indices.np_int64.push(false);
            limit_indices.values.push(2);
            limit_indices.np_int64.push(false);
            if let Some(s) = strides {
                s.values.push(1);
                s.np_int64.push(false);
            }
        }
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape,
            broadcast_dimensions,
        })) => {
            broadcast_dimensions.values.push(shape.len() as i64);
            broadcast_dimensions.np_int64.push(false);
            shape.push(Some(2));
        }
        Primitive::Structural(Structural::Reshape(ReshapeParams {
            new_sizes,
            dimensions: None,
        })) => new_sizes.push(Some(2)),
        Primitive::Structural(Structural::Transpose(TransposeParams { permutation })) => {
            permutation.push(rank)
        }
        // Leading dimensions only: unchanged.
        Primitive::Structural(Structural::Squeeze(_) | Structural::Rev(_)) => {}
        other => {
            return Err(super::unsupported(
                other.name(),
                "key<fry> values lower only through the random primitives and data movement",
            ))
        }
    }
    Ok(q)
}

/// The `u32` word-pair type of keys of `shape`.
fn words(shape: &[usize]) -> ShapedArray {
    let mut s = shape.to_vec();
    s.push(2);
    ShapedArray::new(DType::U32, jaxon_ir::aval::static_shape(&s))
}

/// Lowers a data-movement equation on keys through its word-pair form.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = eqn.primitive.name();
    let mut j = Jaxpr::new();
    let mut args = Vec::new();
    let mut rank = 0;
    for a in &eqn.inputs {
        let (d, s) = atom_type(jaxpr, a)?;
        if d != DType::KeyFry {
            return Err(IrError::ty(name, format!("an operand of {d} among keys")));
        }
        rank = s.len();
        let v = j.new_var(words(&s));
        j.invars.push(v);
        args.push(env.atom(a)?);
    }
    let mut outs = Vec::new();
    for b in &eqn.outputs {
        let (d, s) = out_type(jaxpr, b)?;
        if d != DType::KeyFry {
            return Err(IrError::ty(name, format!("a result of {d} from keys")));
        }
        outs.push(j.new_var(words(&s)));
    }
    j.eqns.push(Eqn {
        primitive: on_words(&eqn.primitive, rank)?,
        inputs: j.invars.iter().map(|v| Atom::Var(*v)).collect(),
        outputs: outs.iter().map(|v| Binder::Var(*v)).collect(),
    });
    j.outvars = outs.iter().map(|v| Atom::Var(*v)).collect();
    let vals = lower_closed(ctx, &ClosedJaxpr::new(j, Vec::new()), &args, steps)?;
    for (b, v) in eqn.outputs.iter().zip(vals) {
        if let Binder::Var(x) = b {
            env.bind(*x, v);
        }
    }
    Ok(())
}
