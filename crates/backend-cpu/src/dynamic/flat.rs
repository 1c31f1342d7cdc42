//! Flat runs: consecutive elementwise equations over one (possibly dynamic)
//! shape, compiled once into the static pipeline's fused kernels.
//!
//! A run's values of shape `S` are contiguous row-major arrays of
//! `n = prod(S)` elements whatever `S` is at run time, so the run is
//! rewritten into a *surrogate* jaxpr over the one-dimensional space
//! `[FLAT_EXTENT]` (scalars and literals stay scalars), planned by the
//! fusion planner and compiled by `kernel::compile_group`. A kernel runs
//! its outermost loop over a caller-given `lo..hi` range, so calling it on
//! `0..n` computes the run for size `n`: one compilation serves every size.
//!
//! Invariants: every surrogate array value is either `[FLAT_EXTENT]` (read
//! with stride 1) or a scalar (stride 0); a run may end with a reduction
//! over all of `S` (a scalar result). In a run of scalars (`S = []`, loop
//! counters and predicates) every value is `[FLAT_EXTENT]`, called with
//! `n = 1`.

use crate::codegen::jit::{CodeBuilder, Shape};
use crate::codegen::kernel::{compile_group, GenError};
use cranelift_module::Module;
use jaxon_ir::passes::{is_elementwise, plan_fusion, GroupKind};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::primitive::{BroadcastInDimParams, ReduceParams, Reduction, Structural};
use jaxon_ir::{Atom, Aval, Binder, DType, Dim, Eqn, Jaxpr, Primitive, ShapedArray, Var};
use std::collections::HashMap;

/// The static extent surrogate spaces are compiled for (kernels run any
/// `0..n` inside it).
const FLAT_EXTENT: usize = 1 << 40;

/// A compiled flat run.
#[derive(Debug)]
pub(crate) struct FlatRun {
    /// The equations it covers (`start..end`).
    pub eqns: std::ops::Range<usize>,
    /// The run's shape `S` in the enclosing jaxpr's terms.
    pub shape: Vec<Dim>,
    /// Number of local value slots (inputs first).
    pub n_slots: usize,
    /// The outer variable an input slot reads (`None` for the run's own
    /// values).
    pub slot_var: Vec<Option<Var>>,
    /// Kernels in order.
    pub groups: Vec<FlatGroup>,
    /// Outer variables bound from local slots after the run.
    pub outputs: Vec<(Var, usize)>,
}

/// An outer value read by a run.
#[derive(Debug)]
struct FlatInput {
    /// The enclosing jaxpr's variable.
    var: Var,
    /// The local slot it is bound to.
    slot: usize,
}

/// One fused kernel of a run.
#[derive(Debug)]
pub(crate) struct FlatGroup {
    /// The kernel's function index in the code builder (then in the
    /// program's kernel table).
    pub kernel: usize,
    /// Local slots of its inputs, with the dtype it reads and whether each
    /// is a whole array.
    pub inputs: Vec<(usize, DType, bool)>,
    /// The local slot it writes.
    pub out: usize,
    /// Its output's dtype.
    pub out_dtype: DType,
    /// For a reduction (a scalar output pre-filled with the identity).
    pub reduce: Option<ReduceOp>,
}

fn array_shape(jaxpr: &Jaxpr, a: &Atom) -> Option<Vec<Dim>> {
    match a {
        Atom::Var(v) => Some(jaxpr.try_aval(*v)?.as_array()?.shape.clone()),
        Atom::Lit(_) => Some(Vec::new()),
    }
}

fn out_var(eqn: &Eqn) -> Option<Var> {
    match eqn.outputs.as_slice() {
        [Binder::Var(v)] => Some(*v),
        _ => None,
    }
}

/// What equation `eqn` is within a run of shape `shape`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    /// Elementwise over `shape`.
    Elementwise,
    /// A scalar broadcast to `shape` (its trailing operands are sizes).
    Splat,
    /// A reduction of all of `shape` to a scalar (ends the run).
    Reduce,
}

/// How `eqn` can join a run of shape `shape` (`None`: it cannot).
fn member(jaxpr: &Jaxpr, eqn: &Eqn, shape: &[Dim]) -> Option<Member> {
    let v = out_var(eqn)?;
    let out = jaxpr.try_aval(v)?.as_array()?.clone();
    let dt_ok = |d: DType| crate::codegen::kernel::storable(d);
    if !dt_ok(out.dtype) {
        return None;
    }
    let operands_ok = |ins: &[Atom]| {
        ins.iter().all(|a| {
            let s = array_shape(jaxpr, a);
            let dt = jaxpr.atom_aval(a).map(|x| x.dtype());
            // Scalar operands (literals, or variables the interpreter
            // broadcasts) are splat across the run.
            dt.is_some_and(dt_ok) && s.is_some_and(|s| s == shape || s.is_empty())
        })
    };
    if is_elementwise(&eqn.primitive) {
        return (out.shape == shape && operands_ok(&eqn.inputs)).then_some(Member::Elementwise);
    }
    match &eqn.primitive {
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        })) => {
            let x = eqn.inputs.first()?;
            let scalar = array_shape(jaxpr, x)?.is_empty();
            let x_ok = jaxpr.atom_aval(x).is_some_and(|a| dt_ok(a.dtype()));
            // A scalar run has nothing to splat to.
            (out.shape == shape
                && !shape.is_empty()
                && scalar
                && broadcast_dimensions.is_empty()
                && x_ok)
                .then_some(Member::Splat)
        }
        Primitive::Reduction(Reduction::Reduce(ReduceParams { axes, .. })) => {
            let x = eqn.inputs.first()?;
            let all: Vec<usize> = (0..shape.len()).collect();
            let half = matches!(out.dtype, DType::F16 | DType::BF16);
            (out.shape.is_empty()
                && !shape.is_empty()
                && !half
                && eqn.inputs.len() == 1
                && array_shape(jaxpr, x).as_deref() == Some(shape)
                && *axes == all)
                .then_some(Member::Reduce)
        }
        _ => None,
    }
}

/// The longest run starting at equation `start` (its equations and shape),
/// or `None` when equation `start` cannot start one.
pub(crate) fn find_run(jaxpr: &Jaxpr, start: usize) -> Option<(usize, Vec<Dim>)> {
    let first = jaxpr.eqns.get(start)?;
    // A full reduction of an array starts (and ends) a run over the
    // array's shape.
    if let (Primitive::Reduction(Reduction::Reduce(_)), Some(x)) =
        (&first.primitive, first.inputs.first())
    {
        let xs = array_shape(jaxpr, x)?;
        if !xs.is_empty() && member(jaxpr, first, &xs) == Some(Member::Reduce) {
            return Some((start + 1, xs));
        }
    }
    // A run of scalars (shape `[]`) treats every value as an array of one
    // element.
    let shape = jaxpr.try_aval(out_var(first)?)?.as_array()?.shape.clone();
    let mut end = start;
    while let Some(eqn) = jaxpr.eqns.get(end) {
        match member(jaxpr, eqn, &shape) {
            Some(Member::Reduce) => {
                end += 1;
                break;
            }
            Some(_) => end += 1,
            None => break,
        }
    }
    // A lone reduction is not worth a run of its own only when it cannot be
    // one; any non-empty run compiles.
    (end > start).then_some((end, shape))
}

/// Whether `v` is read by anything after equation `end` (equations,
/// outputs), or may be: a scalar integer may be a dimension of a later
/// type.
fn used_after(jaxpr: &Jaxpr, end: usize, v: Var) -> bool {
    let size_like = jaxpr
        .try_aval(v)
        .and_then(Aval::as_array)
        .is_some_and(|a| a.shape.is_empty() && a.dtype.is_int());
    if size_like {
        return true;
    }
    let reads = |a: &Atom| matches!(a, Atom::Var(w) if *w == v);
    jaxpr.eqns[end..].iter().any(|e| e.inputs.iter().any(reads)) || jaxpr.outvars.iter().any(reads)
}

/// Where a program's kernels are defined.
pub(crate) struct Kernels {
    /// The module they go into.
    pub cb: CodeBuilder,
    /// Contract multiply-adds (`util::Options`).
    pub contract_fma: bool,
    /// Kernels defined so far.
    pub defined: usize,
    /// Their CLIF, when dumping.
    pub clif: Option<String>,
}

/// Compiles equations `start..end` of `jaxpr` (a run of shape `shape`)
/// into kernels defined in `ks`. `Err` carries the equation that failed.
pub(crate) fn compile_run(
    jaxpr: &Jaxpr,
    start: usize,
    end: usize,
    shape: &[Dim],
    ks: &mut Kernels,
) -> Result<FlatRun, GenError> {
    let gerr = |eqn: Option<usize>, m: &str| GenError {
        eqn,
        message: m.to_string(),
    };
    let mut sur = Jaxpr::new();
    let mut local: HashMap<Var, Var> = HashMap::new();
    let mut inputs: Vec<FlatInput> = Vec::new();
    let all_flat = shape.is_empty();
    let flat = |a: &ShapedArray| -> ShapedArray {
        if a.shape.is_empty() && !all_flat {
            a.clone()
        } else {
            ShapedArray {
                dtype: a.dtype,
                shape: vec![Dim::Const(FLAT_EXTENT)],
                weak_type: a.weak_type,
            }
        }
    };
    // Scalar variables read by elementwise members, splat once each.
    let mut splats: HashMap<Var, Var> = HashMap::new();
    for e in start..end {
        let eqn = &jaxpr.eqns[e];
        let m = member(jaxpr, eqn, shape).ok_or_else(|| gerr(Some(e), "not a flat member"))?;
        let n_in = match m {
            Member::Splat => 1,
            _ => eqn.inputs.len(),
        };
        let mut ins = Vec::with_capacity(n_in);
        for a in &eqn.inputs[..n_in] {
            ins.push(match a {
                Atom::Lit(l) => Atom::Lit(*l),
                Atom::Var(v) => {
                    let lv = match local.get(v) {
                        Some(lv) => *lv,
                        None => {
                            let aval = jaxpr
                                .try_aval(*v)
                                .and_then(Aval::as_array)
                                .ok_or_else(|| gerr(Some(e), "operand is not an array"))?;
                            let lv = sur.new_var(flat(aval));
                            sur.invars.push(lv);
                            inputs.push(FlatInput {
                                var: *v,
                                slot: lv.index(),
                            });
                            local.insert(*v, lv);
                            lv
                        }
                    };
                    let scalar = sur.try_aval(lv).is_some_and(|a| a.array().shape.is_empty());
                    if m == Member::Elementwise && scalar {
                        Atom::Var(*splats.entry(*v).or_insert_with(|| {
                            let a = sur.vars[lv.index()].array().clone();
                            let wide = sur.new_var(flat(&ShapedArray {
                                shape: vec![Dim::Const(1)],
                                ..a
                            }));
                            sur.eqns.push(Eqn {
                                primitive: Primitive::Structural(Structural::BroadcastInDim(
                                    BroadcastInDimParams {
                                        shape: vec![Some(FLAT_EXTENT)],
                                        broadcast_dimensions: Vec::<i64>::new().into(),
                                    },
                                )),
                                inputs: vec![Atom::Var(lv)],
                                outputs: vec![Binder::Var(wide)],
                            });
                            wide
                        }))
                    } else {
                        Atom::Var(lv)
                    }
                }
            });
        }
        let v = out_var(eqn).ok_or_else(|| gerr(Some(e), "one output"))?;
        let aval = jaxpr
            .try_aval(v)
            .and_then(Aval::as_array)
            .ok_or_else(|| gerr(Some(e), "output is not an array"))?;
        let lv = sur.new_var(flat(aval));
        local.insert(v, lv);
        let primitive = match (&eqn.primitive, m) {
            (
                Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
                    broadcast_dimensions,
                    ..
                })),
                Member::Splat,
            ) => Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
                shape: vec![Some(FLAT_EXTENT)],
                broadcast_dimensions: broadcast_dimensions.clone(),
            })),
            (Primitive::Reduction(Reduction::Reduce(ReduceParams { op, .. })), Member::Reduce) => {
                Primitive::Reduction(Reduction::Reduce(ReduceParams::new(*op, vec![0])))
            }
            (p, _) => p.clone(),
        };
        sur.eqns.push(Eqn {
            primitive,
            inputs: ins,
            outputs: vec![Binder::Var(lv)],
        });
    }
    // Results: values of the run read after it.
    let mut results: Vec<(Var, Var)> = Vec::new();
    for e in start..end {
        if let Some(v) = out_var(&jaxpr.eqns[e]) {
            if used_after(jaxpr, end, v) {
                results.push((v, local[&v]));
            }
        }
    }
    sur.outvars = results.iter().map(|(_, lv)| Atom::Var(*lv)).collect();
    let plan = plan_fusion(&sur).map_err(|e| gerr(None, &e.to_string()))?;
    let cfg = ks.cb.module().target_config();
    // Local slots: surrogate variables, densely numbered.
    let slot = |v: Var| v.index();
    let mut groups = Vec::new();
    for g in &plan.groups {
        let reduce = match &g.kind {
            GroupKind::Loop => None,
            GroupKind::Reduce { op, .. } => Some(*op),
            GroupKind::Opaque => {
                return Err(gerr(Some(start + g.root()), "opaque group in a flat run"))
            }
        };
        let code = compile_group(
            &sur,
            g,
            cfg,
            crate::util::Options {
                contract_fma: ks.contract_fma,
                ..Default::default()
            },
        )
        .map_err(|ge| gerr(ge.eqn.map(|q| start + q), &ge.message))?;
        let out = *g
            .outputs
            .first()
            .ok_or_else(|| gerr(None, "fused group without output"))?;
        let out_dtype = sur
            .try_aval(out)
            .map(|a| a.dtype())
            .ok_or_else(|| gerr(None, "output"))?;
        ks.defined += 1;
        let n_funcs = ks.defined;
        if let Some(text) = ks.clif.as_mut() {
            text.push_str(&format!(
                "; dyn{} (equations {start}..{end})\n{}\n",
                n_funcs,
                code.func.display()
            ));
        }
        let kernel = ks
            .cb
            .define(
                &format!("dyn{n_funcs}"),
                code.func,
                Some(Shape {
                    extent: code.extent,
                    splittable: code.splittable,
                }),
            )
            .map_err(|e| gerr(None, &e.to_string()))?;
        let input = |v: &Var| -> Result<(usize, DType, bool), GenError> {
            let a = sur
                .try_aval(*v)
                .ok_or_else(|| gerr(None, "group input out of range"))?;
            Ok((slot(*v), a.dtype(), !a.array().shape.is_empty()))
        };
        groups.push(FlatGroup {
            kernel,
            inputs: g.inputs.iter().map(input).collect::<Result<_, _>>()?,
            out: slot(out),
            out_dtype,
            reduce,
        });
    }
    let mut slot_var = vec![None; sur.vars.len()];
    for i in &inputs {
        slot_var[i.slot] = Some(i.var);
    }
    Ok(FlatRun {
        eqns: start..end,
        shape: shape.to_vec(),
        n_slots: sur.vars.len(),
        slot_var,
        groups,
        outputs: results.into_iter().map(|(v, lv)| (v, slot(lv))).collect(),
    })
}
