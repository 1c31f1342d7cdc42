//! The `Primitive` enum: every operation a jaxpr equation can apply, grouped
//! into families, each variant with its typed params.
//!
//! Invariants:
//! - A primitive is `Primitive::<Family>(<Family>::<Op>(<Op>Params))`. Each
//!   family is one file here, holding its enum and its params structs; a
//!   rule takes the typed params (`&ScanParams`), never `&Primitive`.
//! - Every layer handles every variant with an exhaustive `match`; adding a
//!   variant fails to compile until every rule exists. A wildcard over a
//!   whole family (`Primitive::Elementwise(_)`) is allowed only where the
//!   family's documented invariant (no jaxprs, no `Ref`s) is what the arm
//!   relies on.
//! - `Primitive::name` is the name JAX prints; names are unique except that
//!   the elementwise/reduction families share a variant per family, keyed by
//!   their op enum.

mod callback;
mod collective;
mod control;
mod elementwise;
mod indexing;
mod linalg;
mod marker;
mod nested;
mod ops;
mod pallas;
mod params;
mod random;
mod reduction;
mod sharding;
mod state;
mod structural;
mod window;

pub use callback::*;
pub use collective::*;
pub use control::*;
pub use elementwise::*;
pub use indexing::*;
pub use linalg::*;
pub use marker::*;
use nested::at;
pub use nested::{NestedJaxpr, NestedJaxprMut, ParamJaxpr};
pub use ops::*;
pub use pallas::*;
pub use params::*;
pub use random::*;
pub use reduction::*;
pub use sharding::*;
pub use state::*;
pub use structural::*;
pub use window::*;

use crate::aval::ShapedArray;
use crate::dtype::DType;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use std::sync::Arc;

/// A primitive with its params, by family.
#[derive(Clone, Debug, PartialEq)]
pub enum Primitive {
    /// Elementwise arithmetic, comparisons, casts, `select_n`, `clamp`.
    Elementwise(Elementwise),
    /// Broadcasts, reshapes, transposes, pads, concatenations, iotas.
    Structural(Structural),
    /// Slices, dynamic slices, gathers and scatters.
    Indexing(Indexing),
    /// Reductions, arg-reductions, cumulative ops, sorts, top-k.
    Reduction(Reduction),
    /// `dot_general` and convolutions.
    Linalg(Linalg),
    /// Control flow and calls.
    Control(Control),
    /// `get`, `swap`, `addupdate` over `Ref`s.
    State(State),
    /// Pallas kernel primitives and `pallas_call`.
    Pallas(Pallas),
    /// Collectives over named axes.
    Collective(Collective),
    /// Identities and platform queries that mark values for the compiler.
    Marker(Marker),
    /// Windowed reductions and their derivatives' primitives.
    Window(Window),
    /// Typed PRNG keys and the primitives on them.
    Random(Random),
    /// Calls into the host program (`debug_print`, `pure_callback`, ...).
    Callback(Callback),
}

impl Primitive {
    /// The name JAX prints for this primitive.
    pub fn name(&self) -> &'static str {
        match self {
            Primitive::Elementwise(p) => p.name(),
            Primitive::Structural(p) => p.name(),
            Primitive::Indexing(p) => p.name(),
            Primitive::Reduction(p) => p.name(),
            Primitive::Linalg(p) => p.name(),
            Primitive::Control(p) => p.name(),
            Primitive::State(p) => p.name(),
            Primitive::Pallas(p) => p.name(),
            Primitive::Collective(p) => p.name(),
            Primitive::Marker(p) => p.name(),
            Primitive::Window(p) => p.name(),
            Primitive::Random(p) => p.name(),
            Primitive::Callback(p) => p.name(),
        }
    }
}

/// The payload of one family member (its params struct, or its op enum for
/// the op-keyed members): a primitive is built from it with `.into()` and
/// queried for it with [`Primitive::params`].
pub trait PrimitiveParams: Sized + Into<Primitive> {
    /// These params, if `p` is their primitive.
    fn of(p: &Primitive) -> Option<&Self>;
    /// These params, mutably, if `p` is their primitive.
    fn of_mut(p: &mut Primitive) -> Option<&mut Self>;
}

impl Primitive {
    /// The params of `T`'s primitive, if this is it:
    /// `eqn.primitive.params::<DotGeneralParams>()`.
    pub fn params<T: PrimitiveParams>(&self) -> Option<&T> {
        T::of(self)
    }

    /// [`Primitive::params`], mutably.
    pub fn params_mut<T: PrimitiveParams>(&mut self) -> Option<&mut T> {
        T::of_mut(self)
    }
}

/// `From` each family and each member's payload, and `PrimitiveParams` for
/// each payload, so that a primitive is built as `ScanParams { .. }.into()`.
macro_rules! into_primitive {
    ($($family:ident { $($variant:ident($payload:ty)),* $(,)? })*) => {
        $(
            impl From<$family> for Primitive {
                fn from(p: $family) -> Primitive {
                    Primitive::$family(p)
                }
            }
            $(
                impl From<$payload> for Primitive {
                    fn from(p: $payload) -> Primitive {
                        Primitive::$family($family::$variant(p))
                    }
                }
                impl PrimitiveParams for $payload {
                    fn of(p: &Primitive) -> Option<&Self> {
                        match p {
                            Primitive::$family($family::$variant(x)) => Some(x),
                            _ => None,
                        }
                    }
                    fn of_mut(p: &mut Primitive) -> Option<&mut Self> {
                        match p {
                            Primitive::$family($family::$variant(x)) => Some(x),
                            _ => None,
                        }
                    }
                }
            )*
        )*
    };
}

into_primitive! {
    Elementwise {
        Unary(UnaryOp),
        Binary(BinaryOp),
        IntegerPow(IntegerPowParams),
        Round(RoundParams),
        ReducePrecision(ReducePrecisionParams),
        ConvertElementType(ConvertElementTypeParams),
        BitcastConvertType(BitcastConvertTypeParams),
        Conj(ConjParams),
    }
    Structural {
        BroadcastInDim(BroadcastInDimParams),
        Reshape(ReshapeParams),
        Transpose(TransposeParams),
        Squeeze(SqueezeParams),
        Rev(RevParams),
        Pad(PadParams),
        Concatenate(ConcatenateParams),
        Iota(IotaParams),
        Split(SplitParams),
        Tile(TileParams),
        Stack(StackParams),
        Empty2(Empty2Params),
    }
    Indexing {
        Slice(SliceParams),
        DynamicSlice(DynamicSliceParams),
        Gather(GatherParams),
        Scatter(ScatterParams),
    }
    Reduction {
        Reduce(ReduceParams),
        ArgReduce(ArgReduceParams),
        Cumulative(CumulativeParams),
        Sort(SortParams),
        TopK(TopKParams),
    }
    Linalg {
        DotGeneral(DotGeneralParams),
        ConvGeneralDilated(ConvGeneralDilatedParams),
        TriangularSolve(TriangularSolveParams),
        Qr(QrParams),
        Eigh(EighParams),
        Schur(SchurParams),
        Svd(SvdParams),
        TridiagonalSolve(TridiagonalSolveParams),
        Fft(FftParams),
    }
    Control {
        Cond(CondParams),
        While(WhileParams),
        Scan(ScanParams),
        ForLoop(ForLoopParams),
        Jit(JitParams),
        CustomJvpCall(CustomJvpCallParams),
        CustomVjpCall(CustomVjpCallParams),
        Remat(RematParams),
        CustomLinearSolve(CustomLinearSolveParams),
        ShardMap(ShardMapParams),
    }
    State {
        Get(GetParams),
        Swap(SwapParams),
        AddUpdate(AddUpdateParams),
    }
    Pallas {
        ProgramId(ProgramIdParams),
        NumPrograms(NumProgramsParams),
        Load(LoadParams),
        Store(StoreParams),
        AtomicRmw(AtomicRmwParams),
        AtomicCas(AtomicCasParams),
        PallasCall(PallasCallParams),
    }
    Collective {
        AllReduce(AllReduceParams),
        AllGather(AllGatherParams),
        AxisIndex(AxisIndexParams),
        Ppermute(PpermuteParams),
        AllToAll(AllToAllParams),
        ReduceScatter(ReduceScatterParams),
        Pvary(PvaryParams),
        PsumInvariant(PsumInvariantParams),
    }
    Marker {
        Name(NameParams),
        DevicePut(DevicePutParams),
        OptimizationBarrier(OptimizationBarrierParams),
        PlatformIndex(PlatformIndexParams),
        Reshard(ReshardParams),
        ShardingConstraint(ShardingConstraintParams),
    }
    Window {
        ReduceWindow(ReduceWindowParams),
        Generic(GenericReduceWindowParams),
        SelectAndScatterAdd(SelectAndScatterAddParams),
        SelectAndGatherAdd(SelectAndGatherAddParams),
    }
    Random {
        Seed(RandomSeedParams),
        Wrap(RandomWrapParams),
        Unwrap(RandomUnwrapParams),
        Bits(RandomBitsParams),
        Split(RandomSplitParams),
        FoldIn(RandomFoldInParams),
        Threefry2x32(Threefry2x32Params),
        Gamma(RandomGammaParams),
        RngBitGenerator(RngBitGeneratorParams),
    }
    Callback {
        DebugPrint(DebugPrintParams),
        DebugCallback(DebugCallbackParams),
        PureCallback(PureCallbackParams),
    }
}
