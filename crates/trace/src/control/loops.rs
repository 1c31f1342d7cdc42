//! `while_loop` and `fori_loop`.
//!
//! As in JAX 0.10.2: the carry must keep its structure and types (a weakly
//! typed initial value whose dtype differs is promoted and the bodies are
//! re-traced); a carry component the body returns unchanged and the
//! predicate never reads becomes a body const; `fori_loop` becomes a `scan`
//! over `(i, x)` when both bounds are concrete, else a `while` over
//! `(i, upper, x)`.

use super::scan::scan;
use super::{
    check_carry, closed, forwarding, move_invars_to_front, promote_weak_inputs, prune_outvars,
    reads, typed_scalar, Body,
};
use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
use crate::lax;
use crate::pytree::Pytree;
use crate::stage::leaf_avals;
use jaxon_ir::primitive::BinaryOp;
use jaxon_ir::primitive::WhileParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Aval, DType, Primitive};

/// `lax.while_loop(cond_fn, body_fn, init)`: repeats `carry = body_fn(carry)`
/// while `cond_fn(carry)` is true.
///
/// `cond_fn` returns a bool scalar; `body_fn` returns a carry of the same
/// structure and types as `init`. Stages one `while` equation (run by the
/// backend when called eagerly).
pub fn while_loop<C: Pytree>(
    cond_fn: impl Fn(C) -> Array,
    body_fn: impl Fn(C) -> C,
    init: C,
) -> Result<C> {
    let (mut init_vals, in_def) = init.flatten();
    if init_vals.iter().any(crate::dynshape::is_dynamic) {
        let init = C::unflatten(&in_def, init_vals)?;
        return super::dyn_control::while_loop_with(true, cond_fn, body_fn, init);
    }
    let trace = |avals: &[Aval]| -> Result<(Body, Body)> {
        let c = Body::trace::<C, Array>(&cond_fn, &in_def, avals)?;
        let pred = c.out_avals();
        let ok =
            matches!(&pred[..], [Aval::Array(a)] if a.dtype == DType::Bool && a.shape.is_empty());
        if !ok {
            let tys: Vec<String> = pred.iter().map(fmt_aval).collect();
            return Err(Error::InvalidArgument(format!(
                "while_loop: cond_fn must return a boolean scalar, but got output type(s) ({})",
                tys.join(", ")
            )));
        }
        let b = Body::trace::<C, C>(&body_fn, &in_def, avals)?;
        Ok((c, b))
    };
    let mut init_avals = leaf_avals(&init_vals);
    let (mut cb, mut bb) = trace(&init_avals)?;
    check_carry(
        "while_loop body",
        &in_def,
        &bb.out_def,
        &init_avals,
        &init_avals,
    )?;
    if promote_weak_inputs(&mut init_vals, &bb.out_avals())? {
        init_avals = leaf_avals(&init_vals);
        (cb, bb) = trace(&init_avals)?;
    }
    check_carry(
        "while_loop body",
        &in_def,
        &bb.out_def,
        &init_avals,
        &bb.out_avals(),
    )?;

    let (mut cj, cconsts) = cb.open();
    let (mut bj, mut bconsts) = bb.open();
    let (nc, nb, ncarry) = (cconsts.len(), bconsts.len(), init_vals.len());

    // A carry the body forwards unchanged and the predicate ignores is
    // loop-invariant: it becomes a body const.
    let fwd = forwarding(&bj);
    let to_const: Vec<bool> = (0..ncarry)
        .map(|k| fwd[k] == Some(nb + k) && !reads(&cj, cj.invars[nc + k]))
        .collect();
    let mut moved = Vec::new();
    if to_const.iter().any(|m| *m) {
        let cinv = cj.invars.split_off(nc);
        cj.invars.extend(
            cinv.iter()
                .zip(&to_const)
                .filter(|(_, m)| !**m)
                .map(|(v, _)| *v),
        );
        let keep: Vec<bool> = to_const.iter().map(|m| !m).collect();
        prune_outvars(&mut bj, &keep);
        let mut mask = vec![false; nb];
        mask.extend(&to_const);
        move_invars_to_front(&mut bj, &mask);
        let (m, rest): (Vec<_>, Vec<_>) = init_vals
            .iter()
            .cloned()
            .zip(&to_const)
            .partition(|(_, m)| **m);
        moved = m.into_iter().map(|(x, _)| x).collect();
        init_vals = rest.into_iter().map(|(x, _)| x).collect();
        let mut consts = moved.clone();
        consts.append(&mut bconsts);
        bconsts = consts;
    }

    let primitive = Primitive::from(WhileParams {
        cond_jaxpr: closed(cj),
        body_jaxpr: closed(bj),
        cond_nconsts: nc,
        body_nconsts: bconsts.len(),
    });
    let mut args = cconsts;
    args.extend(bconsts);
    args.extend(init_vals);
    let mut outs = bind(&primitive, &args)?.into_iter();
    let mut moved = moved.into_iter();
    let results = to_const
        .iter()
        .map(|m| {
            if *m {
                moved.next().expect("a moved carry")
            } else {
                outs.next().expect("a loop result")
            }
        })
        .collect();
    C::unflatten(&in_def, results)
}

/// A `fori_loop` bound: a Rust integer (a weakly typed `int32`, like a
/// Python int) or an integer scalar `Array`.
pub trait LoopBound {
    /// The bound as an array.
    fn into_bound(self) -> Array;
}

impl LoopBound for Array {
    fn into_bound(self) -> Array {
        self
    }
}

impl LoopBound for &Array {
    fn into_bound(self) -> Array {
        self.clone()
    }
}

macro_rules! int_bound {
    ($($t:ty),*) => {$(
        impl LoopBound for $t {
            fn into_bound(self) -> Array {
                // Rust integers play Python ints: weak int32.
                Array::weak(self as i32)
            }
        }
    )*};
}

int_bound!(i32, i64, usize);

/// `lax.fori_loop(lower, upper, body, init)`: `x = body(i, x)` for `i` from
/// `lower` up to (excluding) `upper`.
///
/// With concrete bounds (Rust integers or concrete arrays) this is a `scan`
/// of `max(upper - lower, 0)` steps over the carry `(i, x)`, `i` a weak
/// `int32`; with a traced bound it is a `while` over `(i, upper, x)`.
pub fn fori_loop<C: Pytree>(
    lower: impl LoopBound,
    upper: impl LoopBound,
    body: impl Fn(Array, C) -> C,
    init: C,
) -> Result<C> {
    let (mut lower, mut upper) = (lower.into_bound(), upper.into_bound());
    for (b, what) in [(&lower, "lower"), (&upper, "upper")] {
        if b.ndim() != 0 || !b.dtype().is_int() {
            return Err(Error::InvalidArgument(format!(
                "fori_loop: the {what} bound must be an integer scalar, got {}",
                fmt_aval(b.aval())
            )));
        }
    }
    if lower.dtype() != upper.dtype() {
        // A weak (Rust literal) bound takes the other bound's dtype.
        let (l, u) = (lower.dtype(), upper.dtype());
        let signed = |d: DType| matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64);
        if signed(l) && signed(u) && lower.weak_type() && !upper.weak_type() {
            lower = lax::convert_element_type(&lower, u, false)?;
        } else if signed(l) && signed(u) && upper.weak_type() && !lower.weak_type() {
            upper = lax::convert_element_type(&upper, l, false)?;
        } else {
            return Err(Error::DTypeMismatch {
                op: "fori_loop: lower and upper bounds must have equal types".into(),
                lhs: fmt_aval(lower.aval()),
                rhs: fmt_aval(upper.aval()),
            });
        }
    }

    if !lower.is_tracer() && !upper.is_tracer() {
        let lo = lower.try_to_host("fori_loop")?.data().get_i64(0);
        let hi = upper.try_to_host("fori_loop")?.data().get_i64(0);
        // A carry with traced sizes loops as a `for_loop`, which carries
        // dimension values (a `scan` has fixed carry types).
        if init.flatten().0.iter().any(crate::dynshape::is_dynamic) {
            let index_dtype = lower.dtype();
            return super::for_loop::for_loop(
                lo,
                hi,
                1,
                |i, x| {
                    let i = ok(lax::convert_element_type(&i, index_dtype, false));
                    body(i, x)
                },
                init,
            );
        }
        let length = (hi - lo).max(0) as usize;
        let step = |(i, x): (Array, C), _: ()| {
            let next = ok(crate::numpy::add(&i, &Array::weak(1)));
            ((next, body(i, x)), ())
        };
        let ((_, result), ()) = scan(
            step,
            (Array::weak(lo as i32), init),
            (),
            Some(length),
            false,
        )?;
        return Ok(result);
    }

    let one = typed_scalar(lower.dtype(), 1.0);
    let cond_fn = |(i, upper, _): (Array, Array, C)| ok(lax::binary(BinaryOp::Lt, &i, &upper));
    let body_fn = |(i, upper, x): (Array, Array, C)| {
        let next = ok(lax::binary(BinaryOp::Add, &i, &one));
        let x = body(i, x);
        (next, upper, x)
    };
    let (_, _, result) = while_loop(cond_fn, body_fn, (lower, upper, init))?;
    Ok(result)
}

/// Raises an error inside a traced body (caught by the staging entry).
fn ok<T>(r: Result<T>) -> T {
    crate::error::ok_or_raise(r)
}
