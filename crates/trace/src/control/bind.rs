//! Seed 003's `bind_prim` for primitives with bodies and dynamic shapes,
//! implemented once for `for_loop`, `while_loop` and `cond`:
//!
//! 1. [`expand_inputs`]: the expanded inputs and the input type, implicit
//!    arguments (dimensions) first — one per shared dimension when
//!    `preserve_dimensions`, else one per use;
//! 2. [`trace_body`]: the body traced in a new dynamic staging context
//!    built from that type (`initialize`), on the collapsed arguments;
//!    captured values become leading constvars, and a captured value whose
//!    dimension is an implicit argument's promotes that argument to a
//!    const, so both share one variable (seed 003's first example);
//! 3. the caller's `expand_results` closure deduces the output type and the
//!    implicit results (for loops: [`loop_results`]);
//! 4. the caller binds the primitive, whose shape rule creates the output
//!    tracers (dimensions that are results are `OutDBIdx`);
//! 5. [`collapse`] drops the implicit results.

use crate::array::Array;
use crate::core::full_raise;
use crate::core::new_dynamic_main;
use crate::dynshape::{same_value, sizes, Size};
use crate::error::{Error, Result};
use crate::stage::new_typed_args;
use crate::staging::{Staged, StagingTrace};
use jaxon_ir::dyntype::{DynAval, InDim, InType};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{DType, HostArray, Jaxpr};

/// Expanded inputs: the outer values of the implicit arguments and the
/// input type of `implicit ++ explicit`.
pub(crate) struct Expanded {
    /// Outer dimension values, one per implicit argument.
    pub implicit: Vec<Array>,
    /// The input type (implicit entries first, not explicit).
    pub in_type: InType,
}

/// Step 1 (`deduceInputType`): implicit arguments for the dynamic
/// dimensions of `explicit`.
pub(crate) fn expand_inputs(explicit: &[Array], preserve_dimensions: bool) -> Result<Expanded> {
    let mut implicit: Vec<Array> = Vec::new();
    let mut shapes = Vec::with_capacity(explicit.len());
    for x in explicit {
        let mut shape = Vec::new();
        for s in sizes(x)? {
            shape.push(match s {
                Size::Const(n) => InDim::Const(n),
                Size::Dyn(d) => {
                    let found = preserve_dimensions
                        .then(|| implicit.iter().position(|i| same_value(i, &d)))
                        .flatten();
                    InDim::DBIdx(found.unwrap_or_else(|| {
                        implicit.push(d);
                        implicit.len() - 1
                    }))
                }
            });
        }
        shapes.push(shape);
    }
    let scalar = || DynAval {
        dtype: DType::I64,
        shape: Vec::new(),
    };
    let mut entries: Vec<(DynAval<InDim>, bool)> =
        implicit.iter().map(|_| (scalar(), false)).collect();
    for (x, shape) in explicit.iter().zip(shapes) {
        entries.push((
            DynAval {
                dtype: x.dtype(),
                shape,
            },
            true,
        ));
    }
    Ok(Expanded {
        implicit,
        in_type: InType(entries),
    })
}

/// What the body sees while it is traced: its main and expanded arguments.
pub(crate) struct BodyCtx<'a> {
    /// The expanded arguments (implicit first).
    pub args: &'a [Array],
    /// Whether implicit argument `j` is still an argument (not promoted to
    /// a const by a capture sharing its dimension).
    pub kept: Vec<bool>,
}

/// A traced body: the jaxpr with its captured values as leading invars.
pub(crate) struct TracedBody {
    /// `constvars` moved to the front of `invars`.
    pub jaxpr: Jaxpr,
    /// The captured values (operands before the implicit ones).
    pub consts: Vec<Array>,
    /// Which implicit arguments are still arguments.
    pub kept: Vec<bool>,
    /// How many leading results are implicit.
    pub implicit_outs: usize,
}

/// Step 2: traces `f` on the collapsed arguments of `in_type`, then lets
/// `expand_results` turn the explicit results into the expanded ones
/// (returning them and how many are implicit).
pub(crate) fn trace_body(
    expanded: &Expanded,
    promote: bool,
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    expand_results: impl FnOnce(&BodyCtx, Vec<Array>) -> Result<(Vec<Array>, usize)>,
) -> Result<TracedBody> {
    let guard = new_dynamic_main(Box::new(StagingTrace::new()));
    let main = guard.main().clone();
    let staging = StagingTrace::of(&main).expect("a staging main");
    let outer: Vec<Option<Array>> = if promote {
        expanded.implicit.iter().cloned().map(Some).collect()
    } else {
        Vec::new()
    };
    let args = new_typed_args(staging, &main, &expanded.in_type, &outer)?;
    let n_imp = expanded.implicit.len();
    let explicit = args[n_imp..].to_vec();
    let outs = f(explicit)?
        .iter()
        .map(|o| full_raise(&main, o))
        .collect::<Result<Vec<_>>>()?;
    let kept = args[..n_imp].iter().map(|a| staging.is_invar(a)).collect();
    let cx = BodyCtx { args: &args, kept };
    let (expanded_outs, implicit_outs) = expand_results(&cx, outs)?;
    let kept = cx.kept;
    let Staged { jaxpr, consts, .. } = staging.finish(&main, &expanded_outs)?;
    let mut jaxpr = jaxpr;
    let mut invars = std::mem::take(&mut jaxpr.constvars);
    invars.append(&mut jaxpr.invars);
    jaxpr.invars = invars;
    Ok(TracedBody {
        jaxpr,
        consts,
        kept,
        implicit_outs,
    })
}

/// Promotes in `other` (a body traced from the same input type without
/// promotion, e.g. a `while`'s cond) the implicit arguments `kept` says
/// were promoted elsewhere: each becomes a trailing const standing for its
/// outer value, so both bodies take the same carries.
pub(crate) fn promote_like(other: &mut TracedBody, kept: &[bool], expanded: &Expanded) {
    for j in (0..expanded.implicit.len()).rev() {
        if kept[j] || !other.kept[j] {
            continue;
        }
        let rank = (0..j).filter(|&k| other.kept[k]).count();
        let nc = other.consts.len();
        let v = other.jaxpr.invars.remove(nc + rank);
        other.jaxpr.invars.insert(nc, v);
        other.consts.push(expanded.implicit[j].clone());
        other.kept[j] = false;
    }
}

/// Step 3 for loops: the body's results must have the arguments' types
/// except for carried dimensions, whose new values become the implicit
/// results (in the implicit arguments' order). With `preserve_dimensions`
/// the results must keep the arguments' sharing of dimensions; a dimension
/// promoted to a const must stay the same. `carry_from` is the position of
/// the first carried explicit argument (1 for `for_loop`, past the index).
pub(crate) fn loop_results(
    what: &str,
    expanded: &Expanded,
    carry_from: usize,
    cx: &BodyCtx,
    outs: Vec<Array>,
) -> Result<(Vec<Array>, usize)> {
    let n_imp = expanded.implicit.len();
    let carried = &cx.args[n_imp + carry_from..];
    let types = &expanded.in_type.0[n_imp + carry_from..];
    if outs.len() != carried.len() {
        return Err(Error::InvalidArgument(format!(
            "{what}: the body returns {} value(s) for {} loop argument(s)",
            outs.len(),
            carried.len()
        )));
    }
    // For each implicit argument: the result (index, type) that first gave
    // its new value, and that value.
    let mut next: Vec<Option<(usize, Size)>> = vec![None; n_imp];
    for (k, ((out, arg), (ty, _))) in outs.iter().zip(carried).zip(types).enumerate() {
        let mismatch = |why: &str| Error::ShapeMismatch {
            op: format!("{what}: result {k} {why}"),
            lhs: fmt_aval(out.aval()),
            rhs: fmt_aval(arg.aval()),
        };
        if out.dtype() != arg.dtype() || out.ndim() != arg.ndim() {
            return Err(mismatch(
                "must have its argument's dtype and rank (result vs argument)",
            ));
        }
        for (axis, (s, d)) in sizes(out)?.into_iter().zip(&ty.shape).enumerate() {
            match *d {
                InDim::Const(n) => {
                    if s.as_const() != Some(n) {
                        return Err(mismatch(&format!(
                            "must keep the static size {n} of axis {axis} (result vs argument)"
                        )));
                    }
                }
                InDim::DBIdx(j) if !cx.kept[j] => {
                    let same = matches!(&s, Size::Dyn(x) if same_value(x, &cx.args[j]));
                    if !same {
                        return Err(mismatch(&format!(
                            "must keep axis {axis}, whose size is shared with a captured value \
                             (result vs argument)"
                        )));
                    }
                }
                InDim::DBIdx(j) => match &next[j] {
                    None => next[j] = Some((k, s)),
                    Some((k0, s0)) => {
                        let same = match (s0, &s) {
                            (Size::Const(a), Size::Const(b)) => a == b,
                            (Size::Dyn(a), Size::Dyn(b)) => same_value(a, b),
                            _ => false,
                        };
                        if !same {
                            return Err(Error::ShapeMismatch {
                                op: format!(
                                    "{what}: result {k} breaks the arguments' dimension sharing: \
                                     axis {axis} shares a dimension with result {k0} in the \
                                     arguments, but the results' dimensions differ \
                                     (result {k0} vs result {k}); pass preserve_dimensions=false"
                                ),
                                lhs: fmt_aval(outs[*k0].aval()),
                                rhs: fmt_aval(out.aval()),
                            });
                        }
                    }
                },
            }
        }
    }
    let mut expanded_outs = Vec::new();
    for (j, n) in next.into_iter().enumerate() {
        if !cx.kept[j] {
            continue;
        }
        expanded_outs.push(match n {
            Some((_, Size::Dyn(x))) => x,
            Some((_, Size::Const(c))) => Array::from_host(HostArray::scalar(DType::I64, c as f64)),
            None => cx.args[j].clone(),
        });
    }
    let n = expanded_outs.len();
    expanded_outs.extend(outs);
    Ok((expanded_outs, n))
}

/// The implicit operands that are still arguments of the body.
pub(crate) fn kept_implicit(expanded: &Expanded, kept: &[bool]) -> Vec<Array> {
    expanded
        .implicit
        .iter()
        .zip(kept)
        .filter(|(_, k)| **k)
        .map(|(a, _)| a.clone())
        .collect()
}

/// Step 5: the explicit results.
pub(crate) fn collapse(mut outs: Vec<Array>, implicit_outs: usize) -> Vec<Array> {
    outs.drain(..implicit_outs.min(outs.len()));
    outs
}
