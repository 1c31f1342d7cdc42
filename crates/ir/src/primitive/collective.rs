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
