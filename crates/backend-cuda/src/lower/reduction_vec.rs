//! Vectorised row reductions: a `reduce_*` (alone or with its fused
//! producers) over the trailing axes of its space, whose reads are all
//! contiguous in the space's order (`fused_vec::plan`), loads each row with
//! vectors of `W` elements (16 bytes of the widest element read).
//!
//! The kernel is the warp-per-output kernel of `reduction.rs`: lane `l` of
//! the warp owning row `o` combines the vectors at `o·R + l·W + 32·W·t`
//! (`R` the row length), lane by lane in order, into its accumulator; the
//! warp's accumulators meet in xor shuffles and lane 0 stores.
//!
//! Invariants: taken only when `R` is a multiple of `W` (so every row
//! starts at a multiple of `W` and no vector crosses a row) and every
//! operand base is a multiple of `W` (checked by the plan); the order in
//! which a row's elements are combined depends only on `R` and `W`, never
//! on the launch, so results are equal across runs and devices; no
//! atomics.

use super::fused_vec::{load_scalars, Body, Plan, Root};
use super::kernel::{compute, i64c, try_for};
use super::plan::{BufId, Step};
use super::reduction::{acc_dtype, combine, identity, warp_kernel, warp_store};
use super::{Ctx, Env};
use crate::kir::Expr;
use jaxon_ir::passes::IndexMap;
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// A reduction to vectorise.
pub(crate) struct RowVec<'a> {
    /// The combining op.
    pub op: ReduceOp,
    /// The reduced axes of `space`.
    pub axes: &'a [usize],
    /// The reduce operand's shape.
    pub space: &'a [usize],
    /// The operand's dtype.
    pub d: DType,
    /// The result buffer (one element per kept index).
    pub out: BufId,
}

/// Lowers `v` with vector loads when `plan` allows and the reduced axes
/// are the trailing ones with a row length that is a multiple of the
/// width; `false` (nothing emitted) otherwise.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rows(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    v: &RowVec,
    plan: Option<Plan>,
    jaxpr: &Jaxpr,
    env: &Env,
    members: &[(&Eqn, IndexMap)],
    root: Root,
) -> Result<bool, IrError> {
    let Some(p) = plan else {
        return Ok(false);
    };
    let rank = v.space.len();
    let mut red = v.axes.to_vec();
    red.sort_unstable();
    red.dedup();
    let trailing: Vec<usize> = (rank.saturating_sub(red.len())..rank).collect();
    if red.is_empty() || red != trailing {
        return Ok(false);
    }
    let n_red: usize = v.space[rank - red.len()..].iter().product();
    let n_out: usize = v.space[..rank - red.len()].iter().product();
    let w = p.width;
    if n_red < w || !n_red.is_multiple_of(w) {
        return Ok(false);
    }
    let (op, d, out) = (v.op, v.d, v.out);
    let acc_t = acc_dtype(d);
    let name = format!("{}_v{w}", op.name());
    let step = warp_kernel(ctx, &name, n_out, |k, args, ctx, o| {
        let scalars = load_scalars(k, args, ctx, &p)?;
        let body = Body {
            p: &p,
            jaxpr,
            env,
            members,
            space: v.space,
            root,
            scalars: &scalars,
        };
        let acc = k.let_("acc", acc_t, identity(op, d));
        let r = k.var("r", DType::I64);
        let bounds = (
            Expr::lane().cast(DType::I64) * i64c(w as i64),
            i64c(n_red as i64),
            i64c(32 * w as i64),
        );
        try_for(k, r, bounds, |k| {
            let first = k.let_(
                "first",
                DType::I64,
                o.clone() * i64c(n_red as i64) + Expr::var(r),
            );
            let here = body.load(k, args, ctx, &Expr::var(first))?;
            for lane in 0..w {
                let x = body.lane(k, &here, lane)?;
                let x = if compute(d) != acc_t {
                    x.cast(acc_t)
                } else {
                    x
                };
                k.assign(acc, combine(op, d, Expr::var(acc), x));
            }
            Ok(())
        })?;
        warp_store(k, args, ctx, op, d, acc, out, o)
    })?;
    steps.extend(step);
    Ok(true)
}
