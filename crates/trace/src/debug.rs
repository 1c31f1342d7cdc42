//! `jax.debug`: printing and host callbacks that run wherever the program
//! runs: eagerly, under `jit` (the CPU backend calls back into Rust with
//! host arrays), under `vmap` (once per batch element, in order) and under
//! `jvp`/`grad` (the primal values; no tangent contribution).
//!
//! ```
//! use jaxon_trace::error::ok_or_raise;
//! use jaxon_trace::{debug, jit, Array};
//! let (y, text) = debug::capture_output(|| {
//!     let f = jit(|x: Array| {
//!         ok_or_raise(debug::print("x={}", &[&x]));
//!         &x + &x
//!     });
//!     f.call(Array::from_vec(vec![1.0f32, 2.5], &[2]))
//! });
//! assert_eq!(y.unwrap().to_vec::<f32>(), vec![2.0, 5.0]);
//! assert_eq!(text, "x=[1.  2.5]\n");
//! ```

use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
use jaxon_ir::primitive::{DebugCallbackParams, DebugPrintParams, HostCallback};
use jaxon_ir::{HostArray, Primitive};
use std::sync::Arc;

/// The function repr JAX prints for `jax.debug.callback`'s callback.
const DEBUG_CALLBACK_TEXT: &str =
    "<function debug_callback.<locals>._debug_callback.<locals>._flat_callback at 0xXXXXXXXXXXXX>";

/// `jax.debug.print(fmt, *args)`: prints `fmt` with its `{}` / `{0}`
/// placeholders replaced by the operands as NumPy prints them, when the
/// program runs (not when it is traced).
pub fn print(fmt: &str, args: &[&Array]) -> Result<()> {
    print_with(fmt, args, &[], false)
}

/// `jax.debug.print(fmt, *args, ordered=ordered, **kwargs)`: positional
/// operands for `{}`/`{0}`, keyword ones for `{name}`. `ordered` is
/// recorded (JAX's `OrderedDebug` effect); every print on one thread runs
/// in program order here.
pub fn print_with(
    fmt: &str,
    args: &[&Array],
    kwargs: &[(&str, &Array)],
    ordered: bool,
) -> Result<()> {
    let mut kw: Vec<(&str, &Array)> = kwargs.to_vec();
    kw.sort_by(|a, b| a.0.cmp(b.0));
    if let Some(w) = kw.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::InvalidArgument(format!(
            "debug.print: keyword argument `{}` given twice",
            w[0].0
        )));
    }
    let names: Vec<String> = kw.iter().map(|(n, _)| n.to_string()).collect();
    let params = DebugPrintParams::new(fmt, args.len(), &names, ordered);
    let mut operands: Vec<Array> = args.iter().map(|a| (*a).clone()).collect();
    operands.extend(kw.iter().map(|(_, a)| (*a).clone()));
    bind(&Primitive::from(params), &operands)?;
    Ok(())
}

/// `jax.debug.callback(f, *args)`: calls `f` with the operands' values as
/// host arrays when the program runs (under `vmap`, once per batch
/// element). An `Err` from `f` fails the program with its message.
pub fn callback<F>(f: F, args: &[&Array]) -> Result<()>
where
    F: Fn(&[HostArray]) -> std::result::Result<(), String> + Send + Sync + 'static,
{
    callback_with(f, args, false)
}

/// [`callback`] with JAX's `ordered=` (the `OrderedDebug` effect).
pub fn callback_with<F>(f: F, args: &[&Array], ordered: bool) -> Result<()>
where
    F: Fn(&[HostArray]) -> std::result::Result<(), String> + Send + Sync + 'static,
{
    let func: jaxon_ir::primitive::HostFn = Arc::new(move |xs: &[HostArray]| {
        f(xs)?;
        Ok(Vec::new())
    });
    let params = DebugCallbackParams {
        callback: HostCallback::new(DEBUG_CALLBACK_TEXT, func),
        effect: if ordered { "OrderedDebug" } else { "Debug" }.into(),
        partitioned: false,
    };
    let operands: Vec<Array> = args.iter().map(|a| (*a).clone()).collect();
    bind(&Primitive::from(params), &operands)?;
    Ok(())
}

/// Runs `f` with this thread's debug output captured instead of printed;
/// returns `f`'s result and the captured text.
pub fn capture_output<R>(f: impl FnOnce() -> R) -> (R, String) {
    jaxon_ir::interp::ops::callback::capture_debug_output(f)
}
