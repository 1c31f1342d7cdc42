//! `jax.scipy`: the parts jaxon provides (`linalg`, `special`).

pub mod linalg;
pub mod special;
