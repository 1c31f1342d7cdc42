//! `checkpoint` (remat): the body is staged as a `remat2` equation whose
//! intermediate values are not saved for the backward pass, except those a
//! [`Policy`] marks saveable (`jax.checkpoint(f, policy=...)`).
//!
//! The jvp of `remat2` computes the primal outputs inline (as JAX's
//! partial evaluation of `remat2` does), together with the values the
//! policy saves, and binds a `remat2[differentiated=True]` computing only
//! the tangents from `(saved values, primal inputs, tangents)`: it
//! recomputes the other forward values it needs. Under `linearize` it is
//! recorded in the linear jaxpr with the saved values and primal inputs as
//! residuals (only the inputs without a policy); its transpose is again a
//! `remat2[differentiated=True]` whose body recomputes the forward pass
//! before running it backwards, as JAX's grad jaxprs show. Those rules are
//! `rules/control/remat.rs` and `rules/control/remat_saved.rs`; this file
//! holds the API. The policy
//! travels in `RematParams::policy` as its printed text.

use crate::checkpoint_policies::Policy;
use crate::custom::trace_call;
use jaxon_ir::primitive::{Control, RematParams};
use jaxon_ir::Primitive;
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{catch, Result};
use jaxon_trace::eval::EvalTrace;
use jaxon_trace::{bind, Pytree};
use std::marker::PhantomData;
use std::sync::Arc;

/// A function whose forward values are recomputed in the backward pass:
/// see [`checkpoint`].
pub struct Checkpoint<I, O> {
    f: Arc<dyn Fn(I) -> O + Send + Sync>,
    prevent_cse: bool,
    policy: Option<Policy>,
    _sig: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for Checkpoint<I, O> {
    fn clone(&self) -> Self {
        Checkpoint {
            f: self.f.clone(),
            prevent_cse: self.prevent_cse,
            policy: self.policy.clone(),
            _sig: PhantomData,
        }
    }
}

/// `checkpoint(f)` (JAX's `jax.checkpoint` / `remat`): same values, but
/// reverse mode saves only `f`'s inputs and recomputes the rest. `f` takes
/// one pytree `I` (a tuple for several arguments) and returns a pytree
/// `O`.
///
/// ```
/// use jaxon_trace::numpy::All;
/// use jaxon_trace::Array;
/// use jaxon_transforms::{checkpoint, grad};
///
/// // f = jax.checkpoint(lambda x, w: jnp.sin(jnp.sin(x * w)))
/// let f = checkpoint(|(x, w): (Array, Array)| (x * w).sin().sin());
/// let x = Array::from_vec(vec![0.5f64, -1.0], &[2]);
/// let w = Array::from_vec(vec![2.0f64, 3.0], &[2]);
/// let (gx, _gw) = grad(|xw: (Array, Array)| f.call(xw).unwrap().sum(All))((x, w))?;
/// let want = 1f64.sin().cos() * 1f64.cos() * 2.0;
/// assert!((gx.to_vec::<f64>()[0] - want).abs() < 1e-12);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn checkpoint<I, O, F>(f: F) -> Checkpoint<I, O>
where
    I: Pytree + 'static,
    O: Pytree + 'static,
    F: Fn(I) -> O + Send + Sync + 'static,
{
    Checkpoint {
        f: Arc::new(f),
        prevent_cse: true,
        policy: None,
        _sig: PhantomData,
    }
}

/// `remat(f)`: JAX's alias `jax.remat` of [`checkpoint`].
///
/// ```
/// use jaxon_trace::Array;
/// use jaxon_transforms::checkpoint_policies::dots_saveable;
/// use jaxon_transforms::remat;
///
/// let f = remat(|x: Array| x.sin()).policy(dots_saveable());
/// let y = f.call(Array::from_vec(vec![0.5f64], &[1]))?;
/// assert_eq!(y.to_vec::<f64>(), vec![0.5f64.sin()]);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn remat<I, O, F>(f: F) -> Checkpoint<I, O>
where
    I: Pytree + 'static,
    O: Pytree + 'static,
    F: Fn(I) -> O + Send + Sync + 'static,
{
    checkpoint(f)
}

impl<I: Pytree + 'static, O: Pytree + 'static> Checkpoint<I, O> {
    /// JAX's `prevent_cse` (printed; default true).
    pub fn prevent_cse(mut self, yes: bool) -> Self {
        self.prevent_cse = yes;
        self
    }

    /// JAX's `policy=`: the values inside the body that reverse mode saves
    /// instead of recomputing (see [`crate::checkpoint_policies`]).
    /// Without one, only the inputs are saved (`nothing_saveable`). The
    /// values computed do not depend on the policy.
    ///
    /// ```
    /// use jaxon_trace::numpy::All;
    /// use jaxon_trace::{lax, Array};
    /// use jaxon_transforms::checkpoint_policies::save_only_these_names;
    /// use jaxon_transforms::{checkpoint, grad};
    ///
    /// // jax.checkpoint(f, policy=checkpoint_policies.save_only_these_names("h"))
    /// let f = checkpoint(|(x, w): (Array, Array)| {
    ///     let h = lax::checkpoint_name(&(x * w).tanh(), "h").unwrap();
    ///     h.sin()
    /// })
    /// .policy(save_only_these_names(["h"]));
    /// let x = Array::from_vec(vec![0.5f64], &[1]);
    /// let w = Array::from_vec(vec![2.0f64], &[1]);
    /// let (gx, _) = grad(|xw: (Array, Array)| f.call(xw).unwrap().sum(All))((x, w))?;
    /// let t = 1f64.tanh();
    /// let want = t.cos() * (1.0 - t * t) * 2.0;
    /// assert!((gx.to_vec::<f64>()[0] - want).abs() < 1e-12);
    /// # Ok::<(), jaxon_trace::Error>(())
    /// ```
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Calls the function: directly when nothing traces the arguments, else
    /// as a `remat2` equation on the flattened input (captured values
    /// become leading operands; its outputs are the flattened output).
    pub fn call(&self, x: I) -> Result<O> {
        let (leaves, in_def) = x.flatten();
        if find_top_trace(&leaves)?.trace().as_any().is::<EvalTrace>() {
            return catch(|| (self.f)(x));
        }
        let f = self.f.clone();
        let (jaxpr, mut operands, out_def) = trace_call(move |i: I| f(i), &in_def, &leaves)?;
        operands.extend(leaves);
        let outs = bind(
            &Primitive::Control(Control::Remat(RematParams {
                jaxpr: Arc::new(jaxpr),
                prevent_cse: self.prevent_cse,
                differentiated: false,
                policy: self.policy.as_ref().map(Policy::to_string),
            })),
            &operands,
        )?;
        O::unflatten(&out_def, outs)
    }
}
