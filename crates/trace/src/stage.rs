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
use jaxon_ir::dyntype::{DynAval, InDim, InType};
use jaxon_ir::{Aval, ClosedJaxpr, Dim, HostArray, ShapedArray};
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
    on_fresh_main(mode, |staging, main| {
        let args = in_avals
            .iter()
            .map(|a| staging.new_arg(main, a.clone()))
            .collect();
        let outs = f(args)?;
        staging.finish_expanded(main, &outs)
    })
}

/// Runs `body` on a fresh staging main of `mode`, which lives exactly as
/// long as the call (popped even when `body` fails).
fn on_fresh_main<R>(
    mode: StageMode,
    body: impl FnOnce(&StagingTrace, &Arc<crate::core::MainTrace>) -> Result<R>,
) -> Result<R> {
    let guard: MainGuard = match mode {
        StageMode::Base => new_base_main(Box::new(StagingTrace::new())),
        StageMode::Dynamic => new_dynamic_main(Box::new(StagingTrace::new())),
    };
    let main = guard.main().clone();
    let staging = StagingTrace::of(&main).expect("a staging main");
    body(staging, &main)
}

/// Traces `f` on fresh inputs of the dynamic-shape input type `in_type`
/// (seed 003's `initialize`): implicit inputs (dimensions) are invars but
/// `f` receives only the explicit ones (collapsed). Results are expanded:
/// dimensions of results that are not inputs become leading implicit
/// outvars ([`Staged::implicit_outs`]).
pub fn trace_flat_typed(
    mode: StageMode,
    in_type: &InType,
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
) -> Result<Staged> {
    on_fresh_main(mode, |staging, main| {
        let expanded = new_typed_args(staging, main, in_type, &[])?;
        let explicit = expanded
            .into_iter()
            .zip(&in_type.0)
            .filter(|(_, (_, e))| *e)
            .map(|(a, _)| a)
            .collect();
        let outs = f(explicit)?;
        staging.finish_expanded(main, &outs)
    })
}

/// Traces `f` on fresh inputs of `in_type`, every input explicit and
/// passed to `f`, without expanding the results: for rebuilding a jaxpr
/// with dynamic shapes (its invars' types as an `InType`, see
/// `jaxon_ir::dyntype::in_type`) under a transformation.
pub fn trace_flat_in_type(
    mode: StageMode,
    in_type: &InType,
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
) -> Result<Staged> {
    on_fresh_main(mode, |staging, main| {
        let args = new_typed_args(staging, main, in_type, &[])?;
        let outs = f(args)?;
        staging.finish(main, &outs)
    })
}

/// Creates the invars of `in_type` on `staging`; `outer[i]`, when given, is
/// the outer value implicit input `i` stands for (so a captured value with
/// that dimension shares the input).
pub(crate) fn new_typed_args(
    staging: &StagingTrace,
    main: &Arc<crate::core::MainTrace>,
    in_type: &InType,
    outer: &[Option<Array>],
) -> Result<Vec<Array>> {
    let mut args: Vec<Array> = Vec::with_capacity(in_type.0.len());
    for (i, (t, _)) in in_type.0.iter().enumerate() {
        let mut dims = Vec::new();
        let shape = t
            .shape
            .iter()
            .map(|d| match *d {
                InDim::Const(n) => Ok(Dim::Const(n)),
                InDim::DBIdx(j) => {
                    let a = args.get(j).ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "input type {in_type}: DBIdx({j}) does not precede its use"
                        ))
                    })?;
                    dims.push(a.clone());
                    // Replaced by the input's variable in `new_arg_with_dims`.
                    Ok(Dim::Var(jaxon_ir::Var(0)))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let aval = Aval::Array(ShapedArray::new(t.dtype, shape));
        let arg = match outer.get(i).cloned().flatten() {
            Some(o) if dims.is_empty() => staging.new_implicit_arg(main, aval, &o),
            _ => staging.new_arg_with_dims(main, aval, dims)?,
        };
        args.push(arg);
    }
    Ok(args)
}

/// The input type of arrays with static shapes (every entry explicit).
pub fn static_in_type(avals: &[Aval]) -> Result<InType> {
    avals
        .iter()
        .map(|a| {
            let sizes = a.array().static_sizes().ok_or_else(|| {
                Error::Unsupported(format!(
                    "an argument of dynamic type {} without an input type",
                    jaxon_ir::shape::fmt_aval(a)
                ))
            })?;
            Ok((
                DynAval {
                    dtype: a.dtype(),
                    shape: sizes.into_iter().map(InDim::Const).collect(),
                },
                true,
            ))
        })
        .collect::<Result<Vec<_>>>()
        .map(InType)
}

/// Traces a pytree function on the types of `args`' leaves; returns the
/// staging and the output structure.
pub fn trace_pytree<I: Pytree, O: Pytree>(
    mode: StageMode,
    f: impl FnOnce(I) -> O,
    in_def: &TreeDef,
    in_avals: &[Aval],
) -> Result<(Staged, TreeDef)> {
    trace_pytree_untyped(mode, f, in_def, in_avals)
}

/// [`trace_pytree`] from a dynamic-shape input type: `f` gets the explicit
/// inputs; results are expanded with implicit dimensions.
pub fn trace_pytree_typed<I: Pytree, O: Pytree>(
    mode: StageMode,
    f: impl FnOnce(I) -> O,
    in_def: &TreeDef,
    in_type: &InType,
) -> Result<(Staged, TreeDef)> {
    let mut out_def = None;
    let staged = catch_flat(|| {
        trace_flat_typed(mode, in_type, |tracers| {
            let input = I::unflatten(in_def, tracers)?;
            let (leaves, def) = f(input).flatten();
            out_def = Some(def);
            Ok(leaves)
        })
    })?;
    let out_def = out_def.expect("set when tracing succeeds");
    Ok((staged, out_def))
}

fn trace_pytree_untyped<I: Pytree, O: Pytree>(
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
