//! Staging entry points: tracing a function to a jaxpr (`make_jaxpr`,
//! `eval_shape`) and the flat helpers control flow and `jit` build on.
//!
//! Invariant: a staging main lives exactly as long as the tracing of one
//! function; its guard drops (invalidating the tracers) even when the
//! function raises.

use crate::array::Array;
use crate::core::{new_base_main, new_dynamic_main, MainGuard};
use crate::error::{catch_flat, Error, Result};
use crate::pytree::{Pytree, TreeDef};
use crate::staging::{Staged, StagingTrace};
use jaxon_ir::{Aval, ClosedJaxpr, HostArray, ShapedArray};
use std::sync::Arc;

/// Where the staging main of a trace goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageMode {
    /// A fresh stack with the staging trace as its base (`jit`,
    /// `make_jaxpr`): outer tracers are captured as constants.
    Base,
    /// Pushed on the current stack as the dynamic trace (control-flow
    /// bodies).
    Dynamic,
}

/// Traces `f` on fresh tracers of types `in_avals`; returns the jaxpr and
/// the values its constvars stand for.
pub fn trace_flat(
    mode: StageMode,
    in_avals: &[Aval],
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
) -> Result<Staged> {
    let guard: MainGuard = match mode {
        StageMode::Base => new_base_main(Box::new(StagingTrace::new())),
        StageMode::Dynamic => new_dynamic_main(Box::new(StagingTrace::new())),
    };
    let main = guard.main().clone();
    let staging = StagingTrace::of(&main).expect("a staging main");
    let args = in_avals
        .iter()
        .map(|a| staging.new_arg(&main, a.clone()))
        .collect();
    let outs = f(args)?;
    staging.finish(&main, &outs)
}

/// Traces a pytree function on the types of `args`' leaves; returns the
/// staging and the output structure.
pub fn trace_pytree<I: Pytree, O: Pytree>(
    mode: StageMode,
    f: impl FnOnce(I) -> O,
    in_def: &TreeDef,
    in_avals: &[Aval],
) -> Result<(Staged, TreeDef)> {
    let mut out_def = None;
    let staged = catch_flat(|| {
        trace_flat(mode, in_avals, |tracers| {
            let input = I::unflatten(in_def, tracers)?;
            let (leaves, def) = f(input).flatten();
            out_def = Some(def);
            Ok(leaves)
        })
    })?;
    let out_def = out_def.expect("set when tracing succeeds");
    Ok((staged, out_def))
}

/// Closes a staging whose constants are all concrete.
pub fn close(staged: Staged) -> Result<ClosedJaxpr> {
    let consts = staged
        .consts
        .iter()
        .map(|c| {
            if c.is_tracer() {
                Err(Error::UnexpectedTracer(format!(
                    "the traced function closes over a tracer of type {} \
                     from an enclosing transformation; pass it as an argument",
                    jaxon_ir::shape::fmt_aval(c.aval())
                )))
            } else {
                c.try_to_host("closing a jaxpr")
            }
        })
        .collect::<Result<Vec<HostArray>>>()?;
    Ok(ClosedJaxpr {
        jaxpr: Arc::new(staged.jaxpr),
        consts: Arc::from(consts),
    })
}

/// The types of a pytree's leaves.
pub fn leaf_avals(leaves: &[Array]) -> Vec<Aval> {
    leaves.iter().map(|l| l.aval().clone()).collect()
}

/// `make_jaxpr(f)(args)`: the jaxpr of `f` at the types of `args`.
///
/// Every operation is staged (omnistaging), including ones that depend on no
/// argument; captured arrays become constvars and Rust scalars literals.
pub fn make_jaxpr<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> impl Fn(I) -> Result<ClosedJaxpr> {
    move |args: I| {
        let (leaves, in_def) = args.flatten();
        let avals = leaf_avals(&leaves);
        let (staged, _) = trace_pytree(StageMode::Base, &f, &in_def, &avals)?;
        close(staged)
    }
}

/// `eval_shape(f)(args)`: the types of `f`'s outputs, without running it.
pub fn eval_shape<I: Pytree, O: Pytree, F: Fn(I) -> O>(
    f: F,
) -> impl Fn(I) -> Result<Vec<ShapedArray>> {
    move |args: I| {
        let (leaves, in_def) = args.flatten();
        let avals = leaf_avals(&leaves);
        let (staged, _) = trace_pytree(StageMode::Base, &f, &in_def, &avals)?;
        let j = &staged.jaxpr;
        j.outvars
            .iter()
            .map(|a| {
                j.atom_aval(a)
                    .map(|av| av.array().clone())
                    .ok_or_else(|| Error::InvalidArgument("unbound outvar".into()))
            })
            .collect()
    }
}
