//! The indexing family: `slice` (an index map, fused or on its own),
//! `dynamic_slice` and `dynamic_update_slice` as gather kernels that read
//! their start indices from device scalars and clamp them into bounds as
//! XLA does. Gathers and scatters lower in `gather`.
//!
//! Invariant: a clamped start keeps every read inside the operand, so no
//! access depends on the start values being in range.

use super::kernel::{affine, gather_kernel, i64c, load, load_masked, strides};
use super::plan::Step;
use super::{atom_type, bind_outputs, fused, unsupported, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder};
use jaxon_ir::primitive::{DynamicSliceParams, Indexing};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// Lowers an indexing equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Indexing,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = p.name();
    match p {
        Indexing::Slice(_) => fused::single(ctx, jaxpr, eqn, env, steps),
        Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
            let (_, in_shape) = atom_type(jaxpr, eqn.inputs.first().ok_or_else(|| arity(name))?)?;
            let rank = in_shape.len();
            if eqn.inputs.len() != 1 + rank || slice_sizes.len() != rank {
                return Err(unsupported(name, "dynamic slice sizes do not lower yet"));
            }
            let x = env.atom(&eqn.inputs[0])?;
            let starts = start_values(jaxpr, env, &eqn.inputs[1..])?;
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, shape) = outs.first().cloned().ok_or_else(|| arity(name))?;
            let st = strides(&in_shape);
            let limits: Vec<i64> = in_shape
                .iter()
                .zip(&shape)
                .map(|(&n, &s)| n as i64 - s as i64)
                .collect();
            gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                let mut src = Vec::new();
                for (d, (s, dt)) in starts.iter().enumerate() {
                    let s0 = clamped_start(k, args, ctx, *s, *dt, limits[d])?;
                    src.push(idx[d].clone() + s0);
                }
                load(k, args, ctx, x, affine(0, &st, &src))
            })
        }
        Indexing::DynamicUpdateSlice => {
            let (_, in_shape) = atom_type(jaxpr, eqn.inputs.first().ok_or_else(|| arity(name))?)?;
            let rank = in_shape.len();
            if eqn.inputs.len() != 2 + rank {
                return Err(arity(name));
            }
            let (_, up_shape) = atom_type(jaxpr, &eqn.inputs[1])?;
            if up_shape.len() != rank {
                return Err(IrError::ty(name, "update rank differs"));
            }
            let x = env.atom(&eqn.inputs[0])?;
            let u = env.atom(&eqn.inputs[1])?;
            let starts = start_values(jaxpr, env, &eqn.inputs[2..])?;
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, shape) = outs.first().cloned().ok_or_else(|| arity(name))?;
            let (xs, us) = (strides(&in_shape), strides(&up_shape));
            let limits: Vec<i64> = in_shape
                .iter()
                .zip(&up_shape)
                .map(|(&n, &s)| n as i64 - s as i64)
                .collect();
            gather_kernel(ctx, steps, name, out, &shape, |k, args, ctx, idx| {
                let mut inside = Expr::bool(true);
                let mut rel = Vec::new();
                for (d, (s, dt)) in starts.iter().enumerate() {
                    let s0 = clamped_start(k, args, ctx, *s, *dt, limits[d])?;
                    let r = k.let_("r", DType::I64, idx[d].clone() - s0);
                    inside = inside
                        .and(Expr::var(r).ge(i64c(0)))
                        .and(Expr::var(r).lt(i64c(up_shape[d] as i64)));
                    rel.push(Expr::var(r));
                }
                let m = k.let_("inside", DType::Bool, inside);
                let uv = load_masked(k, args, ctx, u, affine(0, &us, &rel), Expr::var(m))?;
                let xv = load_masked(
                    k,
                    args,
                    ctx,
                    x,
                    affine(0, &xs, idx),
                    Expr::var(m).unary(crate::kir::UnOp::Not),
                )?;
                Ok(Expr::select(Expr::var(m), uv, xv))
            })
        }
        Indexing::Gather(g) => super::gather::gather(ctx, jaxpr, eqn, g, env, steps),
        Indexing::Scatter(s) => super::gather::scatter(ctx, jaxpr, eqn, s, env, steps),
    }
}

fn arity(name: &str) -> IrError {
    IrError::Invalid(format!("{name}: wrong number of operands"))
}

/// The start operands with their dtypes.
fn start_values(
    jaxpr: &Jaxpr,
    env: &Env,
    atoms: &[jaxon_ir::Atom],
) -> Result<Vec<(Value, DType)>, IrError> {
    atoms
        .iter()
        .map(|a| Ok((env.atom(a)?, atom_type(jaxpr, a)?.0)))
        .collect()
}

/// A start index read from `v`, as `i64`, clamped into `0..=limit`.
fn clamped_start(
    k: &mut KernelBuilder,
    args: &mut super::kernel::Args,
    ctx: &Ctx,
    v: Value,
    dt: DType,
    limit: i64,
) -> Result<Expr, IrError> {
    let s = load(k, args, ctx, v, i64c(0))?;
    let s = if dt == DType::I64 {
        s
    } else {
        s.cast(DType::I64)
    };
    let v = k.let_("start", DType::I64, s.max(i64c(0)).min(i64c(limit.max(0))));
    Ok(Expr::var(v))
}
