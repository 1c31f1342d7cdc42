//! Params of the collectives over named (`vmap`) axes: `psum`, `pmax`,
//! `pmin`, `all_gather` and `axis_index`.
//!
//! Invariant: a named axis is resolved by the batching rule of the `vmap`
//! of that name; after batching, JAX's jaxprs reduce over positional axes
//! (`psum[axes=(0,)]`), which is a plain reduction over array dims.

/// The reduction of an all-reduce collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveOp {
    /// `psum`.
    Sum,
    /// `pmax`.
    Max,
    /// `pmin`.
    Min,
}

impl CollectiveOp {
    /// Every op, once.
    pub const ALL: [CollectiveOp; 3] = [CollectiveOp::Sum, CollectiveOp::Max, CollectiveOp::Min];

    /// The primitive's printed name.
    pub fn name(self) -> &'static str {
        match self {
            CollectiveOp::Sum => "psum",
            CollectiveOp::Max => "pmax",
            CollectiveOp::Min => "pmin",
        }
    }
}

/// One entry of a collective's `axes`: a `vmap` axis name (`'i'`) or a
/// positional array dimension (`0`, after batching).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AxisRef {
    /// A named axis.
    Name(String),
    /// A dimension of the operand.
    Pos(usize),
}

impl AxisRef {
    /// The name, if this is a named axis.
    pub fn name(&self) -> Option<&str> {
        match self {
            AxisRef::Name(n) => Some(n),
            AxisRef::Pos(_) => None,
        }
    }

    /// The Python repr JAX prints: `'i'` or `0`.
    pub fn repr(&self) -> String {
        match self {
            AxisRef::Name(n) => format!("'{n}'"),
            AxisRef::Pos(p) => p.to_string(),
        }
    }
}

/// Collectives over named axes: all-reduces, all-gathers and the axis index.
///
/// Family invariant: no member holds a jaxpr or touches a `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum Collective {
    /// `psum`/`pmax`/`pmin[axes=(..) axis_index_groups=None] x`: the
    /// reduction over named `vmap` axes and positional dims of `x`.
    AllReduce(AllReduceParams),
    /// `all_gather[all_gather_dimension axis_index_groups=None axis_name
    /// axis_size tiled] x`: every member's `x` along a new dimension.
    AllGather(AllGatherParams),
    /// `axis_index[axis_name=i]`: this member's index along a named axis.
    AxisIndex(AxisIndexParams),
}

impl Collective {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Collective::AllReduce(p) => p.op.name(),
            Collective::AllGather(_) => "all_gather",
            Collective::AxisIndex(_) => "axis_index",
        }
    }
}

/// The params of the `AllReduce` primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct AllReduceParams {
    /// Which reduction.
    pub op: CollectiveOp,
    /// The axes reduced over.
    pub axes: Vec<AxisRef>,
}

/// The params of `all_gather`.
#[derive(Clone, Debug, PartialEq)]
pub struct AllGatherParams {
    /// The named axes gathered over (one, as JAX's vmap supports).
    pub axis_name: Vec<String>,
    /// Where the gathered dimension goes.
    pub all_gather_dimension: usize,
    /// The size of the named axis.
    pub axis_size: usize,
    /// Concatenate along `all_gather_dimension` instead of stacking.
    pub tiled: bool,
}

/// The params of `axis_index`.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisIndexParams {
    /// The named axis.
    pub axis_name: String,
}
