//! `checkpoint` (remat): the body is staged as a `remat2` equation whose
//! intermediate values are not saved for the backward pass.
//!
//! The jvp of `remat2` binds the primal `remat2` on the primals, and a
//! second `remat2[differentiated=True]` computing only the tangents from
//! `(primals, tangents)`: it recomputes the forward values it needs. Under
//! `linearize` the first runs now and the second is recorded in the linear
//! jaxpr with only the primal *inputs* as residuals; its transpose is again
//! a `remat2[differentiated=True]` whose body recomputes the forward pass
//! before running it backwards, as JAX's grad jaxprs show. Those rules are
//! `rules/control/remat.rs`; this file holds the API.

use crate::custom::open;
use jaxon_ir::primitive::{Control, RematParams};
use jaxon_ir::{Aval, Primitive};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{catch, Result};
use jaxon_trace::eval::EvalTrace;
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
