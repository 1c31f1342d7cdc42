//! Control flow inside a `pallas_call` kernel, run by the whole thread
//! block: calls are inlined; `cond` branches, and `while`/`scan` loop, on
//! uniform scalars (the branch index, the predicate, the trip counter), so
//! every thread takes the same path and reaches the same barriers.
//!
//! Carries live in storage made once before the loop (a local for a scalar,
//! a region for an array); a body's results are copied back after each
//! iteration, through temporaries when a result is another carry's input
//! (a permutation), so no carry is overwritten before it is read.

use super::super::kernel::i64c;
use super::block::{in_kernel, BVal, Block};
use super::ops::shape_of;
use crate::kir::{Expr, Stmt};
use jaxon_ir::primitive::{
    CondParams, Control, CustomJvpCallParams, CustomVjpCallParams, JitParams, RematParams,
    ScanParams, WhileParams,
};
use jaxon_ir::{Atom, ClosedJaxpr, DType, Eqn, IrError, Jaxpr};

/// Lowers a control-flow equation of the kernel body.
pub(super) fn lower(
    b: &mut Block,
    eqn: &Eqn,
    p: &Control,
    ins: Vec<BVal>,
) -> Result<Vec<BVal>, IrError> {
    let name = eqn.primitive.name();
    match p {
        Control::Jit(JitParams { jaxpr, .. })
        | Control::CustomJvpCall(CustomJvpCallParams {
            call_jaxpr: jaxpr, ..
        })
        | Control::CustomVjpCall(CustomVjpCallParams {
            call_jaxpr: jaxpr, ..
        }) => call(b, jaxpr, ins),
        Control::Remat(RematParams { jaxpr, .. }) => b.run(jaxpr, &[], ins),
        Control::Cond(CondParams { branches, .. }) => cond(b, branches, ins),
        Control::While(w) => while_(b, w, ins),
        Control::Scan(s) => scan(b, s, ins),
        Control::ForLoop(_) | Control::CustomLinearSolve(_) | Control::ShardMap(_) => {
            Err(in_kernel(name))
        }
    }
}

fn call(b: &mut Block, j: &ClosedJaxpr, ins: Vec<BVal>) -> Result<Vec<BVal>, IrError> {
    b.run(&j.jaxpr, &j.consts, ins)
}

/// Storage for the results of a branch or loop, typed by `like`.
fn storage(b: &mut Block, like: &[BVal]) -> Result<Vec<BVal>, IrError> {
    like.iter().map(|v| b.storage_like(v)).collect()
}

/// `cond`: the clamped index selects one branch; each branch writes its
/// results into shared storage.
fn cond(b: &mut Block, branches: &[ClosedJaxpr], ins: Vec<BVal>) -> Result<Vec<BVal>, IrError> {
    let (index, ops) = ins
        .split_first()
        .ok_or_else(|| IrError::ty("cond", "missing the branch index"))?;
    let BVal::Scalar(ix, _) = index else {
        return Err(IrError::ty("cond", "the branch index is a scalar"));
    };
    let last = branches.len().saturating_sub(1) as i64;
    let sel = b.k.let_(
        "branch",
        DType::I64,
        ix.clone().cast(DType::I64).max(i64c(0)).min(i64c(last)),
    );
    let first = branches
        .first()
        .ok_or_else(|| IrError::ty("cond", "no branches"))?;
    let outs = result_storage(b, &first.jaxpr)?;
    for (i, br) in branches.iter().enumerate() {
        b.k.begin_body();
        let res = call(b, br, ops.to_vec()).and_then(|rs| copy_all(b, &outs, &rs));
        let then = b.k.end_body();
        res?;
        b.k.push(Stmt::If {
            cond: Expr::var(sel).eq(i64c(i as i64)),
            then,
            otherwise: Vec::new(),
        });
    }
    Ok(outs)
}

/// Fresh storage for the outputs of `j` (arrays or scalars of its types).
fn result_storage(b: &mut Block, j: &Jaxpr) -> Result<Vec<BVal>, IrError> {
    j.outvars
        .iter()
        .map(|a| {
            let aval = j
                .atom_aval(a)
                .ok_or_else(|| IrError::Invalid("cond: result without type".into()))?;
            let arr = aval
                .as_array()
                .ok_or_else(|| in_kernel("a cond returning a Ref"))?;
            let shape = arr
                .static_sizes()
                .ok_or_else(|| in_kernel("a dynamic shape"))?;
            if shape.is_empty() {
                let x = b.k.var("r", super::super::kernel::compute(arr.dtype));
                Ok(BVal::Scalar(Expr::var(x), arr.dtype))
            } else {
                Ok(BVal::Array(b.alloc(arr.dtype, &shape)?))
            }
        })
        .collect()
}

fn copy_all(b: &mut Block, dst: &[BVal], src: &[BVal]) -> Result<(), IrError> {
    if dst.len() != src.len() {
        return Err(IrError::Invalid(
            "pallas_call: a branch or body gives the wrong number of results".into(),
        ));
    }
    for (d, s) in dst.iter().zip(src) {
        b.assign(d, s)?;
    }
    Ok(())
}

/// Copies a body's results into the carries; through temporaries when a
/// result is the body's own input at another carry position.
fn update_carries(
    b: &mut Block,
    body: &Jaxpr,
    first_carry: usize,
    carries: &[BVal],
    results: &[BVal],
) -> Result<(), IrError> {
    let permuted = body
        .outvars
        .iter()
        .take(carries.len())
        .enumerate()
        .any(|(i, a)| match a {
            Atom::Var(v) => body
                .invars
                .iter()
                .position(|x| x == v)
                .is_some_and(|p| p >= first_carry && p != first_carry + i),
            Atom::Lit(_) => false,
        });
    let results = &results[..carries.len().min(results.len())];
    if permuted {
        let temps = storage(b, results)?;
        copy_all(b, carries, &temps)
    } else {
        copy_all(b, carries, results)
    }
}

fn while_(b: &mut Block, w: &WhileParams, ins: Vec<BVal>) -> Result<Vec<BVal>, IrError> {
    let (cn, bn) = (w.cond_nconsts, w.body_nconsts);
    if ins.len() < cn + bn {
        return Err(IrError::ty("while", "too few operands"));
    }
    let (cconsts, rest) = ins.split_at(cn);
    let (bconsts, init) = rest.split_at(bn);
    let carries = storage(b, init)?;
    let pred = b.k.var("pred", DType::Bool);
    let eval_pred = |b: &mut Block| -> Result<(), IrError> {
        let mut a = cconsts.to_vec();
        a.extend(carries.iter().cloned());
        match call(b, &w.cond_jaxpr, a)?.as_slice() {
            [BVal::Scalar(p, _)] => {
                b.k.assign(pred, p.clone());
                Ok(())
            }
            _ => Err(IrError::ty("while", "the predicate is one bool scalar")),
        }
    };
    eval_pred(b)?;
    b.k.begin_body();
    let res = (|| {
        let mut a = bconsts.to_vec();
        a.extend(carries.iter().cloned());
        let outs = call(b, &w.body_jaxpr, a)?;
        update_carries(b, &w.body_jaxpr.jaxpr, bn, &carries, &outs)?;
        eval_pred(b)
    })();
    let body = b.k.end_body();
    res?;
    b.k.push(Stmt::While {
        cond: Expr::var(pred),
        body,
    });
    Ok(carries)
}

fn scan(b: &mut Block, s: &ScanParams, ins: Vec<BVal>) -> Result<Vec<BVal>, IrError> {
    let (nc, nk) = (s.num_consts, s.num_carry);
    if ins.len() < nc + nk {
        return Err(IrError::ty("scan", "too few operands"));
    }
    let (consts, rest) = ins.split_at(nc);
    let (init, xs) = rest.split_at(nk);
    let carries = storage(b, init)?;
    let body = &s.jaxpr.jaxpr;
    // Stacked outputs: `[length, *item]` regions.
    let mut ys = Vec::new();
    for a in body.outvars.iter().skip(nk) {
        let aval = body
            .atom_aval(a)
            .ok_or_else(|| IrError::Invalid("scan: result without type".into()))?;
        let arr = aval
            .as_array()
            .ok_or_else(|| in_kernel("a scan over Refs"))?;
        let mut shape = arr
            .static_sizes()
            .ok_or_else(|| in_kernel("a dynamic shape"))?;
        shape.insert(0, s.length);
        ys.push(b.alloc(arr.dtype, &shape)?);
    }
    let i = b.k.var("it", DType::I64);
    b.k.begin_body();
    let res = (|| {
        let it = if s.reverse {
            b.k.let_("rit", DType::I64, i64c(s.length as i64 - 1) - Expr::var(i))
        } else {
            i
        };
        let mut args = consts.to_vec();
        args.extend(carries.iter().cloned());
        for x in xs {
            args.push(item(b, x, Expr::var(it))?);
        }
        let outs = call(b, &s.jaxpr, args)?;
        update_carries(b, body, nc, &carries, &outs)?;
        for (y, o) in ys.iter().zip(outs.iter().skip(nk)) {
            let n: usize = y.shape[1..].iter().product();
            let mut dst = y.clone();
            dst.base = dst.base + Expr::var(it) * i64c(n as i64);
            dst.shape.remove(0);
            b.assign(&BVal::Array(dst), o)?;
        }
        Ok(())
    })();
    let inner = b.k.end_body();
    res?;
    b.k.push(Stmt::For {
        var: i,
        start: i64c(0),
        end: i64c(s.length as i64),
        step: i64c(1),
        body: inner,
    });
    let mut out = carries;
    out.extend(ys.into_iter().map(BVal::Array));
    Ok(out)
}

/// Item `it` of a stacked scan operand: a view of its region (a scalar
/// loaded by every thread for rank-0 items).
fn item(b: &mut Block, x: &BVal, it: Expr) -> Result<BVal, IrError> {
    let BVal::Array(r) = x else {
        return Err(in_kernel("a scan over a scalar or a Ref"));
    };
    let shape = shape_of(x);
    let n: usize = shape[1..].iter().product();
    let mut r = r.clone();
    r.base = r.base + it * i64c(n as i64);
    r.shape.remove(0);
    if r.shape.is_empty() {
        let v = b.ld(r.space, r.dtype, r.base.clone(), None);
        let s = b.k.let_("x", super::super::kernel::compute(r.dtype), v);
        return Ok(BVal::Scalar(Expr::var(s), r.dtype));
    }
    Ok(BVal::Array(r))
}
