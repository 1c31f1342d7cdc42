//! `cond` and `switch`: one `cond[branches]` equation whose branch jaxprs
//! all take the joined captured values followed by the operands.
//!
//! As in JAX 0.10.2: the index is converted to `int32` (a bool predicate
//! first, a numeric one through `!= 0`) and, for `switch`, clamped to the
//! branch range; branches are traced in source order (true before false),
//! captured values are joined in order of first capture; results that every
//! branch forwards from the same operand are pruned from the equation.
//! Outside any trace (concrete index, eval base) only the taken branch runs.

use super::{closed, forwarding, out_avals, prune_outvars, type_mismatch, typematch, Body};
use crate::array::Array;
use crate::core::{bind, find_top_trace};
use crate::error::{catch, Error, Result};
use crate::eval::EvalTrace;
use crate::lax;
use crate::numpy as jnp;
use crate::pytree::{Pytree, TreeDef};
use crate::stage::leaf_avals;
use hashbrown::HashMap;
use jaxon_ir::primitive::CondParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{DType, Primitive};

/// `lax.cond(pred, true_fn, false_fn, operands)`: `true_fn(operands)` if the
/// scalar `pred` is true (non-zero), else `false_fn(operands)`.
///
/// Both branches must return the same structure and types (weak typing
/// aside). Under a trace, one `cond` equation is staged whose branch 0 is
/// the false branch; eagerly, only the taken branch runs.
pub fn cond<I: Pytree, O: Pytree>(
    pred: &Array,
    true_fn: impl Fn(I) -> O,
    false_fn: impl Fn(I) -> O,
    operands: I,
) -> Result<O> {
    if pred.ndim() != 0 {
        return Err(Error::InvalidArgument(format!(
            "cond: the predicate must be a scalar, got {}",
            fmt_aval(pred.aval())
        )));
    }
    let pred = match pred.dtype() {
        DType::Bool => pred.clone(),
        d if d.is_int() || d.is_float() => jnp::not_equal(pred, &Array::weak(0))?,
        d => {
            return Err(Error::InvalidArgument(format!(
                "cond: the predicate must be a boolean or a number, got {d}"
            )))
        }
    };
    let index = lax::convert_element_type(&pred, DType::I32, false)?;
    let branches: [&dyn Fn(I) -> O; 2] = [&false_fn, &true_fn];
    cond_impl("cond", &index, &branches, &[1, 0], operands)
}

/// `lax.switch(index, branches, operands)`: `branches[clamp(0, index, n-1)]`
/// applied to `operands`.
///
/// The index is an integer scalar. All branches must return the same
/// structure and types; with a single branch it is simply called.
pub fn switch<I: Pytree, O: Pytree>(
    index: &Array,
    branches: &[&dyn Fn(I) -> O],
    operands: I,
) -> Result<O> {
    if index.ndim() != 0 {
        return Err(Error::InvalidArgument(format!(
            "switch: the branch index must be a scalar, got {}",
            fmt_aval(index.aval())
        )));
    }
    if !index.dtype().is_int() {
        return Err(Error::InvalidArgument(format!(
            "switch: the branch index must be an integer, got {}",
            fmt_aval(index.aval())
        )));
    }
    match branches.len() {
        0 => Err(Error::InvalidArgument(
            "switch: the branch sequence is empty".into(),
        )),
        1 => catch(|| (branches[0])(operands)),
        n => {
            let index = lax::convert_element_type(index, DType::I32, false)?;
            let lo = Array::scalar(0i32);
            let hi = Array::scalar((n - 1) as i32);
            let index = lax::clamp(&lo, &index, &hi)?;
            let order: Vec<usize> = (0..n).collect();
            cond_impl("switch", &index, branches, &order, operands)
        }
    }
}

/// Stages (or eagerly runs) `branches[index]`; `trace_order` is the order in
/// which the branches are traced, which fixes the order of joined consts.
fn cond_impl<I: Pytree, O: Pytree>(
    api: &str,
    index: &Array,
    branches: &[&dyn Fn(I) -> O],
    trace_order: &[usize],
    operands: I,
) -> Result<O> {
    let (leaves, in_def) = operands.flatten();
    let mut all = leaves.clone();
    all.push(index.clone());
    if !index.is_tracer() && find_top_trace(&all)?.trace().as_any().is::<EvalTrace>() {
        let i = index.try_to_host(api)?.data().get_i64(0);
        let i = i.clamp(0, branches.len() as i64 - 1) as usize;
        return catch(|| (branches[i])(operands));
    }
    drop(operands);
    if leaves.iter().any(crate::dynshape::is_dynamic) {
        return super::dyn_control::cond_dynamic(
            api,
            index,
            branches,
            trace_order,
            leaves,
            &in_def,
        );
    }

    let in_avals = leaf_avals(&leaves);
    let mut traced: Vec<Option<Body>> = (0..branches.len()).map(|_| None).collect();
    for &b in trace_order {
        let f = branches[b];
        traced[b] = Some(Body::trace::<I, O>(f, &in_def, &in_avals)?);
    }
    let traced: Vec<Body> = traced.into_iter().map(|b| b.expect("traced")).collect();
    // A branch result with a dynamic dimension: stage with the dynamic
    // bind algorithm instead.
    if traced
        .iter()
        .any(|b| b.implicit_outs > 0 || body_is_dynamic(&b.jaxpr))
    {
        return super::dyn_control::cond_dynamic(
            api,
            index,
            branches,
            trace_order,
            leaves,
            &in_def,
        );
    }
    check_branch_outputs(api, &traced)?;
    let out_def: TreeDef = traced[0].out_def.clone();

    // Join the captured values in order of first capture.
    let mut consts: Vec<crate::array::Array> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    for &b in trace_order {
        for c in &traced[b].consts {
            slot.entry(c.identity()).or_insert_with(|| {
                consts.push(c.clone());
                consts.len() - 1
            });
        }
    }
    let mut jaxprs = Vec::with_capacity(traced.len());
    for body in traced {
        let mut j = body.jaxpr;
        let mut const_invars: Vec<Option<jaxon_ir::Var>> = vec![None; consts.len()];
        for (v, c) in j.constvars.iter().zip(&body.consts) {
            const_invars[slot[&c.identity()]] = Some(*v);
        }
        let mut invars: Vec<jaxon_ir::Var> = const_invars
            .into_iter()
            .zip(&consts)
            .map(|(v, c)| v.unwrap_or_else(|| j.new_var(c.aval().clone())))
            .collect();
        invars.append(&mut j.invars);
        j.invars = invars;
        j.constvars.clear();
        jaxprs.push(j);
    }

    // Results every branch forwards from the same operand are not results
    // of the equation.
    let fwds: Vec<Vec<Option<usize>>> = jaxprs.iter().map(forwarding).collect();
    let n_out = jaxprs[0].outvars.len();
    let in_fwd: Vec<Option<usize>> = (0..n_out)
        .map(|k| {
            let first = fwds[0][k];
            first.filter(|_| fwds.iter().all(|f| f[k] == first))
        })
        .collect();
    let keep: Vec<bool> = in_fwd.iter().map(Option::is_none).collect();
    for j in &mut jaxprs {
        prune_outvars(j, &keep);
    }

    let mut args = Vec::with_capacity(1 + consts.len() + leaves.len());
    args.push(index.clone());
    args.extend(consts.iter().cloned());
    args.extend(leaves.iter().cloned());
    let primitive = Primitive::from(CondParams {
        branches: jaxprs.into_iter().map(closed).collect(),
        branches_platforms: None,
    });
    let mut outs = bind(&primitive, &args)?.into_iter();
    let all_inputs = &args[1..];
    let results = in_fwd
        .iter()
        .map(|f| match f {
            None => outs.next().expect("one result per kept output"),
            Some(i) => all_inputs[*i].clone(),
        })
        .collect();
    O::unflatten(&out_def, results)
}

fn body_is_dynamic(j: &jaxon_ir::Jaxpr) -> bool {
    j.outvars
        .iter()
        .filter_map(|a| j.atom_aval(a))
        .any(|a| a.shape().iter().any(|d| matches!(d, jaxon_ir::Dim::Var(_))))
}

/// Every branch returns branch 0's structure and types.
fn check_branch_outputs(api: &str, traced: &[Body]) -> Result<()> {
    let names = |b: usize| -> String {
        if api == "cond" {
            ["false_fn", "true_fn"][b].to_string()
        } else {
            format!("branch {b}")
        }
    };
    let first = &traced[0];
    let first_avals = out_avals(&first.jaxpr);
    for (b, other) in traced.iter().enumerate().skip(1) {
        if other.out_def != first.out_def {
            return Err(Error::InvalidArgument(format!(
                "{api} branch outputs must have the same pytree structure, but {} \
                 returns {:?} and {} returns {:?}",
                names(0),
                first.out_def,
                names(b),
                other.out_def
            )));
        }
        for (k, (x, y)) in first_avals.iter().zip(other.out_avals()).enumerate() {
            if !typematch(x, &y) {
                return Err(type_mismatch(
                    format!(
                        "{api} branch outputs must have equal types, but output {k} of {} \
                         and of {} differ",
                        names(0),
                        names(b)
                    ),
                    x,
                    &y,
                ));
            }
        }
    }
    Ok(())
}
