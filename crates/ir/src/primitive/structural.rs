//! The structural family of primitives and their params.

use super::*;

/// Structural primitives: they move, copy or create elements without arithmetic (broadcasts, reshapes, transposes, pads, concatenations, iotas).
///
/// Family invariant: no member holds a jaxpr or touches a `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum Structural {
    /// `broadcast_in_dim[broadcast_dimensions shape sharding]`; `None` sizes
    /// are given by trailing dynamic-size operands.
    BroadcastInDim(BroadcastInDimParams),
    /// `reshape[dimensions new_sizes sharding]`.
    Reshape(ReshapeParams),
    /// `transpose[permutation]`.
    Transpose(TransposeParams),
    /// `squeeze[dimensions]`: removes size-1 dimensions.
    Squeeze(SqueezeParams),
    /// `rev[dimensions]`: reverses dimensions.
    Rev(RevParams),
    /// `pad[padding_config] x padding_value`: (low, high, interior) per dim;
    /// low/high may be negative.
    Pad(PadParams),
    /// `concatenate[dimension]`.
    Concatenate(ConcatenateParams),
    /// `iota[dimension dtype shape sharding]`.
    Iota(IotaParams),
    /// `split[axis sizes]`: one output per size.
    Split(SplitParams),
    /// `tile[reps]`.
    Tile(TileParams),
    /// `stack[axis]`: stacks equal-shaped operands along a new axis.
    Stack(StackParams),
    /// `empty2[dtype memory_space]`: an uninitialised scalar (grad jaxprs).
    Empty2(Empty2Params),
}

impl Structural {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Structural::BroadcastInDim(_) => "broadcast_in_dim",
            Structural::Reshape(_) => "reshape",
            Structural::Transpose(_) => "transpose",
            Structural::Squeeze(_) => "squeeze",
            Structural::Rev(_) => "rev",
            Structural::Pad(_) => "pad",
            Structural::Concatenate(_) => "concatenate",
            Structural::Iota(_) => "iota",
            Structural::Split(_) => "split",
            Structural::Tile(_) => "tile",
            Structural::Stack(_) => "stack",
            Structural::Empty2(_) => "empty2",
        }
    }
}

/// The params of `broadcast_in_dim`.
#[derive(Clone, Debug, PartialEq)]
pub struct BroadcastInDimParams {
    /// Result shape.
    pub shape: Vec<Option<usize>>,
    /// Where each operand dimension goes.
    pub broadcast_dimensions: Ints,
}

/// The params of `reshape`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReshapeParams {
    /// Result shape; `None` sizes come from trailing operands.
    pub new_sizes: Vec<Option<usize>>,
    /// An optional transpose applied first (`None` in practice).
    pub dimensions: Option<Vec<usize>>,
}

/// The params of `transpose`.
#[derive(Clone, Debug, PartialEq)]
pub struct TransposeParams {
    /// Result dim `i` is operand dim `permutation[i]`.
    pub permutation: Vec<usize>,
}

/// The params of `squeeze`.
#[derive(Clone, Debug, PartialEq)]
pub struct SqueezeParams {
    /// Dims to remove.
    pub dimensions: Vec<usize>,
}

/// The params of `rev`.
#[derive(Clone, Debug, PartialEq)]
pub struct RevParams {
    /// Dims to reverse.
    pub dimensions: Vec<usize>,
}

/// The params of `pad`.
#[derive(Clone, Debug, PartialEq)]
pub struct PadParams {
    /// One `(low, high, interior)` triple per dim.
    pub padding_config: Vec<Ints>,
}

/// The params of `concatenate`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcatenateParams {
    /// The axis.
    pub dimension: usize,
}

/// The params of `iota`.
#[derive(Clone, Debug, PartialEq)]
pub struct IotaParams {
    /// Dtype.
    pub dtype: DType,
    /// Shape; `None` sizes come from operands.
    pub shape: Vec<Option<usize>>,
    /// The counting dimension.
    pub dimension: usize,
}

/// The params of `split`.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitParams {
    /// Sizes of the pieces.
    pub sizes: Ints,
    /// The axis.
    pub axis: usize,
}

/// The params of `tile`.
#[derive(Clone, Debug, PartialEq)]
pub struct TileParams {
    /// Repetitions per dim.
    pub reps: Ints,
}

/// The params of `stack`.
#[derive(Clone, Debug, PartialEq)]
pub struct StackParams {
    /// The new axis.
    pub axis: usize,
}

/// The params of `empty2`.
#[derive(Clone, Debug, PartialEq)]
pub struct Empty2Params {
    /// Dtype.
    pub dtype: DType,
}
