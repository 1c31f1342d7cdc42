//! The window family: `reduce_window_{sum,max,min}`, the generic
//! `reduce_window` whose body is elementwise, `select_and_gather_add` and
//! `select_and_scatter_add`, as one-thread-per-element kernels —
//! deterministic, with no atomics.
//!
//! Geometry follows the interpreter (`ir::interp::ops::window`): output
//! position `o` and window tap `k` read operand position
//! `(o * stride + k * window_dilation - pad_lo) / base_dilation` when that
//! is on the dilation grid and inside the operand; other taps are padding.
//! The fixed reductions skip padding (an empty window is the identity:
//! 0, -inf, +inf, the integer bounds; a window of no taps is 0); the
//! generic one folds its init value in for padding, as XLA does. Taps are
//! visited in row-major order, so float sums round as the interpreter's.
//! 16-bit floats accumulate in `f32` and round once at the store (the
//! generic body rounds after each operation, as its equations do).
//!
//! `select_and_scatter_add` is two kernels: one thread per window picks
//! its selected operand element (the first best under `ge`/`le`, into an
//! `i64` buffer, -1 for an all-padding window), then one thread per operand
//! element walks the windows that can contain it in row-major order and
//! sums the sources of those that selected it — the interpreter's
//! sequential order, so float sums are bit-identical and there are no
//! races.

use super::kernel::{
    compute, i64c, lit_expr, load, loop_kernel, multi_index, store, try_for, try_if,
};
use super::plan::Step;
use super::{atom_type, bind_outputs, elementwise, unsupported, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder};
use jaxon_ir::primitive::{Elementwise, Primitive, SelectPrim, Window, WindowGeometry, WindowOp};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Eqn, IrError, Jaxpr};
use std::collections::HashMap;
use std::sync::Arc;

/// Lowers one window equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Window,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    match p {
        Window::ReduceWindow(rp) => reduce_window(ctx, jaxpr, eqn, rp.op, &rp.window, env, steps),
        Window::Generic(gp) => generic(ctx, jaxpr, eqn, &gp.jaxpr, &gp.window, env, steps),
        Window::SelectAndGatherAdd(sp) => {
            select_and_gather_add(ctx, jaxpr, eqn, sp.select_prim, &sp.window, env, steps)
        }
        Window::SelectAndScatterAdd(sp) => {
            select_and_scatter_add(ctx, jaxpr, eqn, sp.select_prim, &sp.geometry(), env, steps)
        }
    }
}

/// The output shape of windows `w` over an operand of `shape`, checked.
fn out_shape(name: &str, shape: &[usize], w: &WindowGeometry) -> Result<Vec<usize>, IrError> {
    w.check(name, shape.len())
        .map_err(|e| IrError::ty(name, e))?;
    (0..shape.len())
        .map(|d| {
            w.out_dim(d, shape[d])
                .ok_or_else(|| IrError::ty(name, format!("padding makes dimension {d} negative")))
        })
        .collect()
}

/// Whether window tap `tap` of output position `o` reads an operand
/// element, and that element's flat index.
fn tap_pos(
    k: &mut KernelBuilder,
    o: &[Expr],
    tap: &[Expr],
    w: &WindowGeometry,
    shape: &[usize],
) -> (Expr, Expr) {
    let st = super::kernel::strides(shape);
    let mut valid = Expr::bool(true);
    let mut flat = i64c(0);
    for d in 0..shape.len() {
        let pos = k.let_(
            "wpos",
            DType::I64,
            o[d].clone() * i64c(w.window_strides[d] as i64)
                + tap[d].clone() * i64c(w.window_dilation[d] as i64)
                - i64c(w.padding[d].0),
        );
        let b = w.base_dilation[d] as i64;
        let ix = if b == 1 {
            Expr::var(pos)
        } else {
            valid = valid.and((Expr::var(pos) % i64c(b)).eq(i64c(0)));
            Expr::var(pos) / i64c(b)
        };
        let ix = k.let_("wix", DType::I64, ix);
        valid = valid
            .and(Expr::var(pos).ge(i64c(0)))
            .and(Expr::var(ix).lt(i64c(shape[d] as i64)));
        flat = flat + Expr::var(ix) * i64c(st[d]);
    }
    (valid, flat)
}

/// Loops over the taps of a window (row-major), with a fallible body that
/// gets the tap's validity and flat operand index.
fn for_taps(
    k: &mut KernelBuilder,
    o: &[Expr],
    w: &WindowGeometry,
    shape: &[usize],
    body: impl FnOnce(&mut KernelBuilder, Expr, Expr) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let wsize: usize = w.window_dimensions.iter().product();
    let tap = k.var("tap", DType::I64);
    try_for(k, tap, (i64c(0), i64c(wsize as i64), i64c(1)), |k| {
        let t = multi_index(k, Expr::var(tap), &w.window_dimensions);
        let (valid, flat) = tap_pos(k, o, &t, w, shape);
        let valid = k.let_("wvalid", DType::Bool, valid);
        let flat = k.let_("wflat", DType::I64, flat);
        body(k, Expr::var(valid), Expr::var(flat))
    })
}

/// The one operand and one result of a window equation.
fn unary_io<'a>(name: &str, eqn: &'a Eqn) -> Result<(&'a Atom, &'a Binder), IrError> {
    match (eqn.inputs.as_slice(), eqn.outputs.as_slice()) {
        ([a], [b]) => Ok((a, b)),
        _ => Err(IrError::Invalid(format!(
            "{name}: wrong number of operands"
        ))),
    }
}

fn check_out(name: &str, got: &[usize], want: &[usize]) -> Result<(), IrError> {
    if got == want {
        Ok(())
    } else {
        Err(IrError::ty(
            name,
            format!("result shape {got:?}, the windows give {want:?}"),
        ))
    }
}

/// The largest and smallest values of an integer dtype, as constants.
fn int_bounds(d: DType) -> (Expr, Expr) {
    let bits = d.bits();
    if d.is_signed_int() {
        let max = if bits == 64 {
            i64::MAX
        } else {
            (1i64 << (bits - 1)) - 1
        };
        (Expr::int(d, -max - 1), Expr::int(d, max))
    } else {
        // All ones: -1 wrapped to the width.
        (Expr::int(d, 0), Expr::int(d, -1))
    }
}

/// `reduce_window_{sum,max,min}`.
fn reduce_window(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    op: WindowOp,
    w: &WindowGeometry,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = op.name();
    let (a, _) = unary_io(name, eqn)?;
    let (d, shape) = atom_type(jaxpr, a)?;
    let want = out_shape(name, &shape, w)?;
    let x = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, od, oshape) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid(format!("{name}: no result")))?;
    check_out(name, &oshape, &want)?;
    if od != d {
        return Err(IrError::ty(name, format!("result dtype {od}, operand {d}")));
    }
    if d.is_complex() || d == DType::KeyFry {
        return Err(unsupported(name, format!("dtype {d} is not supported")));
    }
    let c = compute(d);
    let wsize: usize = w.window_dimensions.iter().product();
    let init = if d.is_bool() {
        Expr::bool(op == WindowOp::Min)
    } else if wsize == 0 {
        Expr::int(c, 0)
    } else if d.is_float() {
        match op {
            WindowOp::Sum => Expr::constant(c, 0.0),
            WindowOp::Max => Expr::constant(c, f64::NEG_INFINITY),
            WindowOp::Min => Expr::constant(c, f64::INFINITY),
        }
    } else {
        let (lo, hi) = int_bounds(d);
        match op {
            WindowOp::Sum => Expr::int(c, 0),
            WindowOp::Max => lo,
            WindowOp::Min => hi,
        }
    };
    let step = loop_kernel(ctx, name, &want, |k, args, ctx, lin, o| {
        let acc = k.let_("acc", c, init);
        for_taps(k, o, w, &shape, |k, valid, flat| {
            try_if(k, valid, |k| {
                let v = load(k, args, ctx, x, flat)?;
                let next = match (op, d.is_bool()) {
                    (WindowOp::Sum | WindowOp::Max, true) => Expr::var(acc).or(v),
                    (WindowOp::Min, true) => Expr::var(acc).and(v),
                    (WindowOp::Sum, false) => Expr::var(acc) + v,
                    (WindowOp::Max, false) => Expr::var(acc).max(v),
                    (WindowOp::Min, false) => Expr::var(acc).min(v),
                };
                k.assign(acc, next);
                Ok(())
            })
        })?;
        store(k, args, ctx, out, lin.clone(), Expr::var(acc))
    })?;
    steps.extend(step);
    Ok(())
}

/// The generic `reduce_window` with an elementwise body (a monoid such as
/// `add`, `max`, or any chain of elementwise equations): operands, then as
/// many init values; the body folds `(acc..., x...)` over each window's
/// taps in row-major order, padding taps reading the init values.
fn generic(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    body: &Arc<Jaxpr>,
    w: &WindowGeometry,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "reduce_window";
    // Calls in the body (`jit` of `_where`, ...) are inlined first.
    let simple = jaxon_ir::passes::simplify(
        &ClosedJaxpr::new(body.clone(), Vec::new()),
        jaxon_ir::primitive::Platform::Cuda,
    )?;
    let body: &Jaxpr = &simple.jaxpr;
    let n = eqn.inputs.len() / 2;
    if n == 0 || eqn.inputs.len() != 2 * n || eqn.outputs.len() != n {
        return Err(IrError::Invalid(format!(
            "{name}: wrong number of operands"
        )));
    }
    if body.invars.len() != 2 * n || body.outvars.len() != n || !body.constvars.is_empty() {
        return Err(IrError::ty(
            name,
            "the body's arity does not match the operands",
        ));
    }
    for e in &body.eqns {
        let ok = matches!(&e.primitive, Primitive::Elementwise(p) if !matches!(
            p,
            Elementwise::Complex | Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_)
        )) && e.outputs.len() == 1;
        if !ok {
            return Err(unsupported(
                name,
                format!(
                    "a body with {} is not lowered (only elementwise bodies)",
                    e.primitive.name()
                ),
            ));
        }
    }
    let mut xs = Vec::new();
    let mut shape0 = None;
    for a in &eqn.inputs[..n] {
        let (d, s) = atom_type(jaxpr, a)?;
        if shape0.as_ref().is_some_and(|s0: &Vec<usize>| *s0 != s) {
            return Err(IrError::ty(name, "operands differ in shape"));
        }
        shape0 = Some(s);
        xs.push((env.atom(a)?, d));
    }
    let shape = shape0.unwrap_or_default();
    let mut inits = Vec::new();
    for (a, (_, d)) in eqn.inputs[n..].iter().zip(&xs) {
        let (id, is) = atom_type(jaxpr, a)?;
        if id != *d || !is.is_empty() {
            return Err(IrError::ty(
                name,
                "init values must be scalars of the operands' dtypes",
            ));
        }
        inits.push(env.atom(a)?);
    }
    for (_, d) in &xs {
        if d.is_complex() || *d == DType::KeyFry {
            return Err(unsupported(name, format!("dtype {d} is not supported")));
        }
    }
    let want = out_shape(name, &shape, w)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    for (_, _, s) in &outs {
        check_out(name, s, &want)?;
    }
    let dtypes: Vec<DType> = xs.iter().map(|(_, d)| *d).collect();
    // One kernel computing every result (each stored to its buffer).
    let step = loop_kernel(ctx, name, &want, |k, args, ctx, lin, o| {
        let mut accs = Vec::new();
        for (init, d) in inits.iter().zip(&dtypes) {
            let v = load(k, args, ctx, *init, i64c(0))?;
            accs.push(k.let_("acc", compute(*d), v));
        }
        for_taps(k, o, w, &shape, |k, valid, flat| {
            let mut elems = Vec::new();
            for ((x, d), init) in xs.iter().zip(&inits) {
                let pad = load(k, args, ctx, *init, i64c(0))?;
                let e = k.let_("elem", compute(*d), pad);
                try_if(k, valid.clone(), |k| {
                    let v = load(k, args, ctx, *x, flat.clone())?;
                    k.assign(e, v);
                    Ok(())
                })?;
                elems.push(Expr::var(e));
            }
            let mut operands: Vec<Expr> = accs.iter().map(|a| Expr::var(*a)).collect();
            operands.extend(elems);
            let results = eval_body(k, body, &dtypes, operands)?;
            // Compute every new value before assigning any accumulator.
            let tmps: Vec<_> = results
                .into_iter()
                .zip(&dtypes)
                .map(|(r, d)| k.let_("next", compute(*d), r))
                .collect();
            for (a, t) in accs.iter().zip(tmps) {
                k.assign(*a, Expr::var(t));
            }
            Ok(())
        })?;
        for ((out, _, _), a) in outs.iter().zip(&accs) {
            store(k, args, ctx, *out, lin.clone(), Expr::var(*a))?;
        }
        Ok(())
    })?;
    steps.extend(step);
    Ok(())
}

/// Evaluates an elementwise body jaxpr on scalar compute-dtype values
/// (`(acc..., x...)`, of `dtypes` twice), returning its results.
fn eval_body(
    k: &mut KernelBuilder,
    body: &Jaxpr,
    dtypes: &[DType],
    operands: Vec<Expr>,
) -> Result<Vec<Expr>, IrError> {
    let name = "reduce_window";
    let mut vals: HashMap<jaxon_ir::Var, (Expr, DType)> = HashMap::new();
    for (v, (x, d)) in body
        .invars
        .iter()
        .zip(operands.into_iter().zip(dtypes.iter().chain(dtypes)))
    {
        vals.insert(*v, (x, *d));
    }
    let atom = |vals: &HashMap<jaxon_ir::Var, (Expr, DType)>, a: &Atom| match a {
        Atom::Lit(l) => Ok((lit_expr(l), l.dtype)),
        Atom::Var(v) => vals
            .get(v)
            .cloned()
            .ok_or_else(|| IrError::Invalid(format!("{name}: body variable {} is unbound", v.0))),
    };
    for e in &body.eqns {
        let Primitive::Elementwise(p) = &e.primitive else {
            return Err(unsupported(name, "only elementwise bodies are lowered"));
        };
        let mut xs = Vec::new();
        let mut ins = Vec::new();
        for a in &e.inputs {
            let (x, d) = atom(&vals, a)?;
            xs.push(x);
            ins.push(d);
        }
        let out = e
            .outputs
            .first()
            .ok_or_else(|| IrError::Invalid(format!("{name}: a body equation has no result")))?;
        let od = body
            .binder_aval(out)
            .and_then(|a| a.as_array().map(|a| a.dtype))
            .ok_or_else(|| IrError::Invalid(format!("{name}: a body result has no type")))?;
        let r = elementwise::scalar(k, p, od, &ins, xs)?;
        let r = k.let_("body", compute(od), r);
        if let Binder::Var(v) = out {
            vals.insert(*v, (Expr::var(r), od));
        }
    }
    body.outvars
        .iter()
        .zip(dtypes)
        .map(|(a, d)| {
            let (x, xd) = atom(&vals, a)?;
            if xd != *d {
                return Err(IrError::ty(name, "the body changes the accumulator dtype"));
            }
            Ok(x)
        })
        .collect()
}

/// The selected operand element of each window (`ge`: the first maximum,
/// `le`: the first minimum; NaN replaces the selection), -1 when every tap
/// is padding, as a per-window body.
#[allow(clippy::too_many_arguments)]
fn select_in_window(
    k: &mut KernelBuilder,
    args: &mut super::kernel::Args,
    ctx: &Ctx,
    x: Value,
    d: DType,
    sel: SelectPrim,
    o: &[Expr],
    w: &WindowGeometry,
    shape: &[usize],
) -> Result<crate::kir::Var, IrError> {
    let c = compute(d);
    let cmp_t = if d.is_bool() { DType::U8 } else { c };
    let best = k.let_("best", DType::I64, i64c(-1));
    let bestv = k.let_(
        "bestv",
        cmp_t,
        if cmp_t.is_float() {
            Expr::constant(cmp_t, 0.0)
        } else {
            Expr::int(cmp_t, 0)
        },
    );
    for_taps(k, o, w, shape, |k, valid, flat| {
        try_if(k, valid, |k| {
            let v = load(k, args, ctx, x, flat.clone())?;
            let v = k.let_("v", cmp_t, if d.is_bool() { v.cast(DType::U8) } else { v });
            let better = match sel {
                SelectPrim::Ge => Expr::var(bestv).ge(Expr::var(v)),
                SelectPrim::Le => Expr::var(bestv).le(Expr::var(v)),
            };
            let keep = Expr::var(best).ne(i64c(-1)).and(better);
            k.if_(keep.unary(crate::kir::UnOp::Not), |k| {
                k.assign(best, flat);
                k.assign(bestv, Expr::var(v));
            });
            Ok(())
        })
    })?;
    Ok(best)
}

/// The operand and the other input of a two-input select primitive.
fn binary_io<'a>(name: &str, eqn: &'a Eqn) -> Result<(&'a Atom, &'a Atom), IrError> {
    match (eqn.inputs.as_slice(), eqn.outputs.len()) {
        ([a, b], 1) => Ok((a, b)),
        _ => Err(IrError::Invalid(format!(
            "{name}: wrong number of operands"
        ))),
    }
}

fn check_select_dtype(name: &str, d: DType) -> Result<(), IrError> {
    if d.is_complex() || d == DType::KeyFry {
        Err(unsupported(name, format!("dtype {d} is not supported")))
    } else {
        Ok(())
    }
}

/// `select_and_gather_add(t, x)`: each window's tangent at the element of
/// `x` it selects (0 for an all-padding window).
fn select_and_gather_add(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    sel: SelectPrim,
    w: &WindowGeometry,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "select_and_gather_add";
    let (ta, xa) = binary_io(name, eqn)?;
    let (td, ts) = atom_type(jaxpr, ta)?;
    let (xd, xs) = atom_type(jaxpr, xa)?;
    if td != xd || ts != xs {
        return Err(IrError::ty(name, "tangents and operand differ in type"));
    }
    check_select_dtype(name, xd)?;
    let want = out_shape(name, &xs, w)?;
    let (t, x) = (env.atom(ta)?, env.atom(xa)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, oshape) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid(format!("{name}: no result")))?;
    check_out(name, &oshape, &want)?;
    let c = compute(td);
    let step = loop_kernel(ctx, name, &want, |k, args, ctx, lin, o| {
        let best = select_in_window(k, args, ctx, x, xd, sel, o, w, &xs)?;
        let zero = if c.is_bool() {
            Expr::bool(false)
        } else {
            Expr::int(c, 0)
        };
        let r = k.let_("r", c, zero);
        try_if(k, Expr::var(best).ge(i64c(0)), |k| {
            let v = load(k, args, ctx, t, Expr::var(best))?;
            k.assign(r, v);
            Ok(())
        })?;
        store(k, args, ctx, out, lin.clone(), Expr::var(r))
    })?;
    steps.extend(step);
    Ok(())
}

/// `select_and_scatter_add(src, x)`: each window's source added at the
/// element of `x` it selects.
fn select_and_scatter_add(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    sel: SelectPrim,
    w: &WindowGeometry,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "select_and_scatter_add";
    let (sa, xa) = binary_io(name, eqn)?;
    let (sd, ss) = atom_type(jaxpr, sa)?;
    let (xd, xs) = atom_type(jaxpr, xa)?;
    check_select_dtype(name, xd)?;
    check_select_dtype(name, sd)?;
    let want = out_shape(name, &xs, w)?;
    check_out(name, &ss, &want)?;
    let (src, x) = (env.atom(sa)?, env.atom(xa)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, od, oshape) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid(format!("{name}: no result")))?;
    if oshape != xs || od != sd {
        return Err(IrError::ty(
            name,
            "the result must have the operand's shape, the source's dtype",
        ));
    }
    // Kernel 1: the selection of every window.
    let selected = ctx.alloc(DType::I64, &want)?;
    let step = loop_kernel(ctx, name, &want, |k, args, ctx, lin, o| {
        let best = select_in_window(k, args, ctx, x, xd, sel, o, w, &xs)?;
        store(k, args, ctx, selected, lin.clone(), Expr::var(best))
    })?;
    steps.extend(step);
    // Kernel 2: every operand element sums the sources of the windows
    // that selected it, in window order.
    let c = compute(sd);
    let out_st = super::kernel::strides(&want);
    let step = loop_kernel(ctx, name, &xs, |k, args, ctx, lin, i| {
        let acc = k.let_(
            "acc",
            c,
            if c.is_bool() {
                Expr::bool(false)
            } else {
                Expr::int(c, 0)
            },
        );
        // The range of window positions per dimension whose span covers
        // the element: o * stride <= p and o * stride + extent > p, where
        // p is the element's position in the padded, dilated operand.
        let mut ranges = Vec::new();
        for d in 0..xs.len() {
            let p = k.let_(
                "p",
                DType::I64,
                i[d].clone() * i64c(w.base_dilation[d] as i64) + i64c(w.padding[d].0),
            );
            let s = w.window_strides[d] as i64;
            let ext = (w.window_dimensions[d] as i64 - 1) * w.window_dilation[d] as i64 + 1;
            let lo_raw = Expr::var(p) - i64c(ext - 1);
            let lo = k.let_(
                "olo",
                DType::I64,
                Expr::select(
                    lo_raw.clone().le(i64c(0)),
                    i64c(0),
                    (lo_raw + i64c(s - 1)) / i64c(s),
                ),
            );
            let hi = k.let_(
                "ohi",
                DType::I64,
                Expr::select(
                    Expr::var(p).lt(i64c(0)),
                    i64c(0),
                    (Expr::var(p) / i64c(s) + i64c(1)).min(i64c(want[d] as i64)),
                ),
            );
            ranges.push((lo, hi));
        }
        nest(k, &ranges, 0, i64c(0), &out_st, &mut |k, flat| {
            let s_o = load(k, args, ctx, Value::Buf(selected), flat.clone())?;
            try_if(k, s_o.eq(lin.clone()), |k| {
                let v = load(k, args, ctx, src, flat)?;
                let next = if c.is_bool() {
                    Expr::var(acc).or(v)
                } else {
                    Expr::var(acc) + v
                };
                k.assign(acc, next);
                Ok(())
            })
        })?;
        store(k, args, ctx, out, lin.clone(), Expr::var(acc))
    })?;
    steps.extend(step);
    Ok(())
}

/// Nested loops over the boxes `ranges` (`lo..hi` per dimension, outermost
/// first), calling `body` with the flat index (strides `st`) innermost.
fn nest(
    k: &mut KernelBuilder,
    ranges: &[(crate::kir::Var, crate::kir::Var)],
    d: usize,
    flat: Expr,
    st: &[i64],
    body: &mut dyn FnMut(&mut KernelBuilder, Expr) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let Some(&(lo, hi)) = ranges.get(d) else {
        let f = k.let_("oflat", DType::I64, flat);
        return body(k, Expr::var(f));
    };
    let o = k.var("o", DType::I64);
    try_for(k, o, (Expr::var(lo), Expr::var(hi), i64c(1)), |k| {
        nest(
            k,
            ranges,
            d + 1,
            flat + Expr::var(o) * i64c(st[d]),
            st,
            body,
        )
    })
}
