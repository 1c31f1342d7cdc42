//! Dynamic-shape `scatter-add` (the transpose of `gather` and of
//! `dynamic_slice` with a traced size, so grads of dynamic programs reach
//! it): the operand is copied into the result, then one thread per update
//! element adds it with an atomic. Without operand batching dimensions;
//! `CLIP` clamps each window start into the operand, every other mode drops
//! an update whose window is out of bounds (as the interpreter does).
//!
//! Invariants: only `i32`/`u32`/`i64`/`u64`/`f32`/`f64` results (the
//! atomics KIR has); integer sums are exact, float sums may round in
//! another order than the interpreter's sequential one (as on XLA's GPU
//! backend). Every store index is inside the operand: dropped updates
//! store nothing, clamped ones are clamped first.

use super::build::{bind_outputs, cannot, copy_into, load, loop_kernel, offset, ty, Scope, B};
use super::sym::{strides, Sz, SzOp};
use super::SStep;
use crate::kir::{AtomicOp, Expr};
use crate::lower::kernel::i64c;
use jaxon_ir::primitive::{GatherScatterMode, ScatterKind, ScatterParams};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// Lowers a scatter equation (`scatter-add` only; the others are refused).
pub(crate) fn lower(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    p: &ScatterParams,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    match p.kind {
        ScatterKind::Add => {}
        ScatterKind::Set | ScatterKind::Mul | ScatterKind::Min | ScatterKind::Max => {
            return Err(cannot(q, "no dynamic-shape lowering yet"))
        }
    }
    let [xa, ia, ua] = q.inputs.as_slice() else {
        return Err(IrError::Invalid(
            "scatter-add: expected three operands".into(),
        ));
    };
    if q.outputs.len() != 1 {
        return Err(IrError::Invalid("scatter-add: expected one result".into()));
    }
    let dn = &p.dimension_numbers;
    if !dn.operand_batching_dims.is_empty() || !dn.scatter_indices_batching_dims.is_empty() {
        return Err(cannot(q, "operand batching dimensions"));
    }
    let (xdt, xs) = ty(jaxpr, scope, xa)?;
    if !matches!(
        xdt,
        DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::F32 | DType::F64
    ) {
        return Err(cannot(q, format!("{xdt} results (no atomic add)")));
    }
    let x = scope.atom(xa)?;
    let iv = scope.atom(ia)?;
    let (_, is) = ty(jaxpr, scope, ia)?;
    let u = scope.atom(ua)?;
    let (_, us) = ty(jaxpr, scope, ua)?;
    let outs = bind_outputs(b, jaxpr, q, scope)?;
    let (out, _, os) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid("scatter-add: no result".into()))?;
    let r = xs.len();
    let uwd = dn.update_window_dims.to_usizes();
    let inserted = dn.inserted_window_dims.to_usizes();
    let sdod = dn.scatter_dims_to_operand_dims.to_usizes();
    let Some((nvec, _)) = is.split_last() else {
        return Err(IrError::ty("scatter-add", "indices of rank 0"));
    };
    let window: Vec<usize> = (0..r).filter(|d| !inserted.contains(d)).collect();
    if window.len() != uwd.len()
        || uwd.iter().any(|&d| d >= us.len())
        || sdod.iter().any(|&d| d >= r)
        || *nvec != Sz::C(sdod.len() as i64)
    {
        return Err(IrError::ty(
            "scatter-add",
            "dimension numbers do not fit the operands",
        ));
    }
    // Window size per operand dim: the update's size on its window dims, 1
    // on inserted ones.
    let mut wsize = vec![Sz::C(1); r];
    for (w, &d) in window.iter().enumerate() {
        wsize[d] = us[uwd[w]].clone();
    }
    let batch_pos: Vec<usize> = (0..us.len()).filter(|d| !uwd.contains(d)).collect();
    let clip = match p.mode {
        GatherScatterMode::Clip => true,
        GatherScatterMode::FillOrDrop
        | GatherScatterMode::PromiseInBounds
        | GatherScatterMode::OneHot => false,
    };
    copy_into(b, steps, x, out, &Sz::prod(&os))?;
    let (ist, xst) = (strides(&is), strides(&xs));
    loop_kernel(b, steps, "scatter_add", &us, |k, args, b, lin, idx| {
        let mut ii: Vec<Expr> = batch_pos.iter().map(|&d| idx[d].clone()).collect();
        ii.push(i64c(0));
        let base = offset(k, args, &ist, &ii);
        let base = k.let_("ib", DType::I64, base);
        let mut start = vec![i64c(0); r];
        let mut ok = Expr::bool(true);
        for (j, &d) in sdod.iter().enumerate() {
            let s = load(k, args, b, iv, Expr::var(base) + i64c(j as i64))?.cast(DType::I64);
            let s = k.let_("s", DType::I64, s);
            let hi = args.size(k, &Sz::bin(SzOp::Sub, xs[d].clone(), wsize[d].clone()));
            if clip {
                start[d] = Expr::var(s).min(hi).max(i64c(0));
            } else {
                ok = ok.and(Expr::var(s).ge(i64c(0))).and(Expr::var(s).le(hi));
                start[d] = Expr::var(s);
            }
        }
        let mut xi = start;
        for (w, &d) in window.iter().enumerate() {
            xi[d] = xi[d].clone() + idx[uwd[w]].clone();
        }
        let at = offset(k, args, &xst, &xi);
        let v = load(k, args, b, u, lin.clone())?;
        let p = args.buffer(k, b, out, true)?;
        k.if_(ok, |k| {
            let at = k.let_("at", DType::I64, at);
            k.atomic(AtomicOp::Add, p.into(), Expr::var(at), v.cast(xdt));
        });
        Ok(())
    })
}
