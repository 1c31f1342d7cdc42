//! `EvalTrace`, the base of the stack: runs each primitive eagerly on a
//! backend. Also the registry of backends by name.
//!
//! Invariant: the eval trace only ever sees concrete arrays; a tracer that
//! reaches it has escaped its trace and is reported as unexpected.

use crate::array::Array;
use crate::core::{MainTrace, Trace};
use crate::error::{Error, Result};
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{abstract_eval, Atom, Backend, Binder, ClosedJaxpr, Eqn, Jaxpr, Primitive};
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
    let in_avals: Vec<_> = args.iter().map(|a| a.aval().clone()).collect();
    let mut jaxpr = Jaxpr::new();
    let invars: Vec<_> = in_avals.iter().map(|a| jaxpr.new_var(a.clone())).collect();
    let atoms: Vec<Atom> = invars.iter().map(|&v| Atom::Var(v)).collect();
    let out_avals = abstract_eval(primitive, &in_avals, &atoms)?;
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
    let exe = backend.compile(&closed)?;
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
        .zip(&out_avals)
        .map(|(b, aval)| Array::from_buffer_weak(b, aval.array().weak_type))
        .collect())
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let interpreter: Arc<dyn Backend> = Arc::new(InterpreterBackend::new());
        RwLock::new(Registry {
            backends: BTreeMap::from([("interpreter".to_string(), interpreter)]),
            default: "interpreter".to_string(),
        })
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
