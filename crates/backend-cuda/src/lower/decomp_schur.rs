//! `schur` (real form, `sort_eig_vals=False`): the interpreter's reference
//! kernel (`ir::interp::ops::schur`) written in KIR, one thread per matrix
//! in f64 scratch like the other decompositions (`decomp.rs`): Householder
//! reduction to Hessenberg form, then Francis double-shift QR steps with
//! deflation (an exceptional shift every tenth step), 2x2 blocks with real
//! eigenvalues split by one rotation, every transformation accumulated in
//! `Z`. A matrix with a non-finite entry, or one that does not converge in
//! `100 n` steps, gives NaNs, as the interpreter does.
//!
//! Invariant: the operations and their order are the interpreter's, except
//! `hypot`, computed as `s sqrt(1 + (m/s)^2)` (KIR has no `hypot`), which
//! may differ from the host's in the last bit; results agree to rounding.

use super::decomp::{f64c, ld, ldb, matrices, st, var};
use super::kernel::{i64c, loop_kernel, try_for, try_if, Args};
use super::plan::{BufId, Step};
use super::{atom_type, bind_outputs, Ctx, Env};
use crate::kir::{Expr, KernelBuilder, MathFn, UnOp, Var};
use jaxon_ir::primitive::SchurParams;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

const F64: DType = DType::F64;
const I64: DType = DType::I64;

/// `if cond { then } else { otherwise }` with fallible bodies.
fn try_if_else(
    k: &mut KernelBuilder,
    cond: Expr,
    then: impl FnOnce(&mut KernelBuilder) -> Result<(), IrError>,
    otherwise: impl FnOnce(&mut KernelBuilder) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let (mut a, mut b) = (Ok(()), Ok(()));
    k.if_else(cond, |k| a = then(k), |k| b = otherwise(k));
    a.and(b)
}

/// `while cond { body }` with a fallible body.
fn try_while(
    k: &mut KernelBuilder,
    cond: Expr,
    body: impl FnOnce(&mut KernelBuilder) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let mut r = Ok(());
    k.while_(cond, |k| r = body(k));
    r
}

fn abs(x: Expr) -> Expr {
    x.unary(UnOp::Abs)
}

/// `hypot(x, y)` (see the module invariant).
fn hypot(k: &mut KernelBuilder, x: Expr, y: Expr) -> Expr {
    let (ax, ay) = (abs(x), abs(y));
    let s = k.let_("hy_s", F64, ax.clone().max(ay.clone()));
    let m = ax.min(ay);
    let safe = Expr::select(var(s).eq(f64c(0.0)), f64c(1.0), var(s));
    let r = k.let_("hy_r", F64, m / safe);
    Expr::select(
        var(s).eq(f64c(0.0)),
        f64c(0.0),
        var(s) * (f64c(1.0) + var(r) * var(r)).math(MathFn::Sqrt),
    )
}

/// The per-matrix state of the kernel being built.
struct Mats {
    t: BufId,
    z: BufId,
    h: BufId,
    tbase: Var,
    hbase: Var,
    n: i64,
}

impl Mats {
    fn at(&self, i: Expr, j: Expr) -> Expr {
        var(self.tbase) + i * i64c(self.n) + j
    }
    fn hv(&self, i: Expr) -> Expr {
        var(self.hbase) + i
    }
}

/// The reflector of the `len` values in the `h` scratch as a similarity
/// on `T` (rows `k0..k0+len`, columns `first..n` from the left; columns
/// `k0..k0+len`, rows `0..=last` from the right) and on `Z` (all rows):
/// the interpreter's `similarity`.
#[allow(clippy::too_many_arguments)]
fn similarity(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    m: &Mats,
    len: Expr,
    k0: Expr,
    first: Expr,
    last: Expr,
) -> Result<(), IrError> {
    let i = k.var("si", I64);
    let j = k.var("sj", I64);
    let acc = k.let_("sacc", F64, f64c(-0.0));
    try_for(k, i, (i64c(0), len.clone(), i64c(1)), |k| {
        let x = ldb(k, args, ctx, m.h, m.hv(var(i)))?;
        let x = k.let_("sx", F64, x);
        k.assign(acc, var(acc) + var(x) * var(x));
        Ok(())
    })?;
    let norm = k.let_("snorm", F64, var(acc).math(MathFn::Sqrt));
    try_if(k, var(norm).ne(f64c(0.0)), |k| {
        let x0 = ldb(k, args, ctx, m.h, m.hv(i64c(0)))?;
        let x0 = k.let_("sx0", F64, x0);
        let add = Expr::select(var(x0).ge(f64c(0.0)), var(norm), -var(norm));
        st(k, args, ctx, (m.h, F64), m.hv(i64c(0)), var(x0) + add)?;
        k.assign(acc, f64c(-0.0));
        try_for(k, i, (i64c(0), len.clone(), i64c(1)), |k| {
            let x = ldb(k, args, ctx, m.h, m.hv(var(i)))?;
            let x = k.let_("sx", F64, x);
            k.assign(acc, var(acc) + var(x) * var(x));
            Ok(())
        })?;
        try_if(k, var(acc).gt(f64c(0.0)), |k| {
            let beta = k.let_("sbeta", F64, f64c(2.0) / var(acc));
            let s = k.var("ss", F64);
            let n = m.n;
            // From the left on T: columns first..n.
            try_for(k, j, (first.clone(), i64c(n), i64c(1)), |k| {
                k.assign(s, f64c(-0.0));
                try_for(k, i, (i64c(0), len.clone(), i64c(1)), |k| {
                    let v = ldb(k, args, ctx, m.h, m.hv(var(i)))?;
                    let x = ldb(k, args, ctx, m.t, m.at(k0.clone() + var(i), var(j)))?;
                    k.assign(s, var(s) + v * x);
                    Ok(())
                })?;
                try_for(k, i, (i64c(0), len.clone(), i64c(1)), |k| {
                    let v = ldb(k, args, ctx, m.h, m.hv(var(i)))?;
                    let at = m.at(k0.clone() + var(i), var(j));
                    let x = ldb(k, args, ctx, m.t, at.clone())?;
                    st(k, args, ctx, (m.t, F64), at, x - var(beta) * v * var(s))
                })
            })?;
            // From the right on T (rows 0..=last) and Z (all rows).
            for (buf, rows) in [(m.t, last.clone() + i64c(1)), (m.z, i64c(n))] {
                try_for(k, j, (i64c(0), rows, i64c(1)), |k| {
                    k.assign(s, f64c(-0.0));
                    try_for(k, i, (i64c(0), len.clone(), i64c(1)), |k| {
                        let v = ldb(k, args, ctx, m.h, m.hv(var(i)))?;
                        let x = ldb(k, args, ctx, buf, m.at(var(j), k0.clone() + var(i)))?;
                        k.assign(s, var(s) + v * x);
                        Ok(())
                    })?;
                    try_for(k, i, (i64c(0), len.clone(), i64c(1)), |k| {
                        let v = ldb(k, args, ctx, m.h, m.hv(var(i)))?;
                        let at = m.at(var(j), k0.clone() + var(i));
                        let x = ldb(k, args, ctx, buf, at.clone())?;
                        st(k, args, ctx, (buf, F64), at, x - var(beta) * v * var(s))
                    })
                })?;
            }
            Ok(())
        })
    })
}

/// The interpreter's `split_block` at `p, p + 1`.
fn split_block(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    m: &Mats,
    p: Expr,
) -> Result<(), IrError> {
    let p = k.let_("bp", I64, p);
    let q = k.let_("bq", I64, var(p) + i64c(1));
    let a = ldb(k, args, ctx, m.t, m.at(var(p), var(p)))?;
    let a = k.let_("ba", F64, a);
    let b = ldb(k, args, ctx, m.t, m.at(var(p), var(q)))?;
    let b = k.let_("bb", F64, b);
    let c = ldb(k, args, ctx, m.t, m.at(var(q), var(p)))?;
    let c = k.let_("bc", F64, c);
    let d = ldb(k, args, ctx, m.t, m.at(var(q), var(q)))?;
    let d = k.let_("bd", F64, d);
    try_if(k, var(c).ne(f64c(0.0)), |k| {
        let h = k.let_("bh", F64, (var(a) - var(d)) / f64c(2.0));
        let disc = k.let_("bdisc", F64, var(h) * var(h) + var(b) * var(c));
        try_if(k, var(disc).ge(f64c(0.0)), |k| {
            let r = k.let_("br", F64, var(disc).math(MathFn::Sqrt));
            let pm = Expr::select(var(h).ge(f64c(0.0)), var(r), -var(r));
            let lambda = k.let_("blam", F64, (var(a) + var(d)) / f64c(2.0) + pm);
            let (e10, e11) = (var(lambda) - var(d), var(c));
            let (e20, e21) = (var(b), var(lambda) - var(a));
            let n1 = hypot(k, e10.clone(), e11.clone());
            let n1 = k.let_("bn1", F64, n1);
            let n2 = hypot(k, e20.clone(), e21.clone());
            let first = var(n1).ge(n2);
            let x = k.let_("bx", F64, Expr::select(first.clone(), e10, e20));
            let y = k.let_("by", F64, Expr::select(first, e11, e21));
            let nrm = hypot(k, var(x), var(y));
            let nrm = k.let_("bnrm", F64, nrm);
            try_if(k, var(nrm).ne(f64c(0.0)), |k| {
                let cs = k.let_("bcs", F64, var(x) / var(nrm));
                let sn = k.let_("bsn", F64, var(y) / var(nrm));
                let j = k.var("bj", I64);
                try_for(k, j, (var(p), i64c(m.n), i64c(1)), |k| {
                    let u = ldb(k, args, ctx, m.t, m.at(var(p), var(j)))?;
                    let u = k.let_("bu", F64, u);
                    let w = ldb(k, args, ctx, m.t, m.at(var(q), var(j)))?;
                    let w = k.let_("bw", F64, w);
                    let top = var(cs) * var(u) + var(sn) * var(w);
                    st(k, args, ctx, (m.t, F64), m.at(var(p), var(j)), top)?;
                    let bot = -var(sn) * var(u) + var(cs) * var(w);
                    st(k, args, ctx, (m.t, F64), m.at(var(q), var(j)), bot)
                })?;
                for (buf, rows) in [(m.t, var(q) + i64c(1)), (m.z, i64c(m.n))] {
                    try_for(k, j, (i64c(0), rows, i64c(1)), |k| {
                        let u = ldb(k, args, ctx, buf, m.at(var(j), var(p)))?;
                        let u = k.let_("bu", F64, u);
                        let w = ldb(k, args, ctx, buf, m.at(var(j), var(q)))?;
                        let w = k.let_("bw", F64, w);
                        let left = var(cs) * var(u) + var(sn) * var(w);
                        st(k, args, ctx, (buf, F64), m.at(var(j), var(p)), left)?;
                        let right = -var(sn) * var(u) + var(cs) * var(w);
                        st(k, args, ctx, (buf, F64), m.at(var(j), var(q)), right)
                    })?;
                }
                st(k, args, ctx, (m.t, F64), m.at(var(q), var(p)), f64c(0.0))
            })
        })
    })
}

/// Lowers `schur`.
pub(crate) fn schur(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &SchurParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "schur";
    let [a] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected one operand")));
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let (nb, rows, n) = matrices(name, d, &shape)?;
    if rows != n || p.sort_eig_vals {
        return Err(IrError::ty(
            name,
            "expected square matrices and sort_eig_vals=False",
        ));
    }
    let av = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let t_out = outs
        .first()
        .map(|o| (o.0, o.1))
        .ok_or_else(|| IrError::Invalid("schur: no result".into()))?;
    let z_out = outs.get(1).map(|o| (o.0, o.1));
    if nb * n == 0 {
        return Ok(());
    }
    let ni = n as i64;
    let tb = ctx.alloc(F64, &[nb * n * n])?;
    let zb = ctx.alloc(F64, &[nb * n * n])?;
    let hb = ctx.alloc(F64, &[nb * n])?;
    let step = loop_kernel(ctx, name, &[nb], |k, args, ctx, _, idx| {
        let b = idx[0].clone();
        let tbase = k.let_("tbase", I64, b.clone() * i64c(ni * ni));
        let hbase = k.let_("hbase", I64, b * i64c(ni));
        let m = Mats {
            t: tb,
            z: zb,
            h: hb,
            tbase,
            hbase,
            n: ni,
        };
        let (i, j, kk) = (k.var("i", I64), k.var("j", I64), k.var("kk", I64));
        let bad = k.let_("bad", DType::Bool, Expr::bool(false));
        try_for(k, i, (i64c(0), i64c(ni * ni), i64c(1)), |k| {
            let x = ld(k, args, ctx, av, d, var(tbase) + var(i))?;
            let x = k.let_("x", F64, x);
            k.assign(bad, var(bad).or((var(x) - var(x)).ne(f64c(0.0))));
            st(k, args, ctx, (tb, F64), var(tbase) + var(i), var(x))?;
            let one = Expr::select(
                (var(i) / i64c(ni)).eq(var(i) % i64c(ni)),
                f64c(1.0),
                f64c(0.0),
            );
            st(k, args, ctx, (zb, F64), var(tbase) + var(i), one)
        })?;
        let failed = k.let_("failed", DType::Bool, var(bad));
        try_if(k, var(bad).eq(Expr::bool(false)), |k| {
            // Hessenberg reduction.
            try_for(k, kk, (i64c(0), i64c((ni - 2).max(0)), i64c(1)), |k| {
                try_for(k, i, (var(kk) + i64c(1), i64c(ni), i64c(1)), |k| {
                    let x = ldb(k, args, ctx, tb, m.at(var(i), var(kk)))?;
                    st(k, args, ctx, (hb, F64), m.hv(var(i) - var(kk) - i64c(1)), x)
                })?;
                let len = i64c(ni - 1) - var(kk);
                similarity(
                    k,
                    args,
                    ctx,
                    &m,
                    len,
                    var(kk) + i64c(1),
                    var(kk),
                    i64c(ni - 1),
                )?;
                try_for(k, i, (var(kk) + i64c(2), i64c(ni), i64c(1)), |k| {
                    st(k, args, ctx, (tb, F64), m.at(var(i), var(kk)), f64c(0.0))
                })
            })?;
            let norm = k.let_("norm", F64, f64c(0.0));
            try_for(k, i, (i64c(0), i64c(ni * ni), i64c(1)), |k| {
                let x = ldb(k, args, ctx, tb, var(tbase) + var(i))?;
                k.assign(norm, var(norm).max(abs(x)));
                Ok(())
            })?;
            let hi = k.let_("hi", I64, i64c(ni - 1));
            let iter = k.let_("iter", I64, i64c(0));
            let total = k.let_("total", I64, i64c(0));
            let lo = k.var("lo", I64);
            let searching = k.var("searching", DType::Bool);
            let go = var(hi).gt(i64c(0)).and(var(failed).eq(Expr::bool(false)));
            try_while(k, go, |k| {
                k.assign(lo, var(hi));
                k.assign(searching, Expr::bool(true));
                let look = var(searching).and(var(lo).gt(i64c(0)));
                try_while(k, look, |k| {
                    let p = ldb(k, args, ctx, tb, m.at(var(lo) - i64c(1), var(lo) - i64c(1)))?;
                    let q = ldb(k, args, ctx, tb, m.at(var(lo), var(lo)))?;
                    let s = k.let_("ds", F64, abs(p) + abs(q));
                    let s = Expr::select(var(s).eq(f64c(0.0)), var(norm), var(s));
                    let sub = ldb(k, args, ctx, tb, m.at(var(lo), var(lo) - i64c(1)))?;
                    let small = abs(sub).le(f64c(f64::EPSILON) * s);
                    try_if_else(
                        k,
                        small,
                        |k| {
                            k.assign(searching, Expr::bool(false));
                            let at = m.at(var(lo), var(lo) - i64c(1));
                            st(k, args, ctx, (tb, F64), at, f64c(0.0))
                        },
                        |k| {
                            k.assign(lo, var(lo) - i64c(1));
                            Ok(())
                        },
                    )
                })?;
                try_if_else(
                    k,
                    var(lo).eq(var(hi)),
                    |k| {
                        k.assign(hi, var(hi) - i64c(1));
                        k.assign(iter, i64c(0));
                        Ok(())
                    },
                    |k| {
                        let pair = k.let_("pair", DType::Bool, (var(lo) + i64c(1)).eq(var(hi)));
                        try_if(k, var(pair), |k| {
                            split_block(k, args, ctx, &m, var(lo))?;
                            k.assign(hi, (var(hi) - i64c(2)).max(i64c(0)));
                            k.assign(iter, i64c(0));
                            Ok(())
                        })?;
                        try_if(k, var(pair).eq(Expr::bool(false)), |k| {
                            francis(k, args, ctx, &m, (hi, lo, iter, total, failed))
                        })
                    },
                )
            })?;
            try_for(k, i, (i64c(0), i64c(ni), i64c(1)), |k| {
                try_for(
                    k,
                    j,
                    (i64c(0), (var(i) - i64c(1)).max(i64c(0)), i64c(1)),
                    |k| st(k, args, ctx, (tb, F64), m.at(var(i), var(j)), f64c(0.0)),
                )
            })
        })?;
        let nan = f64c(f64::NAN);
        try_for(k, i, (i64c(0), i64c(ni * ni), i64c(1)), |k| {
            let at = var(tbase) + var(i);
            let t = ldb(k, args, ctx, tb, at.clone())?;
            st(
                k,
                args,
                ctx,
                t_out,
                at.clone(),
                Expr::select(var(failed), nan.clone(), t),
            )?;
            if let Some(z_out) = z_out {
                let z = ldb(k, args, ctx, zb, at.clone())?;
                st(
                    k,
                    args,
                    ctx,
                    z_out,
                    at,
                    Expr::select(var(failed), nan.clone(), z),
                )?;
            }
            Ok(())
        })
    })?;
    steps.extend(step);
    Ok(())
}

/// One Francis double-shift step on the active block `lo..=hi` (the
/// interpreter's loop body), or `failed` past `100 n` steps.
fn francis(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    m: &Mats,
    (hi, lo, iter, total, failed): (Var, Var, Var, Var, Var),
) -> Result<(), IrError> {
    let n = m.n;
    k.assign(total, var(total) + i64c(1));
    try_if_else(
        k,
        var(total).gt(i64c(100 * n.max(1))),
        |k| {
            k.assign(failed, Expr::bool(true));
            Ok(())
        },
        |k| {
            k.assign(iter, var(iter) + i64c(1));
            let t = |k: &mut KernelBuilder, args: &mut Args, i: Expr, j: Expr| {
                ldb(k, args, ctx, m.t, m.at(i, j))
            };
            let (h1, h2) = (var(hi) - i64c(1), var(hi) - i64c(2));
            let e1 = t(k, args, var(hi), h1.clone())?;
            let e2 = t(k, args, h1.clone(), h2.clone())?;
            let e = k.let_("fe", F64, abs(e1) + abs(e2));
            let a = t(k, args, h1.clone(), h1.clone())?;
            let a = k.let_("fa", F64, a);
            let b = t(k, args, h1.clone(), var(hi))?;
            let c = t(k, args, var(hi), h1.clone())?;
            let dd = t(k, args, var(hi), var(hi))?;
            let d = k.let_("fd", F64, dd);
            let exceptional = (var(iter) % i64c(10)).eq(i64c(0));
            let s = k.let_(
                "fs",
                F64,
                Expr::select(exceptional.clone(), f64c(1.5) * var(e), var(a) + var(d)),
            );
            let tt = k.let_(
                "ftt",
                F64,
                Expr::select(exceptional, var(e) * var(e), var(a) * var(d) - b * c),
            );
            let l1 = var(lo) + i64c(1);
            let h00 = t(k, args, var(lo), var(lo))?;
            let h00 = k.let_("h00", F64, h00);
            let h01 = t(k, args, var(lo), l1.clone())?;
            let h10 = t(k, args, l1.clone(), var(lo))?;
            let h10 = k.let_("h10", F64, h10);
            let h11 = t(k, args, l1.clone(), l1.clone())?;
            let h21 = t(k, args, var(lo) + i64c(2), l1)?;
            let x = k.let_(
                "fx",
                F64,
                var(h00) * var(h00) + h01 * var(h10) - var(s) * var(h00) + var(tt),
            );
            let y = k.let_("fy", F64, var(h10) * (var(h00) + h11 - var(s)));
            let w = k.let_("fw", F64, var(h10) * h21);
            let kk = k.var("fk", I64);
            try_for(k, kk, (var(lo), var(hi) - i64c(1), i64c(1)), |k| {
                let first = Expr::select(var(kk).gt(var(lo)), var(kk) - i64c(1), var(lo));
                st(k, args, ctx, (m.h, F64), m.hv(i64c(0)), var(x))?;
                st(k, args, ctx, (m.h, F64), m.hv(i64c(1)), var(y))?;
                st(k, args, ctx, (m.h, F64), m.hv(i64c(2)), var(w))?;
                let last = (var(kk) + i64c(3)).min(var(hi));
                similarity(k, args, ctx, m, i64c(3), var(kk), first, last)?;
                try_if(k, var(kk).gt(var(lo)), |k| {
                    let c0 = var(kk) - i64c(1);
                    st(
                        k,
                        args,
                        ctx,
                        (m.t, F64),
                        m.at(var(kk) + i64c(1), c0.clone()),
                        f64c(0.0),
                    )?;
                    st(
                        k,
                        args,
                        ctx,
                        (m.t, F64),
                        m.at(var(kk) + i64c(2), c0),
                        f64c(0.0),
                    )
                })?;
                let nx = t(k, args, var(kk) + i64c(1), var(kk))?;
                k.assign(x, nx);
                let ny = t(k, args, var(kk) + i64c(2), var(kk))?;
                k.assign(y, ny);
                try_if(k, (var(kk) + i64c(3)).le(var(hi)), |k| {
                    let nw = t(k, args, var(kk) + i64c(3), var(kk))?;
                    k.assign(w, nw);
                    Ok(())
                })
            })?;
            st(k, args, ctx, (m.h, F64), m.hv(i64c(0)), var(x))?;
            st(k, args, ctx, (m.h, F64), m.hv(i64c(1)), var(y))?;
            similarity(k, args, ctx, m, i64c(2), h1, h2, var(hi))?;
            st(
                k,
                args,
                ctx,
                (m.t, F64),
                m.at(var(hi), var(hi) - i64c(2)),
                f64c(0.0),
            )
        },
    )
}
