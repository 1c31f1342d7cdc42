//! `jax.scipy`: the parts jaxon provides (`linalg`, `special`, `stats`).

pub mod linalg;
pub mod special;
pub mod stats;
