//! The per-primitive table: every `Primitive` of `jaxon-ir` has rows here,
//! and `table_covers_every_primitive` fails when one has none (the names are
//! read from `Primitive::name`'s exhaustive `match`, so a new variant must
//! be listed). Each row is a small jaxpr on random f64 inputs, checked by
//! its kind: jvp against central differences, the transpose against the
//! jvp by the dot-product test `<ct, J t> == <J^T ct, t>`, and vmap against
//! a loop of unbatched calls with batch dims at 0, at the last axis and
//! absent. Non-differentiable rows check zero tangents; unsupported rows
//! check the `Unsupported` error and say why.

use crate::table_kit;

use table_kit::eager::{check_jvp, check_transpose, check_vmap, instance, jvp, Rng};

use jaxon_ir::{parse_jaxpr, ClosedJaxpr, Jaxpr};
use jaxon_trace::error::Error;
use jaxon_transforms::batch::batch_jaxpr;
use jaxon_transforms::jvp_jaxpr;
use std::collections::BTreeSet;

/// How a row is checked.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// jvp, transpose and vmap.
    Diff,
    /// Tangents are zero; vmap is checked.
    NoDiff,
    /// jvp fails with `Unsupported` (the reason); vmap is checked.
    NoJvp(&'static str),
    /// jvp and vmap are checked; reverse mode fails with `Unsupported`
    /// (the reason).
    ForwardOnly(&'static str),
}

struct Row {
    kind: Kind,
    /// Range of float inputs.
    lo: f64,
    hi: f64,
    text: String,
}

const SHAPES: [&str; 3] = ["", "1,3", "2,1,2"];

fn row(kind: Kind, lo: f64, hi: f64, text: impl Into<String>) -> Row {
    Row {
        kind,
        lo,
        hi,
        text: text.into(),
    }
}

/// `op` on one input of type `ti` giving `to`, for every shape.
fn unary(rows: &mut Vec<Row>, kind: Kind, op: &str, ti: &str, to: &str, lo: f64, hi: f64) {
    for s in SHAPES {
        rows.push(row(
            kind,
            lo,
            hi,
            format!("{{ lambda ; a:{ti}[{s}]. let b:{to}[{s}] = {op} a in (b,) }}"),
        ));
    }
}

fn binary(rows: &mut Vec<Row>, kind: Kind, op: &str, ti: &str, to: &str, lo: f64, hi: f64) {
    for s in SHAPES {
        rows.push(row(
            kind,
            lo,
            hi,
            format!("{{ lambda ; a:{ti}[{s}] b:{ti}[{s}]. let c:{to}[{s}] = {op} a b in (c,) }}"),
        ));
    }
}

fn table() -> Vec<Row> {
    use Kind::*;
    let mut r = Vec::new();
    let u = &mut r;
    for op in [
        "neg", "exp", "exp2", "expm1", "tanh", "logistic", "sin", "cos", "atan", "sinh", "cosh",
        "asinh", "erf", "erfc", "square", "copy", "abs",
    ] {
        unary(u, Diff, op, "f64", "f64", -1.5, 1.5);
    }
    unary(u, Diff, "tan", "f64", "f64", -1.0, 1.0);
    for op in ["asin", "acos", "atanh", "erf_inv"] {
        unary(u, Diff, op, "f64", "f64", -0.9, 0.9);
    }
    for op in ["log", "log1p", "sqrt", "rsqrt", "cbrt"] {
        unary(u, Diff, op, "f64", "f64", 0.5, 2.0);
    }
    unary(u, Diff, "acosh", "f64", "f64", 1.5, 3.0);
    unary(u, Diff, "integer_pow[y=3]", "f64", "f64", -1.5, 1.5);
    unary(u, Diff, "integer_pow[y=-2]", "f64", "f64", 0.5, 2.0);
    unary(
        u,
        Diff,
        "reduce_precision[exponent_bits=11 mantissa_bits=52]",
        "f64",
        "f64",
        -2.0,
        2.0,
    );
    unary(
        u,
        Diff,
        "convert_element_type[new_dtype=float64 weak_type=False]",
        "f64",
        "f64",
        -2.0,
        2.0,
    );
    unary(
        u,
        NoDiff,
        "convert_element_type[new_dtype=int32 weak_type=False]",
        "f64",
        "i32",
        -5.0,
        5.0,
    );
    unary(
        u,
        NoDiff,
        "bitcast_convert_type[new_dtype=int64]",
        "f64",
        "i64",
        -2.0,
        2.0,
    );
    for op in [
        "sign",
        "floor",
        "ceil",
        "round[rounding_method=1]",
        "stop_gradient",
    ] {
        unary(u, NoDiff, op, "f64", "f64", -3.0, 3.0);
    }
    unary(u, NoDiff, "is_finite", "f64", "bool", -3.0, 3.0);
    unary(u, NoDiff, "not", "i32", "i32", -3.0, 3.0);
    unary(u, NoDiff, "neg", "i32", "i32", -3.0, 3.0);
    for op in ["population_count", "clz"] {
        unary(u, NoDiff, op, "i32", "i32", -40.0, 40.0);
    }
    for op in ["add", "sub", "mul", "max", "min", "atan2", "add_any"] {
        binary(u, Diff, op, "f64", "f64", -2.0, 2.0);
    }
    for op in ["div", "pow", "rem"] {
        binary(u, Diff, op, "f64", "f64", 0.5, 2.0);
    }
    // JAX gives nextafter no jvp rule; jaxon treats it as piecewise
    // constant (zero tangent), like the comparisons.
    binary(u, NoDiff, "nextafter", "f64", "f64", -2.0, 2.0);
    for op in ["eq", "ne", "lt", "le", "gt", "ge", "lt_to", "le_to"] {
        binary(u, NoDiff, op, "f64", "bool", -2.0, 2.0);
    }
    for op in ["lt_to", "le_to"] {
        binary(u, NoDiff, op, "i32", "bool", -3.0, 3.0);
    }
    for op in [
        "and",
        "or",
        "xor",
        "shift_left",
        "shift_right_arithmetic",
        "shift_right_logical",
        "add",
        "rem",
    ] {
        binary(u, NoDiff, op, "i32", "i32", 1.0, 5.0);
    }
    for s in SHAPES {
        u.push(row(Diff, -2.0, 2.0, format!(
            "{{ lambda ; p:bool[{s}] a:f64[{s}] b:f64[{s}]. let c:f64[{s}] = select_n p a b in (c,) }}"
        )));
        u.push(row(Diff, -2.0, 2.0, format!(
            "{{ lambda ; p:i32[{s}] a:f64[{s}] b:f64[{s}] d:f64[{s}]. let c:f64[{s}] = select_n p a b d in (c,) }}"
        )));
        // `lo <= hi`, as clamp requires for a meaningful derivative.
        u.push(row(Diff, -2.0, 2.0, format!(
            "{{ lambda ; l:f64[{s}] a:f64[{s}]. let h:f64[{s}] = add l 2.0:f64[]; c:f64[{s}] = clamp l a h in (c,) }}"
        )));
        u.push(row(
            Diff,
            -2.0,
            2.0,
            format!(
                "{{ lambda ; a:f64[{s}]. let c:f64[{s}] = clamp -0.5:f64[] a 0.7:f64[] in (c,) }}"
            ),
        ));
    }
    // Special functions (jvp rules as JAX defines them).
    for op in ["lgamma", "digamma"] {
        unary(u, Diff, op, "f64", "f64", 0.5, 4.0);
    }
    for op in ["bessel_i0e", "bessel_i1e"] {
        unary(u, Diff, op, "f64", "f64", 0.3, 3.0);
    }
    for op in ["igamma", "igammac"] {
        binary(u, Diff, op, "f64", "f64", 0.5, 4.0);
    }
    for op in ["igamma_grad_a", "random_gamma_grad"] {
        binary(
            u,
            NoJvp("JAX defines no derivative"),
            op,
            "f64",
            "f64",
            0.5,
            4.0,
        );
    }
    binary(
        u,
        NoJvp("no derivative wrt polygamma's order"),
        "polygamma",
        "f64",
        "f64",
        0.5,
        4.0,
    );
    binary(
        u,
        NoJvp("no derivative wrt zeta's x"),
        "zeta",
        "f64",
        "f64",
        1.5,
        4.0,
    );
    for s in SHAPES {
        for lit in [
            "polygamma 1.0:f64[]",
            "polygamma 2.0:f64[]",
            "zeta 3.0:f64[]",
        ] {
            u.push(row(
                Diff,
                0.5,
                4.0,
                format!("{{ lambda ; a:f64[{s}]. let c:f64[{s}] = {lit} a in (c,) }}"),
            ));
        }
        u.push(row(Diff, 0.1, 0.9, format!(
            "{{ lambda ; x:f64[{s}]. let c:f64[{s}] = regularized_incomplete_beta 2.0:f64[] 3.5:f64[] x in (c,) }}"
        )));
        u.push(row(NoJvp("no derivative wrt a and b"), 0.1, 0.9, format!(
            "{{ lambda ; a:f64[{s}] b:f64[{s}] x:f64[{s}]. let c:f64[{s}] = regularized_incomplete_beta a b x in (c,) }}"
        )));
    }
    let shape_ops = [
        "{ lambda ; a:f64[3]. let b:f64[2,3,1] = broadcast_in_dim[broadcast_dimensions=(1,)] a in (b,) }",
        "{ lambda ; a:f64[]. let b:f64[2] = broadcast_in_dim[broadcast_dimensions=()] a in (b,) }",
        "{ lambda ; a:f64[2,3]. let b:f64[3,1,2] = reshape[new_sizes=(3, 1, 2) dimensions=None] a in (b,) }",
        "{ lambda ; a:f64[1]. let b:f64[] = reshape[new_sizes=() dimensions=None] a in (b,) }",
        "{ lambda ; a:f64[2,3,1]. let b:f64[1,2,3] = transpose[permutation=(2, 0, 1)] a in (b,) }",
        "{ lambda ; a:f64[1,3,1]. let b:f64[3] = squeeze[dimensions=(0, 2)] a in (b,) }",
        "{ lambda ; a:f64[2,3]. let b:f64[2,3] = rev[dimensions=(1,)] a in (b,) }",
        "{ lambda ; a:f64[3,4] v:f64[]. let b:f64[7,5] = pad[padding_config=((1, -1, 2), (-1, 2, 0))] a v in (b,) }",
        "{ lambda ; a:f64[2,3] b:f64[1,3]. let c:f64[3,3] = concatenate[dimension=0] a b in (c,) }",
        "{ lambda ; a:f64[2,3,4]. let b:f64[2,2,4] = slice[limit_indices=(2, 3, 4) start_indices=(0, 0, 0) strides=(1, 2, 1)] a in (b,) }",
        "{ lambda ; a:f64[5] i:i32[]. let b:f64[2] = dynamic_slice[slice_sizes=(2,)] a i in (b,) }",
        "{ lambda ; a:f64[4,3] i:i32[] j:i32[]. let b:f64[2,1] = dynamic_slice[slice_sizes=(2, 1)] a i j in (b,) }",
        "{ lambda ; a:f64[4,3] u:f64[2,1] i:i32[] j:i32[]. let b:f64[4,3] = dynamic_update_slice a u i j in (b,) }",
        "{ lambda ; a:f64[2,5]. let b:f64[2,1] c:f64[2,2] d:f64[2,2] = split[axis=1 sizes=(1, 2, 2)] a in (b, c, d) }",
        "{ lambda ; a:f64[2,1]. let b:f64[4,3] = tile[reps=(2, 3)] a in (b,) }",
        "{ lambda ; a:f64[2] b:f64[2]. let c:f64[2,2] = stack[axis=1] a b in (c,) }",
        "{ lambda ; a:f64[3,6] b:i32[2,2,1]. let g:f64[3,2,2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None indices_are_sorted=False mode=GatherScatterMode.CLIP slice_sizes=(3, 1) unique_indices=False] a b in (g,) }",
    ];
    for t in shape_ops {
        u.push(row(Diff, -2.0, 2.0, t));
    }
    let scatter = |kind: &str, body: &str| {
        format!(
            "{{ lambda ; a:f64[5] b:i32[3,1] c:f64[3]. let h:f64[5] = {kind}[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) indices_are_sorted=False mode=GatherScatterMode.CLIP unique_indices=False update_consts=() update_jaxpr={body}] a b c in (h,) }}"
        )
    };
    u.push(row(
        Diff,
        -2.0,
        2.0,
        scatter(
            "scatter-add",
            "{ lambda ; i:f64[] j:f64[]. let k:f64[] = add i j in (k,) }",
        ),
    ));
    u.push(row(Diff, -2.0, 2.0, scatter("scatter", "None")));
    // scatter-mul's updates need unique indices (as in JAX); with an iota
    // index they are, and the rule is checked in full.
    u.push(row(
        NoJvp("scatter_mul gradients are only implemented if `unique_indices=True`"),
        -2.0,
        2.0,
        scatter(
            "scatter-mul",
            "{ lambda ; i:f64[] j:f64[]. let k:f64[] = mul i j in (k,) }",
        ),
    ));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[5] c:f64[3]. let b:i32[3,1] = iota[dimension=0 dtype=int32 shape=(3, 1) sharding=None] ; h:f64[5] = scatter-mul[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) indices_are_sorted=True mode=GatherScatterMode.CLIP unique_indices=True update_consts=() update_jaxpr={ lambda ; i:f64[] j:f64[]. let k:f64[] = mul i j in (k,) }] a b c in (h,) }"));
    // Ties between contenders share the tangent; random floats do not tie.
    for (kind, op) in [("scatter-min", "min"), ("scatter-max", "max")] {
        u.push(row(
            Diff,
            -2.0,
            2.0,
            scatter(
                kind,
                &format!("{{ lambda ; i:f64[] j:f64[]. let k:f64[] = {op} i j in (k,) }}"),
            ),
        ));
    }
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3]. let b:f64[2,3] = iota[dimension=1 dtype=float64 shape=(2, 3) sharding=None] ; c:f64[2,3] = mul a b in (c, b) }"));
    u.push(row(
        NoDiff,
        -2.0,
        2.0,
        "{ lambda ; a:f64[2]. let b:f64[2,3] = empty2[dtype=float64] in (b,) }",
    ));
    for (op, kind) in [
        ("reduce_sum", Diff),
        ("reduce_max", Diff),
        ("reduce_min", Diff),
        ("reduce_prod", Diff),
    ] {
        u.push(row(
            kind,
            0.5,
            2.0,
            format!("{{ lambda ; a:f64[2,3]. let b:f64[3] = {op}[axes=(0,)] a in (b,) }}"),
        ));
        u.push(row(
            kind,
            0.5,
            2.0,
            format!("{{ lambda ; a:f64[1,3]. let b:f64[] = {op}[axes=(0, 1)] a in (b,) }}"),
        ));
    }
    // Collectives over positional axes (JAX's batched form of a named
    // collective) are reductions; their named forms need an enclosing vmap
    // and are checked in `vmap_collectives_staged.rs`.
    for op in ["psum", "pmax", "pmin"] {
        u.push(row(
            Diff,
            0.5,
            2.0,
            format!("{{ lambda ; a:f64[2,3]. let b:f64[3] = {op}[axes=(0,) axis_index_groups=None] a in (b,) }}"),
        ));
        u.push(row(
            Diff,
            0.5,
            2.0,
            format!("{{ lambda ; a:f64[1,3]. let b:f64[] = {op}[axes=(0, 1) axis_index_groups=None] a in (b,) }}"),
        ));
    }
    // `shard_map` over a mesh of two devices (the interpreter's SPMD
    // threads) with each mesh collective in its body; `check_vma=False`
    // exercises the transpose's division and psum of replicated values.
    for (vma, ins, outs, body, in_ty, g_in, g_out) in SHARD_ROWS {
        u.push(row(
            Diff,
            -2.0,
            2.0,
            format!(
                "{{ lambda ; a:{g_in}. let b:{g_out} = shard_map[check_vma={vma} \
                 in_specs=({ins},) jaxpr={{ lambda ; c:{in_ty}. let {body} in (d,) }} \
                 mesh=Mesh('x': 2, axis_types=(Auto,)) newly_manual_axes=frozenset({{'x'}}) \
                 out_specs=({outs},)] a in (b,) }}"
            ),
        ));
    }
    u.push(row(
        Diff,
        -2.0,
        2.0,
        "{ lambda ; a:f64[4,2]. let b:f64[4,2] = reshard a; c:f64[4,2] = sharding_constraint[\
         context_mesh=Mesh() layout=None sharding=NamedSharding(mesh=Mesh('x': 2, \
         axis_types=(Auto,)), spec=P('x',), memory_kind=device) unconstrained_dims=frozenset({})] b; \
         d:f64[4,2] = sin c in (d,) }",
    ));
    for op in ["reduce_and", "reduce_or", "reduce_xor"] {
        u.push(row(
            NoDiff,
            0.0,
            1.0,
            format!("{{ lambda ; a:bool[2,3]. let b:bool[2] = {op}[axes=(1,)] a in (b,) }}"),
        ));
    }
    for op in ["argmax", "argmin"] {
        u.push(row(NoDiff, -2.0, 2.0, format!("{{ lambda ; a:f64[2,3]. let b:i32[2] = {op}[axes=(1,) index_dtype=int32] a in (b,) }}")));
    }
    for op in ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"] {
        u.push(row(
            Diff,
            0.5,
            2.0,
            format!(
                "{{ lambda ; a:f64[3,2]. let b:f64[3,2] = {op}[axis=0 reverse=False] a in (b,) }}"
            ),
        ));
        u.push(row(
            Diff,
            0.5,
            2.0,
            format!(
                "{{ lambda ; a:f64[1,4]. let b:f64[1,4] = {op}[axis=1 reverse=True] a in (b,) }}"
            ),
        ));
    }
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[3,2,4] b:f64[4,5,2]. let c:f64[2,3,5] = dot_general[dimension_numbers=(([2], [0]), ([1], [2]))] a b in (c,) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[3] b:f64[3]. let c:f64[] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b in (c,) }"));
    // Flip to `Diff` once conv's transpose rule lands.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,9,3] b:f64[3,3,4]. let c:f64[2,4,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1)) feature_group_count=1 lhs_dilation=(1,) padding=((0, 0),) precision=None preferred_element_type=None rhs_dilation=(1,) window_strides=(2,)] a b in (c,) }"));
    // Batch groups (the weight gradient of a grouped conv): vmap over the
    // images, the kernels and both.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[4,2,5] b:f64[4,2,3]. let c:f64[2,4,3] = conv_general_dilated[batch_group_count=2 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2)) feature_group_count=1 lhs_dilation=(1,) padding=((0, 0),) precision=None preferred_element_type=None rhs_dilation=(1,) window_strides=(1,)] a b in (c,) }"));
    // Dilated max/min windows transpose as JAX's do not (their
    // `select_and_gather_add` has no dilation-free transpose): sum only.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[3,7]. let b:f64[5,3] = reduce_window_sum[base_dilation=(2, 1) padding=((1, 0), (2, 1)) window_dilation=(1, 2) window_dimensions=(2, 3) window_strides=(1, 2)] a in (b,) }"));
    for op in [
        "reduce_window_sum",
        "reduce_window_max",
        "reduce_window_min",
    ] {
        u.push(row(Diff, -2.0, 2.0, format!("{{ lambda ; a:f64[2,5,4]. let b:f64[2,3,2] = {op}[base_dilation=(1, 1, 1) padding=((0, 0), (1, 1), (0, 1)) window_dilation=(1, 1, 1) window_dimensions=(1, 3, 2) window_strides=(1, 2, 2)] a in (b,) }}")));
    }
    for sel in ["ge", "le"] {
        u.push(row(Diff, -2.0, 2.0, format!("{{ lambda ; a:f64[2,3,2] b:f64[2,5,4]. let c:f64[2,5,4] = select_and_scatter_add[padding=((0, 0), (1, 1), (0, 1)) select_prim={sel} window_dimensions=(1, 3, 2) window_strides=(1, 2, 2)] a b in (c,) }}")));
        u.push(row(Diff, -2.0, 2.0, format!("{{ lambda ; a:f64[2,5,4] b:f64[2,5,4]. let c:f64[2,3,2] = select_and_gather_add[base_dilation=(1, 1, 1) padding=((0, 0), (1, 1), (0, 1)) select_prim={sel} window_dilation=(1, 1, 1) window_dimensions=(1, 3, 2) window_strides=(1, 2, 2)] a b in (c,) }}")));
    }
    // The generic `reduce_window`: a sum of squares (dilated, padded) and a
    // max with its argmax over two operands.
    u.push(row(ForwardOnly("no reverse mode for a custom combiner, as in JAX"), -2.0, 2.0, "{ lambda ; a:f64[3,5]. let b:f64[4,5] = reduce_window[base_dilation=(1, 2) consts=() jaxpr={ lambda ; c:f64[] d:f64[]. let e:f64[] = mul d d; f:f64[] = add c e in (f,) } padding=((0, 1), (1, 0)) window_dilation=(1, 1) window_dimensions=(2, 3) window_strides=(1, 2)] a 0.0:f64[] in (b,) }"));
    u.push(row(ForwardOnly("no reverse mode for a custom combiner, as in JAX"), -2.0, 2.0, "{ lambda ; a:f64[2,6] b:i32[2,6]. let c:f64[2,3] d:i32[2,3] = reduce_window[base_dilation=(1, 1) consts=() jaxpr={ lambda ; e:f64[] f:i32[] g:f64[] h:i32[]. let i:bool[] = ge e g; j:f64[] = select_n i g e; k:i32[] = select_n i h f in (j, k) } padding=((0, 0), (1, 1)) window_dilation=(1, 1) window_dimensions=(1, 3) window_strides=(1, 2)] a b -inf:f64[] -1:i32[] in (c, d) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[4,3]. let c:f64[4,3] = sort[dimension=0 is_stable=True num_keys=1] a in (c,) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[5] b:f64[5]. let c:f64[5] d:f64[5] = sort[dimension=0 is_stable=True num_keys=1] a b in (c, d) }"));
    u.push(row(
        Diff,
        -2.0,
        2.0,
        "{ lambda ; a:f64[2,4]. let b:f64[2,3] c:i32[2,3] = top_k[axis=1 k=3] a in (b, c) }",
    ));
    // Random: keys and bits carry no tangent (vmap against a loop of
    // unbatched calls). random_gamma: `random_gamma_jvp_is_implicit` below.
    u.push(row(NoDiff, -1000.0, 1000.0, "{ lambda ; a:i32[3]. let b:key<fry>[3] = random_seed[impl=fry] a; c:u32[3,2] = random_unwrap b; d:key<fry>[3] = random_wrap[impl=fry] c; e:key<fry>[3,2] = random_split[shape=(2,)] d; f:u32[3,2,4] = random_bits[bit_width=32 shape=(4,)] e; g:u8[3,5] = random_bits[bit_width=8 shape=(5,)] d; h:u64[3] = random_bits[bit_width=64 shape=()] d in (c, f, g, h) }"));
    u.push(row(NoDiff, 0.0, 1000.0, "{ lambda ; a:i32[2] m:u32[2] n:u32[]. let b:key<fry>[2] = random_seed[impl=fry] a; c:key<fry>[2] = random_fold_in b m; d:key<fry>[2] = random_fold_in c n; e:u32[2,2] = random_unwrap d in (e,) }"));
    u.push(row(NoDiff, 0.0, 1000.0, "{ lambda ; a:u32[] b:u32[] c:u32[4] d:u32[4]. let e:u32[4] f:u32[4] = threefry2x32 a b c d in (e, f) }"));
    // Markers: identities on values, tangents, cotangents and batches;
    // `platform_index` (no operands) picks the cpu branch of a `cond`.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = name[name=hidden] a; d:f64[2,3] e:f64[2,3] = device_put[copy_semantics=(ArrayCopySemantics.REUSE_INPUT, ArrayCopySemantics.REUSE_INPUT) devices=(None, None) srcs=(None, None)] c b; f:f64[2,3] g:f64[2,3] = optimization_barrier d e; h:f64[2,3] = mul f g; i:f64[2,3] = sin h in (i, g) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3]. let p:i32[] = platform_index[platforms=(('mosaic',), None)]; e:f64[2,3] = cond[branches=({ lambda ; f:f64[2,3]. let g:f64[2,3] = cos f in (g,) } { lambda ; i:f64[2,3]. let j:f64[2,3] = sin i in (j,) }) branches_platforms=(('mosaic',), None)] p a in (e,) }"));
    decomp_rows(u);
    // custom_linear_solve of a diagonal system, symmetric (one object per
    // pair): implicit jvp in both the matrix and b, transpose in b.
    u.push(row(Diff, 0.5, 2.0, "{ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = custom_linear_solve[const_lengths=_LinearSolveTuple(matvec=1, vecmat=1, solve=1, transpose_solve=1) jaxprs=_LinearSolveTuple(matvec={ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = mul a b in (c,) }, vecmat={ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = mul a b in (c,) }, solve={ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = div b a in (c,) }, transpose_solve={ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = div b a in (c,) })] a a a a b in (c,) }"));
    // Control flow and calls.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; p:i32[] a:f64[2,3]. let e:f64[2,3] = cond[branches=({ lambda ; f:f64[2,3]. let g:f64[2,3] = cos f; h:f64[2,3] = mul g 2.0:f64[] in (h,) } { lambda ; i:f64[2,3]. let j:f64[2,3] = sin i in (j,) })] p a in (e,) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,2] c:f64[4,2,2]. let b:f64[2,2] d:f64[4,2,2] = scan[jaxpr={ lambda ; d:f64[2,2] x:f64[2,2]. let e:f64[2,2] = mul d x; f:f64[2,2] = sin e in (f, d) } length=4 num_carry=1 num_consts=0 reverse=False unroll=1] a c in (b, d) }"));
    // Catalyst's for_loop: consts with tangents, the index read by the body,
    // runtime bounds 1..6 step 2; a second carry accumulates squares.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[3] b:f64[3]. let c:f64[3] d:f64[3] = for_loop[apply_reverse_transform=False body_jaxpr={ lambda ; e:f64[3] f:i64[] g:f64[3] h:f64[3]. let i:f64[3] = sin g; j:f64[3] = mul i e; k:f64[] = convert_element_type[new_dtype=float64 weak_type=False] f; l:f64[3] = add j k; m:f64[3] = mul g g; n:f64[3] = add h m in (l, n) } body_nconsts=1 nimplicit=0 preserve_dimensions=True] a 1:i64[] 6:i64[] 2:i64[] 1:i64[] b b in (c, d) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[3]. let b:i32[] c:f64[3] = while[body_jaxpr={ lambda ; d:i32[] e:f64[3]. let f:i32[] = add d 1:i32[]; g:f64[3] = mul e 0.9:f64[]; h:f64[3] = sin g in (f, h) } body_nconsts=0 cond_jaxpr={ lambda ; i:i32[] j:f64[3]. let k:bool[] = lt i 3:i32[] in (k,) } cond_nconsts=0] 0:i32[] a in (c, b) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3]. let b:f64[2,3] = jit[name=f jaxpr={ lambda ; a:f64[2,3]. let b:f64[2,3] = tanh a in (b,) }] a in (b,) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3]. let b:f64[2,3] = custom_jvp_call[name=softplus call_jaxpr={ lambda ; c:f64[2,3]. let d:f64[2,3] = exp c; e:f64[2,3] = log1p d in (e,) } jvp=<lambda> symbolic_zeros=False] a in (b,) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[4]. let b:f64[4] = custom_vjp_call[name=f bwd=_bwd call_jaxpr={ lambda ; c:f64[4]. let d:f64[4] = sin c in (d,) } fwd=_fwd symbolic_zeros=False] a in (b,) }"));
    // Complex numbers: real inputs and outputs, complex in between.
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3] b:f64[2,3]. let c:c128[2,3] = complex a b; d:c128[2,3] = fft[fft_lengths=(3,) fft_type=0] c; e:c128[2,3] = conj[input_dtype=complex128] d; f:c128[2,3] = fft[fft_lengths=(2, 3) fft_type=1] e; g:f64[2,3] = real f; h:f64[2,3] = imag f in (g, h) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[3,6]. let b:c128[3,4] = fft[fft_lengths=(6,) fft_type=2] a; c:f64[3,4] = real b; d:f64[3,4] = imag b; e:c128[3,4] = mul b (0.5-1j):c128[]; f:f64[3,6] = fft[fft_lengths=(3, 6) fft_type=3] e; g:f64[3,7] = fft[fft_lengths=(7,) fft_type=3] b in (c, d, f, g) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[4] b:f64[4]. let c:c128[4] = complex a b; d:c128[4] = exp c; e:f64[4] = abs d; f:c128[4] = mul d c; g:c128[4] = sin f; h:f64[4] = real g; i:c128[4] = conj[input_dtype=float64] a; j:f64[4] = imag i in (e, h, j) }"));
    u.push(row(Diff, -2.0, 2.0, "{ lambda ; a:f64[2,3] b:f64[3,3]. let c:f64[2,3] = remat2[differentiated=False jaxpr={ lambda ; d:f64[2,3] e:f64[3,3]. let f:f64[2,3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] d e; g:f64[2,3] = tanh f in (g,) } policy=None prevent_cse=True] a b in (c,) }"));
    r
}

/// `k I` (`n x n`, f64) as equations binding `name`.
fn eye_eqns(name: &str, n: usize, k: f64) -> String {
    format!(
        "ei:i32[{n},{n}] = iota[dimension=0 dtype=int32 shape=({n}, {n}) sharding=None] ; \
         ej:i32[{n},{n}] = iota[dimension=1 dtype=int32 shape=({n}, {n}) sharding=None] ; \
         ek:bool[{n},{n}] = eq ei ej ; el:f64[{n},{n}] = convert_element_type[new_dtype=float64 weak_type=False] ek ; \
         {name}:f64[{n},{n}] = mul el {k}:f64[]"
    )
}

/// The decompositions and solves on well-conditioned matrices built in the
/// row (`a a^T + 3 I`, `a + 4 I`), so central differences are accurate.
fn decomp_rows(u: &mut Vec<Row>) {
    use Kind::Diff;
    let e3 = eye_eqns("id", 3, 3.0);
    let e4 = eye_eqns("id", 3, 4.0);
    let spd = format!("{e3} ; b:f64[3,3] = dot_general[dimension_numbers=(([1], [1]), ([], []))] a a ; c:f64[3,3] = add b id");
    let shifted = format!("{e4} ; c:f64[3,3] = add a id");
    u.push(row(
        Diff,
        -1.0,
        1.0,
        format!("{{ lambda ; a:f64[3,3]. let {spd} ; d:f64[3,3] = cholesky c in (d,) }}"),
    ));
    for (left, bt) in [("True", "3,2"), ("False", "2,3")] {
        for (lower, trans, unit) in [("True", "False", "False"), ("False", "True", "True")] {
            u.push(row(Diff, -1.0, 1.0, format!("{{ lambda ; a:f64[3,3] k:f64[{bt}]. let {shifted} ; d:f64[{bt}] = triangular_solve[conjugate_a=False left_side={left} lower={lower} transpose_a={trans} unit_diagonal={unit}] c k in (d,) }}")));
        }
    }
    u.push(row(Diff, -1.0, 1.0, format!("{{ lambda ; a:f64[3,3]. let {shifted} ; d:f64[3,3] f:i32[3] g:i32[3] = lu c in (d, f, g) }}")));
    u.push(row(
        Diff,
        -1.0,
        1.0,
        "{ lambda ; a:f64[4,3]. let d:f64[4,3] f:i32[3] g:i32[4] = lu a in (d, f, g) }",
    ));
    for (m, n, k) in [(4, 3, 3), (3, 3, 3), (2, 4, 2)] {
        u.push(row(Diff, -1.0, 1.0, format!("{{ lambda ; a:f64[{m},{n}]. let q:f64[{m},{k}] r:f64[{k},{n}] = qr[full_matrices=False pivoting=False use_magma=None] a in (q, r) }}")));
    }
    u.push(row(Kind::NoJvp("JAX defines no jvp for schur"), -1.0, 1.0, "{ lambda ; a:f64[4,4]. let b:f64[4,4] c:f64[4,4] = schur[compute_schur_vectors=True select_callable=None sort_eig_vals=False] a in (b, c) }"));
    u.push(row(Diff, -1.0, 1.0, "{ lambda ; a:f64[3,3]. let b:f64[3,3] = transpose[permutation=(1, 0)] a ; c:f64[3,3] = add a b ; v:f64[3,3] w:f64[3] = eigh[algorithm=None lower=True sort_eigenvalues=True subset_by_index=None] c in (v, w) }"));
    u.push(row(Diff, -1.0, 1.0, "{ lambda ; a:f64[4,3]. let s:f64[3] = svd[algorithm=None compute_uv=False full_matrices=True subset_by_index=None] a in (s,) }"));
    for (m, n, k) in [(4, 3, 3), (2, 3, 2)] {
        u.push(row(Diff, -1.0, 1.0, format!("{{ lambda ; a:f64[{m},{n}]. let s:f64[{k}] x:f64[{m},{k}] y:f64[{k},{n}] = svd[algorithm=None compute_uv=True full_matrices=False subset_by_index=None] a in (s, x, y) }}")));
    }
    u.push(row(Diff, -1.0, 1.0, "{ lambda ; l:f64[4] d:f64[4] h:f64[4] b:f64[4,2]. let e:f64[4] = add d 4.0:f64[] ; x:f64[4,2] = tridiagonal_solve[perturb_singular=False] l e h b in (x,) }"));
}

/// Primitive names from the families' `name`s and the op enums' `name`s:
/// the string arms of their exhaustive matches.
fn all_names() -> BTreeSet<String> {
    let sources = [
        include_str!("../../../ir/src/primitive/ops.rs"),
        include_str!("../../../ir/src/primitive/elementwise.rs"),
        include_str!("../../../ir/src/primitive/structural.rs"),
        include_str!("../../../ir/src/primitive/indexing.rs"),
        include_str!("../../../ir/src/primitive/reduction.rs"),
        include_str!("../../../ir/src/primitive/linalg.rs"),
        include_str!("../../../ir/src/primitive/control.rs"),
        include_str!("../../../ir/src/primitive/state.rs"),
        include_str!("../../../ir/src/primitive/pallas.rs"),
        // The family's names, not `CollectiveOp`'s (psum and friends are
        // checked by the collectives' own tests).
        include_str!("../../../ir/src/primitive/collective.rs"),
        include_str!("../../../ir/src/primitive/marker.rs"),
        include_str!("../../../ir/src/primitive/random.rs"),
    ];
    let mut names = BTreeSet::new();
    for src in sources {
        let start = src
            .find("impl UnaryOp")
            .or_else(|| src.find("impl Collective {"))
            .or_else(|| src.find("impl Marker {"))
            .or_else(|| src.find("pub fn name(&self)"))
            .expect("a name fn");
        let end = src[start..].find("\n}\n").map_or(src.len(), |e| start + e);
        let end = if src.contains("impl UnaryOp") {
            src.len()
        } else {
            end
        };
        for part in src[start..end].split("=> \"").skip(1) {
            let name = &part[..part.find('"').expect("closing quote")];
            names.insert(name.to_string());
        }
    }
    names
}

fn eqn_names(j: &Jaxpr, out: &mut BTreeSet<String>) {
    for e in &j.eqns {
        out.insert(e.primitive.name().to_string());
        // A shard_map row covers the collectives of its body.
        if e.primitive.name() == "shard_map" {
            for sub in e.primitive.sub_jaxprs() {
                eqn_names(sub, out);
            }
        }
    }
}

fn is_unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported(_)) || e.to_string().contains("not supported")
}

fn check_row(r: &Row, i: usize) {
    let what = format!("row {i} ({:?}) {}", r.kind, r.text);
    let seed = 1 + 7919 * i as u64;
    let inst = instance(&r.text, r.lo, r.hi, seed);
    let mut rng = Rng(seed ^ 0x5555);
    match r.kind {
        Kind::Diff => {
            check_jvp(&inst, &mut rng, false, &what);
            check_transpose(&inst, &mut rng, &what)
                .unwrap_or_else(|e| panic!("{what}: transpose: {e}"));
            check_vmap(&r.text, r.lo, r.hi, seed, &what);
        }
        Kind::ForwardOnly(why) => {
            check_jvp(&inst, &mut rng, false, &what);
            let e = check_transpose(&inst, &mut rng, &what)
                .err()
                .unwrap_or_else(|| panic!("{what}: reverse mode should fail ({why})"));
            assert!(is_unsupported(&e), "{what}: {e}");
            check_vmap(&r.text, r.lo, r.hi, seed, &what);
        }
        Kind::NoDiff => {
            check_jvp(&inst, &mut rng, true, &what);
            check_vmap(&r.text, r.lo, r.hi, seed, &what);
        }
        Kind::NoJvp(why) => {
            let e = jvp(&inst, &mut rng)
                .err()
                .unwrap_or_else(|| panic!("{what}: jvp should fail ({why})"));
            assert!(is_unsupported(&e), "{what}: {e}");
            assert!(
                e.to_string()
                    .contains(inst.closed.jaxpr.eqns[0].primitive.name()),
                "{what}: {e}"
            );
            check_vmap(&r.text, r.lo, r.hi, seed, &what);
        }
    }
}

#[test]
fn every_row() {
    let rows = table();
    let mut failures = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if let Err(e) = std::panic::catch_unwind(|| check_row(r, i)) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(msg);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n\n")
    );
}

#[test]
fn table_covers_every_primitive() {
    let mut covered = BTreeSet::new();
    for r in table() {
        let j = parse_jaxpr(&r.text).unwrap_or_else(|e| panic!("{e}\n{}", r.text));
        eqn_names(&j, &mut covered);
    }
    for text in STATE_ROWS {
        eqn_names(&table_kit::parse(text), &mut covered);
    }
    for (name, why) in NAMED_AXIS_ROWS {
        assert!(!why.is_empty());
        covered.insert(name.to_string());
    }
    for (name, _, text) in KERNEL_ROWS {
        match text {
            Some(t) => eqn_names(&parse_jaxpr(t).unwrap(), &mut covered),
            None => {
                covered.insert(name.to_string());
            }
        }
    }
    // Per name, the strongest check any row gives it (printed with
    // `--nocapture`, for reports).
    let mut best: std::collections::BTreeMap<String, (u8, &'static str)> = Default::default();
    for r in table() {
        let level = match r.kind {
            Kind::Diff => (0, "jvp+transpose+vmap"),
            Kind::NoDiff => (2, "zero tangent+vmap"),
            Kind::ForwardOnly(_) => (1, "jvp+vmap, reverse errors"),
            Kind::NoJvp(_) => (3, "jvp errors, vmap"),
        };
        for e in &parse_jaxpr(&r.text).unwrap().eqns {
            let b = best.entry(e.primitive.name().to_string()).or_insert(level);
            if level < *b {
                *b = level;
            }
        }
    }
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for (_, v) in best.values() {
        *counts.entry(v).or_default() += 1;
    }
    eprintln!(
        "table coverage by name: {counts:?}; state rows: 3 names; kernel rows: {}",
        KERNEL_ROWS.len()
    );
    let all = all_names();
    let missing: Vec<&String> = all.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "primitives without a table row: {missing:?}"
    );
    assert!(
        all.len() >= 110,
        "{} names read from Primitive::name",
        all.len()
    );
}

/// `shard_map` rows: `(check_vma, in spec, out spec, body equations
/// binding `d` from `c`, shard type, global in, global out)`.
#[allow(clippy::type_complexity)]
const SHARD_ROWS: &[(&str, &str, &str, &str, &str, &str, &str)] = &[
    (
        "False",
        "P('x',)",
        "P()",
        "d:f64[2,3] = psum[axes=('x',) axis_index_groups=None] c",
        "f64[2,3]",
        "f64[4,3]",
        "f64[2,3]",
    ),
    (
        "True",
        "P('x',)",
        "P()",
        "d:f64[2,3] = psum_invariant[axes=('x',)] c",
        "f64[2,3]",
        "f64[4,3]",
        "f64[2,3]",
    ),
    (
        "True",
        "P('x',)",
        "P('x',)",
        "e:f64[2,2] = sin c; d:f64[2,2] = ppermute[axis_name=('x',) perm=((0, 1), (1, 0))] e",
        "f64[2,2]",
        "f64[4,2]",
        "f64[4,2]",
    ),
    (
        "True",
        "P('x',)",
        "P('x',)",
        "d:f64[1,4] = all_to_all[axis_index_groups=None axis_name=x concat_axis=1 split_axis=0 \
         tiled=True] c",
        "f64[2,2]",
        "f64[4,2]",
        "f64[2,4]",
    ),
    (
        "True",
        "P()",
        "P('x',)",
        "e:f64[4,3] = pvary[axes=('x',)] c; d:f64[2,3] = reduce_scatter[axis_index_groups=None \
         axis_name=('x',) axis_size=2 scatter_dimension=0 tiled=True] e",
        "f64[4,3]",
        "f64[4,3]",
        "f64[4,3]",
    ),
    (
        "False",
        "P('x',)",
        "P()",
        "d:f64[4,3] = all_gather[all_gather_dimension=0 axis_index_groups=None \
         axis_name=('x',) axis_size=2 tiled=True] c",
        "f64[2,3]",
        "f64[4,3]",
        "f64[4,3]",
    ),
];

/// Rows for the state primitives, whose `Ref` operands exist only inside
/// jaxprs: checked at the jaxpr level by `table_kit` (jvp against central
/// differences of outputs and final ref contents, vmap against a loop with
/// refs, values and indices batched or not). More cases: `table_state.rs`.
const STATE_ROWS: &[&str] = &[
    "{ lambda ; a:Ref<default>{f64[3,4]} c:i32[]. let b:f64[3] <- a[:,c] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[]}. let b:f64[] <- a[...] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[1,4]} c:i32[] v:f64[4]. let b:f64[4], a[c] <- a[c], v in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,2]} c:i32[] v:f64[2,2]. let a[c:c+2,:] += v in () }",
];

#[test]
fn state_rows() {
    for (i, text) in STATE_ROWS.iter().enumerate() {
        let j = table_kit::parse(text);
        table_kit::check_jvp(&j, 300 + i as u64);
        let reads_only = j.eqns.iter().all(|e| e.primitive.name() == "get");
        table_kit::check_all_vmaps(&j, 400 + 10 * i as u64, reads_only);
    }
}

/// Collectives that only exist under a named `vmap` axis: evaluated,
/// differentiated and batched by `vmap_collectives_staged.rs` (inside jit,
/// cond, scan and fori_loop bodies, nested vmaps, grad, JAX goldens).
const NAMED_AXIS_ROWS: &[(&str, &str)] = &[
    (
        "all_gather",
        "always over a named axis: resolved by the vmap of that name (linear; transpose is \
         this member's slice of the psum of the cotangent)",
    ),
    (
        "axis_index",
        "an integer index along a named axis: no tangent; the vmap of that name makes it an iota",
    ),
];

/// Kernel-only primitives. They read program ids or access `Ref`s with
/// Pallas semantics inside kernels; JAX differentiates and batches a
/// `pallas_call` as a whole, which jaxon does not do.
/// Each row: the name, why, and a jaxpr when one can be written alone
/// (then its jvp must fail with `Unsupported` or carry no tangent, and its
/// vmap must fail with `Unsupported`).
const KERNEL_ROWS: &[(&str, &str, Option<&str>)] = &[
    (
        "rng_bit_generator",
        "vmap is JAX's rule (every member's bits from the first key), not a loop: checked \
         against JAX's recorded vmap results, and a shared key against a loop, by \
         `rng_bit_generator.rs`; no tangent (integer outputs)",
        None,
    ),
    (
        "random_gamma",
        "jvp is JAX's implicit reparameterization, not the sampler's pathwise derivative: \
         checked against -dF/da / dF/dx of the gamma CDF (central differences in f64) \
         and vmap against a loop, by `random_gamma_jvp_is_implicit`",
        None,
    ),
    (
        "program_id",
        "an integer index of the running kernel instance: no tangent; evaluated only \
         inside pallas_call",
        Some("{ lambda ; a:f64[2]. let d:i32[] = program_id[axis=0] ; b:f64[2] = mul a 2.0:f64[] in (d, b) }"),
    ),
    (
        "num_programs",
        "an integer grid size: no tangent; evaluated only inside pallas_call",
        Some("{ lambda ; a:f64[2]. let d:i32[] = num_programs[axis=0] ; b:f64[2] = mul a 2.0:f64[] in (d, b) }"),
    ),
    (
        "load",
        "masked Pallas load: jvp reads the tangent Ref under the same mask; no vmap rule \
         (vmap of a pallas_call adds a grid axis instead of batching the kernel)",
        Some("{ lambda ; a:Ref<default>{f64[2]}. let e:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None] ; f:bool[2] = lt e 1:i32[]; g:f64[2] <- a[:] mask=f other=0.0:f64[] in (g,) }"),
    ),
    (
        "store",
        "masked Pallas store: jvp writes the tangent Ref under the same mask; no vmap rule \
         (vmap of a pallas_call adds a grid axis instead of batching the kernel)",
        Some("{ lambda ; a:Ref<default>{f64[2]} v:f64[2]. let e:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None] ; f:bool[2] = lt e 1:i32[]; a[:] <- v mask=f in () }"),
    ),
    (
        "atomic_rmw",
        "atomics have no derivative and no batching rule in JAX either",
        Some("{ lambda ; c:Ref<default>{f64[4]} g:f64[2]. let k:f64[2] = atomic_rmw[args_tree=PyTreeDef((*, (CustomNode(NDIndexer[(PyTreeDef((CustomNode(Slice[(0, 2, 1)], [None, None]),)), (4,), ())], []),), *, None)) atomic_type=AtomicOpType.ADD] c g in (k,) }"),
    ),
    (
        "atomic_cas",
        "atomics have no derivative and no batching rule in JAX either",
        None,
    ),
    (
        "pallas_call",
        "jvp builds one kernel for primals and tangents and vmap adds a leading grid axis \
         (tested in jaxon-pallas, which builds the kernels); reverse mode goes through \
         custom_vjp",
        None,
    ),
];

#[test]
fn kernel_rows() {
    for (name, why, text) in KERNEL_ROWS {
        assert!(!why.is_empty());
        let Some(text) = text else { continue };
        let j = parse_jaxpr(text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert!(j.eqns.iter().any(|e| e.primitive.name() == *name), "{name}");
        let n = j.invars.len();
        let closed = ClosedJaxpr::without_consts(j.clone());
        let float: Vec<bool> = j
            .invars
            .iter()
            .map(|v| j.aval(*v).array().dtype.is_float())
            .collect();
        match jvp_jaxpr(&closed, &float, &vec![false; j.outvars.len()]) {
            Err(e) => assert!(
                is_unsupported(&e) && e.to_string().contains(name),
                "{name}: {e}"
            ),
            Ok((_, nz)) => {
                // Only the integer program id / count outputs may be
                // produced, and they carry no tangent.
                for (o, nz) in j.outvars.iter().zip(nz) {
                    let is_int = !j
                        .atom_aval(o)
                        .map(|a| a.array().dtype.is_float())
                        .unwrap_or(true);
                    assert!(!(is_int && nz), "{name}: integer output with a tangent");
                }
                assert!(
                    ["program_id", "num_programs", "load", "store"].contains(name),
                    "{name}: jvp should fail"
                );
            }
        }
        let refs_or_all: Vec<bool> = (0..n).map(|_| true).collect();
        match batch_jaxpr(&closed, &refs_or_all, 2, &vec![false; j.outvars.len()]) {
            Err(e) => assert!(
                is_unsupported(&e) && e.to_string().contains(name),
                "{name}: {e}"
            ),
            Ok(_) => assert!(
                ["program_id", "num_programs"].contains(name),
                "{name}: vmap should fail"
            ),
        }
    }
}

/// `random_gamma`'s tangent in `a` is JAX's implicit reparameterization
/// gradient: the sample `x` moves so that the CDF `F(x; a) = igamma(a, x)`
/// stays put, `dx/da = -(dF/da) / (dF/dx)`, here by central differences of
/// `igamma` in f64 (in log space, `d log x = dx / x`). vmap: against a loop.
#[test]
fn random_gamma_jvp_is_implicit() {
    use jaxon_ir::primitive::BinaryOp;
    use jaxon_trace::{lax, Array};
    for (k, log_space) in [false, true].into_iter().enumerate() {
        let text = format!("{{ lambda ; s:i32[] a:f64[4]. let k:key<fry>[] = random_seed[impl=fry] s; b:f64[4] = random_gamma[log_space={}] k a in (b,) }}", if log_space { "True" } else { "False" });
        check_vmap(&text, 0.3, 3.0, 70 + k as u64, "random_gamma");
        let inst = instance(&text, 0.3, 3.0, 80 + k as u64);
        let mut rng = Rng(90 + k as u64);
        let (p, tout, t) = jvp(&inst, &mut rng).expect("jvp of random_gamma");
        let a = inst.x[1].to_f64_vec();
        let ta = t[1].to_f64_vec();
        let y = p[0].to_f64_vec();
        let got = tout[0].as_ref().expect("a nonzero tangent");
        let cdf = |aa: f64, xx: f64| -> f64 {
            let r = lax::binary(
                BinaryOp::Igamma,
                &Array::from_vec(vec![aa], &[]),
                &Array::from_vec(vec![xx], &[]),
            )
            .and_then(|r| r.try_to_host("cdf"))
            .expect("igamma");
            r.to_f64_vec()[0]
        };
        for i in 0..a.len() {
            let x = if log_space { y[i].exp() } else { y[i] };
            let (h, hx) = (1e-5 * a[i], 1e-5 * x);
            let dfa = (cdf(a[i] + h, x) - cdf(a[i] - h, x)) / (2.0 * h);
            let dfx = (cdf(a[i], x + hx) - cdf(a[i], x - hx)) / (2.0 * hx);
            let mut dxda = -dfa / dfx;
            if log_space {
                dxda /= x;
            }
            let want = ta[i] * dxda;
            assert!(
                (got[i] - want).abs() <= 1e-5 + 1e-4 * want.abs(),
                "random_gamma[log_space={log_space}] a={} x={x}: tangent {} vs implicit {want}",
                a[i],
                got[i]
            );
        }
    }
}
