//! Running a jaxpr given as text, such as one JAX printed: parse it into a
//! [`ClosedJaxpr`] and call it on arrays like a function. A call binds the
//! jaxpr's equations, so it runs eagerly, traces under every
//! transformation, and compiles once inside [`jit`](crate::jit).
//!
//! ```
//! # fn main() -> jaxon::Result<()> {
//! use jaxon::{call_jaxpr, load_jaxpr, Array};
//!
//! let f = load_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }")?;
//! let y = call_jaxpr(&f, &[Array::from_vec(vec![0.0f32, 1.0, 2.0], &[3])])?;
//! assert!((y[0].to_vec::<f32>()[1] - 2.0 * 1f32.sin()).abs() < 1e-6);
//! # Ok(())
//! # }
//! ```

use crate::{Array, Error, Result};
use jaxon_ir::ClosedJaxpr;

/// Parses a closed jaxpr without constants, as `jax.make_jaxpr` prints
/// one; a syntax or type error names its line and column.
pub fn load_jaxpr(text: &str) -> Result<ClosedJaxpr> {
    jaxon_ir::parse_closed_jaxpr(text, Vec::new())
        .map_err(|e| Error::InvalidArgument(format!("jaxpr: {e}")))
}

/// Calls `jaxpr` on `args`, one per input, whose dtypes and (static)
/// shapes must be the inputs' own: a mismatch is an error naming both.
pub fn call_jaxpr(jaxpr: &ClosedJaxpr, args: &[Array]) -> Result<Vec<Array>> {
    let avals = jaxpr.jaxpr.in_avals();
    if avals.len() != args.len() {
        return Err(Error::InvalidArgument(format!(
            "call_jaxpr: the jaxpr takes {} inputs, got {} arguments",
            avals.len(),
            args.len()
        )));
    }
    for (i, (want, got)) in avals.iter().zip(args).enumerate() {
        let (w, g) = (want.array(), got.aval().array());
        let shapes_differ = match (w.static_sizes(), g.static_sizes()) {
            (Some(a), Some(b)) => a != b,
            _ => w.ndim() != g.ndim(),
        };
        if w.dtype != g.dtype || shapes_differ {
            return Err(Error::ShapeMismatch {
                op: format!("call_jaxpr input {i}"),
                lhs: jaxon_ir::shape::fmt_aval(want),
                rhs: jaxon_ir::shape::fmt_aval(got.aval()),
            });
        }
    }
    let consts: Vec<Array> = jaxpr.consts.iter().cloned().map(Array::from_host).collect();
    jaxon_trace::interpret::eval_jaxpr(&jaxpr.jaxpr, &consts, args)
}
