//! The jvp of a `remat2` under its policy (JAX's `remat_partial_eval`
//! with `pe.partial_eval_jaxpr_custom`; no policy is `nothing_saveable`).
//!
//! The body is linearized ([`linearize_jaxpr`]): a known half computing
//! the primal outputs and every residual the linear half reads, and the
//! linear half. Each residual is then traced back through the known half:
//! an input of the body stays an input; a value produced by an equation
//! the policy marks saveable is *saved* (computed by the forward pass and
//! passed to the backward `remat2`); any other equation is *recomputed*
//! in the backward `remat2`, and its own operands are traced back the same
//! way. So the rule binds
//!
//! * the known half, pruned to the primal outputs and the saved values,
//!   inline (JAX evaluates its known jaxpr inline too, which is why its
//!   grad jaxprs show the forward pass outside any `remat2`);
//! * `remat2[differentiated=True]` on `(saved, used inputs, tangents)`,
//!   whose body recomputes the unsaved residuals and runs the linear half.
//!
//! Invariant: the primal and tangent values are those of the body's jvp
//! whatever the policy; the policy only moves work between the passes. A
//! `jit` inside the body is inlined first, so the policy sees its
//! equations, as JAX's partial evaluation recurses into `jit`s (JAX keeps
//! the `jit` boundary in both passes; we do not). A `scan`, `cond` or
//! other control-flow equation is one equation to the policy: saved
//! whole only by `everything_saveable`, else recomputed whole (JAX
//! recurses into `scan` and `cond` too).

use super::remat::differentiated;
use crate::checkpoint_policies::Policy;
use crate::custom::open;
use crate::partial_eval::{dce_jaxpr, linearize_jaxpr};
use crate::rules::JvpOuts;
use crate::util::has_tangent;
use jaxon_ir::primitive::{Control, RematParams};
use jaxon_ir::{Atom, Aval, Binder, ClosedJaxpr, Jaxpr, Primitive, Var};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::{eval_closed_jaxpr, eval_jaxpr, literal_array};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, Array};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Where a residual of the known half comes from.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    /// The body's `i`-th input.
    Input(usize),
    /// A value the forward pass saves: a constvar or an equation's output.
    Saved(Var),
}

/// The jvp of `remat2` under `policy` (see the module doc).
pub(super) fn jvp(
    rp: &RematParams,
    policy: &Policy,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let closed = inline_jits(&rp.jaxpr)?;
    let nonzero: Vec<bool> = t
        .iter()
        .zip(x)
        .map(|(t, x)| t.is_some() && has_tangent(x.dtype()))
        .collect();
    let lin = linearize_jaxpr(&closed, &nonzero, &[])?;
    let known = &lin.known.jaxpr;
    let n_out = rp.jaxpr.outvars.len();
    let residuals = known.outvars[n_out..].to_vec();

    // Trace the residuals back to inputs, saved values and equations to
    // recompute.
    let mut producer = vec![None; known.vars.len()];
    for (i, e) in known.eqns.iter().enumerate() {
        for b in &e.outputs {
            if let Binder::Var(v) = b {
                producer[v.index()] = Some(i);
            }
        }
    }
    let input_of = |v: Var| known.invars.iter().position(|w| *w == v);
    let mut recompute = vec![false; known.eqns.len()];
    let mut sources = BTreeSet::new();
    let mut seen = vec![false; known.vars.len()];
    let mut work: Vec<Var> = residuals
        .iter()
        .filter_map(|a| match a {
            Atom::Var(v) => Some(*v),
            Atom::Lit(_) => None,
        })
        .collect();
    while let Some(v) = work.pop() {
        if std::mem::replace(&mut seen[v.index()], true) {
            continue;
        }
        if let Some(i) = input_of(v) {
            sources.insert(Source::Input(i));
            continue;
        }
        match producer[v.index()] {
            Some(e) if !policy.saveable(&known.eqns[e].primitive) => {
                recompute[e] = true;
                work.extend(known.eqns[e].inputs.iter().filter_map(|a| match a {
                    Atom::Var(w) => Some(*w),
                    Atom::Lit(_) => None,
                }));
            }
            // A saveable equation's output, or a constvar.
            _ => {
                sources.insert(Source::Saved(v));
            }
        }
    }
    let used_inputs: Vec<usize> = sources
        .iter()
        .filter_map(|s| match s {
            Source::Input(i) => Some(*i),
            Source::Saved(_) => None,
        })
        .collect();
    let saved: Vec<Var> = sources
        .iter()
        .filter_map(|s| match s {
            Source::Saved(v) => Some(*v),
            Source::Input(_) => None,
        })
        .collect();

    // The forward pass: the known half pruned to the primal outputs and
    // the saved values, bound inline.
    let mut fwd = lin.known.clone();
    {
        let j = Arc::make_mut(&mut fwd.jaxpr);
        j.outvars.truncate(n_out);
        j.outvars.extend(saved.iter().map(|v| Atom::Var(*v)));
    }
    let (fwd, fwd_used) = dce_jaxpr(&fwd, &vec![true; n_out + saved.len()])?;
    let fwd_args: Vec<Array> = x
        .iter()
        .zip(&fwd_used)
        .filter(|(_, u)| **u)
        .map(|(a, _)| a.clone())
        .collect();
    let mut outs = eval_closed_jaxpr(&fwd, &fwd_args)?;
    let saved_vals = outs.split_off(n_out);
    let primals_out = outs;

    // The backward body: (saved, used inputs, tangents) -> tangents.
    let tangents: Vec<Array> = t
        .iter()
        .zip(&nonzero)
        .filter(|(_, nz)| **nz)
        .filter_map(|(t, _)| t.clone())
        .collect();
    let mut avals: Vec<Aval> = saved.iter().map(|v| known.aval(*v).clone()).collect();
    avals.extend(used_inputs.iter().map(|i| x[*i].aval().clone()));
    avals.extend(tangents.iter().map(|a| a.aval().clone()));
    let known_consts: Vec<Array> = lin
        .known
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    let staged = trace_flat(StageMode::Base, &avals, |args| {
        let mut env: Vec<Option<Array>> = vec![None; known.vars.len()];
        let mut it = args.into_iter();
        for v in &saved {
            env[v.index()] = it.next();
        }
        for i in &used_inputs {
            env[known.invars[*i].index()] = it.next();
        }
        let ts: Vec<Array> = it.collect();
        for (v, c) in known.constvars.iter().zip(&known_consts) {
            if env[v.index()].is_none() {
                env[v.index()] = Some(c.clone());
            }
        }
        let read = |env: &[Option<Array>], a: &Atom| -> Result<Array> {
            match a {
                Atom::Lit(l) => Ok(literal_array(l)),
                Atom::Var(v) => env[v.index()].clone().ok_or_else(|| {
                    Error::InvalidArgument(format!("remat2 policy: unbound residual {v:?}"))
                }),
            }
        };
        for (e, _) in known.eqns.iter().zip(&recompute).filter(|(_, r)| **r) {
            let ins = e
                .inputs
                .iter()
                .map(|a| read(&env, a))
                .collect::<Result<Vec<_>>>()?;
            for (b, o) in e.outputs.iter().zip(bind(&e.primitive, &ins)?) {
                if let Binder::Var(v) = b {
                    env[v.index()] = Some(o);
                }
            }
        }
        let mut lin_args = residuals
            .iter()
            .map(|a| read(&env, a))
            .collect::<Result<Vec<_>>>()?;
        lin_args.extend(ts);
        let lin_consts: Vec<Array> = lin
            .linear
            .consts
            .iter()
            .cloned()
            .map(Array::from_host)
            .collect();
        eval_jaxpr(&lin.linear.jaxpr, &lin_consts, &lin_args)
    })?;
    let (body, mut operands) = open(staged.jaxpr, staged.consts);
    operands.extend(saved_vals);
    operands.extend(used_inputs.iter().map(|i| x[*i].clone()));
    operands.extend(tangents);
    let touts = bind(&differentiated(rp, body), &operands)?;
    let mut it = touts.into_iter();
    let tangents_out = lin
        .out_nonzero
        .iter()
        .map(|nz| if *nz { it.next() } else { None })
        .collect();
    Ok((primals_out, tangents_out))
}

fn is_jit(p: &Primitive) -> bool {
    matches!(p, Primitive::Control(Control::Jit(_)))
}

/// The body with its `jit` equations (at any depth) inlined.
fn inline_jits(body: &Arc<Jaxpr>) -> Result<ClosedJaxpr> {
    if !body.eqns.iter().any(|e| is_jit(&e.primitive)) {
        return Ok(ClosedJaxpr::without_consts(body.clone()));
    }
    let avals: Vec<Aval> = body.invars.iter().map(|v| body.aval(*v).clone()).collect();
    close(trace_flat(StageMode::Base, &avals, |args| {
        eval_inlined(body, &[], &args)
    })?)
}

/// Evaluates `j` by binding its equations, a `jit`'s callee in place of
/// the `jit` equation.
fn eval_inlined(j: &Jaxpr, consts: &[Array], args: &[Array]) -> Result<Vec<Array>> {
    let mut env: Vec<Option<Array>> = vec![None; j.vars.len()];
    for (v, x) in j
        .constvars
        .iter()
        .zip(consts)
        .chain(j.invars.iter().zip(args))
    {
        env[v.index()] = Some(x.clone());
    }
    let read = |env: &[Option<Array>], a: &Atom| -> Result<Array> {
        match a {
            Atom::Lit(l) => Ok(literal_array(l)),
            Atom::Var(v) => env.get(v.index()).cloned().flatten().ok_or_else(|| {
                Error::InvalidArgument(format!("remat2 policy: unbound variable {v:?}"))
            }),
        }
    };
    for e in &j.eqns {
        let ins = e
            .inputs
            .iter()
            .map(|a| read(&env, a))
            .collect::<Result<Vec<_>>>()?;
        let outs = match &e.primitive {
            Primitive::Control(Control::Jit(jp)) => {
                let cs: Vec<Array> = jp
                    .jaxpr
                    .consts
                    .iter()
                    .cloned()
                    .map(Array::from_host)
                    .collect();
                eval_inlined(&jp.jaxpr.jaxpr, &cs, &ins)?
            }
            p => bind(p, &ins)?,
        };
        for (b, o) in e.outputs.iter().zip(outs) {
            if let Binder::Var(v) = b {
                env[v.index()] = Some(o);
            }
        }
    }
    j.outvars.iter().map(|a| read(&env, a)).collect()
}
