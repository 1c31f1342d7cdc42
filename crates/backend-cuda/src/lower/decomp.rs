//! The solves and decompositions of the linalg family that lower to KIR:
//! `cholesky`, `triangular_solve`, `lu` (with pivots and permutation), `qr`
//! and `tridiagonal_solve`, on batches of matrices (the trailing two dims).
//!
//! Each is the interpreter's algorithm (`ir::interp::ops::decomp_kernels`)
//! written in KIR, step for step and in f64 (an `f64` scratch buffer per
//! matrix; `f32`/`f16`/`bf16` operands are widened and the results rounded
//! once), so the simulator is bit-identical to the interpreter: Cholesky
//! row by row with NaN factors for a matrix that is not positive definite,
//! forward/back substitution in the interpreter's summation order, LU with
//! LAPACK's partial pivoting (the first largest `|a|`, no elimination under
//! a zero pivot), Householder QR, the Thomas algorithm for tridiagonal
//! systems.
//!
//! Parallelism: `cholesky`, `lu` and `qr` run one thread per matrix; the solves
//! one thread per independent right-hand side (a column of `b`, or a row
//! for `left_side=False`). Small matrices are what the corpus has; a
//! blocked, one-block-per-matrix version in shared memory is future work.
//! `eigh` is in `decomp_jacobi`, `svd` in `decomp_svd`.

use super::kernel::{compute, i64c, load, loop_kernel, store, try_for, try_if, Args};
use super::plan::{BufId, Step};
use super::{atom_type, bind_outputs, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder, MathFn, UnOp};
use jaxon_ir::primitive::TriangularSolveParams;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

const F64: DType = DType::F64;
const I64: DType = DType::I64;

pub(super) fn f64c(v: f64) -> Expr {
    Expr::constant(F64, v)
}

pub(super) fn var(v: crate::kir::Var) -> Expr {
    Expr::var(v)
}

/// Element `index` of `v` (of dtype `d`) widened to `f64`.
pub(super) fn ld(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    v: Value,
    d: DType,
    index: Expr,
) -> Result<Expr, IrError> {
    let x = load(k, args, ctx, v, index)?;
    Ok(if compute(d) == F64 { x } else { x.cast(F64) })
}

/// Element `index` of the `f64` scratch buffer `b`.
pub(super) fn ldb(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    b: BufId,
    index: Expr,
) -> Result<Expr, IrError> {
    load(k, args, ctx, Value::Buf(b), index)
}

/// Stores the `f64` value `x` to element `index` of `b` (of dtype `d`),
/// rounded to `d`'s compute dtype.
pub(super) fn st(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    (b, d): (BufId, DType),
    index: Expr,
    x: Expr,
) -> Result<(), IrError> {
    let x = if compute(d) == F64 {
        x
    } else {
        x.cast(compute(d))
    };
    store(k, args, ctx, b, index, x)
}

/// The batch size and trailing `(rows, cols)` of a floating operand of
/// rank >= 2.
pub(super) fn matrices(
    name: &str,
    d: DType,
    shape: &[usize],
) -> Result<(usize, usize, usize), IrError> {
    if !d.is_float() || shape.len() < 2 {
        return Err(IrError::ty(
            name,
            format!("expected a floating operand of rank >= 2, got {d:?}{shape:?}"),
        ));
    }
    let r = shape.len();
    let nb = shape[..r - 2].iter().product();
    Ok((nb, shape[r - 2], shape[r - 1]))
}

/// The first output of an equation after `bind_outputs`.
fn first(outs: &[(BufId, DType, Vec<usize>)], name: &str) -> Result<(BufId, DType), IrError> {
    outs.first()
        .map(|o| (o.0, o.1))
        .ok_or_else(|| IrError::Invalid(format!("{name}: no result")))
}

/// `cholesky a`: the lower factor `L` with zeros above the diagonal, or
/// all NaN when a pivot is NaN or not positive (one thread per matrix).
pub(crate) fn cholesky(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "cholesky";
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
    let out = first(&outs, name)?;
    if nb * n == 0 {
        return Ok(());
    }
    let l = ctx.alloc(F64, &[nb * n * n])?;
    let nn = (n * n) as i64;
    let step = loop_kernel(ctx, name, &[nb], |k, args, ctx, _, idx| {
        let base = k.let_("base", I64, idx[0].clone() * i64c(nn));
        let at = move |i: Expr, j: Expr| var(base) + i * i64c(n as i64) + j;
        let ok = k.let_("ok", DType::Bool, Expr::bool(true));
        let t = k.var("t", I64);
        try_for(k, t, (i64c(0), i64c(nn), i64c(1)), |k| {
            st(k, args, ctx, (l, F64), var(base) + var(t), f64c(0.0))
        })?;
        let (i, j, kk) = (k.var("i", I64), k.var("j", I64), k.var("k", I64));
        try_for(k, i, (i64c(0), i64c(n as i64), i64c(1)), |k| {
            try_for(k, j, (i64c(0), var(i) + i64c(1), i64c(1)), |k| {
                try_if(k, var(ok), |k| {
                    let s0 = ld(k, args, ctx, av, d, at(var(i), var(j)))?;
                    let s = k.let_("s", F64, s0);
                    try_for(k, kk, (i64c(0), var(j), i64c(1)), |k| {
                        let x = ldb(k, args, ctx, l, at(var(i), var(kk)))?;
                        let y = ldb(k, args, ctx, l, at(var(j), var(kk)))?;
                        k.assign(s, var(s) - x * y);
                        Ok(())
                    })?;
                    let diag = var(i).eq(var(j));
                    let bad = var(s).unary(UnOp::IsNan).or(var(s).le(f64c(0.0)));
                    k.if_(diag.clone().and(bad.clone()), |k| {
                        k.assign(ok, Expr::bool(false))
                    });
                    try_if(k, diag.clone().and(bad.unary(UnOp::Not)), |k| {
                        let r = var(s).math(MathFn::Sqrt);
                        st(k, args, ctx, (l, F64), at(var(i), var(i)), r)
                    })?;
                    try_if(k, diag.unary(UnOp::Not), |k| {
                        let djj = ldb(k, args, ctx, l, at(var(j), var(j)))?;
                        st(k, args, ctx, (l, F64), at(var(i), var(j)), var(s) / djj)
                    })
                })
            })
        })?;
        try_for(k, t, (i64c(0), i64c(nn), i64c(1)), |k| {
            let x = ldb(k, args, ctx, l, var(base) + var(t))?;
            let x = Expr::select(var(ok), x, f64c(f64::NAN));
            st(k, args, ctx, out, var(base) + var(t), x)
        })
    })?;
    steps.extend(step);
    Ok(())
}

/// `triangular_solve a b`: `op(a) x = b` or `x op(a) = b`, one thread per
/// right-hand side, in the interpreter's order (`decomp_kernels::
/// triangular_solve` solves `x t = b` as `tᵀ xᵀ = bᵀ`).
pub(crate) fn triangular_solve(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &TriangularSolveParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "triangular_solve";
    let [a, b] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected two operands")));
    };
    let (da, ashape) = atom_type(jaxpr, a)?;
    let (db, bshape) = atom_type(jaxpr, b)?;
    let (nba, m, m2) = matrices(name, da, &ashape)?;
    let (nb, r, c) = matrices(name, db, &bshape)?;
    let fits = if p.left_side { r } else { c } == m;
    if m2 != m || !fits || ashape.len() != bshape.len() || nba != nb {
        return Err(IrError::ty(
            name,
            "a must be square, fit b and share its batch dims",
        ));
    }
    let (av, bv) = (env.atom(a)?, env.atom(b)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let out = first(&outs, name)?;
    let nind = if p.left_side { c } else { r };
    if nb * r * c == 0 {
        return Ok(());
    }
    let x = ctx.alloc(F64, &[nb * r * c])?;
    let (mm, bsz) = ((m * m) as i64, (r * c) as i64);
    let (mi, ci) = (m as i64, c as i64);
    let left = p.left_side;
    // The solve reads g(i, k) = a[i, k], or a[k, i] when `swapped`, and
    // runs forward (`low`) or backward.
    let swapped = p.transpose_a ^ !left;
    let low_eff = p.lower ^ p.transpose_a;
    let low = if left { low_eff } else { !low_eff };
    let unit = p.unit_diagonal;
    let step = loop_kernel(ctx, name, &[nb, nind], |k, args, ctx, _, idx| {
        let abase = k.let_("abase", I64, idx[0].clone() * i64c(mm));
        let bbase = k.let_("bbase", I64, idx[0].clone() * i64c(bsz));
        let col = k.let_("col", I64, idx[1].clone());
        // Element t of this right-hand side.
        let xi = move |t: Expr| {
            if left {
                var(bbase) + t * i64c(ci) + var(col)
            } else {
                var(bbase) + var(col) * i64c(ci) + t
            }
        };
        let g = move |i: Expr, kk: Expr| {
            let (row, cl) = if swapped { (kk, i) } else { (i, kk) };
            var(abase) + row * i64c(mi) + cl
        };
        let t = k.var("t", I64);
        try_for(k, t, (i64c(0), i64c(mi), i64c(1)), |k| {
            let v = ld(k, args, ctx, bv, db, xi(var(t)))?;
            st(k, args, ctx, (x, F64), xi(var(t)), v)
        })?;
        let (ii, kk) = (k.var("ii", I64), k.var("k", I64));
        try_for(k, ii, (i64c(0), i64c(mi), i64c(1)), |k| {
            let i = if low {
                k.let_("i", I64, var(ii))
            } else {
                k.let_("i", I64, i64c(mi - 1) - var(ii))
            };
            let s0 = ldb(k, args, ctx, x, xi(var(i)))?;
            let s = k.let_("s", F64, s0);
            let range = if low {
                (i64c(0), var(i), i64c(1))
            } else {
                (var(i) + i64c(1), i64c(mi), i64c(1))
            };
            try_for(k, kk, range, |k| {
                let gik = ld(k, args, ctx, av, da, g(var(i), var(kk)))?;
                let xk = ldb(k, args, ctx, x, xi(var(kk)))?;
                k.assign(s, var(s) - gik * xk);
                Ok(())
            })?;
            let v = if unit {
                var(s)
            } else {
                var(s) / ld(k, args, ctx, av, da, g(var(i), var(i)))?
            };
            st(k, args, ctx, (x, F64), xi(var(i)), v)
        })?;
        try_for(k, t, (i64c(0), i64c(mi), i64c(1)), |k| {
            let v = ldb(k, args, ctx, x, xi(var(t)))?;
            st(k, args, ctx, out, xi(var(t)), v)
        })
    })?;
    steps.extend(step);
    Ok(())
}

/// `lu a`: `(lu, pivots, permutation)` with partial pivoting, one thread
/// per matrix.
pub(crate) fn lu(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "lu";
    let [a] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected one operand")));
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let (nb, m, n) = matrices(name, d, &shape)?;
    let av = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let [(lu_out, lu_d, _), (piv, piv_d, _), (perm, perm_d, _)] = outs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected three results")));
    };
    let (lu_out, piv, perm) = ((*lu_out, *lu_d), (*piv, *piv_d), (*perm, *perm_d));
    if !piv.1.is_int() || !perm.1.is_int() {
        return Err(IrError::ty(name, "pivots and permutation must be integers"));
    }
    if nb * m == 0 {
        return Ok(());
    }
    let kmin = m.min(n) as i64;
    let (mi, ni) = (m as i64, n as i64);
    let mn = mi * ni;
    let w = ctx.alloc(F64, &[(nb * m * n).max(1)])?;
    let step = loop_kernel(ctx, name, &[nb], |k, args, ctx, _, idx| {
        let b = idx[0].clone();
        let base = k.let_("base", I64, b.clone() * i64c(mn));
        let vbase = k.let_("vbase", I64, b.clone() * i64c(kmin));
        let pbase = k.let_("pbase", I64, b * i64c(mi));
        let at = move |i: Expr, j: Expr| var(base) + i * i64c(ni) + j;
        let int = |x: Expr, d: DType| x.cast(d);
        let t = k.var("t", I64);
        try_for(k, t, (i64c(0), i64c(mn), i64c(1)), |k| {
            let v = ld(k, args, ctx, av, d, var(base) + var(t))?;
            st(k, args, ctx, (w, F64), var(base) + var(t), v)
        })?;
        try_for(k, t, (i64c(0), i64c(mi), i64c(1)), |k| {
            store(
                k,
                args,
                ctx,
                perm.0,
                var(pbase) + var(t),
                int(var(t), perm.1),
            )
        })?;
        let (j, i, c) = (k.var("j", I64), k.var("i", I64), k.var("c", I64));
        try_for(k, j, (i64c(0), i64c(kmin), i64c(1)), |k| {
            let p = k.let_("p", I64, var(j));
            try_for(k, i, (var(j) + i64c(1), i64c(mi), i64c(1)), |k| {
                let xi = ldb(k, args, ctx, w, at(var(i), var(j)))?;
                let xp = ldb(k, args, ctx, w, at(var(p), var(j)))?;
                let bigger = xi.unary(UnOp::Abs).gt(xp.unary(UnOp::Abs));
                k.if_(bigger, |k| k.assign(p, var(i)));
                Ok(())
            })?;
            store(k, args, ctx, piv.0, var(vbase) + var(j), int(var(p), piv.1))?;
            try_if(k, var(p).ne(var(j)), |k| {
                try_for(k, c, (i64c(0), i64c(ni), i64c(1)), |k| {
                    let xj = ldb(k, args, ctx, w, at(var(j), var(c)))?;
                    let xj = k.let_("xj", F64, xj);
                    let xp = ldb(k, args, ctx, w, at(var(p), var(c)))?;
                    st(k, args, ctx, (w, F64), at(var(j), var(c)), xp)?;
                    st(k, args, ctx, (w, F64), at(var(p), var(c)), var(xj))
                })?;
                let pj = load(k, args, ctx, Value::Buf(perm.0), var(pbase) + var(j))?;
                let pj = k.let_("pj", perm.1, pj);
                let pp = load(k, args, ctx, Value::Buf(perm.0), var(pbase) + var(p))?;
                store(k, args, ctx, perm.0, var(pbase) + var(j), pp)?;
                store(k, args, ctx, perm.0, var(pbase) + var(p), var(pj))
            })?;
            let dj = ldb(k, args, ctx, w, at(var(j), var(j)))?;
            let dj = k.let_("dj", F64, dj);
            try_if(k, var(dj).ne(f64c(0.0)), |k| {
                try_for(k, i, (var(j) + i64c(1), i64c(mi), i64c(1)), |k| {
                    let f = ldb(k, args, ctx, w, at(var(i), var(j)))? / var(dj);
                    let f = k.let_("f", F64, f);
                    st(k, args, ctx, (w, F64), at(var(i), var(j)), var(f))?;
                    try_for(k, c, (var(j) + i64c(1), i64c(ni), i64c(1)), |k| {
                        let xic = ldb(k, args, ctx, w, at(var(i), var(c)))?;
                        let xjc = ldb(k, args, ctx, w, at(var(j), var(c)))?;
                        st(
                            k,
                            args,
                            ctx,
                            (w, F64),
                            at(var(i), var(c)),
                            xic - var(f) * xjc,
                        )
                    })
                })
            })
        })?;
        try_for(k, t, (i64c(0), i64c(mn), i64c(1)), |k| {
            let v = ldb(k, args, ctx, w, var(base) + var(t))?;
            st(k, args, ctx, lu_out, var(base) + var(t), v)
        })
    })?;
    steps.extend(step);
    Ok(())
}

/// `tridiagonal_solve dl d du b`: the Thomas algorithm, one thread per
/// column of `b`.
pub(crate) fn tridiagonal_solve(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "tridiagonal_solve";
    let [dl, dd, du, b] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected four operands")));
    };
    let (db, bshape) = atom_type(jaxpr, b)?;
    let (nb, m, n) = matrices(name, db, &bshape)?;
    let mut diags = Vec::with_capacity(3);
    for x in [dl, dd, du] {
        let (dt, s) = atom_type(jaxpr, x)?;
        let len: usize = s.iter().product();
        if !dt.is_float() || s.last() != Some(&m) || len != nb * m {
            return Err(IrError::ty(name, "diagonals do not fit b"));
        }
        diags.push((env.atom(x)?, dt));
    }
    let bv = env.atom(b)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let out = first(&outs, name)?;
    if nb * m * n == 0 {
        return Ok(());
    }
    let cp = ctx.alloc(F64, &[nb * n * m])?;
    let dp = ctx.alloc(F64, &[nb * n * m])?;
    let (mi, ni) = (m as i64, n as i64);
    let [(lv, ld_), (dv, dd_), (uv, ud_)] = [diags[0], diags[1], diags[2]];
    let step = loop_kernel(ctx, name, &[nb, n], |k, args, ctx, _, idx| {
        let dbase = k.let_("dbase", I64, idx[0].clone() * i64c(mi));
        let bbase = k.let_("bbase", I64, idx[0].clone() * i64c(mi * ni));
        let col = k.let_("col", I64, idx[1].clone());
        let sbase = k.let_(
            "sbase",
            I64,
            (idx[0].clone() * i64c(ni) + var(col)) * i64c(mi),
        );
        let bi = move |i: Expr| var(bbase) + i * i64c(ni) + var(col);
        let di = move |i: Expr| var(dbase) + i;
        let si = move |i: Expr| var(sbase) + i;
        let d0 = ld(k, args, ctx, dv, dd_, di(i64c(0)))?;
        let d0 = k.let_("d0", F64, d0);
        let u0 = ld(k, args, ctx, uv, ud_, di(i64c(0)))?;
        st(k, args, ctx, (cp, F64), si(i64c(0)), u0 / var(d0))?;
        let b0 = ld(k, args, ctx, bv, db, bi(i64c(0)))?;
        st(k, args, ctx, (dp, F64), si(i64c(0)), b0 / var(d0))?;
        let i = k.var("i", I64);
        try_for(k, i, (i64c(1), i64c(mi), i64c(1)), |k| {
            let di_ = ld(k, args, ctx, dv, dd_, di(var(i)))?;
            let li = ld(k, args, ctx, lv, ld_, di(var(i)))?;
            let li = k.let_("li", F64, li);
            let cprev = ldb(k, args, ctx, cp, si(var(i) - i64c(1)))?;
            let den = k.let_("den", F64, di_ - var(li) * cprev);
            let ui = ld(k, args, ctx, uv, ud_, di(var(i)))?;
            st(k, args, ctx, (cp, F64), si(var(i)), ui / var(den))?;
            let bv_i = ld(k, args, ctx, bv, db, bi(var(i)))?;
            let dprev = ldb(k, args, ctx, dp, si(var(i) - i64c(1)))?;
            let v = (bv_i - var(li) * dprev) / var(den);
            st(k, args, ctx, (dp, F64), si(var(i)), v)
        })?;
        // Back substitution in place: dp[i] becomes x[i].
        let ii = k.var("ii", I64);
        try_for(k, ii, (i64c(0), i64c(mi - 1), i64c(1)), |k| {
            let i = k.let_("i", I64, i64c(mi - 2) - var(ii));
            let dpi = ldb(k, args, ctx, dp, si(var(i)))?;
            let cpi = ldb(k, args, ctx, cp, si(var(i)))?;
            let xn = ldb(k, args, ctx, dp, si(var(i) + i64c(1)))?;
            st(k, args, ctx, (dp, F64), si(var(i)), dpi - cpi * xn)
        })?;
        try_for(k, i, (i64c(0), i64c(mi), i64c(1)), |k| {
            let v = ldb(k, args, ctx, dp, si(var(i)))?;
            st(k, args, ctx, out, bi(var(i)), v)
        })
    })?;
    steps.extend(step);
    Ok(())
}

/// `qr a` (no pivoting): Householder reflections as the interpreter
/// applies them (`beta = -sign(alpha) hypot(alpha, |x|)`, `v[j] = 1`), `q`
/// accumulated backwards from the identity; one thread per matrix. The
/// hypotenuse is `s sqrt(1 + (t/s)²)`, within an ulp of the host's `hypot`.
pub(crate) fn qr(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &jaxon_ir::primitive::QrParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "qr";
    if p.pivoting {
        return Err(IrError::ty(name, "pivoting=True is not supported"));
    }
    let [a] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected one operand")));
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let (nb, m, n) = matrices(name, d, &shape)?;
    let av = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let [(q_out, q_d, _), (r_out, r_d, _)] = outs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected two results")));
    };
    let (q_out, r_out) = ((*q_out, *q_d), (*r_out, *r_d));
    let kmin = m.min(n);
    let qc = if p.full_matrices { m } else { kmin };
    if nb == 0 || m * qc + qc * n == 0 {
        return Ok(());
    }
    let (mi, ni, ki, qi) = (m as i64, n as i64, kmin as i64, qc as i64);
    let rb = ctx.alloc(F64, &[(nb * m * n).max(1)])?;
    let vb = ctx.alloc(F64, &[(nb * kmin * m).max(1)])?;
    let tb = ctx.alloc(F64, &[(nb * kmin).max(1)])?;
    let qb = ctx.alloc(F64, &[(nb * m * qc).max(1)])?;
    let step = loop_kernel(ctx, name, &[nb], |k, args, ctx, _, idx| {
        let b = idx[0].clone();
        let rbase = k.let_("rbase", I64, b.clone() * i64c(mi * ni));
        let vbase = k.let_("vbase", I64, b.clone() * i64c(ki * mi));
        let tbase = k.let_("tbase", I64, b.clone() * i64c(ki));
        let qbase = k.let_("qbase", I64, b.clone() * i64c(mi * qi));
        let obase = k.let_("obase", I64, b * i64c(qi * ni));
        let ra = move |i: Expr, c: Expr| var(rbase) + i * i64c(ni) + c;
        let va = move |j: Expr, i: Expr| var(vbase) + j * i64c(mi) + i;
        let qa = move |i: Expr, c: Expr| var(qbase) + i * i64c(qi) + c;
        let (t, i, j, c) = (
            k.var("t", I64),
            k.var("i", I64),
            k.var("j", I64),
            k.var("c", I64),
        );
        try_for(k, t, (i64c(0), i64c(mi * ni), i64c(1)), |k| {
            let v = ld(k, args, ctx, av, d, var(rbase) + var(t))?;
            st(k, args, ctx, (rb, F64), var(rbase) + var(t), v)
        })?;
        let w = k.var("w", F64);
        try_for(k, j, (i64c(0), i64c(ki), i64c(1)), |k| {
            let alpha = ldb(k, args, ctx, rb, ra(var(j), var(j)))?;
            let alpha = k.let_("alpha", F64, alpha);
            let xs = k.let_("xs", F64, f64c(0.0));
            try_for(k, i, (var(j) + i64c(1), i64c(mi), i64c(1)), |k| {
                let x = ldb(k, args, ctx, rb, ra(var(i), var(j)))?;
                let x = k.let_("x", F64, x);
                k.assign(xs, var(xs) + var(x) * var(x));
                Ok(())
            })?;
            let xnorm = k.let_("xnorm", F64, var(xs).math(MathFn::Sqrt));
            try_for(k, i, (i64c(0), i64c(mi), i64c(1)), |k| {
                let one = Expr::select(var(i).eq(var(j)), f64c(1.0), f64c(0.0));
                st(k, args, ctx, (vb, F64), va(var(j), var(i)), one)
            })?;
            let tau = k.let_("tau", F64, f64c(0.0));
            try_if(k, var(xnorm).ne(f64c(0.0)), |k| {
                let (aa, xx) = (var(alpha).unary(UnOp::Abs), var(xnorm).unary(UnOp::Abs));
                let s = k.let_("hs", F64, aa.clone().max(xx.clone()));
                let r = k.let_("hr", F64, aa.min(xx) / var(s));
                let h = var(s) * (f64c(1.0) + var(r) * var(r)).math(MathFn::Sqrt);
                let beta = Expr::Math(MathFn::CopySign, vec![h, var(alpha)]);
                let beta = k.let_("beta", F64, -beta);
                k.assign(tau, (var(beta) - var(alpha)) / var(beta));
                try_for(k, i, (var(j) + i64c(1), i64c(mi), i64c(1)), |k| {
                    let x = ldb(k, args, ctx, rb, ra(var(i), var(j)))?;
                    let v = x / (var(alpha) - var(beta));
                    st(k, args, ctx, (vb, F64), va(var(j), var(i)), v)?;
                    st(k, args, ctx, (rb, F64), ra(var(i), var(j)), f64c(0.0))
                })?;
                st(k, args, ctx, (rb, F64), ra(var(j), var(j)), var(beta))?;
                try_for(k, c, (var(j) + i64c(1), i64c(ni), i64c(1)), |k| {
                    k.assign(w, f64c(-0.0));
                    try_for(k, i, (var(j), i64c(mi), i64c(1)), |k| {
                        let v = ldb(k, args, ctx, vb, va(var(j), var(i)))?;
                        let x = ldb(k, args, ctx, rb, ra(var(i), var(c)))?;
                        k.assign(w, var(w) + v * x);
                        Ok(())
                    })?;
                    try_for(k, i, (var(j), i64c(mi), i64c(1)), |k| {
                        let v = ldb(k, args, ctx, vb, va(var(j), var(i)))?;
                        let x = ldb(k, args, ctx, rb, ra(var(i), var(c)))?;
                        let y = x - var(tau) * v * var(w);
                        st(k, args, ctx, (rb, F64), ra(var(i), var(c)), y)
                    })
                })
            })?;
            st(k, args, ctx, (tb, F64), var(tbase) + var(j), var(tau))
        })?;
        // q: the reflections applied backwards to the identity.
        try_for(k, i, (i64c(0), i64c(mi), i64c(1)), |k| {
            try_for(k, c, (i64c(0), i64c(qi), i64c(1)), |k| {
                let one = Expr::select(var(i).eq(var(c)), f64c(1.0), f64c(0.0));
                st(k, args, ctx, (qb, F64), qa(var(i), var(c)), one)
            })
        })?;
        let jj = k.var("jj", I64);
        try_for(k, jj, (i64c(0), i64c(ki), i64c(1)), |k| {
            let jr = k.let_("jr", I64, i64c(ki - 1) - var(jj));
            let tau = ldb(k, args, ctx, tb, var(tbase) + var(jr))?;
            let tau = k.let_("tq", F64, tau);
            try_for(k, c, (i64c(0), i64c(qi), i64c(1)), |k| {
                k.assign(w, f64c(-0.0));
                try_for(k, i, (var(jr), i64c(mi), i64c(1)), |k| {
                    let v = ldb(k, args, ctx, vb, va(var(jr), var(i)))?;
                    let x = ldb(k, args, ctx, qb, qa(var(i), var(c)))?;
                    k.assign(w, var(w) + v * x);
                    Ok(())
                })?;
                try_for(k, i, (var(jr), i64c(mi), i64c(1)), |k| {
                    let v = ldb(k, args, ctx, vb, va(var(jr), var(i)))?;
                    let x = ldb(k, args, ctx, qb, qa(var(i), var(c)))?;
                    let y = x - var(tau) * v * var(w);
                    st(k, args, ctx, (qb, F64), qa(var(i), var(c)), y)
                })
            })
        })?;
        try_for(k, t, (i64c(0), i64c(mi * qi), i64c(1)), |k| {
            let v = ldb(k, args, ctx, qb, var(qbase) + var(t))?;
            st(k, args, ctx, q_out, var(qbase) + var(t), v)
        })?;
        // r: the first `qc` rows of the reduced matrix, zero rows below `m`.
        try_for(k, i, (i64c(0), i64c(qi), i64c(1)), |k| {
            try_for(k, c, (i64c(0), i64c(ni), i64c(1)), |k| {
                let inside = var(i).lt(i64c(mi));
                let row = Expr::select(inside.clone(), var(i), i64c(0));
                let v = ldb(k, args, ctx, rb, ra(row, var(c)))?;
                let v = Expr::select(inside, v, f64c(0.0));
                st(
                    k,
                    args,
                    ctx,
                    r_out,
                    var(obase) + var(i) * i64c(ni) + var(c),
                    v,
                )
            })
        })
    })?;
    steps.extend(step);
    Ok(())
}
