//! The cumulative ops (`cumsum`, `cumprod`, `cummax`, `cummin`,
//! `cumlogsumexp`, with `reverse`). Scans that are exactly associative —
//! integer and `bool` sums and products (wrapping), and max/min on every
//! dtype — run **one warp per line** (a shuffle scan per chunk of 32 with
//! a carried prefix). Float sums, products and `cumlogsumexp` run **one
//! thread per line** (grid-stride over the lines), scanning sequentially
//! in the interpreter's order, so that their results are bit-identical to
//! it (a parallel scan would reassociate and round differently).
//!
//! Semantics follow `ir::interp::ops::reduce::cumulative`: 16-bit floats
//! accumulate in `f32` rounded after every step; integers wrap; `cummax`
//! and `cummin` propagate NaN; on `bool` sum/max are `or` and prod/min
//! `and`; `cumlogsumexp` takes floats only.
//!
//! Invariant: every access is `line base + j · axis stride` with
//! `j < len`, inside the operand and the result (of the same shape).

use super::kernel::{
    compute, i64c, load, load_masked, loop_kernel, multi_index, round_to, store, strides, try_for,
    try_if, Args,
};
use super::plan::Step;
use super::reduction::{combine as reduce_combine, identity};
use super::{atom_type, bind_outputs, unsupported, Ctx, Env};
use crate::kir::{Expr, KernelBuilder, MathFn, ShuffleKind, UnOp};
use jaxon_ir::primitive::{CumulativeOp, CumulativeParams, ReduceOp};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// Lowers a cumulative equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &CumulativeParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = p.op.name();
    let arity = || IrError::Invalid(format!("{name}: wrong number of operands or results"));
    let a = match eqn.inputs.as_slice() {
        [a] => a,
        _ => return Err(arity()),
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    let axis = p.axis;
    if axis >= shape.len() {
        return Err(IrError::ty(
            name,
            format!("axis {axis} out of range for rank {}", shape.len()),
        ));
    }
    if p.op == CumulativeOp::Cumlogsumexp && !d.is_float() {
        return Err(IrError::UnsupportedDType {
            primitive: name.into(),
            dtype: d,
        });
    }
    let x = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, out_shape) = outs.first().cloned().ok_or_else(arity)?;
    if out_shape != shape {
        return Err(IrError::ty(name, "result shape differs from the operand"));
    }
    let len = shape[axis];
    if len == 0 {
        return Ok(());
    }
    let st = strides(&shape);
    let mut lines = shape.clone();
    lines.remove(axis);
    let line_strides: Vec<i64> = (0..shape.len())
        .filter(|&q| q != axis)
        .map(|q| st[q])
        .collect();
    let ast = st[axis];
    let (op, reverse) = (p.op, p.reverse);
    if let Some(rop) = exact_reduce_op(op, d) {
        let n_lines: usize = lines.iter().product();
        let geo = LineGeometry {
            lines: &lines,
            line_strides: &line_strides,
            len,
            ast,
            reverse,
        };
        let step = super::reduction::warp_kernel(ctx, name, n_lines, |k, args, ctx, o| {
            warp_scan(k, args, ctx, rop, d, x, out, &geo, o)
        })?;
        steps.extend(step);
        return Ok(());
    }
    let step = loop_kernel(ctx, name, &lines, |k, args, ctx, _, idx| {
        let base = k.let_(
            "base",
            DType::I64,
            super::kernel::affine(0, &line_strides, idx),
        );
        let at = |j: Expr| {
            let pos = if reverse { i64c(len as i64 - 1) - j } else { j };
            Expr::var(base) + pos * i64c(ast)
        };
        let first = load(k, args, ctx, x, at(i64c(0)))?;
        let acc = k.let_("acc", compute(d), first);
        store(k, args, ctx, out, at(i64c(0)), Expr::var(acc))?;
        let j = k.var("j", DType::I64);
        let mut res = Ok(());
        k.for_(j, i64c(1), i64c(len as i64), i64c(1), |k| {
            res = scan_step(k, args, ctx, op, d, acc, x, out, at(Expr::var(j)));
        });
        res
    })?;
    steps.extend(step);
    Ok(())
}

/// The reduction whose scan `op` is on `d`, when it is associative and
/// commutative *exactly* (integers wrap, `bool`, and max/min on every
/// dtype): those scans run warp-parallel and still match the sequential
/// interpreter bit for bit. Float sums, products and `cumlogsumexp` would
/// round differently when reassociated, so they stay sequential.
fn exact_reduce_op(op: CumulativeOp, d: DType) -> Option<ReduceOp> {
    match op {
        CumulativeOp::Cummax => Some(ReduceOp::Max),
        CumulativeOp::Cummin => Some(ReduceOp::Min),
        CumulativeOp::Cumsum if !d.is_float() => Some(ReduceOp::Sum),
        CumulativeOp::Cumprod if !d.is_float() => Some(ReduceOp::Prod),
        CumulativeOp::Cumsum | CumulativeOp::Cumprod | CumulativeOp::Cumlogsumexp => None,
    }
}

/// Where the lines of a scan lie.
struct LineGeometry<'a> {
    lines: &'a [usize],
    line_strides: &'a [i64],
    len: usize,
    ast: i64,
    reverse: bool,
}

/// One warp scans line `o` in chunks of 32: each lane loads one element,
/// a Hillis-Steele inclusive scan with `shfl.up` combines the chunk, the
/// carry of the previous chunks is folded in, and lane 31's result is the
/// next carry. The chunk loop is warp-uniform, so every shuffle is full.
#[allow(clippy::too_many_arguments)]
fn warp_scan(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    op: ReduceOp,
    d: DType,
    x: super::Value,
    out: super::plan::BufId,
    geo: &LineGeometry<'_>,
    o: Expr,
) -> Result<(), IrError> {
    let acc_t = super::reduction::acc_dtype(d);
    let idx = multi_index(k, o, geo.lines);
    let base = k.let_(
        "base",
        DType::I64,
        super::kernel::affine(0, geo.line_strides, &idx),
    );
    let (len, ast, reverse) = (geo.len as i64, geo.ast, geo.reverse);
    let carry = k.let_("carry", acc_t, identity(op, d));
    let chunk = k.var("chunk", DType::I64);
    try_for(k, chunk, (i64c(0), i64c(len), i64c(32)), |k| {
        let j = k.let_(
            "j",
            DType::I64,
            Expr::var(chunk) + Expr::lane().cast(DType::I64),
        );
        let inb = k.let_("inb", DType::Bool, Expr::var(j).lt(i64c(len)));
        let pos = if reverse {
            i64c(len - 1) - Expr::var(j)
        } else {
            Expr::var(j)
        };
        let e = k.let_("e", DType::I64, Expr::var(base) + pos * i64c(ast));
        let xv = load_masked(k, args, ctx, x, Expr::var(e), Expr::var(inb))?;
        let xv = if compute(d) != acc_t {
            xv.cast(acc_t)
        } else {
            xv
        };
        let v = k.let_(
            "v",
            acc_t,
            Expr::select(Expr::var(inb), xv, identity(op, d)),
        );
        let t = k.var("t", acc_t);
        for off in [1u32, 2, 4, 8, 16] {
            k.shuffle(t, ShuffleKind::Up, Expr::var(v), Expr::u32(off), 32);
            let next = reduce_combine(op, d, Expr::var(t), Expr::var(v));
            k.assign(
                v,
                Expr::select(Expr::lane().ge(Expr::u32(off)), next, Expr::var(v)),
            );
        }
        k.assign(v, reduce_combine(op, d, Expr::var(carry), Expr::var(v)));
        let r = if compute(d) != acc_t {
            Expr::var(v).cast(compute(d))
        } else {
            Expr::var(v)
        };
        try_if(k, Expr::var(inb), |k| {
            store(k, args, ctx, out, Expr::var(e), r)
        })?;
        k.shuffle(carry, ShuffleKind::Idx, Expr::var(v), Expr::u32(31), 32);
        Ok(())
    })
}

/// One step of the scan: `acc = op(acc, x[e])`, stored to `out[e]`.
#[allow(clippy::too_many_arguments)]
fn scan_step(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    op: CumulativeOp,
    d: DType,
    acc: crate::kir::Var,
    x: super::Value,
    out: super::plan::BufId,
    e: Expr,
) -> Result<(), IrError> {
    let e = k.let_("e", DType::I64, e);
    let v = load(k, args, ctx, x, Expr::var(e))?;
    let v = k.let_("v", compute(d), v);
    let next = combine(k, op, d, Expr::var(acc), Expr::var(v))?;
    k.assign(acc, next);
    store(k, args, ctx, out, Expr::var(e), Expr::var(acc))
}

/// `op(a, b)` on compute-dtype values of storage dtype `d`.
pub(crate) fn combine(
    k: &mut KernelBuilder,
    op: CumulativeOp,
    d: DType,
    a: Expr,
    b: Expr,
) -> Result<Expr, IrError> {
    if d.is_bool() {
        return Ok(match op {
            CumulativeOp::Cumsum | CumulativeOp::Cummax => a.or(b),
            CumulativeOp::Cumprod | CumulativeOp::Cummin => a.and(b),
            CumulativeOp::Cumlogsumexp => return Err(unsupported(op.name(), "bool operands")),
        });
    }
    Ok(match op {
        CumulativeOp::Cumsum => round_to(d, a + b),
        CumulativeOp::Cumprod => round_to(d, a * b),
        CumulativeOp::Cummax => a.max(b),
        CumulativeOp::Cummin => a.min(b),
        CumulativeOp::Cumlogsumexp => round_to(d, logaddexp(k, compute(d), a, b)),
    })
}

/// `log(e^a + e^b)` as the interpreter computes it: NaN in, NaN out; the
/// larger operand alone when the smaller is `-inf` or the larger `+inf`;
/// else `hi + log1p(exp(lo - hi))`.
pub(crate) fn logaddexp(k: &mut KernelBuilder, c: DType, a: Expr, b: Expr) -> Expr {
    let a = k.let_("la", c, a);
    let b = k.let_("lb", c, b);
    let gt = Expr::var(a).gt(Expr::var(b));
    let hi = k.let_(
        "hi",
        c,
        Expr::select(gt.clone(), Expr::var(a), Expr::var(b)),
    );
    let lo = k.let_("lo", c, Expr::select(gt, Expr::var(b), Expr::var(a)));
    let nan = Expr::var(a)
        .unary(UnOp::IsNan)
        .or(Expr::var(b).unary(UnOp::IsNan));
    let edge = Expr::var(lo)
        .eq(Expr::constant(c, f64::NEG_INFINITY))
        .or(Expr::var(hi).eq(Expr::constant(c, f64::INFINITY)));
    let general = Expr::var(hi)
        + (Expr::var(lo) - Expr::var(hi))
            .math(MathFn::Exp)
            .math(MathFn::Log1p);
    Expr::select(
        nan,
        Expr::var(a) + Expr::var(b),
        Expr::select(edge, Expr::var(hi), general),
    )
}
