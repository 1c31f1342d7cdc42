//! Rules of the callback family (`debug_print`, `debug_callback`,
//! `pure_callback`): jvp, transpose and batching, side by side.
//!
//! Invariants, as JAX's: a debug callback under `jvp`/`grad` runs on the
//! primal operands and contributes no tangent or cotangent; under `vmap` it
//! runs once per batch element on that element's operands (JAX's
//! sequential batching of `debug_callback`), in batch order.
//! `pure_callback` is not differentiable (a clear error when a tangent
//! reaches it) and batches by its `vmap_method`: `sequential` (one call per
//! element, results stacked), `expand_dims` (one call, unbatched operands
//! given a leading 1), `broadcast_all` (one call, every operand batched);
//! `None` refuses `vmap`, as JAX does.

use super::{not_linear, BatchOuts, Cts, JvpOuts};
use crate::batch::to_front;
use crate::transpose::LinArg;
use jaxon_ir::primitive::{Callback, PureCallbackParams};
use jaxon_ir::{Dim, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, lax, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(
    c: &Callback,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    match c {
        Callback::DebugPrint(_) | Callback::DebugCallback(_) => super::no_tangent(p, x),
        Callback::PureCallback(_) => {
            if t.iter().any(Option::is_some) {
                return Err(Error::Unsupported(
                    "pure_callback does not support differentiation (JAX: \"Pure callbacks do \
                     not support JVP\"); wrap it in a custom_jvp/custom_vjp rule"
                        .into(),
                ));
            }
            super::no_tangent(p, x)
        }
    }
}

/// The transpose rules of the family: nothing in it is linear.
pub(crate) fn transpose(
    c: &Callback,
    p: &Primitive,
    _args: &[LinArg],
    _cts: &[Option<Array>],
) -> Result<Cts> {
    match c {
        Callback::DebugPrint(_) | Callback::DebugCallback(_) | Callback::PureCallback(_) => {
            not_linear(p)
        }
    }
}

/// Element `i` of each operand along its batch dimension (unbatched
/// operands as they are).
fn element(x: &[Array], d: &[Option<usize>], i: usize) -> Result<Vec<Array>> {
    x.iter()
        .zip(d)
        .map(|(a, b)| match b {
            None => Ok(a.clone()),
            Some(b) => {
                let shape = a.try_shape()?;
                let mut start = vec![0; shape.len()];
                let mut limit = shape.clone();
                start[*b] = i;
                limit[*b] = i + 1;
                let s = lax::slice(a, &start, &limit, None)?;
                lax::squeeze(&s, &[*b])
            }
        })
        .collect()
}

/// The batching rules of the family.
pub(crate) fn batch(
    c: &Callback,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match c {
        Callback::DebugPrint(_) | Callback::DebugCallback(_) => {
            for i in 0..n {
                bind(p, &element(x, d, i)?)?;
            }
            Ok((Vec::new(), Vec::new()))
        }
        Callback::PureCallback(q) => batch_pure(q, p, x, d, n),
    }
}

fn batch_pure(
    q: &PureCallbackParams,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let k = q.result_avals.len();
    match q.vmap_method.as_deref() {
        Some("sequential") => {
            let mut per_out: Vec<Vec<Array>> = vec![Vec::new(); k];
            for i in 0..n {
                let outs = bind(p, &element(x, d, i)?)?;
                for (slot, o) in per_out.iter_mut().zip(outs) {
                    slot.push(lax::expand_dims(&o, &[0])?);
                }
            }
            let outs = per_out
                .into_iter()
                .zip(&q.result_avals)
                .map(|(parts, aval)| {
                    if parts.is_empty() {
                        // An empty batch: zeros of the batched type.
                        let mut shape = vec![0];
                        shape.extend(aval.static_sizes().unwrap_or_default());
                        jaxon_trace::numpy::zeros(&shape, aval.dtype)
                    } else {
                        lax::concatenate(&parts, 0)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((outs, vec![Some(0); k]))
        }
        Some(method @ ("expand_dims" | "broadcast_all")) => {
            let args = x
                .iter()
                .zip(d)
                .map(|(a, b)| match b {
                    Some(_) => to_front(a, *b, n),
                    None if method == "expand_dims" => lax::expand_dims(a, &[0]),
                    None => {
                        let shape = a.try_shape()?;
                        let mut full = vec![n];
                        full.extend(&shape);
                        let dims: Vec<usize> = (1..=shape.len()).collect();
                        lax::broadcast_in_dim(a, &full, &dims)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let mut batched = q.clone();
            batched.result_avals = q
                .result_avals
                .iter()
                .map(|a| {
                    let mut shape = vec![Dim::Const(n)];
                    shape.extend(a.shape.iter().cloned());
                    ShapedArray::new(a.dtype, shape)
                })
                .collect();
            let outs = bind(&Primitive::from(batched), &args)?;
            Ok((outs, vec![Some(0); k]))
        }
        Some(other) => Err(Error::InvalidArgument(format!(
            "pure_callback: unknown vmap_method `{other}` (expected `sequential`, \
             `expand_dims` or `broadcast_all`)"
        ))),
        None => Err(Error::InvalidArgument(
            "pure_callback with vmap_method=None cannot be batched; pass vmap_method \
             \"sequential\", \"expand_dims\" or \"broadcast_all\""
                .into(),
        )),
    }
}
