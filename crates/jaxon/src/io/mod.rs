//! Saving and loading arrays: pytrees as [safetensors] files, and (with
//! the `ndarray` feature) conversions to and from `ndarray::ArrayD`.
//!
//! A pytree's leaves are stored under their key paths, as
//! [`tree_leaves_with_path`](crate::pytree::tree_leaves_with_path) writes
//! them (`"0.w"`, `"layers.1.bias"`), so a file written from JAX with the
//! same naming (`keystr(path, simple=True, separator=".")`) loads into the
//! matching Rust structure, and the other way round.
//!
//! [safetensors]: https://huggingface.co/docs/safetensors

#[cfg(feature = "ndarray")]
pub mod ndarray;
mod safetensors;

pub use self::safetensors::{
    load_safetensors, read_safetensors, save_safetensors, write_safetensors,
};
