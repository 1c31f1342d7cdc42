//! Params of the collectives over named axes (of a `vmap` or of a
//! `shard_map`'s mesh): `psum`, `pmax`, `pmin`, `all_gather`,
//! `axis_index`, and the mesh-only `ppermute`, `all_to_all`,
//! `reduce_scatter` (`psum_scatter`), `pvary`, `psum_invariant`.
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
    /// `ppermute[axis_name perm] x`: member `dst` receives member `src`'s
    /// `x` for each `(src, dst)` of `perm`; members no pair sends to get zeros.
    Ppermute(PpermuteParams),
    /// `all_to_all[axis_index_groups=None axis_name concat_axis split_axis
    /// tiled] x`: `x` split into `n` chunks along `split_axis`, chunk `j`
    /// sent to member `j`, the received chunks concatenated along
    /// `concat_axis` in member order.
    AllToAll(AllToAllParams),
    /// `reduce_scatter[axis_index_groups=None axis_name axis_size
    /// scatter_dimension tiled] x` (`psum_scatter`): the sum over the
    /// members, of which member `i` keeps block `i` along
    /// `scatter_dimension` (untiled: that dimension, of size `n`, removed).
    ReduceScatter(ReduceScatterParams),
    /// `pvary[axes] x`: the identity on values; marks `x` as varying over
    /// the axes (`check_vma=True`).
    Pvary(PvaryParams),
    /// `psum_invariant[axes] x`: `psum` whose result is invariant over the
    /// axes (`check_vma=True`).
    PsumInvariant(PsumInvariantParams),
}

impl Collective {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Collective::AllReduce(p) => p.op.name(),
            Collective::AllGather(_) => "all_gather",
            Collective::AxisIndex(_) => "axis_index",
            Collective::Ppermute(_) => "ppermute",
            Collective::AllToAll(_) => "all_to_all",
            Collective::ReduceScatter(_) => "reduce_scatter",
            Collective::Pvary(_) => "pvary",
            Collective::PsumInvariant(_) => "psum_invariant",
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

/// The params of `ppermute`.
#[derive(Clone, Debug, PartialEq)]
pub struct PpermuteParams {
    /// The named axes (the permuted index is over their product).
    pub axis_name: Vec<String>,
    /// `(source, destination)` index pairs; each source and each
    /// destination at most once.
    pub perm: Vec<(usize, usize)>,
}

/// The params of `all_to_all`.
#[derive(Clone, Debug, PartialEq)]
pub struct AllToAllParams {
    /// The named axes (printed bare when there is one: `axis_name=x`).
    pub axis_name: Vec<String>,
    /// Whether JAX printed the names as a tuple.
    pub name_tuple: bool,
    /// The dimension split into chunks.
    pub split_axis: usize,
    /// The dimension the received chunks are concatenated along.
    pub concat_axis: usize,
    /// JAX's `tiled` flag (the primitive's shapes are the same either way).
    pub tiled: bool,
    /// The number of members; not printed, read from the types when
    /// parsing (`split_axis` shrinks by it), `None` when they do not show it.
    pub axis_size: Option<usize>,
}

/// The params of `reduce_scatter`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceScatterParams {
    /// The named axes.
    pub axis_name: Vec<String>,
    /// The number of members.
    pub axis_size: usize,
    /// The scattered dimension.
    pub scatter_dimension: usize,
    /// Keep the scattered dimension (split in blocks) instead of removing it.
    pub tiled: bool,
}

/// The params of `pvary`: `axes=('x',)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PvaryParams {
    /// The named axes.
    pub axes: Vec<String>,
}

/// The params of `psum_invariant`: `axes=('x',)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PsumInvariantParams {
    /// The named axes summed over.
    pub axes: Vec<String>,
}
