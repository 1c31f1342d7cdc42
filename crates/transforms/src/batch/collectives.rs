//! Collectives over a named `vmap` axis: `psum`, `pmean`, `pmax`, `pmin`,
//! `all_gather` and `axis_index`.
//!
//! Where the `vmap` of that name is on the current stack with no staging
//! trace above it, the collective becomes a reduction (or an iota) over its
//! batch dimension at once. Otherwise (inside a `jit` body or a control-flow
//! body staged within the vmap) it binds the collective primitive
//! (`psum[axes=('i',)]`, ...), which is staged into the body; the batching
//! rule of that vmap resolves it when it batches the body (JAX's fancy
//! batchers, `rules/collective.rs`), turning the name into the positional
//! batch dim (`psum[axes=(0,)]`).
//!
//! Invariant: the axis env (the names and sizes of every enclosing named
//! vmap, including those of stacks suspended by `jit`) is pushed and popped
//! with the vmap's batch main, so a staged body knows which names are bound.

use super::{batch_trace, batched, moveaxis, new_batched};
use crate::jvp::{dual, new_dual, JvpTrace};
use jaxon_ir::primitive::{AllGatherParams, AllReduceParams, AxisIndexParams, Collective};
use jaxon_ir::primitive::{AxisRef, CollectiveOp, ReduceOp};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Primitive};
use jaxon_trace::core::{current_mains, dynamic_main, full_raise, MainTrace};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::literal_array;
use jaxon_trace::{bind1, lax, Array};
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static AXIS_ENV: RefCell<Vec<(String, usize)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps one named axis in the axis env while its vmap runs.
pub(crate) struct AxisEnvGuard(bool);

impl AxisEnvGuard {
    /// Pushes `name` (if any) with its size.
    pub(crate) fn push(name: Option<&str>, size: usize) -> AxisEnvGuard {
        if let Some(n) = name {
            AXIS_ENV.with(|e| e.borrow_mut().push((n.to_string(), size)));
        }
        AxisEnvGuard(name.is_some())
    }
}

impl Drop for AxisEnvGuard {
    fn drop(&mut self) {
        if self.0 {
            let _ = AXIS_ENV.try_with(|e| e.borrow_mut().pop());
        }
    }
}

/// The size of the innermost enclosing vmap named `name`, on any stack.
pub(crate) fn env_size(name: &str) -> Option<usize> {
    AXIS_ENV.with(|e| {
        e.borrow()
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Mean,
    Max,
    Min,
    Gather,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "psum",
            Op::Mean => "pmean",
            Op::Max => "pmax",
            Op::Min => "pmin",
            Op::Gather => "all_gather",
        }
    }

    fn linear(self) -> bool {
        matches!(self, Op::Sum | Op::Mean | Op::Gather)
    }
}

/// How a collective over a name is carried out here.
enum Where {
    /// The named batch main is on this stack with no staging above it.
    Direct(Arc<MainTrace>, usize),
    /// A staging trace sits above the named vmap: bind the primitive.
    Staged(usize),
}

/// The innermost batch main of the current stack named `name`.
fn find_main(name: &str) -> Option<(Arc<MainTrace>, usize)> {
    current_mains().into_iter().rev().find_map(|m| {
        let t = batch_trace(&m)?;
        (t.axis_name.as_deref() == Some(name))
            .then_some(t.axis_size)
            .map(|n| (m.clone(), n))
    })
}

fn locate(name: &str, op: &str) -> Result<Where> {
    if let Some((main, n)) = find_main(name) {
        if dynamic_main().level() > main.level() {
            return Ok(Where::Staged(n));
        }
        return Ok(Where::Direct(main, n));
    }
    match env_size(name) {
        Some(n) => Ok(Where::Staged(n)),
        None => Err(Error::InvalidArgument(format!(
            "{op}: unbound axis name '{name}': no enclosing vmap or shard_map names it"
        ))),
    }
}

/// The size of mesh axis `name` for a mesh-only collective `op`: an error
/// when a vmap names it (those collectives have no batching meaning) or no
/// enclosing `shard_map` does.
pub(crate) fn mesh_axis_size(name: &str, op: &str) -> Result<usize> {
    if find_main(name).is_some() {
        return Err(Error::Unsupported(format!(
            "{op} over '{name}', a vmap's axis name: it is defined over a shard_map's mesh              axes only"
        )));
    }
    env_size(name).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{op}: unbound axis name '{name}': it is not an axis of an enclosing shard_map's mesh"
        ))
    })
}

/// `psum(x, axis_name)`: the sum of `x` over the members of the named
/// axis; every member gets the same (unbatched) result.
pub fn psum(x: &Array, axis_name: &str) -> Result<Array> {
    user_collective(x, axis_name, Op::Sum)
}

/// `pmean(x, axis_name)`: the mean over the named axis (`psum` then a
/// division by the axis size, as in JAX).
pub fn pmean(x: &Array, axis_name: &str) -> Result<Array> {
    user_collective(x, axis_name, Op::Mean)
}

/// `pmax(x, axis_name)`: the maximum over the named axis.
pub fn pmax(x: &Array, axis_name: &str) -> Result<Array> {
    user_collective(x, axis_name, Op::Max)
}

/// `pmin(x, axis_name)`: the minimum over the named axis.
pub fn pmin(x: &Array, axis_name: &str) -> Result<Array> {
    user_collective(x, axis_name, Op::Min)
}

/// `all_gather(x, axis_name)`: every member's `x`, stacked along a new
/// leading axis.
pub fn all_gather(x: &Array, axis_name: &str) -> Result<Array> {
    user_collective(x, axis_name, Op::Gather)
}

/// `axis_index(axis_name)`: this member's index along the named axis (i32).
pub fn axis_index(axis_name: &str) -> Result<Array> {
    match locate(axis_name, "axis_index")? {
        Where::Direct(main, n) => Ok(new_batched(&main, lax::iota(DType::I32, n)?, Some(0))),
        Where::Staged(_) => bind1(
            &Primitive::Collective(Collective::AxisIndex(AxisIndexParams {
                axis_name: axis_name.to_string(),
            })),
            &[],
        ),
    }
}

/// A user-called collective: the name must be bound by an enclosing vmap
/// or `shard_map` (JAX's "unbound axis name" error otherwise).
fn user_collective(x: &Array, name: &str, op: Op) -> Result<Array> {
    locate(name, op.name())?;
    collective(x, name, op)
}

/// The collective of `op` over `name`. The rules call it outside any
/// tracing of the body too: a name no vmap binds is then a `shard_map`'s
/// mesh axis, resolved when the collective runs, so it is bound as is.
fn collective(x: &Array, name: &str, op: Op) -> Result<Array> {
    if find_main(name).is_none() && env_size(name).is_none() {
        if let Op::Sum | Op::Max | Op::Min = op {
            return bind_collective(x, name, 0, op);
        }
    }
    match locate(name, op.name())? {
        Where::Direct(main, n) => apply(x, &main, n, op, name),
        Where::Staged(n) => bind_collective(x, name, n, op),
    }
}

/// Binds the collective primitive of `op` (pmean is psum then a division).
fn bind_collective(x: &Array, name: &str, n: usize, op: Op) -> Result<Array> {
    let axes = vec![AxisRef::Name(name.to_string())];
    let reduce = |op| {
        bind1(
            &Primitive::Collective(Collective::AllReduce(AllReduceParams { op, axes })),
            std::slice::from_ref(x),
        )
    };
    match op {
        Op::Sum => reduce(CollectiveOp::Sum),
        Op::Mean => {
            let s = reduce(CollectiveOp::Sum)?;
            lax::div(&s, &crate::util::scalar_like(&s, n as f64)?)
        }
        Op::Max => reduce(CollectiveOp::Max),
        Op::Min => reduce(CollectiveOp::Min),
        Op::Gather => bind1(
            &Primitive::Collective(Collective::AllGather(AllGatherParams {
                axis_name: vec![name.to_string()],
                all_gather_dimension: 0,
                axis_size: n,
                tiled: false,
            })),
            std::slice::from_ref(x),
        ),
    }
}

fn apply(x: &Array, target: &Arc<MainTrace>, n: usize, op: Op, name: &str) -> Result<Array> {
    let Some(t) = x.as_tracer() else {
        return replicated(x, n, op);
    };
    let m = t.main();
    if Arc::ptr_eq(m, target) {
        let b = batched(x)?;
        let v = match b.bdim {
            None => replicated(&b.value, n, op)?,
            Some(d) => reduce(&b.value, d, n, op)?,
        };
        return Ok(new_batched(target, v, None));
    }
    if !m.is_on_current_stack() || m.level() < target.level() {
        return replicated(x, n, op);
    }
    if batch_trace(m).is_some() {
        let b = batched(x)?;
        let inner = apply(&b.value, target, n, op, name)?;
        let bdim = b.bdim.map(|d| d + usize::from(op == Op::Gather));
        return Ok(new_batched(m, inner, bdim));
    }
    if m.trace().as_any().is::<JvpTrace>() && op.linear() {
        let dl = dual(x)?;
        let p = apply(&dl.primal, target, n, op, name)?;
        let t = dl
            .tangent
            .as_ref()
            .map(|t| apply(t, target, n, op, name))
            .transpose()?;
        return Ok(new_dual(m, p, t));
    }
    // A staging (or a jvp of a non-linear collective) between the value and
    // the named vmap: the primitive's own rules carry it down to the vmap.
    bind_collective(x, name, n, op)
}

/// The collective of a value that is the same for every member.
fn replicated(x: &Array, n: usize, op: Op) -> Result<Array> {
    match op {
        Op::Sum => lax::mul(x, &crate::util::scalar_like(x, n as f64)?),
        Op::Mean | Op::Max | Op::Min => Ok(x.clone()),
        Op::Gather => {
            let shape = x.try_shape()?;
            let mut out = vec![n];
            out.extend_from_slice(&shape);
            let dims: Vec<usize> = (1..out.len()).collect();
            lax::broadcast_in_dim(x, &out, &dims)
        }
    }
}

/// The collective of a value batched along `d`.
fn reduce(v: &Array, d: usize, n: usize, op: Op) -> Result<Array> {
    match op {
        Op::Sum => lax::reduce(ReduceOp::Sum, v, &[d]),
        Op::Mean => {
            let s = lax::reduce(ReduceOp::Sum, v, &[d])?;
            lax::div(&s, &crate::util::scalar_like(&s, n as f64)?)
        }
        Op::Max => lax::reduce(ReduceOp::Max, v, &[d]),
        Op::Min => lax::reduce(ReduceOp::Min, v, &[d]),
        Op::Gather => moveaxis(v, d, 0),
    }
}

/// Whether `p` is a collective over named axes.
pub(crate) fn is_collective(p: &Primitive) -> bool {
    // Every member of the family is a named-axis collective.
    matches!(p, Primitive::Collective(_))
}

/// Whether `p` or a jaxpr nested in it names the axis `name`: such a call
/// must be batched even when none of its operands is.
pub(crate) fn mentions_axis(p: &Primitive, name: &str) -> bool {
    match p {
        Primitive::Collective(c) => match c {
            Collective::AllReduce(AllReduceParams { axes, .. }) => {
                axes.iter().any(|a| a.name() == Some(name))
            }
            Collective::AllGather(AllGatherParams { axis_name, .. }) => {
                axis_name.iter().any(|a| a == name)
            }
            Collective::AxisIndex(AxisIndexParams { axis_name }) => axis_name == name,
            Collective::Ppermute(p) => p.axis_name.iter().any(|a| a == name),
            Collective::AllToAll(p) => p.axis_name.iter().any(|a| a == name),
            Collective::ReduceScatter(p) => p.axis_name.iter().any(|a| a == name),
            Collective::Pvary(p) => p.axes.iter().any(|a| a == name),
            Collective::PsumInvariant(p) => p.axes.iter().any(|a| a == name),
        },
        // Collectives hold no jaxprs; every other family may.
        Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Control(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => p
            .sub_jaxprs()
            .iter()
            .any(|j| j.eqns.iter().any(|e| mentions_axis(&e.primitive, name))),
    }
}

/// Evaluates `closed` by binding its equations, under the batch main on
/// top of the stack: collectives go to that main directly (an
/// `axis_index` has no operand to carry it there, and a collective of a
/// constant must still see the axis).
pub(super) fn eval_batched_body(closed: &ClosedJaxpr, args: &[Array]) -> Result<Vec<Array>> {
    let main = current_mains()
        .pop()
        .filter(|m| batch_trace(m).is_some())
        .ok_or_else(|| Error::InvalidArgument("batch_jaxpr: no batch main on top".into()))?;
    let jaxpr = &closed.jaxpr;
    if args.len() != jaxpr.invars.len() {
        return Err(Error::InvalidArgument(format!(
            "jaxpr takes {} arguments, got {}",
            jaxpr.invars.len(),
            args.len()
        )));
    }
    let mut env: Vec<Option<Array>> = vec![None; jaxpr.vars.len()];
    let consts = closed.consts.iter().cloned().map(Array::from_host);
    for (v, x) in jaxpr
        .constvars
        .iter()
        .zip(consts)
        .chain(jaxpr.invars.iter().zip(args.iter().cloned()))
    {
        env[v.index()] = Some(x);
    }
    let read = |env: &[Option<Array>], a: &Atom| -> Result<Array> {
        match a {
            Atom::Lit(l) => Ok(literal_array(l)),
            Atom::Var(v) => env.get(v.index()).and_then(|x| x.clone()).ok_or_else(|| {
                Error::InvalidArgument(format!("jaxpr reads unbound variable {v:?}"))
            }),
        }
    };
    for eqn in &jaxpr.eqns {
        let ins = eqn
            .inputs
            .iter()
            .map(|a| read(&env, a))
            .collect::<Result<Vec<_>>>()?;
        let outs = if is_collective(&eqn.primitive) {
            let raised = ins
                .iter()
                .map(|a| full_raise(&main, a))
                .collect::<Result<Vec<_>>>()?;
            main.trace()
                .process_primitive(&main, &eqn.primitive, &raised)?
        } else {
            jaxon_trace::bind(&eqn.primitive, &ins)?
        };
        for (b, x) in eqn.outputs.iter().zip(outs) {
            if let Binder::Var(v) = b {
                env[v.index()] = Some(x);
            }
        }
    }
    jaxpr.outvars.iter().map(|a| read(&env, a)).collect()
}

/// `x` reduced by `op` over `axes`: named axes through the trace-level
/// collectives (so a value below the named vmap is handled as a replicated
/// one), then positional axes as a plain reduction. The jvp and transpose
/// rules use it.
pub(crate) fn reduce_axes(x: &Array, op: CollectiveOp, axes: &[AxisRef]) -> Result<Array> {
    let o = match op {
        CollectiveOp::Sum => Op::Sum,
        CollectiveOp::Max => Op::Max,
        CollectiveOp::Min => Op::Min,
    };
    let mut y = x.clone();
    let mut pos = Vec::new();
    for a in axes {
        match a {
            AxisRef::Name(n) => y = collective(&y, n, o)?,
            AxisRef::Pos(p) => pos.push(*p),
        }
    }
    if pos.is_empty() {
        return Ok(y);
    }
    let rop = match op {
        CollectiveOp::Sum => ReduceOp::Sum,
        CollectiveOp::Max => ReduceOp::Max,
        CollectiveOp::Min => ReduceOp::Min,
    };
    lax::reduce(rop, &y, &pos)
}

/// `all_gather` with the params `gp`, through the trace-level collective
/// where it has the default layout.
pub(crate) fn gather_like(gp: &AllGatherParams, x: &Array) -> Result<Array> {
    match gp {
        AllGatherParams {
            axis_name,
            all_gather_dimension: 0,
            tiled: false,
            ..
        } if axis_name.len() == 1
            && (find_main(&axis_name[0]).is_some() || env_size(&axis_name[0]).is_some()) =>
        {
            all_gather(x, &axis_name[0])
        }
        AllGatherParams { .. } => bind1(&gp.clone().into(), std::slice::from_ref(x)),
    }
}
