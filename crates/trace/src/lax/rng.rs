//! `lax.rng_bit_generator`: XLA's stateless bit generator on a raw key,
//! binding one `rng_bit_generator` equation, and `RandomAlgorithm`.
//!
//! Invariant: the dtype is checked here (JAX's `TypeError`), the key's type
//! by the shape rule; both come back as `Err`s naming the primitive.

use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
pub use jaxon_ir::primitive::RandomAlgorithm;
use jaxon_ir::primitive::RngBitGeneratorParams;
use jaxon_ir::{DType, Primitive};

/// `lax.rng_bit_generator(key, shape, dtype, algorithm)`: the new key and
/// uniformly random bits of `shape` and `dtype` (`U8`, `U16`, `U32` or
/// `U64`) from a `u32[4]` (or `u64[2]`) key, bit-identical to JAX on the
/// CPU (`RandomAlgorithm::Default` is XLA's CPU default, Philox).
///
/// Under `vmap` it follows JAX's batching rule: every member's bits come
/// from the first key of the batch.
pub fn rng_bit_generator(
    key: &Array,
    shape: &[usize],
    dtype: DType,
    algorithm: RandomAlgorithm,
) -> Result<(Array, Array)> {
    if !matches!(dtype, DType::U8 | DType::U16 | DType::U32 | DType::U64) {
        return Err(Error::InvalidArgument(format!(
            "rng_bit_generator: unsupported dtype {}: use uint8, uint16, uint32 or uint64",
            dtype.numpy_name()
        )));
    }
    let p = Primitive::from(RngBitGeneratorParams {
        algorithm,
        dtype,
        shape: shape.to_vec(),
    });
    let mut outs = bind(&p, std::slice::from_ref(key))?;
    let bits = outs.pop().expect("rng_bit_generator has two results");
    let new_key = outs.pop().expect("rng_bit_generator has two results");
    Ok((new_key, bits))
}
