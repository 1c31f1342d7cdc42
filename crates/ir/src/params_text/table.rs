//! The params table: each row is a params struct, the name JAX prints, and
//! its params as `field: "key" Codec [or default]`, with constant params
//! JAX always prints after a `;` (`memory_space=MemorySpace.Device`). A row
//! defines both the printer and the parser of its struct. Structs whose
//! params JAX elides or derives from the equation implement [`ParamsText`]
//! by hand (`hand` list): in this file, `arrays.rs`, `control.rs`,
//! `collective.rs`, `state.rs` or `pallas.rs`. Primitives without params
//! are the `bare` list, and the unary and binary ops, keyed by their op
//! enums. A test checks that every primitive's name parses.

use super::codec::{
    is_word, Axes, Bool, Closed, Dt, IntsT, IntsTuples, Num, OptAxes, OptIntsT, Shape, Word,
};
use super::random::{Alg, Impl};
use super::{bad, Codec, ParamsText, ParseCx, PrintCx, Printed};
use crate::parse::params::PValue;
use crate::parse::syntax::PResult;
use crate::primitive::*;
use crate::print::PV;

macro_rules! params_text {
    (
        $(
            $ty:ident $name:literal {
                $( $field:ident : $key:literal $codec:ident $(or $default:expr)? ),* $(,)?
                $( ; $($ck:literal = $cv:literal),* $(,)? )?
            }
        )*
        ; hand { $( $hty:ident $($hname:literal)|+ ),* $(,)? }
        ; bare { $( $bname:literal => $bprim:expr ),* $(,)? }
    ) => {
        $(
            impl ParamsText for $ty {
                fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
                    $( out.push(($key, <$codec as Codec<_>>::print(&self.$field))); )*
                    $( $( out.push(($ck, PV::Text($cv.to_string()))); )* )?
                }
                fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
                    $( $( cx.constant($ck, $cv)?; )* )?
                    Ok($ty {
                        $( $field: cx.field::<$codec, _>($key, params_text!(@default $($default)?))?, )*
                    })
                }
            }
        )*

        /// Every name the table reads (the unary and binary ops aside).
        #[cfg(test)]
        pub(crate) const NAMES: &[&str] = &[$($name,)* $($($hname,)+)* $($bname,)*];

        /// The parser of the primitive printed as `name`, or `None` when
        /// no primitive prints as `name`.
        pub(crate) fn parser_of(name: &str) -> Option<Parser> {
            if UnaryOp::ALL.iter().any(|o| o.name() == name) {
                return Some(unary);
            }
            if BinaryOp::ALL.iter().any(|o| o.name() == name) {
                return Some(binary);
            }
            let f: Parser = match name {
                $( $name => typed::<$ty>, )*
                $( $($hname)|+ => typed::<$hty>, )*
                $( $bname => |_| Ok(Primitive::from($bprim)), )*
                _ => return None,
            };
            Some(f)
        }
    };
    (@default) => { None };
    (@default $d:expr) => { Some($d) };
}

params_text! {
    RandomSeedParams "random_seed" { impl_: "impl" Impl }
    RandomWrapParams "random_wrap" { impl_: "impl" Impl }
    RandomBitsParams "random_bits" { bit_width: "bit_width" Num, shape: "shape" Axes }
    RandomSplitParams "random_split" { shape: "shape" Axes }
    RandomGammaParams "random_gamma" { log_space: "log_space" Bool }
    RngBitGeneratorParams "rng_bit_generator" {
        algorithm: "algorithm" Alg,
        dtype: "dtype" Dt,
        shape: "shape" Axes;
        "out_sharding" = "None"
    }
    IntegerPowParams "integer_pow" { y: "y" Num }
    ReducePrecisionParams "reduce_precision" {
        exponent_bits: "exponent_bits" Num,
        mantissa_bits: "mantissa_bits" Num,
    }
    ConvertElementTypeParams "convert_element_type" {
        new_dtype: "new_dtype" Dt,
        weak_type: "weak_type" Bool or false,
    }
    BitcastConvertTypeParams "bitcast_convert_type" { new_dtype: "new_dtype" Dt }
    ConjParams "conj" { input_dtype: "input_dtype" Dt }
    TransposeParams "transpose" { permutation: "permutation" Axes }
    SqueezeParams "squeeze" { dimensions: "dimensions" Axes }
    RevParams "rev" { dimensions: "dimensions" Axes }
    PadParams "pad" { padding_config: "padding_config" IntsTuples }
    ConcatenateParams "concatenate" { dimension: "dimension" Num }
    SliceParams "slice" {
        start_indices: "start_indices" IntsT,
        limit_indices: "limit_indices" IntsT,
        strides: "strides" OptIntsT or None,
    }
    DynamicSliceParams "dynamic_slice" { slice_sizes: "slice_sizes" IntsT }
    SplitParams "split" { sizes: "sizes" IntsT, axis: "axis" Num }
    TileParams "tile" { reps: "reps" IntsT }
    StackParams "stack" { axis: "axis" Num }
    SortParams "sort" {
        dimension: "dimension" Num,
        is_stable: "is_stable" Bool or false,
        num_keys: "num_keys" Num,
    }
    Empty2Params "empty2" { dtype: "dtype" Dt; "memory_space" = "MemorySpace.Device" }
    ProgramIdParams "program_id" { axis: "axis" Num }
    NumProgramsParams "num_programs" { axis: "axis" Num }
    NameParams "name" { name: "name" Word }
    WhileParams "while" {
        cond_jaxpr: "cond_jaxpr" Closed,
        body_jaxpr: "body_jaxpr" Closed,
        cond_nconsts: "cond_nconsts" Num,
        body_nconsts: "body_nconsts" Num,
    }
    ForLoopParams "for_loop" {
        body_jaxpr: "body_jaxpr" Closed,
        body_nconsts: "body_nconsts" Num,
        nimplicit: "nimplicit" Num or 0,
        preserve_dimensions: "preserve_dimensions" Bool or false,
        apply_reverse_transform: "apply_reverse_transform" Bool or false,
    }
    TriangularSolveParams "triangular_solve" {
        conjugate_a: "conjugate_a" Bool or false,
        left_side: "left_side" Bool or false,
        lower: "lower" Bool or false,
        transpose_a: "transpose_a" Bool or false,
        unit_diagonal: "unit_diagonal" Bool or false,
    }
    QrParams "qr" {
        full_matrices: "full_matrices" Bool,
        pivoting: "pivoting" Bool or false;
        "use_magma" = "None"
    }
    EighParams "eigh" {
        lower: "lower" Bool or true,
        sort_eigenvalues: "sort_eigenvalues" Bool or true;
        "algorithm" = "None", "subset_by_index" = "None"
    }
    SvdParams "svd" {
        compute_uv: "compute_uv" Bool,
        full_matrices: "full_matrices" Bool;
        "algorithm" = "None", "subset_by_index" = "None"
    }
    SchurParams "schur" {
        compute_schur_vectors: "compute_schur_vectors" Bool,
        sort_eig_vals: "sort_eig_vals" Bool or false;
        "select_callable" = "None"
    }
    TridiagonalSolveParams "tridiagonal_solve" {
        perturb_singular: "perturb_singular" Bool or false,
    }
    ; hand {
        RoundParams "round",
        DebugPrintParams "debug_print",
        DebugCallbackParams "debug_callback",
        PureCallbackParams "pure_callback",
        BroadcastInDimParams "broadcast_in_dim",
        ReshapeParams "reshape",
        IotaParams "iota",
        TopKParams "top_k",
        ScanParams "scan",
        CondParams "cond",
        CustomLinearSolveParams "custom_linear_solve",
        JitParams "jit" | "pjit",
        CustomJvpCallParams "custom_jvp_call",
        CustomVjpCallParams "custom_vjp_call",
        RematParams "remat2" | "checkpoint",
        ReduceParams "reduce_sum" | "reduce_max" | "reduce_min" | "reduce_prod" | "reduce_and"
            | "reduce_or" | "reduce_xor",
        ArgReduceParams "argmax" | "argmin",
        DevicePutParams "device_put",
        PlatformIndexParams "platform_index",
        OptimizationBarrierParams "optimization_barrier",
        CumulativeParams "cumsum" | "cumprod" | "cummax" | "cummin" | "cumlogsumexp",
        GatherParams "gather",
        ScatterParams "scatter" | "scatter-add" | "scatter-mul" | "scatter-min" | "scatter-max",
        DotGeneralParams "dot_general",
        FftParams "fft",
        ConvGeneralDilatedParams "conv_general_dilated",
        AllReduceParams "psum" | "pmax" | "pmin",
        AllGatherParams "all_gather",
        AxisIndexParams "axis_index",
        PpermuteParams "ppermute",
        AllToAllParams "all_to_all",
        ReduceScatterParams "reduce_scatter",
        PvaryParams "pvary",
        PsumInvariantParams "psum_invariant",
        ShardMapParams "shard_map",
        ReshardParams "reshard",
        ShardingConstraintParams "sharding_constraint",
        GetParams "get",
        SwapParams "swap",
        AddUpdateParams "addupdate",
        LoadParams "load" | "masked_load",
        StoreParams "store" | "masked_swap",
        AtomicRmwParams "atomic_rmw",
        AtomicCasParams "atomic_cas",
        PallasCallParams "pallas_call",
        ReduceWindowParams "reduce_window_sum" | "reduce_window_max" | "reduce_window_min",
        GenericReduceWindowParams "reduce_window",
        SelectAndScatterAddParams "select_and_scatter_add",
        SelectAndGatherAddParams "select_and_gather_add",
        RandomUnwrapParams "random_unwrap",
        RandomFoldInParams "random_fold_in",
        Threefry2x32Params "threefry2x32",
    }
    ; bare {
        "select_n" => Elementwise::SelectN,
        "clamp" => Elementwise::Clamp,
        "regularized_incomplete_beta" => Elementwise::RegularizedIncompleteBeta,
        "complex" => Elementwise::Complex,
        "real" => Elementwise::Real,
        "imag" => Elementwise::Imag,
        "dynamic_update_slice" => Indexing::DynamicUpdateSlice,
        "cholesky" => Linalg::Cholesky,
        "lu" => Linalg::Lu,
    }
}

/// Reads one equation's primitive and params.
pub(crate) type Parser = fn(&mut ParseCx<'_, '_, '_>) -> PResult<Primitive>;

/// Reads the params of the primitive printed as `name`, or `None` when no
/// primitive prints as `name`.
pub(crate) fn parse_by_name(
    name: &str,
    cx: &mut ParseCx<'_, '_, '_>,
) -> Option<PResult<Primitive>> {
    parser_of(name).map(|f| f(cx))
}

/// A params struct's parser, as a primitive.
fn typed<T: ParamsText + Into<Primitive>>(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Primitive> {
    T::parse(cx).map(Into::into)
}

/// A unary op, keyed by its name.
fn unary(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Primitive> {
    match UnaryOp::ALL.iter().find(|o| o.name() == cx.name) {
        Some(op) => Ok(Primitive::from(*op)),
        None => Err(cx
            .p
            .err(cx.p.pos, format!("unknown unary op `{}`", cx.name))),
    }
}

/// A binary op, keyed by its name.
fn binary(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Primitive> {
    match BinaryOp::ALL.iter().find(|o| o.name() == cx.name) {
        Some(op) => Ok(Primitive::from(*op)),
        None => Err(cx
            .p
            .err(cx.p.pos, format!("unknown binary op `{}`", cx.name))),
    }
}

/// `fft_type`: JAX prints the `FftType` enum's int, after `fft_lengths`.
impl ParamsText for FftParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("fft_lengths", Axes::print(&self.fft_lengths)));
        out.push(("fft_type", PV::Text(self.fft_type.code().to_string())));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let fft_lengths = cx.field::<Axes, _>("fft_lengths", None)?;
        let v = cx.p.req("fft_type")?;
        let code = match &v.v {
            PValue::Word(w) if w.ends_with("IRFFT") => 3,
            PValue::Word(w) if w.ends_with("RFFT") => 2,
            PValue::Word(w) if w.ends_with("IFFT") => 1,
            PValue::Word(w) if w.ends_with("FFT") => 0,
            _ => cx.p.int_of(v)?,
        };
        let fft_type = FftType::from_code(code).ok_or_else(|| bad(cx, v, "fft_type 0 to 3"))?;
        Ok(FftParams {
            fft_type,
            fft_lengths,
        })
    }
}

/// `rounding_method`: JAX prints the enum's int; older texts name it.
impl ParamsText for RoundParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        let m = match self.rounding_method {
            RoundingMethod::AwayFromZero => "0",
            RoundingMethod::ToNearestEven => "1",
        };
        out.push(("rounding_method", PV::Text(m.into())));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let v = cx.p.req("rounding_method")?;
        let m = match &v.v {
            PValue::Word(w) if w.ends_with("AWAY_FROM_ZERO") => 0,
            PValue::Word(w) if w.ends_with("TO_NEAREST_EVEN") => 1,
            _ => cx.p.int_of(v)?,
        };
        let rounding_method = match m {
            0 => RoundingMethod::AwayFromZero,
            1 => RoundingMethod::ToNearestEven,
            _ => return Err(bad(cx, v, "rounding_method 0 or 1")),
        };
        Ok(RoundParams { rounding_method })
    }
}

/// JAX elides `shape` (the result type shows it) unless a size is dynamic,
/// and `broadcast_dimensions` when empty; a dynamic size prints both, as
/// `broadcast_dimensions=() shape=(None,)`.
impl ParamsText for BroadcastInDimParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        let dynamic = self.shape.iter().any(Option::is_none);
        if dynamic || !self.broadcast_dimensions.is_empty() {
            out.push((
                "broadcast_dimensions",
                IntsT::print(&self.broadcast_dimensions),
            ));
        }
        if dynamic {
            out.push(("shape", Shape::print(&self.shape)));
        }
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let shape = match cx.out_sizes() {
            Some(s) => cx.field::<Shape, _>("shape", Some(s))?,
            None => cx.field::<Shape, _>("shape", None)?,
        };
        Ok(BroadcastInDimParams {
            shape,
            broadcast_dimensions: cx
                .field::<IntsT, _>("broadcast_dimensions", Some(Ints::default()))?,
        })
    }
}

/// `new_sizes` defaults to the result's sizes; `sharding` is always `None`.
impl ParamsText for ReshapeParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("dimensions", OptAxes::print(&self.dimensions)));
        out.push(("new_sizes", Shape::print(&self.new_sizes)));
        out.push(("sharding", PV::Text("None".into())));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        cx.constant("sharding", "None")?;
        let sizes = cx.out_sizes().unwrap_or_default();
        Ok(ReshapeParams {
            new_sizes: cx.field::<Shape, _>("new_sizes", Some(sizes))?,
            dimensions: cx.field::<OptAxes, _>("dimensions", Some(None))?,
        })
    }
}

/// `shape` defaults to the result's sizes; `sharding` is always `None`.
impl ParamsText for IotaParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("dimension", Num::print(&self.dimension)));
        out.push(("dtype", Dt::print(&self.dtype)));
        out.push(("shape", Shape::print(&self.shape)));
        out.push(("sharding", PV::Text("None".into())));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        cx.constant("sharding", "None")?;
        let sizes = cx.out_sizes().unwrap_or_default();
        Ok(IotaParams {
            dtype: cx.field::<Dt, _>("dtype", None)?,
            shape: cx.field::<Shape, _>("shape", Some(sizes))?,
            dimension: cx.field::<Num, _>("dimension", None)?,
        })
    }
}

/// `axis` defaults to the operand's last axis.
impl ParamsText for TopKParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axis", Num::print(&self.axis)));
        out.push(("k", Num::print(&self.k)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let last = cx.in_rank().map_or(0, |r| r.saturating_sub(1));
        Ok(TopKParams {
            k: cx.field::<Num, _>("k", None)?,
            axis: cx.field::<Num, _>("axis", Some(last))?,
        })
    }
}

/// Whether `v` is the word `True`/`False` (scan's boolean `unroll`).
pub(super) fn bool_word(v: &crate::parse::params::PV) -> Option<bool> {
    if is_word(v, "True") {
        Some(true)
    } else if is_word(v, "False") {
        Some(false)
    } else {
        None
    }
}
