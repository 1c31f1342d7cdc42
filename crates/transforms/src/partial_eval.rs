//! Partial evaluation of closed jaxprs: splitting a jaxpr into the part
//! that can run now (known inputs) and the part that must wait (unknown
//! inputs), connected by residuals; and dead-code elimination.
//!
//! Both splits are done by trace levels, as `linearize` does: the known
//! half is staged on a fresh base staging trace, and a second staging main
//! pushed above it (not as the dynamic trace) receives every equation that
//! touches an unknown value. Known values the unknown half reads are lifted
//! into it as constvars: those are the residuals. Because the split happens
//! while binding, control-flow and call equations get it for free through
//! their jvp rules (see `jvp/control.rs`), with no per-primitive
//! partial-evaluation rules.
//!
//! Layout conventions (ours, documented because JAX's differ by function):
//! the known jaxpr maps the known inputs to `(known outputs, residuals)`;
//! the unknown jaxpr maps `(residuals, unknown inputs)` to the unknown
//! outputs.

use crate::jvp::jvp_flat;
use crate::util::has_tangent;
use jaxon_ir::{Aval, ClosedJaxpr, HostArray, Jaxpr};
use jaxon_trace::core::{full_raise, new_main, MainTrace};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::staging::{Staged, StagingTrace};
use jaxon_trace::{lax, Array};
use std::sync::Arc;

/// A jaxpr split into a known and an unknown half.
#[derive(Clone, Debug)]
pub struct PartialEval {
    /// Known inputs to `(known outputs, residuals)`.
    pub known: ClosedJaxpr,
    /// `(residuals, unknown inputs)` to the unknown outputs.
    pub unknown: ClosedJaxpr,
    /// Per output of the original jaxpr: whether it is unknown.
    pub out_unknown: Vec<bool>,
    /// The number of residuals.
    pub num_res: usize,
}

/// A jaxpr's jvp split into its primal half and its linear tangent half.
#[derive(Clone, Debug)]
pub struct LinearizedJaxpr {
    /// Primal inputs to `(primal outputs, residuals)`.
    pub known: ClosedJaxpr,
    /// `(residuals, tangents of the inputs marked non-zero)` to the
    /// tangents of the outputs marked in `out_nonzero`. Linear in the
    /// tangents.
    pub linear: ClosedJaxpr,
    /// Per output: whether `linear` computes its tangent.
    pub out_nonzero: Vec<bool>,
    /// The number of residuals.
    pub num_res: usize,
}

fn in_avals(j: &Jaxpr) -> Vec<Aval> {
    j.invars.iter().map(|v| j.aval(*v).clone()).collect()
}

fn is_of(x: &Array, main: &Arc<MainTrace>) -> bool {
    x.as_tracer().is_some_and(|t| Arc::ptr_eq(t.main(), main))
}

/// Zeros of `aval` staged on `main` (a literal, broadcast if needed), so an
/// instantiated zero output of the unknown half is computed there instead
/// of becoming a residual.
fn zeros_on(main: &Arc<MainTrace>, aval: &Aval) -> Result<Array> {
    let t = aval.array();
    let z = full_raise(main, &Array::from_host(HostArray::scalar(t.dtype, 0.0)))?;
    let shape = t
        .static_sizes()
        .ok_or_else(|| Error::Unsupported("zeros of a dynamically shaped value".into()))?;
    if shape.is_empty() {
        Ok(z)
    } else {
        lax::broadcast_in_dim(&z, &shape, &[])
    }
}

/// Turns a staged unknown half (residuals as constvars) into a closed jaxpr
/// taking `(residuals, inputs)`.
fn residuals_first(staged: Staged) -> (ClosedJaxpr, Vec<Array>) {
    let mut j = staged.jaxpr;
    let mut invars = std::mem::take(&mut j.constvars);
    invars.append(&mut j.invars);
    j.invars = invars;
    (ClosedJaxpr::without_consts(j), staged.consts)
}

/// Splits `closed` into the part computable from the inputs not marked in
/// `unknowns` and the rest. An output is unknown when it depends on an
/// unknown input or is marked in `instantiate`. An equation with any
/// unknown operand is unknown as a whole.
pub fn partial_eval_jaxpr(
    closed: &ClosedJaxpr,
    unknowns: &[bool],
    instantiate: &[bool],
) -> Result<PartialEval> {
    let j = &closed.jaxpr;
    if unknowns.len() != j.invars.len() {
        return Err(Error::InvalidArgument(format!(
            "partial_eval_jaxpr: {} flags for {} inputs",
            unknowns.len(),
            j.invars.len()
        )));
    }
    let avals = in_avals(j);
    let known_avals: Vec<Aval> = avals
        .iter()
        .zip(unknowns)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| a.clone())
        .collect();
    let mut unknown = None;
    let mut out_unknown = Vec::new();
    let staged = trace_flat(StageMode::Base, &known_avals, |known_args| {
        let guard = new_main(Box::new(StagingTrace::new()));
        let main = guard.main().clone();
        let staging = StagingTrace::of(&main).expect("a staging main");
        let mut known_it = known_args.into_iter();
        let args: Vec<Array> = avals
            .iter()
            .zip(unknowns)
            .map(|(a, u)| {
                if *u {
                    staging.new_arg(&main, a.clone())
                } else {
                    known_it.next().expect("one known argument per known input")
                }
            })
            .collect();
        let outs = eval_closed_jaxpr(closed, &args)?;
        let mut known_outs = Vec::new();
        let mut unknown_outs = Vec::new();
        for (i, o) in outs.into_iter().enumerate() {
            let u = is_of(&o, &main) || instantiate.get(i).copied().unwrap_or(false);
            out_unknown.push(u);
            if u {
                unknown_outs.push(o);
            } else {
                known_outs.push(o);
            }
        }
        let (unk, residuals) = residuals_first(staging.finish(&main, &unknown_outs)?);
        drop(guard);
        unknown = Some((unk, residuals.len()));
        known_outs.extend(residuals);
        Ok(known_outs)
    })?;
    let (unknown, num_res) = unknown.expect("set when tracing succeeds");
    Ok(PartialEval {
        known: close(staged)?,
        unknown,
        out_unknown,
        num_res,
    })
}

/// Linearizes `closed` by trace levels: its jvp, with tangents for the
/// inputs marked `nonzero`, split into the primal computation (which also
/// emits the residuals) and the linear tangent computation. Outputs marked
/// in `instantiate` (floats only) get a tangent even where it is zero.
pub fn linearize_jaxpr(
    closed: &ClosedJaxpr,
    nonzero: &[bool],
    instantiate: &[bool],
) -> Result<LinearizedJaxpr> {
    let j = &closed.jaxpr;
    if nonzero.len() != j.invars.len() {
        return Err(Error::InvalidArgument(format!(
            "linearize_jaxpr: {} flags for {} inputs",
            nonzero.len(),
            j.invars.len()
        )));
    }
    let avals = in_avals(j);
    let mut linear = None;
    let mut out_nonzero = Vec::new();
    let staged = trace_flat(StageMode::Base, &avals, |primals| {
        let guard = new_main(Box::new(StagingTrace::new()));
        let main = guard.main().clone();
        let staging = StagingTrace::of(&main).expect("a staging main");
        let tangents: Vec<Option<Array>> = avals
            .iter()
            .zip(nonzero)
            .map(|(a, nz)| {
                (*nz && has_tangent(a.array().dtype)).then(|| staging.new_arg(&main, a.clone()))
            })
            .collect();
        let (p_out, t_out) = jvp_flat(|ins| eval_closed_jaxpr(closed, &ins), &primals, &tangents)?;
        if let Some(p) = p_out.iter().find(|p| is_of(p, &main)) {
            return Err(Error::InvalidArgument(format!(
                "linearize_jaxpr: a primal output of type {} depends on tangents \
                 (a jvp rule computed a primal from tangent operands)",
                jaxon_ir::shape::fmt_aval(p.aval())
            )));
        }
        let mut t_keep = Vec::new();
        for (i, (p, t)) in p_out.iter().zip(t_out).enumerate() {
            let inst = instantiate.get(i).copied().unwrap_or(false) && has_tangent(p.dtype());
            match t {
                Some(t) => t_keep.push(t),
                None if inst => t_keep.push(zeros_on(&main, p.aval())?),
                None => {
                    out_nonzero.push(false);
                    continue;
                }
            }
            out_nonzero.push(true);
        }
        let (lin, residuals) = residuals_first(staging.finish(&main, &t_keep)?);
        drop(guard);
        linear = Some((lin, residuals.len()));
        let mut outs = p_out;
        outs.extend(residuals);
        Ok(outs)
    })?;
    let (linear, num_res) = linear.expect("set when tracing succeeds");
    Ok(LinearizedJaxpr {
        known: close(staged)?,
        linear,
        out_nonzero,
        num_res,
    })
}

/// Removes the outputs not marked in `used_outputs` and the equations
/// only they needed; returns the smaller jaxpr (without the inputs it no
/// longer reads) and which inputs it kept.
pub fn dce_jaxpr(closed: &ClosedJaxpr, used_outputs: &[bool]) -> Result<(ClosedJaxpr, Vec<bool>)> {
    let j = &closed.jaxpr;
    let staged = trace_flat(StageMode::Base, &in_avals(j), |args| {
        let outs = eval_closed_jaxpr(closed, &args)?;
        Ok(outs
            .into_iter()
            .zip(used_outputs.iter().chain(std::iter::repeat(&true)))
            .filter(|(_, u)| **u)
            .map(|(o, _)| o)
            .collect())
    })?;
    let mut pruned = close(staged)?;
    let jj = Arc::make_mut(&mut pruned.jaxpr);
    let used: Vec<bool> = jj
        .invars
        .iter()
        .map(|v| {
            let hit = |a: &jaxon_ir::Atom| *a == jaxon_ir::Atom::Var(*v);
            jj.outvars.iter().any(hit) || jj.eqns.iter().any(|e| e.inputs.iter().any(hit))
        })
        .collect();
    jj.invars = jj
        .invars
        .iter()
        .zip(&used)
        .filter(|(_, u)| **u)
        .map(|(v, _)| *v)
        .collect();
    Ok((pruned, used))
}
