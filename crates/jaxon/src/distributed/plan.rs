//! What a collective over processes does, independent of the transport:
//! its kind, its leaves, the signature the processes compare before moving
//! data, and its meaning for a group of one.
//!
//! Invariant: two processes whose plans have equal [`Plan::signature`]s
//! move buffers of equal lengths and dtypes, so the transport can size
//! every receive buffer from its own plan.

use crate::{Error, Result};
use jaxon_ir::{DType, HostArray};
use std::hash::{Hash, Hasher};

/// The reduction of an all-reduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ReduceOp {
    /// `psum`.
    Sum,
    /// `pmax`.
    Max,
    /// `pmin`.
    Min,
    /// `pmean`: the sum divided by the number of processes.
    Mean,
}

impl ReduceOp {
    /// An error for dtypes the reduction does not apply to: bool and keys
    /// have no sum, complex numbers no order.
    pub(crate) fn check(self, dtype: DType, name: &str) -> Result<()> {
        let bad = match self {
            ReduceOp::Sum => dtype.is_bool() || dtype.is_key(),
            ReduceOp::Max | ReduceOp::Min => dtype.is_complex() || dtype.is_key(),
            ReduceOp::Mean => !dtype.is_inexact(),
        };
        if bad {
            return Err(Error::InvalidArgument(format!(
                "distributed::{name}: a leaf of dtype {dtype} cannot be reduced this way{}",
                if self == ReduceOp::Mean {
                    " (pmean needs floating or complex leaves)"
                } else {
                    ""
                }
            )));
        }
        Ok(())
    }
}

/// The kind of a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Every leaf reduced elementwise over the processes.
    Reduce(ReduceOp),
    /// Every leaf stacked over the processes.
    Gather,
    /// The root's leaves on every process.
    Broadcast(usize),
}

/// One collective call on this process.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) kind: Kind,
    pub(crate) leaves: Vec<HostArray>,
}

impl Plan {
    pub(crate) fn reduce(leaves: Vec<HostArray>, op: ReduceOp) -> Plan {
        Plan {
            kind: Kind::Reduce(op),
            leaves,
        }
    }

    pub(crate) fn gather(leaves: Vec<HostArray>) -> Plan {
        Plan {
            kind: Kind::Gather,
            leaves,
        }
    }

    pub(crate) fn broadcast(leaves: Vec<HostArray>, root: usize) -> Plan {
        Plan {
            kind: Kind::Broadcast(root),
            leaves,
        }
    }

    /// A hash of the kind and every leaf's dtype and shape (FNV-1a, so
    /// that every build and process computes the same value).
    // Only the MPI transport compares signatures.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn signature(&self) -> u64 {
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        self.kind.hash(&mut h);
        self.leaves.len().hash(&mut h);
        for l in &self.leaves {
            l.dtype().short_name().hash(&mut h);
            l.shape().hash(&mut h);
        }
        h.0
    }

    /// A readable summary for error messages: the kind and the leaf types.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn describe(&self) -> String {
        let leaves: Vec<String> = self
            .leaves
            .iter()
            .map(|l| format!("{}{:?}", l.dtype().short_name(), l.shape()))
            .collect();
        format!("{:?} of [{}]", self.kind, leaves.join(", "))
    }

    /// The result in a group of one process.
    pub(crate) fn alone(self) -> Result<Vec<HostArray>> {
        match self.kind {
            Kind::Reduce(_) | Kind::Broadcast(_) => Ok(self.leaves),
            Kind::Gather => self.leaves.into_iter().map(|l| stack(vec![l])).collect(),
        }
    }
}

/// `parts` (of equal dtype and shape) stacked along a new leading axis.
pub(crate) fn stack(parts: Vec<HostArray>) -> Result<HostArray> {
    let n = parts.len();
    let mut shape = vec![n];
    shape.extend_from_slice(parts.first().map_or(&[][..], HostArray::shape));
    let dtype = parts.first().map_or(DType::F32, HostArray::dtype);
    let bytes: Vec<u8> = parts.iter().flat_map(HostArray::to_le_bytes).collect();
    Ok(HostArray::from_le_bytes(dtype, &shape, &bytes)?)
}

/// 64-bit FNV-1a.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}
