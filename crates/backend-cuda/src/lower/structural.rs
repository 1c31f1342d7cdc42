//! The structural family: broadcasts, reshapes, transposes, squeezes,
//! reversals (pure index maps, usually fused into loop kernels; on their
//! own a loop kernel reading through the same map), and pads,
//! concatenations, iotas, splits, tiles, stacks and `empty2` as gather
//! kernels: each output element computes where it comes from.
//!
//! Invariant: every kernel writes every output element exactly once; reads
//! outside an operand are masked off, never performed.

use super::kernel::{affine, compute, gather_kernel, i64c, load, load_masked, round_to, strides};
use super::plan::Step;
use super::{atom_type, bind_outputs, fused, Ctx, Env};
use crate::kir::Expr;
use jaxon_ir::primitive::{
    ConcatenateParams, IotaParams, PadParams, SplitParams, StackParams, Structural, TileParams,
};
use jaxon_ir::{Eqn, IrError, Jaxpr};

fn operand_count(eqn: &Eqn, n: usize) -> Result<(), IrError> {
    if eqn.inputs.len() < n {
        return Err(IrError::Invalid(format!(
            "{}: expected {n} operands, got {}",
            eqn.primitive.name(),
            eqn.inputs.len()
        )));
    }
    Ok(())
}

/// The first result of an equation.
fn first(
    outs: &[(super::plan::BufId, jaxon_ir::DType, Vec<usize>)],
    name: &str,
) -> Result<(super::plan::BufId, jaxon_ir::DType, Vec<usize>), IrError> {
    outs.first()
        .cloned()
        .ok_or_else(|| IrError::Invalid(format!("{name}: no result")))
}

/// Lowers a structural equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Structural,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = p.name();
    match p {
        Structural::BroadcastInDim(_)
        | Structural::Reshape(_)
        | Structural::Transpose(_)
        | Structural::Squeeze(_)
        | Structural::Rev(_) => {
            if eqn.inputs.len() != 1 {
                return Err(super::unsupported(name, "dynamic sizes do not lower yet"));
            }
            if let Structural::Reshape(r) = p {
                if let Some(perm) = &r.dimensions {
                    return reshape_transposed(ctx, jaxpr, eqn, perm, env, steps);
                }
            }
            fused::single(ctx, jaxpr, eqn, env, steps)
        }
        Structural::Pad(PadParams { padding_config }) => {
            operand_count(eqn, 2)?;
            let (_, in_shape) = atom_type(jaxpr, &eqn.inputs[0])?;
            let x = env.atom(&eqn.inputs[0])?;
            let pv = env.atom(&eqn.inputs[1])?;
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, shape) = first(&outs, name)?;
            if padding_config.len() != in_shape.len() {
                return Err(IrError::ty(name, "padding_config rank differs"));
            }
            let cfg: Vec<(i64, i64)> = padding_config
                .iter()
                .map(|c| {
                    (
                        c.first().copied().unwrap_or(0),
                        c.get(2).copied().unwrap_or(0),
                    )
                })
                .collect();
            let in_strides = strides(&in_shape);
            gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                let mut valid = Expr::bool(true);
                let mut src = Vec::new();
                for (d, &(lo, interior)) in cfg.iter().enumerate() {
                    let t = idx[d].clone() - i64c(lo);
                    let s = interior + 1;
                    let ok = t.clone().ge(i64c(0));
                    let (ok, q) = if s == 1 {
                        (ok, t)
                    } else {
                        (ok.and((t.clone() % i64c(s)).eq(i64c(0))), t / i64c(s))
                    };
                    valid = valid.and(ok).and(q.clone().lt(i64c(in_shape[d] as i64)));
                    src.push(q);
                }
                let valid_v = k.let_("valid", jaxon_ir::DType::Bool, valid);
                let xv = load_masked(
                    k,
                    args,
                    ctx,
                    x,
                    affine(0, &in_strides, &src),
                    Expr::var(valid_v),
                )?;
                let p = load(k, args, ctx, pv, i64c(0))?;
                Ok(Expr::select(Expr::var(valid_v), xv, p))
            })
        }
        Structural::Concatenate(ConcatenateParams { dimension }) => {
            operand_count(eqn, 1)?;
            let a = *dimension;
            let mut parts = Vec::new();
            let mut off = 0i64;
            for at in &eqn.inputs {
                let (_, s) = atom_type(jaxpr, at)?;
                let n = *s
                    .get(a)
                    .ok_or_else(|| IrError::ty(name, "axis out of range"))?
                    as i64;
                parts.push((env.atom(at)?, strides(&s), off, n));
                off += n;
            }
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, shape) = first(&outs, name)?;
            gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                let mut r: Option<Expr> = None;
                for (v, st, off, n) in parts.iter().rev() {
                    let mut src = idx.to_vec();
                    src[a] = idx[a].clone() - i64c(*off);
                    let inr = idx[a]
                        .clone()
                        .ge(i64c(*off))
                        .and(idx[a].clone().lt(i64c(off + n)));
                    let m = k.let_("in", jaxon_ir::DType::Bool, inr);
                    let x = load_masked(k, args, ctx, *v, affine(0, st, &src), Expr::var(m))?;
                    r = Some(match r {
                        None => x,
                        Some(r) => Expr::select(Expr::var(m), x, r),
                    });
                }
                r.ok_or_else(|| IrError::ty(name, "no operands"))
            })
        }
        Structural::Iota(IotaParams { dimension, .. }) => {
            if !eqn.inputs.is_empty() {
                return Err(super::unsupported(name, "dynamic sizes do not lower yet"));
            }
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, dt, shape) = first(&outs, name)?;
            let dim = *dimension;
            if dim >= shape.len() {
                return Err(IrError::ty(name, "dimension out of range"));
            }
            gather_kernel(ctx, steps, name, out, &shape, |_, _, _, idx| {
                Ok(round_to(dt, idx[dim].clone().cast(compute(dt))))
            })
        }
        Structural::Split(SplitParams { sizes, axis }) => {
            operand_count(eqn, 1)?;
            let (_, in_shape) = atom_type(jaxpr, &eqn.inputs[0])?;
            let x = env.atom(&eqn.inputs[0])?;
            let st = strides(&in_shape);
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            if outs.len() != sizes.len() || *axis >= in_shape.len() {
                return Err(IrError::ty(name, "sizes and outputs differ"));
            }
            let mut off = 0i64;
            for ((out, _, shape), n) in outs.into_iter().zip(sizes.iter()) {
                let o = off;
                let a = *axis;
                gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                    let mut src = idx.to_vec();
                    src[a] = idx[a].clone() + i64c(o);
                    load(k, args, ctx, x, affine(0, &st, &src))
                })?;
                off += n;
            }
            Ok(())
        }
        Structural::Tile(TileParams { .. }) => {
            operand_count(eqn, 1)?;
            let (_, in_shape) = atom_type(jaxpr, &eqn.inputs[0])?;
            let x = env.atom(&eqn.inputs[0])?;
            let st = strides(&in_shape);
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, shape) = first(&outs, name)?;
            if shape.len() != in_shape.len() {
                return Err(IrError::ty(name, "rank differs"));
            }
            gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                let src: Vec<Expr> = idx
                    .iter()
                    .zip(&in_shape)
                    .map(|(i, &n)| i.clone() % i64c(n.max(1) as i64))
                    .collect();
                load(k, args, ctx, x, affine(0, &st, &src))
            })
        }
        Structural::Stack(StackParams { axis }) => {
            operand_count(eqn, 1)?;
            let (_, in_shape) = atom_type(jaxpr, &eqn.inputs[0])?;
            let st = strides(&in_shape);
            let vals = eqn
                .inputs
                .iter()
                .map(|a| env.atom(a))
                .collect::<Result<Vec<_>, _>>()?;
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, shape) = first(&outs, name)?;
            let a = *axis;
            if a > in_shape.len() || shape.len() != in_shape.len() + 1 {
                return Err(IrError::ty(name, "axis out of range"));
            }
            gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                let mut src = idx.to_vec();
                src.remove(a);
                let index = affine(0, &st, &src);
                let mut r: Option<Expr> = None;
                for (j, v) in vals.iter().enumerate().rev() {
                    let m = k.let_(
                        "in",
                        jaxon_ir::DType::Bool,
                        idx[a].clone().eq(i64c(j as i64)),
                    );
                    let x = load_masked(k, args, ctx, *v, index.clone(), Expr::var(m))?;
                    r = Some(match r {
                        None => x,
                        Some(r) => Expr::select(Expr::var(m), x, r),
                    });
                }
                r.ok_or_else(|| IrError::ty(name, "no operands"))
            })
        }
        Structural::Empty2(_) => {
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, dt, shape) = first(&outs, name)?;
            gather_kernel(ctx, steps, name, out, &shape, |_, _, _, _| {
                Ok(if dt.is_float() {
                    Expr::constant(compute(dt), 0.0)
                } else {
                    Expr::int(dt, 0)
                })
            })
        }
    }
}

/// `reshape` with `dimensions`: the operand transposed by `perm`, then
/// reshaped — result element `i` is element `i` (row-major) of the
/// transposed operand.
fn reshape_transposed(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    perm: &[usize],
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "reshape";
    operand_count(eqn, 1)?;
    let (_, in_shape) = atom_type(jaxpr, &eqn.inputs[0])?;
    let mut seen = vec![false; in_shape.len()];
    let ok = perm.len() == in_shape.len()
        && perm
            .iter()
            .all(|&d| d < in_shape.len() && !std::mem::replace(&mut seen[d], true));
    if !ok {
        return Err(IrError::ty(
            name,
            format!("dimensions {perm:?} are not a permutation"),
        ));
    }
    let x = env.atom(&eqn.inputs[0])?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, shape) = first(&outs, name)?;
    if shape.iter().product::<usize>() != in_shape.iter().product::<usize>() {
        return Err(IrError::ty(name, "element counts differ"));
    }
    let t_shape: Vec<usize> = perm.iter().map(|&d| in_shape[d]).collect();
    let in_strides = strides(&in_shape);
    let t_strides: Vec<i64> = perm.iter().map(|&d| in_strides[d]).collect();
    let step = super::kernel::loop_kernel(ctx, name, &shape, |k, args, ctx, lin, _| {
        let ti = super::kernel::multi_index(k, lin.clone(), &t_shape);
        let v = load(k, args, ctx, x, affine(0, &t_strides, &ti))?;
        super::kernel::store(k, args, ctx, out, lin.clone(), v)
    })?;
    steps.extend(step);
    Ok(())
}
