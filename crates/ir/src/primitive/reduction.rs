//! The reduction family of primitives and their params.

use super::*;

/// Reductions over axes: sums and extrema, arg-reductions, cumulative scans along one axis, sorts and top-k.
///
/// Family invariant: no member holds a jaxpr or touches a `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum Reduction {
    /// `reduce_sum[axes out_sharding]`, `reduce_max[axes]`, ...
    Reduce(ReduceParams),
    /// `argmax[axes index_dtype]`, `argmin[...]` (first index on ties; NaN wins).
    ArgReduce(ArgReduceParams),
    /// `cumsum[axis reverse]`, ...
    Cumulative(CumulativeParams),
    /// `sort[dimension is_stable num_keys] *operands`: sorts all operands by
    /// the first `num_keys` (lexicographically).
    Sort(SortParams),
    /// `top_k[axis k]`: values and i32 indices of the `k` largest.
    TopK(TopKParams),
}

impl Reduction {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Reduction::Reduce(p) => p.op.name(),
            Reduction::ArgReduce(p) => p.op.name(),
            Reduction::Cumulative(p) => p.op.name(),
            Reduction::Sort(_) => "sort",
            Reduction::TopK(_) => "top_k",
        }
    }
}

/// The params of the `Reduce` primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceParams {
    /// Which reduction.
    pub op: ReduceOp,
    /// Reduced axes.
    pub axes: Vec<usize>,
    /// Per axis, whether JAX printed it `np.int64(..)` (empty: none did);
    /// only the text depends on it.
    pub np_int64: Vec<bool>,
    /// `reduce_sum`'s `out_sharding` (`None`, or inside a `shard_map` a
    /// `NamedSharding` over the abstract mesh); the values do not depend on it.
    pub out_sharding: Option<NamedSharding>,
}

impl ReduceParams {
    /// The reduction `op` over `axes`, printed as plain ints.
    pub fn new(op: ReduceOp, axes: Vec<usize>) -> ReduceParams {
        ReduceParams {
            op,
            axes,
            np_int64: Vec::new(),
            out_sharding: None,
        }
    }
}

/// The params of the `ArgReduce` primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgReduceParams {
    /// Which.
    pub op: ArgOp,
    /// The (single) axis.
    pub axes: Vec<usize>,
    /// Result dtype.
    pub index_dtype: DType,
}

/// The params of the `Cumulative` primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct CumulativeParams {
    /// Which.
    pub op: CumulativeOp,
    /// The axis.
    pub axis: usize,
    /// Accumulate from the end.
    pub reverse: bool,
}

/// The params of `sort`.
#[derive(Clone, Debug, PartialEq)]
pub struct SortParams {
    /// The axis.
    pub dimension: usize,
    /// Stable sort.
    pub is_stable: bool,
    /// Number of leading key operands.
    pub num_keys: usize,
}

/// The params of `top_k`.
#[derive(Clone, Debug, PartialEq)]
pub struct TopKParams {
    /// How many.
    pub k: usize,
    /// The axis (last by default).
    pub axis: usize,
}
