//! The indexing family of primitives and their params.

use super::*;

/// Indexing primitives: static and dynamic slices, gathers and scatters.
///
/// Family invariant: no member touches a `Ref`; only a combining `scatter` holds a jaxpr (its scalar combiner).
#[derive(Clone, Debug, PartialEq)]
pub enum Indexing {
    /// `slice[start_indices limit_indices strides]`.
    Slice(SliceParams),
    /// `dynamic_slice[slice_sizes] x *starts`: starts clamp into bounds.
    DynamicSlice(DynamicSliceParams),
    /// `dynamic_update_slice x update *starts`: starts clamp into bounds.
    DynamicUpdateSlice,
    /// `gather[...] operand indices`.
    Gather(GatherParams),
    /// `scatter`, `scatter-add`, ... `operand indices updates`.
    Scatter(ScatterParams),
}

impl Indexing {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Indexing::Slice(_) => "slice",
            Indexing::DynamicSlice(_) => "dynamic_slice",
            Indexing::DynamicUpdateSlice => "dynamic_update_slice",
            Indexing::Gather(_) => "gather",
            Indexing::Scatter(p) => p.kind.name(),
        }
    }
}

/// The params of `slice`.
#[derive(Clone, Debug, PartialEq)]
pub struct SliceParams {
    /// Starts.
    pub start_indices: Ints,
    /// Exclusive limits.
    pub limit_indices: Ints,
    /// Steps, or `None` for all ones.
    pub strides: Option<Ints>,
}

/// The params of `dynamic_slice`.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicSliceParams {
    /// Sizes of the slice.
    pub slice_sizes: Ints,
}

/// The params of `gather`.
#[derive(Clone, Debug, PartialEq)]
pub struct GatherParams {
    /// Dimension numbers.
    pub dimension_numbers: GatherDimensionNumbers,
    /// Fill for out-of-bounds windows in `FILL_OR_DROP` mode.
    pub fill_value: Option<FillValue>,
    /// Hint.
    pub indices_are_sorted: bool,
    /// Out-of-bounds behaviour.
    pub mode: GatherScatterMode,
    /// Window sizes.
    pub slice_sizes: Ints,
    /// Hint.
    pub unique_indices: bool,
}

/// The params of the `Scatter` primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterParams {
    /// Which combiner.
    pub kind: ScatterKind,
    /// Dimension numbers.
    pub dimension_numbers: ScatterDimensionNumbers,
    /// Hint.
    pub indices_are_sorted: bool,
    /// Out-of-bounds behaviour.
    pub mode: GatherScatterMode,
    /// Hint.
    pub unique_indices: bool,
    /// The scalar combiner jaxpr (`None` for plain `scatter`).
    pub update_jaxpr: Option<Arc<Jaxpr>>,
}

impl Indexing {
    /// The jaxprs in this primitive's params: only a combining scatter's
    /// `update_jaxpr`.
    pub fn param_jaxprs(&self) -> Vec<ParamJaxpr<'_>> {
        match self {
            Indexing::Scatter(p) => p
                .update_jaxpr
                .iter()
                .map(|j| at("update_jaxpr", NestedJaxpr::Open(j)))
                .collect(),
            Indexing::Slice(_)
            | Indexing::DynamicSlice(_)
            | Indexing::DynamicUpdateSlice
            | Indexing::Gather(_) => Vec::new(),
        }
    }

    /// The slots of [`Indexing::param_jaxprs`], mutably.
    pub fn param_jaxprs_mut(&mut self) -> Vec<NestedJaxprMut<'_>> {
        match self {
            Indexing::Scatter(p) => p
                .update_jaxpr
                .iter_mut()
                .map(NestedJaxprMut::Open)
                .collect(),
            Indexing::Slice(_)
            | Indexing::DynamicSlice(_)
            | Indexing::DynamicUpdateSlice
            | Indexing::Gather(_) => Vec::new(),
        }
    }
}
