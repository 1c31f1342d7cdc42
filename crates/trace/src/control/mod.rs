//! Structured control flow: `cond`/`switch`, `while_loop`, `fori_loop` and
//! `scan`, staged as JAX 0.10.2 stages them (same equations, same hoisting of
//! captured values to leading operands, same pruning of forwarded values).
//!
//! Bodies are Rust closures over pytrees. Each is traced on a dynamic staging
//! trace from its operands' types; the values it captured (outer tracers,
//! concrete arrays) become leading operands of the control-flow equation
//! and leading invars of the body jaxpr (`num_consts`, `body_nconsts`, ...).

mod bind;
mod cond;
mod dyn_control;
mod for_loop;
mod loops;
mod scan;

pub use cond::{cond, switch};
pub use dyn_control::while_loop_with;
pub use for_loop::{for_loop, for_loop_with, ForBound, ForLoopOptions};
pub use loops::{fori_loop, while_loop, LoopBound};
pub use scan::scan;

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::pytree::{Pytree, TreeDef};
use crate::stage::{trace_pytree, StageMode};
use crate::staging::Staged;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Atom, Aval, ClosedJaxpr, Jaxpr, Var};
use std::sync::Arc;

/// A body traced on the dynamic staging trace.
struct Body {
    /// The jaxpr; its captured values are still constvars.
    jaxpr: Jaxpr,
    /// The values of `jaxpr.constvars`, in order.
    consts: Vec<Array>,
    /// The structure of the body's result.
    out_def: TreeDef,
    /// Leading implicit results (dimensions the body created).
    implicit_outs: usize,
}

impl Body {
    /// Traces `f` on fresh tracers of `in_avals` arranged as `in_def`.
    fn trace<I: Pytree, O: Pytree>(
        f: impl FnOnce(I) -> O,
        in_def: &TreeDef,
        in_avals: &[Aval],
    ) -> Result<Body> {
        let (
            Staged {
                jaxpr,
                consts,
                implicit_outs,
            },
            out_def,
        ) = trace_pytree::<I, O>(StageMode::Dynamic, f, in_def, in_avals)?;
        Ok(Body {
            jaxpr,
            consts,
            out_def,
            implicit_outs,
        })
    }

    /// The types of the body's results.
    fn out_avals(&self) -> Vec<Aval> {
        out_avals(&self.jaxpr)
    }

    /// The jaxpr with its constvars turned into leading invars.
    fn open(self) -> (Jaxpr, Vec<Array>) {
        let mut j = self.jaxpr;
        let mut invars = std::mem::take(&mut j.constvars);
        invars.append(&mut j.invars);
        j.invars = invars;
        (j, self.consts)
    }
}

/// The types of a jaxpr's results.
fn out_avals(j: &Jaxpr) -> Vec<Aval> {
    j.outvars
        .iter()
        .map(|a| j.atom_aval(a).expect("staged outvars are bound"))
        .collect()
}

/// A closed jaxpr without consts (captured values are operands).
fn closed(j: Jaxpr) -> ClosedJaxpr {
    ClosedJaxpr {
        jaxpr: Arc::new(j),
        consts: Arc::from(Vec::new()),
    }
}

/// For each result: the index of the invar it returns unchanged, if any.
fn forwarding(j: &Jaxpr) -> Vec<Option<usize>> {
    j.outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => j.invars.iter().position(|w| w == v),
            Atom::Lit(_) => None,
        })
        .collect()
}

/// Whether a jaxpr reads variable `v` (in an equation or as a result).
fn reads(j: &Jaxpr, v: Var) -> bool {
    let hit = |a: &Atom| *a == Atom::Var(v);
    j.outvars.iter().any(hit) || j.eqns.iter().any(|e| e.inputs.iter().any(hit))
}

/// Moves the invars flagged in `mask` to the front, keeping their order.
fn move_invars_to_front(j: &mut Jaxpr, mask: &[bool]) {
    let (front, back): (Vec<_>, Vec<_>) = j.invars.iter().zip(mask).partition(|(_, m)| **m);
    j.invars = front.into_iter().chain(back).map(|(v, _)| *v).collect();
}

/// Keeps the results flagged in `keep`.
fn prune_outvars(j: &mut Jaxpr, keep: &[bool]) {
    j.outvars = j
        .outvars
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(a, _)| *a)
        .collect();
}

/// The error for two types that should be equal (up to weak typing).
fn type_mismatch(op: String, lhs: &Aval, rhs: &Aval) -> Error {
    let (l, r) = (lhs.array(), rhs.array());
    let (lhs, rhs) = (fmt_aval(lhs), fmt_aval(rhs));
    if l.dtype != r.dtype {
        Error::DTypeMismatch { op, lhs, rhs }
    } else {
        Error::ShapeMismatch { op, lhs, rhs }
    }
}

/// Equal dtype and shape; the weak flag is ignored, as JAX's `typematch`
/// does.
fn typematch(a: &Aval, b: &Aval) -> bool {
    jaxon_ir::shape::same_type(a, b)
}

/// Checks that a loop body returns its carry's structure and types.
fn check_carry(
    what: &str,
    in_def: &TreeDef,
    out_def: &TreeDef,
    in_avals: &[Aval],
    out_avals: &[Aval],
) -> Result<()> {
    if in_def != out_def {
        return Err(Error::InvalidArgument(format!(
            "{what} function carry input and carry output must have the same \
             pytree structure, but the input is {in_def:?} and the output is {out_def:?}"
        )));
    }
    for (k, (i, o)) in in_avals.iter().zip(out_avals).enumerate() {
        if !typematch(i, o) {
            return Err(type_mismatch(
                format!(
                    "{what} function carry input and carry output must have equal types, \
                     but carry component {k} differs (input vs output)"
                ),
                i,
                o,
            ));
        }
    }
    Ok(())
}

/// JAX's two-pass handling of weakly typed initial carries: a weak input
/// whose dtype differs from the body's output is converted to the output's
/// dtype (strongly typed), and the caller re-traces. Returns whether any
/// input changed.
fn promote_weak_inputs(init: &mut [Array], out_avals: &[Aval]) -> Result<bool> {
    let mut changed = false;
    for (x, o) in init.iter_mut().zip(out_avals) {
        if x.weak_type() && !typematch(x.aval(), o) && x.ty().shape == o.array().shape {
            let dtype =
                jaxon_ir::result_type(&[(x.dtype(), true), (o.array().dtype, o.array().weak_type)])
                    .map_or(o.array().dtype, |(d, _)| d);
            *x = lax::convert_element_type(x, dtype, false)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// A strongly typed scalar of `dtype` (JAX's `lax._const`).
fn typed_scalar(dtype: jaxon_ir::DType, x: f64) -> Array {
    Array::from_host(jaxon_ir::HostArray::scalar(dtype, x))
}
