//! Dynamic-shape lowerings of the first-order primitives outside
//! elementwise runs: layout (`broadcast_in_dim`, `reshape`, `squeeze`,
//! `transpose`, `rev`, `iota`, `concatenate`, `pad`, `split`, `tile`,
//! `stack`, `empty2`), indexing (`slice`,
//! `dynamic_slice`, `dynamic_update_slice`, `gather` in the clamping
//! modes; `scatter-add` in `scatter.rs`), and `dot_general` (a GEMM whose plan is resolved per call; integer and mixed
//! products as a kernel). Each builds its kernels once, with sizes and
//! strides as size parameters.
//!
//! Invariant: each family matches its own enum exhaustively; a member
//! without a dynamic lowering is `Unsupported`, naming the equation.

use super::build::{
    bind_outputs, cannot, copy_into, gather, load, materialize, offset, ty, SArgs, Scope, B, DV,
};
use super::sym::{strides, Sz, SzOp};
use super::{SGemm, SStep};
use crate::kir::{Expr, KernelBuilder};
use crate::lower::kernel::{compute, i64c};
use jaxon_ir::primitive::{
    BroadcastInDimParams, ConcatenateParams, DotDimensionNumbers, DotGeneralParams,
    DynamicSliceParams, GatherParams, GatherScatterMode, Indexing, IotaParams, Linalg, PadParams,
    RevParams, SliceParams, Structural, TransposeParams,
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

/// Lowers a structural equation.
pub(crate) fn structural(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &Structural,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    match p {
        Structural::Split(sp) => return split(b, jaxpr, q, sp.axis, scope, steps),
        Structural::Tile(_) => {
            one_output(q)?;
            return tile(b, jaxpr, q, scope, steps);
        }
        Structural::Stack(st) => return stack(b, jaxpr, q, st.axis, scope, steps),
        Structural::Empty2(_) => {
            // An uninitialised value: zeros, deterministically.
            let outs = bind_outputs(b, jaxpr, q, scope)?;
            for (out, dt, shape) in outs {
                let zero = DV::Lit(jaxon_ir::Literal::new(0.0, dt));
                copy_into(b, steps, zero, out, &Sz::prod(&shape))?;
            }
            return Ok(());
        }
        Structural::BroadcastInDim(_)
        | Structural::Reshape(_)
        | Structural::Squeeze(_)
        | Structural::Transpose(_)
        | Structural::Rev(_)
        | Structural::Pad(_)
        | Structural::Concatenate(_) => one_output(q)?,
        Structural::Iota(_) => {}
    }
    if let Structural::Iota(IotaParams { dimension, .. }) = p {
        let outs = bind_outputs(b, jaxpr, q, scope)?;
        let (out, dt, shape) = outs
            .first()
            .cloned()
            .ok_or_else(|| IrError::Invalid("iota: no result".into()))?;
        let d = *dimension;
        if d >= shape.len() {
            return Err(IrError::ty("iota", "dimension out of range"));
        }
        return gather(b, steps, "iota", out, &shape, |_, _, _, idx| {
            Ok(idx[d].clone().cast(compute(dt)))
        });
    }
    let x = scope.atom(&q.inputs[0])?;
    let (xdt, xs) = ty(jaxpr, scope, &q.inputs[0])?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, _, os) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid("no result".into()))?;
    let xst = strides(&xs);
    match p {
        Structural::Reshape(r) if r.dimensions.is_some() => {
            Err(cannot(q, "reshape with dimensions"))
        }
        Structural::Reshape(_) | Structural::Squeeze(_) => {
            copy_into(b, steps, x, out, &Sz::prod(&os))
        }
        Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        }) => {
            let bd = broadcast_dimensions.to_usizes();
            if bd.len() != xs.len() || bd.iter().any(|&d| d >= os.len()) {
                return Err(IrError::ty("broadcast_in_dim", "bad broadcast dimensions"));
            }
            gather(b, steps, "broadcast", out, &os, |k, args, b, idx| {
                let mut xi = Vec::new();
                for (j, &d) in bd.iter().enumerate() {
                    xi.push(if xs[j] == os[d] {
                        idx[d].clone()
                    } else if xs[j] == Sz::C(1) {
                        i64c(0)
                    } else {
                        let n = args.size(k, &xs[j]);
                        Expr::select(n.eq(i64c(1)), i64c(0), idx[d].clone())
                    });
                }
                let at = offset(k, args, &xst, &xi);
                load(k, args, b, x, at)
            })
        }
        Structural::Transpose(TransposeParams { permutation }) => {
            if permutation.len() != xs.len() || permutation.iter().any(|&d| d >= xs.len()) {
                return Err(IrError::ty("transpose", "bad permutation"));
            }
            let ps: Vec<Sz> = permutation.iter().map(|&d| xst[d].clone()).collect();
            gather(b, steps, "transpose", out, &os, |k, args, b, idx| {
                let at = offset(k, args, &ps, idx);
                load(k, args, b, x, at)
            })
        }
        Structural::Rev(RevParams { dimensions }) => {
            gather(b, steps, "rev", out, &os, |k, args, b, idx| {
                let mut xi = idx.to_vec();
                for &d in dimensions {
                    if d < xi.len() {
                        let n = args.size(k, &xs[d]);
                        xi[d] = n - i64c(1) - xi[d].clone();
                    }
                }
                let at = offset(k, args, &xst, &xi);
                load(k, args, b, x, at)
            })
        }
        Structural::Concatenate(ConcatenateParams { dimension }) => {
            let d = *dimension;
            let ost = strides(&os);
            let mut at_axis = Sz::C(0);
            for a in &q.inputs {
                let (dt, s) = ty(jaxpr, scope, a)?;
                if s.len() != os.len() || d >= s.len() {
                    return Err(IrError::ty("concatenate", "operand rank"));
                }
                let v = materialize(b, steps, scope.atom(a)?, dt, &s)?;
                let off = Sz::bin(SzOp::Mul, at_axis.clone(), ost[d].clone());
                super::build::loop_kernel(b, steps, "concat", &s, |k, args, b, lin, idx| {
                    let xv = load(k, args, b, DV::Buf(v), lin.clone())?;
                    let o = offset(k, args, &ost, idx) + args.size(k, &off);
                    super::build::store(k, args, b, out, o, xv)
                })?;
                at_axis = Sz::bin(SzOp::Add, at_axis, s[d].clone());
            }
            Ok(())
        }
        Structural::Pad(PadParams { padding_config }) => {
            let pv = scope.atom(
                q.inputs
                    .get(1)
                    .ok_or_else(|| IrError::Invalid("pad: no padding value".into()))?,
            )?;
            if padding_config.len() != xs.len() {
                return Err(IrError::ty("pad", "padding config rank"));
            }
            let cfg: Vec<(i64, i64)> = padding_config
                .iter()
                .map(|c| {
                    (
                        c.first().copied().unwrap_or(0),
                        c.get(2).copied().unwrap_or(0),
                    )
                })
                .collect();
            gather(b, steps, "pad", out, &os, |k, args, b, idx| {
                let mut ok = Expr::bool(true);
                let mut xi = Vec::new();
                for (d, &(lo, interior)) in cfg.iter().enumerate() {
                    let t = idx[d].clone() - i64c(lo);
                    let step = interior + 1;
                    let n = args.size(k, &xs[d]);
                    let src = t.clone() / i64c(step);
                    ok = ok
                        .and(t.clone().ge(i64c(0)))
                        .and((t % i64c(step)).eq(i64c(0)))
                        .and(src.clone().lt(n));
                    xi.push(src);
                }
                let okv = k.let_("ok", DType::Bool, ok);
                let at = offset(k, args, &xst, &xi);
                let at = Expr::select(Expr::var(okv), at, i64c(0));
                let padv = load(k, args, b, pv, i64c(0))?;
                let xv = masked_load(k, args, b, x, xdt, at, Expr::var(okv))?;
                Ok(Expr::select(Expr::var(okv), xv, padv))
            })
        }
        Structural::Iota(_)
        | Structural::Split(_)
        | Structural::Tile(_)
        | Structural::Stack(_)
        | Structural::Empty2(_) => Err(IrError::Invalid(format!(
            "cuda lowering: {} is lowered before this match",
            q.primitive.name()
        ))),
    }
}

/// `split` along `axis`: output `j` is the operand from the sum of the
/// earlier outputs' sizes along the axis.
fn split(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    axis: usize,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let a = q
        .inputs
        .first()
        .ok_or_else(|| IrError::Invalid("split: no operand".into()))?;
    let x = scope.atom(a)?;
    let (_, xs) = ty(jaxpr, scope, a)?;
    if axis >= xs.len() {
        return Err(IrError::ty("split", "axis out of range"));
    }
    let xst = strides(&xs);
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let mut at = Sz::C(0);
    for (out, _, os) in outs {
        if os.len() != xs.len() {
            return Err(IrError::ty("split", "a piece of another rank"));
        }
        let start = at.clone();
        gather(b, steps, "split", out, &os, |k, args, b, idx| {
            let mut xi = idx.to_vec();
            xi[axis] = xi[axis].clone() + args.size(k, &start);
            let o = offset(k, args, &xst, &xi);
            load(k, args, b, x, o)
        })?;
        at = Sz::bin(SzOp::Add, at, os[axis].clone());
    }
    Ok(())
}

/// `tile`: each result index reads the operand at the index modulo the
/// operand's size on every axis.
fn tile(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let x = scope.atom(&q.inputs[0])?;
    let (_, xs) = ty(jaxpr, scope, &q.inputs[0])?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, _, os) = outs[0].clone();
    if os.len() != xs.len() {
        return Err(IrError::ty("tile", "reps of another rank"));
    }
    let xst = strides(&xs);
    gather(b, steps, "tile", out, &os, |k, args, b, idx| {
        let xi: Vec<Expr> = idx
            .iter()
            .zip(&xs)
            .zip(&os)
            .map(|((i, n), o)| {
                if n == o {
                    i.clone()
                } else {
                    i.clone() % args.size(k, n)
                }
            })
            .collect();
        let o = offset(k, args, &xst, &xi);
        load(k, args, b, x, o)
    })
}

/// `stack` along a new `axis`: operand `j` fills index `j` of the axis.
fn stack(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    axis: usize,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    if q.outputs.len() != 1 {
        return Err(IrError::Invalid("stack: expected one result".into()));
    }
    let mut ops = Vec::new();
    for a in &q.inputs {
        let (dt, s) = ty(jaxpr, scope, a)?;
        ops.push((scope.atom(a)?, dt, s));
    }
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, _, os) = outs[0].clone();
    let ost = strides(&os);
    for (j, (v, dt, s)) in ops.into_iter().enumerate() {
        if s.len() + 1 != os.len() || axis > s.len() {
            return Err(IrError::ty("stack", "operand rank"));
        }
        let v = materialize(b, steps, v, dt, &s)?;
        super::build::loop_kernel(b, steps, "stack", &s, |k, args, b, lin, idx| {
            let mut oi = idx.to_vec();
            oi.insert(axis, i64c(j as i64));
            let xv = load(k, args, b, DV::Buf(v), lin.clone())?;
            let o = offset(k, args, &ost, &oi);
            super::build::store(k, args, b, out, o, xv)
        })?;
    }
    Ok(())
}

/// Reads `v` at `index` where `mask` holds (zero elsewhere).
fn masked_load(
    k: &mut KernelBuilder,
    args: &mut SArgs,
    b: &B,
    v: DV,
    dt: DType,
    index: Expr,
    mask: Expr,
) -> Result<Expr, IrError> {
    match v {
        DV::Lit(_) => load(k, args, b, v, index),
        DV::Buf(buf) => {
            let p = args.buffer(k, b, buf, false)?;
            let x = k.var("x", dt);
            k.load(&[x], p.into(), index, Some((mask, Expr::int(dt, 0))));
            Ok(if compute(dt) != dt {
                Expr::var(x).cast(compute(dt))
            } else {
                Expr::var(x)
            })
        }
    }
}

/// The start of a dynamic slice along one axis: the loaded index clamped
/// into `[0, size - window]`.
fn clamped(
    k: &mut KernelBuilder,
    args: &mut SArgs,
    b: &B,
    start: DV,
    size: &Sz,
    window: &Sz,
) -> Result<Expr, IrError> {
    let s = load(k, args, b, start, i64c(0))?.cast(DType::I64);
    let hi = args.size(k, &Sz::bin(SzOp::Sub, size.clone(), window.clone()));
    Ok(s.min(hi).max(i64c(0)))
}

/// Lowers an indexing equation.
pub(crate) fn indexing(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &Indexing,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    match p {
        Indexing::Scatter(sp) => return super::scatter::lower(b, jaxpr, q, sp, scope, steps),
        Indexing::Gather(g) => return gather_op(b, jaxpr, q, g, scope, steps),
        Indexing::Slice(_) | Indexing::DynamicSlice(_) | Indexing::DynamicUpdateSlice => {
            one_output(q)?
        }
    }
    let x = scope.atom(&q.inputs[0])?;
    let (_, xs) = ty(jaxpr, scope, &q.inputs[0])?;
    let xst = strides(&xs);
    let r = xs.len();
    match p {
        Indexing::Slice(SliceParams {
            start_indices,
            strides: st,
            ..
        }) => {
            let outs = bind_outputs(b, jaxpr, q, scope)?;
            let (out, _, os) = outs[0].clone();
            let starts = start_indices.to_vec();
            let steps_by: Vec<i64> = match st {
                Some(s) => s.to_vec(),
                None => vec![1; r],
            };
            if starts.len() != r || steps_by.len() != r {
                return Err(IrError::ty("slice", "index rank"));
            }
            gather(b, steps, "slice", out, &os, |k, args, b, idx| {
                let xi: Vec<Expr> = (0..r)
                    .map(|d| i64c(starts[d]) + idx[d].clone() * i64c(steps_by[d]))
                    .collect();
                let at = offset(k, args, &xst, &xi);
                load(k, args, b, x, at)
            })
        }
        Indexing::DynamicSlice(DynamicSliceParams { .. }) => {
            if q.inputs.len() < 1 + r {
                return Err(IrError::ty("dynamic_slice", "too few start indices"));
            }
            let starts: Vec<DV> = q.inputs[1..1 + r]
                .iter()
                .map(|a| scope.atom(a))
                .collect::<Result<_, _>>()?;
            let outs = bind_outputs(b, jaxpr, q, scope)?;
            let (out, _, os) = outs[0].clone();
            gather(b, steps, "dynamic_slice", out, &os, |k, args, b, idx| {
                let mut xi = Vec::new();
                for d in 0..r {
                    let s = clamped(k, args, b, starts[d], &xs[d], &os[d])?;
                    xi.push(s + idx[d].clone());
                }
                let at = offset(k, args, &xst, &xi);
                load(k, args, b, x, at)
            })
        }
        Indexing::DynamicUpdateSlice => {
            if q.inputs.len() < 2 + r {
                return Err(IrError::ty("dynamic_update_slice", "too few start indices"));
            }
            let u = scope.atom(&q.inputs[1])?;
            let (_, us) = ty(jaxpr, scope, &q.inputs[1])?;
            let starts: Vec<DV> = q.inputs[2..2 + r]
                .iter()
                .map(|a| scope.atom(a))
                .collect::<Result<_, _>>()?;
            let outs = bind_outputs(b, jaxpr, q, scope)?;
            let (out, _, os) = outs[0].clone();
            copy_into(b, steps, x, out, &Sz::prod(&os))?;
            let ost = strides(&os);
            super::build::loop_kernel(b, steps, "update_slice", &us, |k, args, b, lin, idx| {
                let mut oi = Vec::new();
                for d in 0..r {
                    let s = clamped(k, args, b, starts[d], &xs[d], &us[d])?;
                    oi.push(s + idx[d].clone());
                }
                let uv = load(k, args, b, u, lin.clone())?;
                let at = offset(k, args, &ost, &oi);
                super::build::store(k, args, b, out, at, uv)
            })
        }
        Indexing::Gather(_) | Indexing::Scatter(_) => {
            Err(cannot(q, "no dynamic-shape lowering yet"))
        }
    }
}

/// `gather` in the clamping modes (`clip`, `promise_in_bounds`) without
/// operand batching dimensions: one thread per result element reads its
/// window start from the indices (last axis: the index vector), clamps it
/// into the operand and reads the element.
fn gather_op(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    g: &GatherParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let [xa, ia] = q.inputs.as_slice() else {
        return Err(IrError::Invalid("gather: expected two operands".into()));
    };
    one_output(q)?;
    let dn = &g.dimension_numbers;
    match g.mode {
        GatherScatterMode::Clip | GatherScatterMode::PromiseInBounds => {}
        GatherScatterMode::FillOrDrop | GatherScatterMode::OneHot => {
            return Err(cannot(q, format!("mode {:?}", g.mode)))
        }
    }
    if !dn.operand_batching_dims.is_empty() || !dn.start_indices_batching_dims.is_empty() {
        return Err(cannot(q, "operand batching dimensions"));
    }
    let x = scope.atom(xa)?;
    let (_, xs) = ty(jaxpr, scope, xa)?;
    let iv = scope.atom(ia)?;
    let (_, is) = ty(jaxpr, scope, ia)?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, _, os) = outs[0].clone();
    let r = xs.len();
    let offset_dims = dn.offset_dims.to_usizes();
    let collapsed = dn.collapsed_slice_dims.to_usizes();
    let sim = dn.start_index_map.to_usizes();
    let sizes = g.slice_sizes.to_vec();
    let Some((nvec, ibatch)) = is.split_last() else {
        return Err(IrError::ty("gather", "indices of rank 0"));
    };
    if sizes.len() != r
        || sim.iter().any(|&d| d >= r)
        || *nvec != Sz::C(sim.len() as i64)
        || os.len() != ibatch.len() + offset_dims.len()
    {
        return Err(IrError::ty(
            "gather",
            "dimension numbers do not fit the operands",
        ));
    }
    let window: Vec<usize> = (0..r).filter(|d| !collapsed.contains(d)).collect();
    if window.len() != offset_dims.len() {
        return Err(IrError::ty("gather", "offset dims and the window differ"));
    }
    let batch_pos: Vec<usize> = (0..os.len()).filter(|d| !offset_dims.contains(d)).collect();
    let ist = strides(&is);
    let xst = strides(&xs);
    gather(b, steps, "gather", out, &os, |k, args, b, idx| {
        let mut ii: Vec<Expr> = batch_pos.iter().map(|&d| idx[d].clone()).collect();
        ii.push(i64c(0));
        let base = offset(k, args, &ist, &ii);
        let base = k.let_("ib", DType::I64, base);
        let mut xi = vec![i64c(0); r];
        for (j, &d) in sim.iter().enumerate() {
            let s = load(k, args, b, iv, Expr::var(base) + i64c(j as i64))?.cast(DType::I64);
            let hi = args.size(k, &Sz::bin(SzOp::Sub, xs[d].clone(), Sz::C(sizes[d])));
            xi[d] = s.min(hi).max(i64c(0));
        }
        for (w, &d) in window.iter().enumerate() {
            xi[d] = xi[d].clone() + idx[offset_dims[w]].clone();
        }
        let at = offset(k, args, &xst, &xi);
        load(k, args, b, x, at)
    })
}

/// The dimensions of `rank` that are neither batch nor contracting.
fn free_dims(rank: usize, batch: &[usize], contract: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|d| !batch.contains(d) && !contract.contains(d))
        .collect()
}

/// `v` (of `shape`) permuted into the axis order `perm`, as a new buffer
/// (the buffer itself when `perm` is the identity).
fn permuted(
    b: &mut B,
    steps: &mut Vec<SStep>,
    v: DV,
    dt: DType,
    shape: &[Sz],
    perm: &[usize],
) -> Result<super::super::plan::BufId, IrError> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return materialize(b, steps, v, dt, shape);
    }
    let st = strides(shape);
    let ps: Vec<Sz> = perm.iter().map(|&d| st[d].clone()).collect();
    let os: Vec<Sz> = perm.iter().map(|&d| shape[d].clone()).collect();
    let out = b.alloc(dt, &os)?;
    gather(b, steps, "dot_permute", out, &os, |k, args, b, idx| {
        let at = offset(k, args, &ps, idx);
        load(k, args, b, v, at)
    })?;
    Ok(out)
}

/// Lowers a linalg equation.
pub(crate) fn linalg(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &Linalg,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let DotGeneralParams {
        dimension_numbers,
        precision,
        ..
    } = match p {
        Linalg::DotGeneral(d) => d,
        Linalg::ConvGeneralDilated(_)
        | Linalg::Cholesky
        | Linalg::TriangularSolve(_)
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::TridiagonalSolve(_)
        | Linalg::Fft(_) => return Err(cannot(q, "no dynamic-shape lowering yet")),
    };
    let [la, ra] = q.inputs.as_slice() else {
        return Err(IrError::Invalid(
            "dot_general: expected two operands".into(),
        ));
    };
    one_output(q)?;
    let (dl, ls) = ty(jaxpr, scope, la)?;
    let (dr, rs) = ty(jaxpr, scope, ra)?;
    let DotDimensionNumbers {
        lhs_contracting: lc,
        rhs_contracting: rc,
        lhs_batch: lb,
        rhs_batch: rb,
    } = dimension_numbers;
    let in_range = |dims: &[usize], r: usize| dims.iter().all(|&d| d < r);
    if lc.len() != rc.len()
        || lb.len() != rb.len()
        || !in_range(lc, ls.len())
        || !in_range(lb, ls.len())
        || !in_range(rc, rs.len())
        || !in_range(rb, rs.len())
    {
        return Err(IrError::ty("dot_general", "bad dimension numbers"));
    }
    let lf = free_dims(ls.len(), lb, lc);
    let rf = free_dims(rs.len(), rb, rc);
    let prod = |s: &[Sz], dims: &[usize]| Sz::prod(dims.iter().map(|&d| &s[d]));
    let (bn, m, kk, n) = (prod(&ls, lb), prod(&ls, &lf), prod(&ls, lc), prod(&rs, &rf));
    let lv = scope.atom(la)?;
    let rv = scope.atom(ra)?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, od, _) = outs[0].clone();
    let l_perm: Vec<usize> = lb.iter().chain(&lf).chain(lc).copied().collect();
    let r_perm: Vec<usize> = rb.iter().chain(rc).chain(&rf).copied().collect();
    let a = permuted(b, steps, lv, dl, &ls, &l_perm)?;
    let bb = permuted(b, steps, rv, dr, &rs, &r_perm)?;
    let oshape = [bn.clone(), m.clone(), n.clone()];
    let gemm = crate::lower::linalg::gemm_compute(&b.opts, dl, od, *precision);
    if let (true, Some(compute_kind)) = (dl == dr, gemm) {
        // An empty contraction stores zeros: a fill kernel, built once.
        let mut zsteps = Vec::new();
        copy_into(
            b,
            &mut zsteps,
            DV::Lit(jaxon_ir::Literal::new(0.0, od)),
            out,
            &Sz::prod(&oshape),
        )?;
        steps.push(SStep::Gemm {
            g: SGemm {
                batch: bn,
                m,
                n,
                k: kk,
                operand_dtype: dl,
                out_dtype: od,
                compute: compute_kind,
            },
            a,
            b: bb,
            out,
            zero: zsteps,
        });
        return Ok(());
    }
    if od.is_bool() || dl.is_bool() || dr.is_bool() {
        return Err(cannot(q, "bool products are not lowered"));
    }
    // Integer and mixed products: one thread per output element.
    let acc_t = compute(od);
    let (ast, bst) = (
        strides(&[bn.clone(), m.clone(), kk.clone()]),
        strides(&[bn.clone(), kk.clone(), n.clone()]),
    );
    gather(b, steps, "dot", out, &oshape, |k, args, b, idx| {
        let acc = k.let_("acc", acc_t, Expr::constant(acc_t, 0.0));
        let pv = k.var("p", DType::I64);
        let kn = args.size(k, &kk);
        let mut res = Ok(());
        k.for_(pv, i64c(0), kn, i64c(1), |k| {
            res = (|| {
                let ai = [idx[0].clone(), idx[1].clone(), Expr::var(pv)];
                let bi = [idx[0].clone(), Expr::var(pv), idx[2].clone()];
                let at = offset(k, args, &ast, &ai);
                let bt = offset(k, args, &bst, &bi);
                let x = load(k, args, b, DV::Buf(a), at)?;
                let y = load(k, args, b, DV::Buf(bb), bt)?;
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
        res?;
        Ok(Expr::var(acc))
    })
}
