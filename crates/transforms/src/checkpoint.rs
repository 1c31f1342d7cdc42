//! `checkpoint` (remat): the body is staged as a `remat2` equation whose
//! intermediate values are not saved for the backward pass.
//!
//! The jvp of `remat2` binds the primal `remat2` on the primals, and a
//! second `remat2[differentiated=True]` computing only the tangents from
//! `(primals, tangents)`: it recomputes the forward values it needs. Under
//! `linearize` the first runs now and the second is recorded in the linear
//! jaxpr with only the primal *inputs* as residuals; its transpose is again
//! a `remat2[differentiated=True]` whose body recomputes the forward pass
//! before running it backwards, as JAX's grad jaxprs show.

use crate::custom::open;
use crate::jvp::jvp_flat;
use crate::transpose::{transpose_jaxpr, LinArg};
use jaxon_ir::primitive::{Control, RematParams};
use jaxon_ir::{Aval, ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{catch, Error, Result};
use jaxon_trace::eval::EvalTrace;
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{bind, Array};
use std::sync::Arc;

type Flat = dyn Fn(&[Array]) -> Vec<Array> + Send + Sync;

/// A function whose forward values are recomputed in the backward pass.
#[derive(Clone)]
pub struct Checkpoint {
    f: Arc<Flat>,
    prevent_cse: bool,
}

/// `checkpoint(f)` (JAX's `jax.checkpoint` / `remat`): same values, but
/// reverse mode saves only `f`'s inputs and recomputes the rest.
pub fn checkpoint<F>(f: F) -> Checkpoint
where
    F: Fn(&[Array]) -> Vec<Array> + Send + Sync + 'static,
{
    Checkpoint {
        f: Arc::new(f),
        prevent_cse: true,
    }
}

impl Checkpoint {
    /// JAX's `prevent_cse` (printed; default true).
    pub fn prevent_cse(mut self, yes: bool) -> Self {
        self.prevent_cse = yes;
        self
    }

    /// Calls the function: directly when nothing traces the arguments, else
    /// as a `remat2` equation (captured values become leading operands).
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        if find_top_trace(args)?.trace().as_any().is::<EvalTrace>() {
            return catch(|| (self.f)(args));
        }
        let avals: Vec<Aval> = args.iter().map(|a| a.aval().clone()).collect();
        let staged = trace_flat(StageMode::Dynamic, &avals, |ins| catch(|| (self.f)(&ins)))?;
        let (jaxpr, mut operands) = open(staged.jaxpr, staged.consts);
        operands.extend_from_slice(args);
        bind(
            &Primitive::Control(Control::Remat(RematParams {
                jaxpr: Arc::new(jaxpr),
                prevent_cse: self.prevent_cse,
                differentiated: false,
                policy: None,
            })),
            &operands,
        )
    }
}

type Outs = (Vec<Array>, Vec<Option<Array>>);

/// The jvp of `remat2` (see the module doc).
pub(crate) fn jvp_remat(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Control(Control::Remat(RematParams {
        jaxpr, prevent_cse, ..
    })) = p
    else {
        return Err(Error::InvalidArgument("expected remat2".into()));
    };
    let primals_out = bind(p, x)?;
    let mut avals: Vec<Aval> = x.iter().map(|a| a.aval().clone()).collect();
    avals.extend(t.iter().flatten().map(|a| a.aval().clone()));
    let nonzero: Vec<bool> = t.iter().map(Option::is_some).collect();
    let n = x.len();
    let mut out_nz = Vec::new();
    let staged = trace_flat(StageMode::Base, &avals, |args| {
        let (ps, ts) = args.split_at(n);
        let mut it = ts.iter().cloned();
        let tangents: Vec<Option<Array>> = nonzero
            .iter()
            .map(|nz| if *nz { it.next() } else { None })
            .collect();
        let (_, tout) = jvp_flat(|ins| eval_jaxpr(jaxpr, &[], &ins), ps, &tangents)?;
        out_nz = tout.iter().map(Option::is_some).collect();
        Ok(tout.into_iter().flatten().collect())
    })?;
    let (body, mut operands) = open(staged.jaxpr, staged.consts);
    operands.extend_from_slice(x);
    operands.extend(t.iter().flatten().cloned());
    let touts = bind(
        &Primitive::Control(Control::Remat(RematParams {
            jaxpr: Arc::new(body),
            prevent_cse: *prevent_cse,
            differentiated: true,
            policy: None,
        })),
        &operands,
    )?;
    let mut it = touts.into_iter();
    let tangents = out_nz
        .iter()
        .map(|nz| if *nz { it.next() } else { None })
        .collect();
    Ok((primals_out, tangents))
}

/// The transpose of `remat2`: a `remat2[differentiated=True]` running the
/// body's transpose, which recomputes the forward values it needs.
pub(crate) fn transpose_remat(
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Vec<Option<Array>>> {
    let Primitive::Control(Control::Remat(RematParams {
        jaxpr, prevent_cse, ..
    })) = p
    else {
        return Err(Error::InvalidArgument("expected remat2".into()));
    };
    let linear: Vec<bool> = args.iter().map(LinArg::is_linear).collect();
    let closed = ClosedJaxpr {
        jaxpr: jaxpr.clone(),
        consts: Arc::from(Vec::new()),
    };
    let t = transpose_jaxpr(&closed, &linear)?;
    let consts: Vec<Array> = t.consts.iter().cloned().map(Array::from_host).collect();
    let (body, mut operands): (Jaxpr, Vec<Array>) = open((*t.jaxpr).clone(), consts);
    for a in args {
        if let LinArg::Value(v) = a {
            operands.push(v.clone());
        }
    }
    for (c, o) in cts.iter().zip(&jaxpr.outvars) {
        operands.push(match c {
            Some(c) => c.clone(),
            None => {
                let a = jaxpr
                    .atom_aval(o)
                    .ok_or_else(|| Error::InvalidArgument("remat2: unbound outvar".into()))?;
                let ty = a.array();
                jaxon_trace::numpy::zeros(&ty.static_sizes().unwrap_or_default(), ty.dtype)?
            }
        });
    }
    let outs = bind(
        &Primitive::Control(Control::Remat(RematParams {
            jaxpr: Arc::new(body),
            prevent_cse: *prevent_cse,
            differentiated: true,
            policy: None,
        })),
        &operands,
    )?;
    let mut it = outs.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next() } else { None })
        .collect())
}
