//! Typed parameter values shared by several primitives: int tuples that
//! remember JAX's `np.int64(..)` spelling, dimension numbers, modes, and the
//! state/Pallas indexers.
//!
//! Invariant: every field is what JAX stores in the equation's params; fields
//! JAX elides when printing are still present here (the printer hides them).

use crate::aval::ShapedArray;
use crate::dtype::DType;
use crate::jaxpr::ClosedJaxpr;
use std::ops::Deref;

/// A tuple of integers as JAX stores it. JAX sometimes holds NumPy scalars
/// and prints them `np.int64(3)`; `np_int64[i]` remembers that spelling so
/// that printing a parsed jaxpr gives back the same text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ints {
    /// The values.
    pub values: Vec<i64>,
    /// Per value: printed as `np.int64(v)` rather than `v`.
    pub np_int64: Vec<bool>,
}

impl Ints {
    /// Plain Python ints.
    pub fn new(values: Vec<i64>) -> Ints {
        let np_int64 = vec![false; values.len()];
        Ints { values, np_int64 }
    }

    /// The values as `usize` (negative values clamp to 0).
    pub fn to_usizes(&self) -> Vec<usize> {
        self.values.iter().map(|&v| v.max(0) as usize).collect()
    }
}

impl Deref for Ints {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        &self.values
    }
}

impl From<Vec<i64>> for Ints {
    fn from(values: Vec<i64>) -> Ints {
        Ints::new(values)
    }
}

impl From<&[usize]> for Ints {
    fn from(values: &[usize]) -> Ints {
        Ints::new(values.iter().map(|&v| v as i64).collect())
    }
}

/// `((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct DotDimensionNumbers {
    /// Contracting dimensions of the left operand.
    pub lhs_contracting: Vec<usize>,
    /// Contracting dimensions of the right operand.
    pub rhs_contracting: Vec<usize>,
    /// Batch dimensions of the left operand.
    pub lhs_batch: Vec<usize>,
    /// Batch dimensions of the right operand.
    pub rhs_batch: Vec<usize>,
}

/// `lax.Precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// `Precision.DEFAULT`
    Default,
    /// `Precision.HIGH`
    High,
    /// `Precision.HIGHEST`
    Highest,
}

/// `ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)`: for each operand,
/// the positions of (batch/out-feature, feature/in-feature, spatial...).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ConvDimensionNumbers {
    /// Layout of the input: batch, feature, spatial dims.
    pub lhs_spec: Vec<usize>,
    /// Layout of the kernel: out feature, in feature, spatial dims.
    pub rhs_spec: Vec<usize>,
    /// Layout of the output: batch, feature, spatial dims.
    pub out_spec: Vec<usize>,
}

/// `GatherDimensionNumbers(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct GatherDimensionNumbers {
    /// Output dims that are slice (offset) dims.
    pub offset_dims: Ints,
    /// Operand dims sliced to size 1 and removed.
    pub collapsed_slice_dims: Ints,
    /// Where each index component points in the operand.
    pub start_index_map: Ints,
    /// Operand batching dims.
    pub operand_batching_dims: Ints,
    /// Index batching dims.
    pub start_indices_batching_dims: Ints,
}

/// `ScatterDimensionNumbers(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ScatterDimensionNumbers {
    /// Update dims that are window dims.
    pub update_window_dims: Ints,
    /// Operand dims with window size 1 that updates omit.
    pub inserted_window_dims: Ints,
    /// Where each index component points in the operand.
    pub scatter_dims_to_operand_dims: Ints,
    /// Operand batching dims.
    pub operand_batching_dims: Ints,
    /// Index batching dims.
    pub scatter_indices_batching_dims: Ints,
}

/// `GatherScatterMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GatherScatterMode {
    /// `CLIP`: indices are clamped into bounds.
    Clip,
    /// `FILL_OR_DROP`: out-of-bounds gathers give the fill value, scatters drop.
    FillOrDrop,
    /// `PROMISE_IN_BOUNDS`: the caller promises indices are in bounds (XLA clamps).
    PromiseInBounds,
    /// `ONE_HOT`.
    OneHot,
}

/// A gather's fill value: `None`, or a number printed as Python prints it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FillValue {
    /// An integer fill (`fill_value=0`).
    Int(i64),
    /// A float fill (`fill_value=nan`, `fill_value=1.5`).
    Float(f64),
}

/// The combiner of a scatter: which primitive it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterKind {
    /// `scatter`: overwrite.
    Set,
    /// `scatter-add`
    Add,
    /// `scatter-mul`
    Mul,
    /// `scatter-min`
    Min,
    /// `scatter-max`
    Max,
}

/// `round`'s `rounding_method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoundingMethod {
    /// 0: half away from zero.
    AwayFromZero,
    /// 1: half to even.
    ToNearestEven,
}

/// One operand-dimension of a `Ref` indexer.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexEntry {
    /// `start:start+size:stride`, printed `:` when it covers the dimension.
    Slice {
        /// Start.
        start: IndexValue,
        /// Number of elements.
        size: usize,
        /// Step.
        stride: usize,
    },
    /// An integer index; the dimension disappears.
    Int(IndexValue),
    /// An integer-array index (the eqn input at this position).
    Array(usize),
}

/// A static integer or the eqn input at this position (a scalar integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexValue {
    /// A static integer.
    Static(i64),
    /// The eqn input at this position.
    Dynamic(usize),
}

/// A NumPy-style indexer applied to a `Ref` (JAX's `NDIndexer`).
#[derive(Clone, Debug, PartialEq)]
pub struct Indexer {
    /// One entry per dimension of the indexed ref.
    pub entries: Vec<IndexEntry>,
}

/// The position of the first operand after a `Ref` (operand 0) and the
/// index operands its `indexers` name: where a state or Pallas
/// primitive's value (then mask, other) operands start.
pub fn value_operand(indexers: &[Indexer]) -> usize {
    let mut end = 1;
    for ix in indexers {
        for e in &ix.entries {
            let k = match e {
                IndexEntry::Slice {
                    start: IndexValue::Dynamic(k),
                    ..
                }
                | IndexEntry::Int(IndexValue::Dynamic(k))
                | IndexEntry::Array(k) => *k,
                IndexEntry::Slice {
                    start: IndexValue::Static(_),
                    ..
                }
                | IndexEntry::Int(IndexValue::Static(_)) => 0,
            };
            end = end.max(k + 1);
        }
    }
    end
}

/// `atomic_rmw`'s operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Add.
    Add,
    /// Max.
    Max,
    /// Min.
    Min,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// Exchange.
    Xchg,
}

/// One dimension of a Pallas block shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockDim {
    /// A block of this many elements.
    Blocked(usize),
    /// A dimension of size 1 squeezed out of the kernel's view (`None` in
    /// a `BlockSpec`).
    Squeezed,
}

/// How one operand of a `pallas_call` is cut into blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockMapping {
    /// Block shape, one entry per array dimension.
    pub block_shape: Vec<BlockDim>,
    /// Maps grid indices (i32 scalars) to *block* indices, one per dimension.
    pub index_map: ClosedJaxpr,
    /// The whole array's type.
    pub array_aval: ShapedArray,
}

/// A dtype param that JAX may leave unset (`preferred_element_type=None`).
pub type OptDType = Option<DType>;
