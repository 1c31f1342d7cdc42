//! Dynamic-shape reductions: `reduce_*` along any axes (one warp per
//! output element, lanes striding over the reduced elements, shuffles
//! combining them, as the static lowering does), `argmax`/`argmin` along
//! one axis and the cumulative family (`cumsum`, `cumprod`, `cummax`,
//! `cummin`, `cumlogsumexp`) along one axis, one thread per output element
//! or per line walking it in order (so cumulative sums round as the
//! interpreter's do), and `sort` (several operands, `num_keys`
//! lexicographic keys) as the static lowering's rank kernel: one thread
//! per element counts the elements of its line that come before it (keys,
//! then position: stable, NaNs last) and writes every operand there, so
//! each output element is written once (quadratic in the line length);
//! `top_k` likewise, descending in the IEEE total order, ties by the lower
//! index.
//!
//! Invariants: the kernels are built once with sizes and strides as size
//! parameters; `argmax`/`argmin` give the first index of the extremum, the
//! first NaN winning; an empty axis is an error at the call, as in the
//! interpreter (`SStep::Require`), and so is `top_k` of more elements than
//! its axis has.

use super::build::{
    bind_outputs, cannot, gather, load, loop_kernel, multi_index, offset, store, ty, SArgs, Scope,
    B,
};
use super::sym::{strides, Sz, SzOp};
use super::SStep;
use crate::kir::{Expr, KernelBuilder, ShuffleKind, UnOp};
use crate::lower::kernel::{compute, finish, i64c, THREADS};
use crate::lower::plan::BufId;
use crate::lower::reduction::{acc_dtype, combine, identity};
use jaxon_ir::primitive::{
    ArgOp, ArgReduceParams, CumulativeParams, ReduceOp, ReduceParams, Reduction, SortParams,
    TopKParams,
};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

fn one_output(q: &Eqn) -> Result<(), IrError> {
    if q.outputs.len() != 1 || q.inputs.is_empty() {
        return Err(IrError::Invalid(format!(
            "{}: expected one output and an operand",
            q.primitive.name()
        )));
    }
    Ok(())
}

/// Lowers a reduction equation.
pub(crate) fn lower(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &Reduction,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let ReduceParams { op, axes, .. } = match p {
        Reduction::Reduce(rp) => rp,
        Reduction::ArgReduce(ap) => return arg_reduce(b, jaxpr, q, ap, scope, steps),
        Reduction::Cumulative(cp) => return cumulative(b, jaxpr, q, cp, scope, steps),
        Reduction::Sort(sp) => return sort(b, jaxpr, q, sp, scope, steps),
        Reduction::TopK(tp) => return top_k(b, jaxpr, q, tp, scope, steps),
    };
    one_output(q)?;
    let x = scope.atom(&q.inputs[0])?;
    let (xdt, xs) = ty(jaxpr, scope, &q.inputs[0])?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, odt, _) = outs[0].clone();
    let red = Reduce {
        q,
        op: *op,
        axes,
        xdt,
        xs: &xs,
        out,
        odt,
    };
    reduce_kernel(b, steps, &red, |k, args, b, at| load(k, args, b, x, at))
}

/// A reduction to lower: its equation, operand type and result buffer.
pub(crate) struct Reduce<'a> {
    pub q: &'a Eqn,
    pub op: ReduceOp,
    pub axes: &'a [usize],
    pub xdt: DType,
    pub xs: &'a [Sz],
    pub out: BufId,
    pub odt: DType,
}

/// The warp-per-output reduction kernel of `r`; `value` gives the
/// operand's element at a linear index (a load, or fused producers
/// evaluated there).
pub(crate) fn reduce_kernel(
    b: &mut B,
    steps: &mut Vec<SStep>,
    r: &Reduce<'_>,
    mut value: impl FnMut(&mut KernelBuilder, &mut SArgs, &B, Expr) -> Result<Expr, IrError>,
) -> Result<(), IrError> {
    let Reduce {
        q,
        op,
        axes,
        xdt,
        xs,
        out,
        odt,
    } = *r;
    if axes.iter().any(|&a| a >= xs.len()) {
        return Err(IrError::ty(q.primitive.name(), "axis out of range"));
    }
    let xst = strides(xs);
    let kept: Vec<usize> = (0..xs.len()).filter(|d| !axes.contains(d)).collect();
    let red: Vec<usize> = (0..xs.len()).filter(|d| axes.contains(d)).collect();
    let kshape: Vec<Sz> = kept.iter().map(|&d| xs[d].clone()).collect();
    let rshape: Vec<Sz> = red.iter().map(|&d| xs[d].clone()).collect();
    let kst: Vec<Sz> = kept.iter().map(|&d| xst[d].clone()).collect();
    let rst: Vec<Sz> = red.iter().map(|&d| xst[d].clone()).collect();
    let nred = Sz::prod(&rshape);
    let nout = Sz::prod(&kshape);
    if nout == Sz::C(0) {
        return Ok(());
    }
    let acc_t = acc_dtype(xdt);
    // One warp per output element, in a warp-uniform grid-stride loop: its
    // lanes stride over the reduced elements, then combine by shuffles.
    let name = b.name(q.primitive.name());
    let mut k = KernelBuilder::new(&name, THREADS);
    let mut args = SArgs::new();
    let n_out = args.size(&mut k, &nout);
    let kdims: Vec<Expr> = kshape.iter().map(|s| args.size(&mut k, s)).collect();
    let rdims: Vec<Expr> = rshape.iter().map(|s| args.size(&mut k, s)).collect();
    let n_red = args.size(&mut k, &nred);
    let o = k.var("o", DType::I64);
    let start = (Expr::global_thread_id_x() / Expr::u32(32)).cast(DType::I64);
    let step = (Expr::grid_dim_x() * Expr::block_dim_x() / Expr::u32(32)).cast(DType::I64);
    let bref: &B = b;
    let mut res = Ok(());
    k.for_(o, start, n_out, step, |k| {
        res = (|| {
            let oi = multi_index(k, Expr::var(o), &kshape, &kdims);
            let base = offset(k, &mut args, &kst, &oi);
            let base = k.let_("base", DType::I64, base);
            let acc = k.let_("acc", acc_t, identity(op, xdt));
            let j = k.var("j", DType::I64);
            let mut inner = Ok(());
            k.for_(j, Expr::lane().cast(DType::I64), n_red, i64c(32), |k| {
                inner = (|| {
                    let ri = multi_index(k, Expr::var(j), &rshape, &rdims);
                    let at = Expr::var(base) + offset(k, &mut args, &rst, &ri);
                    let v = value(k, &mut args, bref, at)?;
                    let v = if compute(xdt) != acc_t {
                        v.cast(acc_t)
                    } else {
                        v
                    };
                    k.assign(acc, combine(op, xdt, Expr::var(acc), v));
                    Ok(())
                })();
            });
            inner?;
            let other = k.var("other", acc_t);
            for s in [16, 8, 4, 2, 1] {
                k.shuffle(other, ShuffleKind::Xor, Expr::var(acc), Expr::u32(s), 32);
                k.assign(acc, combine(op, xdt, Expr::var(acc), Expr::var(other)));
            }
            let v = if acc_t != compute(odt) {
                Expr::var(acc).cast(compute(odt))
            } else {
                Expr::var(acc)
            };
            let mut st = Ok(());
            k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
                st = store(k, &mut args, bref, out, Expr::var(o), v);
            });
            st
        })();
    });
    res?;
    let kernel = finish(k)?;
    let id = b.kernel(kernel);
    steps.push(SStep::Launch {
        kernel: id,
        n: Sz::bin(SzOp::Mul, nout, Sz::C(32)),
        args: args.args,
    });
    Ok(())
}

/// `argmax`/`argmin` along one axis: one thread per output element walks
/// the axis in order.
fn arg_reduce(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &ArgReduceParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    one_output(q)?;
    let &[axis] = p.axes.as_slice() else {
        return Err(IrError::ty(q.primitive.name(), "expected one axis"));
    };
    let x = scope.atom(&q.inputs[0])?;
    let (d, xs) = ty(jaxpr, scope, &q.inputs[0])?;
    if axis >= xs.len() {
        return Err(IrError::ty(q.primitive.name(), "axis out of range"));
    }
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, od, os) = outs[0].clone();
    let xst = strides(&xs);
    let kept: Vec<usize> = (0..xs.len()).filter(|&k| k != axis).collect();
    let kst: Vec<Sz> = kept.iter().map(|&k| xst[k].clone()).collect();
    steps.push(SStep::Require {
        small: Sz::C(1),
        large: xs[axis].clone(),
        what: format!("{}: cannot reduce an empty axis", q.primitive.name()),
    });
    let (float, max) = (d.is_float(), p.op == ArgOp::Argmax);
    let cv = compute(d);
    let (n_axis, s_axis) = (xs[axis].clone(), xst[axis].clone());
    gather(b, steps, q.primitive.name(), out, &os, |k, args, b, idx| {
        let base = offset(k, args, &kst, idx);
        let base = k.let_("base", DType::I64, base);
        let bv = k.let_("bv", cv, Expr::constant(cv, 0.0));
        let bi = k.let_("bi", DType::I64, i64c(-1));
        let r = k.var("r", DType::I64);
        let n = args.size(k, &n_axis);
        let st = args.size(k, &s_axis);
        let mut res = Ok(());
        k.for_(r, i64c(0), n, i64c(1), |k| {
            res = (|| {
                let v = load(k, args, b, x, Expr::var(base) + Expr::var(r) * st.clone())?;
                let v = k.let_("v", cv, v);
                let (new, best) = (Expr::var(v), Expr::var(bv));
                let gt = if max {
                    new.clone().gt(best.clone())
                } else {
                    new.clone().lt(best.clone())
                };
                let beats = if float {
                    let nn = new.unary(UnOp::IsNan);
                    let bn = best.unary(UnOp::IsNan);
                    nn.and(bn.clone().unary(UnOp::Not))
                        .or(bn.unary(UnOp::Not).and(gt))
                } else {
                    gt
                };
                let first = Expr::var(bi).lt(i64c(0));
                k.if_(first.or(beats), |k| {
                    k.assign(bv, Expr::var(v));
                    k.assign(bi, Expr::var(r));
                });
                Ok(())
            })();
        });
        res?;
        Ok(Expr::var(bi).max(i64c(0)).cast(compute(od)))
    })
}

/// The cumulative family along one axis: one thread per line (every
/// index but the axis's) walks it in order, forwards or in `reverse`.
fn cumulative(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &CumulativeParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    one_output(q)?;
    let x = scope.atom(&q.inputs[0])?;
    let (d, xs) = ty(jaxpr, scope, &q.inputs[0])?;
    let axis = p.axis;
    if axis >= xs.len() {
        return Err(IrError::ty(q.primitive.name(), "axis out of range"));
    }
    if p.op == jaxon_ir::primitive::CumulativeOp::Cumlogsumexp && !d.is_float() {
        return Err(cannot(q, "cumlogsumexp of a non-float dtype"));
    }
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, _, _) = outs[0].clone();
    let xst = strides(&xs);
    let mut lines = xs.clone();
    lines[axis] = Sz::C(1);
    let (n_axis, s_axis) = (xs[axis].clone(), xst[axis].clone());
    let (op, rev) = (p.op, p.reverse);
    loop_kernel(
        b,
        steps,
        q.primitive.name(),
        &lines,
        |k, args, b, _, idx| {
            let base = offset(k, args, &xst, idx);
            let base = k.let_("base", DType::I64, base);
            let n = args.size(k, &n_axis);
            let st = args.size(k, &s_axis);
            let acc = k.var("acc", compute(d));
            let r = k.var("r", DType::I64);
            let mut res = Ok(());
            k.for_(r, i64c(0), n.clone(), i64c(1), |k| {
                res = (|| {
                    let pos = if rev {
                        n.clone() - i64c(1) - Expr::var(r)
                    } else {
                        Expr::var(r)
                    };
                    let e = k.let_("e", DType::I64, Expr::var(base) + pos * st.clone());
                    let v = load(k, args, b, x, Expr::var(e))?;
                    let v = k.let_("v", compute(d), v);
                    let next =
                        crate::lower::cumulative::combine(k, op, d, Expr::var(acc), Expr::var(v))?;
                    let next = Expr::select(Expr::var(r).eq(i64c(0)), Expr::var(v), next);
                    k.assign(acc, next);
                    store(k, args, b, out, Expr::var(e), Expr::var(acc))
                })();
            });
            res
        },
    )
}

/// `sort` along one axis by ranks (see the header).
fn sort(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &SortParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    use crate::lower::sort::{sort_cmp, Key};
    let first = q
        .inputs
        .first()
        .ok_or_else(|| IrError::Invalid("sort: no operands".into()))?;
    let (_, shape) = ty(jaxpr, scope, first)?;
    let axis = p.dimension;
    if axis >= shape.len() {
        return Err(IrError::ty(
            "sort",
            format!("dimension {axis} out of range"),
        ));
    }
    if p.num_keys == 0 || p.num_keys > q.inputs.len() || q.outputs.len() != q.inputs.len() {
        return Err(IrError::ty(
            "sort",
            format!("num_keys {} for {} operands", p.num_keys, q.inputs.len()),
        ));
    }
    let mut ops = Vec::new();
    for a in &q.inputs {
        let (d, s) = ty(jaxpr, scope, a)?;
        if s != shape {
            return Err(IrError::ty("sort", "operand shapes differ"));
        }
        ops.push((scope.atom(a)?, d));
    }
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let st = strides(&shape);
    let (n_axis, s_axis) = (shape[axis].clone(), st[axis].clone());
    let nk = p.num_keys;
    loop_kernel(b, steps, "sort", &shape, |k, args, b, lin, idx| {
        let ast = args.size(k, &s_axis);
        let len = args.size(k, &n_axis);
        let pos = k.let_("pos", DType::I64, idx[axis].clone());
        let base = k.let_(
            "base",
            DType::I64,
            lin.clone() - Expr::var(pos) * ast.clone(),
        );
        let mut mine = Vec::new();
        for (v, d) in &ops[..nk] {
            let x = load(k, args, b, *v, lin.clone())?;
            let x = k.let_("key", compute(*d), x);
            mine.push(Key {
                d: *d,
                v: Expr::var(x),
            });
        }
        let rank = k.let_("rank", DType::I64, i64c(0));
        let j = k.var("j", DType::I64);
        let mut res = Ok(());
        k.for_(j, i64c(0), len, i64c(1), |k| {
            res = (|| {
                let e = k.let_(
                    "e",
                    DType::I64,
                    Expr::var(base) + Expr::var(j) * ast.clone(),
                );
                let mut theirs = Vec::new();
                for (v, d) in &ops[..nk] {
                    let x = load(k, args, b, *v, Expr::var(e))?;
                    let x = k.let_("key", compute(*d), x);
                    theirs.push(Key {
                        d: *d,
                        v: Expr::var(x),
                    });
                }
                let mut before = Expr::var(j).lt(Expr::var(pos));
                for (t, m) in theirs.iter().zip(&mine).rev() {
                    let (lt, eq) = sort_cmp(t, m);
                    before = lt.or(eq.and(before));
                }
                let bv = k.let_("before", DType::Bool, before);
                k.assign(rank, Expr::var(rank) + Expr::var(bv).cast(DType::I64));
                Ok(())
            })();
        });
        res?;
        let dst = k.let_("dst", DType::I64, Expr::var(base) + Expr::var(rank) * ast);
        for ((v, _), (out, _, _)) in ops.iter().zip(&outs) {
            let x = load(k, args, b, *v, lin.clone())?;
            store(k, args, b, *out, Expr::var(dst), x)?;
        }
        Ok(())
    })
}

/// `top_k` along `axis` by ranks: each element's rank in its line,
/// descending in the total order with ties by the lower index; the first
/// `k` ranks are written with their `i32` positions.
fn top_k(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &TopKParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    use crate::lower::sort::total_key;
    let [a] = q.inputs.as_slice() else {
        return Err(IrError::Invalid("top_k: expected one operand".into()));
    };
    let (d, xs) = ty(jaxpr, scope, a)?;
    let axis = p.axis;
    if axis >= xs.len() {
        return Err(IrError::ty("top_k", format!("axis {axis} out of range")));
    }
    let x = scope.atom(a)?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (vals, idxs, os) = match outs.as_slice() {
        [(v, _, os), (i, DType::I32, _)] => (*v, *i, os.clone()),
        _ => return Err(IrError::ty("top_k", "expected values and i32 indices")),
    };
    steps.push(SStep::Require {
        small: Sz::C(p.k as i64),
        large: xs[axis].clone(),
        what: format!("top_k: k = {} exceeds the axis", p.k),
    });
    let (xst, ost) = (strides(&xs), strides(&os));
    let (n_axis, s_axis, o_axis) = (xs[axis].clone(), xst[axis].clone(), ost[axis].clone());
    let kk = p.k as i64;
    let kd = match compute(d) {
        DType::F32 => DType::I32,
        DType::F64 => DType::I64,
        DType::Bool => DType::U32,
        c => c,
    };
    loop_kernel(b, steps, "top_k", &xs, |k, args, b, lin, idx| {
        let ast = args.size(k, &s_axis);
        let oast = args.size(k, &o_axis);
        let len = args.size(k, &n_axis);
        let pos = k.let_("pos", DType::I64, idx[axis].clone());
        let base = k.let_(
            "base",
            DType::I64,
            lin.clone() - Expr::var(pos) * ast.clone(),
        );
        let mut oi = idx.to_vec();
        oi[axis] = i64c(0);
        let obase = offset(k, args, &ost, &oi);
        let obase = k.let_("obase", DType::I64, obase);
        let xv = load(k, args, b, x, lin.clone())?;
        let xv = k.let_("xv", compute(d), xv);
        let mine = k.let_("mk", kd, total_key(d, Expr::var(xv)));
        let rank = k.let_("rank", DType::I64, i64c(0));
        let j = k.var("j", DType::I64);
        let mut res = Ok(());
        k.for_(j, i64c(0), len, i64c(1), |k| {
            res = (|| {
                let t = load(k, args, b, x, Expr::var(base) + Expr::var(j) * ast.clone())?;
                let theirs = k.let_("tk", kd, total_key(d, t));
                let before = Expr::var(theirs).gt(Expr::var(mine)).or(Expr::var(theirs)
                    .eq(Expr::var(mine))
                    .and(Expr::var(j).lt(Expr::var(pos))));
                k.assign(rank, Expr::var(rank) + before.cast(DType::I64));
                Ok(())
            })();
        });
        res?;
        let mut st = Ok(());
        k.if_(Expr::var(rank).lt(i64c(kk)), |k| {
            st = (|| {
                let dst = k.let_("dst", DType::I64, Expr::var(obase) + Expr::var(rank) * oast);
                store(k, args, b, vals, Expr::var(dst), Expr::var(xv))?;
                store(
                    k,
                    args,
                    b,
                    idxs,
                    Expr::var(dst),
                    Expr::var(pos).cast(DType::I32),
                )
            })();
        });
        st
    })
}
