//! Catalyst's `for_loop(lower, upper, step, body)` (seeds 000/003), staged
//! with the dynamic-shape bind algorithm of [`super::bind`].
//!
//! Operands: consts, implicit dimensions, lower, upper, step, the index
//! start, then the loop arguments; the body takes consts, implicit
//! dimensions, the index, the loop arguments and returns the implicit
//! dimensions' new values then the loop arguments' new values.

use super::bind::{collapse, expand_inputs, kept_implicit, loop_results, trace_body};
use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
use crate::lax;
use crate::pytree::Pytree;
use jaxon_ir::primitive::ForLoopParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{ClosedJaxpr, DType, HostArray, Primitive};
use std::sync::Arc;

/// A `for_loop` bound: a Rust integer (an `i64` literal) or an integer
/// scalar array (converted to `i64`).
#[derive(Clone, Debug)]
pub struct ForBound(Array);

impl From<i64> for ForBound {
    fn from(v: i64) -> ForBound {
        ForBound(Array::from_host(HostArray::scalar(DType::I64, v as f64)))
    }
}

impl From<&Array> for ForBound {
    fn from(a: &Array) -> ForBound {
        ForBound(a.clone())
    }
}

impl From<Array> for ForBound {
    fn from(a: Array) -> ForBound {
        ForBound(a)
    }
}

impl ForBound {
    fn into_i64(self, what: &str) -> Result<Array> {
        let a = self.0;
        if a.ndim() != 0 || !a.dtype().is_int() {
            return Err(Error::InvalidArgument(format!(
                "for_loop: the {what} must be an integer scalar, got {}",
                fmt_aval(a.aval())
            )));
        }
        lax::convert_element_type(&a, DType::I64, false)
    }
}

/// Options of [`for_loop_with`].
#[derive(Clone, Copy, Debug)]
pub struct ForLoopOptions {
    /// One implicit argument per shared dimension (`true`, the default):
    /// results must keep the arguments' sharing. `false`: one per use, so
    /// arguments may change sizes independently.
    pub preserve_dimensions: bool,
    /// Allow any nonzero step, a negative one counting down from `lower`
    /// while above `upper` (Catalyst's reverse transform). Without it the
    /// step must be positive.
    pub apply_reverse_transform: bool,
}

impl Default for ForLoopOptions {
    fn default() -> Self {
        ForLoopOptions {
            preserve_dimensions: true,
            apply_reverse_transform: false,
        }
    }
}

/// `for_loop(lower, upper, step)(body)(init)`: `carry = body(i, carry)` for
/// `i = lower, lower + step, ... < upper`. The carry may change its
/// dynamic sizes across iterations (the body may return arrays of new
/// sizes, keeping the arguments' sharing of dimensions).
pub fn for_loop<C: Pytree>(
    lower: impl Into<ForBound>,
    upper: impl Into<ForBound>,
    step: impl Into<ForBound>,
    body: impl Fn(Array, C) -> C,
    init: C,
) -> Result<C> {
    for_loop_with(ForLoopOptions::default(), lower, upper, step, body, init)
}

/// [`for_loop`] with options (`preserve_dimensions`, reverse).
pub fn for_loop_with<C: Pytree>(
    opts: ForLoopOptions,
    lower: impl Into<ForBound>,
    upper: impl Into<ForBound>,
    step: impl Into<ForBound>,
    body: impl Fn(Array, C) -> C,
    init: C,
) -> Result<C> {
    let lower = lower.into().into_i64("lower bound")?;
    let upper = upper.into().into_i64("upper bound")?;
    let step = step.into().into_i64("step")?;
    let (init_vals, in_def) = init.flatten();
    let mut explicit = vec![lower.clone()];
    explicit.extend(init_vals);
    let expanded = expand_inputs(&explicit, opts.preserve_dimensions)?;
    let traced = trace_body(
        &expanded,
        true,
        |args| {
            let mut it = args.into_iter();
            let i = it.next().expect("the loop index");
            let carry = C::unflatten(&in_def, it.collect())?;
            let (outs, out_def) = crate::error::catch(|| body(i, carry))?.flatten();
            if out_def != in_def {
                return Err(Error::InvalidArgument(format!(
                    "for_loop: the body must return its argument's structure {in_def:?}, \
                     got {out_def:?}"
                )));
            }
            Ok(outs)
        },
        |cx, outs| loop_results("for_loop", &expanded, 1, cx, outs),
    )?;
    let implicit = kept_implicit(&expanded, &traced.kept);
    let primitive = Primitive::from(ForLoopParams {
        body_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(traced.jaxpr),
            consts: Arc::from(Vec::new()),
        },
        body_nconsts: traced.consts.len(),
        nimplicit: implicit.len(),
        preserve_dimensions: opts.preserve_dimensions,
        apply_reverse_transform: opts.apply_reverse_transform,
    });
    let mut operands = traced.consts;
    operands.extend(implicit);
    operands.extend([lower.clone(), upper, step]);
    operands.extend(explicit);
    let outs = bind(&primitive, &operands)?;
    C::unflatten(&in_def, collapse(outs, traced.implicit_outs))
}
