//! The linalg family: `dot_general` as a batched GEMM through a
//! [`GemmPlan`] (cuBLASLt on a GPU, its host model on the simulator), with
//! transposed operands folded into the plan's strides and other layouts
//! permuted into `[batch, rows, cols]` by a copy kernel first; integer and
//! mixed-type products as a KIR kernel (one thread per output element).
//! Convolutions lower in `conv` (a direct-convolution kernel); `cholesky`,
//! `triangular_solve`, `lu`, `qr` and `tridiagonal_solve` in `decomp`, `eigh`
//! in `decomp_jacobi`, `svd` in `decomp_svd`; `schur` is not lowered yet.
//!
//! Invariants: a GEMM step is only emitted for a type combination
//! `GemmPlan::validate` accepts and for a non-empty product; an empty
//! contraction stores zeros; the plan computes in f32 (f64 for f64), JAX's
//! `Precision.HIGHEST`, as the interpreter does.

use super::kernel::{affine, compute, gather_kernel, i64c, load, materialize, strides};
use super::plan::{BufId, Step};
use super::{atom_type, bind_outputs, unsupported, Ctx, Env, Value};
use crate::blas::{Compute, Epilogue, GemmPlan, Operand};
use crate::kir::Expr;
use jaxon_ir::primitive::{DotDimensionNumbers, DotGeneralParams, Linalg};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// Lowers a linalg equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Linalg,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    match p {
        Linalg::DotGeneral(params) => dot_general(ctx, jaxpr, eqn, params, env, steps),
        Linalg::ConvGeneralDilated(params) => {
            super::conv::conv(ctx, jaxpr, eqn, params, env, steps)
        }
        Linalg::Cholesky => super::decomp::cholesky(ctx, jaxpr, eqn, env, steps),
        Linalg::TriangularSolve(params) => {
            super::decomp::triangular_solve(ctx, jaxpr, eqn, params, env, steps)
        }
        Linalg::Lu => super::decomp::lu(ctx, jaxpr, eqn, env, steps),
        Linalg::TridiagonalSolve(_) => {
            super::decomp::tridiagonal_solve(ctx, jaxpr, eqn, env, steps)
        }
        Linalg::Qr(params) => super::decomp::qr(ctx, jaxpr, eqn, params, env, steps),
        Linalg::Eigh(params) => super::decomp_jacobi::eigh(ctx, jaxpr, eqn, params, env, steps),
        Linalg::Svd(params) => super::decomp_svd::svd(ctx, jaxpr, eqn, params, env, steps),
        Linalg::Fft(params) => super::unsupported::fft(params),
        Linalg::Schur(params) => super::decomp_schur::schur(ctx, jaxpr, eqn, params, env, steps),
    }
}

fn free_dims(rank: usize, batch: &[usize], contract: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|d| !batch.contains(d) && !contract.contains(d))
        .collect()
}

fn prod(shape: &[usize], dims: &[usize]) -> usize {
    dims.iter().map(|&d| shape[d]).product()
}

/// The GEMM arithmetic of a product of `d` operands into `out` at
/// `precision` under `opts` (TF32 for f32 at the default precision where
/// the options say so), if cuBLASLt has those types. Shared by the static
/// and dynamic lowerings.
pub(crate) fn gemm_compute(
    opts: &super::precision::LowerOptions,
    d: DType,
    out: DType,
    precision: Option<(
        jaxon_ir::primitive::Precision,
        jaxon_ir::primitive::Precision,
    )>,
) -> Option<Compute> {
    gemm_types(d, out).map(|c| match (d, c) {
        (DType::F32, Compute::F32) => opts.f32_matmul.compute(precision),
        _ => c,
    })
}

/// The GEMM types for operands of `d` into `out`, if cuBLASLt has them.
pub(crate) fn gemm_types(d: DType, out: DType) -> Option<Compute> {
    match (d, out) {
        (DType::F32, DType::F32)
        | (DType::F16, DType::F16)
        | (DType::BF16, DType::BF16)
        | (DType::F16, DType::F32)
        | (DType::BF16, DType::F32) => Some(Compute::F32),
        (DType::F64, DType::F64) => Some(Compute::F64),
        _ => None,
    }
}

/// A copy of `v` (of `shape`) with its dimensions permuted: result
/// dimension `i` is operand dimension `perm[i]`.
fn permute(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    v: Value,
    dtype: DType,
    shape: &[usize],
    perm: &[usize],
) -> Result<BufId, IrError> {
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let out = ctx.alloc(dtype, &out_shape)?;
    let st = strides(shape);
    let pst: Vec<i64> = perm.iter().map(|&p| st[p]).collect();
    gather_kernel(
        ctx,
        steps,
        "permute",
        out,
        &out_shape,
        |k, args, ctx, idx| load(k, args, ctx, v, affine(0, &pst, idx)),
    )?;
    Ok(out)
}

fn dot_general(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &DotGeneralParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "dot_general";
    let [la, ra] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected two operands")));
    };
    let (dl, ls) = atom_type(jaxpr, la)?;
    let (dr, rs) = atom_type(jaxpr, ra)?;
    let DotDimensionNumbers {
        lhs_contracting: lc,
        rhs_contracting: rc,
        lhs_batch: lb,
        rhs_batch: rb,
    } = &p.dimension_numbers;
    let in_range = |dims: &[usize], r: usize| dims.iter().all(|&d| d < r);
    if lc.len() != rc.len()
        || lb.len() != rb.len()
        || !in_range(lc, ls.len())
        || !in_range(lb, ls.len())
        || !in_range(rc, rs.len())
        || !in_range(rb, rs.len())
    {
        return Err(IrError::ty(name, "bad dimension numbers"));
    }
    let lf = free_dims(ls.len(), lb, lc);
    let rf = free_dims(rs.len(), rb, rc);
    let (b, m, kk, n) = (prod(&ls, lb), prod(&ls, &lf), prod(&ls, lc), prod(&rs, &rf));
    let lv = env.atom(la)?;
    let rv = env.atom(ra)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, od, oshape) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid(format!("{name}: no result")))?;
    if b * m * n == 0 {
        return Ok(());
    }
    let gemm = if dl == dr && kk > 0 {
        gemm_compute(&ctx.opts, dl, od, p.precision)
    } else {
        None
    };
    let Some(compute_kind) = gemm else {
        // A KIR kernel: one thread per output element.
        if od.is_bool() || dl.is_bool() || dr.is_bool() {
            return Err(unsupported(name, "bool products are not lowered yet"));
        }
        let acc_t = compute(od);
        let (lst, rst) = (strides(&ls), strides(&rs));
        let cshape: Vec<usize> = lc.iter().map(|&d| ls[d]).collect();
        let (nb, nlf) = (lb.len(), lf.len());
        let (lb, lc, rb, rc) = (lb.clone(), lc.clone(), rb.clone(), rc.clone());
        let (lf2, rf2) = (lf.clone(), rf.clone());
        return gather_kernel(ctx, steps, "dot", out, &oshape, |k, args, ctx, idx| {
            let acc = k.let_("acc", acc_t, Expr::constant(acc_t, 0.0));
            let pv = k.var("p", DType::I64);
            let mut result = Ok(());
            k.for_(pv, i64c(0), i64c(kk as i64), i64c(1), |k| {
                let c = super::kernel::multi_index(k, Expr::var(pv), &cshape);
                let mut li = vec![i64c(0); ls.len()];
                let mut ri = vec![i64c(0); rs.len()];
                for j in 0..nb {
                    li[lb[j]] = idx[j].clone();
                    ri[rb[j]] = idx[j].clone();
                }
                for (j, &d) in lf2.iter().enumerate() {
                    li[d] = idx[nb + j].clone();
                }
                for (j, &d) in rf2.iter().enumerate() {
                    ri[d] = idx[nb + nlf + j].clone();
                }
                for j in 0..lc.len() {
                    li[lc[j]] = c[j].clone();
                    ri[rc[j]] = c[j].clone();
                }
                result = (|| {
                    let x = load(k, args, ctx, lv, affine(0, &lst, &li))?;
                    let y = load(k, args, ctx, rv, affine(0, &rst, &ri))?;
                    let cast = |e: Expr, d: DType| {
                        if compute(d) != acc_t {
                            e.cast(acc_t)
                        } else {
                            e
                        }
                    };
                    k.assign(acc, Expr::var(acc) + cast(x, dl) * cast(y, dr));
                    Ok(())
                })();
            });
            result?;
            Ok(Expr::var(acc))
        });
    };
    // Left operand as [b, m, k]: row-major, transposed, or permuted.
    let l_rm: Vec<usize> = lb.iter().chain(&lf).chain(lc).copied().collect();
    let l_tr: Vec<usize> = lb.iter().chain(lc).chain(&lf).copied().collect();
    let (abuf, aop) = if is_identity(&l_rm) {
        (
            materialize(ctx, steps, lv, dl, ls.iter().product())?,
            Operand::row_major(m as u64, kk as u64),
        )
    } else if is_identity(&l_tr) {
        (
            materialize(ctx, steps, lv, dl, ls.iter().product())?,
            Operand::transposed(m as u64, kk as u64),
        )
    } else {
        (
            permute(ctx, steps, lv, dl, &ls, &l_rm)?,
            Operand::row_major(m as u64, kk as u64),
        )
    };
    let r_rm: Vec<usize> = rb.iter().chain(rc).chain(&rf).copied().collect();
    let r_tr: Vec<usize> = rb.iter().chain(&rf).chain(rc).copied().collect();
    let (bbuf, bop) = if is_identity(&r_rm) {
        (
            materialize(ctx, steps, rv, dr, rs.iter().product())?,
            Operand::row_major(kk as u64, n as u64),
        )
    } else if is_identity(&r_tr) {
        (
            materialize(ctx, steps, rv, dr, rs.iter().product())?,
            Operand::transposed(kk as u64, n as u64),
        )
    } else {
        (
            permute(ctx, steps, rv, dr, &rs, &r_rm)?,
            Operand::row_major(kk as u64, n as u64),
        )
    };
    let plan = GemmPlan {
        batch: b as u64,
        m: m as u64,
        n: n as u64,
        k: kk as u64,
        a: aop,
        b: bop,
        out: Operand::row_major(m as u64, n as u64),
        operand_dtype: dl,
        out_dtype: od,
        compute: compute_kind,
        accumulate: false,
        epilogue: Epilogue::None,
    };
    plan.validate(
        ctx.decl(abuf)?.len as u64,
        ctx.decl(bbuf)?.len as u64,
        ctx.decl(out)?.len as u64,
        0,
    )
    .map_err(|e| IrError::Invalid(format!("cuda lowering: {name}: {e}")))?;
    steps.push(Step::Gemm {
        plan,
        a: abuf,
        b: bbuf,
        out,
        bias: None,
    });
    Ok(())
}

fn is_identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}
