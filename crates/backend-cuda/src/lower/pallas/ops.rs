//! Array primitives inside a `pallas_call` kernel, each as the value of one
//! output element at its multi-index ([`Block::produce`]): elementwise ops
//! through the backend's scalar table (`elementwise::scalar`), data
//! movement as index arithmetic, reductions and `dot_general` as loops over
//! the reduced elements in one thread (an FMA dot), each thread producing
//! its own output elements; a `dot_general` that `mma.rs` takes (f16/bf16
//! operands) runs on tensor cores instead.
//!
//! Invariant: every family enum is matched exhaustively; a primitive that
//! does not lower in a kernel is `in_kernel`'s `Unsupported` error.

use super::super::elementwise;
use super::super::kernel::{affine, compute, i64c, round_to, strides};
use super::super::reduction::{acc_dtype, combine, identity};
use super::block::{in_kernel, BVal, Block};
use crate::kir::{Expr, MathFn, Stmt, UnOp};
use jaxon_ir::primitive::{
    ArgOp, ArgReduceParams, BroadcastInDimParams, ConcatenateParams, DotDimensionNumbers,
    DotGeneralParams, DynamicSliceParams, Elementwise, Indexing, IotaParams, Linalg, ReduceParams,
    Reduction, ReshapeParams, RevParams, SliceParams, Structural, TransposeParams,
};
use jaxon_ir::{DType, IrError};

type Outs<'o> = &'o [(DType, Vec<usize>)];

fn one<'o>(outs: Outs<'o>, name: &str) -> Result<&'o (DType, Vec<usize>), IrError> {
    match outs {
        [o] => Ok(o),
        _ => Err(IrError::ty(name, "expected one result")),
    }
}

fn arg<'v>(ins: &'v [BVal], k: usize, name: &str) -> Result<&'v BVal, IrError> {
    ins.get(k)
        .ok_or_else(|| IrError::ty(name, format!("operand {k} is missing")))
}

/// The shape of a value (`[]` for a scalar).
pub(crate) fn shape_of(v: &BVal) -> Vec<usize> {
    match v {
        BVal::Scalar(..) => Vec::new(),
        BVal::Array(r) => r.shape.clone(),
        BVal::Ref(r) => r.shape.clone(),
        BVal::Lazy(l) => l.shape.clone(),
    }
}

/// The storage dtype of a value.
pub(crate) fn dtype_of(v: &BVal) -> DType {
    match v {
        BVal::Scalar(_, d) => *d,
        BVal::Array(r) => r.dtype,
        BVal::Ref(r) => r.dtype,
        BVal::Lazy(l) => l.dtype,
    }
}

/// Element `idx` (a multi-index of the value's shape) of `v`.
pub(crate) fn at(b: &mut Block, v: &BVal, idx: &[Expr]) -> Result<Expr, IrError> {
    if let BVal::Lazy(l) = v {
        return l.at(b, idx);
    }
    let lin = affine(0, &strides(&shape_of(v)), idx);
    b.elem(v, lin)
}

/// Element `idx` of the result's index space read from `v` with NumPy
/// broadcasting (trailing dimensions aligned, size-1 dimensions repeated):
/// the tracer stages `sub x[16,8] m[16,1]` inside kernels as it is.
pub(crate) fn broadcast_at(b: &mut Block, v: &BVal, idx: &[Expr]) -> Result<Expr, IrError> {
    let vs = shape_of(v);
    if vs.len() > idx.len() {
        return Err(IrError::ty(
            "elementwise",
            format!("operand of shape {vs:?} is larger than the result"),
        ));
    }
    let off = idx.len() - vs.len();
    let src: Vec<Expr> = vs
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            if n == 1 {
                i64c(0)
            } else {
                idx[off + i].clone()
            }
        })
        .collect();
    at(b, v, &src)
}

/// Elementwise primitives: operands broadcast to the result's shape.
pub(super) fn elementwise(
    b: &mut Block,
    p: &Elementwise,
    ins: &[BVal],
    outs: Outs,
) -> Result<Vec<BVal>, IrError> {
    let (d, shape) = one(outs, p.name())?.clone();
    let dts: Vec<DType> = ins.iter().map(dtype_of).collect();
    let ins = ins.to_vec();
    let v = b.produce(d, &shape, |b, idx| {
        let xs = ins
            .iter()
            .map(|v| broadcast_at(b, v, idx))
            .collect::<Result<Vec<_>, _>>()?;
        elementwise::scalar(&mut b.k, p, d, &dts, xs)
    })?;
    Ok(vec![v])
}

/// Data movement and `iota`.
pub(super) fn structural(
    b: &mut Block,
    p: &Structural,
    ins: &[BVal],
    outs: Outs,
) -> Result<Vec<BVal>, IrError> {
    let name = p.name();
    let (d, shape) = one(outs, name)?.clone();
    let v = match p {
        Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        }) => {
            let x = arg(ins, 0, name)?.clone();
            let xs = shape_of(&x);
            let bd = broadcast_dimensions.to_usizes();
            b.produce(d, &shape, |b, idx| {
                let src: Vec<Expr> = xs
                    .iter()
                    .zip(&bd)
                    .map(|(&n, &o)| if n == 1 { i64c(0) } else { idx[o].clone() })
                    .collect();
                at(b, &x, &src)
            })?
        }
        Structural::Reshape(ReshapeParams { dimensions, .. }) => {
            if dimensions
                .as_ref()
                .is_some_and(|p| p.iter().enumerate().any(|(i, &d)| i != d))
            {
                return Err(in_kernel("reshape with dimensions"));
            }
            same_order(b, arg(ins, 0, name)?, d, &shape)?
        }
        Structural::Squeeze(_) => same_order(b, arg(ins, 0, name)?, d, &shape)?,
        Structural::Transpose(TransposeParams { permutation }) => {
            let x = arg(ins, 0, name)?.clone();
            let perm = permutation.clone();
            b.produce(d, &shape, |b, idx| {
                let mut src = vec![i64c(0); perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    src[p] = idx[i].clone();
                }
                at(b, &x, &src)
            })?
        }
        Structural::Rev(RevParams { dimensions }) => {
            let x = arg(ins, 0, name)?.clone();
            let dims = dimensions.clone();
            let sh = shape.clone();
            b.produce(d, &shape, |b, idx| {
                let src: Vec<Expr> = idx
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        if dims.contains(&i) {
                            i64c(sh[i] as i64 - 1) - e.clone()
                        } else {
                            e.clone()
                        }
                    })
                    .collect();
                at(b, &x, &src)
            })?
        }
        Structural::Iota(IotaParams { dimension, .. }) => {
            let dim = *dimension;
            b.produce(d, &shape, |_, idx| {
                let i = idx
                    .get(dim)
                    .cloned()
                    .ok_or_else(|| IrError::ty("iota", "dimension out of range"))?;
                Ok(i.cast(compute(d)))
            })?
        }
        Structural::Concatenate(ConcatenateParams { dimension }) => {
            concatenate(b, ins, *dimension, d, &shape)?
        }
        Structural::Pad(_)
        | Structural::Split(_)
        | Structural::Tile(_)
        | Structural::Stack(_)
        | Structural::Empty2(_) => return Err(in_kernel(name)),
    };
    Ok(vec![v])
}

/// A value with the same elements in the same row-major order.
fn same_order(b: &mut Block, x: &BVal, d: DType, shape: &[usize]) -> Result<BVal, IrError> {
    let x = x.clone();
    let sh = shape.to_vec();
    b.produce(d, shape, |b, idx| {
        let lin = affine(0, &strides(&sh), idx);
        b.elem(&x, lin)
    })
}

fn concatenate(
    b: &mut Block,
    ins: &[BVal],
    dim: usize,
    d: DType,
    shape: &[usize],
) -> Result<BVal, IrError> {
    let parts: Vec<(BVal, usize)> = ins
        .iter()
        .map(|v| (v.clone(), shape_of(v).get(dim).copied().unwrap_or(0)))
        .collect();
    b.produce(d, shape, |b, idx| {
        // The last part whose range starts at or before the index wins:
        // each part is read at a clamped index and selected.
        let mut value: Option<Expr> = None;
        let mut start = 0i64;
        for (v, n) in &parts {
            if *n == 0 {
                continue;
            }
            let mut src = idx.to_vec();
            let local = (idx[dim].clone() - i64c(start))
                .max(i64c(0))
                .min(i64c(*n as i64 - 1));
            src[dim] = local;
            let x = at(b, v, &src)?;
            value = Some(match value {
                None => x,
                Some(prev) => Expr::select(idx[dim].clone().ge(i64c(start)), x, prev),
            });
            start += *n as i64;
        }
        value.ok_or_else(|| IrError::ty("concatenate", "no operands"))
    })
}

/// Static and dynamic slices, `dynamic_update_slice`.
pub(super) fn indexing(
    b: &mut Block,
    p: &Indexing,
    ins: &[BVal],
    outs: Outs,
) -> Result<Vec<BVal>, IrError> {
    let name = p.name();
    let (d, shape) = one(outs, name)?.clone();
    let x = arg(ins, 0, name)?.clone();
    let xs = shape_of(&x);
    let v = match p {
        Indexing::Slice(SliceParams {
            start_indices,
            strides: st,
            ..
        }) => {
            let start = start_indices.to_usizes();
            let st = st.as_ref().map_or(vec![1; start.len()], |s| s.to_usizes());
            b.produce(d, &shape, |b, idx| {
                let src: Vec<Expr> = idx
                    .iter()
                    .enumerate()
                    .map(|(i, e)| i64c(start[i] as i64) + e.clone() * i64c(st[i] as i64))
                    .collect();
                at(b, &x, &src)
            })?
        }
        Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
            let sizes = slice_sizes.to_usizes();
            let starts = clamped_starts(ins.get(1..).unwrap_or(&[]), &xs, &sizes, name)?;
            b.produce(d, &shape, |b, idx| {
                let src: Vec<Expr> = idx
                    .iter()
                    .zip(&starts)
                    .map(|(e, s)| s.clone() + e.clone())
                    .collect();
                at(b, &x, &src)
            })?
        }
        Indexing::DynamicUpdateSlice => {
            let u = arg(ins, 1, name)?.clone();
            let us = shape_of(&u);
            let starts = clamped_starts(ins.get(2..).unwrap_or(&[]), &xs, &us, name)?;
            b.produce(d, &shape, |b, idx| {
                let mut inside = Expr::bool(true);
                let mut src = Vec::new();
                for ((e, s), n) in idx.iter().zip(&starts).zip(&us) {
                    let l = e.clone() - s.clone();
                    inside = inside.and(l.clone().ge(i64c(0)).and(l.clone().lt(i64c(*n as i64))));
                    src.push(l.max(i64c(0)).min(i64c((*n as i64 - 1).max(0))));
                }
                let old = at(b, &x, idx)?;
                if us.contains(&0) {
                    return Ok(old);
                }
                let new = at(b, &u, &src)?;
                Ok(Expr::select(inside, new, old))
            })?
        }
        Indexing::Gather(_) | Indexing::Scatter(_) => return Err(in_kernel(name)),
    };
    Ok(vec![v])
}

/// Start indices clamped so that a window of `sizes` fits `shape`.
fn clamped_starts(
    starts: &[BVal],
    shape: &[usize],
    sizes: &[usize],
    name: &str,
) -> Result<Vec<Expr>, IrError> {
    if starts.len() != shape.len() || sizes.len() != shape.len() {
        return Err(IrError::ty(name, "one start index per dimension"));
    }
    starts
        .iter()
        .zip(shape.iter().zip(sizes))
        .map(|(s, (&n, &w))| match s {
            BVal::Scalar(e, _) => Ok(e
                .clone()
                .cast(DType::I64)
                .max(i64c(0))
                .min(i64c(n.saturating_sub(w) as i64))),
            BVal::Array(_) | BVal::Ref(_) | BVal::Lazy(_) => {
                Err(IrError::ty(name, "start indices are scalars"))
            }
        })
        .collect()
}

/// The multi-index of counter `r` over the dims `dims` of `shape`, written
/// into `idx`.
fn spread(b: &mut Block, r: Expr, shape: &[usize], dims: &[usize], idx: &mut [Expr]) {
    let sizes: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
    let sub = super::super::kernel::multi_index(&mut b.k, r, &sizes);
    for (&d, e) in dims.iter().zip(sub) {
        idx[d] = e;
    }
}

/// `for r in 0..n { body(r) }` in the current thread.
fn serial(
    b: &mut Block,
    n: usize,
    body: impl FnOnce(&mut Block, Expr) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let r = b.k.var("r", DType::I64);
    b.k.begin_body();
    let res = body(b, Expr::var(r));
    let inner = b.k.end_body();
    res?;
    b.k.push(Stmt::For {
        var: r,
        start: i64c(0),
        end: i64c(n as i64),
        step: i64c(1),
        body: inner,
    });
    Ok(())
}

/// Reductions and arg-reductions.
pub(super) fn reduction(
    b: &mut Block,
    p: &Reduction,
    ins: &[BVal],
    outs: Outs,
) -> Result<Vec<BVal>, IrError> {
    let name = p.name();
    let (d, shape) = one(outs, name)?.clone();
    let x = arg(ins, 0, name)?.clone();
    let xs = shape_of(&x);
    let xd = dtype_of(&x);
    let v = match p {
        Reduction::Reduce(ReduceParams { op, axes, .. }) => {
            let op = *op;
            let axes = axes.clone();
            if axes.iter().any(|&a| a >= xs.len()) {
                return Err(IrError::ty(name, "axis out of range"));
            }
            let kept: Vec<usize> = (0..xs.len()).filter(|a| !axes.contains(a)).collect();
            let n: usize = axes.iter().map(|&a| xs[a]).product();
            b.produce(d, &shape, |b, idx| {
                let acc_t = acc_dtype(xd);
                let acc = b.k.let_("acc", acc_t, identity(op, xd));
                let mut src = vec![i64c(0); xs.len()];
                for (&k, e) in kept.iter().zip(idx) {
                    src[k] = e.clone();
                }
                serial(b, n, |b, r| {
                    spread(b, r, &xs, &axes, &mut src);
                    let v = at(b, &x, &src)?;
                    let v = if acc_t != compute(xd) {
                        v.cast(acc_t)
                    } else {
                        v
                    };
                    let c = round_to(xd, combine(op, xd, Expr::var(acc), v));
                    b.k.assign(acc, c);
                    Ok(())
                })?;
                let r = Expr::var(acc);
                Ok(if acc_t != compute(d) {
                    r.cast(compute(d))
                } else {
                    r
                })
            })?
        }
        Reduction::ArgReduce(ArgReduceParams { op, axes, .. }) => {
            let &[axis] = axes.as_slice() else {
                return Err(IrError::ty(name, "expected one axis"));
            };
            if axis >= xs.len() || xs[axis] == 0 {
                return Err(IrError::ty(name, "bad axis"));
            }
            let max = *op == ArgOp::Argmax;
            b.produce(d, &shape, |b, idx| {
                let mut src: Vec<Expr> = idx.to_vec();
                src.insert(axis, i64c(0));
                let first = at(b, &x, &src)?;
                let best = b.k.let_("best", compute(xd), first);
                let at_i = b.k.let_("arg", DType::I64, i64c(0));
                serial(b, xs[axis], |b, r| {
                    src[axis] = r.clone();
                    let v = at(b, &x, &src)?;
                    let nv = b.k.let_("v", compute(xd), v);
                    let (nv, bv) = (Expr::var(nv), Expr::var(best));
                    let mut beats = if max {
                        nv.clone().gt(bv.clone())
                    } else {
                        nv.clone().lt(bv.clone())
                    };
                    if xd.is_float() {
                        let nn = nv.clone().unary(UnOp::IsNan);
                        let bn = bv.unary(UnOp::IsNan);
                        beats = bn.unary(UnOp::Not).and(nn.or(beats));
                    }
                    let t = b.k.let_("t", DType::Bool, beats);
                    b.k.if_(Expr::var(t), |k| {
                        k.assign(best, nv);
                        k.assign(at_i, r);
                    });
                    Ok(())
                })?;
                Ok(Expr::var(at_i).cast(d))
            })?
        }
        Reduction::Cumulative(_) | Reduction::Sort(_) | Reduction::TopK(_) => {
            return Err(in_kernel(name))
        }
    };
    Ok(vec![v])
}

/// `dot_general`: on tensor cores when `mma::dot` takes it, else one
/// output element per thread step, an FMA loop over the contracting
/// elements in the accumulator dtype.
pub(super) fn linalg(
    b: &mut Block,
    p: &Linalg,
    ins: &[BVal],
    outs: Outs,
) -> Result<Vec<BVal>, IrError> {
    let name = p.name();
    match p {
        Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers,
            precision,
            ..
        }) => dot(b, dimension_numbers, *precision, ins, outs),
        Linalg::ConvGeneralDilated(_)
        | Linalg::Cholesky
        | Linalg::TriangularSolve(_)
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::TridiagonalSolve(_)
        | Linalg::Fft(_) => Err(in_kernel(name)),
    }
}

fn dot(
    b: &mut Block,
    dn: &DotDimensionNumbers,
    precision: Option<(
        jaxon_ir::primitive::Precision,
        jaxon_ir::primitive::Precision,
    )>,
    ins: &[BVal],
    outs: Outs,
) -> Result<Vec<BVal>, IrError> {
    let name = "dot_general";
    let (d, shape) = one(outs, name)?.clone();
    let (x, y) = (arg(ins, 0, name)?.clone(), arg(ins, 1, name)?.clone());
    if let Some(v) = super::mma::dot(b, dn, precision, &x, &y, d, &shape, None)? {
        return Ok(vec![v]);
    }
    let (xs, ys) = (shape_of(&x), shape_of(&y));
    let (xd, yd) = (dtype_of(&x), dtype_of(&y));
    let free = |rank: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|a| !batch.contains(a) && !contract.contains(a))
            .collect()
    };
    let xf = free(xs.len(), &dn.lhs_batch, &dn.lhs_contracting);
    let yf = free(ys.len(), &dn.rhs_batch, &dn.rhs_contracting);
    let n: usize = dn.lhs_contracting.iter().map(|&a| xs[a]).product();
    let acc_t = match d {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let dn = dn.clone();
    let v = b.produce(d, &shape, |b, idx| {
        let nb = dn.lhs_batch.len();
        let mut xi = vec![i64c(0); xs.len()];
        let mut yi = vec![i64c(0); ys.len()];
        for (k, (&l, &r)) in dn.lhs_batch.iter().zip(&dn.rhs_batch).enumerate() {
            xi[l] = idx[k].clone();
            yi[r] = idx[k].clone();
        }
        for (k, &a) in xf.iter().enumerate() {
            xi[a] = idx[nb + k].clone();
        }
        for (k, &a) in yf.iter().enumerate() {
            yi[a] = idx[nb + xf.len() + k].clone();
        }
        let acc = b.k.let_("acc", acc_t, Expr::constant(acc_t, 0.0));
        serial(b, n, |b, r| {
            let sizes: Vec<usize> = dn.lhs_contracting.iter().map(|&a| xs[a]).collect();
            let sub = super::super::kernel::multi_index(&mut b.k, r, &sizes);
            for ((&l, &rr), e) in dn.lhs_contracting.iter().zip(&dn.rhs_contracting).zip(sub) {
                xi[l] = e.clone();
                yi[rr] = e;
            }
            let (u, v) = (at(b, &x, &xi)?, at(b, &y, &yi)?);
            let cast = |e: Expr, from: DType| {
                if compute(from) != acc_t {
                    e.cast(acc_t)
                } else {
                    e
                }
            };
            let (u, v) = (cast(u, xd), cast(v, yd));
            let sum = if acc_t.is_float() {
                Expr::Math(MathFn::Fma, vec![u, v, Expr::var(acc)])
            } else if acc_t.is_bool() {
                Expr::var(acc).or(u.and(v))
            } else {
                Expr::var(acc) + u * v
            };
            b.k.assign(acc, sum);
            Ok(())
        })?;
        let r = Expr::var(acc);
        Ok(round_to(
            d,
            if acc_t != compute(d) {
                r.cast(compute(d))
            } else {
                r
            },
        ))
    })?;
    Ok(vec![v])
}
