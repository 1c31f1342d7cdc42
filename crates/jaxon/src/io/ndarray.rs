//! Conversions between [`Array`] and `ndarray`'s arrays (feature
//! `ndarray`): row-major copies, in either direction, of any [`Element`]
//! type.
//!
//! ```
//! # fn main() -> jaxon::Result<()> {
//! use jaxon::io::ndarray::{from_ndarray, to_ndarray};
//! use ndarray::array;
//!
//! let m = array![[1.0f32, 2.0], [3.0, 4.0]];
//! let x = from_ndarray(&m.t())?; // a transposed view is copied in logical order
//! assert_eq!(x.to_vec::<f32>(), [1.0, 3.0, 2.0, 4.0]);
//! let back = to_ndarray::<f32>(&(&x * 2.0))?;
//! assert_eq!(back, array![[2.0f32, 6.0], [4.0, 8.0]].into_dyn());
//! # Ok(())
//! # }
//! ```

use crate::{Array, Element, Result};
use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

/// A copy of `a` as an `ndarray::ArrayD<T>`; an error for a tracer or when
/// `T` is not `a`'s dtype.
pub fn to_ndarray<T: Element>(a: &Array) -> Result<ArrayD<T>> {
    let data = a.try_to_vec::<T>()?;
    ArrayD::from_shape_vec(IxDyn(&a.shape()), data)
        .map_err(|e| crate::Error::InvalidArgument(format!("to_ndarray: {e}")))
}

/// A copy of any `ndarray` array or view (in its logical, row-major order)
/// as an [`Array`].
pub fn from_ndarray<T, S, D>(a: &ArrayBase<S, D>) -> Result<Array>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    Array::try_from_vec(a.iter().copied().collect(), a.shape())
}
