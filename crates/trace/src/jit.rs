//! `jit`: stage a function out once per input signature, compile it on a
//! backend, and run the compiled executable; inside another trace, a `jit`
//! equation.
//!
//! Invariants: the cache key is the input structure (static leaves
//! included) and every leaf's aval, weak flag included. A staging that
//! captured tracers of an enclosing trace is never cached: the next call
//! captures different ones. The cache is a bounded LRU map with
//! single-flight tracing (`jit_cache`): a signature that many threads miss
//! together is traced once, and compiled once (under its entry's lock).

use crate::array::Array;
use crate::core::{bind, find_top_trace};
use crate::dynshape::Size;
use crate::error::{catch, catch_flat, Error, Result};
use crate::eval::{backend, current_backend, EvalTrace};
use crate::jit_cache::{default_cache_limit, leading, Cache, Key, Landed, LeafKey, Lookup};
use crate::pytree::{Pytree, TreeDef};
use crate::stage::{leaf_avals, trace_pytree, trace_pytree_typed, StageMode};
use jaxon_ir::dyntype::{DynAval, InDim, InType};
use jaxon_ir::primitive::JitParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Aval, Backend, ClosedJaxpr, Executable, HostArray, Jaxpr, Primitive};
use jaxon_ir::{DType, Dim};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

thread_local! {
    /// How many [`DisableJit`] guards this thread holds.
    static JIT_DISABLED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn jit_disabled() -> bool {
    JIT_DISABLED.with(|d| d.get() > 0)
}

/// While held, every [`Jit::call`] on this thread runs its function
/// directly, op by op, instead of staging and compiling it (JAX's
/// `with jax.disable_jit():`), to step through or print inside it. Returned
/// by [`disable_jit`]; jit is enabled again when the last guard drops.
#[must_use = "jit stays disabled only while the guard is held"]
pub struct DisableJit {
    _not_send: PhantomData<*const ()>,
}

/// `jax.disable_jit()`: see [`DisableJit`].
///
/// ```
/// use jaxon_trace::jit::{disable_jit, jit};
/// use jaxon_trace::Array;
///
/// let f = jit(|x: Array| &x * 2.0);
/// let x = Array::from_vec(vec![1f32, 2.0], &[2]);
/// {
///     let _eager = disable_jit();
///     assert_eq!(f.call(x.clone())?.to_vec::<f32>(), [2.0, 4.0]);
///     assert_eq!(f.trace_count(), 0);
/// }
/// f.call(x)?;
/// assert_eq!(f.trace_count(), 1);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn disable_jit() -> DisableJit {
    JIT_DISABLED.with(|d| d.set(d.get() + 1));
    DisableJit {
        _not_send: PhantomData,
    }
}

impl Drop for DisableJit {
    fn drop(&mut self) {
        JIT_DISABLED.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// A jitted function; call it with [`Jit::call`].
pub struct Jit<F, I, O> {
    f: F,
    name: String,
    backend: Option<String>,
    /// Per flat argument: `(axis, name)` of its dynamic axes.
    abstracted: Option<AxisSpec>,
    cache: Mutex<Cache<Entry>>,
    traces: AtomicUsize,
    compiles: AtomicUsize,
    _sig: PhantomData<fn(I) -> O>,
}

struct Entry {
    /// The staged function; consts are concrete.
    jaxpr: ClosedJaxpr,
    out_def: TreeDef,
    /// Leading implicit inputs (sizes of abstracted axes, by name).
    implicit_ins: usize,
    /// Leading implicit outputs (dimensions of the results).
    implicit_outs: usize,
    /// Per output of the jaxpr: whether its type is weak.
    out_weak: Vec<bool>,
    /// Compiled executables, by backend name.
    compiled: Mutex<Vec<(String, Arc<dyn Executable>)>>,
}

/// Stages `f` out: see [`Jit`].
pub fn jit<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> Jit<F, I, O> {
    let name = short_type_name::<F>();
    Jit {
        f,
        name,
        backend: None,
        abstracted: None,
        cache: Mutex::new(Cache::new(default_cache_limit())),
        traces: AtomicUsize::new(0),
        compiles: AtomicUsize::new(0),
        _sig: PhantomData,
    }
}

fn short_type_name<F>() -> String {
    // `crate::module::function::{{closure}}` → `function`; closures of a
    // function are named after it, as JAX names lambdas `<lambda>`.
    let full = std::any::type_name::<F>();
    full.split("::")
        .filter(|s| !s.starts_with('{'))
        .last()
        .unwrap_or("jit")
        .to_string()
}

impl<I: Pytree, O: Pytree, F: Fn(I) -> O> Jit<F, I, O> {
    /// Names the function (the `name=` of its `jit` equation).
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Runs on the named backend instead of the default one.
    pub fn backend(mut self, name: &str) -> Self {
        self.backend = Some(name.to_string());
        self
    }

    /// Names axes of the (flattened) arguments as dynamic, like JAX's
    /// `abstracted_axes`: `spec[i]` lists `(axis, name)` pairs of argument
    /// `i`. Each distinct name becomes an implicit leading `i64` argument
    /// (arrays sharing a name share it, and must agree on its size), and
    /// one staged function and one executable serve every size.
    pub fn abstracted_axes(mut self, spec: &[&[(usize, &str)]]) -> Self {
        self.abstracted = Some(
            spec.iter()
                .map(|axes| axes.iter().map(|&(a, n)| (a, n.to_string())).collect())
                .collect(),
        );
        self
    }

    /// Keeps at most `limit` (at least 1) staged signatures, evicting the
    /// least recently used; the default is `JAXON_JIT_CACHE_SIZE` if set,
    /// else [`DEFAULT_JIT_CACHE_SIZE`](crate::jit_cache::DEFAULT_JIT_CACHE_SIZE)
    /// (4096). An evicted signature traces and compiles again on its next
    /// call.
    pub fn cache_limit(self, limit: usize) -> Self {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set_limit(limit);
        self
    }

    /// How many staged signatures the cache holds now.
    pub fn cached_signatures(&self) -> usize {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// How many times the function was traced (cache misses).
    pub fn trace_count(&self) -> usize {
        self.traces.load(Ordering::Relaxed)
    }

    /// How many executables were compiled.
    pub fn compile_count(&self) -> usize {
        self.compiles.load(Ordering::Relaxed)
    }

    /// The staged jaxpr for `args` (tracing it if needed), as `make_jaxpr`
    /// would show it.
    pub fn lower(&self, args: I) -> Result<ClosedJaxpr> {
        let (leaves, in_def) = args.flatten();
        let (entry, _) = self.entry(&leaves, in_def)?;
        Ok(entry.jaxpr.clone())
    }

    /// Calls the function: runs the compiled executable on concrete inputs,
    /// or binds a `jit` equation inside another trace. Inside a trace,
    /// arguments whose sizes are traced (dynamic shapes) abstract those
    /// axes automatically: each distinct size becomes an implicit leading
    /// operand of the `jit` equation.
    pub fn call(&self, args: I) -> Result<O> {
        if jit_disabled() {
            return catch(|| (self.f)(args));
        }
        let (leaves, in_def) = args.flatten();
        let auto = match &self.abstracted {
            Some(_) => None,
            None => dynamic_axes(&leaves)?,
        };
        let spec = self.abstracted.as_ref().or(auto.as_ref());
        let (entry, captured) = self.entry_with(&leaves, in_def, spec)?;
        let top = find_top_trace(&leaves)?;
        let mut leaves = leaves;
        if entry.implicit_ins > 0 {
            let mut sizes = Self::axis_sizes(spec, &leaves)?;
            sizes.append(&mut leaves);
            leaves = sizes;
        }
        let outs = if captured.is_empty() && top.trace().as_any().is::<EvalTrace>() {
            self.execute(&entry, &leaves)?
        } else {
            let mut jaxpr = (*entry.jaxpr.jaxpr).clone();
            let mut operands = leaves;
            if !captured.is_empty() {
                // Captured tracers become leading invars, as in JAX.
                let hoisted: Vec<_> = jaxpr.constvars.drain(entry.jaxpr.consts.len()..).collect();
                jaxpr.invars.splice(0..0, hoisted);
                operands.splice(0..0, captured);
            }
            let primitive = Primitive::from(JitParams {
                name: self.name.clone(),
                jaxpr: ClosedJaxpr {
                    jaxpr: Arc::new(jaxpr),
                    consts: entry.jaxpr.consts.clone(),
                },
            });
            bind(&primitive, &operands)?
        };
        let outs = outs.into_iter().skip(entry.implicit_outs).collect();
        O::unflatten(&entry.out_def, outs)
    }

    /// The sizes of the abstracted axes of `leaves`, one `i64` scalar per
    /// name in order of first appearance; shared names must agree.
    fn axis_sizes(spec: Option<&AxisSpec>, leaves: &[Array]) -> Result<Vec<Array>> {
        let spec = spec.map(Vec::as_slice).unwrap_or(&[]);
        let mut names: Vec<(&str, Size, usize)> = Vec::new();
        for (i, axes) in spec.iter().enumerate() {
            let Some(x) = leaves.get(i) else { break };
            let sizes = crate::dynshape::sizes(x)?;
            for (axis, name) in axes {
                let s = sizes.get(*axis).cloned().ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "abstracted_axes: argument {i} of type {} has no axis {axis}",
                        fmt_aval(x.aval())
                    ))
                })?;
                match names.iter().find(|(n, _, _)| n == name) {
                    Some((_, s0, i0)) if !s0.same(&s) => {
                        return Err(Error::ShapeMismatch {
                            op: format!(
                                "jit: abstracted axis '{name}' of arguments {i0} and {i} \
                                 (argument {i0} vs argument {i})"
                            ),
                            lhs: fmt_aval(leaves[*i0].aval()),
                            rhs: fmt_aval(x.aval()),
                        })
                    }
                    Some(_) => {}
                    None => names.push((name, s, i)),
                }
            }
        }
        Ok(names.into_iter().map(|(_, s, _)| s.to_array()).collect())
    }

    /// The cache key avals and the input type of abstracted arguments:
    /// named axes become `DBIdx`es of leading implicit `i64` inputs (and,
    /// in the key, placeholder variables numbered by name).
    fn abstract_type(
        spec: Option<&AxisSpec>,
        avals: &[Aval],
    ) -> Result<Option<(Vec<Aval>, InType)>> {
        let Some(spec) = spec else {
            return Ok(None);
        };
        let mut names: Vec<&str> = Vec::new();
        let mut key = avals.to_vec();
        let mut entries = Vec::new();
        for (i, a) in avals.iter().enumerate() {
            let axes = spec.get(i).map(Vec::as_slice).unwrap_or(&[]);
            // Dynamic dimensions must be abstracted (they are replaced below).
            let mut shape: Vec<InDim> = a
                .shape()
                .iter()
                .enumerate()
                .map(|(k, d)| match d.as_const() {
                    Some(n) => Some(InDim::Const(n)),
                    None => axes
                        .iter()
                        .any(|(ax, _)| *ax == k)
                        .then_some(InDim::Const(0)),
                })
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    Error::Unsupported(format!(
                        "abstracted_axes on an argument of dynamic type {}",
                        fmt_aval(a)
                    ))
                })?;
            for (axis, name) in axes {
                if *axis >= shape.len() {
                    return Err(Error::InvalidArgument(format!(
                        "abstracted_axes: argument {i} of type {} has no axis {axis}",
                        fmt_aval(a)
                    )));
                }
                let k = names.iter().position(|n| n == name).unwrap_or_else(|| {
                    names.push(name);
                    names.len() - 1
                });
                shape[*axis] = InDim::DBIdx(k);
                if let Aval::Array(x) = &mut key[i] {
                    x.shape[*axis] = Dim::Var(jaxon_ir::Var(k as u32));
                }
            }
            entries.push((
                DynAval {
                    dtype: a.dtype(),
                    shape,
                },
                true,
            ));
        }
        let n = names.len();
        let mut all: Vec<(DynAval<InDim>, bool)> = (0..n)
            .map(|_| {
                (
                    DynAval {
                        dtype: DType::I64,
                        shape: Vec::new(),
                    },
                    false,
                )
            })
            .collect();
        all.extend(entries);
        Ok(Some((key, InType(all))))
    }

    fn execute(&self, entry: &Entry, leaves: &[Array]) -> Result<Vec<Array>> {
        let backend: Arc<dyn Backend> = match &self.backend {
            Some(name) => backend(name)?,
            None => current_backend()?,
        };
        let exe = {
            let mut compiled = entry.compiled.lock().unwrap_or_else(|e| e.into_inner());
            match compiled.iter().find(|(n, _)| n == backend.name()) {
                Some((_, exe)) => exe.clone(),
                None => {
                    let exe = backend.compile(&entry.jaxpr)?;
                    self.compiles.fetch_add(1, Ordering::Relaxed);
                    compiled.push((backend.name().to_string(), exe.clone()));
                    exe
                }
            }
        };
        let buffers = leaves
            .iter()
            .map(|l| {
                l.buffer()
                    .cloned()
                    .ok_or_else(|| Error::UnexpectedTracer("tracer in a compiled call".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let outs = exe.execute(&buffers)?;
        // Implicit outputs are dropped by the caller.
        Ok(outs
            .into_iter()
            .zip(&entry.out_weak)
            .map(|(b, &weak)| Array::from_buffer_weak(b, weak))
            .collect())
    }

    /// The cache entry for these inputs, and any captured tracers.
    fn entry(&self, leaves: &[Array], in_def: TreeDef) -> Result<(Arc<Entry>, Vec<Array>)> {
        self.entry_with(leaves, in_def, self.abstracted.as_ref())
    }

    /// [`Self::entry`] with the given abstracted axes.
    fn entry_with(
        &self,
        leaves: &[Array],
        in_def: TreeDef,
        spec: Option<&AxisSpec>,
    ) -> Result<(Arc<Entry>, Vec<Array>)> {
        if spec.is_none() {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let key = LeafKey {
                in_def: &in_def,
                leaves,
            };
            if let Lookup::Hit(e) = cache.lookup(&key) {
                return Ok((e, Vec::new()));
            }
        }
        let avals = leaf_avals(leaves);
        let typed = Self::abstract_type(spec, &avals)?;
        let key = Key {
            in_def,
            avals: typed.as_ref().map_or(avals, |(k, _)| k.clone()),
        };
        loop {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            match cache.lookup(&key) {
                Lookup::Hit(e) => return Ok((e, Vec::new())),
                // Another thread traces this signature: share its result.
                Lookup::Wait(flight) if !leading() => {
                    drop(cache);
                    match flight.wait() {
                        Landed::Done(e) => return Ok((e, Vec::new())),
                        Landed::Failed(e) => return Err(e),
                        Landed::Retry => continue,
                    }
                }
                // This thread leads a flight itself (it is tracing a jitted
                // function), so it must not wait: it traces on its own.
                Lookup::Wait(_) => {
                    drop(cache);
                    return self.stage(&key, typed.as_ref());
                }
                Lookup::Miss => {
                    explain_miss(&self.name, cache.last_key.as_ref(), &key);
                    cache.last_key = Some(key.clone());
                    let lead = cache.lead(&self.cache, &key);
                    drop(cache);
                    let staged = self.stage(&key, typed.as_ref());
                    lead.finish(&match &staged {
                        Ok((e, captured)) if captured.is_empty() => Ok(Some(e.clone())),
                        Ok(_) => Ok(None),
                        Err(e) => Err(e.clone()),
                    });
                    return staged;
                }
            }
        }
    }

    /// Traces the function for `key` (with `typed`, the input type of
    /// abstracted arguments): its entry and any captured tracers.
    fn stage(
        &self,
        key: &Key,
        typed: Option<&(Vec<Aval>, InType)>,
    ) -> Result<(Arc<Entry>, Vec<Array>)> {
        self.traces.fetch_add(1, Ordering::Relaxed);
        let (staged, out_def) = match typed {
            Some((_, in_type)) => {
                trace_pytree_typed::<I, O>(StageMode::Base, &self.f, &key.in_def, in_type)?
            }
            None => trace_pytree::<I, O>(StageMode::Base, &self.f, &key.in_def, &key.avals)?,
        };
        let implicit_ins = typed.map_or(0, |(_, t)| t.0.iter().filter(|(_, e)| !e).count());
        let implicit_outs = staged.implicit_outs;
        // Concrete consts stay in the closed jaxpr; captured tracers go last
        // among the constvars so the call can hoist them to leading operands.
        let (concrete, tracers): (Vec<_>, Vec<_>) = staged
            .consts
            .iter()
            .cloned()
            .zip(staged.jaxpr.constvars.iter().copied())
            .partition(|(c, _)| !c.is_tracer());
        let mut jaxpr: Jaxpr = staged.jaxpr;
        jaxpr.constvars = concrete.iter().chain(&tracers).map(|(_, v)| *v).collect();
        let out_weak = jaxpr
            .outvars
            .iter()
            .map(|a| jaxpr.atom_aval(a).is_some_and(|av| av.array().weak_type))
            .collect();
        let consts = catch_flat(|| {
            concrete
                .iter()
                .map(|(c, _)| c.try_to_host("jit constant"))
                .collect::<Result<Vec<HostArray>>>()
        })?;
        let entry = Arc::new(Entry {
            jaxpr: ClosedJaxpr {
                jaxpr: Arc::new(jaxpr),
                consts: Arc::from(consts),
            },
            out_def,
            implicit_ins,
            implicit_outs,
            out_weak,
            compiled: Mutex::new(Vec::new()),
        });
        let captured: Vec<Array> = tracers.into_iter().map(|(c, _)| c).collect();
        Ok((entry, captured))
    }
}

/// Logs, at debug level, why a call missed the cache.
fn explain_miss(name: &str, last: Option<&Key>, key: &Key) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let why = match last {
        None => "first call".to_string(),
        Some(last) if last.in_def != key.in_def => format!(
            "input structure changed from {:?} to {:?}",
            last.in_def, key.in_def
        ),
        Some(last) if last.avals.len() != key.avals.len() => format!(
            "number of array arguments changed from {} to {}",
            last.avals.len(),
            key.avals.len()
        ),
        Some(last) => last
            .avals
            .iter()
            .zip(&key.avals)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| {
                format!(
                    "argument {i} changed from {}{} to {}{}",
                    fmt_aval(a),
                    if a.array().weak_type { " (weak)" } else { "" },
                    fmt_aval(b),
                    if b.array().weak_type { " (weak)" } else { "" },
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    };
    tracing::debug!(target: "jaxon::jit", "cache miss for jit({name}): {why}");
}

/// Per argument, its abstracted `(axis, name)` pairs.
type AxisSpec = Vec<Vec<(usize, String)>>;

/// The traced sizes of `leaves` as an abstracted-axes spec (each distinct
/// size tracer one name), or `None` when every size is static.
fn dynamic_axes(leaves: &[Array]) -> Result<Option<AxisSpec>> {
    // The common case (a dispatch of concrete arrays) allocates nothing.
    if !leaves
        .iter()
        .any(|x| x.is_tracer() && crate::dynshape::is_dynamic(x))
    {
        return Ok(None);
    }
    let mut seen: Vec<Size> = Vec::new();
    let mut spec = Vec::with_capacity(leaves.len());
    for x in leaves {
        let mut axes = Vec::new();
        if x.is_tracer() {
            for (axis, s) in crate::dynshape::sizes(x)?.into_iter().enumerate() {
                if let Size::Dyn(_) = s {
                    let k = seen.iter().position(|t| t.same(&s)).unwrap_or_else(|| {
                        seen.push(s);
                        seen.len() - 1
                    });
                    axes.push((axis, format!("_dyn{k}")));
                }
            }
        }
        spec.push(axes);
    }
    Ok((!seen.is_empty()).then_some(spec))
}
