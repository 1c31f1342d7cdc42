//! `Error`, the user-facing error of tracing and execution, and the
//! raise/catch pair that lets infallible operators report user errors.
//!
//! Invariant: an `Error` raised with [`raise`] inside an entry point (a
//! [`catch`] on this thread) unwinds without printing (`resume_unwind` skips
//! the panic hook) and is turned back into a value by that [`catch`].
//! Raised outside any entry point (eager code in `main`), it is an ordinary
//! panic whose message is the error, printed by the panic hook. Any other
//! panic is a bug and keeps unwinding untouched.

use jaxon_ir::IrError;
use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The result type of jaxon's fallible operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while tracing, transforming or running a program.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// Operand shapes that do not fit together.
    #[error("{op}: incompatible shapes {lhs} and {rhs}")]
    ShapeMismatch {
        /// The operation.
        op: String,
        /// The first offending type.
        lhs: String,
        /// The second offending type.
        rhs: String,
    },
    /// Operand dtypes that do not fit together.
    #[error("{op}: incompatible dtypes {lhs} and {rhs}")]
    DTypeMismatch {
        /// The operation.
        op: String,
        /// The first offending type.
        lhs: String,
        /// The second offending type.
        rhs: String,
    },
    /// Rust control flow (or a host read) needed the value of a tracer.
    #[error(
        "concretization error: {op} needs a concrete value, but got a tracer of type {aval}. \
         The value is only known when the staged program runs; use lax::cond, \
         lax::while_loop or lax::fori_loop for control flow that depends on it, \
         or pass it as a static argument"
    )]
    Concretization {
        /// The operation that needed the value.
        op: String,
        /// The tracer's type.
        aval: String,
    },
    /// A tracer was used outside the transformation that created it.
    #[error("unexpected tracer: {0}")]
    UnexpectedTracer(String),
    /// A primitive, feature or backend that is not available.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A bad argument to an API function.
    #[error("{0}")]
    InvalidArgument(String),
    /// An error from the IR layer: a shape rule, the checker or a backend.
    #[error(transparent)]
    Ir(#[from] IrError),
}

thread_local! {
    /// How many [`catch`]es are running on this thread.
    static CATCH_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Whether a [`catch`] on this thread would receive a raised error.
pub fn inside_catch() -> bool {
    CATCH_DEPTH.with(|d| d.get() > 0)
}

/// Counts one running [`catch`]; the count drops when `f` returns or
/// unwinds.
struct CatchScope;

impl CatchScope {
    fn enter() -> CatchScope {
        CATCH_DEPTH.with(|d| d.set(d.get() + 1));
        CatchScope
    }
}

impl Drop for CatchScope {
    fn drop(&mut self) {
        CATCH_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Raises `e`. Inside an entry point (every one runs a [`catch`]) it unwinds
/// silently as a payload that the [`catch`] turns back into `Err(e)`.
/// Outside any entry point nothing would catch it, so it panics with the
/// error's message, which the panic hook prints (at the caller's location
/// where the callers are `#[track_caller]`, as Rust's operators are).
#[track_caller]
pub fn raise(e: Error) -> ! {
    if inside_catch() {
        resume_unwind(Box::new(e))
    }
    panic!("{e}")
}

/// Unwraps a result inside infallible user-facing code, raising the error.
#[track_caller]
pub fn ok_or_raise<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => raise(e),
    }
}

/// Runs `f`, turning a raised [`Error`] into `Err`. Other panics keep
/// unwinding: they are bugs, not user errors.
pub fn catch<R>(f: impl FnOnce() -> R) -> Result<R> {
    let scope = CatchScope::enter();
    let caught = catch_unwind(AssertUnwindSafe(f));
    drop(scope);
    match caught {
        Ok(r) => Ok(r),
        Err(payload) => match payload.downcast::<Error>() {
            Ok(e) => Err(*e),
            Err(other) => resume_unwind(other),
        },
    }
}

/// Like [`catch`] for a closure that itself returns a `Result`.
pub fn catch_flat<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    catch(f).and_then(|r| r)
}
