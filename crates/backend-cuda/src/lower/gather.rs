//! `gather` and the scatters (`scatter`, `scatter-add`, `-mul`, `-min`,
//! `-max`), with batching dims and every mode, exactly as
//! `ir::interp::ops::indexing` does out of bounds:
//!
//! - A window start per operand dim comes from the index vector (through
//!   `start_index_map` / `scatter_dims_to_operand_dims`), from the batch
//!   position (batching dims), or is 0. A start is in bounds when
//!   `0 <= s <= shape - max(size, 1)`; an operand dim smaller than its
//!   window has no valid start at all.
//! - **gather** clamps starts into bounds in every mode but `FILL_OR_DROP`,
//!   where a window with any out-of-bounds start reads the fill value
//!   (default NaN, the minimum signed or maximum unsigned integer, `true`).
//!   One thread per result element; the operand read is masked off for
//!   filled elements.
//! - **scatter** clamps only in `CLIP`; in every other mode an update
//!   whose window is out of bounds is dropped. Updates apply in row-major
//!   order of the updates array. Three kernels do this:
//!   - *owner computes* (exact for every combiner, overlapping windows
//!     included): one thread per operand element walks the batch in order
//!     and combines every update whose window covers the element, so the
//!     result equals the interpreter's sequential one bit for bit, with no
//!     races. Cost: result size × batch size × rank.
//!   - *unique indices*: a plain `scatter` with `unique_indices=True`, no
//!     clamping (any mode but `CLIP`) and size-1 windows on every indexed
//!     dim has disjoint targets; one thread per update element stores it.
//!     Exact while the caller's promise holds (XLA's contract too).
//!   - *atomics* (`scatter-add` on 32/64-bit integers and floats,
//!     `scatter-min`/`-max` on 32/64-bit integers): the operand is copied,
//!     then one thread per update element applies an atomic. Integer
//!     results are exact; float sums may round in another order than the
//!     interpreter's (as on XLA's GPU backend).
//!
//! Invariant: every load and store index is guarded — gathers read only
//! clamped or masked-in positions, scatters touch only windows that were
//! checked to lie inside the operand.

use super::kernel::{
    affine, compute, copy_into, i64c, load, load_masked, loop_kernel, multi_index, round_to, store,
    strides, try_if, Args,
};
use super::plan::{BufId, Step};
use super::{atom_type, bind_outputs, Ctx, Env, Value};
use crate::kir::{AtomicOp, Const, Expr, KernelBuilder};
use jaxon_ir::primitive::{FillValue, GatherParams, GatherScatterMode, ScatterKind, ScatterParams};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr, Storage};

/// How index vectors map to window starts in the operand: the shared
/// part of a gather's and a scatter's dimension numbers.
struct Windows {
    /// Operand shape.
    shape: Vec<usize>,
    /// Window size per operand dim.
    sizes: Vec<usize>,
    /// Per operand dim: which index-vector component gives its start.
    from_index: Vec<Option<usize>>,
    /// Per operand dim: which batch dim gives its start (batching dims).
    from_batch: Vec<Option<usize>>,
    /// Operand window dims (not collapsed/inserted, not batching), in order.
    window_dims: Vec<usize>,
    /// Batch shape (the indices' shape without its last dim).
    batch_shape: Vec<usize>,
    /// Components per index vector.
    nvec: usize,
    /// Clamp starts (else out-of-bounds windows fill or drop).
    clamp: bool,
}

impl Windows {
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        shape: &[usize],
        indices_shape: &[usize],
        sizes: Vec<usize>,
        removed: &[i64],
        index_map: &[i64],
        operand_batching: &[i64],
        indices_batching: &[i64],
        clamp: bool,
    ) -> Result<Windows, IrError> {
        let r = shape.len();
        let (nvec, batch_shape) = match indices_shape.split_last() {
            Some((n, b)) => (*n, b.to_vec()),
            None => return Err(IrError::ty(name, "indices must have rank >= 1")),
        };
        let bad_dim = |d: &i64| *d < 0 || *d as usize >= r;
        if nvec != index_map.len()
            || index_map.iter().any(bad_dim)
            || removed.iter().any(bad_dim)
            || operand_batching.iter().any(bad_dim)
            || operand_batching.len() != indices_batching.len()
            || indices_batching
                .iter()
                .any(|&d| d < 0 || d as usize >= batch_shape.len())
            || sizes.len() != r
        {
            return Err(IrError::ty(name, "inconsistent dimension numbers"));
        }
        let mut from_index = vec![None; r];
        for (k, &d) in index_map.iter().enumerate() {
            from_index[d as usize] = Some(k);
        }
        let mut from_batch = vec![None; r];
        for (i, &d) in operand_batching.iter().enumerate() {
            from_index[d as usize] = None;
            from_batch[d as usize] = Some(indices_batching[i] as usize);
        }
        let window_dims = (0..r)
            .filter(|d| !removed.contains(&(*d as i64)) && !operand_batching.contains(&(*d as i64)))
            .collect();
        Ok(Windows {
            shape: shape.to_vec(),
            sizes,
            from_index,
            from_batch,
            window_dims,
            batch_shape,
            nvec,
            clamp,
        })
    }

    /// Whether some operand dim is smaller than its window (no start fits).
    fn never_fits(&self) -> bool {
        self.shape
            .iter()
            .zip(&self.sizes)
            .any(|(&n, &s)| (n as i64) < s.max(1) as i64)
    }

    /// The window starts (clamped, or checked) of batch position `g`, and
    /// an `oob` flag variable (always false when clamping).
    fn starts(
        &self,
        k: &mut KernelBuilder,
        args: &mut Args,
        ctx: &Ctx,
        indices: Value,
        g: &[Expr],
    ) -> Result<(Vec<Expr>, Expr), IrError> {
        let bst = strides(&self.batch_shape);
        let vbase = k.let_(
            "vbase",
            DType::I64,
            affine(0, &bst, g) * i64c(self.nvec as i64),
        );
        let mut starts = Vec::new();
        let mut oob = Expr::bool(false);
        for d in 0..self.shape.len() {
            let raw = match (self.from_index[d], self.from_batch[d]) {
                (_, Some(b)) => g[b].clone(),
                (Some(c), None) => {
                    let v = load(k, args, ctx, indices, Expr::var(vbase) + i64c(c as i64))?;
                    v.cast(DType::I64)
                }
                (None, None) => i64c(0),
            };
            let hi = self.shape[d] as i64 - self.sizes[d].max(1) as i64;
            let s = k.let_("start", DType::I64, raw);
            if self.clamp {
                k.assign(s, Expr::var(s).max(i64c(0)).min(i64c(hi.max(0))));
            } else {
                oob = oob
                    .or(Expr::var(s).lt(i64c(0)))
                    .or(Expr::var(s).gt(i64c(hi)));
            }
            starts.push(Expr::var(s));
        }
        let oob = k.let_("oob", DType::Bool, oob);
        Ok((starts, Expr::var(oob)))
    }
}

/// Lowers a `gather`.
pub(crate) fn gather(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &GatherParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "gather";
    let (xa, ia) = match eqn.inputs.as_slice() {
        [x, i] => (x, i),
        _ => return Err(arity(name)),
    };
    let (d, xshape) = atom_type(jaxpr, xa)?;
    let (idt, ishape) = atom_type(jaxpr, ia)?;
    if !idt.is_int() {
        return Err(IrError::ty(name, "indices must be integers"));
    }
    let dn = &p.dimension_numbers;
    let sizes = p.slice_sizes.to_usizes();
    if sizes.iter().zip(&xshape).any(|(s, n)| s > n) {
        return Err(IrError::ty(name, "slice sizes exceed the operand shape"));
    }
    let fill_mode = p.mode == GatherScatterMode::FillOrDrop;
    let w = Windows::new(
        name,
        &xshape,
        &ishape,
        sizes,
        &dn.collapsed_slice_dims,
        &dn.start_index_map,
        &dn.operand_batching_dims,
        &dn.start_indices_batching_dims,
        !fill_mode,
    )?;
    let offset_pos = dn.offset_dims.to_usizes();
    let (x, idx_v) = (env.atom(xa)?, env.atom(ia)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, oshape) = outs.first().cloned().ok_or_else(|| arity(name))?;
    if w.window_dims.len() != offset_pos.len()
        || oshape.len() != w.batch_shape.len() + offset_pos.len()
        || offset_pos.iter().any(|&o| o >= oshape.len())
    {
        return Err(IrError::ty(
            name,
            "offset_dims do not match the window dims",
        ));
    }
    let n: usize = oshape.iter().product();
    if n > 0 && w.never_fits() && !fill_mode {
        return Err(IrError::Eval(format!(
            "{name}: a window does not fit in operand of shape {xshape:?}, and mode {:?} cannot fill",
            p.mode
        )));
    }
    let fill = fill_expr(d, p.fill_value);
    let xs = strides(&xshape);
    let never = w.never_fits();
    let step = loop_kernel(ctx, name, &oshape, |k, args, ctx, lin, idx| {
        if never {
            return store(k, args, ctx, out, lin.clone(), fill.clone());
        }
        let (mut g, mut win) = (Vec::new(), Vec::new());
        for (q, e) in idx.iter().enumerate() {
            if offset_pos.contains(&q) {
                win.push(e.clone());
            } else {
                g.push(e.clone());
            }
        }
        let (starts, oob) = w.starts(k, args, ctx, idx_v, &g)?;
        let mut pos = starts;
        for (i, &od) in w.window_dims.iter().enumerate() {
            pos[od] = pos[od].clone() + win[i].clone();
        }
        let off = k.let_("off", DType::I64, affine(0, &xs, &pos));
        let v = if fill_mode {
            let inb = oob.clone().unary(crate::kir::UnOp::Not);
            let v = load_masked(k, args, ctx, x, Expr::var(off), inb)?;
            Expr::select(oob, fill.clone(), v)
        } else {
            load(k, args, ctx, x, Expr::var(off))?
        };
        store(k, args, ctx, out, lin.clone(), v)
    })?;
    steps.extend(step);
    Ok(())
}

/// A gather's fill value as a compute-dtype constant of storage dtype `d`,
/// converted as the interpreter does.
fn fill_expr(d: DType, fill: Option<FillValue>) -> Expr {
    let c = compute(d);
    match fill {
        Some(FillValue::Int(i)) => {
            if d.is_float() {
                Expr::Const(Const::from_f64(c, Const::int(d, i).to_f64()))
            } else {
                Expr::Const(Const::int(d, i))
            }
        }
        Some(FillValue::Float(f)) => {
            let s = Storage::from_f64(d, &[f]);
            if d.is_float() {
                Expr::Const(Const::from_f64(c, s.get_f64(0)))
            } else {
                Expr::Const(Const::int(d, s.get_i64(0)))
            }
        }
        None => match d {
            DType::Bool => Expr::bool(true),
            DType::F16
            | DType::BF16
            | DType::F32
            | DType::F64
            | DType::C64
            | DType::C128
            | DType::KeyFry => Expr::Const(Const::from_f64(c, f64::NAN)),
            DType::I8 => Expr::int(d, i64::from(i8::MIN)),
            DType::I16 => Expr::int(d, i64::from(i16::MIN)),
            DType::I32 => Expr::int(d, i64::from(i32::MIN)),
            DType::I64 => Expr::int(d, i64::MIN),
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => Expr::int(d, -1),
        },
    }
}

fn arity(name: &str) -> IrError {
    IrError::Invalid(format!("{name}: wrong number of operands or results"))
}

/// Lowers a scatter.
pub(crate) fn scatter(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &ScatterParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = p.kind.name();
    let (xa, ia, ua) = match eqn.inputs.as_slice() {
        [x, i, u] => (x, i, u),
        _ => return Err(arity(name)),
    };
    let (d, xshape) = atom_type(jaxpr, xa)?;
    let (idt, ishape) = atom_type(jaxpr, ia)?;
    let (ud, ushape) = atom_type(jaxpr, ua)?;
    if ud != d {
        return Err(IrError::ty(
            name,
            format!("operand {d} and updates {ud} differ"),
        ));
    }
    if !idt.is_int() {
        return Err(IrError::ty(name, "indices must be integers"));
    }
    let dn = &p.dimension_numbers;
    let uwd = dn.update_window_dims.to_usizes();
    let mut sizes = vec![1usize; xshape.len()];
    let mut wi = 0;
    for (od, s) in sizes.iter_mut().enumerate() {
        let di = od as i64;
        if dn.inserted_window_dims.contains(&di) || dn.operand_batching_dims.contains(&di) {
            continue;
        }
        let ud = *uwd
            .get(wi)
            .ok_or_else(|| IrError::ty(name, "too few update_window_dims"))?;
        *s = *ushape
            .get(ud)
            .ok_or_else(|| IrError::ty(name, "update window dim out of range"))?;
        wi += 1;
    }
    let w = Windows::new(
        name,
        &xshape,
        &ishape,
        sizes,
        &dn.inserted_window_dims,
        &dn.scatter_dims_to_operand_dims,
        &dn.operand_batching_dims,
        &dn.scatter_indices_batching_dims,
        p.mode == GatherScatterMode::Clip,
    )?;
    if wi != uwd.len() || ushape.len() != w.batch_shape.len() + uwd.len() {
        return Err(IrError::ty(
            name,
            "updates shape does not match the dimension numbers",
        ));
    }
    let (x, iv, u) = (env.atom(xa)?, env.atom(ia)?, env.atom(ua)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, _) = outs.first().cloned().ok_or_else(|| arity(name))?;
    let len: usize = xshape.iter().product();
    let nb: usize = w.batch_shape.iter().product();
    let nu: usize = ushape.iter().product();
    if w.never_fits() || nu == 0 || nb == 0 {
        return copy_into(ctx, steps, x, out, len);
    }
    let atomic = match (p.kind, d) {
        (ScatterKind::Add, DType::I32 | DType::U32 | DType::I64 | DType::U64) => {
            Some(AtomicOp::Add)
        }
        (ScatterKind::Add, DType::F32 | DType::F64) => Some(AtomicOp::Add),
        (ScatterKind::Min, DType::I32 | DType::U32 | DType::I64 | DType::U64) => {
            Some(AtomicOp::Min)
        }
        (ScatterKind::Max, DType::I32 | DType::U32 | DType::I64 | DType::U64) => {
            Some(AtomicOp::Max)
        }
        (
            ScatterKind::Set
            | ScatterKind::Add
            | ScatterKind::Mul
            | ScatterKind::Min
            | ScatterKind::Max,
            _,
        ) => None,
    };
    let sc = Scatter {
        w,
        uwd,
        ushape,
        x,
        iv,
        u,
        out,
        kind: p.kind,
        d,
    };
    // A plain scatter whose caller promises unique indices, with no
    // clamping (which could merge them) and only size-1 windows on the
    // indexed dims, has disjoint targets: its updates are stored in
    // parallel. (If the promise is broken the result is one of the
    // updates, as on XLA; the interpreter applies them in order.)
    let disjoint = p.kind == ScatterKind::Set
        && p.unique_indices
        && p.mode != GatherScatterMode::Clip
        && dn
            .scatter_dims_to_operand_dims
            .iter()
            .all(|d| dn.inserted_window_dims.contains(d));
    match (atomic, disjoint) {
        (Some(op), _) => {
            copy_into(ctx, steps, x, out, len)?;
            sc.update_kernel(ctx, steps, name, Some(op))
        }
        (None, true) => {
            copy_into(ctx, steps, x, out, len)?;
            sc.update_kernel(ctx, steps, name, None)
        }
        (None, false) => sc.owner_kernel(ctx, steps, name, &xshape),
    }
}

/// One scatter being lowered.
struct Scatter {
    w: Windows,
    uwd: Vec<usize>,
    ushape: Vec<usize>,
    x: Value,
    iv: Value,
    u: Value,
    out: BufId,
    kind: ScatterKind,
    d: DType,
}

impl Scatter {
    /// One thread per update element, applying an atomic to its target
    /// (`None`: storing it, for a plain scatter with disjoint targets).
    fn update_kernel(
        &self,
        ctx: &mut Ctx,
        steps: &mut Vec<Step>,
        name: &str,
        op: Option<AtomicOp>,
    ) -> Result<(), IrError> {
        let xs = strides(&self.w.shape);
        let step = loop_kernel(ctx, name, &self.ushape, |k, args, ctx, lin, idx| {
            let (mut g, mut win) = (Vec::new(), Vec::new());
            for (q, e) in idx.iter().enumerate() {
                if self.uwd.contains(&q) {
                    win.push(e.clone());
                } else {
                    g.push(e.clone());
                }
            }
            let (mut pos, oob) = self.w.starts(k, args, ctx, self.iv, &g)?;
            for (i, &od) in self.w.window_dims.iter().enumerate() {
                pos[od] = pos[od].clone() + win[i].clone();
            }
            let t = k.let_("t", DType::I64, affine(0, &xs, &pos));
            let v = load(k, args, ctx, self.u, lin.clone())?;
            let v = k.let_("v", compute(self.d), v);
            let inb = oob.unary(crate::kir::UnOp::Not);
            match op {
                Some(op) => {
                    let p = args.buffer(k, ctx, self.out, true)?;
                    k.if_(inb, |k| {
                        k.atomic(op, p.into(), Expr::var(t), Expr::var(v));
                    });
                    Ok(())
                }
                None => try_if(k, inb, |k| {
                    store(k, args, ctx, self.out, Expr::var(t), Expr::var(v))
                }),
            }
        })?;
        steps.extend(step);
        Ok(())
    }

    /// One thread per operand element, combining every covering update in
    /// the interpreter's order.
    fn owner_kernel(
        &self,
        ctx: &mut Ctx,
        steps: &mut Vec<Step>,
        name: &str,
        xshape: &[usize],
    ) -> Result<(), IrError> {
        let us = strides(&self.ushape);
        let nb: usize = self.w.batch_shape.iter().product();
        let c = compute(self.d);
        let step = loop_kernel(ctx, name, xshape, |k, args, ctx, lin, idx| {
            let x0 = load(k, args, ctx, self.x, lin.clone())?;
            let acc = k.let_("acc", c, x0);
            let b = k.var("b", DType::I64);
            let mut res = Ok(());
            k.for_(b, i64c(0), i64c(nb as i64), i64c(1), |k| {
                res = self.owner_step(k, args, ctx, &us, idx, Expr::var(b), acc);
            });
            res?;
            store(k, args, ctx, self.out, lin.clone(), Expr::var(acc))
        })?;
        steps.extend(step);
        Ok(())
    }

    /// Batch element `b`: combines its update into `acc` when its window
    /// covers the operand element at `idx`.
    #[allow(clippy::too_many_arguments)]
    fn owner_step(
        &self,
        k: &mut KernelBuilder,
        args: &mut Args,
        ctx: &Ctx,
        us: &[i64],
        idx: &[Expr],
        b: Expr,
        acc: crate::kir::Var,
    ) -> Result<(), IrError> {
        let g = multi_index(k, b, &self.w.batch_shape);
        let (starts, oob) = self.w.starts(k, args, ctx, self.iv, &g)?;
        let mut hit = oob.unary(crate::kir::UnOp::Not);
        let mut rel = Vec::new();
        for (od, s) in starts.iter().enumerate() {
            let r = k.let_("rel", DType::I64, idx[od].clone() - s.clone());
            hit = hit
                .and(Expr::var(r).ge(i64c(0)))
                .and(Expr::var(r).lt(i64c(self.w.sizes[od] as i64)));
            rel.push(Expr::var(r));
        }
        let hit = k.let_("hit", DType::Bool, hit);
        // The update element: batch dims from `g`, window dims from `rel`.
        let mut uidx = Vec::with_capacity(self.ushape.len());
        let (mut gi, mut wi) = (0, 0);
        for q in 0..self.ushape.len() {
            if self.uwd.contains(&q) {
                uidx.push(rel[self.w.window_dims[wi]].clone());
                wi += 1;
            } else {
                uidx.push(g[gi].clone());
                gi += 1;
            }
        }
        let ue = affine(0, us, &uidx);
        let v = load_masked(k, args, ctx, self.u, ue, Expr::var(hit))?;
        let next = combine(self.kind, self.d, Expr::var(acc), v);
        k.assign(acc, Expr::select(Expr::var(hit), next, Expr::var(acc)));
        Ok(())
    }
}

/// The scatter combiner on compute-dtype values of storage dtype `d`.
fn combine(kind: ScatterKind, d: DType, a: Expr, b: Expr) -> Expr {
    if d.is_bool() {
        return match kind {
            ScatterKind::Set => b,
            ScatterKind::Add | ScatterKind::Max => a.or(b),
            ScatterKind::Mul | ScatterKind::Min => a.and(b),
        };
    }
    match kind {
        ScatterKind::Set => b,
        ScatterKind::Add => round_to(d, a + b),
        ScatterKind::Mul => round_to(d, a * b),
        ScatterKind::Min => a.min(b),
        ScatterKind::Max => a.max(b),
    }
}
