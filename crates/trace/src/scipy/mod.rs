//! `jax.scipy`: the parts jaxon provides.

pub mod linalg;
