//! The `Primitive` enum: every operation a jaxpr equation can apply, with its
//! typed params.
//!
//! Invariants:
//! - Every layer handles every variant with an exhaustive `match`; adding a
//!   variant fails to compile until every rule exists.
//! - `Primitive::name` is the name JAX prints; names are unique except that
//!   the elementwise/reduction families share a variant per family, keyed by
//!   their op enum.

mod collective;
mod nested;
mod params;

pub use collective::{AxisRef, CollectiveOp};
pub use nested::{NestedJaxpr, ParamJaxpr};
pub use params::*;

use crate::aval::ShapedArray;
use crate::dtype::DType;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use std::sync::Arc;

/// Elementwise unary operations without params.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Neg,
    Sign,
    Floor,
    Ceil,
    IsFinite,
    Exp,
    Exp2,
    Log,
    Log1p,
    Expm1,
    Tanh,
    Logistic,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Sqrt,
    Rsqrt,
    Cbrt,
    Abs,
    Not,
    Erf,
    Erfc,
    ErfInv,
    Square,
    Copy,
    StopGradient,
}

/// Elementwise binary operations without params (comparisons included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
    Max,
    Min,
    Atan2,
    Nextafter,
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRightArithmetic,
    ShiftRightLogical,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// The sum of two cotangents, emitted by transposition.
    AddAny,
}

/// Reductions over axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    Prod,
    And,
    Or,
    Xor,
}

/// Index-of-extremum reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ArgOp {
    Argmax,
    Argmin,
}

/// Cumulative (scan-like) reductions along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CumulativeOp {
    Cumsum,
    Cumprod,
    Cummax,
    Cummin,
    Cumlogsumexp,
}

/// A primitive with its params.
#[derive(Clone, Debug, PartialEq)]
pub enum Primitive {
    // ---- elementwise -------------------------------------------------
    /// `neg`, `sin`, `exp`, ...: one operand, same type out.
    Unary(UnaryOp),
    /// `add`, `lt`, ...: two operands of one type (comparisons give bool).
    Binary(BinaryOp),
    /// `integer_pow[y]`: `x ** y` by repeated multiplication.
    IntegerPow {
        /// The exponent.
        y: i64,
    },
    /// `round[rounding_method]`.
    Round {
        /// How halves round.
        rounding_method: RoundingMethod,
    },
    /// `reduce_precision[exponent_bits mantissa_bits]`.
    ReducePrecision {
        /// Exponent bits kept.
        exponent_bits: u32,
        /// Mantissa bits kept.
        mantissa_bits: u32,
    },
    /// `convert_element_type[new_dtype weak_type]` (`sharding` elided).
    ConvertElementType {
        /// Target dtype.
        new_dtype: DType,
        /// Whether the result is weakly typed.
        weak_type: bool,
    },
    /// `bitcast_convert_type[new_dtype]`.
    BitcastConvertType {
        /// Target dtype.
        new_dtype: DType,
    },
    /// `select_n which *cases`: picks `cases[which]` elementwise.
    SelectN,
    /// `clamp lo x hi`.
    Clamp,

    // ---- shapes ------------------------------------------------------
    /// `broadcast_in_dim[broadcast_dimensions shape sharding]`; `None` sizes
    /// are given by trailing dynamic-size operands.
    BroadcastInDim {
        /// Result shape.
        shape: Vec<Option<usize>>,
        /// Where each operand dimension goes.
        broadcast_dimensions: Ints,
    },
    /// `reshape[dimensions new_sizes sharding]`.
    Reshape {
        /// Result shape; `None` sizes come from trailing operands.
        new_sizes: Vec<Option<usize>>,
        /// An optional transpose applied first (`None` in practice).
        dimensions: Option<Vec<usize>>,
    },
    /// `transpose[permutation]`.
    Transpose {
        /// Result dim `i` is operand dim `permutation[i]`.
        permutation: Vec<usize>,
    },
    /// `squeeze[dimensions]`: removes size-1 dimensions.
    Squeeze {
        /// Dims to remove.
        dimensions: Vec<usize>,
    },
    /// `rev[dimensions]`: reverses dimensions.
    Rev {
        /// Dims to reverse.
        dimensions: Vec<usize>,
    },
    /// `pad[padding_config] x padding_value`: (low, high, interior) per dim;
    /// low/high may be negative.
    Pad {
        /// One `(low, high, interior)` triple per dim.
        padding_config: Vec<Ints>,
    },
    /// `concatenate[dimension]`.
    Concatenate {
        /// The axis.
        dimension: usize,
    },
    /// `slice[start_indices limit_indices strides]`.
    Slice {
        /// Starts.
        start_indices: Ints,
        /// Exclusive limits.
        limit_indices: Ints,
        /// Steps, or `None` for all ones.
        strides: Option<Ints>,
    },
    /// `dynamic_slice[slice_sizes] x *starts`: starts clamp into bounds.
    DynamicSlice {
        /// Sizes of the slice.
        slice_sizes: Ints,
    },
    /// `dynamic_update_slice x update *starts`: starts clamp into bounds.
    DynamicUpdateSlice,
    /// `gather[...] operand indices`.
    Gather {
        /// Dimension numbers.
        dimension_numbers: GatherDimensionNumbers,
        /// Fill for out-of-bounds windows in `FILL_OR_DROP` mode.
        fill_value: Option<FillValue>,
        /// Hint.
        indices_are_sorted: bool,
        /// Out-of-bounds behaviour.
        mode: GatherScatterMode,
        /// Window sizes.
        slice_sizes: Ints,
        /// Hint.
        unique_indices: bool,
    },
    /// `scatter`, `scatter-add`, ... `operand indices updates`.
    Scatter {
        /// Which combiner.
        kind: ScatterKind,
        /// Dimension numbers.
        dimension_numbers: ScatterDimensionNumbers,
        /// Hint.
        indices_are_sorted: bool,
        /// Out-of-bounds behaviour.
        mode: GatherScatterMode,
        /// Hint.
        unique_indices: bool,
        /// The scalar combiner jaxpr (`None` for plain `scatter`).
        update_jaxpr: Option<Arc<Jaxpr>>,
    },
    /// `iota[dimension dtype shape sharding]`.
    Iota {
        /// Dtype.
        dtype: DType,
        /// Shape; `None` sizes come from operands.
        shape: Vec<Option<usize>>,
        /// The counting dimension.
        dimension: usize,
    },
    /// `split[axis sizes]`: one output per size.
    Split {
        /// Sizes of the pieces.
        sizes: Ints,
        /// The axis.
        axis: usize,
    },
    /// `tile[reps]`.
    Tile {
        /// Repetitions per dim.
        reps: Ints,
    },
    /// `stack[axis]`: stacks equal-shaped operands along a new axis.
    Stack {
        /// The new axis.
        axis: usize,
    },

    // ---- reductions and contractions ---------------------------------
    /// `reduce_sum[axes out_sharding]`, `reduce_max[axes]`, ...
    Reduce {
        /// Which reduction.
        op: ReduceOp,
        /// Reduced axes.
        axes: Vec<usize>,
    },
    /// `argmax[axes index_dtype]`, `argmin[...]` (first index on ties; NaN wins).
    ArgReduce {
        /// Which.
        op: ArgOp,
        /// The (single) axis.
        axes: Vec<usize>,
        /// Result dtype.
        index_dtype: DType,
    },
    /// `cumsum[axis reverse]`, ...
    Cumulative {
        /// Which.
        op: CumulativeOp,
        /// The axis.
        axis: usize,
        /// Accumulate from the end.
        reverse: bool,
    },
    /// `dot_general[dimension_numbers precision preferred_element_type]`.
    DotGeneral {
        /// Contracting and batch dims.
        dimension_numbers: DotDimensionNumbers,
        /// `(lhs, rhs)` precision, or `None`.
        precision: Option<(Precision, Precision)>,
        /// Accumulation/result dtype, or `None` for the operands' dtype.
        preferred_element_type: Option<DType>,
    },
    /// `conv_general_dilated[...] lhs rhs`.
    ConvGeneralDilated {
        /// Strides.
        window_strides: Vec<usize>,
        /// (low, high) padding per spatial dim; may be negative.
        padding: Vec<(i64, i64)>,
        /// Input dilation.
        lhs_dilation: Vec<usize>,
        /// Kernel dilation.
        rhs_dilation: Vec<usize>,
        /// Layouts.
        dimension_numbers: ConvDimensionNumbers,
        /// Feature groups.
        feature_group_count: usize,
        /// Batch groups.
        batch_group_count: usize,
        /// `(lhs, rhs)` precision, or `None`.
        precision: Option<(Precision, Precision)>,
        /// Result dtype, or `None`.
        preferred_element_type: Option<DType>,
    },
    /// `sort[dimension is_stable num_keys] *operands`: sorts all operands by
    /// the first `num_keys` (lexicographically).
    Sort {
        /// The axis.
        dimension: usize,
        /// Stable sort.
        is_stable: bool,
        /// Number of leading key operands.
        num_keys: usize,
    },
    /// `top_k[axis k]`: values and i32 indices of the `k` largest.
    TopK {
        /// How many.
        k: usize,
        /// The axis (last by default).
        axis: usize,
    },
    /// `empty2[dtype memory_space]`: an uninitialised scalar (grad jaxprs).
    Empty2 {
        /// Dtype.
        dtype: DType,
    },

    // ---- collectives over named axes ---------------------------------
    /// `psum`/`pmax`/`pmin[axes=(..) axis_index_groups=None] x`: the
    /// reduction over named `vmap` axes and positional dims of `x`.
    AllReduce {
        /// Which reduction.
        op: CollectiveOp,
        /// The axes reduced over.
        axes: Vec<AxisRef>,
    },
    /// `all_gather[all_gather_dimension axis_index_groups=None axis_name
    /// axis_size tiled] x`: every member's `x` along a new dimension.
    AllGather {
        /// The named axes gathered over (one, as JAX's vmap supports).
        axis_name: Vec<String>,
        /// Where the gathered dimension goes.
        all_gather_dimension: usize,
        /// The size of the named axis.
        axis_size: usize,
        /// Concatenate along `all_gather_dimension` instead of stacking.
        tiled: bool,
    },
    /// `axis_index[axis_name=i]`: this member's index along a named axis.
    AxisIndex {
        /// The named axis.
        axis_name: String,
    },

    // ---- control flow and calls --------------------------------------
    /// `cond[branches] index *operands`: runs `branches[clamp(index)]`.
    Cond {
        /// The branches; branch 0 is the false branch of a bool predicate.
        branches: Vec<ClosedJaxpr>,
    },
    /// `while[cond_jaxpr body_jaxpr cond_nconsts body_nconsts] *cconsts *bconsts *init`.
    While {
        /// The predicate.
        cond_jaxpr: ClosedJaxpr,
        /// The body.
        body_jaxpr: ClosedJaxpr,
        /// Leading operands that are the predicate's consts.
        cond_nconsts: usize,
        /// Following operands that are the body's consts.
        body_nconsts: usize,
    },
    /// `scan[...] *consts *carry *xs` giving `*carry *ys`.
    Scan {
        /// The body: `(consts, carry, x) -> (carry, y)`.
        jaxpr: ClosedJaxpr,
        /// Number of iterations.
        length: usize,
        /// Iterate from the end.
        reverse: bool,
        /// Leading const operands.
        num_consts: usize,
        /// Carry operands.
        num_carry: usize,
        /// Unroll factor (`unroll=1`).
        unroll: i64,
        /// Which operands are linear (JAX elides an all-false list).
        linear: Vec<bool>,
        /// JAX's `_split_transpose` flag.
        split_transpose: bool,
    },
    /// Catalyst's `for_loop[...] *implicit *consts lo hi step *carry`.
    ForLoop {
        /// The body: `(consts, i, carry) -> carry`.
        body_jaxpr: ClosedJaxpr,
        /// Leading const operands after the implicit ones.
        body_nconsts: usize,
        /// Leading implicit (dimension) operands.
        nimplicit: usize,
        /// Share dimensions between arguments when deducing types.
        preserve_dimensions: bool,
        /// Run the iterations in reverse.
        apply_reverse_transform: bool,
    },
    /// `jit[name jaxpr]`: a call of a staged function.
    Jit {
        /// The function's name.
        name: String,
        /// The callee.
        jaxpr: ClosedJaxpr,
    },
    /// `custom_jvp_call[name call_jaxpr jvp num_consts symbolic_zeros]`.
    CustomJvpCall {
        /// The function's name.
        name: String,
        /// The primal function.
        call_jaxpr: ClosedJaxpr,
        /// The printed name of the JVP rule (its body is not in the text).
        jvp: String,
        /// Leading const operands.
        num_consts: usize,
        /// Whether the rule sees symbolic zeros.
        symbolic_zeros: bool,
    },
    /// `custom_vjp_call[name call_jaxpr fwd bwd num_consts symbolic_zeros]`.
    CustomVjpCall {
        /// The function's name.
        name: String,
        /// The primal function.
        call_jaxpr: ClosedJaxpr,
        /// Printed name of the forward rule.
        fwd: String,
        /// Printed name of the backward rule.
        bwd: String,
        /// Leading const operands.
        num_consts: usize,
        /// Whether the rules see symbolic zeros.
        symbolic_zeros: bool,
    },
    /// `remat2[jaxpr prevent_cse differentiated policy]` (checkpoint).
    Remat {
        /// The body.
        jaxpr: Arc<Jaxpr>,
        /// Prevent CSE across the boundary.
        prevent_cse: bool,
        /// Whether this is the differentiated form.
        differentiated: bool,
        /// The printed policy (`None` or e.g. `DotsSaveable(...)`).
        policy: Option<String>,
    },

    // ---- state -------------------------------------------------------
    /// `get`: `y <- ref[idx]`.
    Get {
        /// Indexers applied in order; empty means `[...]`.
        indexers: Vec<Indexer>,
    },
    /// `swap`: `old, ref[idx] <- ref[idx], new`.
    Swap {
        /// Indexers.
        indexers: Vec<Indexer>,
    },
    /// `addupdate`: `ref[idx] += x`.
    AddUpdate {
        /// Indexers.
        indexers: Vec<Indexer>,
    },

    // ---- Pallas ------------------------------------------------------
    /// `program_id[axis]`: this program's index along a grid axis.
    ProgramId {
        /// The grid axis.
        axis: usize,
    },
    /// `num_programs[axis]`: the grid size along an axis.
    NumPrograms {
        /// The grid axis.
        axis: usize,
    },
    /// Masked `load`: `y <- ref[idx] mask=m other=o`.
    Load {
        /// Indexers.
        indexers: Vec<Indexer>,
        /// A mask operand follows the indices.
        has_mask: bool,
        /// An `other` operand follows the mask.
        has_other: bool,
    },
    /// Masked `store`: `ref[idx] <- v mask=m`.
    Store {
        /// Indexers.
        indexers: Vec<Indexer>,
        /// A mask operand follows the value.
        has_mask: bool,
    },
    /// `atomic_rmw[atomic_type]`: returns the old value.
    AtomicRmw {
        /// Indexers.
        indexers: Vec<Indexer>,
        /// The operation.
        op: AtomicOp,
    },
    /// `atomic_cas`: compare-and-swap, returns the old value.
    AtomicCas {
        /// Indexers.
        indexers: Vec<Indexer>,
    },
    /// `pallas_call`: runs `kernel` once per grid point on blocks.
    PallasCall {
        /// The kernel over `Ref`s: inputs, then outputs.
        kernel: Arc<Jaxpr>,
        /// Grid sizes.
        grid: Vec<usize>,
        /// One mapping per input, then per output.
        block_mappings: Vec<BlockMapping>,
        /// Result types.
        out_avals: Vec<ShapedArray>,
        /// Kernel name, if any.
        name: Option<String>,
        /// Run on the reference interpreter.
        interpret: bool,
        /// Print debugging output.
        debug: bool,
        /// `(input, output)` pairs that share a buffer.
        input_output_aliases: Vec<(usize, usize)>,
    },
}

impl UnaryOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Sign => "sign",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::IsFinite => "is_finite",
            UnaryOp::Exp => "exp",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Log => "log",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Logistic => "logistic",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Asinh => "asinh",
            UnaryOp::Acosh => "acosh",
            UnaryOp::Atanh => "atanh",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Cbrt => "cbrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Not => "not",
            UnaryOp::Erf => "erf",
            UnaryOp::Erfc => "erfc",
            UnaryOp::ErfInv => "erf_inv",
            UnaryOp::Square => "square",
            UnaryOp::Copy => "copy",
            UnaryOp::StopGradient => "stop_gradient",
        }
    }

    /// Every unary op.
    pub const ALL: [UnaryOp; 34] = [
        UnaryOp::Neg,
        UnaryOp::Sign,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::IsFinite,
        UnaryOp::Exp,
        UnaryOp::Exp2,
        UnaryOp::Log,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Tanh,
        UnaryOp::Logistic,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Cbrt,
        UnaryOp::Abs,
        UnaryOp::Not,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::ErfInv,
        UnaryOp::Square,
        UnaryOp::Copy,
        UnaryOp::StopGradient,
    ];
}

impl BinaryOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Rem => "rem",
            BinaryOp::Pow => "pow",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::Nextafter => "nextafter",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
            BinaryOp::ShiftLeft => "shift_left",
            BinaryOp::ShiftRightArithmetic => "shift_right_arithmetic",
            BinaryOp::ShiftRightLogical => "shift_right_logical",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::AddAny => "add_any",
        }
    }

    /// Every binary op.
    pub const ALL: [BinaryOp; 23] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::Pow,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Atan2,
        BinaryOp::Nextafter,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRightArithmetic,
        BinaryOp::ShiftRightLogical,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::AddAny,
    ];

    /// True for the comparisons, whose result is bool.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

impl ReduceOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "reduce_sum",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
            ReduceOp::Prod => "reduce_prod",
            ReduceOp::And => "reduce_and",
            ReduceOp::Or => "reduce_or",
            ReduceOp::Xor => "reduce_xor",
        }
    }
}

impl ArgOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            ArgOp::Argmax => "argmax",
            ArgOp::Argmin => "argmin",
        }
    }
}

impl CumulativeOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            CumulativeOp::Cumsum => "cumsum",
            CumulativeOp::Cumprod => "cumprod",
            CumulativeOp::Cummax => "cummax",
            CumulativeOp::Cummin => "cummin",
            CumulativeOp::Cumlogsumexp => "cumlogsumexp",
        }
    }
}

impl ScatterKind {
    /// JAX's name of the scatter primitive.
    pub fn name(self) -> &'static str {
        match self {
            ScatterKind::Set => "scatter",
            ScatterKind::Add => "scatter-add",
            ScatterKind::Mul => "scatter-mul",
            ScatterKind::Min => "scatter-min",
            ScatterKind::Max => "scatter-max",
        }
    }
}

impl Primitive {
    /// The name JAX prints for this primitive.
    pub fn name(&self) -> &'static str {
        match self {
            Primitive::Unary(op) => op.name(),
            Primitive::Binary(op) => op.name(),
            Primitive::IntegerPow { .. } => "integer_pow",
            Primitive::Round { .. } => "round",
            Primitive::ReducePrecision { .. } => "reduce_precision",
            Primitive::ConvertElementType { .. } => "convert_element_type",
            Primitive::BitcastConvertType { .. } => "bitcast_convert_type",
            Primitive::SelectN => "select_n",
            Primitive::Clamp => "clamp",
            Primitive::BroadcastInDim { .. } => "broadcast_in_dim",
            Primitive::Reshape { .. } => "reshape",
            Primitive::Transpose { .. } => "transpose",
            Primitive::Squeeze { .. } => "squeeze",
            Primitive::Rev { .. } => "rev",
            Primitive::Pad { .. } => "pad",
            Primitive::Concatenate { .. } => "concatenate",
            Primitive::Slice { .. } => "slice",
            Primitive::DynamicSlice { .. } => "dynamic_slice",
            Primitive::DynamicUpdateSlice => "dynamic_update_slice",
            Primitive::Gather { .. } => "gather",
            Primitive::Scatter { kind, .. } => kind.name(),
            Primitive::Iota { .. } => "iota",
            Primitive::Split { .. } => "split",
            Primitive::Tile { .. } => "tile",
            Primitive::Stack { .. } => "stack",
            Primitive::Reduce { op, .. } => op.name(),
            Primitive::ArgReduce { op, .. } => op.name(),
            Primitive::Cumulative { op, .. } => op.name(),
            Primitive::DotGeneral { .. } => "dot_general",
            Primitive::ConvGeneralDilated { .. } => "conv_general_dilated",
            Primitive::Sort { .. } => "sort",
            Primitive::TopK { .. } => "top_k",
            Primitive::Empty2 { .. } => "empty2",
            Primitive::AllReduce { op, .. } => op.name(),
            Primitive::AllGather { .. } => "all_gather",
            Primitive::AxisIndex { .. } => "axis_index",
            Primitive::Cond { .. } => "cond",
            Primitive::While { .. } => "while",
            Primitive::Scan { .. } => "scan",
            Primitive::ForLoop { .. } => "for_loop",
            Primitive::Jit { .. } => "jit",
            Primitive::CustomJvpCall { .. } => "custom_jvp_call",
            Primitive::CustomVjpCall { .. } => "custom_vjp_call",
            Primitive::Remat { .. } => "remat2",
            Primitive::Get { .. } => "get",
            Primitive::Swap { .. } => "swap",
            Primitive::AddUpdate { .. } => "addupdate",
            Primitive::ProgramId { .. } => "program_id",
            Primitive::NumPrograms { .. } => "num_programs",
            Primitive::Load { .. } => "load",
            Primitive::Store { .. } => "store",
            Primitive::AtomicRmw { .. } => "atomic_rmw",
            Primitive::AtomicCas { .. } => "atomic_cas",
            Primitive::PallasCall { .. } => "pallas_call",
        }
    }
}
