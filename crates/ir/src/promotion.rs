//! JAX's type-promotion lattice with weak types: `promote_types` and
//! `result_type`.

use crate::dtype::DType;

/// The least upper bound of two (strong) dtypes in JAX's lattice.
pub fn promote_types(a: DType, b: DType) -> DType {
    // Placeholder until the lattice lands: strong equal types only.
    if a == b {
        a
    } else {
        a.max(b)
    }
}

/// The result dtype and weak flag of combining `(dtype, weak)` operands.
pub fn result_type(args: &[(DType, bool)]) -> Option<(DType, bool)> {
    let mut it = args.iter().copied();
    let first = it.next()?;
    Some(it.fold(first, |(d, w), (e, v)| (promote_types(d, e), w && v)))
}
