//! `eigh` in KIR: the interpreter's cyclic Jacobi algorithm
//! (`decomp_kernels::eigh`) step for step in f64, one thread per matrix, so
//! the simulator is bit-identical to the interpreter (same rotations, same
//! sweep test, eigenvalues sorted ascending by IEEE total order, stable).
//!
//! The interpreter rotates the columns of `s`, transposes it and rotates the
//! columns again; here the transpose is a flag that swaps the indices of
//! the logical matrix (`tr`), so no copy is made. The sort is by rank: each
//! eigenvalue's position is the number of values before it in (total
//! order, index) order.

use super::decomp::{f64c, ld, ldb, matrices, st, var};
use super::kernel::{i64c, loop_kernel, try_for, try_if};
use super::plan::Step;
use super::{atom_type, bind_outputs, Ctx, Env};
use crate::kir::{Expr, KernelBuilder, MathFn, UnOp, Var};
use jaxon_ir::primitive::EighParams;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

const F64: DType = DType::F64;
const I64: DType = DType::I64;

/// The sweeps the interpreter allows.
const SWEEPS: i64 = 100;

/// The IEEE total-order key of an `f64` as an `i64` (signed comparison of
/// keys is `f64::total_cmp`).
pub(super) fn total_key(x: Expr) -> Expr {
    let bits = x.bitcast(I64);
    let flip = (bits.clone() >> i64c(63)) & i64c(i64::MAX);
    bits ^ flip
}

/// Sets `(c, sn)` to the Jacobi rotation zeroing the off-diagonal of
/// `[[app, apq], [apq, aqq]]`, as `decomp_kernels::jacobi_rotation`.
pub(super) fn rotation(
    k: &mut KernelBuilder,
    (app, aqq, apq): (Expr, Expr, Expr),
    c: Var,
    sn: Var,
) {
    let theta = k.let_("theta", F64, (aqq - app) / (f64c(2.0) * apq));
    let sign = Expr::Math(MathFn::CopySign, vec![f64c(1.0), var(theta)]);
    let root = (var(theta) * var(theta) + f64c(1.0)).math(MathFn::Sqrt);
    let tt = k.let_("tt", F64, sign / (var(theta).unary(UnOp::Abs) + root));
    k.assign(
        c,
        f64c(1.0) / (var(tt) * var(tt) + f64c(1.0)).math(MathFn::Sqrt),
    );
    k.assign(sn, var(tt) * var(c));
}

/// `eigh a`: `(v, w)`, eigenvectors as columns, one thread per matrix.
pub(crate) fn eigh(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &EighParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "eigh";
    let [a] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected one operand")));
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let (nb, n, cols) = matrices(name, d, &shape)?;
    if n != cols {
        return Err(IrError::ty(name, "expected square matrices"));
    }
    let av = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let [(v_out, v_d, _), (w_out, w_d, _)] = outs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected two results")));
    };
    let (v_out, w_out) = ((*v_out, *v_d), (*w_out, *w_d));
    if nb * n == 0 {
        return Ok(());
    }
    let ni = n as i64;
    let nn = ni * ni;
    let sb = ctx.alloc(F64, &[nb * n * n])?;
    let vb = ctx.alloc(F64, &[nb * n * n])?;
    let (lower, sort) = (p.lower, p.sort_eigenvalues);
    let step = loop_kernel(ctx, name, &[nb], |k, args, ctx, _, idx| {
        let b = idx[0].clone();
        let base = k.let_("base", I64, b.clone() * i64c(nn));
        let wbase = k.let_("wbase", I64, b * i64c(ni));
        let tr = k.let_("tr", DType::Bool, Expr::bool(false));
        let pa = move |i: Expr, j: Expr| var(base) + i * i64c(ni) + j;
        // The logical matrix `s`: the physical one, transposed when `tr`.
        let sa = move |i: Expr, j: Expr| Expr::select(var(tr), pa(j.clone(), i.clone()), pa(i, j));
        let (i, j, t) = (k.var("i", I64), k.var("j", I64), k.var("t", I64));
        try_for(k, i, (i64c(0), i64c(ni), i64c(1)), |k| {
            try_for(k, j, (i64c(0), i64c(ni), i64c(1)), |k| {
                let direct = var(i).ge(var(j)).eq(Expr::bool(lower));
                let r = Expr::select(direct.clone(), var(i), var(j));
                let c = Expr::select(direct, var(j), var(i));
                let x = ld(k, args, ctx, av, d, pa(r, c))?;
                st(k, args, ctx, (sb, F64), pa(var(i), var(j)), x)?;
                let one = Expr::select(var(i).eq(var(j)), f64c(1.0), f64c(0.0));
                st(k, args, ctx, (vb, F64), pa(var(i), var(j)), one)
            })
        })?;
        let scale = k.let_("scale", F64, f64c(-0.0));
        try_for(k, t, (i64c(0), i64c(nn), i64c(1)), |k| {
            let x = ldb(k, args, ctx, sb, var(base) + var(t))?;
            let x = k.let_("x", F64, x);
            k.assign(scale, var(scale) + var(x) * var(x));
            Ok(())
        })?;
        k.assign(scale, var(scale).math(MathFn::Sqrt));
        let go = k.let_("go", DType::Bool, Expr::bool(true));
        let (sweep, pp, qq, kk) = (
            k.var("sweep", I64),
            k.var("p", I64),
            k.var("q", I64),
            k.var("k", I64),
        );
        let off = k.var("off", F64);
        let (c, sn) = (k.var("c", F64), k.var("sn", F64));
        // Rotates the logical columns p, q of `s` by (c, sn).
        let rotate_s = |k: &mut KernelBuilder, args: &mut super::kernel::Args| {
            try_for(k, kk, (i64c(0), i64c(ni), i64c(1)), |k| {
                let xp = ldb(k, args, ctx, sb, sa(var(kk), var(pp)))?;
                let xp = k.let_("xp", F64, xp);
                let xq = ldb(k, args, ctx, sb, sa(var(kk), var(qq)))?;
                let xq = k.let_("xq", F64, xq);
                let yp = var(c) * var(xp) - var(sn) * var(xq);
                let yq = var(sn) * var(xp) + var(c) * var(xq);
                st(k, args, ctx, (sb, F64), sa(var(kk), var(pp)), yp)?;
                st(k, args, ctx, (sb, F64), sa(var(kk), var(qq)), yq)
            })
        };
        try_for(k, sweep, (i64c(0), i64c(SWEEPS), i64c(1)), |k| {
            try_if(k, var(go), |k| {
                k.assign(off, f64c(-0.0));
                try_for(k, i, (i64c(0), i64c(ni), i64c(1)), |k| {
                    try_for(k, j, (i64c(0), i64c(ni), i64c(1)), |k| {
                        try_if(k, var(i).ne(var(j)), |k| {
                            let x = ldb(k, args, ctx, sb, sa(var(i), var(j)))?;
                            let x = k.let_("x", F64, x);
                            k.assign(off, var(off) + var(x) * var(x));
                            Ok(())
                        })
                    })
                })?;
                k.assign(off, var(off).math(MathFn::Sqrt));
                let cont = var(off)
                    .gt(f64c(1e-300))
                    .and(var(off).gt(f64c(1e-17) * var(scale)));
                k.if_(cont.unary(UnOp::Not), |k| k.assign(go, Expr::bool(false)));
                try_if(k, var(go), |k| {
                    try_for(k, pp, (i64c(0), i64c(ni), i64c(1)), |k| {
                        try_for(k, qq, (var(pp) + i64c(1), i64c(ni), i64c(1)), |k| {
                            let apq = ldb(k, args, ctx, sb, sa(var(pp), var(qq)))?;
                            let apq = k.let_("apq", F64, apq);
                            try_if(k, var(apq).ne(f64c(0.0)), |k| {
                                let app = ldb(k, args, ctx, sb, sa(var(pp), var(pp)))?;
                                let aqq = ldb(k, args, ctx, sb, sa(var(qq), var(qq)))?;
                                rotation(k, (app, aqq, var(apq)), c, sn);
                                rotate_s(k, args)?;
                                k.assign(tr, var(tr).unary(UnOp::Not));
                                rotate_s(k, args)?;
                                try_for(k, kk, (i64c(0), i64c(ni), i64c(1)), |k| {
                                    let xp = ldb(k, args, ctx, vb, pa(var(kk), var(pp)))?;
                                    let xp = k.let_("xp", F64, xp);
                                    let xq = ldb(k, args, ctx, vb, pa(var(kk), var(qq)))?;
                                    let xq = k.let_("xq", F64, xq);
                                    let yp = var(c) * var(xp) - var(sn) * var(xq);
                                    let yq = var(sn) * var(xp) + var(c) * var(xq);
                                    st(k, args, ctx, (vb, F64), pa(var(kk), var(pp)), yp)?;
                                    st(k, args, ctx, (vb, F64), pa(var(kk), var(qq)), yq)
                                })
                            })
                        })
                    })
                })
            })
        })?;
        // Each eigenvalue's rank in (total order, index) order.
        let rank = k.var("rank", I64);
        try_for(k, i, (i64c(0), i64c(ni), i64c(1)), |k| {
            let wi = ldb(k, args, ctx, sb, pa(var(i), var(i)))?;
            let wi = k.let_("wi", F64, wi);
            k.assign(rank, var(i));
            if sort {
                k.assign(rank, i64c(0));
                let ki = k.let_("ki", I64, total_key(var(wi)));
                try_for(k, j, (i64c(0), i64c(ni), i64c(1)), |k| {
                    let wj = ldb(k, args, ctx, sb, pa(var(j), var(j)))?;
                    let kj = k.let_("kj", I64, total_key(wj));
                    let before = var(kj)
                        .lt(var(ki))
                        .or(var(kj).eq(var(ki)).and(var(j).lt(var(i))));
                    k.if_(before, |k| k.assign(rank, var(rank) + i64c(1)));
                    Ok(())
                })?;
            }
            st(k, args, ctx, w_out, var(wbase) + var(rank), var(wi))?;
            try_for(k, t, (i64c(0), i64c(ni), i64c(1)), |k| {
                let x = ldb(k, args, ctx, vb, pa(var(t), var(i)))?;
                st(k, args, ctx, v_out, pa(var(t), var(rank)), x)
            })
        })
    })?;
    steps.extend(step);
    Ok(())
}
