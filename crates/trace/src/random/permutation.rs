//! `permutation`: random shuffles by repeated stable sorts on fresh random
//! 32-bit keys (JAX's `_shuffle`), enough rounds that key collisions are
//! unlikely to bias the result.

use super::threefry::random_bits;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::numpy::{arange, normalize_axis};
use crate::{lax, random};
use jaxon_ir::shape::fmt_aval;

/// What [`permutation`] shuffles: a length `n` (meaning `arange(n)`) or
/// an array.
pub trait Permutable {
    /// The array to shuffle.
    fn to_array(&self) -> Result<Array>;
}

impl Permutable for usize {
    fn to_array(&self) -> Result<Array> {
        arange(*self)
    }
}

impl Permutable for Array {
    fn to_array(&self) -> Result<Array> {
        if self.ndim() == 0 {
            return Err(Error::InvalidArgument(format!(
                "permutation: x must be an integer or at least 1-dimensional, got {}",
                fmt_aval(self.aval())
            )));
        }
        Ok(self.clone())
    }
}

impl Permutable for &Array {
    fn to_array(&self) -> Result<Array> {
        (*self).to_array()
    }
}

/// The number of sort rounds for `n` items: `ceil(3 ln n / ln(2**32 - 1))`.
fn num_rounds(n: usize) -> usize {
    (3.0 * (n.max(1) as f64).ln() / (u32::MAX as f64).ln()).ceil() as usize
}

/// Shuffles `x` along `axis` by sorting on random keys: one key per element
/// (each line shuffled on its own), or with `whole_slices` one key per index
/// of `axis`, broadcast so whole slices move together. The round count
/// follows the number of keys, as JAX's does.
fn shuffle(key: &Array, x: &Array, axis: usize, whole_slices: bool) -> Result<Array> {
    let shape = x.try_shape()?;
    let (key_shape, n) = if whole_slices {
        (vec![shape[axis]], shape[axis])
    } else {
        (shape.clone(), shape.iter().product())
    };
    let mut key = key.clone();
    let mut x = x.clone();
    for _ in 0..num_rounds(n) {
        let (next, sub) = random::split2(&key)?;
        key = next;
        let mut sort_keys = random_bits(&sub, 32, &key_shape)?;
        if whole_slices {
            sort_keys = lax::broadcast_in_dim(&sort_keys, &shape, &[axis])?;
        }
        let mut outs = lax::sort(&[sort_keys, x], axis, true, 1)?;
        x = outs.pop().expect("two sort results");
    }
    Ok(x)
}

/// `jax.random.permutation(key, x)`: a shuffled `arange(n)` for `n: usize`,
/// or `x` with its slices along axis 0 shuffled.
pub fn permutation(key: &Array, x: impl Permutable) -> Result<Array> {
    permutation_along(key, x, 0, false)
}

/// `jax.random.permutation(key, x, axis, independent)`: shuffles along
/// `axis`; with `independent`, each 1-D line along `axis` gets its own
/// shuffle, otherwise whole slices move together.
pub fn permutation_along(
    key: &Array,
    x: impl Permutable,
    axis: isize,
    independent: bool,
) -> Result<Array> {
    random::threefry::key_halves(key, "permutation")?;
    let x = x.to_array()?;
    let axis = normalize_axis(axis, x.ndim(), "permutation")?;
    // JAX sorts `arange(n)` and gathers for whole slices; sorting `x` by
    // the same keys broadcast over the other axes is the same permutation.
    shuffle(&key.clone(), &x, axis, !independent && x.ndim() > 1)
}
