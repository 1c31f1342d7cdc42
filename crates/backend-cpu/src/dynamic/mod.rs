//! Dynamic-shape programs: jaxprs whose dimensions are runtime values,
//! compiled once and run for every size.
//!
//! The static pipeline gives every value a fixed arena offset, which sizes
//! known only at run time rule out. A dynamic program is instead a list of
//! steps per (sub)jaxpr, run by a small driver (`run.rs`) that holds each
//! value in its own buffer and resolves every dimension variable from the
//! values bound so far:
//!
//! - runs of elementwise equations over one shape (with scalar broadcasts
//!   and a final full reduction) are fused and compiled by the static
//!   kernel generator over a flat space whose extent is a call argument
//!   (`flat.rs`): one kernel serves every size;
//! - runs of integer/bool scalars (loop counters, trip tests, size
//!   arithmetic) are evaluated by the driver (`scalar.rs`); float scalar
//!   runs are flat kernels called with `n = 1`;
//! - `dot_general` resolves its GEMM plan from the runtime shapes and
//!   calls `gemm`;
//! - `for_loop`, `while`, `scan`, `cond` and calls run their bodies'
//!   step lists (compiled once, with the program);
//! - the remaining first-order primitives run native steps with the
//!   runtime shapes (`native.rs`): layout primitives are strided copies
//!   (`movement.rs`), reductions along axes fold `(outer, reduced, inner)`
//!   views (`reduce.rs`), gathers, sorts, cumulative ops and the like run
//!   the static backend's native routines built for the runtime shapes.
//!   No step calls the interpreter; a primitive without a native step is
//!   a compile-time error naming its equation.
//!
//! Invariants: every value the driver binds is checked against its
//! declared type with the dimension variables resolved (dtype, rank and
//! each size), so kernels only ever see the sizes they are called with.

use jaxon_ir::primitive::{DotGeneralParams, Linalg};
mod flat;
mod native;
mod run;
mod scalar;

use crate::codegen::jit::{CodeBuilder, Kernel};
use flat::{compile_run, find_run, FlatRun, Kernels};
use jaxon_ir::primitive::NestedJaxpr;
use jaxon_ir::{ClosedJaxpr, Dim, HostArray, IrError, Jaxpr, Primitive};
use native::DynOp;
use std::sync::Arc;

pub(crate) use run::DynExecutable;

/// Whether any type in `jaxpr` or its nested jaxprs has a dynamic
/// dimension (or a `for_loop` with implicit dimension operands).
pub(crate) fn is_dynamic(jaxpr: &Jaxpr) -> bool {
    let dyn_aval = |a: &jaxon_ir::Aval| a.array().shape.iter().any(|d| matches!(d, Dim::Var(_)));
    jaxpr.vars.iter().any(dyn_aval)
        || jaxpr.eqns.iter().any(|e| {
            e.outputs.iter().any(|b| match b {
                jaxon_ir::Binder::Drop(a) => dyn_aval(a),
                jaxon_ir::Binder::Var(_) => false,
            }) || e.primitive.sub_jaxprs().iter().any(|j| is_dynamic(j))
        })
}

/// A compiled dynamic-shape program.
pub(crate) struct DynProgram {
    /// The step plan, as `describe` prints it.
    pub(crate) plan: String,
    pub(crate) top: Body,
    pub(crate) kernels: Vec<Kernel>,
}

/// The steps of one (sub)jaxpr.
#[derive(Debug)]
pub(crate) struct Body {
    pub(crate) jaxpr: Arc<Jaxpr>,
    pub(crate) consts: Arc<[HostArray]>,
    pub(crate) steps: Vec<Step>,
}

/// One step of a body.
#[derive(Debug)]
pub(crate) enum Step {
    /// A fused run of equations.
    Flat(FlatRun),
    /// A run of integer/bool scalar equations evaluated by the driver.
    Scalar(scalar::ScalarRun),
    /// Equation `eqn` (a `dot_general` of a GEMM dtype).
    Dot(usize),
    /// Equation `eqn`, run by a native step with the runtime shapes.
    Native(usize, DynOp),
    /// Equation `eqn` with nested bodies (control flow and calls), in the
    /// order of `Primitive::param_jaxprs`.
    Nested(usize, Vec<Body>),
}

/// Compiles `closed` (which has dynamic shapes) once for every size.
/// With `JAXON_DUMP=dir` it writes the jaxpr, the step plan and each
/// kernel's CLIF to `dir`.
pub(crate) fn compile(
    closed: &ClosedJaxpr,
    key: &str,
    contract_fma: bool,
) -> Result<DynProgram, IrError> {
    let dump = crate::util::dump_dir();
    let mut ks = Kernels {
        cb: CodeBuilder::new(&crate::run::runtime::trampolines())?,
        contract_fma,
        defined: 0,
        clif: dump.as_ref().map(|_| String::new()),
    };
    let top = body(closed, &mut ks)?;
    let clif = ks.clif.take();
    let kernels = ks.cb.finish_kernels()?;
    if let (Some(dir), Some(clif)) = (dump, clif) {
        let mut plan = String::from("dynamic-shape program\n");
        describe(&top, 0, &mut plan);
        crate::util::write_dump(&dir, key, &plan, &clif);
    }
    let mut plan = String::new();
    describe(&top, 0, &mut plan);
    Ok(DynProgram { plan, top, kernels })
}

/// The step plan of `b`, indented by `depth` (for dumps and tests).
pub(crate) fn describe(b: &Body, depth: usize, out: &mut String) {
    use std::fmt::Write as _;
    let pad = "  ".repeat(depth);
    for step in &b.steps {
        let name = |e: usize| b.jaxpr.eqns.get(e).map_or("?", |q| q.primitive.name());
        let _ = match step {
            Step::Flat(run) => writeln!(
                out,
                "{pad}flat eqns {}..{}: {} kernel(s)",
                run.eqns.start,
                run.eqns.end,
                run.groups.len()
            ),
            Step::Scalar(run) => {
                writeln!(out, "{pad}scalar eqns {}..{}", run.eqns.start, run.eqns.end)
            }
            Step::Dot(e) => writeln!(out, "{pad}gemm eqn {e}"),
            Step::Native(e, _) => writeln!(out, "{pad}native eqn {e} ({})", name(*e)),
            Step::Nested(e, bodies) => {
                let _ = writeln!(out, "{pad}nested eqn {e} ({})", name(*e));
                for sub in bodies {
                    describe(sub, depth + 1, out);
                }
                Ok(())
            }
        };
    }
}

fn body(closed: &ClosedJaxpr, ks: &mut Kernels) -> Result<Body, IrError> {
    let jaxpr = &closed.jaxpr;
    let mut steps = Vec::new();
    let mut e = 0;
    while e < jaxpr.eqns.len() {
        let mut unfused = None;
        if let Some((mut end, shape)) = find_run(jaxpr, e) {
            if shape.is_empty() {
                if let Some(run) = scalar::compile(jaxpr, e, end) {
                    steps.push(Step::Scalar(run));
                    e = end;
                    continue;
                }
            }
            // A run the kernel generator declines (a dtype or op without a
            // kernel rule) is cut before the equation it names (or by one)
            // and tried again; an elementwise equation that fails alone
            // has no native step.
            loop {
                match compile_run(jaxpr, e, end, &shape, ks) {
                    Ok(run) => {
                        steps.push(Step::Flat(run));
                        break;
                    }
                    Err(err) => {
                        tracing::debug!(
                            "dynamic program: equations {e}..{end} not fused: {}",
                            err.message
                        );
                        if end <= e + 1 {
                            unfused = Some(err.message);
                            break;
                        }
                        end = match err.eqn {
                            Some(b) if b > e && b < end => b,
                            // The first equation itself: it alone is tried.
                            Some(b) if b == e => e + 1,
                            _ => end - 1,
                        };
                    }
                }
            }
            if unfused.is_none() {
                e = end;
                continue;
            }
        }
        let eqn = &jaxpr.eqns[e];
        let native = || {
            DynOp::new(eqn, unfused.as_deref())
                .map(|op| Step::Native(e, op))
                .map_err(|m| crate::util::cannot(jaxpr, e, &m))
        };
        let step = match &eqn.primitive {
            Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
                preferred_element_type,
                ..
            })) => {
                let dts: Vec<_> = eqn
                    .inputs
                    .iter()
                    .filter_map(|a| jaxpr.atom_aval(a).map(|a| a.dtype()))
                    .collect();
                let gemm = matches!(dts.as_slice(), [l, r] if l == r
                    && crate::ops::dot::gemm_dtype(*l)
                    && preferred_element_type.is_none_or(|p| p == *l));
                if gemm {
                    Step::Dot(e)
                } else {
                    native()?
                }
            }
            // Every control-flow primitive and call runs its bodies.
            Primitive::Control(_) => {
                let bodies = eqn
                    .primitive
                    .param_jaxprs()
                    .iter()
                    .map(|s| {
                        let closed = match s.jaxpr {
                            NestedJaxpr::Closed(c) => c.clone(),
                            NestedJaxpr::Open(j) => ClosedJaxpr::new(j.clone(), Vec::new()),
                        };
                        body(&closed, ks)
                    })
                    .collect::<Result<_, _>>()?;
                Step::Nested(e, bodies)
            }
            // `DynOp::new` decides, exhaustively, or names why not.
            Primitive::Linalg(
                Linalg::ConvGeneralDilated(_)
                | Linalg::Cholesky
                | Linalg::TriangularSolve(_)
                | Linalg::Lu
                | Linalg::Qr(_)
                | Linalg::Eigh(_)
                | Linalg::Svd(_)
                | Linalg::Schur(_)
                | Linalg::TridiagonalSolve(_)
                | Linalg::Fft(_),
            )
            | Primitive::Elementwise(_)
            | Primitive::Structural(_)
            | Primitive::Indexing(_)
            | Primitive::Reduction(_)
            | Primitive::State(_)
            | Primitive::Pallas(_)
            | Primitive::Collective(_)
            | Primitive::Marker(_)
            | Primitive::Window(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => native()?,
        };
        steps.push(step);
        e += 1;
    }
    Ok(Body {
        jaxpr: jaxpr.clone(),
        consts: closed.consts.clone(),
        steps,
    })
}
