//! `scipy`: JAX's `jax.scipy` namespace; only `special` so far.

pub mod special;
