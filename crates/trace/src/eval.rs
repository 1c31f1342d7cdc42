//! `EvalTrace`, the base of the stack: runs each primitive eagerly on a
//! backend. Also the registry of backends by name.
//!
//! Invariants: the eval trace only ever sees concrete arrays; a tracer that
//! reaches it has escaped its trace and is reported as unexpected. An eager
//! executable is cached per thread by (backend, primitive with its params,
//! input avals), so a repeated operation never re-traces or re-compiles;
//! it holds at most 4096 signatures per thread (then starts over) and
//! empties itself at its next lookup after `clear_caches`.
//!
//! Backends register themselves through [`BackendProvider`]s collected at
//! link time (`inventory`): the interpreter always, and whatever a linking
//! crate submits (the `jaxon` facade submits the CPU backend). The provider
//! with the highest priority among those available on the machine is the
//! default (a GPU backend when a GPU is present, as in JAX) unless
//! `JAXON_BACKEND` names another.

use crate::array::Array;
use crate::core::{MainTrace, Trace};
use crate::error::{Error, Result};
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{
    abstract_eval, Atom, Aval, Backend, Binder, ClosedJaxpr, Eqn, Executable, Jaxpr, Primitive,
};
use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

/// Evaluation: every primitive runs now, on the current backend.
pub struct EvalTrace;

impl Trace for EvalTrace {
    fn name(&self) -> &'static str {
        "eval"
    }

    fn lift(&self, _main: &Arc<MainTrace>, x: &Array) -> Result<Array> {
        match x.as_tracer() {
            None => Ok(x.clone()),
            Some(t) => Err(Error::UnexpectedTracer(format!(
                "a {} tracer of type {} reached eager evaluation outside the \
                 trace that created it",
                t.main().trace().name(),
                jaxon_ir::shape::fmt_aval(t.aval())
            ))),
        }
    }

    fn process_primitive(
        &self,
        _main: &Arc<MainTrace>,
        primitive: &Primitive,
        args: &[Array],
    ) -> Result<Vec<Array>> {
        apply_eagerly(&current_backend()?, primitive, args)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Runs one primitive on concrete arrays on `backend`.
pub fn apply_eagerly(
    backend: &Arc<dyn Backend>,
    primitive: &Primitive,
    args: &[Array],
) -> Result<Vec<Array>> {
    let in_avals: Vec<Aval> = args.iter().map(|a| a.aval().clone()).collect();
    let (exe, out_avals) = eager_executable(backend, primitive, in_avals)?;
    let buffers = args
        .iter()
        .map(|a| {
            a.buffer()
                .cloned()
                .ok_or_else(|| Error::UnexpectedTracer("a tracer reached eager evaluation".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    let outs = exe.execute(&buffers)?;
    Ok(outs
        .into_iter()
        .zip(out_avals.iter())
        .map(|(b, aval)| Array::from_buffer_weak(b, aval.array().weak_type))
        .collect())
}

/// The cache key of an eager executable, less the primitive's params (which
/// are compared with `==` inside a bucket: `Primitive` holds floats and
/// jaxprs, so it is not `Hash`).
#[derive(PartialEq, Eq, Hash)]
struct EagerKey {
    backend: usize,
    name: &'static str,
    in_avals: Vec<Aval>,
}

/// An executable and the avals of its outputs.
type Compiled = (Arc<dyn Executable>, Arc<[Aval]>);

type EagerEntry = (Primitive, Arc<dyn Executable>, Arc<[Aval]>);

/// Distinct (primitive, avals) signatures kept per thread before the cache
/// starts over; eager programs that see more shapes than this are rare.
const EAGER_CACHE_LIMIT: usize = 4096;

/// This thread's eager cache and the cache generation it belongs to.
#[derive(Default)]
struct EagerCache {
    generation: u64,
    entries: hashbrown::HashMap<EagerKey, Vec<EagerEntry>>,
}

impl EagerCache {
    /// The entries, emptied first if `clear_caches` ran since the last use.
    fn entries(&mut self) -> &mut hashbrown::HashMap<EagerKey, Vec<EagerEntry>> {
        let g = crate::jit_cache::generation();
        if g != self.generation {
            self.entries.clear();
            self.generation = g;
        }
        &mut self.entries
    }
}

thread_local! {
    static EAGER: RefCell<EagerCache> = RefCell::new(EagerCache::default());
}

/// The compiled one-equation program for `primitive` on `in_avals`, and its
/// output avals: from the cache, or built and compiled now.
fn eager_executable(
    backend: &Arc<dyn Backend>,
    primitive: &Primitive,
    in_avals: Vec<Aval>,
) -> Result<Compiled> {
    let key = EagerKey {
        backend: Arc::as_ptr(backend) as *const () as usize,
        name: primitive.name(),
        in_avals,
    };
    let hit = EAGER.with(|c| {
        c.borrow_mut().entries().get(&key).and_then(|bucket| {
            bucket
                .iter()
                .find(|(p, _, _)| p == primitive)
                .map(|(_, e, o)| (e.clone(), o.clone()))
        })
    });
    if let Some(hit) = hit {
        return Ok(hit);
    }
    let (exe, out_avals) = compile_one(backend, primitive, &key.in_avals)?;
    EAGER.with(|c| {
        let mut c = c.borrow_mut();
        let c = c.entries();
        if c.len() >= EAGER_CACHE_LIMIT {
            c.clear();
        }
        c.entry(key)
            .or_default()
            .push((primitive.clone(), exe.clone(), out_avals.clone()));
    });
    Ok((exe, out_avals))
}

/// Builds the jaxpr `{ lambda ; *ins. let *outs = primitive *ins in outs }`
/// and compiles it on `backend`.
fn compile_one(
    backend: &Arc<dyn Backend>,
    primitive: &Primitive,
    in_avals: &[Aval],
) -> Result<Compiled> {
    let mut jaxpr = Jaxpr::new();
    let invars: Vec<_> = in_avals.iter().map(|a| jaxpr.new_var(a.clone())).collect();
    let atoms: Vec<Atom> = invars.iter().map(|&v| Atom::Var(v)).collect();
    let out_avals = abstract_eval(primitive, in_avals, &atoms)?;
    let outvars: Vec<_> = out_avals.iter().map(|a| jaxpr.new_var(a.clone())).collect();
    jaxpr.invars = invars;
    jaxpr.eqns.push(Eqn {
        primitive: primitive.clone(),
        inputs: atoms,
        outputs: outvars.iter().map(|&v| Binder::Var(v)).collect(),
    });
    jaxpr.outvars = outvars.iter().map(|&v| Atom::Var(v)).collect();
    let closed = ClosedJaxpr {
        jaxpr: Arc::new(jaxpr),
        consts: Arc::from(Vec::new()),
    };
    Ok((backend.compile(&closed)?, Arc::from(out_avals)))
}

/// A backend the registry creates when it is first used. A crate that links
/// a backend submits one with `inventory::submit!`; the facade does so for
/// the CPU backend.
pub struct BackendProvider {
    /// The name the backend registers under (its [`Backend::name`]).
    pub name: &'static str,
    /// The highest priority among the [`available`](Self::available)
    /// providers is the default backend, unless the environment variable
    /// `JAXON_BACKEND` names another registered backend.
    pub priority: i32,
    /// Creates the backend.
    pub make: fn() -> Arc<dyn Backend>,
    /// Whether the backend can run programs on this machine (a GPU backend
    /// asks for a device). Only decides the default: an unavailable backend
    /// stays registered and reports what is missing when it is used.
    pub available: fn() -> bool,
}

/// Always available (the host backends).
pub fn always() -> bool {
    true
}

/// The default backend's name: `env` (`JAXON_BACKEND`) when it names a
/// registered backend, else the available provider of highest priority
/// (ties by name), else the interpreter. `providers` are
/// `(name, priority, available)`.
pub fn choose_default(providers: &[(&str, i32, bool)], env: Option<&str>) -> String {
    if let Some(name) = env {
        if providers.iter().any(|p| p.0 == name) {
            return name.to_string();
        }
    }
    let mut best: Option<(&str, i32)> = None;
    for &(name, priority, available) in providers {
        let better = match best {
            None => true,
            Some((b, bp)) => priority > bp || (priority == bp && name < b),
        };
        if available && better {
            best = Some((name, priority));
        }
    }
    best.map_or("interpreter", |b| b.0).to_string()
}

inventory::collect!(BackendProvider);

inventory::submit! {
    BackendProvider {
        name: "interpreter",
        priority: 0,
        make: || Arc::new(InterpreterBackend::new()),
        available: always,
    }
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let providers: Vec<&BackendProvider> = inventory::iter::<BackendProvider>().collect();
        let backends: BTreeMap<String, Arc<dyn Backend>> = providers
            .iter()
            .map(|p| (p.name.to_string(), (p.make)()))
            .collect();
        let table: Vec<(&str, i32, bool)> = providers
            .iter()
            .map(|p| (p.name, p.priority, (p.available)()))
            .collect();
        let env = std::env::var("JAXON_BACKEND").ok();
        let default = choose_default(&table, env.as_deref());
        if let Some(name) = env.as_deref().filter(|n| !backends.contains_key(*n)) {
            tracing::warn!(
                "JAXON_BACKEND={name} is not a registered backend ({}); using {default}",
                backends.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        tracing::debug!("default backend: {default}");
        RwLock::new(Registry { backends, default })
    })
}

struct Registry {
    backends: BTreeMap<String, Arc<dyn Backend>>,
    default: String,
}

thread_local! {
    static OVERRIDE: RefCell<Option<Arc<dyn Backend>>> = const { RefCell::new(None) };
}

/// Registers a backend under its name (replacing one of the same name).
pub fn register_backend(backend: Arc<dyn Backend>) {
    let mut r = registry().write().unwrap_or_else(|e| e.into_inner());
    r.backends.insert(backend.name().to_string(), backend);
}

/// Drops every registered backend's compiled-program cache
/// ([`Backend::clear_cache`]); part of [`crate::clear_caches`].
pub(crate) fn clear_backend_caches() {
    let backends: Vec<Arc<dyn Backend>> = {
        let r = registry().read().unwrap_or_else(|e| e.into_inner());
        r.backends.values().cloned().collect()
    };
    for b in backends {
        b.clear_cache();
    }
}

/// Makes the named, registered backend the default for eager operations and
/// `jit`.
pub fn set_default_backend(name: &str) -> Result<()> {
    let mut r = registry().write().unwrap_or_else(|e| e.into_inner());
    if !r.backends.contains_key(name) {
        return Err(unknown_backend(name, &r));
    }
    r.default = name.to_string();
    Ok(())
}

/// The registered backend called `name`.
pub fn backend(name: &str) -> Result<Arc<dyn Backend>> {
    let r = registry().read().unwrap_or_else(|e| e.into_inner());
    r.backends
        .get(name)
        .cloned()
        .ok_or_else(|| unknown_backend(name, &r))
}

/// The names of the registered backends.
pub fn backend_names() -> Vec<String> {
    let r = registry().read().unwrap_or_else(|e| e.into_inner());
    r.backends.keys().cloned().collect()
}

fn unknown_backend(name: &str, r: &Registry) -> Error {
    Error::Unsupported(format!(
        "no backend named `{name}`; registered: {}",
        r.backends.keys().cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// The backend in effect: a [`with_backend`] override, else the default.
pub fn current_backend() -> Result<Arc<dyn Backend>> {
    if let Some(b) = OVERRIDE.with(|o| o.borrow().clone()) {
        return Ok(b);
    }
    let r = registry().read().unwrap_or_else(|e| e.into_inner());
    r.backends
        .get(&r.default)
        .cloned()
        .ok_or_else(|| unknown_backend(&r.default, &r))
}

/// Runs `f` with the named backend in effect on this thread.
pub fn with_backend<R>(name: &str, f: impl FnOnce() -> R) -> Result<R> {
    let b = backend(name)?;
    struct Reset(Option<Arc<dyn Backend>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let prev = self.0.take();
            OVERRIDE.with(|o| *o.borrow_mut() = prev);
        }
    }
    let prev = OVERRIDE.with(|o| o.borrow_mut().replace(b));
    let _reset = Reset(prev);
    Ok(f())
}

#[cfg(test)]
mod tests {
    use super::choose_default;

    const MACHINE: [(&str, i32, bool); 4] = [
        ("interpreter", 0, true),
        ("cpu", 10, true),
        ("cuda-sim", -10, true),
        ("cuda", 20, false),
    ];

    #[test]
    fn the_gpu_is_the_default_only_where_one_is_present() {
        assert_eq!(choose_default(&MACHINE, None), "cpu");
        let mut gpu = MACHINE;
        gpu[3].2 = true;
        assert_eq!(choose_default(&gpu, None), "cuda");
        // The environment wins when it names a registered backend, even an
        // unavailable one (its errors then say what is missing).
        assert_eq!(choose_default(&MACHINE, Some("cuda")), "cuda");
        assert_eq!(choose_default(&gpu, Some("cpu")), "cpu");
        assert_eq!(choose_default(&MACHINE, Some("tpu")), "cpu");
        assert_eq!(choose_default(&[], None), "interpreter");
        // Ties go by name, so the choice does not depend on link order.
        assert_eq!(choose_default(&[("b", 1, true), ("a", 1, true)], None), "a");
    }
}
