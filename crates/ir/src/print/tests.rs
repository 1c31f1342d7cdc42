//! Printer tests: exact JAX output for hand-built jaxprs.
