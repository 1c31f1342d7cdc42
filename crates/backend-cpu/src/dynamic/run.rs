//! The driver of dynamic-shape programs: binds each value in its own
//! buffer, resolves dimension variables from the values bound so far, and
//! runs a body's steps; loops and branches run their bodies' steps.
//! Arrays freed during a call go to a small per-call free list and are
//! reused whole by the next value of the same type (a loop's carries and
//! kernel outputs), and emptied environments keep their allocations, so
//! a loop iteration allocates little besides its argument lists.
//!
//! Invariant: every bound value has its declared type, with each
//! dimension variable replaced by its runtime value (`bind` checks), so a
//! flat kernel's size comes from its run's declared shape and every input
//! of the run has exactly that many elements (re-checked by
//! `runtime::run_flat_kernel` before any kernel runs).

use super::flat::FlatRun;
use super::native::DynOp;
use super::scalar::ScalarRun;
use super::{Body, DynProgram, Step};
use crate::codegen::jit::Kernel;
use crate::error::run_error;
use crate::ops::dot::DotPlan;
use crate::ops::typed::{elems, with_type, Typed};
use crate::run::exec::identity_array;
use crate::run::executable::with_host_args;
use crate::run::pool::{Pool, PooledBuffer};
use jaxon_ir::interp::support::{
    for_loop_trips, index_axis0, index_scalar, literal_array, scalar_i64, stack,
};
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::primitive::{
    CondParams, Control, CustomJvpCallParams, CustomVjpCallParams, DotGeneralParams, ForLoopParams,
    Linalg, ScanParams, WhileParams,
};
use jaxon_ir::{
    Atom, Aval, Binder, Buffer, DType, Dim, Eqn, Executable, HostArray, IrError, Jaxpr, Primitive,
};
use std::cell::RefCell;
use std::sync::Arc;

/// An executable of a dynamic-shape program.
pub(crate) struct DynExecutable {
    pub(crate) program: Arc<DynProgram>,
    pub(crate) threads: usize,
    /// Storage of kernel results and intermediates is taken from and
    /// returned to the backend's pool, so steady-state calls of one size
    /// do not page-fault.
    pub(crate) pool: Arc<Pool>,
}

impl Executable for DynExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        with_host_args(args, |arrays| self.run(arrays))
    }
}

impl DynExecutable {
    fn run(&self, arrays: &[&HostArray]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let vals = arrays.iter().map(|a| Val::Ref(a)).collect();
        let ctx = Ctx {
            kernels: &self.program.kernels,
            threads: self.threads,
            pool: &self.pool,
            free: RefCell::new(Vec::new()),
            dims: RefCell::new(Vec::new()),
            envs: RefCell::new(Vec::new()),
            regs: RefCell::new(Vec::new()),
            locals: RefCell::new(Vec::new()),
        };
        let outs = run_body(&ctx, &self.program.top, vals);
        for a in ctx.free.take() {
            recycle(ctx.pool, a);
        }
        let outs = outs?;
        Ok(outs
            .into_iter()
            .map(|array| {
                if array.len() * array.dtype().size_bytes() >= POOLED_MIN_BYTES {
                    Arc::new(PooledBuffer::new(array, self.pool.clone())) as Arc<dyn Buffer>
                } else {
                    Arc::new(HostBuffer { array }) as Arc<dyn Buffer>
                }
            })
            .collect())
    }
}

struct Ctx<'k> {
    kernels: &'k [Kernel],
    threads: usize,
    pool: &'k Pool,
    /// Arrays freed during this call (loop carries of the last iteration,
    /// a body's intermediates), reused whole, shape included, by the next
    /// value of the same type: a loop's steady state allocates nothing
    /// for its values.
    free: RefCell<Vec<HostArray>>,
    /// Scratch for a flat run's resolved shape.
    dims: RefCell<Vec<usize>>,
    /// Registers of scalar runs.
    regs: RefCell<Vec<i64>>,
    /// A flat run's own values.
    locals: RefCell<Vec<Option<HostArray>>>,
    /// Emptied environments, kept for their allocations.
    envs: RefCell<Vec<Env<'static>>>,
}

/// Arrays at most this large are kept on a call's free list.
const FREE_MAX_BYTES: usize = 1 << 20;
/// The free list's length.
const FREE_MAX: usize = 16;

impl Ctx<'_> {
    /// An array of `dt` and `shape` with stale contents: a freed one of
    /// that type, else fresh storage from the pool.
    fn alloc(&self, dt: DType, shape: &[usize]) -> Result<HostArray, IrError> {
        if let Ok(mut free) = self.free.try_borrow_mut() {
            if let Some(k) = free
                .iter()
                .position(|a| a.dtype() == dt && a.shape() == shape)
            {
                return Ok(free.swap_remove(k));
            }
        }
        HostArray::new(shape.to_vec(), self.pool.take(dt, shape)?)
    }

    /// Frees `a` for [`Ctx::alloc`] (or the pool). A full list forgets
    /// its oldest entry, so the list holds what was freed last (a loop's
    /// previous carries) and its scans stay short.
    fn free(&self, a: HostArray) {
        let small = a.len() * a.dtype().size_bytes() <= FREE_MAX_BYTES;
        match self.free.try_borrow_mut() {
            Ok(mut free) if small => {
                if free.len() == FREE_MAX {
                    let old = free.remove(0);
                    recycle(self.pool, old);
                }
                free.push(a);
            }
            _ => recycle(self.pool, a),
        }
    }

    /// A copy of `x` in an array from [`Ctx::alloc`].
    fn copy_of(&self, x: &HostArray) -> Result<HostArray, IrError> {
        let mut out = self.alloc(x.dtype(), x.shape())?;
        let dt = x.dtype();
        with_type!(dt, T => {
            let src = elems::<T>(x.data(), dt, "a copy")?;
            let dst = T::slice_mut(out.data_mut()).ok_or_else(|| fail("a copy"))?;
            dst.copy_from_slice(src);
        });
        Ok(out)
    }

    /// An environment of `n` unbound slots (a kept allocation when there
    /// is one: bodies of loops run once per iteration).
    fn env<'a>(&self, n: usize) -> Env<'a> {
        let mut env: Env<'a> = self
            .envs
            .try_borrow_mut()
            .ok()
            .and_then(|mut e| e.pop())
            .unwrap_or_default();
        env.resize_with(n, || None);
        env
    }

    /// Frees the values `env` owns and keeps its allocation.
    fn give_env(&self, mut env: Env<'_>) {
        for v in env.drain(..).flatten() {
            if let Val::Own(a) = v {
                self.free(a);
            }
        }
        // Empty, so re-typed in place (same layout: the allocation is
        // reused by the in-place collect).
        let kept: Env<'static> = env.into_iter().map(|_| None).collect();
        if let Ok(mut envs) = self.envs.try_borrow_mut() {
            if envs.len() < FREE_MAX {
                envs.push(kept);
            }
        }
    }

    /// [`Ctx::free`] for each of `xs`.
    fn free_all(&self, xs: Vec<HostArray>) {
        for a in xs {
            self.free(a);
        }
    }
}

/// Values at least this large go back to the pool when dropped.
const POOLED_MIN_BYTES: usize = 1 << 16;

/// Returns `a`'s storage to the pool when it is large enough to matter.
fn recycle(pool: &Pool, a: HostArray) {
    if a.len() * a.dtype().size_bytes() >= POOLED_MIN_BYTES {
        pool.give(a.into_parts().1);
    }
}

/// A bound value: owned, or borrowed from an enclosing body or the caller.
enum Val<'a> {
    Own(HostArray),
    Ref(&'a HostArray),
}

impl Val<'_> {
    fn get(&self) -> &HostArray {
        match self {
            Val::Own(a) => a,
            Val::Ref(a) => a,
        }
    }
}

fn fail(m: impl std::fmt::Display) -> IrError {
    run_error(format!("{m}"))
}

type Env<'a> = Vec<Option<Val<'a>>>;

/// The runtime sizes of `shape`.
fn resolve(jaxpr: &Jaxpr, env: &Env, shape: &[Dim]) -> Result<Vec<usize>, IrError> {
    shape.iter().map(|d| resolve_dim(jaxpr, env, d)).collect()
}

/// [`resolve`] into `out` (cleared first).
fn resolve_into(
    jaxpr: &Jaxpr,
    env: &Env,
    shape: &[Dim],
    out: &mut Vec<usize>,
) -> Result<(), IrError> {
    out.clear();
    for d in shape {
        out.push(resolve_dim(jaxpr, env, d)?);
    }
    Ok(())
}

/// The runtime size of `d`.
fn resolve_dim(jaxpr: &Jaxpr, env: &Env, d: &Dim) -> Result<usize, IrError> {
    match d {
        Dim::Const(n) => Ok(*n),
        Dim::Var(v) => {
            let a = env
                .get(v.index())
                .and_then(Option::as_ref)
                .ok_or_else(|| fail(format!("dimension variable #{} is unbound", v.0)))?;
            let n = scalar_i64(a.get(), "a dimension")?;
            usize::try_from(n).map_err(|_| {
                fail(format!(
                    "a dimension is negative: variable #{} of type {} holds {n}",
                    v.0,
                    jaxpr
                        .try_aval(*v)
                        .map_or_else(|| "?".to_string(), |a| format!("{:?}", a.dtype()))
                ))
            })
        }
    }
}

/// Checks `a` against `aval` (its dimensions resolved in `env`).
fn check(
    jaxpr: &Jaxpr,
    env: &Env,
    aval: &Aval,
    a: &HostArray,
    what: &dyn Fn() -> String,
) -> Result<(), IrError> {
    let Aval::Array(sa) = aval else {
        return Err(fail(format!(
            "{}: `Ref` values of dynamic-shape programs are not supported yet",
            what()
        )));
    };
    // Compared without allocating: this runs for every bound value.
    let mut same = a.dtype() == sa.dtype && a.ndim() == sa.shape.len();
    if same {
        for (d, &got) in sa.shape.iter().zip(a.shape()) {
            if resolve_dim(jaxpr, env, d)? != got {
                same = false;
                break;
            }
        }
    }
    if !same {
        let want = resolve(jaxpr, env, &sa.shape)?;
        return Err(fail(format!(
            "{}: expected {}{:?}, got {}{:?}",
            what(),
            sa.dtype,
            want,
            a.dtype(),
            a.shape()
        )));
    }
    Ok(())
}

fn bind<'a>(
    jaxpr: &Jaxpr,
    env: &mut Env<'a>,
    b: &Binder,
    val: Val<'a>,
    what: &dyn Fn() -> String,
) -> Result<(), IrError> {
    match b {
        Binder::Var(v) => {
            let aval = jaxpr
                .try_aval(*v)
                .ok_or_else(|| fail(format!("{}: variable out of range", what())))?;
            check(jaxpr, env, aval, val.get(), what)?;
            env[v.index()] = Some(val);
        }
        Binder::Drop(aval) => check(jaxpr, env, aval, val.get(), what)?,
    }
    Ok(())
}

fn read<'e>(env: &'e Env, a: &Atom) -> Result<Val<'e>, IrError> {
    match a {
        Atom::Lit(l) => Ok(Val::Own(literal_array(l))),
        Atom::Var(v) => env
            .get(v.index())
            .and_then(Option::as_ref)
            .map(|x| Val::Ref(x.get()))
            .ok_or_else(|| fail(format!("variable #{} is read before it is bound", v.0))),
    }
}

/// Runs `body` on `args` (its invars, after its own consts).
fn run_body<'a>(ctx: &Ctx, body: &'a Body, args: Vec<Val<'a>>) -> Result<Vec<HostArray>, IrError> {
    let j = &*body.jaxpr;
    if args.len() != j.invars.len() || body.consts.len() != j.constvars.len() {
        return Err(fail(format!(
            "a body with {} inputs got {} arguments",
            j.invars.len(),
            args.len()
        )));
    }
    let mut env: Env<'a> = ctx.env(j.vars.len());
    for (k, (v, c)) in j.constvars.iter().zip(body.consts.iter()).enumerate() {
        bind(j, &mut env, &Binder::Var(*v), Val::Ref(c), &|| {
            format!("const {k}")
        })?;
    }
    for (k, (v, a)) in j.invars.iter().zip(args).enumerate() {
        bind(j, &mut env, &Binder::Var(*v), a, &|| {
            format!("argument {k}")
        })?;
    }
    for step in &body.steps {
        match step {
            Step::Flat(run) => run_flat(ctx, j, &mut env, run)?,
            Step::Scalar(run) => run_scalar(ctx, j, &mut env, run)?,
            Step::Dot(e) => {
                let eqn = &j.eqns[*e];
                let out = dot(ctx, j, &env, eqn)?;
                bind_outputs(j, &mut env, *e, vec![out])?;
            }
            Step::Native(e, op) => {
                let outs = native(ctx, j, &env, *e, op).map_err(|err| at(j, *e, err))?;
                bind_outputs(j, &mut env, *e, outs)?;
            }
            Step::Nested(e, bodies) => {
                let outs =
                    nested(ctx, j, &env, &j.eqns[*e], bodies).map_err(|err| at(j, *e, err))?;
                bind_outputs(j, &mut env, *e, outs)?;
            }
        }
    }
    // Results: owned values are moved out at their last use.
    let mut outs = Vec::with_capacity(j.outvars.len());
    for (k, a) in j.outvars.iter().enumerate() {
        let again = j.outvars[k + 1..].contains(a);
        outs.push(match a {
            Atom::Lit(l) => literal_array(l),
            Atom::Var(v) => match env.get_mut(v.index()).and_then(Option::take) {
                Some(Val::Own(x)) if !again => x,
                Some(x) => {
                    let c = ctx.copy_of(x.get())?;
                    env[v.index()] = Some(x);
                    c
                }
                None => return Err(fail(format!("result {k} is unbound"))),
            },
        });
    }
    ctx.give_env(env);
    Ok(outs)
}

/// Names equation `e` in an error.
fn at(j: &Jaxpr, e: usize, err: IrError) -> IrError {
    fail(format!(
        "dynamic program, {}: {err}",
        crate::util::describe_eqn(j, e)
    ))
}

fn bind_outputs(j: &Jaxpr, env: &mut Env, e: usize, outs: Vec<HostArray>) -> Result<(), IrError> {
    let eqn = &j.eqns[e];
    if outs.len() != eqn.outputs.len() {
        return Err(at(
            j,
            e,
            fail(format!(
                "{} results for {} binders",
                outs.len(),
                eqn.outputs.len()
            )),
        ));
    }
    for (k, (b, x)) in eqn.outputs.iter().zip(outs).enumerate() {
        bind(j, env, b, Val::Own(x), &|| {
            format!("{} result {k}", crate::util::describe_eqn(j, e))
        })?;
    }
    Ok(())
}

fn run_flat(ctx: &Ctx, j: &Jaxpr, env: &mut Env, run: &FlatRun) -> Result<(), IrError> {
    let mut shape = ctx.dims.take();
    resolve_into(j, env, &run.shape, &mut shape)?;
    let n: usize = shape.iter().product();
    // The run's own values; its inputs are read from `env` in place.
    let mut local = ctx.locals.take();
    local.clear();
    local.resize_with(run.n_slots, || None);
    for g in &run.groups {
        let kernel = ctx
            .kernels
            .get(g.kernel)
            .ok_or_else(|| fail("missing flat kernel"))?;
        let mut out = match g.reduce {
            Some(op) => identity_array(op, g.out_dtype, &[])?,
            // Stale pooled contents are fine: the kernel writes every
            // element.
            None => ctx.alloc(g.out_dtype, &shape)?,
        };
        let inputs = g
            .inputs
            .iter()
            .map(|&(s, dt, full)| {
                let a = match run.slot_var.get(s).copied().flatten() {
                    Some(v) => env.get(v.index()).and_then(Option::as_ref).map(Val::get),
                    None => local.get(s).and_then(Option::as_ref),
                };
                a.map(|a| (a, dt, full))
                    .ok_or_else(|| fail("flat run slot read before it is written"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        crate::run::runtime::run_flat_kernel(
            kernel,
            &inputs,
            &mut out,
            g.reduce.is_some(),
            n,
            ctx.threads,
        )?;
        drop(inputs);
        local[g.out] = Some(out);
    }
    ctx.dims.replace(shape);
    let mut res = Ok(());
    for &(v, s) in &run.outputs {
        let Some(x) = local.get_mut(s).and_then(Option::take) else {
            res = Err(fail("flat run result was not computed"));
            break;
        };
        res = bind(j, env, &Binder::Var(v), Val::Own(x), &|| {
            format!("fused result v{}", v.0)
        });
        if res.is_err() {
            break;
        }
    }
    for x in local.drain(..).flatten() {
        ctx.free(x);
    }
    ctx.locals.replace(local);
    res
}

fn run_scalar(ctx: &Ctx, j: &Jaxpr, env: &mut Env, run: &ScalarRun) -> Result<(), IrError> {
    let mut r = ctx.regs.take();
    run.eval(&mut r, |v| {
        let a = env
            .get(v.index())
            .and_then(Option::as_ref)
            .ok_or_else(|| fail(format!("variable #{} is read before it is bound", v.0)))?;
        // Bound values have their declared scalar types: one element,
        // read normalised (sign- or zero-extended, bool as 0/1).
        match a.get().len() {
            1 => Ok(a.get().data().get_i64(0)),
            _ => Err(fail("a scalar run's operand is not a scalar")),
        }
    })?;
    for &(v, k, dt) in &run.outputs {
        let mut a = ctx.alloc(dt, &[])?;
        set_scalar(&mut a, r[k]);
        bind(j, env, &Binder::Var(v), Val::Own(a), &|| {
            format!("scalar result v{}", v.0)
        })?;
    }
    ctx.regs.replace(r);
    Ok(())
}

fn dot(ctx: &Ctx, j: &Jaxpr, env: &Env, eqn: &Eqn) -> Result<HostArray, IrError> {
    let (
        Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers, ..
        })),
        [l, r],
    ) = (&eqn.primitive, eqn.inputs.as_slice())
    else {
        return Err(fail("dot step without a dot_general"));
    };
    let (l, r) = (read(env, l)?, read(env, r)?);
    let (l, r) = (l.get(), r.get());
    let plan = DotPlan::new(l.shape(), r.shape(), dimension_numbers, l.dtype())
        .map_err(|m| fail(format!("dot_general: {m} ({} equations)", j.eqns.len())))?;
    plan.run(l, r, ctx.threads)
}

/// Runs native step `op` of equation `e` with the operands bound in `env`
/// and the result types resolved there.
fn native(
    ctx: &Ctx,
    j: &Jaxpr,
    env: &Env,
    e: usize,
    op: &DynOp,
) -> Result<Vec<HostArray>, IrError> {
    let eqn = &j.eqns[e];
    let vals: Vec<Val> = eqn
        .inputs
        .iter()
        .map(|a| read(env, a))
        .collect::<Result<_, _>>()?;
    let ins: Vec<&HostArray> = vals.iter().map(Val::get).collect();
    let outs = eqn
        .outputs
        .iter()
        .map(|b| {
            let sa = j
                .binder_aval(b)
                .and_then(|a| a.as_array())
                .ok_or_else(|| fail("a result is not an array"))?;
            Ok((sa.dtype, resolve(j, env, &sa.shape)?))
        })
        .collect::<Result<Vec<_>, IrError>>()?;
    op.run(&eqn.primitive, &ins, &outs, ctx.threads)
}

/// Sets the value of an integer scalar (a loop index reused across
/// iterations).
fn set_scalar(a: &mut HostArray, v: i64) {
    use jaxon_ir::Storage;
    match a.data_mut() {
        Storage::I8(x) => x[..1].fill(v as i8),
        Storage::I16(x) => x[..1].fill(v as i16),
        Storage::I32(x) => x[..1].fill(v as i32),
        Storage::I64(x) => x[..1].fill(v),
        Storage::U8(x) => x[..1].fill(v as u8),
        Storage::U16(x) => x[..1].fill(v as u16),
        Storage::U32(x) => x[..1].fill(v as u32),
        Storage::U64(x) => x[..1].fill(v as u64),
        Storage::Bool(x) => x[..1].fill(v != 0),
        other => *other = index_scalar(other.dtype(), v).into_parts().1,
    }
}

/// Borrowed views of `xs`.
fn borrow<'x>(xs: &'x [Val<'_>]) -> Vec<Val<'x>> {
    xs.iter().map(|x| Val::Ref(x.get())).collect()
}

/// Borrowed views of `xs` with room for `more` further arguments (one
/// allocation per body call).
fn borrow_then<'x>(xs: &'x [Val<'_>], more: usize) -> Vec<Val<'x>> {
    let mut v = Vec::with_capacity(xs.len() + more);
    v.extend(xs.iter().map(|x| Val::Ref(x.get())));
    v
}

/// Runs a control-flow or call equation.
fn nested(
    ctx: &Ctx,
    _j: &Jaxpr,
    env: &Env,
    eqn: &Eqn,
    bodies: &[Body],
) -> Result<Vec<HostArray>, IrError> {
    let args: Vec<Val> = eqn
        .inputs
        .iter()
        .map(|a| read(env, a))
        .collect::<Result<_, _>>()?;
    let refs = |xs: &[Val<'_>]| -> Result<Vec<HostArray>, IrError> {
        xs.iter().map(|x| ctx.copy_of(x.get())).collect()
    };
    let body_at = |k: usize| bodies.get(k).ok_or_else(|| fail("missing nested body"));
    match &eqn.primitive {
        Primitive::Control(Control::Cond(CondParams { branches, .. })) => {
            let (index, ops) = args
                .split_first()
                .ok_or_else(|| fail("cond without an index"))?;
            let i = scalar_i64(index.get(), "cond index")?;
            let i = i.clamp(0, branches.len() as i64 - 1) as usize;
            run_body(ctx, body_at(i)?, borrow(ops))
        }
        Primitive::Control(Control::While(WhileParams {
            cond_nconsts,
            body_nconsts,
            ..
        })) => {
            let (body, cond) = (body_at(0)?, body_at(1)?);
            let n = cond_nconsts + body_nconsts;
            if args.len() < n {
                return Err(fail("while: too few operands"));
            }
            let mut carry = refs(&args[n..])?;
            loop {
                let mut cargs = borrow_then(&args[..*cond_nconsts], carry.len());
                cargs.extend(carry.iter().map(Val::Ref));
                let pred = run_body(ctx, cond, cargs)?;
                let [p] = pred.as_slice() else {
                    return Err(fail("while: the predicate gave several results"));
                };
                let go = scalar_i64(p, "while predicate")? != 0;
                ctx.free_all(pred);
                if !go {
                    return Ok(carry);
                }
                let mut bargs = borrow_then(&args[*cond_nconsts..n], carry.len());
                bargs.extend(carry.iter().map(Val::Ref));
                let next = run_body(ctx, body, bargs)?;
                ctx.free_all(std::mem::replace(&mut carry, next));
            }
        }
        Primitive::Control(Control::ForLoop(ForLoopParams {
            body_nconsts,
            nimplicit,
            apply_reverse_transform,
            ..
        })) => {
            let body = body_at(0)?;
            let head = body_nconsts + nimplicit;
            if args.len() < head + 4 {
                return Err(fail("for_loop: too few operands"));
            }
            let bound = |k: usize, what: &str| scalar_i64(args[head + k].get(), what);
            let (lo, hi, step) = (
                bound(0, "lower bound")?,
                bound(1, "upper bound")?,
                bound(2, "step")?,
            );
            let index_dtype = args[head + 3].get().dtype();
            let trips = for_loop_trips(lo, hi, step, *apply_reverse_transform)?;
            let mut carry = refs(&args[*body_nconsts..head])?;
            carry.extend(refs(&args[head + 4..])?);
            let mut index = index_scalar(index_dtype, lo);
            for k in 0..trips {
                set_scalar(&mut index, lo + k * step);
                let mut bargs = borrow_then(&args[..*body_nconsts], carry.len() + 1);
                bargs.extend(carry[..*nimplicit].iter().map(Val::Ref));
                bargs.push(Val::Ref(&index));
                bargs.extend(carry[*nimplicit..].iter().map(Val::Ref));
                let outs = run_body(ctx, body, bargs)?;
                if outs.len() != carry.len() {
                    return Err(fail("for_loop: the body gave the wrong number of results"));
                }
                ctx.free_all(std::mem::replace(&mut carry, outs));
            }
            Ok(carry)
        }
        Primitive::Control(Control::Scan(ScanParams {
            length,
            reverse,
            num_consts,
            num_carry,
            ..
        })) => {
            let body = body_at(0)?;
            let (nc, nk) = (*num_consts, *num_carry);
            if args.len() < nc + nk {
                return Err(fail("scan: too few operands"));
            }
            let mut carry = refs(&args[nc..nc + nk])?;
            let xs = &args[nc + nk..];
            let mut ys: Vec<Vec<HostArray>> = Vec::new();
            for step in 0..*length {
                let i = if *reverse { length - 1 - step } else { step };
                let rows = xs
                    .iter()
                    .map(|x| index_axis0(x.get(), i))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut bargs = borrow_then(&args[..nc], carry.len() + rows.len());
                bargs.extend(carry.iter().map(Val::Ref));
                bargs.extend(rows.iter().map(Val::Ref));
                let mut outs = run_body(ctx, body, bargs)?;
                if outs.len() < nk {
                    return Err(fail("scan: the body gave too few results"));
                }
                let y = outs.split_off(nk);
                ctx.free_all(std::mem::replace(&mut carry, outs));
                ys.push(y);
            }
            if *reverse {
                ys.reverse();
            }
            let bj = &body.jaxpr;
            let mut results = carry;
            for k in 0..bj.outvars.len() - nk {
                let col: Vec<HostArray> = ys
                    .iter_mut()
                    .map(|y| {
                        std::mem::replace(&mut y[k], HostArray::zeros(jaxon_ir::DType::Bool, &[]))
                    })
                    .collect();
                let (dt, shape) = match (col.first(), bj.atom_aval(&bj.outvars[nk + k])) {
                    (Some(a), _) => (a.dtype(), a.shape().to_vec()),
                    (None, Some(av)) => {
                        let sa = av.array();
                        let s = sa.static_sizes().ok_or_else(|| {
                            fail("scan: a y output of a length-0 scan has a dynamic shape")
                        })?;
                        (sa.dtype, s)
                    }
                    (None, None) => return Err(fail("scan: bad body output")),
                };
                results.push(stack(&col, dt, &shape)?);
            }
            Ok(results)
        }
        Primitive::Control(Control::Jit(_) | Control::Remat(_)) => {
            run_body(ctx, body_at(0)?, borrow(&args))
        }
        // `solve` (after `matvec` and, when present, `vecmat` among the
        // bodies) on its consts and `b`.
        Primitive::Control(Control::CustomLinearSolve(p)) => {
            let solve = body_at(1 + usize::from(p.jaxprs.vecmat.is_some()))?;
            let (Some(consts), Some(b)) = (args.get(p.consts_range(2)), args.get(p.num_consts()..))
            else {
                return Err(fail("custom_linear_solve: fewer operands than consts"));
            };
            let ops: Vec<Val> = consts.iter().chain(b).map(|x| Val::Ref(x.get())).collect();
            run_body(ctx, solve, ops)
        }
        Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams { num_consts, .. }))
        | Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams { num_consts, .. })) => {
            let body = body_at(0)?;
            let n = body.jaxpr.invars.len();
            if n == args.len() {
                run_body(ctx, body, borrow(&args))
            } else if *num_consts <= args.len() && n == args.len() - num_consts {
                run_body(ctx, body, borrow(&args[*num_consts..]))
            } else {
                Err(fail(format!(
                    "call_jaxpr takes {n} inputs, got {} operands",
                    args.len()
                )))
            }
        }
        Primitive::Control(Control::ShardMap(_)) => Err(fail(
            "shard_map is not supported by the cpu backend yet; use the interpreter".to_string(),
        )),
        // `dynamic::body` makes nested steps of control flow only.
        p @ (Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_)) => Err(fail(format!("`{}` has no nested body", p.name()))),
    }
}
