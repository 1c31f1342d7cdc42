//! Typed keys (`key<fry>` arrays), as `jax.random.key` makes them: each
//! function binds one random-family primitive (`random_seed`,
//! `random_unwrap`, `random_wrap`, `random_split`, `random_fold_in`,
//! `random_bits`), so it stages as JAX stages it; the bits equal the raw-key
//! functions' of `super`.

use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::{
    PrngImpl, RandomBitsParams, RandomFoldInParams, RandomSeedParams, RandomSplitParams,
    RandomUnwrapParams, RandomWrapParams,
};
use jaxon_ir::DType;

/// `jax.random.key(seed)`: a typed key `key<fry>[]` (the seed is wrapped
/// to 32 bits, as in JAX's default 32-bit mode).
pub fn typed_key(seed: u64) -> Result<Array> {
    let s = Array::scalar(seed as u32 as i32);
    bind1(
        &RandomSeedParams {
            impl_: PrngImpl::Fry,
        }
        .into(),
        &[s],
    )
}

/// `jax.random.key_data(keys)`: `key<fry>[...]` to `u32[..., 2]`.
pub fn key_data(keys: &Array) -> Result<Array> {
    bind1(&RandomUnwrapParams.into(), std::slice::from_ref(keys))
}

/// `jax.random.wrap_key_data(data)`: `u32[..., 2]` to `key<fry>[...]`.
pub fn wrap_key_data(data: &Array) -> Result<Array> {
    bind1(
        &RandomWrapParams {
            impl_: PrngImpl::Fry,
        }
        .into(),
        std::slice::from_ref(data),
    )
}

/// `jax.random.split(key, shape)` of typed keys: `key<fry>[*keys, *shape]`.
pub fn split_typed(keys: &Array, shape: &[usize]) -> Result<Array> {
    bind1(
        &RandomSplitParams {
            shape: shape.to_vec(),
        }
        .into(),
        std::slice::from_ref(keys),
    )
}

/// `jax.random.fold_in(key, data)` of typed keys; `data` is an integer
/// array, converted to `u32` (wrapping) as JAX does.
pub fn fold_in_typed(keys: &Array, data: &Array) -> Result<Array> {
    if !data.dtype().is_int() {
        return Err(Error::InvalidArgument(format!(
            "fold_in needs integer data, got {}",
            data.dtype()
        )));
    }
    let d = lax::convert_element_type(data, DType::U32, false)?;
    bind1(&RandomFoldInParams.into(), &[keys.clone(), d])
}

/// `jax.random.bits(key, shape, dtype)` of typed keys: unsigned bits of
/// `bit_width` (8, 16, 32, 64) and shape `[*keys, *shape]`.
pub fn bits_typed(keys: &Array, bit_width: u32, shape: &[usize]) -> Result<Array> {
    bind1(
        &RandomBitsParams {
            bit_width,
            shape: shape.to_vec(),
        }
        .into(),
        std::slice::from_ref(keys),
    )
}
