//! `jax.scipy`: the parts jaxon provides (`linalg`, `special`, `stats`).

pub mod linalg;
mod linalg_more;
pub mod special;
pub mod stats;
