//! `svd` in KIR: the interpreter's one-sided Jacobi SVD
//! (`decomp_kernels::svd`) step for step in f64, one thread per matrix, so
//! the simulator is bit-identical to the interpreter.
//!
//! A wide matrix is decomposed through its transpose (read transposed, no
//! copy). The columns of the rotated matrix are ranked by norm (descending,
//! IEEE total order, stable), normalized where not negligible, and the
//! missing columns of `u` are completed by Gram–Schmidt (twice) on the unit
//! vectors in order, as `decomp_kernels::complete` does: a per-column state
//! (0 empty, 1 valid, 2 completed) gives the basis order — valid columns,
//! then completed ones, each ascending.

use super::decomp::{f64c, ld, ldb, matrices, st, var};
use super::decomp_jacobi::{rotation, total_key};
use super::kernel::{i64c, load, loop_kernel, store, try_for, try_if, Args};
use super::plan::Step;
use super::{atom_type, bind_outputs, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder, MathFn, UnOp};
use jaxon_ir::primitive::SvdParams;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

const F64: DType = DType::F64;
const I64: DType = DType::I64;
const SWEEPS: i64 = 100;

/// `svd a`: `(s,)` or `(s, u, vt)`.
pub(crate) fn svd(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &SvdParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "svd";
    let [a] = eqn.inputs.as_slice() else {
        return Err(IrError::Invalid(format!("{name}: expected one operand")));
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let (nb, m, n) = matrices(name, d, &shape)?;
    let av = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let want = if p.compute_uv { 3 } else { 1 };
    if outs.len() != want {
        return Err(IrError::Invalid(format!("{name}: expected {want} results")));
    }
    let s_out = (outs[0].0, outs[0].1);
    let uv_out = p
        .compute_uv
        .then(|| ((outs[1].0, outs[1].1), (outs[2].0, outs[2].1)));
    if nb * m * n == 0 {
        return Ok(());
    }
    // The tall problem: A (rows x cols, rows >= cols) is `a` or `aᵀ`.
    let tall = m >= n;
    let (rows, cols) = if tall { (m, n) } else { (n, m) };
    let uw = if p.full_matrices { rows } else { cols };
    let (ri, ci, wi, ni) = (rows as i64, cols as i64, uw as i64, n as i64);
    let ub = ctx.alloc(F64, &[nb * rows * cols])?;
    let vb = ctx.alloc(F64, &[nb * cols * cols])?;
    let nrm = ctx.alloc(F64, &[nb * cols])?;
    let rk = ctx.alloc(I64, &[nb * cols])?;
    let ob = ctx.alloc(F64, &[nb * rows * uw])?;
    let state = ctx.alloc(I64, &[nb * uw])?;
    let cand = ctx.alloc(F64, &[nb * rows])?;
    let step = loop_kernel(ctx, name, &[nb], |k, args, ctx, _, idx| {
        let b = idx[0].clone();
        let abase = k.let_("abase", I64, b.clone() * i64c(ri * ci));
        let vbase = k.let_("vbase", I64, b.clone() * i64c(ci * ci));
        let cbase = k.let_("cbase", I64, b.clone() * i64c(ci));
        let obase = k.let_("obase", I64, b.clone() * i64c(ri * wi));
        let wbase = k.let_("wbase", I64, b.clone() * i64c(wi));
        let rbase = k.let_("rbase", I64, b * i64c(ri));
        let ua = move |r: Expr, c: Expr| var(abase) + r * i64c(ci) + c;
        let va = move |r: Expr, c: Expr| var(vbase) + r * i64c(ci) + c;
        let oa = move |r: Expr, c: Expr| var(obase) + r * i64c(wi) + c;
        let ca = move |c: Expr| var(cbase) + c;
        let wa = move |c: Expr| var(wbase) + c;
        let xa = move |r: Expr| var(rbase) + r;
        let (r, c, t, q) = (
            k.var("r", I64),
            k.var("c", I64),
            k.var("t", I64),
            k.var("q", I64),
        );
        // U = A, V = I.
        try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
            try_for(k, c, (i64c(0), i64c(ci), i64c(1)), |k| {
                let src = if tall {
                    var(abase) + var(r) * i64c(ci) + var(c)
                } else {
                    var(abase) + var(c) * i64c(ni) + var(r)
                };
                let x = ld(k, args, ctx, av, d, src)?;
                st(k, args, ctx, (ub, F64), ua(var(r), var(c)), x)
            })
        })?;
        try_for(k, r, (i64c(0), i64c(ci), i64c(1)), |k| {
            try_for(k, c, (i64c(0), i64c(ci), i64c(1)), |k| {
                let one = Expr::select(var(r).eq(var(c)), f64c(1.0), f64c(0.0));
                st(k, args, ctx, (vb, F64), va(var(r), var(c)), one)
            })
        })?;
        sweeps(k, args, ctx, (ub, vb), (ri, ci), (ua, va))?;
        // Column norms and their ranks (descending, stable).
        let acc = k.var("acc", F64);
        try_for(k, c, (i64c(0), i64c(ci), i64c(1)), |k| {
            k.assign(acc, f64c(-0.0));
            try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                let x = ldb(k, args, ctx, ub, ua(var(r), var(c)))?;
                let x = k.let_("x", F64, x);
                k.assign(acc, var(acc) + var(x) * var(x));
                Ok(())
            })?;
            st(
                k,
                args,
                ctx,
                (nrm, F64),
                ca(var(c)),
                var(acc).math(MathFn::Sqrt),
            )
        })?;
        let rank = k.var("rank", I64);
        let tiny = k.let_("tiny", F64, f64c(0.0));
        try_for(k, c, (i64c(0), i64c(ci), i64c(1)), |k| {
            let nc = ldb(k, args, ctx, nrm, ca(var(c)))?;
            let nc = k.let_("nc", F64, nc);
            let kc = k.let_("kc", I64, total_key(var(nc)));
            k.assign(rank, i64c(0));
            try_for(k, t, (i64c(0), i64c(ci), i64c(1)), |k| {
                let nt = ldb(k, args, ctx, nrm, ca(var(t)))?;
                let kt = k.let_("kt", I64, total_key(nt));
                let before = var(kt)
                    .gt(var(kc))
                    .or(var(kt).eq(var(kc)).and(var(t).lt(var(c))));
                k.if_(before, |k| k.assign(rank, var(rank) + i64c(1)));
                Ok(())
            })?;
            k.if_(var(rank).eq(i64c(0)), |k| {
                k.assign(tiny, var(nc) * f64c(1e-13))
            });
            store(k, args, ctx, rk, ca(var(c)), var(rank))?;
            st(k, args, ctx, s_out, ca(var(rank)), var(nc))
        })?;
        let Some((u_out, vt_out)) = uv_out else {
            return Ok(());
        };
        // The valid columns of u, normalized, at their ranks.
        try_for(k, c, (i64c(0), i64c(wi), i64c(1)), |k| {
            store(k, args, ctx, state, wa(var(c)), i64c(0))?;
            try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                st(k, args, ctx, (ob, F64), oa(var(r), var(c)), f64c(0.0))
            })
        })?;
        try_for(k, c, (i64c(0), i64c(ci), i64c(1)), |k| {
            let nc = ldb(k, args, ctx, nrm, ca(var(c)))?;
            let nc = k.let_("nc", F64, nc);
            let kr = load(k, args, ctx, Value::Buf(rk), ca(var(c)))?;
            let kr = k.let_("kr", I64, kr);
            let valid = var(nc).gt(var(tiny)).and(var(nc).gt(f64c(0.0)));
            let in_u = var(kr).lt(i64c(wi));
            try_if(k, valid.and(in_u), |k| {
                store(k, args, ctx, state, wa(var(kr)), i64c(1))?;
                try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                    let x = ldb(k, args, ctx, ub, ua(var(r), var(c)))?;
                    st(k, args, ctx, (ob, F64), oa(var(r), var(kr)), x / var(nc))
                })
            })
        })?;
        complete(k, args, ctx, (ob, state, cand), (ri, wi), (oa, wa, xa))?;
        // u and vt, untransposed for a tall matrix.
        let (uo, vo) = (u_out, vt_out);
        try_for(k, r, (i64c(0), i64c(ci), i64c(1)), |k| {
            try_for(k, c, (i64c(0), i64c(ci), i64c(1)), |k| {
                let kr = load(k, args, ctx, Value::Buf(rk), ca(var(c)))?;
                let x = ldb(k, args, ctx, vb, va(var(r), var(c)))?;
                if tall {
                    // vt[rank(c), r] = V[r, c]
                    st(k, args, ctx, vo, var(vbase) + kr * i64c(ci) + var(r), x)
                } else {
                    // u[r, rank(c)] = V[r, c]
                    st(k, args, ctx, uo, var(vbase) + var(r) * i64c(ci) + kr, x)
                }
            })
        })?;
        try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
            try_for(k, q, (i64c(0), i64c(wi), i64c(1)), |k| {
                let x = ldb(k, args, ctx, ob, oa(var(r), var(q)))?;
                if tall {
                    st(k, args, ctx, uo, oa(var(r), var(q)), x)
                } else {
                    // vt[q, r] = us[r, q]
                    st(k, args, ctx, vo, var(obase) + var(q) * i64c(ri) + var(r), x)
                }
            })
        })
    })?;
    steps.extend(step);
    Ok(())
}

/// The one-sided Jacobi sweeps on `U` (`rows x cols`) and `V`, until a
/// sweep rotates nothing (at most [`SWEEPS`]).
#[allow(clippy::type_complexity)]
fn sweeps(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    (ub, vb): (super::plan::BufId, super::plan::BufId),
    (ri, ci): (i64, i64),
    (ua, va): (
        impl Fn(Expr, Expr) -> Expr + Copy,
        impl Fn(Expr, Expr) -> Expr + Copy,
    ),
) -> Result<(), IrError> {
    let go = k.let_("go", DType::Bool, Expr::bool(true));
    let rotated = k.var("rotated", DType::Bool);
    let (sweep, pp, qq, r) = (
        k.var("sweep", I64),
        k.var("p", I64),
        k.var("qq", I64),
        k.var("rr", I64),
    );
    let (al, be, ga) = (k.var("al", F64), k.var("be", F64), k.var("ga", F64));
    let (c, sn) = (k.var("cs", F64), k.var("sn", F64));
    let rotate = |k: &mut KernelBuilder,
                  args: &mut Args,
                  buf: super::plan::BufId,
                  n: i64,
                  at: &dyn Fn(Expr, Expr) -> Expr| {
        try_for(k, r, (i64c(0), i64c(n), i64c(1)), |k| {
            let xp = ldb(k, args, ctx, buf, at(var(r), var(pp)))?;
            let xp = k.let_("xp", F64, xp);
            let xq = ldb(k, args, ctx, buf, at(var(r), var(qq)))?;
            let xq = k.let_("xq", F64, xq);
            let yp = var(c) * var(xp) - var(sn) * var(xq);
            let yq = var(sn) * var(xp) + var(c) * var(xq);
            st(k, args, ctx, (buf, F64), at(var(r), var(pp)), yp)?;
            st(k, args, ctx, (buf, F64), at(var(r), var(qq)), yq)
        })
    };
    try_for(k, sweep, (i64c(0), i64c(SWEEPS), i64c(1)), |k| {
        try_if(k, var(go), |k| {
            k.assign(rotated, Expr::bool(false));
            try_for(k, pp, (i64c(0), i64c(ci), i64c(1)), |k| {
                try_for(k, qq, (var(pp) + i64c(1), i64c(ci), i64c(1)), |k| {
                    for v in [al, be, ga] {
                        k.assign(v, f64c(-0.0));
                    }
                    try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                        let xp = ldb(k, args, ctx, ub, ua(var(r), var(pp)))?;
                        let xp = k.let_("xp", F64, xp);
                        let xq = ldb(k, args, ctx, ub, ua(var(r), var(qq)))?;
                        let xq = k.let_("xq", F64, xq);
                        k.assign(al, var(al) + var(xp) * var(xp));
                        k.assign(be, var(be) + var(xq) * var(xq));
                        k.assign(ga, var(ga) + var(xp) * var(xq));
                        Ok(())
                    })?;
                    let small = var(ga)
                        .unary(UnOp::Abs)
                        .le(f64c(1e-16) * (var(al) * var(be)).math(MathFn::Sqrt));
                    let skip = var(ga).eq(f64c(0.0)).or(small);
                    try_if(k, skip.unary(UnOp::Not), |k| {
                        k.assign(rotated, Expr::bool(true));
                        rotation(k, (var(al), var(be), var(ga)), c, sn);
                        rotate(k, args, ub, ri, &ua)?;
                        rotate(k, args, vb, ci, &va)
                    })
                })
            })?;
            k.if_(var(rotated).unary(UnOp::Not), |k| {
                k.assign(go, Expr::bool(false))
            });
            Ok(())
        })
    })
}

/// `decomp_kernels::complete`: fills the empty columns of `ob` (`rows x
/// want`, `state` 0) with unit vectors orthogonalized (twice) against the
/// basis so far, skipping those whose remainder has norm <= 0.5.
#[allow(clippy::type_complexity)]
fn complete(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    (ob, state, cand): (super::plan::BufId, super::plan::BufId, super::plan::BufId),
    (ri, wi): (i64, i64),
    (oa, wa, xa): (
        impl Fn(Expr, Expr) -> Expr + Copy,
        impl Fn(Expr) -> Expr + Copy,
        impl Fn(Expr) -> Expr + Copy,
    ),
) -> Result<(), IrError> {
    let e = k.let_("e", I64, i64c(0));
    let (slot, r, pass, kind, bcol) = (
        k.var("slot", I64),
        k.var("r2", I64),
        k.var("pass", I64),
        k.var("kind", I64),
        k.var("bcol", I64),
    );
    let searching = k.var("searching", DType::Bool);
    let (dot, nrm2) = (k.var("dot", F64), k.var("nrm2", F64));
    try_for(k, slot, (i64c(0), i64c(wi), i64c(1)), |k| {
        let s0 = load(k, args, ctx, Value::Buf(state), wa(var(slot)))?;
        try_if(k, s0.eq(i64c(0)), |k| {
            k.assign(searching, Expr::bool(true));
            let cont = var(searching).and(var(e).lt(i64c(ri)));
            let mut res = Ok(());
            k.while_(cont, |k| {
                res = (|| {
                    try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                        let one = Expr::select(var(r).eq(var(e)), f64c(1.0), f64c(0.0));
                        st(k, args, ctx, (cand, F64), xa(var(r)), one)
                    })?;
                    k.assign(e, var(e) + i64c(1));
                    // Two passes over the basis: valid columns, then
                    // completed ones, each in column order.
                    try_for(k, pass, (i64c(0), i64c(2), i64c(1)), |k| {
                        try_for(k, kind, (i64c(1), i64c(3), i64c(1)), |k| {
                            try_for(k, bcol, (i64c(0), i64c(wi), i64c(1)), |k| {
                                let sb = load(k, args, ctx, Value::Buf(state), wa(var(bcol)))?;
                                try_if(k, sb.eq(var(kind)), |k| {
                                    k.assign(dot, f64c(-0.0));
                                    try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                                        let bv = ldb(k, args, ctx, ob, oa(var(r), var(bcol)))?;
                                        let uv = ldb(k, args, ctx, cand, xa(var(r)))?;
                                        k.assign(dot, var(dot) + bv * uv);
                                        Ok(())
                                    })?;
                                    try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                                        let bv = ldb(k, args, ctx, ob, oa(var(r), var(bcol)))?;
                                        let uv = ldb(k, args, ctx, cand, xa(var(r)))?;
                                        let y = uv - var(dot) * bv;
                                        st(k, args, ctx, (cand, F64), xa(var(r)), y)
                                    })
                                })
                            })
                        })
                    })?;
                    k.assign(nrm2, f64c(-0.0));
                    try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                        let uv = ldb(k, args, ctx, cand, xa(var(r)))?;
                        let uv = k.let_("uv", F64, uv);
                        k.assign(nrm2, var(nrm2) + var(uv) * var(uv));
                        Ok(())
                    })?;
                    k.assign(nrm2, var(nrm2).math(MathFn::Sqrt));
                    try_if(k, var(nrm2).gt(f64c(0.5)), |k| {
                        k.assign(searching, Expr::bool(false));
                        store(k, args, ctx, state, wa(var(slot)), i64c(2))?;
                        try_for(k, r, (i64c(0), i64c(ri), i64c(1)), |k| {
                            let uv = ldb(k, args, ctx, cand, xa(var(r)))?;
                            st(
                                k,
                                args,
                                ctx,
                                (ob, F64),
                                oa(var(r), var(slot)),
                                uv / var(nrm2),
                            )
                        })
                    })
                })();
            });
            res
        })
    })
}
