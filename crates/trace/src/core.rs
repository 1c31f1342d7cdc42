//! The interpreter stack: `MainTrace` levels, the `Trace` trait, and `bind`.
//!
//! As in the omnistaging design (seed 004) and JAX's autodidax:
//! - each thread has a stack of `MainTrace`s; `stack[0]` is the base, an
//!   explicit `EvalTrace` unless [`new_base_main`] swapped it;
//! - [`new_main`] pushes a transformation (jvp, batching, ...);
//! - [`new_dynamic_main`] pushes a staging trace and makes it the *dynamic*
//!   trace, which takes part in every `bind`, so control-flow bodies are
//!   staged whatever their operands are;
//! - [`new_base_main`] installs a fresh stack whose base (and dynamic trace)
//!   is the given trace: `jit` uses it so every operation is staged, even one
//!   that depends on no argument. Tracers of the suspended stack are seen as
//!   constants from outside, which the staging trace captures;
//! - [`bind`] finds the top trace among the operands' and the dynamic one,
//!   raises every operand into it and lets it process the primitive.
//!
//! Invariants: a `MainTrace` is active from its creation until its guard is
//! dropped; a tracer whose main is inactive is a leaked tracer and any use
//! is `Error::UnexpectedTracer`. A tracer is only processed by its own main,
//! or lifted into a main above it.

use crate::array::{Array, TracerRef};
use crate::error::{Error, Result};
use crate::eval::EvalTrace;
use jaxon_ir::Primitive;
use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// An interpretation of primitives: evaluation, staging, jvp, batching...
///
/// Transformations of other crates implement it and push themselves with
/// [`new_main`]; this crate never needs to know them.
pub trait Trace: Send + Sync + 'static {
    /// A short name for error messages (`"eval"`, `"staging"`, `"jvp"`).
    fn name(&self) -> &'static str;

    /// Turns a value from below this trace (a concrete array, a tracer of a
    /// lower level, or a tracer of a suspended stack) into one of its tracers.
    fn lift(&self, main: &Arc<MainTrace>, x: &Array) -> Result<Array>;

    /// Applies `primitive` to operands that are all tracers of `main` (or,
    /// for the eval trace, concrete arrays).
    fn process_primitive(
        &self,
        main: &Arc<MainTrace>,
        primitive: &Primitive,
        args: &[Array],
    ) -> Result<Vec<Array>>;

    /// Downcasting, so a transformation can reach its own state.
    fn as_any(&self) -> &dyn Any;
}

/// One level of the interpreter stack.
pub struct MainTrace {
    level: usize,
    stack_id: u64,
    active: AtomicBool,
    trace: Box<dyn Trace>,
}

impl MainTrace {
    /// The level on its stack (0 is the base).
    pub fn level(&self) -> usize {
        self.level
    }

    /// The trace that interprets primitives at this level.
    pub fn trace(&self) -> &dyn Trace {
        &*self.trace
    }

    /// False once the guard that pushed this main has been dropped.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// True if this main sits on the current thread's current stack.
    pub fn is_on_current_stack(self: &Arc<Self>) -> bool {
        STACK.with(|s| {
            let s = s.borrow();
            s.id == self.stack_id
                && s.mains
                    .get(self.level)
                    .is_some_and(|m| Arc::ptr_eq(m, self))
        })
    }
}

impl std::fmt::Debug for MainTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MainTrace({} @ {})", self.trace.name(), self.level)
    }
}

struct Stack {
    id: u64,
    mains: Vec<Arc<MainTrace>>,
    dynamic: Arc<MainTrace>,
}

static NEXT_STACK_ID: AtomicU64 = AtomicU64::new(1);

fn fresh_stack(base: Box<dyn Trace>) -> Stack {
    let id = NEXT_STACK_ID.fetch_add(1, Ordering::Relaxed);
    let main = Arc::new(MainTrace {
        level: 0,
        stack_id: id,
        active: AtomicBool::new(true),
        trace: base,
    });
    Stack {
        id,
        mains: vec![main.clone()],
        dynamic: main,
    }
}

thread_local! {
    static STACK: RefCell<Stack> = RefCell::new(fresh_stack(Box::new(EvalTrace)));
}

/// Keeps a pushed main alive; dropping it pops the main and invalidates its
/// tracers. Guards must be dropped in reverse order of creation (they are
/// scoped values, so this holds even when a raised error unwinds).
pub struct MainGuard {
    main: Arc<MainTrace>,
    restore: Restore,
}

enum Restore {
    Pop {
        prev_dynamic: Option<Arc<MainTrace>>,
    },
    Stack(Option<Stack>),
}

impl MainGuard {
    /// The main this guard keeps on the stack.
    pub fn main(&self) -> &Arc<MainTrace> {
        &self.main
    }
}

impl Drop for MainGuard {
    fn drop(&mut self) {
        self.main.active.store(false, Ordering::Release);
        // `try_with`: during thread teardown the stack may already be gone.
        let _ = STACK.try_with(|s| {
            let mut s = s.borrow_mut();
            match &mut self.restore {
                Restore::Pop { prev_dynamic } => {
                    let popped = s.mains.pop();
                    debug_assert!(popped.is_some_and(|m| Arc::ptr_eq(&m, &self.main)));
                    if let Some(d) = prev_dynamic.take() {
                        s.dynamic = d;
                    }
                }
                Restore::Stack(saved) => {
                    if let Some(saved) = saved.take() {
                        *s = saved;
                    }
                }
            }
        });
    }
}

/// Pushes a transformation on top of the current stack.
pub fn new_main(trace: Box<dyn Trace>) -> MainGuard {
    push(trace, false)
}

/// Pushes a staging trace and makes it the dynamic trace until the guard
/// drops: every `bind` reaches it, so a control-flow body is staged even
/// where it computes only on constants.
pub fn new_dynamic_main(trace: Box<dyn Trace>) -> MainGuard {
    push(trace, true)
}

fn push(trace: Box<dyn Trace>, dynamic: bool) -> MainGuard {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        let main = Arc::new(MainTrace {
            level: s.mains.len(),
            stack_id: s.id,
            active: AtomicBool::new(true),
            trace,
        });
        s.mains.push(main.clone());
        let prev_dynamic = dynamic.then(|| std::mem::replace(&mut s.dynamic, main.clone()));
        MainGuard {
            main,
            restore: Restore::Pop { prev_dynamic },
        }
    })
}

/// Installs a fresh stack whose base and dynamic trace is `trace`, until the
/// guard drops. The previous stack is suspended: its tracers are constants
/// as seen from the new one.
pub fn new_base_main(trace: Box<dyn Trace>) -> MainGuard {
    let fresh = fresh_stack(trace);
    let main = fresh.mains[0].clone();
    let saved = STACK.with(|s| std::mem::replace(&mut *s.borrow_mut(), fresh));
    MainGuard {
        main,
        restore: Restore::Stack(Some(saved)),
    }
}

/// The base of the current stack (an `EvalTrace` outside `jit`).
pub fn base_main() -> Arc<MainTrace> {
    STACK.with(|s| s.borrow().mains[0].clone())
}

/// The current dynamic trace.
pub fn dynamic_main() -> Arc<MainTrace> {
    STACK.with(|s| s.borrow().dynamic.clone())
}

/// The mains of the current stack, base first: lets a transformation find
/// an enclosing level of its own kind (e.g. the `vmap` of a named axis).
pub fn current_mains() -> Vec<Arc<MainTrace>> {
    STACK.with(|s| s.borrow().mains.clone())
}

/// The number of mains on the current stack.
pub fn stack_depth() -> usize {
    STACK.with(|s| s.borrow().mains.len())
}

/// Checks that a tracer may still be used.
pub(crate) fn check_live(t: &TracerRef) -> Result<()> {
    if t.main().is_active() {
        Ok(())
    } else {
        Err(Error::UnexpectedTracer(format!(
            "a tracer of type {} from a {} trace that has finished was used. \
             It escaped the function being transformed (stored in a variable, \
             a static or a closure that outlived the trace); return it as an \
             output instead",
            jaxon_ir::shape::fmt_aval(t.aval()),
            t.main().trace().name()
        )))
    }
}

/// The trace that must process a primitive on `args`: the highest-level
/// main among the operands' mains on the current stack and the dynamic one.
pub fn find_top_trace(args: &[Array]) -> Result<Arc<MainTrace>> {
    STACK.with(|s| {
        let s = s.borrow();
        let mut top = &s.dynamic;
        for a in args {
            if let Some(t) = a.as_tracer() {
                check_live(t)?;
                let m = t.main();
                if m.stack_id == s.id && m.level > top.level {
                    top = m;
                }
            }
        }
        Ok(top.clone())
    })
}

/// Raises `x` into `main`: its own tracers pass through, anything below is
/// lifted.
pub fn full_raise(main: &Arc<MainTrace>, x: &Array) -> Result<Array> {
    match x.as_tracer() {
        None => main.trace().lift(main, x),
        Some(t) => {
            if Arc::ptr_eq(t.main(), main) {
                return Ok(x.clone());
            }
            check_live(t)?;
            let m = t.main();
            if m.stack_id == main.stack_id && m.level > main.level {
                return Err(Error::UnexpectedTracer(format!(
                    "a {} tracer (level {}) reached the {} trace below it (level {})",
                    m.trace().name(),
                    m.level,
                    main.trace().name(),
                    main.level
                )));
            }
            main.trace().lift(main, x)
        }
    }
}

/// Applies a primitive to operands: the central dispatch of every operation.
pub fn bind(primitive: &Primitive, args: &[Array]) -> Result<Vec<Array>> {
    let top = find_top_trace(args)?;
    let raised = args
        .iter()
        .map(|a| full_raise(&top, a))
        .collect::<Result<Vec<_>>>()?;
    top.trace().process_primitive(&top, primitive, &raised)
}

/// [`bind`] for a primitive with exactly one result.
pub fn bind1(primitive: &Primitive, args: &[Array]) -> Result<Array> {
    let mut outs = bind(primitive, args)?;
    match outs.len() {
        1 => Ok(outs.pop().expect("one result")),
        n => Err(Error::InvalidArgument(format!(
            "{} returned {n} results where one was expected",
            primitive.name()
        ))),
    }
}
