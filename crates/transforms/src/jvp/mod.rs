//! Forward mode: `JvpTrace`, whose tracers carry a primal and a tangent,
//! `jvp`/`jvp_jaxpr`, and the dispatch to the jvp rules (`crate::rules`,
//! one module per primitive family).
//!
//! Invariants: a tangent is `None` (a symbolic zero) until a rule makes it
//! non-zero, and always `None` for integer and bool values (JAX's
//! `float0`). When every operand's tangent is zero, the primitive binds on
//! the primals alone and no rule runs.

use crate::rules::{self, JvpOuts};
use crate::util::{has_tangent, zeros_like};
use jaxon_ir::{Aval, ClosedJaxpr, Primitive};
use jaxon_trace::core::{full_raise, new_main, MainTrace, Trace};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, Array, Pytree};
use std::any::Any;
use std::sync::Arc;

/// The jvp trace: stateless; the tracers hold the data.
pub struct JvpTrace;

/// A jvp tracer's payload.
#[derive(Clone)]
pub(crate) struct Dual {
    pub primal: Array,
    pub tangent: Option<Array>,
}

pub(crate) fn dual(x: &Array) -> Result<&Dual> {
    x.as_tracer()
        .and_then(|t| t.payload::<Dual>())
        .ok_or_else(|| Error::UnexpectedTracer("not a jvp tracer".into()))
}

/// Wraps a primal and tangent as a tracer of `main`.
pub(crate) fn new_dual(main: &Arc<MainTrace>, primal: Array, tangent: Option<Array>) -> Array {
    let tangent = tangent.filter(|_| has_tangent(primal.dtype()));
    // A dynamic shape's dimensions are the primal's.
    let dims = jaxon_trace::dynshape::dim_tracers_except(&primal, None);
    Array::new_tracer_with_dims(
        main.clone(),
        primal.aval().clone(),
        Dual { primal, tangent },
        dims,
    )
}

impl Trace for JvpTrace {
    fn name(&self) -> &'static str {
        "jvp"
    }

    fn lift(&self, main: &Arc<MainTrace>, x: &Array) -> Result<Array> {
        Ok(new_dual(main, x.clone(), None))
    }

    fn process_primitive(
        &self,
        main: &Arc<MainTrace>,
        primitive: &Primitive,
        args: &[Array],
    ) -> Result<Vec<Array>> {
        let mut primals = Vec::with_capacity(args.len());
        let mut tangents = Vec::with_capacity(args.len());
        for a in args {
            let d = dual(a)?;
            primals.push(d.primal.clone());
            tangents.push(d.tangent.clone());
        }
        if tangents.iter().all(Option::is_none) {
            let outs = bind(primitive, &primals)?;
            return Ok(outs.into_iter().map(|p| new_dual(main, p, None)).collect());
        }
        let (p_out, t_out) = jvp_rule(primitive, &primals, &tangents)?;
        Ok(p_out
            .into_iter()
            .zip(t_out)
            .map(|(p, t)| new_dual(main, p, t))
            .collect())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The jvp of `p` at primals `x` along tangents `t` (some non-zero): one
/// exhaustive match on the families, each family's rules matching its
/// enum exhaustively.
fn jvp_rule(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match p {
        Primitive::Elementwise(e) => rules::elementwise::jvp(e, p, x, t),
        Primitive::Structural(s) => rules::structural::jvp(s, p, x, t),
        Primitive::Indexing(i) => rules::indexing::jvp(i, p, x, t),
        Primitive::Reduction(r) => rules::reduction::jvp(r, p, x, t),
        Primitive::Linalg(l) => rules::linalg::jvp(l, p, x, t),
        Primitive::Control(c) => rules::control::jvp(c, x, t),
        Primitive::State(s) => rules::state::jvp(s, p, x, t),
        Primitive::Pallas(k) => rules::pallas::jvp(k, p, x, t),
        Primitive::Collective(c) => rules::collective::jvp(c, p, x, t),
        Primitive::Marker(m) => rules::marker::jvp(m, p, x, t),
        Primitive::Window(w) => rules::window::jvp(w, p, x, t),
        Primitive::Random(r) => rules::random::jvp(r, p, x, t),
        Primitive::Callback(c) => rules::callback::jvp(c, p, x, t),
    }
}

/// Forward mode on flat lists: primal and tangent outputs (`None` tangent
/// = zero).
pub fn jvp_flat(
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    primals: &[Array],
    tangents: &[Option<Array>],
) -> Result<(Vec<Array>, Vec<Option<Array>>)> {
    let guard = new_main(Box::new(JvpTrace));
    let main = guard.main().clone();
    let ins = primals
        .iter()
        .zip(tangents)
        .map(|(p, t)| new_dual(&main, p.clone(), t.clone()))
        .collect();
    let outs = f(ins)?;
    let mut p_out = Vec::with_capacity(outs.len());
    let mut t_out = Vec::with_capacity(outs.len());
    for o in &outs {
        let o = full_raise(&main, o)?;
        let d = dual(&o)?;
        p_out.push(d.primal.clone());
        t_out.push(d.tangent.clone());
    }
    Ok((p_out, t_out))
}

/// `jvp(f, primals, tangents)`: `f(primals)` and its directional derivative
/// along `tangents` (same structure as `primals`).
pub fn jvp<I: Pytree, O: Pytree>(
    f: impl FnOnce(I) -> O,
    primals: I,
    tangents: I,
) -> Result<(O, O)> {
    let (p_leaves, def) = primals.flatten();
    let (t_leaves, t_def) = tangents.flatten();
    if def != t_def {
        return Err(Error::InvalidArgument(format!(
            "jvp: primals and tangents have different structures: {def:?} vs {t_def:?}"
        )));
    }
    for (p, t) in p_leaves.iter().zip(&t_leaves) {
        if p.ty().shape != t.ty().shape || (has_tangent(p.dtype()) && p.dtype() != t.dtype()) {
            return Err(Error::ShapeMismatch {
                op: "jvp (primal vs tangent)".into(),
                lhs: jaxon_ir::shape::fmt_aval(p.aval()),
                rhs: jaxon_ir::shape::fmt_aval(t.aval()),
            });
        }
    }
    let tangents: Vec<Option<Array>> = t_leaves.into_iter().map(Some).collect();
    catch_flat(|| {
        let mut out_def = None;
        let (p_out, t_out) = jvp_flat(
            |ins| {
                let (leaves, d) = f(I::unflatten(&def, ins)?).flatten();
                out_def = Some(d);
                Ok(leaves)
            },
            &p_leaves,
            &tangents,
        )?;
        let out_def = out_def.expect("set by the traced function");
        let t_out = p_out
            .iter()
            .zip(t_out)
            .map(|(p, t)| t.map_or_else(|| zeros_like(p), Ok))
            .collect::<Result<Vec<_>>>()?;
        Ok((
            O::unflatten(&out_def, p_out)?,
            O::unflatten(&out_def, t_out)?,
        ))
    })
}

/// The jvp of a closed jaxpr: a jaxpr from `(primals, tangents of the
/// inputs marked non-zero)` to `(primal outputs, tangents of the outputs
/// marked in the returned mask)`. With `instantiate`, every float output
/// gets a tangent.
pub fn jvp_jaxpr(
    closed: &ClosedJaxpr,
    nonzero: &[bool],
    instantiate: &[bool],
) -> Result<(ClosedJaxpr, Vec<bool>)> {
    jvp_jaxpr_with(closed, nonzero, instantiate, JvpOutputs::PrimalsAndTangents)
}

/// Which outputs a jaxpr built by [`jvp_jaxpr_with`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JvpOutputs {
    /// The primal outputs, then the non-zero tangent outputs.
    PrimalsAndTangents,
    /// Only the non-zero tangent outputs. Staging drops the primal work
    /// the tangents do not need, so this is the "tangent half" of a split
    /// jvp: the primal half is the original jaxpr on the primals alone.
    TangentsOnly,
}

/// [`jvp_jaxpr`] with a choice of outputs.
pub fn jvp_jaxpr_with(
    closed: &ClosedJaxpr,
    nonzero: &[bool],
    instantiate: &[bool],
    outputs: JvpOutputs,
) -> Result<(ClosedJaxpr, Vec<bool>)> {
    if outputs == JvpOutputs::TangentsOnly {
        return tangents_only(closed, nonzero, instantiate);
    }
    let jaxpr = &closed.jaxpr;
    let in_avals: Vec<Aval> = jaxpr
        .invars
        .iter()
        .map(|v| jaxpr.aval(*v).clone())
        .collect();
    let mut avals = in_avals.clone();
    for (a, nz) in in_avals.iter().zip(nonzero) {
        if *nz {
            avals.push(a.clone());
        }
    }
    let n = in_avals.len();
    let mut out_nonzero = Vec::new();
    let body = |args: Vec<Array>| {
        let (primals, tangent_args) = args.split_at(n);
        let mut it = tangent_args.iter().cloned();
        let tangents: Vec<Option<Array>> = nonzero
            .iter()
            .map(|nz| if *nz { it.next() } else { None })
            .collect();
        let (p_out, t_out) = jvp_flat(|ins| eval_closed_jaxpr(closed, &ins), primals, &tangents)?;
        let mut outs = match outputs {
            JvpOutputs::PrimalsAndTangents => p_out.clone(),
            JvpOutputs::TangentsOnly => Vec::new(),
        };
        for (i, (p, t)) in p_out.iter().zip(t_out).enumerate() {
            let inst = instantiate.get(i).copied().unwrap_or(false) && has_tangent(p.dtype());
            match t {
                Some(t) => {
                    out_nonzero.push(true);
                    outs.push(t);
                }
                None if inst => {
                    out_nonzero.push(true);
                    outs.push(zeros_like(p)?);
                }
                None => out_nonzero.push(false),
            }
        }
        Ok(outs)
    };
    let dynamic = in_avals.iter().any(|a| a.array().static_sizes().is_none());
    let staged = if dynamic {
        // Dimension variables: the tangents share the primals' (input
        // types whose DBIdx point at the primal inputs).
        let mut t = jaxon_ir::dyntype::in_type(jaxpr, &vec![true; n])?;
        let tangent_types: Vec<_> =
            t.0.iter()
                .zip(nonzero)
                .filter(|(_, nz)| **nz)
                .map(|(e, _)| e.clone())
                .collect();
        t.0.extend(tangent_types);
        jaxon_trace::stage::trace_flat_in_type(StageMode::Base, &t, body)?
    } else {
        trace_flat(StageMode::Base, &avals, body)?
    };
    Ok((close(staged)?, out_nonzero))
}

/// The tangent half of a jvp as one jaxpr `(primals, tangents) ->
/// tangents`, built from [`crate::partial_eval::linearize_jaxpr`]: the
/// primal half (recomputing the residuals) followed by the linear half.
/// Every equation of the result reads only primals or is linear in the
/// tangents, never both with primal results, so `backward_pass` can
/// transpose it (a jvp staged in one trace would leave combined
/// primal-and-tangent equations, e.g. a nested `jit`, whose primal
/// results would count as linear).
fn tangents_only(
    closed: &ClosedJaxpr,
    nonzero: &[bool],
    instantiate: &[bool],
) -> Result<(ClosedJaxpr, Vec<bool>)> {
    let lj = crate::partial_eval::linearize_jaxpr(closed, nonzero, instantiate)?;
    let jaxpr = &closed.jaxpr;
    let n = jaxpr.invars.len();
    let n_out = jaxpr.outvars.len();
    let mut avals: Vec<Aval> = jaxpr
        .invars
        .iter()
        .map(|v| jaxpr.aval(*v).clone())
        .collect();
    for i in 0..n {
        if nonzero[i] {
            avals.push(avals[i].clone());
        }
    }
    let staged = trace_flat(StageMode::Base, &avals, |args| {
        let (primals, tangents) = args.split_at(n);
        let known = eval_closed_jaxpr(&lj.known, primals)?;
        let mut lin_args = known[n_out..].to_vec();
        lin_args.extend(tangents.iter().cloned());
        eval_closed_jaxpr(&lj.linear, &lin_args)
    })?;
    Ok((close(staged)?, lj.out_nonzero))
}
