//! Fused loop kernels: a chain of elementwise and data-movement equations
//! (one `ir::passes` loop group) evaluated per element of the group's
//! space in one grid-stride kernel. Broadcasts, transposes, slices,
//! reversals and reshapes cost no kernel of their own: each group input is
//! read through its affine index map (`ir::passes::operand_map`), so
//! broadcasting and strided operands are index arithmetic.
//!
//! Invariant: members are evaluated in equation order at their own index
//! maps; only the root's value is stored (the planner guarantees it is the
//! group's only output).

use super::kernel::{affine, compute, lit_expr, load, loop_kernel, store, Args};
use super::plan::Step;
use super::{atom_type, bind_outputs, elementwise, out_type, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder};
use jaxon_ir::passes::{moves_data, operand_map, Group, IndexMap};
use jaxon_ir::primitive::Primitive;
use jaxon_ir::{Atom, Binder, DType, Eqn, IrError, Jaxpr, Var};
use std::collections::HashMap;

/// Lowers a loop group.
pub(crate) fn loop_group(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    group: &Group,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let mut members = Vec::new();
    for (e, m) in group.eqns.iter().zip(&group.maps) {
        let eqn = jaxpr
            .eqns
            .get(*e)
            .ok_or_else(|| IrError::Invalid(format!("cuda lowering: no equation {e}")))?;
        members.push((eqn, m.clone()));
    }
    // Keys move as word pairs, one equation at a time (`keys.rs`).
    if !maps_are_sound(&members)
        || members
            .iter()
            .any(|(e, _)| super::keys::gives_keys(jaxpr, e))
    {
        return unfused(ctx, jaxpr, &members, env, steps);
    }
    kernel(ctx, jaxpr, &members, &group.space, env, steps)
}

/// False when a member reverses or transposes under a flat (linear-offset)
/// map, whose operand map would drop the reordering. The shared planner
/// refuses such edges (`ir::passes::operand_map`); this guard keeps a
/// planner regression from becoming wrong values here.
pub(crate) fn maps_are_sound(members: &[(&Eqn, IndexMap)]) -> bool {
    use jaxon_ir::primitive::{RevParams, Structural, TransposeParams};
    members.iter().all(|(eqn, map)| {
        if !matches!(map, IndexMap::Flat { .. }) {
            return true;
        }
        match &eqn.primitive {
            Primitive::Structural(Structural::Rev(RevParams { dimensions })) => {
                dimensions.is_empty()
            }
            Primitive::Structural(Structural::Transpose(TransposeParams { permutation })) => {
                permutation.iter().enumerate().all(|(i, &p)| i == p)
            }
            _ => true,
        }
    })
}

/// Lowers a group's members one equation at a time (each its own kernel).
pub(crate) fn unfused(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    members: &[(&Eqn, IndexMap)],
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    for (eqn, _) in members {
        super::lower_eqn(ctx, jaxpr, eqn, env, steps)?;
    }
    Ok(())
}

/// Lowers one elementwise or data-movement equation as its own loop kernel.
pub(crate) fn single(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let [b] = eqn.outputs.as_slice() else {
        return Err(IrError::Invalid(format!(
            "{}: expected one output",
            eqn.primitive.name()
        )));
    };
    let (_, shape) = out_type(jaxpr, b)?;
    let m = IndexMap::identity(shape.len());
    kernel(ctx, jaxpr, &[(eqn, m)], &shape, env, steps)
}

fn kernel(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    members: &[(&Eqn, IndexMap)],
    space: &[usize],
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (root, root_map) = members
        .last()
        .ok_or_else(|| IrError::Invalid("cuda lowering: empty loop group".into()))?;
    if *root_map != IndexMap::identity(space.len()) {
        return Err(IrError::Invalid(
            "cuda lowering: a loop group's root is not at the identity map".into(),
        ));
    }
    let outs = bind_outputs(ctx, jaxpr, root, env)?;
    let (out_buf, _, out_shape) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid("cuda lowering: root without output".into()))?;
    if out_shape != space {
        return Err(IrError::Invalid(format!(
            "cuda lowering: loop space {space:?} is not the root's shape {out_shape:?}"
        )));
    }
    let Some(Binder::Var(root_var)) = root.outputs.first() else {
        return Ok(());
    };
    let root_var = *root_var;
    if super::fused_vec::kernel(ctx, jaxpr, env, members, space, out_buf, root_var, steps)? {
        return Ok(());
    }
    let name = format!("fused_{}", root.primitive.name());
    let env_ro: &Env = env;
    let step = loop_kernel(ctx, &name, space, |k, args, ctx, lin, idx| {
        let vals = eval_members(k, args, ctx, jaxpr, env_ro, members, idx)?;
        let v = vals
            .get(&root_var)
            .cloned()
            .ok_or_else(|| IrError::Invalid("cuda lowering: the root was not evaluated".into()))?;
        store(k, args, ctx, out_buf, lin.clone(), v)
    })?;
    steps.extend(step);
    Ok(())
}

/// Reads atom `a` (operand `slot` of `eqn`, evaluated at `map`) at the
/// space index `idx`: a member's value, a literal, or a load through the
/// operand's index map.
#[allow(clippy::too_many_arguments)]
fn operand(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    vals: &HashMap<Var, Expr>,
    eqn: &Eqn,
    map: &IndexMap,
    slot: usize,
    idx: &[Expr],
) -> Result<Expr, IrError> {
    let a = &eqn.inputs[slot];
    if let Atom::Var(v) = a {
        if let Some(x) = vals.get(v) {
            return Ok(x.clone());
        }
    }
    match env.atom(a)? {
        Value::Lit(l) => Ok(lit_expr(&l)),
        val @ Value::Buf(_) => {
            let (_, shape) = atom_type(jaxpr, a)?;
            // A fused operand whose elements the group cannot address
            // (a width-changing bitcast's) is a lowering gap, not a bad
            // jaxpr.
            let m = operand_map(jaxpr, eqn, map, slot).ok_or_else(|| {
                super::unsupported(
                    eqn.primitive.name(),
                    format!("operand {slot} has no index map in its fused kernel"),
                )
            })?;
            let index = affine(m.base(&shape), &m.strides(&shape), idx);
            load(k, args, ctx, val, index)
        }
    }
}

/// Evaluates `members` (in order) at the space index `idx`; returns each
/// member result's value (compute dtype).
pub(crate) fn eval_members(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    members: &[(&Eqn, IndexMap)],
    idx: &[Expr],
) -> Result<HashMap<Var, Expr>, IrError> {
    eval_members_with(k, args, ctx, jaxpr, env, members, idx, HashMap::new())
}

/// [`eval_members`] with the values of some variables given (`pre`, in
/// the compute dtype, each already the element the members read at `idx`:
/// the caller has checked their index maps), instead of loaded.
#[allow(clippy::too_many_arguments)]
pub(crate) fn eval_members_with(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    members: &[(&Eqn, IndexMap)],
    idx: &[Expr],
    pre: HashMap<Var, Expr>,
) -> Result<HashMap<Var, Expr>, IrError> {
    let mut vals: HashMap<Var, Expr> = pre;
    for (eqn, map) in members {
        let mut xs = Vec::new();
        let mut dts = Vec::new();
        for slot in 0..eqn.inputs.len() {
            let (dt, _) = atom_type(jaxpr, &eqn.inputs[slot])?;
            dts.push(dt);
            xs.push(operand(
                k, args, ctx, jaxpr, env, &vals, eqn, map, slot, idx,
            )?);
        }
        let (b, out_dt, r) = apply(k, jaxpr, eqn, &dts, xs)?;
        let v = k.let_("v", compute(out_dt), r);
        if let Binder::Var(var) = b {
            vals.insert(*var, Expr::var(v));
        }
    }
    Ok(vals)
}

/// Applies fused member `eqn` to its operand values `xs` (compute dtype;
/// `dts` their dtypes): its output binder, the output's dtype, and the
/// value (compute dtype, not yet bound to a variable).
pub(crate) fn apply<'e>(
    k: &mut KernelBuilder,
    jaxpr: &Jaxpr,
    eqn: &'e Eqn,
    dts: &[DType],
    xs: Vec<Expr>,
) -> Result<(&'e Binder, DType, Expr), IrError> {
    let [b] = eqn.outputs.as_slice() else {
        return Err(IrError::Invalid(format!(
            "{}: a fused member has one output",
            eqn.primitive.name()
        )));
    };
    let (out_dt, _) = out_type(jaxpr, b)?;
    let r = if moves_data(&eqn.primitive) {
        xs.into_iter()
            .next()
            .ok_or_else(|| IrError::Invalid("data movement without operand".into()))?
    } else {
        match &eqn.primitive {
            Primitive::Elementwise(e) => elementwise::scalar(k, e, out_dt, dts, xs)?,
            Primitive::Structural(_)
            | Primitive::Indexing(_)
            | Primitive::Reduction(_)
            | Primitive::Linalg(_)
            | Primitive::Control(_)
            | Primitive::State(_)
            | Primitive::Pallas(_)
            | Primitive::Collective(_)
            | Primitive::Marker(_)
            | Primitive::Window(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => {
                return Err(IrError::Invalid(format!(
                    "cuda lowering: {} cannot be a fused member",
                    eqn.primitive.name()
                )))
            }
        }
    };
    Ok((b, out_dt, r))
}
