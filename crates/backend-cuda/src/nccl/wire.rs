//! How a jaxon dtype travels through NCCL, and the argument checks every
//! collective makes before it queues anything. Pure functions: tested on
//! any machine.
//!
//! Invariants:
//! - Data movement (gather, broadcast, send/recv) carries any dtype as
//!   bytes (`ncclUint8`, `size_bytes` per element): nothing is converted.
//! - Reductions use NCCL's own type for the dtype; complex dtypes reduce as
//!   pairs of their real type (sum and mean only), `bool` as `u8` (max is
//!   `or`, min is `and`). A dtype or operation NCCL cannot reduce is an
//!   error, decided here and nowhere else.

use crate::error::{CudaError, Result};
use cudarc::nccl::sys::{ncclDataType_t as T, ncclRedOp_t};
use jaxon_ir::DType;

/// A reduction of a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum (`psum`).
    Sum,
    /// The product.
    Prod,
    /// The maximum (`pmax`).
    Max,
    /// The minimum (`pmin`).
    Min,
    /// The mean (`pmean`): NCCL's `ncclAvg`, floating and complex dtypes
    /// only, as jaxon's `pmean` of an integer is an error.
    Mean,
}

impl ReduceOp {
    pub(crate) fn nccl(self) -> ncclRedOp_t {
        match self {
            ReduceOp::Sum => ncclRedOp_t::ncclSum,
            ReduceOp::Prod => ncclRedOp_t::ncclProd,
            ReduceOp::Max => ncclRedOp_t::ncclMax,
            ReduceOp::Min => ncclRedOp_t::ncclMin,
            ReduceOp::Mean => ncclRedOp_t::ncclAvg,
        }
    }
}

/// The NCCL type a dtype moves as, and how many of those make one element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wire {
    pub ty: T,
    pub per_element: usize,
}

pub(crate) fn error(op: &str, message: impl Into<String>) -> CudaError {
    CudaError::Collective {
        op: op.to_string(),
        message: message.into(),
    }
}

/// The wire type of a data-movement collective: bytes.
pub(crate) fn moved(dtype: DType) -> Wire {
    Wire {
        ty: T::ncclUint8,
        per_element: dtype.size_bytes(),
    }
}

/// The wire type that reduces `dtype` with `op`, or why there is none.
pub(crate) fn reduced(op: &str, dtype: DType, red: ReduceOp) -> Result<Wire> {
    let native = |ty| Ok(Wire { ty, per_element: 1 });
    let float = |ty| Ok(Wire { ty, per_element: 1 });
    let pairs = |ty| {
        match red {
        ReduceOp::Sum | ReduceOp::Mean => Ok(Wire { ty, per_element: 2 }),
        _ => Err(error(
            op,
            format!("{red:?} of {dtype}: complex numbers are not ordered and NCCL has no complex product"),
        )),
    }
    };
    let integer = |ty| match red {
        ReduceOp::Mean => Err(error(
            op,
            format!(
                "Mean of {dtype}: the mean of integers is not an integer (cast to a float first)"
            ),
        )),
        _ => native(ty),
    };
    match dtype {
        DType::Bool => match red {
            ReduceOp::Max | ReduceOp::Min => native(T::ncclUint8),
            _ => Err(error(
                op,
                format!("{red:?} of bool: only Max (or) and Min (and) reduce booleans"),
            )),
        },
        DType::I8 => integer(T::ncclInt8),
        DType::U8 => integer(T::ncclUint8),
        DType::I32 => integer(T::ncclInt32),
        DType::U32 => integer(T::ncclUint32),
        DType::I64 => integer(T::ncclInt64),
        DType::U64 => integer(T::ncclUint64),
        DType::F16 => float(T::ncclFloat16),
        DType::BF16 => float(T::ncclBfloat16),
        DType::F32 => float(T::ncclFloat32),
        DType::F64 => float(T::ncclFloat64),
        DType::C64 => pairs(T::ncclFloat32),
        DType::C128 => pairs(T::ncclFloat64),
        DType::I16 | DType::U16 => Err(error(
            op,
            format!("NCCL has no 16-bit integer type to reduce {dtype} (cast to i32 first)"),
        )),
        DType::KeyFry => Err(error(op, "PRNG keys cannot be reduced")),
    }
}

/// Checks that there is one buffer per local rank, all of one dtype and
/// length; returns them.
pub(crate) fn uniform(
    op: &str,
    buffers: &[(DType, usize)],
    local: usize,
) -> Result<(DType, usize)> {
    if buffers.len() != local {
        return Err(error(
            op,
            format!(
                "the communicator has {local} local rank(s) and takes one buffer each, but {} were given",
                buffers.len()
            ),
        ));
    }
    let Some(&(dtype, len)) = buffers.first() else {
        return Err(error(op, "the communicator has no local rank"));
    };
    for (i, &(d, n)) in buffers.iter().enumerate() {
        if d != dtype || n != len {
            return Err(error(
                op,
                format!(
                    "local rank {i}'s buffer is {n} x {d}, but local rank 0's is {len} x {dtype}: \
                     every rank must give the same dtype and length"
                ),
            ));
        }
    }
    Ok((dtype, len))
}

/// The length of each rank's share when `len` elements are split over
/// `size` ranks.
pub(crate) fn share(op: &str, len: usize, size: usize) -> Result<usize> {
    if size == 0 || !len.is_multiple_of(size) {
        return Err(error(
            op,
            format!("{len} elements do not split evenly over {size} rank(s)"),
        ));
    }
    Ok(len / size)
}

/// Checks a rank number against the communicator's size.
pub(crate) fn rank(op: &str, what: &str, r: usize, size: usize) -> Result<()> {
    if r >= size {
        return Err(error(
            op,
            format!("{what} {r} is out of range for a communicator of {size} rank(s)"),
        ));
    }
    Ok(())
}

/// Checks that `perm`'s pairs `(source, destination)` form a partial
/// permutation of `0..size`, as `ppermute` requires.
pub(crate) fn permutation(perm: &[(usize, usize)], size: usize) -> Result<()> {
    let mut src = vec![false; size];
    let mut dst = vec![false; size];
    for &(s, d) in perm {
        rank("ppermute", "source rank", s, size)?;
        rank("ppermute", "destination rank", d, size)?;
        if std::mem::replace(&mut src[s], true) {
            return Err(error("ppermute", format!("rank {s} is a source twice")));
        }
        if std::mem::replace(&mut dst[d], true) {
            return Err(error(
                "ppermute",
                format!("rank {d} is a destination twice"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_either_moves_or_reduces_or_says_why() {
        let all = [
            DType::Bool,
            DType::I8,
            DType::I16,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::U16,
            DType::U32,
            DType::U64,
            DType::F16,
            DType::BF16,
            DType::F32,
            DType::F64,
            DType::C64,
            DType::C128,
            DType::KeyFry,
        ];
        for d in all {
            assert_eq!(moved(d).per_element, d.size_bytes());
            for red in [
                ReduceOp::Sum,
                ReduceOp::Prod,
                ReduceOp::Max,
                ReduceOp::Min,
                ReduceOp::Mean,
            ] {
                match reduced("all_reduce", d, red) {
                    Ok(w) => assert!(matches!(w.per_element, 1 | 2), "{d} {red:?}"),
                    Err(CudaError::Collective { op, message }) => {
                        assert_eq!(op, "all_reduce");
                        assert!(!message.is_empty());
                    }
                    Err(e) => panic!("{d} {red:?}: {e}"),
                }
            }
        }
        assert_eq!(
            reduced("r", DType::BF16, ReduceOp::Sum).map(|w| w.ty),
            Ok(T::ncclBfloat16)
        );
        assert_eq!(
            reduced("r", DType::C64, ReduceOp::Mean),
            Ok(Wire {
                ty: T::ncclFloat32,
                per_element: 2
            })
        );
        assert!(reduced("r", DType::C128, ReduceOp::Max).is_err());
        assert!(reduced("r", DType::I32, ReduceOp::Mean).is_err());
        assert!(reduced("r", DType::I16, ReduceOp::Sum).is_err());
        assert!(reduced("r", DType::Bool, ReduceOp::Sum).is_err());
        assert_eq!(
            reduced("r", DType::Bool, ReduceOp::Max).map(|w| w.ty),
            Ok(T::ncclUint8)
        );
        assert!(reduced("r", DType::KeyFry, ReduceOp::Max).is_err());
    }

    #[test]
    fn argument_checks() {
        assert_eq!(
            uniform("g", &[(DType::F32, 4), (DType::F32, 4)], 2),
            Ok((DType::F32, 4))
        );
        assert!(uniform("g", &[(DType::F32, 4)], 2).is_err());
        assert!(uniform("g", &[(DType::F32, 4), (DType::F32, 5)], 2).is_err());
        assert!(uniform("g", &[(DType::F32, 4), (DType::F64, 4)], 2).is_err());
        assert!(uniform("g", &[], 0).is_err());
        assert_eq!(share("rs", 12, 3), Ok(4));
        assert!(share("rs", 10, 3).is_err());
        assert!(share("rs", 10, 0).is_err());
        assert!(rank("b", "root", 2, 2).is_err());
        assert!(rank("b", "root", 1, 2).is_ok());
        assert!(permutation(&[(0, 1), (1, 0)], 2).is_ok());
        assert!(permutation(&[(0, 0)], 1).is_ok());
        assert!(permutation(&[], 3).is_ok());
        assert!(permutation(&[(0, 1), (0, 2)], 3).is_err());
        assert!(permutation(&[(0, 1), (2, 1)], 3).is_err());
        assert!(permutation(&[(0, 3)], 3).is_err());
    }
}
