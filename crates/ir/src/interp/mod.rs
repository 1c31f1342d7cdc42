//! The reference interpreter: evaluates any jaxpr on host arrays, simply and
//! obviously correctly. It is the oracle every backend is tested against.
//!
//! Structure: `eval_jaxpr` binds an environment indexed by `Var`, then runs
//! each equation through `eval_eqn`, one exhaustive `match` over
//! `Primitive`. First-order primitives go to [`ops::eval_op`]; control flow
//! and calls live in `control`, mutable state in `state`, Pallas in `pallas`.
//! A `Ctx` carries the Pallas grid position through nested evaluation.

mod alloc;
use crate::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicRmwParams, CondParams, Control, CustomJvpCallParams,
    CustomVjpCallParams, ForLoopParams, GetParams, JitParams, LoadParams, NumProgramsParams,
    Pallas, PallasCallParams, ProgramIdParams, RematParams, ScanParams, State, StoreParams,
    SwapParams, WhileParams,
};
mod backend;
mod control;
pub mod ops;
mod pallas;
mod spmd;
mod state;
mod util;

#[cfg(test)]
mod testkit;

#[cfg(test)]
mod tests_control;
#[cfg(test)]
mod tests_pallas;
#[cfg(test)]
mod tests_state;

pub use backend::{HostBuffer, InterpreterBackend};

/// Pieces of the interpreter's control flow that backends running the same
/// semantics share (one definition of each rule).
pub mod support {
    pub use super::control::{for_loop_trips, index_scalar};
    pub use super::util::{index_axis0, literal_array, scalar_i64, stack};
}

use crate::array::HostArray;
use crate::aval::{Aval, Dim};
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Jaxpr};
use crate::primitive::Primitive;
use std::sync::{Arc, Mutex};

/// A runtime value: an array, or a mutable reference to one (state/Pallas).
#[derive(Clone, Debug)]
pub enum Value {
    /// An immutable array.
    Array(HostArray),
    /// A mutable buffer shared by every holder of the reference.
    Ref(Arc<Mutex<HostArray>>),
}

impl Value {
    /// A new mutable reference holding `a`.
    pub fn new_ref(a: HostArray) -> Value {
        Value::Ref(Arc::new(Mutex::new(a)))
    }
}

/// The position of the running Pallas program in its grid, if any.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ctx {
    /// `(program ids, grid sizes)` inside a `pallas_call` kernel.
    pub grid: Option<(Vec<usize>, Vec<usize>)>,
}

/// Evaluates `jaxpr` with values for its constvars and invars.
pub fn eval_jaxpr(jaxpr: &Jaxpr, consts: &[Value], args: &[Value]) -> Result<Vec<Value>, IrError> {
    eval_with(&Ctx::default(), jaxpr, consts, args)
}

/// Evaluates a closed jaxpr on arrays.
pub fn eval_closed_jaxpr(
    closed: &ClosedJaxpr,
    args: &[HostArray],
) -> Result<Vec<HostArray>, IrError> {
    let consts: Vec<Value> = closed.consts.iter().cloned().map(Value::Array).collect();
    let args: Vec<Value> = args.iter().cloned().map(Value::Array).collect();
    eval_jaxpr(&closed.jaxpr, &consts, &args)?
        .into_iter()
        .map(|v| match v {
            Value::Array(a) => Ok(a),
            Value::Ref(_) => Err(IrError::Eval("a jaxpr returned a Ref".into())),
        })
        .collect()
}

/// Evaluates a closed jaxpr on values in a context.
pub(crate) fn call_closed(
    ctx: &Ctx,
    closed: &ClosedJaxpr,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let consts: Vec<Value> = closed.consts.iter().cloned().map(Value::Array).collect();
    eval_with(ctx, &closed.jaxpr, &consts, args)
}

/// The size a dimension variable holds in the environment, if it is bound to
/// an integer scalar.
fn dim_value(env: &[Option<Value>], v: crate::jaxpr::Var) -> Option<usize> {
    match env.get(v.index()) {
        Some(Some(Value::Array(a))) if a.ndim() == 0 && !a.dtype().is_float() => {
            usize::try_from(a.data().get_i64(0)).ok()
        }
        _ => None,
    }
}

/// Checks that `value` fits `aval`: Ref-ness, dtype, and dimensions (a
/// dimension variable is checked when it is already bound).
fn check_value(
    aval: &Aval,
    value: &Value,
    env: &[Option<Value>],
    what: &dyn Fn() -> String,
) -> Result<(), IrError> {
    let guard;
    let array: &HostArray = match (aval, value) {
        (Aval::Array(_), Value::Array(a)) => a,
        (Aval::Ref(_), Value::Ref(r)) => {
            guard = r
                .lock()
                .map_err(|_| IrError::Eval("a Ref's lock is poisoned".into()))?;
            &guard
        }
        (Aval::Array(_), Value::Ref(_)) => {
            return Err(IrError::Eval(format!(
                "{}: expected an array, got a Ref",
                what()
            )))
        }
        (Aval::Ref(_), Value::Array(_)) => {
            return Err(IrError::Eval(format!(
                "{}: expected a Ref, got an array",
                what()
            )))
        }
    };
    let want = aval.array();
    let shape_ok = want.shape.len() == array.ndim()
        && want.shape.iter().zip(array.shape()).all(|(d, &n)| match d {
            Dim::Const(m) => *m == n,
            Dim::Var(v) => dim_value(env, *v).is_none_or(|m| m == n),
        });
    if want.dtype != array.dtype() || !shape_ok {
        return Err(IrError::Eval(format!(
            "{}: expected {}{:?}, got {}{:?}",
            what(),
            want.dtype,
            want.shape,
            array.dtype(),
            array.shape()
        )));
    }
    Ok(())
}

/// Evaluates `jaxpr` in a context.
pub(crate) fn eval_with(
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    consts: &[Value],
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    if consts.len() != jaxpr.constvars.len() || args.len() != jaxpr.invars.len() {
        return Err(IrError::Invalid(format!(
            "jaxpr with {} constvars and {} invars applied to {} consts and {} args",
            jaxpr.constvars.len(),
            jaxpr.invars.len(),
            consts.len(),
            args.len()
        )));
    }
    let _level = alloc::Nesting::enter()?;
    let mut env: Vec<Option<Value>> = vec![None; jaxpr.vars.len()];
    let binders = jaxpr
        .constvars
        .iter()
        .zip(consts)
        .chain(jaxpr.invars.iter().zip(args));
    for (k, (v, val)) in binders.enumerate() {
        let aval = jaxpr.try_aval(*v).ok_or_else(|| {
            IrError::Invalid(format!("input variable #{} is not in the table", v.0))
        })?;
        check_value(aval, val, &env, &|| format!("jaxpr input {k}"))?;
        env[v.index()] = Some(val.clone());
    }
    for (n, eqn) in jaxpr.eqns.iter().enumerate() {
        let name = eqn.primitive.name();
        let inputs = eqn
            .inputs
            .iter()
            .map(|a| read(&env, a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| IrError::Invalid(format!("equation {n} ({name}): {e}")))?;
        alloc::check_results(jaxpr, n, eqn, &|v| dim_value(&env, v))?;
        let outs = eval_eqn(ctx, &eqn.primitive, inputs)?;
        if outs.len() != eqn.outputs.len() {
            return Err(IrError::Eval(format!(
                "equation {n} ({name}) gave {} results for {} binders",
                outs.len(),
                eqn.outputs.len()
            )));
        }
        for (k, (b, val)) in eqn.outputs.iter().zip(outs).enumerate() {
            let what = || format!("equation {n} ({name}) result {k}");
            match b {
                Binder::Var(v) => {
                    let aval = jaxpr.try_aval(*v).ok_or_else(|| {
                        IrError::Invalid(format!(
                            "{}: variable #{} is not in the table",
                            what(),
                            v.0
                        ))
                    })?;
                    check_value(aval, &val, &env, &what)?;
                    env[v.index()] = Some(val);
                }
                Binder::Drop(aval) => check_value(aval, &val, &env, &what)?,
            }
        }
    }
    jaxpr
        .outvars
        .iter()
        .map(|a| read(&env, a).map_err(|e| IrError::Invalid(format!("jaxpr output: {e}"))))
        .collect()
}

/// The value of an atom in the environment.
fn read(env: &[Option<Value>], atom: &Atom) -> Result<Value, String> {
    match atom {
        Atom::Lit(l) => Ok(Value::Array(util::literal_array(l))),
        Atom::Var(v) => match env.get(v.index()) {
            Some(Some(val)) => Ok(val.clone()),
            Some(None) => Err(format!("variable #{} is read before it is bound", v.0)),
            None => Err(format!("variable #{} is not in the table", v.0)),
        },
    }
}

/// The arrays of a first-order primitive's operands (no Refs allowed).
fn arrays(prim: &Primitive, args: Vec<Value>) -> Result<Vec<HostArray>, IrError> {
    args.into_iter()
        .enumerate()
        .map(|(k, v)| match v {
            Value::Array(a) => Ok(a),
            Value::Ref(_) => Err(IrError::ty(
                prim.name(),
                format!("operand {k} is a Ref, expected an array"),
            )),
        })
        .collect()
}

/// Applies one primitive to its operands.
fn eval_eqn(ctx: &Ctx, prim: &Primitive, args: Vec<Value>) -> Result<Vec<Value>, IrError> {
    match prim {
        Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => {
            let arrays = arrays(prim, args)?;
            Ok(ops::eval_op(prim, &arrays)?
                .into_iter()
                .map(Value::Array)
                .collect())
        }
        Primitive::Control(f) => match f {
            Control::Cond(CondParams { branches, .. }) => control::cond(ctx, branches, &args),
            Control::While(WhileParams {
                cond_jaxpr,
                body_jaxpr,
                cond_nconsts,
                body_nconsts,
            }) => control::while_loop(
                ctx,
                cond_jaxpr,
                body_jaxpr,
                *cond_nconsts,
                *body_nconsts,
                &args,
            ),
            Control::Scan(ScanParams {
                jaxpr,
                length,
                reverse,
                num_consts,
                num_carry,
                unroll: _,
                linear: _,
                split_transpose: _,
            }) => control::scan(
                ctx,
                jaxpr,
                *length,
                *reverse,
                *num_consts,
                *num_carry,
                &args,
            ),
            Control::ForLoop(ForLoopParams {
                body_jaxpr,
                body_nconsts,
                nimplicit,
                preserve_dimensions: _,
                apply_reverse_transform,
            }) => control::for_loop(
                ctx,
                body_jaxpr,
                *body_nconsts,
                *nimplicit,
                *apply_reverse_transform,
                &args,
            ),
            Control::Jit(JitParams { name: _, jaxpr }) => call_closed(ctx, jaxpr, &args),
            Control::CustomJvpCall(CustomJvpCallParams {
                call_jaxpr,
                num_consts,
                ..
            })
            | Control::CustomVjpCall(CustomVjpCallParams {
                call_jaxpr,
                num_consts,
                ..
            }) => control::custom_call(ctx, prim.name(), call_jaxpr, *num_consts, &args),
            Control::Remat(RematParams { jaxpr, .. }) => eval_with(ctx, jaxpr, &[], &args),
            // JAX's impl: `solve` applied to its consts and `b`.
            Control::CustomLinearSolve(p) => match &p.jaxprs.solve {
                Some(solve) => {
                    let (consts, b) = (args.get(p.consts_range(2)), args.get(p.num_consts()..));
                    let (Some(consts), Some(b)) = (consts, b) else {
                        return Err(IrError::Eval(
                            "custom_linear_solve: fewer operands than consts".into(),
                        ));
                    };
                    let ops: Vec<Value> = consts.iter().chain(b).cloned().collect();
                    call_closed(ctx, solve, &ops)
                }
                None => Err(IrError::Eval("custom_linear_solve: no solve jaxpr".into())),
            },
            Control::ShardMap(p) => spmd::shard_map(ctx, p, &args),
        },
        Primitive::State(f) => match f {
            State::Get(GetParams { indexers }) => state::get(indexers, &args),
            State::Swap(SwapParams { indexers }) => state::swap(indexers, &args),
            State::AddUpdate(AddUpdateParams { indexers }) => state::addupdate(indexers, &args),
        },
        Primitive::Pallas(f) => match f {
            Pallas::ProgramId(ProgramIdParams { axis }) => {
                pallas::program_id(ctx, *axis, false, &args)
            }
            Pallas::NumPrograms(NumProgramsParams { axis }) => {
                pallas::program_id(ctx, *axis, true, &args)
            }
            Pallas::Load(LoadParams {
                indexers,
                has_mask,
                has_other,
            }) => state::load(indexers, *has_mask, *has_other, &args),
            Pallas::Store(StoreParams { indexers, has_mask }) => {
                state::store(indexers, *has_mask, &args)
            }
            Pallas::AtomicRmw(AtomicRmwParams { indexers, op }) => {
                state::atomic_rmw(indexers, *op, &args)
            }
            Pallas::AtomicCas(AtomicCasParams { indexers }) => state::atomic_cas(indexers, &args),
            Pallas::PallasCall(PallasCallParams {
                kernel,
                grid,
                block_mappings,
                out_avals,
                name: _,
                interpret: _,
                debug: _,
                input_output_aliases,
            }) => pallas::pallas_call(
                kernel,
                grid,
                block_mappings,
                out_avals,
                input_output_aliases,
                &args,
            ),
        },
    }
}
