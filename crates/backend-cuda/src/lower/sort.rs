//! `sort` (several operands, `num_keys` lexicographic keys) and `top_k`.
//! Sorts of lines that fit a block's shared memory are a bitonic sort
//! (`bitonic`); other sorts and every `top_k` are **rank kernels**: one
//! thread per element computes the element's final position in its line —
//! the number of elements of the line that come before it — and writes
//! every operand there. Ranks of one line are a permutation, so every
//! output element is written exactly once, with no races and no shared
//! memory; ties break by the original position, so both are stable, as the
//! interpreter's (`ir::interp::ops::sort`) are. Cost: `len` comparisons per
//! element (quadratic in the line length).
//!
//! Orders follow the interpreter: `sort` puts NaNs (either sign) last and
//! equal, with `-0 == +0`; `top_k` is descending in the IEEE total order
//! (`+NaN` largest, `-0 < +0`), ties by the lower index, with `i32`
//! indices. `is_stable` is ignored: the sort is always stable.
//!
//! Invariant: reads are at `line base + j · stride` with `j < len`, writes
//! at `line base + rank · stride` with `rank < len` (or `< k`).

use super::kernel::{compute, i64c, load, loop_kernel, store, strides, try_for, try_if, Args};
use super::plan::{BufId, Step};
use super::{atom_type, bind_outputs, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder, UnOp};
use jaxon_ir::primitive::{SortParams, TopKParams};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// A key value as compared: the loaded value and its storage dtype.
pub(crate) struct Key {
    pub d: DType,
    pub v: Expr,
}

/// `a < b` and `a == b` in `sort`'s order (NaNs last and equal).
pub(crate) fn sort_cmp(a: &Key, b: &Key) -> (Expr, Expr) {
    if a.d.is_float() {
        let (an, bn) = (
            a.v.clone().unary(UnOp::IsNan),
            b.v.clone().unary(UnOp::IsNan),
        );
        let lt =
            a.v.clone()
                .lt(b.v.clone())
                .or(an.clone().unary(UnOp::Not).and(bn.clone()));
        let eq = a.v.clone().eq(b.v.clone()).or(an.and(bn));
        (lt, eq)
    } else if a.d.is_bool() {
        let (x, y) = (a.v.clone().cast(DType::U32), b.v.clone().cast(DType::U32));
        (x.clone().lt(y.clone()), x.eq(y))
    } else {
        (a.v.clone().lt(b.v.clone()), a.v.clone().eq(b.v.clone()))
    }
}

/// `x`'s key in `top_k`'s total order, as an integer (floats: their bits
/// with the magnitude bits flipped below zero, as the interpreter does).
pub(crate) fn total_key(d: DType, x: Expr) -> Expr {
    match compute(d) {
        DType::F32 => {
            let b = x.bitcast(DType::I32);
            Expr::select(
                b.clone().lt(Expr::i32(0)),
                b.clone() ^ Expr::i32(i32::MAX),
                b,
            )
        }
        DType::F64 => {
            let b = x.bitcast(DType::I64);
            Expr::select(b.clone().lt(i64c(0)), b.clone() ^ i64c(i64::MAX), b)
        }
        DType::Bool => x.cast(DType::U32),
        _ => x,
    }
}

fn arity(name: &str) -> IrError {
    IrError::Invalid(format!("{name}: wrong number of operands or results"))
}

/// The line geometry of element multi-index `idx` along `axis`: its
/// position in the line and the line's base offset.
fn line_of(k: &mut KernelBuilder, lin: &Expr, idx: &[Expr], axis: usize, ast: i64) -> (Expr, Expr) {
    let pos = k.let_("pos", DType::I64, idx[axis].clone());
    let base = k.let_("base", DType::I64, lin.clone() - Expr::var(pos) * i64c(ast));
    (Expr::var(pos), Expr::var(base))
}

/// Lowers `sort`.
pub(crate) fn sort(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &SortParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "sort";
    let first = eqn.inputs.first().ok_or_else(|| arity(name))?;
    let (_, shape) = atom_type(jaxpr, first)?;
    let axis = p.dimension;
    if axis >= shape.len() {
        return Err(IrError::ty(name, format!("dimension {axis} out of range")));
    }
    if p.num_keys == 0 || p.num_keys > eqn.inputs.len() || eqn.outputs.len() != eqn.inputs.len() {
        return Err(IrError::ty(
            name,
            format!("num_keys {} for {} operands", p.num_keys, eqn.inputs.len()),
        ));
    }
    let mut ops = Vec::new();
    for a in &eqn.inputs {
        let (d, s) = atom_type(jaxpr, a)?;
        if s != shape {
            return Err(IrError::ty(name, "operand shapes differ"));
        }
        ops.push((env.atom(a)?, d));
    }
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let outs: Vec<BufId> = outs.iter().map(|o| o.0).collect();
    let job = super::bitonic::SortJob {
        ops: &ops,
        outs: &outs,
        num_keys: p.num_keys,
        shape: &shape,
        axis,
    };
    if super::bitonic::try_sort(ctx, steps, &job)? {
        return Ok(());
    }
    let len = shape[axis] as i64;
    let ast = strides(&shape)[axis];
    let keys = &ops[..p.num_keys];
    let step = loop_kernel(ctx, name, &shape, |k, args, ctx, lin, idx| {
        let (pos, base) = line_of(k, lin, idx, axis, ast);
        let mine = load_keys(k, args, ctx, keys, lin.clone())?;
        let rank = k.let_("rank", DType::I64, i64c(0));
        let j = k.var("j", DType::I64);
        try_for(k, j, (i64c(0), i64c(len), i64c(1)), |k| {
            let e = base.clone() + Expr::var(j) * i64c(ast);
            let theirs = load_keys(k, args, ctx, keys, e)?;
            // Does element j come before this one: keys, then position.
            let mut before = Expr::var(j).lt(pos.clone());
            for (t, m) in theirs.iter().zip(&mine).rev() {
                let (lt, eq) = sort_cmp(t, m);
                before = lt.or(eq.and(before));
            }
            let b = k.let_("before", DType::Bool, before);
            k.assign(rank, Expr::var(rank) + Expr::var(b).cast(DType::I64));
            Ok(())
        })?;
        let dst = k.let_(
            "dst",
            DType::I64,
            base.clone() + Expr::var(rank) * i64c(ast),
        );
        for ((v, _), out) in ops.iter().zip(&outs) {
            let x = load(k, args, ctx, *v, lin.clone())?;
            store(k, args, ctx, *out, Expr::var(dst), x)?;
        }
        Ok(())
    })?;
    steps.extend(step);
    Ok(())
}

/// Loads the key operands at `e` into variables.
fn load_keys(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    keys: &[(Value, DType)],
    e: Expr,
) -> Result<Vec<Key>, IrError> {
    let e = k.let_("ke", DType::I64, e);
    keys.iter()
        .map(|(v, d)| {
            let x = load(k, args, ctx, *v, Expr::var(e))?;
            let x = k.let_("key", compute(*d), x);
            Ok(Key {
                d: *d,
                v: Expr::var(x),
            })
        })
        .collect()
}

/// Lowers `top_k`.
pub(crate) fn top_k(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &TopKParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "top_k";
    let a = match eqn.inputs.as_slice() {
        [a] => a,
        _ => return Err(arity(name)),
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let axis = p.axis;
    if axis >= shape.len() || p.k > shape[axis] {
        return Err(IrError::ty(
            name,
            format!("k={} and axis {axis} for shape {shape:?}", p.k),
        ));
    }
    let x = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (vals, idxs) = match outs.as_slice() {
        [(v, _, _), (i, DType::I32, _)] => (*v, *i),
        _ => return Err(arity(name)),
    };
    let mut oshape = shape.clone();
    oshape[axis] = p.k;
    let (ast, oast) = (strides(&shape)[axis], strides(&oshape)[axis]);
    let (len, kk) = (shape[axis] as i64, p.k as i64);
    let step = loop_kernel(ctx, name, &shape, |k, args, ctx, lin, idx| {
        let (pos, base) = line_of(k, lin, idx, axis, ast);
        // The output line's base: the same multi-index with position 0.
        let obase: Expr = idx
            .iter()
            .enumerate()
            .filter(|(q, _)| *q != axis)
            .map(|(q, e)| e.clone() * i64c(strides(&oshape)[q]))
            .fold(i64c(0), |acc, t| acc + t);
        let obase = k.let_("obase", DType::I64, obase);
        let xv = load(k, args, ctx, x, lin.clone())?;
        let xv = k.let_("xv", compute(d), xv);
        let kd = match compute(d) {
            DType::F32 => DType::I32,
            DType::F64 => DType::I64,
            DType::Bool => DType::U32,
            c => c,
        };
        let mine = k.let_("mk", kd, total_key(d, Expr::var(xv)));
        let rank = k.let_("rank", DType::I64, i64c(0));
        let j = k.var("j", DType::I64);
        try_for(k, j, (i64c(0), i64c(len), i64c(1)), |k| {
            let e = base.clone() + Expr::var(j) * i64c(ast);
            let t = load(k, args, ctx, x, e)?;
            let theirs = k.let_("tk", kd, total_key(d, t));
            // Descending; ties by the lower index.
            let before = Expr::var(theirs).gt(Expr::var(mine)).or(Expr::var(theirs)
                .eq(Expr::var(mine))
                .and(Expr::var(j).lt(pos.clone())));
            k.assign(rank, Expr::var(rank) + before.cast(DType::I64));
            Ok(())
        })?;
        try_if(k, Expr::var(rank).lt(i64c(kk)), |k| {
            let dst = k.let_(
                "dst",
                DType::I64,
                Expr::var(obase) + Expr::var(rank) * i64c(oast),
            );
            store(k, args, ctx, vals, Expr::var(dst), Expr::var(xv))?;
            store(
                k,
                args,
                ctx,
                idxs,
                Expr::var(dst),
                pos.clone().cast(DType::I32),
            )
        })
    })?;
    steps.extend(step);
    Ok(())
}
