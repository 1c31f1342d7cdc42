//! `custom_linear_solve` (JAX's `lax.custom_linear_solve`): solve `A x = b`
//! with any solver, and differentiate the solution implicitly instead of
//! through the solver's iterations. The primitive's rules are
//! `rules/control/linear_solve.rs`; this file stages the four functions.

use crate::api::linear_transpose_tree;
use crate::custom::trace_call;
use jaxon_ir::primitive::{CustomLinearSolveParams, LinearSolveTuple};
use jaxon_ir::{ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, raise, Array, Pytree};
use std::sync::Arc;

/// A staged function: its jaxpr (consts as leading invars) and the consts.
type Staged = (Jaxpr, Vec<Array>);

/// A solver: given `matvec` (or its transpose) and `b`, returns `x`.
pub type Solver<'a, B> = &'a dyn Fn(&dyn Fn(B) -> B, B) -> B;

/// How [`custom_linear_solve`] transposes the system.
#[derive(Clone, Copy)]
pub enum Transpose<'a, B> {
    /// No transpose: reverse mode through the solve is an error.
    None,
    /// `A` is symmetric: the transpose solve is the solve.
    Symmetric,
    /// This solver solves `A^T x = b` (given `A^T`'s matvec).
    Solve(Solver<'a, B>),
}

/// `lax.custom_linear_solve(matvec, b, solve, transpose_solve, symmetric)`:
/// `x = solve(matvec, b)` for the linear `matvec` (`A x`), staged as one
/// `custom_linear_solve` equation so that derivatives come from `A x = b`
/// itself: `ẋ = A^-1 (ḃ - Ȧ x)`, and the cotangent of `b` is
/// `A^-T x̄` (which needs `transpose`).
///
/// `b` is any pytree; `matvec` and the solvers map that structure to
/// itself.
///
/// ```
/// use jaxon_trace::numpy::All;
/// use jaxon_trace::Array;
/// use jaxon_transforms::{grad, linear_solve::{custom_linear_solve, Transpose}};
///
/// // A diagonal system solved by division; the gradient flows implicitly.
/// let d = Array::from_vec(vec![2.0f64, 4.0], &[2]);
/// let f = |b: Array| {
///     let x = custom_linear_solve(|x: Array| &d * &x, b, &|_, b: Array| &b / &d,
///         Transpose::Symmetric).unwrap();
///     x.sum(All)
/// };
/// let g = grad(f)(Array::from_vec(vec![1.0f64, 1.0], &[2]))?;
/// assert_eq!(g.to_vec::<f64>(), vec![0.5, 0.25]);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn custom_linear_solve<B: Pytree>(
    matvec: impl Fn(B) -> B,
    b: B,
    solve: Solver<'_, B>,
    transpose: Transpose<'_, B>,
) -> Result<B> {
    let (b_leaves, b_def) = b.flatten();
    let stage = |f: &dyn Fn(B) -> B, what: &str| -> Result<Staged> {
        let (j, consts, out_def) = trace_call::<B, B>(f, &b_def, &b_leaves)?;
        if out_def != b_def {
            return Err(Error::InvalidArgument(format!(
                "custom_linear_solve: {what} must return b's structure {b_def:?}, got {out_def:?}"
            )));
        }
        Ok((j, consts))
    };
    let (mv, mv_consts) = stage(&matvec, "matvec")?;
    let (sv, sv_consts) = stage(&|b| solve(&matvec, b), "solve")?;
    let example = || B::unflatten(&b_def, b_leaves.clone());
    // `x A`: matvec transposed (x -> A^T x), for the transpose rule.
    let vecmat = |ct: B| -> B {
        let t = example().and_then(|e| linear_transpose_tree(&matvec, e));
        match t.and_then(|t| t(ct)) {
            Ok(x) => x,
            Err(e) => raise(e),
        }
    };
    let staged_t: Option<(Staged, Staged)> = match transpose {
        Transpose::None => None,
        Transpose::Symmetric => Some((
            (mv.clone(), mv_consts.clone()),
            (sv.clone(), sv_consts.clone()),
        )),
        Transpose::Solve(ts) => Some((
            stage(&vecmat, "vecmat (matvec transposed)")?,
            stage(&|b| ts(&vecmat, b), "transpose_solve")?,
        )),
    };
    let closed = |j: Jaxpr| ClosedJaxpr {
        jaxpr: Arc::new(j),
        consts: Arc::from(Vec::new()),
    };
    let (mv_c, sv_c) = (closed(mv), closed(sv));
    let (vm, ts) = match staged_t {
        Some(((vm, vm_consts), (ts, ts_consts))) => {
            // One object when symmetric, as JAX shares them.
            let same = matches!(transpose, Transpose::Symmetric);
            let vm_c = if same { mv_c.clone() } else { closed(vm) };
            let ts_c = if same { sv_c.clone() } else { closed(ts) };
            (Some((vm_c, vm_consts)), Some((ts_c, ts_consts)))
        }
        None => (None, None),
    };
    let len = |c: &Option<(ClosedJaxpr, Vec<Array>)>| c.as_ref().map_or(0, |(_, v)| v.len());
    let params = CustomLinearSolveParams {
        const_lengths: LinearSolveTuple {
            matvec: mv_consts.len(),
            vecmat: len(&vm),
            solve: sv_consts.len(),
            transpose_solve: len(&ts),
        },
        jaxprs: LinearSolveTuple {
            matvec: Some(mv_c),
            vecmat: vm.as_ref().map(|(c, _)| c.clone()),
            solve: Some(sv_c),
            transpose_solve: ts.as_ref().map(|(c, _)| c.clone()),
        },
    };
    let mut operands = mv_consts;
    operands.extend(vm.into_iter().flat_map(|(_, v)| v));
    operands.extend(sv_consts);
    operands.extend(ts.into_iter().flat_map(|(_, v)| v));
    operands.extend(b_leaves.iter().cloned());
    let outs = bind(&Primitive::from(params), &operands)?;
    B::unflatten(&b_def, outs)
}
