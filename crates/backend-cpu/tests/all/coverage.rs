//! The primitive coverage table: every `Primitive` has a row (an
//! exhaustive match, so a new variant breaks this build until it gets one),
//! and every row that is not an explicit exclusion is exercised by cases
//! that run on the cpu backend and on the reference interpreter with
//! seeded random inputs on several shapes (scalars, size-1 dimensions,
//! odd sizes that leave vector tails). Results must match bit for bit
//! where the arithmetic is exact, else within the stated tolerance.

use crate::common;
use common::{check, parse, Dist, Tol};
use jaxon_ir::primitive::{
    AddUpdateParams, Callback, Collective, Control, Elementwise, GetParams, Indexing, Linalg,
    Marker, Pallas, Random, Reduction, State, Structural, SwapParams, Window,
};

use jaxon_ir::primitive::{ArgOp, BinaryOp, CumulativeOp, ReduceOp, ScatterKind, UnaryOp};
use jaxon_ir::{Jaxpr, Primitive};
use std::collections::BTreeSet;

/// What the table says about a primitive.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Row {
    /// Exercised by the cases below.
    Tested,
    /// Not compiled by this backend, with the reason.
    Excluded(&'static str),
}

/// Number of `Primitive` variants; `row` gives each a distinct tag below it.
const N_VARIANTS: usize = 97;

/// The row of every primitive, with the variant's tag.
fn row(p: &Primitive) -> (usize, Row) {
    use Row::{Excluded, Tested};
    const PALLAS: &str =
        "Pallas atomics: compiled; tested through pallas_call kernels in tests/pallas.rs";
    const STORE: &str = "masked store: parsed text binds a result the interpreter rejects; tests/pallas.rs covers it";
    const NAMED: &str = "named-axis collectives have a value only under vmap, whose batching \
        rule rewrites them (tests/collectives.rs)";
    match p {
        Primitive::Elementwise(Elementwise::Unary(_)) => (0, Tested),
        Primitive::Elementwise(Elementwise::Binary(_)) => (1, Tested),
        Primitive::Elementwise(Elementwise::IntegerPow(_)) => (2, Tested),
        Primitive::Elementwise(Elementwise::Round(_)) => (3, Tested),
        Primitive::Elementwise(Elementwise::ReducePrecision(_)) => (4, Tested),
        Primitive::Elementwise(Elementwise::ConvertElementType(_)) => (5, Tested),
        Primitive::Elementwise(Elementwise::BitcastConvertType(_)) => (6, Tested),
        Primitive::Elementwise(Elementwise::SelectN) => (7, Tested),
        Primitive::Elementwise(Elementwise::Clamp) => (8, Tested),
        Primitive::Elementwise(Elementwise::RegularizedIncompleteBeta) => (66, Tested),
        Primitive::Structural(Structural::BroadcastInDim(_)) => (9, Tested),
        Primitive::Structural(Structural::Reshape(_)) => (10, Tested),
        Primitive::Structural(Structural::Transpose(_)) => (11, Tested),
        Primitive::Structural(Structural::Squeeze(_)) => (12, Tested),
        Primitive::Structural(Structural::Rev(_)) => (13, Tested),
        Primitive::Structural(Structural::Pad(_)) => (14, Tested),
        Primitive::Structural(Structural::Concatenate(_)) => (15, Tested),
        Primitive::Indexing(Indexing::Slice(_)) => (16, Tested),
        Primitive::Indexing(Indexing::DynamicSlice(_)) => (17, Tested),
        Primitive::Indexing(Indexing::DynamicUpdateSlice) => (18, Tested),
        Primitive::Indexing(Indexing::Gather(_)) => (19, Tested),
        Primitive::Indexing(Indexing::Scatter(_)) => (20, Tested),
        Primitive::Structural(Structural::Iota(_)) => (21, Tested),
        Primitive::Structural(Structural::Split(_)) => (22, Tested),
        Primitive::Structural(Structural::Tile(_)) => (23, Tested),
        Primitive::Structural(Structural::Stack(_)) => (24, Tested),
        Primitive::Reduction(Reduction::Reduce(_)) => (25, Tested),
        Primitive::Reduction(Reduction::ArgReduce(_)) => (26, Tested),
        Primitive::Reduction(Reduction::Cumulative(_)) => (27, Tested),
        Primitive::Linalg(Linalg::DotGeneral(_)) => (28, Tested),
        Primitive::Linalg(Linalg::ConvGeneralDilated(_)) => (29, Tested),
        Primitive::Linalg(Linalg::Cholesky) => (59, Tested),
        Primitive::Linalg(Linalg::TriangularSolve(_)) => (60, Tested),
        Primitive::Linalg(Linalg::Lu) => (61, Tested),
        Primitive::Linalg(Linalg::Qr(_)) => (62, Tested),
        Primitive::Linalg(Linalg::Eigh(_)) => (63, Tested),
        Primitive::Linalg(Linalg::Svd(_)) => (64, Tested),
        Primitive::Linalg(Linalg::TridiagonalSolve(_)) => (65, Tested),
        Primitive::Reduction(Reduction::Sort(_)) => (30, Tested),
        Primitive::Reduction(Reduction::TopK(_)) => (31, Tested),
        Primitive::Structural(Structural::Empty2(_)) => (32, Tested),
        Primitive::Control(Control::Cond(_)) => (33, Tested),
        Primitive::Control(Control::While(_)) => (34, Tested),
        Primitive::Control(Control::Scan(_)) => (35, Tested),
        Primitive::Control(Control::ForLoop(_)) => (36, Tested),
        Primitive::Control(Control::Jit(_)) => (37, Tested),
        Primitive::Control(Control::CustomJvpCall(_)) => (38, Tested),
        Primitive::Control(Control::CustomVjpCall(_)) => (39, Tested),
        Primitive::Control(Control::Remat(_)) => (40, Tested),
        Primitive::Control(Control::CustomLinearSolve(_)) => (58, Tested),
        Primitive::State(State::Get(_)) => (41, Tested),
        Primitive::State(State::Swap(_)) => (42, Tested),
        Primitive::State(State::AddUpdate(_)) => (43, Tested),
        Primitive::Pallas(Pallas::ProgramId(_)) => (44, Tested),
        Primitive::Pallas(Pallas::NumPrograms(_)) => (45, Tested),
        Primitive::Pallas(Pallas::Load(_)) => (46, Tested),
        Primitive::Pallas(Pallas::Store(_)) => (47, Excluded(STORE)),
        Primitive::Pallas(Pallas::AtomicRmw(_)) => (48, Excluded(PALLAS)),
        Primitive::Pallas(Pallas::AtomicCas(_)) => (49, Excluded(PALLAS)),
        Primitive::Pallas(Pallas::PallasCall(_)) => (50, Tested),
        // Positional all-reduces (vmap's batched form) are lowered to
        // reductions by `simplify`.
        Primitive::Collective(Collective::AllReduce(_)) => (51, Tested),
        Primitive::Collective(Collective::AllGather(_)) => (52, Excluded(NAMED)),
        Primitive::Collective(Collective::AxisIndex(_)) => (53, Excluded(NAMED)),
        Primitive::Marker(Marker::Name(_)) => (54, Tested),
        Primitive::Marker(Marker::DevicePut(_)) => (55, Tested),
        Primitive::Marker(Marker::OptimizationBarrier(_)) => (56, Tested),
        Primitive::Marker(Marker::PlatformIndex(_)) => (57, Tested),
        // Complex programs run on the slow path (`src/complex.rs`).
        Primitive::Elementwise(Elementwise::Complex) => (67, Tested),
        Primitive::Elementwise(Elementwise::Real) => (68, Tested),
        Primitive::Elementwise(Elementwise::Imag) => (69, Tested),
        Primitive::Elementwise(Elementwise::Conj(_)) => (70, Tested),
        Primitive::Linalg(Linalg::Fft(_)) => (71, Tested),
        Primitive::Window(Window::ReduceWindow(_)) => (72, Tested),
        Primitive::Window(Window::SelectAndScatterAdd(_)) => (73, Tested),
        Primitive::Window(Window::SelectAndGatherAdd(_)) => (74, Tested),
        // Programs with typed keys run on the host path (`src/complex.rs`).
        Primitive::Random(Random::Seed(_)) => (75, Tested),
        Primitive::Random(Random::Wrap(_)) => (76, Tested),
        Primitive::Random(Random::Unwrap(_)) => (77, Tested),
        Primitive::Random(Random::Bits(_)) => (78, Tested),
        Primitive::Random(Random::Split(_)) => (79, Tested),
        Primitive::Random(Random::FoldIn(_)) => (80, Tested),
        Primitive::Random(Random::Threefry2x32(_)) => (81, Tested),
        Primitive::Random(Random::Gamma(_)) => (82, Tested),
        Primitive::Random(Random::RngBitGenerator(_)) => (95, Tested),
        Primitive::Linalg(Linalg::Schur(_)) => (96, Tested),
        Primitive::Window(Window::Generic(_)) => (83, Tested),
        Primitive::Control(Control::ShardMap(_)) => (84, Excluded(SPMD)),
        Primitive::Collective(Collective::Ppermute(_)) => (85, Excluded(SPMD)),
        Primitive::Collective(Collective::AllToAll(_)) => (86, Excluded(SPMD)),
        Primitive::Collective(Collective::ReduceScatter(_)) => (87, Excluded(SPMD)),
        Primitive::Collective(Collective::Pvary(_)) => (88, Excluded(SPMD)),
        Primitive::Collective(Collective::PsumInvariant(_)) => (89, Excluded(SPMD)),
        Primitive::Marker(Marker::Reshard(_)) => (90, Excluded(SPMD)),
        Primitive::Marker(Marker::ShardingConstraint(_)) => (91, Excluded(SPMD)),
        Primitive::Callback(Callback::DebugPrint(_)) => (92, Excluded(CALLBACK)),
        Primitive::Callback(Callback::DebugCallback(_)) => (93, Excluded(CALLBACK)),
        Primitive::Callback(Callback::PureCallback(_)) => (94, Excluded(CALLBACK)),
    }
}

/// The tags of the excluded variants (they never occur in a case).
const EXCLUDED_TAGS: &[usize] = &[
    47, 48, 49, 52, 53, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94,
];

/// Why the callbacks are excluded: they call back into the Rust program,
/// which a parsed text has no function for; `tests/callbacks.rs` runs them.
const CALLBACK: &str = "host callbacks: tested from Rust in tests/callbacks.rs";

/// Why the SPMD primitives are excluded: `shard_map` runs on the
/// interpreter only (no native step yet); the markers are tested there.
const SPMD: &str = "shard_map and its collectives run on the interpreter only";

/// Names of the members of the op families (exhaustive matches keep these
/// lists complete).
fn family_names() -> Vec<&'static str> {
    let reduce = |o: ReduceOp| match o {
        ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod => o.name(),
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => o.name(),
    };
    let arg = |o: ArgOp| match o {
        ArgOp::Argmax | ArgOp::Argmin => o.name(),
    };
    let cum = |o: CumulativeOp| match o {
        CumulativeOp::Cumsum
        | CumulativeOp::Cumprod
        | CumulativeOp::Cummax
        | CumulativeOp::Cummin
        | CumulativeOp::Cumlogsumexp => o.name(),
    };
    let scat = |k: ScatterKind| match k {
        ScatterKind::Set
        | ScatterKind::Add
        | ScatterKind::Mul
        | ScatterKind::Min
        | ScatterKind::Max => k.name(),
    };
    let mut v: Vec<&'static str> = UnaryOp::ALL.iter().map(|o| o.name()).collect();
    v.extend(BinaryOp::ALL.iter().map(|o| o.name()));
    use ReduceOp as R;
    v.extend(
        [R::Sum, R::Max, R::Min, R::Prod, R::And, R::Or, R::Xor]
            .into_iter()
            .map(reduce),
    );
    v.extend([ArgOp::Argmax, ArgOp::Argmin].into_iter().map(arg));
    use CumulativeOp as C;
    v.extend(
        [C::Cumsum, C::Cumprod, C::Cummax, C::Cummin, C::Cumlogsumexp]
            .into_iter()
            .map(cum),
    );
    use ScatterKind as S;
    v.extend(
        [S::Set, S::Add, S::Mul, S::Min, S::Max]
            .into_iter()
            .map(scat),
    );
    v
}

fn ty(dt: &str, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{dt}[{}]", dims.join(","))
}

/// Shapes for elementwise cases.
const SHAPES: &[&[usize]] = &[&[], &[1], &[7], &[1, 5], &[3, 1, 9]];

struct Case {
    text: String,
    dist: Dist,
    tol: Tol,
}

fn case(text: impl Into<String>, dist: Dist, tol: Tol) -> Case {
    Case {
        text: text.into(),
        dist,
        tol,
    }
}

/// Domain, f32/f64 tolerance and half tolerance of each unary float op.
fn unary_float(op: UnaryOp) -> Option<(Dist, Tol)> {
    use UnaryOp as U;
    let u = Dist::Uniform;
    Some(match op {
        U::Neg | U::Abs | U::Sign | U::Floor | U::Ceil | U::Sqrt | U::Rsqrt | U::Square => {
            (u(5.0), Tol::Exact)
        }
        // Helper calls: the interpreter's own code.
        U::Copy | U::StopGradient | U::Cbrt | U::Erfc => (u(4.0), Tol::Exact),
        U::Lgamma | U::Digamma | U::BesselI0e | U::BesselI1e => (u(6.0), Tol::Exact),
        // Inline polynomials (f32 erf and erf_inv; f64 ones are helpers).
        U::ErfInv => (Dist::Between(-1.0, 1.0), Tol::Ulp(4)),
        U::Atan | U::Asinh => (u(5.0), Tol::Ulp(5)),
        U::Asin | U::Acos => (Dist::Between(-1.0, 1.0), Tol::Ulp(5)),
        // Near -1 the interpreter's (std's) atanh loses digits; ours keeps
        // them (tests/math_ulp.rs measures it against an accurate form).
        U::Atanh => (Dist::Between(-0.9, 0.9), Tol::Ulp(5)),
        U::Acosh => (Dist::Between(1.0, 20.0), Tol::Ulp(4)),
        U::Erf => (u(4.0), Tol::Ulp(8)),
        U::Exp | U::Exp2 => (u(20.0), Tol::Ulp(3)),
        U::Expm1 => (u(5.0), Tol::Ulp(3)),
        U::Log => (Dist::Between(0.0, 50.0), Tol::Ulp(3)),
        U::Log1p => (Dist::Between(-1.0, 5.0), Tol::Ulp(4)),
        U::Logistic | U::Sinh | U::Cosh => (u(6.0), Tol::Ulp(4)),
        // f32 tanh is a rational function: about 5 ulp near |x| = 9.
        U::Tanh => (u(6.0), Tol::Ulp(6)),
        U::Sin | U::Cos => (u(10.0), Tol::Ulp(3)),
        U::Tan => (u(1.5), Tol::Ulp(5)),
        U::IsFinite | U::Not | U::PopulationCount | U::Clz => return None,
    })
}

fn elementwise_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for op in UnaryOp::ALL {
        let Some((dist, tol)) = unary_float(op) else {
            continue;
        };
        for dt in ["f32", "f64", "f16", "bf16"] {
            let half = dt.ends_with("16");
            for s in if half { &SHAPES[2..3] } else { SHAPES } {
                let t = ty(dt, s);
                let tol = if half && !matches!(tol, Tol::Exact) {
                    Tol::Rel(1e-2)
                } else {
                    tol
                };
                v.push(case(
                    format!("{{ lambda ; a:{t}. let b:{t} = {} a in (b,) }}", op.name()),
                    dist,
                    tol,
                ));
            }
        }
    }
    for (dt, out) in [("f32", "bool"), ("f16", "bool")] {
        v.push(case(
            format!(
                "{{ lambda ; a:{}. let b:{} = is_finite a in (b,) }}",
                ty(dt, &[9]),
                ty(out, &[9])
            ),
            Dist::Uniform(3.0),
            Tol::Exact,
        ));
    }
    for dt in ["i32", "bool", "u8"] {
        let t = ty(dt, &[1, 6]);
        v.push(case(
            format!("{{ lambda ; a:{t}. let b:{t} = not a in (b,) }}"),
            Dist::Uniform(50.0),
            Tol::Exact,
        ));
    }
    for op in ["population_count", "clz"] {
        for dt in ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"] {
            for s in [&[][..], &[3, 1, 9]] {
                let t = ty(dt, s);
                v.push(case(
                    format!("{{ lambda ; a:{t}. let b:{t} = {op} a in (b,) }}"),
                    Dist::Uniform(100.0),
                    Tol::Exact,
                ));
            }
        }
    }
    for op in BinaryOp::ALL {
        use BinaryOp as B;
        let (dts, out): (&[&str], Option<&str>) = match op {
            B::And | B::Or | B::Xor => (&["i32", "u8", "bool"], None),
            B::ShiftLeft | B::ShiftRightArithmetic | B::ShiftRightLogical => {
                (&["i32", "u16"], None)
            }
            B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => {
                (&["f32", "f16", "i8", "u32"], Some("bool"))
            }
            B::LtTo | B::LeTo => (&["f32", "f64", "f16", "bf16", "i8", "u32"], Some("bool")),
            _ => (&["f32", "f64", "f16", "bf16"], None),
        };
        for dt in dts {
            let shapes: &[&[usize]] = if dt.ends_with("16") {
                &[&[7]]
            } else {
                &[&[], &[1, 5], &[3, 1, 9]]
            };
            for s in shapes {
                let t = ty(dt, s);
                let o = ty(out.unwrap_or(dt), s);
                let (dist, tol) = match op {
                    // f32 pow is inline (through f64), f64 a helper.
                    B::Pow => (Dist::Between(0.1, 4.0), Tol::Ulp(1)),
                    B::Atan2 => (Dist::Uniform(4.0), Tol::Ulp(5)),
                    B::ShiftLeft | B::ShiftRightArithmetic | B::ShiftRightLogical => {
                        (Dist::Uniform(20.0), Tol::Exact)
                    }
                    _ => (Dist::Uniform(4.0), Tol::Exact),
                };
                v.push(case(
                    format!(
                        "{{ lambda ; a:{t} b:{t}. let c:{o} = {} a b in (c,) }}",
                        op.name()
                    ),
                    dist,
                    tol,
                ));
            }
        }
    }
    // The total order on -NaN, ±inf, ±0 and finite values: 0/0 is a NaN
    // (negative on x86), its negation the other one, x/0 an infinity, 0/-x
    // a negative zero.
    for dt in ["f32", "f64", "f16", "bf16"] {
        for s in [&[][..], &[13], &[3, 1, 9]] {
            let t = ty(dt, s);
            let o = ty("bool", s);
            v.push(case(
                format!(
                    "{{ lambda ; a:{t} b:{t}. let
    c:{t} = floor a
    d:{t} = floor b
    e:{t} = div c d
    f:{t} = neg e
    g:{o} = lt_to e f
    h:{o} = le_to e f
    i:{o} = lt_to e d
    j:{o} = le_to c e
    k:{o} = lt_to f 0.0:{dt}[]
  in (g, h, i, j, k) }}"
                ),
                Dist::Uniform(2.0),
                Tol::Exact,
            ));
        }
    }
    // Ties and signed zeros for nextafter, comparisons and rem.
    v.push(case(
        "{ lambda ; a:f32[13] b:f32[13]. let
    c:f32[13] = floor a
    d:f32[13] = floor b
    e:f32[13] = nextafter c d
    f:f32[13] = rem c d
    g:f32[13] = add e f
  in (g,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    ));
    for dt in ["f32", "f64"] {
        let t = ty(dt, &[13]);
        v.push(case(
            format!(
                "{{ lambda ; a:{t} b:{t}. let
    c:{t} = floor a
    d:{t} = floor b
    e:{t} = atan2 c d
  in (e,) }}"
            ),
            Dist::Uniform(2.0),
            Tol::Ulp(5),
        ));
    }
    // Helper call with three operands, inside and outside [0, 1].
    for dt in ["f32", "f64", "f16", "bf16"] {
        for s in [&[][..], &[1, 5], &[3, 1, 9]] {
            let t = ty(dt, s);
            v.push(case(
                format!("{{ lambda ; a:{t} b:{t} x:{t}. let c:{t} = regularized_incomplete_beta a b x in (c,) }}"),
                Dist::Between(0.05, 1.5),
                Tol::Exact,
            ));
        }
    }
    v.push(case(
        "{ lambda ; a:f32[8] b:i32[8]. let c:f32[8] = pow a b in (c,) }",
        Dist::Uniform(3.0),
        Tol::Ulp(1),
    ));
    for dt in ["f16", "bf16", "f32"] {
        v.push(case(
            format!(
                "{{ lambda ; a:{t} b:{t} c:{t} d:bool[5]. let
    e:{t} = integer_pow[y=3] a
    f:{t} = round[rounding_method=0] b
    g:{t} = clamp a c b
    h:{t} = select_n d e f
    i:{t} = add h g
  in (i,) }}",
                t = ty(dt, &[5])
            ),
            Dist::Uniform(3.0),
            Tol::Exact,
        ));
    }
    for (from, to) in [
        ("f32", "f16"),
        ("f64", "bf16"),
        ("f16", "f32"),
        ("bf16", "f16"),
        ("i32", "f16"),
        ("f16", "i8"),
        ("bool", "bf16"),
    ] {
        v.push(case(
            format!(
                "{{ lambda ; a:{}. let b:{} = convert_element_type[new_dtype={} weak_type=False] a in (b,) }}",
                ty(from, &[11]),
                ty(to, &[11]),
                long(to)
            ),
            Dist::Uniform(300.0),
            Tol::Exact,
        ));
    }
    v
}

fn long(dt: &str) -> &'static str {
    match dt {
        "f16" => "float16",
        "bf16" => "bfloat16",
        "f32" => "float32",
        "f64" => "float64",
        "i8" => "int8",
        "i32" => "int32",
        "u16" => "uint16",
        "bool" => "bool",
        _ => "int64",
    }
}

fn structural_cases() -> Vec<Case> {
    let u = Dist::Uniform;
    let mut v = vec![
        case(
            "{ lambda ; a:f32[2,3] b:f32[4,1]. let
    c:f32[1,2,3] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(1, 2, 3) sharding=None] a
    d:f32[6] = reshape[dimensions=None new_sizes=(6,) sharding=None] a
    e:f32[6] = reshape[dimensions=(1, 0) new_sizes=(6,) sharding=None] a
    f:f32[3,2] = transpose[permutation=(1, 0)] a
    g:f32[4] = squeeze[dimensions=(1,)] b
    h:f32[2,3] = rev[dimensions=(0, 1)] a
    i:f32[2,2] = slice[limit_indices=(2, 3) start_indices=(0, 1) strides=None] a
    j:f32[6,4] = pad[padding_config=((1, 2, 1), (-1, 0, 1))] a 0.5:f32[]
    k:f32[2,6] = concatenate[dimension=1] a h
    l:f32[2,1] m:f32[2,2] = split[axis=1 sizes=(1, 2)] a
    n:f32[4,9] = tile[reps=(2, 3)] a
    o:f32[2,2,3] = stack[axis=1] a h
    p:i32[3,4] = iota[dimension=1 dtype=int32 shape=(3, 4) sharding=None]
  in (c, d, e, f, g, i, j, k, l, m, n, o, p) }",
            u(4.0),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:f32[4,5] b:i32[] c:i32[] d:f32[2,3]. let
    e:f32[2,3] = dynamic_slice[slice_sizes=(2, 3)] a b c
    f:f32[4,5] = dynamic_update_slice a d c b
  in (e, f) }",
            u(6.0),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:i8[1,7] b:i64[] c:i64[]. let
    d:i8[1,4] = dynamic_slice[slice_sizes=(1, 4)] a b c
  in (d,) }",
            u(9.0),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:f32[5] b:f64[2] c:u8[4,2]. let
    d:i32[5] = bitcast_convert_type[new_dtype=int32] a
    e:u16[2,4] = bitcast_convert_type[new_dtype=uint16] b
    f:i16[4] = bitcast_convert_type[new_dtype=int16] c
    g:f32[5] = reduce_precision[exponent_bits=5 mantissa_bits=10] a
    h:f64[2] = reduce_precision[exponent_bits=8 mantissa_bits=7] b
  in (d, e, f, g, h) }",
            u(1e5),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:bf16[6]. let b:bf16[6] = reduce_precision[exponent_bits=4 mantissa_bits=3] a in (b,) }",
            u(100.0),
            Tol::Exact,
        ),
    ];
    // Gathers and scatters in every mode; indices run out of bounds.
    for mode in ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"] {
        v.push(case(
            format!(
                "{{ lambda ; a:f32[3,5] b:i32[2,1]. let
    c:f32[3,2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      slice_sizes=(3, 1)
      unique_indices=False
    ] a b
  in (c,) }}"
            ),
            u(7.0),
            Tol::Exact,
        ));
        v.push(case(
            format!(
                "{{ lambda ; a:i32[2,5,3] b:i32[2,4,1]. let
    c:i32[2,4,2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,))
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      slice_sizes=(1, 1, 2)
      unique_indices=False
    ] a b
  in (c,) }}"
            ),
            u(6.0),
            Tol::Exact,
        ));
        for (kind, comb) in [
            ("scatter", None),
            ("scatter-add", Some("add")),
            ("scatter-mul", Some("mul")),
            ("scatter-min", Some("min")),
            ("scatter-max", Some("max")),
        ] {
            for dt in ["f32", "i32", "f16"] {
                let uj = match comb {
                    None => "None".to_string(),
                    Some(c) => {
                        format!("{{ lambda ; k:{dt}[] l:{dt}[]. let m:{dt}[] = {c} k l in (m,) }}")
                    }
                };
                v.push(case(
                    format!(
                        "{{ lambda ; a:{dt}[3,6] b:i32[4,1] c:{dt}[3,4]. let
    d:{dt}[3,6] = {kind}[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(0,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      unique_indices=False
      update_consts=()
      update_jaxpr={uj}
    ] a b c
  in (d,) }}"
                    ),
                    u(7.0),
                    Tol::Exact,
                ));
            }
        }
    }
    v
}

fn reduction_and_sort_cases() -> Vec<Case> {
    let u = Dist::Uniform;
    let mut v = Vec::new();
    for (op, dts) in [
        ("reduce_sum", &["f32", "f16", "i32"][..]),
        ("reduce_max", &["f32", "bf16", "u8"]),
        ("reduce_min", &["f64", "i16"]),
        ("reduce_prod", &["f32", "i64"]),
        ("reduce_and", &["bool", "u32"]),
        ("reduce_or", &["bool", "i8"]),
        ("reduce_xor", &["bool", "i32"]),
    ] {
        for dt in dts {
            let tol = if dt.starts_with('f') || dt.starts_with('b') && *dt != "bool" {
                Tol::Rel(1e-2)
            } else {
                Tol::Exact
            };
            v.push(case(
                format!(
                    "{{ lambda ; a:{}. let
    b:{} = {op}[axes=(0, 2) out_sharding=None] a
    c:{} = {op}[axes=(1,) out_sharding=None] a
  in (b, c) }}",
                    ty(dt, &[3, 5, 9]),
                    ty(dt, &[5]),
                    ty(dt, &[3, 9])
                ),
                u(2.0),
                tol,
            ));
        }
    }
    for op in ["psum", "pmax", "pmin"] {
        v.push(case(
            format!(
                "{{ lambda ; a:f32[4,3]. let b:f32[3] = {op}[axes=(0,) axis_index_groups=None] a in (b,) }}"
            ),
            u(2.0),
            Tol::Rel(1e-6),
        ));
    }
    for op in ["argmax", "argmin"] {
        for dt in ["f32", "f16", "i32"] {
            v.push(case(
                format!(
                    "{{ lambda ; a:{}. let b:i32[3] = {op}[axes=(1,) index_dtype=int32] a in (b,) }}",
                    ty(dt, &[3, 7])
                ),
                u(3.0),
                Tol::Exact,
            ));
        }
    }
    for op in ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"] {
        for dt in ["f32", "f64", "f16", "bf16"] {
            for rev in ["False", "True"] {
                v.push(case(
                    format!(
                        "{{ lambda ; a:{t}. let b:{t} = {op}[axis=0 reverse={rev}] a in (b,) }}",
                        t = ty(dt, &[5, 3])
                    ),
                    u(2.0),
                    Tol::Exact,
                ));
            }
        }
    }
    // Sorts: NaNs (sqrt of negatives) go last; ties are stable.
    v.push(case(
        "{ lambda ; a:f32[4,7] b:i32[4,7]. let
    c:f32[4,7] = sqrt a
    d:f32[4,7] e:i32[4,7] = sort[dimension=1 is_stable=True num_keys=1] c b
    f:f32[4,7] = floor a
    g:f32[4,7] h:i32[4,7] = sort[dimension=0 is_stable=True num_keys=2] f b
    i:i32[4,7] = sort[dimension=1 is_stable=False num_keys=1] b
  in (d, e, g, h, i) }",
        u(3.0),
        Tol::Exact,
    ));
    for dt in ["f32", "bf16", "i64"] {
        v.push(case(
            format!(
                "{{ lambda ; a:{}. let
    b:{} c:i32[2,3] = top_k[axis=1 k=3] a
    d:{} = sort[dimension=0 is_stable=True num_keys=1] a
  in (b, c, d) }}",
                ty(dt, &[2, 7]),
                ty(dt, &[2, 3]),
                ty(dt, &[2, 7])
            ),
            u(3.0),
            Tol::Exact,
        ));
    }
    v
}

/// The decompositions and solves on well-conditioned inputs: `a a^T + 4 I`
/// (positive definite) for `cholesky`, inputs in [1, 2] plus `4 I` for the
/// rest, f32 and f64.
fn decomp_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (dt, full) in [("f32", "float32"), ("f64", "float64")] {
        let pre = format!(
            "{{ lambda ; a:{dt}[2,4,4] k:{dt}[2,4,2] r:{dt}[2,2,4] t:{dt}[2,4]. let
    b:{dt}[2,4,4] = dot_general[dimension_numbers=(([2], [2]), ([0], [0])) precision=None preferred_element_type={full}] a a
    e:i32[4,4] = iota[dimension=0 dtype=int32 shape=(4, 4) sharding=None] 
    f:i32[4,4] = iota[dimension=1 dtype=int32 shape=(4, 4) sharding=None] 
    g:bool[4,4] = eq e f
    h:{dt}[4,4] = convert_element_type[new_dtype={full} weak_type=False] g
    i:{dt}[4,4] = mul h 4.0:{dt}[]
    j:{dt}[2,4,4] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(2, 4, 4) sharding=None] i
    c:{dt}[2,4,4] = add b j
    w:{dt}[2,4,4] = add a j
    u:{dt}[2,4] = add t 4.0:{dt}[]"
        );
        let body = format!(
            "
    d:{dt}[2,4,4] = cholesky c
    l:{dt}[2,4,2] = triangular_solve[conjugate_a=False left_side=True lower=True transpose_a=True unit_diagonal=False] w k
    m:{dt}[2,2,4] = triangular_solve[conjugate_a=False left_side=False lower=False transpose_a=False unit_diagonal=True] w r
    n:{dt}[2,4,4] o:i32[2,4] p:i32[2,4] = lu w
    q:{dt}[2,4,4] s:{dt}[2,4,4] = qr[full_matrices=False pivoting=False use_magma=None] w
    x:{dt}[2,4] = svd[algorithm=None compute_uv=False full_matrices=True subset_by_index=None] w
    y:{dt}[2,4,4] z:{dt}[2,4] = eigh[algorithm=None lower=True sort_eigenvalues=True subset_by_index=None] c
    ba:{dt}[2,4,4] = mul y y
    bb:{dt}[2,4,2] = tridiagonal_solve[perturb_singular=False] t u t k
    bc:{dt}[2,4,4] bd:{dt}[2,4,4] = schur[compute_schur_vectors=True select_callable=None sort_eig_vals=False] a
  in (d, l, m, n, o, p, q, s, x, z, ba, bb, bc, bd) }}"
        );
        v.push(case(pre + &body, Dist::Between(1.0, 2.0), Tol::Rel(1e-3)));
    }
    v
}

fn linalg_cases() -> Vec<Case> {
    let u = Dist::Uniform;
    let conv = |lhs: &str, rhs: &str, out: &str, params: &str, tol: Tol| {
        case(
            format!(
                "{{ lambda ; a:{lhs} b:{rhs}. let
    c:{out} = conv_general_dilated[
      {params}
      out_sharding=None
      precision=None
      preferred_element_type=None
    ] a b
  in (c,) }}"
            ),
            u(2.0),
            tol,
        )
    };
    let p1 = "batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1))
      feature_group_count=1
      lhs_dilation=(1,)
      padding=((0, 0),)
      rhs_dilation=(1,)
      window_strides=(2,)";
    let p2 = "batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))
      feature_group_count=2
      lhs_dilation=(1, 2)
      padding=((1, 2), (0, -1))
      rhs_dilation=(2, 1)
      window_strides=(2, 1)";
    let p3 = "batch_group_count=2
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
      feature_group_count=1
      lhs_dilation=(1,)
      padding=((1, 1),)
      rhs_dilation=(1,)
      window_strides=(1,)";
    vec![
        // Complex intermediates: the slow path's FFTs (rustfft) against the
        // interpreter's reference DFT, radix-2 and Bluestein lengths.
        case(
            "{ lambda ; a:f32[4,8] b:f32[4,8] c:f32[3,6]. let
    d:c64[4,8] = complex a b
    e:c64[4,8] = fft[fft_lengths=(8,) fft_type=0] d
    f:c64[4,8] = conj[input_dtype=complex64] e
    g:f32[4,8] = real f
    h:f32[4,8] = imag f
    i:c64[4,5] = fft[fft_lengths=(8,) fft_type=2] a
    j:f32[4,8] = fft[fft_lengths=(8,) fft_type=3] i
    k:c64[3,4] = fft[fft_lengths=(3, 6) fft_type=2] c
    l:f32[3,6] = fft[fft_lengths=(3, 6) fft_type=3] k
    m:c64[3,6] = complex c c
    n:c64[3,6] = fft[fft_lengths=(6,) fft_type=1] m
    o:f32[3,6] = real n
  in (g, h, j, l, o) }",
            u(2.0),
            Tol::Rel(1e-5),
        ),
        conv("f32[2,9,3]", "f32[3,3,4]", "f32[2,4,4]", p1, Tol::Rel(1e-5)),
        conv("i32[2,9,3]", "i32[3,3,4]", "i32[2,4,4]", p1, Tol::Exact),
        conv("f16[2,9,3]", "f16[3,3,4]", "f16[2,4,4]", p1, Tol::Rel(1e-2)),
        conv(
            "f32[2,4,7,6]",
            "f32[6,2,3,2]",
            "f32[2,6,3,9]",
            p2,
            Tol::Rel(1e-5),
        ),
        conv("f64[4,3,5]", "f64[4,3,2]", "f64[2,4,6]", p3, Tol::Rel(1e-12)),
        case(
            "{ lambda ; a:f16[3,5] b:f16[5,2] c:i8[3,4] d:i8[4,2] e:bool[2,3] f:bool[3,2]. let
    g:f32[3,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    h:f16[3,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float16] a b
    i:i32[3,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=int32] c d
    j:bool[2,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=bool] e f
    k:f32[3,3] = dot_general[dimension_numbers=(([1], [1]), ([], [])) preferred_element_type=float32] g g
  in (g, h, i, j, k) }",
            u(2.0),
            Tol::Rel(1e-2),
        ),
    ]
}

fn control_cases() -> Vec<Case> {
    let u = Dist::Uniform;
    vec![
        // A pallas_call over a grid of 5 with squeezed row blocks padded
        // from 3 to 4: masked load with `other`, program_id, num_programs.
        case(
            "{ lambda ; a:f32[5,3]. let
    b:f32[5,3] = pallas_call[
      compiler_params=None
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(5,), block_mappings=(BlockMapping(block_shape=(Squeezed(), Blocked(block_size=4)), array_aval=ShapedArray(float32[5,3]), index_map={ lambda ; c:i32[]. let
          
        in (c, 0:i32[]) }), BlockMapping(block_shape=(Squeezed(), Blocked(block_size=4)), array_aval=ShapedArray(float32[5,3]), index_map={ lambda ; d:i32[]. let
          
        in (d, 0:i32[]) })))
      input_output_aliases=()
      interpret=False
      jaxpr={ lambda ; e:Ref<default>{f32[4]} f:Ref<default>{f32[4]}. let
          g:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
          h:bool[4] = lt g 3:i32[]
          i:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,) sharding=None] -1.0:f32[]
          j:f32[4] <- e[:] mask=h other=i
          k:i32[] = program_id[axis=0] 
          l:i32[] = num_programs[axis=0] 
          m:i32[] = add k l
          n:f32[] = convert_element_type[new_dtype=float32 weak_type=False] m
          o:f32[4] = add j n
          _:f32[4], f[:] <- f[:], o
        in () }
      mesh=None
      metadata=None
      name=print_case
      out_avals=(ShapedArray(float32[5,3]),)
    ] a
  in (b,) }",
            u(2.0),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:f32[] b:f32[5]. let
    c:f32[5] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:f32[] e:i32[] f:f32[5]. let
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
          h:f32[] = mul g d
          i:f32[5] = broadcast_in_dim[broadcast_dimensions=() shape=(5,) sharding=None] h
          j:f32[5] = add f i
        in (j,) }
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=False
    ] a 1:i32[] 8:i32[] 2:i32[] 0:i32[] b
  in (c,) }",
            u(3.0),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:f32[4]. let
    b:f32[4] = custom_vjp_call[
      name=clip_gradient
      bwd=_cg_bwd
      call_jaxpr={ lambda ; c:f32[4]. let  in (c,) }
      fwd=_cg_fwd
      symbolic_zeros=False
    ] a
    d:f32[4] = mul b 3.0:f32[]
    e:f32[] = reduce_sum[axes=(0,) out_sharding=None] d
  in (e,) }",
            u(3.0),
            Tol::Rel(1e-6),
        ),
        // Markers, and a custom_linear_solve (a diagonal system) at the top
        // level and inside a loop body.
        case(
            "{ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = name[name=hidden] a
    d:f32[3] e:f32[3] = device_put[
      copy_semantics=(ArrayCopySemantics.REUSE_INPUT, ArrayCopySemantics.REUSE_INPUT)
      devices=(None, None)
      srcs=(None, None)
    ] c b
    f:f32[3] g:f32[3] = optimization_barrier d e
    h:f32[3] = mul f f
    i:f32[3] = add h 1.0:f32[]
    j:f32[3] = custom_linear_solve[
      const_lengths=_LinearSolveTuple(matvec=1, vecmat=0, solve=1, transpose_solve=0)
      jaxprs=_LinearSolveTuple(matvec={ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = mul a b in (c,) }, vecmat=None, solve={ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = div b a in (c,) }, transpose_solve=None)
    ] i i g
    k:i32[] = platform_index[platforms=(('cpu',), None)] 
    l:i32[] m:f32[3] = while[
      body_jaxpr={ lambda ; n:f32[3] o:i32[] p:f32[3]. let
          q:f32[3] = custom_linear_solve[
            const_lengths=_LinearSolveTuple(matvec=1, vecmat=0, solve=1, transpose_solve=0)
            jaxprs=_LinearSolveTuple(matvec={ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = mul a b in (c,) }, vecmat=None, solve={ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = div b a in (c,) }, transpose_solve=None)
          ] n n p
          r:i32[] = add o 1:i32[]
        in (r, q) }
      body_nconsts=1
      cond_jaxpr={ lambda ; s:i32[] t:f32[3]. let u:bool[] = lt s 3:i32[] in (u,) }
      cond_nconsts=0
    ] i k j
  in (m, l) }",
            u(3.0),
            Tol::Rel(1e-6),
        ),
        case(
            "{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      name=softplus_cj
      call_jaxpr={ lambda ; c:f32[2,3]. let
          d:f32[2,3] = abs c
          e:f32[2,3] = max c 0.0:f32[]
          f:f32[2,3] = add d e
        in (f,) }
      jvp=<lambda>
      symbolic_zeros=False
    ] a
    g:f32[2,3] = remat2[
      differentiated=False
      jaxpr={ lambda ; h:f32[2,3]. let i:f32[2,3] = mul h h in (i,) }
      policy=None
      prevent_cse=True
    ] b
    j:f32[2,3] = jit[
      name=inner
      jaxpr={ lambda ; k:f32[2,3]. let l:f32[2,3] = sub k 1.0:f32[] in (l,) }
    ] g
  in (j,) }",
            u(3.0),
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:f32[2,3]. let
    b:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] a
    c:bool[] = gt b 0.0:f32[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f32[2,3] f:f32[2,3] = cond[
      branches=(
        { lambda ; g:f32[2,3]. let
            h:f32[2,3] = neg g
            k:f32[] = empty2[dtype=float32 memory_space=MemorySpace.Device] 
            l:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3) sharding=None] k
          in (h, l) }
        { lambda ; m:f32[2,3]. let
            n:f32[2,3] = mul m m
          in (n, m) }
      )
    ] d a
    o:i32[] p:f32[2,3] = while[
      body_jaxpr={ lambda ; be:f32[2,3] q:i32[] r:f32[2,3]. let
          s:i32[] = add q 1:i32[]
          t:f32[2,3] = add r be
        in (s, t) }
      body_nconsts=1
      cond_jaxpr={ lambda ; u:i32[] v:f32[2,3]. let w:bool[] = lt u 3:i32[] in (w,) }
      cond_nconsts=0
    ] e 0:i32[] f
    bc:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a
    x:f32[3] y:f32[2,3] = scan[
      _split_transpose=False
      jaxpr={ lambda ; z:f32[3] ba:f32[3]. let
          bb:f32[3] = add z ba
        in (bb, bb) }
      length=2
      linear=(False, False)
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] bc p
  in (o, p, x, y) }",
            u(3.0),
            Tol::Exact,
        ),
    ]
}

/// Stateful jaxprs: `Ref` arguments compile in discharged form (passed as
/// arrays, final contents returned after the outputs).
fn state_cases() -> Vec<String> {
    vec![
        "{ lambda ; a:Ref<default>{f32[4,5]} b:f32[5] c:i32[] d:f32[2,5]. let
    e:f32[5] <- a[c,:]
    a[1,:] += b
    f:f32[2,5], a[1:3,:] <- a[1:3,:], d
    g:f32[5] = mul e 2.0:f32[]
    a[-1,:] += g
  in (e, f) }"
            .into(),
        "{ lambda ; a:Ref<default>{i32[6]} b:i32[3] c:i32[3] d:i32[]. let
    e:i32[3] <- a[b]
    a[b] += c
    f:i32[3], a[d:d+3] <- a[d:d+3], e
    g:i32[6] <- a[...]
  in (e, f, g) }"
            .into(),
        "{ lambda ; a:Ref<default>{f16[3,4]} b:f16[]. let
    a[:,1:3] += b
    c:f16[3] <- a[:,2]
  in (c,) }"
            .into(),
        // A ref only read (its final value is the argument), and one
        // written twice whose last value is also an output.
        "{ lambda ; a:Ref<default>{f32[3]} b:Ref<default>{f32[3]} c:f32[3]. let
    d:f32[3] <- a[...]
    b[...] += d
    e:f32[3], b[...] <- b[...], c
    f:f32[3] <- b[...]
  in (e, f) }"
            .into(),
    ]
}

/// Zero-size arrays through the native steps.
fn empty_cases() -> Vec<Case> {
    let u = Dist::Uniform(3.0);
    vec![
        case(
            "{ lambda ; a:f32[3,0] b:i32[0,1] c:f32[4,5]. let
    d:f32[3,0] = sort[dimension=1 is_stable=True num_keys=1] a
    e:f32[3,0] f:i32[3,0] = top_k[axis=1 k=0] a
    g:f32[0,5] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.CLIP
      slice_sizes=(1, 5)
      unique_indices=False
    ] c b
    h:f32[3,0] = cumlogsumexp[axis=1 reverse=False] a
    i:f32[6,0] = tile[reps=(2, 1)] a
    j:f32[3,2,0] = stack[axis=1] a a
  in (d, e, f, g, h, i, j) }",
            u,
            Tol::Exact,
        ),
        case(
            "{ lambda ; a:f32[0,9,3] b:f32[3,3,4]. let
    c:f32[0,4,4] = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1))
      feature_group_count=1
      lhs_dilation=(1,)
      out_sharding=None
      padding=((0, 0),)
      precision=None
      preferred_element_type=None
      rhs_dilation=(1,)
      window_strides=(2,)
    ] a b
  in (c,) }",
            u,
            Tol::Exact,
        ),
    ]
}

fn all_cases() -> Vec<Case> {
    let mut v = elementwise_cases();
    v.extend(
        state_cases()
            .into_iter()
            .map(|t| case(t, Dist::Uniform(5.0), Tol::Exact)),
    );
    v.extend(structural_cases());
    v.extend(reduction_and_sort_cases());
    v.extend(linalg_cases());
    v.extend(decomp_cases());
    v.extend(control_cases());
    v.extend(empty_cases());
    v.extend(window_cases());
    v.extend(random_cases());
    v
}

/// One case or more per random-family primitive.
fn random_cases() -> Vec<Case> {
    let texts = [
        "{ lambda ; a:i32[] . let b:key<fry>[] = random_seed[impl=fry] a; c:u32[2,3] = random_bits[bit_width=32 shape=(2, 3)] b; d:key<fry>[] = random_seed[impl=fry] a; e:u8[5] = random_bits[bit_width=8 shape=(5,)] d in (c, e) }",
        "{ lambda ; a:u32[3,2] b:u32[3]. let c:key<fry>[3] = random_wrap[impl=fry] a; d:key<fry>[3] = random_fold_in c b; e:key<fry>[3,2] = random_split[shape=(2,)] d; f:u32[3,2,2] = random_unwrap e; g:u64[3,4] = random_bits[bit_width=64 shape=(4,)] d in (f, g) }",
        "{ lambda ; a:u32[] b:u32[] c:u32[6] d:u32[6]. let e:u32[6] f:u32[6] = threefry2x32 a b c d in (e, f) }",
        "{ lambda ; a:u32[4]. let b:u32[4] c:u8[3,5] = rng_bit_generator[algorithm=RNG_THREE_FRY dtype=uint8 out_sharding=None shape=(3, 5)] a; d:u32[4] e:u64[7] = rng_bit_generator[algorithm=RNG_PHILOX dtype=uint64 out_sharding=None shape=(7,)] b; f:u32[4] g:u16[] = rng_bit_generator[algorithm=RNG_DEFAULT dtype=uint16 out_sharding=None shape=()] d in (c, e, f, g) }",
    ];
    let mut v: Vec<Case> = texts
        .iter()
        .map(|t| case(t.to_string(), Dist::Uniform(1000.0), Tol::Exact))
        .collect();
    v.push(case(
        "{ lambda ; a:i32[] b:f32[2,3]. let c:key<fry>[] = random_seed[impl=fry] a; d:f32[2,3] = random_gamma[log_space=False] c b; e:f32[2,3] = random_gamma[log_space=True] c b in (d, e) }".to_string(),
        Dist::Between(0.2, 4.0),
        Tol::Exact,
    ));
    v
}

#[test]
fn random_table() {
    for c in random_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

/// One case per window primitive (`tests/window_ops.rs` has the rest).
fn window_cases() -> Vec<Case> {
    let w = "window_dimensions=(1, 3, 2) window_strides=(1, 2, 2)";
    let g = "base_dilation=(1, 1, 1) padding=((0, 0), (1, 1), (0, 1))";
    vec![
        case(
            format!("{{ lambda ; a:f32[2,5,4]. let b:f32[2,3,2] = reduce_window_max[{g} window_dilation=(1, 1, 1) {w}] a in (b,) }}"),
            Dist::Uniform(2.0),
            Tol::Exact,
        ),
        case(
            format!("{{ lambda ; a:f32[2,3,2] b:f32[2,5,4]. let c:f32[2,5,4] = select_and_scatter_add[padding=((0, 0), (1, 1), (0, 1)) select_prim=ge {w}] a b in (c,) }}"),
            Dist::Uniform(2.0),
            Tol::Exact,
        ),
        case(
            format!("{{ lambda ; a:f32[2,5,4] b:f32[2,5,4]. let c:f32[2,3,2] = select_and_gather_add[{g} select_prim=le window_dilation=(1, 1, 1) {w}] a b in (c,) }}"),
            Dist::Uniform(2.0),
            Tol::Exact,
        ),
        // An argmax by the generic `reduce_window`, padded and base-dilated.
        case(
            "{ lambda ; a:f32[2,5] b:i32[2,5]. let
    c:f32[2,4] d:i32[2,4] = reduce_window[
      base_dilation=(1, 2)
      consts=()
      jaxpr={ lambda ; e:f32[] f:i32[] g:f32[] h:i32[]. let
          i:bool[] = ge e g
          j:f32[] = select_n i g e
          k:i32[] = select_n i h f
        in (j, k) }
      padding=((0, 0), (1, 0))
      window_dilation=(1, 1)
      window_dimensions=(1, 3)
      window_strides=(1, 2)
    ] a b -inf:f32[] -1:i32[]
  in (c, d) }"
                .to_string(),
            Dist::Uniform(2.0),
            Tol::Exact,
        ),
    ]
}

fn walk(j: &Jaxpr, tags: &mut BTreeSet<usize>, names: &mut BTreeSet<String>) {
    for e in &j.eqns {
        let (tag, r) = row(&e.primitive);
        assert_eq!(
            r,
            Row::Tested,
            "a case uses excluded `{}`",
            e.primitive.name()
        );
        tags.insert(tag);
        names.insert(e.primitive.name().to_string());
        for p in e.primitive.param_jaxprs() {
            walk(p.jaxpr.jaxpr(), tags, names);
        }
    }
}

#[test]
fn every_primitive_has_a_row_and_cases() {
    let mut tags = BTreeSet::new();
    let mut names = BTreeSet::new();
    for c in all_cases() {
        walk(&parse(&c.text).jaxpr, &mut tags, &mut names);
    }
    for t in 0..N_VARIANTS {
        assert!(
            tags.contains(&t) != EXCLUDED_TAGS.contains(&t),
            "variant tag {t}: tested {} / excluded {}",
            tags.contains(&t),
            EXCLUDED_TAGS.contains(&t)
        );
    }
    for n in family_names() {
        assert!(names.contains(n), "no case uses `{n}`");
    }
}

#[test]
fn elementwise_table() {
    for c in elementwise_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

#[test]
fn structural_table() {
    for c in structural_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

#[test]
fn reduction_and_sort_table() {
    for c in reduction_and_sort_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

#[test]
fn linalg_table() {
    for c in linalg_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

#[test]
fn decomp_table() {
    for c in decomp_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

#[test]
fn empty_arrays_table() {
    for c in empty_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

#[test]
fn control_table() {
    for c in control_cases() {
        check(&c.text, c.dist, c.tol);
    }
}

/// JAX's text prints an integer-array index like a scalar one; the parser
/// reads scalars. Turns every dynamic index whose operand is not a scalar
/// into an array index.
fn with_array_indices(mut c: jaxon_ir::ClosedJaxpr) -> jaxon_ir::ClosedJaxpr {
    use jaxon_ir::primitive::{IndexEntry, IndexValue};
    let j = std::sync::Arc::make_mut(&mut c.jaxpr);
    let vars = j.vars.clone();
    for e in &mut j.eqns {
        let ranks: Vec<usize> = e
            .inputs
            .iter()
            .map(|a| match a {
                jaxon_ir::Atom::Var(v) => vars[v.index()].shape().len(),
                jaxon_ir::Atom::Lit(_) => 0,
            })
            .collect();
        if let Primitive::State(State::Get(GetParams { indexers }))
        | Primitive::State(State::Swap(SwapParams { indexers }))
        | Primitive::State(State::AddUpdate(AddUpdateParams { indexers })) = &mut e.primitive
        {
            for ix in indexers {
                for en in &mut ix.entries {
                    if let IndexEntry::Int(IndexValue::Dynamic(k)) = *en {
                        if ranks[k] > 0 {
                            *en = IndexEntry::Array(k);
                        }
                    }
                }
            }
        }
    }
    c
}

#[test]
fn state_table() {
    use jaxon_backend_cpu::CpuBackend;
    use jaxon_ir::{eval_jaxpr, Value};
    for text in state_cases() {
        let closed = with_array_indices(parse(&text));
        for seed in 1..=3 {
            let args = common::random_args(&closed, seed, Dist::Uniform(5.0));
            let got = common::run(&CpuBackend::new(), &closed, &args);
            let vals: Vec<Value> = closed
                .jaxpr
                .in_avals()
                .iter()
                .zip(&args)
                .map(|(a, x)| match a {
                    jaxon_ir::Aval::Ref(_) => Value::new_ref(x.clone()),
                    jaxon_ir::Aval::Array(_) => Value::Array(x.clone()),
                })
                .collect();
            let outs = eval_jaxpr(&closed.jaxpr, &[], &vals).expect("interpreter");
            let mut want: Vec<jaxon_ir::HostArray> = outs
                .into_iter()
                .map(|v| match v {
                    Value::Array(a) => a,
                    Value::Ref(_) => panic!("ref output"),
                })
                .collect();
            for v in &vals {
                if let Value::Ref(r) = v {
                    want.push(r.lock().expect("lock").clone());
                }
            }
            assert_eq!(got.len(), want.len(), "{text}");
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                common::assert_close(
                    g,
                    w,
                    Tol::Exact,
                    0.0,
                    &format!("seed {seed} output {k}\n{text}"),
                );
            }
        }
    }
}

/// Runs every case once with guard pages after every array the cpu
/// backend reads or writes while executing (see `common::guard`): an
/// out-of-bounds access by a kernel or native step faults the test.
#[cfg(target_os = "linux")]
#[test]
fn cases_under_guard_pages() {
    use common::guard::{guarded, is_guarded, PAGE};
    use jaxon_backend_cpu::CpuBackend;
    use jaxon_ir::{Backend, HostArray};
    // The allocator puts the end of an array against an inaccessible page.
    let probe: Vec<f32> = guarded(|| vec![1.0; 5]);
    let end = probe.as_ptr() as usize + 5 * 4;
    assert!(is_guarded(probe.as_ptr().cast()) && end.is_multiple_of(PAGE));
    drop(probe);
    let cpu = CpuBackend::with_threads(2);
    let mut cases = all_cases();
    cases.extend(
        state_cases()
            .into_iter()
            .map(|t| case(t, Dist::Uniform(5.0), Tol::Exact)),
    );
    for c in cases {
        let closed = with_array_indices(parse(&c.text));
        let exe = cpu.compile(&closed).expect("compiles");
        let args = common::random_args(&closed, 7, c.dist);
        let got: Vec<HostArray> = guarded(|| {
            let bufs: Vec<_> = args
                .iter()
                .map(|a| cpu.to_device(&a.clone()).expect("to_device"))
                .collect();
            exe.execute(&bufs)
                .expect("runs")
                .iter()
                .map(|b| b.to_host().expect("to_host"))
                .collect()
        });
        // The same inputs, unguarded, give the same results.
        let want = common::run(&cpu, &closed, &args);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            common::assert_close(g, w, Tol::Exact, 0.0, &format!("output {k}\n{}", c.text));
        }
    }
}

/// f16/bf16 conversions in kernels are inline integer code: every 16-bit
/// pattern widens to the interpreter's f32 bits, and f32 patterns
/// (special values, rounding ties, subnormal results, random bits) narrow
/// to its 16-bit patterns, NaN payloads included.
#[test]
fn half_conversions_bit_exact() {
    use jaxon_backend_cpu::CpuBackend;
    use jaxon_ir::interp::InterpreterBackend;
    use jaxon_ir::{HostArray, Storage};
    let widen = |dt: &str, long: &str, n: usize| {
        format!(
            "{{ lambda ; a:u16[{n}]. let
    b:{dt}[{n}] = bitcast_convert_type[new_dtype={long}] a
    c:f32[{n}] = convert_element_type[new_dtype=float32 weak_type=False] b
    d:u32[{n}] = bitcast_convert_type[new_dtype=uint32] c
  in (d,) }}"
        )
    };
    let narrow = |dt: &str, long: &str, n: usize| {
        format!(
            "{{ lambda ; a:u32[{n}]. let
    b:f32[{n}] = bitcast_convert_type[new_dtype=float32] a
    c:{dt}[{n}] = convert_element_type[new_dtype={long} weak_type=False] b
    d:u16[{n}] = bitcast_convert_type[new_dtype=uint16] c
  in (d,) }}"
        )
    };
    let all16: Vec<u16> = (0..=u16::MAX).collect();
    let mut rng = common::Rng::new(11);
    let mut bits32: Vec<u32> = vec![
        0,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0x7F80_0001,
        0xFFBF_FFFF,
        0x7F7F_FFFF,
        0x477F_E000, // 65504
        0x477F_F000, // 65520: ties to inf
        0x3380_0000, // 2^-24
        0x3300_0000, // 2^-25: tie to 0
        0x3300_0001,
        0x387F_C000,
        0x0000_0001,
    ];
    // Exact ties between neighbouring f16 and bf16 values.
    for h in (0u32..0x7C00).step_by(37) {
        bits32.push(0x3F80_0000 + (h << 13) + 0x1000);
        bits32.push((0x3F80_0000 + (h << 13)) | 0x0001_8000);
    }
    bits32.extend((0..20_000).map(|_| rng.next() as u32));
    let cpu = CpuBackend::new();
    let interp = InterpreterBackend::new();
    for (dt, long) in [("f16", "float16"), ("bf16", "bfloat16")] {
        let cases = [
            (
                widen(dt, long, all16.len()),
                HostArray::new(vec![all16.len()], Storage::U16(all16.clone())),
            ),
            (
                narrow(dt, long, bits32.len()),
                HostArray::new(vec![bits32.len()], Storage::U32(bits32.clone())),
            ),
        ];
        for (text, arg) in cases {
            let closed = parse(&text);
            let arg = arg.expect("array");
            let got = common::run(&cpu, &closed, std::slice::from_ref(&arg));
            let want = common::run(&interp, &closed, std::slice::from_ref(&arg));
            assert_eq!(got, want, "{text}");
        }
    }
}
