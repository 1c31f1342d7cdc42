//! Preparing a (sub)jaxpr for native emission: its fusion plan, one
//! compiled kernel per fused group, native steps registered in the
//! program's tables, nested control-flow bodies prepared recursively, and
//! the memory plan that places every intermediate value (and each
//! control-flow group's scratch: carries, temporaries and its bodies'
//! arenas) at a fixed arena offset.

use crate::codegen::jit::Shape;
use crate::codegen::kernel::{compile_group, GenError};
use crate::error::CpuError;
use crate::plan::groups::{array_bytes, GPrep, KPrep, LoopKind, LoopPrep, Prep, Tables, ALIGN};
use crate::plan::opaque::{opaque_step, Opaque};
use crate::run::exec::{identity_array, Operand, StepCall};
use crate::run::sched::PARALLEL_MIN_WORK;
use crate::util::cannot;
use jaxon_ir::passes::{plan_fusion, plan_memory, value_bytes, GroupKind, MemoryOptions};
use jaxon_ir::primitive::{CondParams, Control, ForLoopParams, Platform, ScanParams, WhileParams};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, IrError, Jaxpr, Primitive, Var};
use std::collections::HashSet;
use std::fmt::Write as _;

fn round(x: usize) -> usize {
    x.div_ceil(ALIGN) * ALIGN
}

fn bytes_of(jaxpr: &Jaxpr, e: usize, a: &jaxon_ir::Aval) -> Result<usize, IrError> {
    value_bytes(a).ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))
}

fn typed(jaxpr: &Jaxpr, e: usize, v: Var) -> Result<(Var, DType, Vec<usize>), IrError> {
    let a = jaxpr
        .try_aval(v)
        .and_then(|a| a.as_array())
        .ok_or_else(|| cannot(jaxpr, e, "operand is not an array"))?;
    let s = a
        .static_sizes()
        .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))?;
    Ok((v, a.dtype, s))
}

fn out_vars(eqn: &jaxon_ir::Eqn) -> Vec<Option<Var>> {
    eqn.outputs
        .iter()
        .map(|b| match b {
            Binder::Var(v) => Some(*v),
            Binder::Drop(_) => None,
        })
        .collect()
}

/// Simplifies and prepares a nested closed jaxpr. Its results at the
/// positions where `eligible` is true are written straight to their
/// destination by the code that computes them (excluded from its arena)
/// when they are computed inside it and not returned twice; `Prep::direct`
/// records which.
fn prep_sub(
    t: &mut Tables,
    closed: &ClosedJaxpr,
    eligible: &[bool],
    label: &str,
) -> Result<Prep, CpuError> {
    let simple = jaxon_ir::passes::simplify(closed, Platform::Cpu).map_err(|e| e.to_string())?;
    if simple
        .jaxpr
        .in_avals()
        .iter()
        .any(|a| a.as_array().is_none())
    {
        return Err("`Ref` operands of nested jaxprs are not supported yet".into());
    }
    t.pinned.push(simple.consts.clone());
    let j = &simple.jaxpr;
    let mut exclude = HashSet::new();
    let mut direct = Vec::with_capacity(j.outvars.len());
    for (p, a) in j.outvars.iter().enumerate() {
        let d = match a {
            Atom::Var(v) => {
                eligible.get(p).copied().unwrap_or(false)
                    && !j.invars.contains(v)
                    && !j.constvars.contains(v)
                    && !j.outvars[..p].contains(a)
            }
            Atom::Lit(_) => false,
        };
        if let (true, Atom::Var(v)) = (d, a) {
            exclude.insert(*v);
        }
        direct.push(d);
    }
    let mut p = prep(t, &simple, &exclude, label).map_err(|e| format!("in its body: {e}"))?;
    p.direct = direct;
    Ok(p)
}

/// Prepares a simplified closed jaxpr; `exclude` are values that live
/// outside the arena (a program's output buffers).
pub(crate) fn prep(
    t: &mut Tables,
    closed: &ClosedJaxpr,
    exclude: &HashSet<Var>,
    label: &str,
) -> Result<Prep, IrError> {
    let strided = std::mem::take(&mut t.strided_outs);
    let widened;
    let closed = match crate::plan::rewrite::widen_half_reductions(closed) {
        Some(w) => {
            widened = w;
            &widened
        }
        None => closed,
    };
    let jaxpr: &Jaxpr = &closed.jaxpr;
    let plan = plan_fusion(jaxpr)?;
    let cfg = cranelift_module::Module::target_config(t.cb.module());
    let mut groups = Vec::with_capacity(plan.groups.len());
    let mut scratch = Vec::new();
    for (gi, g) in plan.groups.iter().enumerate() {
        let e = g.root();
        let eqn = &jaxpr.eqns[e];
        let sub_label = |what: &str| format!("{label}/g{gi}.{what}");
        let gp = match &g.kind {
            GroupKind::Loop | GroupKind::Reduce { .. } => {
                let code =
                    compile_group(jaxpr, g, cfg, t.opts).map_err(|GenError { eqn, message }| {
                        cannot(jaxpr, eqn.unwrap_or(e), &message)
                    })?;
                if t.dump {
                    let _ = writeln!(t.clif, "; {label} group {gi}\n{}", code.func.display());
                }
                let out = *g
                    .outputs
                    .first()
                    .ok_or_else(|| cannot(jaxpr, e, "fused group without output"))?;
                let (_, dt, shape) = typed(jaxpr, e, out)?;
                let numel: usize = g.space.iter().product();
                let (func, inline) = match code.inline {
                    Some(inline) => (None, Some(inline)),
                    None => {
                        t.n_funcs += 1;
                        let f = t.cb.define(
                            &format!("k{}", t.n_funcs),
                            code.func,
                            Some(Shape {
                                extent: code.extent,
                                splittable: code.splittable,
                            }),
                        )?;
                        (Some(f), None)
                    }
                };
                let par = match func {
                    Some(f) if code.splittable && numel >= PARALLEL_MIN_WORK => {
                        t.par_kernels.push(f);
                        Some(t.par_kernels.len() - 1)
                    }
                    _ => None,
                };
                let init = match code.reduce {
                    Some((op, _)) => Some(array_bytes(&identity_array(op, dt, &[1])?)),
                    None => None,
                };
                if code.n_args != g.inputs.len() + 1 {
                    return Err(cannot(jaxpr, e, "kernel arity does not match its group"));
                }
                GPrep::Kernel(KPrep {
                    func,
                    inline,
                    par,
                    inputs: g.inputs.clone(),
                    out,
                    out_numel: shape.iter().product(),
                    esize: dt.size_bytes(),
                    init,
                    run: numel > 0,
                    extent: code.extent,
                    splittable: code.splittable,
                    row_run: None,
                    strided_out: None,
                })
            }
            GroupKind::Opaque => match &eqn.primitive {
                Primitive::Control(Control::While(WhileParams {
                    cond_jaxpr,
                    body_jaxpr,
                    cond_nconsts,
                    body_nconsts,
                })) => {
                    let cond = prep_sub(t, cond_jaxpr, &[], &sub_label("cond"))
                        .map_err(|m| cannot(jaxpr, e, &m))?;
                    let all = vec![true; body_jaxpr.jaxpr.outvars.len()];
                    let body = prep_sub(t, body_jaxpr, &all, &sub_label("body"))
                        .map_err(|m| cannot(jaxpr, e, &m))?;
                    let carries =
                        &eqn.inputs[(cond_nconsts + body_nconsts).min(eqn.inputs.len())..];
                    let sub = cond.mem.size.max(body.mem.size);
                    let lp = loop_prep(
                        jaxpr,
                        e,
                        carries,
                        eqn,
                        sub,
                        LoopKind::While {
                            cond: Box::new(cond),
                            body: Box::new(body),
                            cond_nconsts: *cond_nconsts,
                            body_nconsts: *body_nconsts,
                        },
                    )?;
                    scratch.push((gi, lp.1));
                    GPrep::Loop(Box::new(lp.0))
                }
                Primitive::Control(Control::Scan(ScanParams {
                    jaxpr: body,
                    length,
                    reverse,
                    num_consts,
                    num_carry,
                    ..
                })) => {
                    // Carries go to the next carry set, ys to their rows
                    // (unless the ys output is dropped).
                    let eligible: Vec<bool> = out_vars(eqn)
                        .iter()
                        .enumerate()
                        .map(|(p, o)| p < *num_carry || o.is_some())
                        .collect();
                    let body = prep_sub(t, body, &eligible, &sub_label("body"))
                        .map_err(|m| cannot(jaxpr, e, &m))?;
                    let rest = &eqn.inputs[(*num_consts).min(eqn.inputs.len())..];
                    let (carries, xs) = rest.split_at((*num_carry).min(rest.len()));
                    let row = |a: &jaxon_ir::Aval| -> Result<usize, IrError> {
                        Ok(bytes_of(jaxpr, e, a)? / (*length).max(1))
                    };
                    let x_rows = xs
                        .iter()
                        .map(|a| {
                            let av = jaxpr
                                .atom_aval(a)
                                .ok_or_else(|| cannot(jaxpr, e, "operand out of range"))?;
                            row(&av)
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let y_rows = eqn.outputs[(*num_carry).min(eqn.outputs.len())..]
                        .iter()
                        .map(|b| {
                            let av = jaxpr
                                .binder_aval(b)
                                .ok_or_else(|| cannot(jaxpr, e, "output out of range"))?;
                            row(av)
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let sub = body.mem.size;
                    let lp = loop_prep(
                        jaxpr,
                        e,
                        carries,
                        eqn,
                        sub,
                        LoopKind::Scan {
                            body: Box::new(body),
                            length: *length,
                            reverse: *reverse,
                            num_consts: *num_consts,
                            x_rows,
                            y_rows,
                        },
                    )?;
                    scratch.push((gi, lp.1));
                    GPrep::Loop(Box::new(lp.0))
                }
                Primitive::Control(Control::ForLoop(ForLoopParams {
                    body_jaxpr,
                    body_nconsts,
                    nimplicit,
                    apply_reverse_transform,
                    ..
                })) => {
                    let head = body_nconsts + nimplicit;
                    if eqn.inputs.len() < head + 4 {
                        return Err(cannot(jaxpr, e, "for_loop has too few operands"));
                    }
                    let all = vec![true; body_jaxpr.jaxpr.outvars.len()];
                    let body = prep_sub(t, body_jaxpr, &all, &sub_label("body"))
                        .map_err(|m| cannot(jaxpr, e, &m))?;
                    let mut carries: Vec<Atom> = eqn.inputs[*body_nconsts..head].to_vec();
                    carries.extend(eqn.inputs[head + 4..].iter().copied());
                    let mut bound_dts = [DType::I64; 4];
                    for (k, d) in bound_dts.iter_mut().enumerate() {
                        let dt = jaxpr
                            .atom_aval(&eqn.inputs[head + k])
                            .map(|a| a.dtype())
                            .ok_or_else(|| cannot(jaxpr, e, "operand out of range"))?;
                        if !dt.is_int() {
                            return Err(cannot(jaxpr, e, "loop bounds must be integers"));
                        }
                        *d = dt;
                    }
                    let sub = body.mem.size;
                    let lp = loop_prep(
                        jaxpr,
                        e,
                        &carries,
                        eqn,
                        sub,
                        LoopKind::For {
                            body: Box::new(body),
                            body_nconsts: *body_nconsts,
                            nimplicit: *nimplicit,
                            reverse_transform: *apply_reverse_transform,
                            bound_dts,
                        },
                    )?;
                    scratch.push((gi, lp.1));
                    GPrep::Loop(Box::new(lp.0))
                }
                Primitive::Control(Control::Cond(CondParams { branches, .. })) => {
                    let (index, operands) = eqn
                        .inputs
                        .split_first()
                        .ok_or_else(|| cannot(jaxpr, e, "cond without an index"))?;
                    let branches = branches
                        .iter()
                        .enumerate()
                        .map(|(k, b)| {
                            let eligible: Vec<bool> =
                                out_vars(eqn).iter().map(Option::is_some).collect();
                            prep_sub(t, b, &eligible, &sub_label(&format!("branch{k}")))
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|m| cannot(jaxpr, e, &m))?;
                    if branches.is_empty() {
                        return Err(cannot(jaxpr, e, "cond without branches"));
                    }
                    let size = branches.iter().map(|b| b.mem.size).max().unwrap_or(0);
                    scratch.push((gi, size));
                    let index_dtype = jaxpr
                        .atom_aval(index)
                        .map(|a| a.dtype())
                        .ok_or_else(|| cannot(jaxpr, e, "index out of range"))?;
                    GPrep::Cond {
                        branches,
                        index: *index,
                        index_dtype,
                        operands: operands.to_vec(),
                        outs: out_vars(eqn),
                    }
                }
                // Calls were inlined by `simplify`; `opaque_step` decides
                // the rest, exhaustively, or names why not.
                Primitive::Control(
                    Control::Jit(_)
                    | Control::CustomJvpCall(_)
                    | Control::CustomVjpCall(_)
                    | Control::Remat(_)
                    | Control::CustomLinearSolve(_)
                    | Control::ShardMap(_),
                )
                | Primitive::Elementwise(_)
                | Primitive::Structural(_)
                | Primitive::Indexing(_)
                | Primitive::Reduction(_)
                | Primitive::Linalg(_)
                | Primitive::State(_)
                | Primitive::Pallas(_)
                | Primitive::Collective(_)
                | Primitive::Marker(_)
                | Primitive::Window(_)
                | Primitive::Random(_)
                | Primitive::Callback(_) => {
                    let step = opaque_step(jaxpr, e, eqn, t.opts)?;
                    match step {
                        Opaque::Gemm {
                            plan,
                            lhs: Operand::Var(lhs),
                            rhs: Operand::Var(rhs),
                            out,
                        } => {
                            t.dots.push(*plan);
                            GPrep::Dot {
                                idx: t.dots.len() - 1,
                                lhs,
                                rhs,
                                out,
                                acc: None,
                                bias: None,
                            }
                        }
                        step => {
                            let step = step.into_step();
                            let mut ins: Vec<Var> = Vec::new();
                            for a in &eqn.inputs {
                                if let Atom::Var(v) = a {
                                    if !ins.contains(v) {
                                        ins.push(*v);
                                    }
                                }
                            }
                            let outs: Vec<Var> = out_vars(eqn).into_iter().flatten().collect();
                            t.steps.push(StepCall {
                                step,
                                ins: ins
                                    .iter()
                                    .map(|v| typed(jaxpr, e, *v))
                                    .collect::<Result<_, _>>()?,
                                outs: outs
                                    .iter()
                                    .map(|v| typed(jaxpr, e, *v))
                                    .collect::<Result<_, _>>()?,
                            });
                            GPrep::Step {
                                idx: t.steps.len() - 1,
                                ins,
                                outs,
                            }
                        }
                    }
                }
            },
        };
        groups.push(gp);
    }
    let views = crate::plan::dot_fuse::fuse_slices(jaxpr, &plan, &mut groups, &mut t.dots);
    let acc = crate::plan::dot_fuse::fuse_accumulate(jaxpr, &plan, &mut groups, &mut t.dots);
    let boxes =
        crate::plan::dot_fuse::fuse_box_reads(jaxpr, &plan, &mut groups, &t.dots, &mut t.steps)?;
    let (epi, epi_lines) =
        crate::plan::epilogue::fuse_epilogues(jaxpr, &plan, &mut groups, &mut t.dots);
    let mut spans = crate::plan::rows::plan_row_runs(t, jaxpr, &plan, &mut groups)?;
    spans.extend(
        views
            .spans
            .iter()
            .chain(&acc.spans)
            .chain(&boxes.spans)
            .chain(&epi.spans),
    );
    strided_outputs(t, jaxpr, &plan, &mut groups, &strided);
    let shared = crate::plan::rows::share_run_buffers(jaxpr, &plan, &mut groups);
    let mut exclude = exclude.clone();
    exclude.extend(
        views
            .temps
            .iter()
            .chain(&acc.temps)
            .chain(&boxes.temps)
            .chain(&epi.temps),
    );
    exclude.extend(shared.iter().map(|&(v, _)| v));
    let mem = plan_memory(
        jaxpr,
        &plan,
        &MemoryOptions {
            alignment: ALIGN,
            exclude,
            scratch,
            spans: spans.clone(),
        },
    )?;
    if t.dump {
        let shared: Vec<_> = shared.iter().map(|(v, o)| (v.0, o.0)).collect();
        let _ = writeln!(
            t.plans,
            "== {label}\n{plan}gemm epilogues: {}\n{}row runs: {spans:?}\nin result buffers: {shared:?}\n{mem}",
            epi_lines.len(),
            epi_lines.iter().map(|l| format!("{l}\n")).collect::<String>()
        );
    }
    Ok(Prep {
        jaxpr: closed.jaxpr.clone(),
        consts: closed.consts.clone(),
        mem,
        groups,
        direct: Vec::new(),
    })
}

/// Results the caller wants written inside a wider array (`want`: value,
/// row stride in elements; 2-D values read by no group): a GEMM writes
/// them with that destination stride, a splittable kernel is called once
/// per row with its output pointer moved to the row. Each one so written
/// is added to `t.strided_done`; the others stay contiguous.
fn strided_outputs(
    t: &mut Tables,
    jaxpr: &Jaxpr,
    plan: &jaxon_ir::passes::FusionPlan,
    groups: &mut [GPrep],
    want: &[(Var, usize)],
) {
    for &(v, rs) in want {
        let Some(shape) = jaxpr
            .try_aval(v)
            .and_then(|a| a.as_array())
            .and_then(|a| a.static_sizes())
        else {
            continue;
        };
        let [rows, cols] = shape[..] else {
            continue;
        };
        let read = plan.groups.iter().any(|g| g.inputs.contains(&v));
        if read || rs < cols || rows == 0 || cols == 0 {
            continue;
        }
        for g in groups.iter_mut() {
            match g {
                GPrep::Dot {
                    idx,
                    out,
                    acc: None,
                    ..
                } if *out == v => {
                    if let Some(p) = t.dots[*idx].with_out_row_stride(rs) {
                        t.dots.push(p);
                        *idx = t.dots.len() - 1;
                        t.strided_done.push(v);
                    }
                }
                GPrep::Kernel(k) if k.out == v => {
                    let numel = rows * cols;
                    let ok = k.func.is_some()
                        && k.inline.is_none()
                        && k.row_run.is_none()
                        && k.init.is_none()
                        && k.run
                        && k.splittable
                        && k.extent > 0
                        && numel.is_multiple_of(k.extent)
                        && cols.is_multiple_of(numel / k.extent);
                    if ok {
                        k.strided_out = Some((rs, rows, cols));
                        t.strided_done.push(v);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The scratch layout of a loop: two sets of carries, then the
/// bodies' arenas. Returns the prepared loop and its scratch bytes.
fn loop_prep(
    jaxpr: &Jaxpr,
    e: usize,
    carries: &[Atom],
    eqn: &jaxon_ir::Eqn,
    sub_size: usize,
    kind: LoopKind,
) -> Result<(LoopPrep, usize), IrError> {
    let carry_bytes = carries
        .iter()
        .map(|a| {
            let av = jaxpr
                .atom_aval(a)
                .ok_or_else(|| cannot(jaxpr, e, "operand out of range"))?;
            bytes_of(jaxpr, e, &av)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut at = 0;
    let mut carry_off = Vec::new();
    for b in &carry_bytes {
        carry_off.push(at);
        at += round(*b);
    }
    let second_set = at;
    at *= 2;
    let index_off = at;
    at += ALIGN;
    let sub_off = at;
    Ok((
        LoopPrep {
            kind,
            operands: eqn.inputs.clone(),
            outs: out_vars(eqn),
            carry_bytes,
            carry_off,
            second_set,
            sub_off,
            index_off,
        },
        sub_off + sub_size,
    ))
}
