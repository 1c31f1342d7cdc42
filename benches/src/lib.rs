//! Shared helpers for jaxon benchmarks.
