//! Differential tests: every supported primitive and fused chains on the
//! cpu backend versus the reference interpreter, on seeded random inputs
//! of several shapes (including sizes that leave vector tails). Exact ops
//! must match bit for bit; transcendental ones within their documented ulp
//! bound plus one (the interpreter's libm is itself within about an ulp);
//! reassociated float sums and GEMM within a relative tolerance.

use crate::common;
use common::{check, Dist, Tol};

const SHAPES: &[&[usize]] = &[&[], &[1], &[3], &[17], &[5, 19], &[2, 3, 9]];

fn ty(dt: &str, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{dt}[{}]", dims.join(","))
}

fn unary(op: &str, dt: &str, out_dt: &str, shape: &[usize]) -> String {
    format!(
        "{{ lambda ; a:{}. let b:{} = {op} a in (b,) }}",
        ty(dt, shape),
        ty(out_dt, shape)
    )
}

fn binary(op: &str, dt: &str, out_dt: &str, shape: &[usize]) -> String {
    format!(
        "{{ lambda ; a:{t} b:{t}. let c:{} = {op} a b in (c,) }}",
        ty(out_dt, shape),
        t = ty(dt, shape)
    )
}

#[test]
fn float_unary_exact() {
    let ops = [
        "neg", "abs", "sqrt", "rsqrt", "square", "floor", "ceil", "sign",
    ];
    for dt in ["f32", "f64"] {
        for op in ops {
            for s in SHAPES {
                check(&unary(op, dt, dt, s), Dist::Uniform(5.0), Tol::Exact);
            }
        }
        for m in ["0", "1"] {
            let text = unary(&format!("round[rounding_method={m}]"), dt, dt, &[41]);
            check(&text, Dist::Uniform(4.0), Tol::Exact);
        }
        check(
            &unary("is_finite", dt, "bool", &[23]),
            Dist::Uniform(5.0),
            Tol::Exact,
        );
    }
}

#[test]
fn float_unary_transcendental() {
    // (op, ulp bound vs the interpreter, input range)
    let ops = [
        ("exp", 3, Dist::Uniform(80.0)),
        ("expm1", 3, Dist::Uniform(10.0)),
        ("log", 3, Dist::Between(0.0, 50.0)),
        ("log1p", 4, Dist::Between(-1.0, 5.0)),
        ("tanh", 6, Dist::Uniform(6.0)),
        ("logistic", 4, Dist::Uniform(30.0)),
        ("sin", 3, Dist::Uniform(100.0)),
        ("cos", 3, Dist::Uniform(100.0)),
        ("tan", 5, Dist::Uniform(3.0)),
        ("exp2", 3, Dist::Uniform(100.0)),
        ("sinh", 4, Dist::Uniform(30.0)),
        ("cosh", 4, Dist::Uniform(30.0)),
    ];
    for dt in ["f32", "f64"] {
        for (op, ulp, dist) in ops {
            for s in [&[37usize][..], &[4, 9], &[]] {
                check(&unary(op, dt, dt, s), dist, Tol::Ulp(ulp));
            }
        }
    }
}

#[test]
fn float_binary_and_comparisons() {
    for dt in ["f32", "f64"] {
        for op in ["add", "sub", "mul", "div", "max", "min"] {
            for s in SHAPES {
                check(&binary(op, dt, dt, s), Dist::Uniform(3.0), Tol::Exact);
            }
        }
        for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
            // Small integers as floats make ties frequent.
            check(
                &binary(op, dt, "bool", &[33]),
                Dist::Uniform(2.0),
                Tol::Exact,
            );
            let text = format!(
                "{{ lambda ; a:{t} b:{t}. let
    c:{t} = floor a
    d:{t} = floor b
    e:bool[33] = {op} c d
  in (e,) }}",
                t = ty(dt, &[33])
            );
            check(&text, Dist::Uniform(2.0), Tol::Exact);
        }
    }
}

#[test]
fn integer_ops() {
    let ints = ["i8", "u8", "i16", "i32", "u32", "i64", "u64"];
    let bin = [
        "add",
        "sub",
        "mul",
        "div",
        "rem",
        "max",
        "min",
        "and",
        "or",
        "xor",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
    ];
    for dt in ints {
        for op in bin {
            check(&binary(op, dt, dt, &[29]), Dist::Uniform(9.0), Tol::Exact);
            check(
                &binary(op, dt, dt, &[2, 5]),
                Dist::Uniform(100.0),
                Tol::Exact,
            );
        }
        for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
            check(
                &binary(op, dt, "bool", &[29]),
                Dist::Uniform(3.0),
                Tol::Exact,
            );
        }
        for op in ["neg", "abs", "sign", "not", "square"] {
            check(&unary(op, dt, dt, &[29]), Dist::Uniform(100.0), Tol::Exact);
        }
    }
    // Overflowing division: MIN / -1 wraps, x / 0 is -1, x % 0 is x.
    check(
        "{ lambda ; a:i32[4]. let
    b:i32[4] = mul a 1073741824:i32[]
    c:i32[4] = mul b 2:i32[]
    d:i32[4] = div c -1:i32[]
    e:i32[4] = div a 0:i32[]
    f:i32[4] = rem a 0:i32[]
    g:i32[4] = rem c -1:i32[]
  in (d, e, f, g) }",
        Dist::Uniform(3.0),
        Tol::Exact,
    );
}

#[test]
fn boolean_ops() {
    for op in ["and", "or", "xor", "eq", "ne", "max", "min"] {
        check(
            &binary(op, "bool", "bool", &[21]),
            Dist::Uniform(1.0),
            Tol::Exact,
        );
    }
    check(
        &unary("not", "bool", "bool", &[21]),
        Dist::Uniform(1.0),
        Tol::Exact,
    );
}

#[test]
fn integer_pow_all_dtypes() {
    for y in [0i64, 1, 2, 3, 5, 8, -1, -2, -3] {
        for dt in ["f32", "f64", "i32", "i64"] {
            let text = unary(&format!("integer_pow[y={y}]"), dt, dt, &[19]);
            check(&text, Dist::Uniform(3.0), Tol::Exact);
        }
    }
}

#[test]
fn convert_element_type_pairs() {
    let dts = [
        ("bool", "bool"),
        ("int8", "i8"),
        ("uint8", "u8"),
        ("int16", "i16"),
        ("int32", "i32"),
        ("uint32", "u32"),
        ("int64", "i64"),
        ("float32", "f32"),
        ("float64", "f64"),
    ];
    for (_, from) in dts {
        for (np, to) in dts {
            let text = unary(
                &format!("convert_element_type[new_dtype={np} weak_type=False]"),
                from,
                to,
                &[27],
            );
            // A wide range exercises saturation and wrap-around.
            check(&text, Dist::Uniform(400.0), Tol::Exact);
            check(&text, Dist::Uniform(3.0), Tol::Exact);
        }
    }
}

#[test]
fn select_n_and_clamp() {
    for dt in ["f32", "f64", "i32", "u8"] {
        let t = ty(dt, &[31]);
        check(
            &format!(
                "{{ lambda ; a:{t} b:{t}. let
    c:bool[31] = lt a b
    d:{t} = select_n c a b
  in (d,) }}"
            ),
            Dist::Uniform(5.0),
            Tol::Exact,
        );
        check(
            &format!("{{ lambda ; a:{t} b:{t} c:{t}. let d:{t} = clamp a b c in (d,) }}"),
            Dist::Uniform(5.0),
            Tol::Exact,
        );
    }
    // An integer predicate with three cases (out-of-range clamps).
    check(
        "{ lambda ; a:i32[25] b:f32[25] c:f32[25] d:f32[25]. let
    e:f32[25] = select_n a b c d
  in (e,) }",
        Dist::Uniform(3.0),
        Tol::Exact,
    );
    // Scalar operands of clamp broadcast.
    check(
        "{ lambda ; a:f32[] b:f32[2,7] c:f32[]. let d:f32[2,7] = clamp a b c in (d,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

#[test]
fn fused_chains_and_tails() {
    // tanh(x*2+1)*x - exp(-x) on sizes around the vector and unroll widths.
    for n in [1usize, 3, 4, 5, 15, 16, 17, 33, 67, 1031] {
        for dt in ["f32", "f64"] {
            let t = ty(dt, &[n]);
            let text = format!(
                "{{ lambda ; a:{t}. let
    b:{t} = mul a 2.0:{dt}[]
    c:{t} = add b 1.0:{dt}[]
    d:{t} = tanh c
    e:{t} = mul d a
    f:{t} = neg a
    g:{t} = exp f
    h:{t} = sub e g
  in (h,) }}"
            );
            // e - g cancels: compare relative to the operands' magnitude.
            check(&text, Dist::Uniform(3.0), Tol::Rel(1e-6));
            // The exact part of the chain must be bit-identical.
            let text = format!(
                "{{ lambda ; a:{t} b:{t}. let
    c:{t} = mul a b
    d:{t} = add c a
    e:{t} = max d b
    f:{t} = div e 3.0:{dt}[]
    g:bool[{n}] = gt f 0.0:{dt}[]
    h:{t} = select_n g a f
  in (h, c) }}"
            );
            check(&text, Dist::Uniform(3.0), Tol::Exact);
        }
    }
}

#[test]
fn broadcasting_and_reshapes() {
    check(
        "{ lambda ; a:f32[6,11] b:f32[11] c:f32[6]. let
    d:f32[6,11] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(6, 11) sharding=None] b
    e:f32[6,11] = add a d
    f:f32[6,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 1) sharding=None] c
    g:f32[6,11] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(6, 11) sharding=None] f
    h:f32[6,11] = mul e g
    i:f32[6,11] = broadcast_in_dim[broadcast_dimensions=() shape=(6, 11) sharding=None] 2.5:f32[]
    j:f32[6,11] = sub h i
  in (j,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f64[12] b:f64[3,4] c:f64[3,1,4]. let
    d:f64[12] = sqrt a
    e:f64[3,4] = reshape[dimensions=None new_sizes=(3, 4) sharding=None] d
    f:f64[3,4] = mul e b
    g:f64[3,4] = squeeze[dimensions=(1,)] c
    h:f64[3,4] = add f g
    i:f64[4,3] = reshape[dimensions=None new_sizes=(4, 3) sharding=None] h
  in (i,) }",
        Dist::Between(0.0, 4.0),
        Tol::Exact,
    );
    // Outer product by two broadcasts of one input; int broadcast.
    check(
        "{ lambda ; a:i32[7] b:i32[5,7]. let
    c:i32[5,7] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(5, 7) sharding=None] a
    d:i32[7,7] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(7, 7) sharding=None] a
    e:i32[7,7] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(7, 7) sharding=None] a
    f:i32[7,7] = mul d e
    g:i32[5,7] = sub b c
  in (f, g) }",
        Dist::Uniform(50.0),
        Tol::Exact,
    );
    // Size-1 broadcasting between equal-rank operands.
    check(
        "{ lambda ; a:f32[4,1] b:f32[4,9]. let c:f32[4,9] = add a b in (c,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

fn reduce_text(op: &str, dt: &str, shape: &[usize], axes: &[usize]) -> String {
    let out: Vec<usize> = (0..shape.len())
        .filter(|d| !axes.contains(d))
        .map(|d| shape[d])
        .collect();
    let ax: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    let ax = if ax.len() == 1 {
        format!("({},)", ax[0])
    } else {
        format!("({})", ax.join(", "))
    };
    let sharding = if op == "reduce_sum" {
        " out_sharding=None"
    } else {
        ""
    };
    format!(
        "{{ lambda ; a:{}. let b:{} = {op}[axes={ax}{sharding}] a in (b,) }}",
        ty(dt, shape),
        ty(dt, &out)
    )
}

#[test]
fn reductions_over_axes() {
    let cases: &[(&[usize], &[&[usize]])] = &[
        (&[37], &[&[0]]),
        (&[7, 13], &[&[0], &[1], &[0, 1]]),
        (
            &[3, 5, 17],
            &[&[0], &[1], &[2], &[0, 2], &[1, 2], &[0, 1, 2]],
        ),
        (&[4, 1, 6], &[&[1], &[0, 1], &[2]]),
        (&[2, 3, 4, 5], &[&[1, 3], &[0, 2]]),
        (&[0, 5], &[&[0], &[1]]),
    ];
    for (shape, axess) in cases {
        for axes in *axess {
            for dt in ["f32", "f64"] {
                check(
                    &reduce_text("reduce_max", dt, shape, axes),
                    Dist::Uniform(9.0),
                    Tol::Exact,
                );
                check(
                    &reduce_text("reduce_min", dt, shape, axes),
                    Dist::Uniform(9.0),
                    Tol::Exact,
                );
                check(
                    &reduce_text("reduce_sum", dt, shape, axes),
                    Dist::Uniform(9.0),
                    Tol::Rel(1e-5),
                );
                check(
                    &reduce_text("reduce_prod", dt, shape, axes),
                    Dist::Between(0.5, 1.5),
                    Tol::Rel(1e-5),
                );
            }
            for dt in ["i32", "u8", "i64"] {
                for op in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"] {
                    check(
                        &reduce_text(op, dt, shape, axes),
                        Dist::Uniform(9.0),
                        Tol::Exact,
                    );
                }
            }
            for op in ["reduce_and", "reduce_or"] {
                check(
                    &reduce_text(op, "bool", shape, axes),
                    Dist::Uniform(1.0),
                    Tol::Exact,
                );
            }
        }
    }
}

#[test]
fn reductions_fuse_their_producers() {
    check(
        "{ lambda ; a:f32[6,35] b:f32[6,35]. let
    c:f32[6,35] = mul a b
    d:f32[6,35] = integer_pow[y=2] c
    e:f32[6] = reduce_sum[axes=(1,) out_sharding=None] d
    f:f32[35] = reduce_max[axes=(0,)] c
  in (e, f) }",
        Dist::Uniform(2.0),
        Tol::Rel(1e-6),
    );
    // Softmax over the last axis.
    check(
        "{ lambda ; a:f32[9,21]. let
    b:f32[9] = reduce_max[axes=(1,)] a
    c:f32[9,21] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(9, 21) sharding=None] b
    d:f32[9,21] = sub a c
    e:f32[9,21] = exp d
    f:f32[9] = reduce_sum[axes=(1,) out_sharding=None] e
    g:f32[9,21] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(9, 21) sharding=None] f
    h:f32[9,21] = div e g
  in (h,) }",
        Dist::Uniform(5.0),
        Tol::Ulp(8),
    );
}

fn dot_text(dt: &str, l: &[usize], r: &[usize], o: &[usize], dn: &str) -> String {
    format!(
        "{{ lambda ; a:{} b:{}. let c:{} = dot_general[dimension_numbers={dn} preferred_element_type={}] a b in (c,) }}",
        ty(dt, l),
        ty(dt, r),
        ty(dt, o),
        match dt {
            "f32" => "float32",
            "f64" => "float64",
            _ => "int32",
        }
    )
}

#[test]
fn dot_general_dimension_numbers() {
    type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], &'a str);
    let cases: &[Case] = &[
        (&[5, 7], &[7, 3], &[5, 3], "(([1], [0]), ([], []))"),
        (&[7, 5], &[7, 3], &[5, 3], "(([0], [0]), ([], []))"),
        (&[5, 7], &[3, 7], &[5, 3], "(([1], [1]), ([], []))"),
        (&[9], &[9], &[], "(([0], [0]), ([], []))"),
        (&[4], &[6], &[4, 6], "(([], []), ([], []))"),
        (
            &[2, 5, 7],
            &[2, 7, 3],
            &[2, 5, 3],
            "(([2], [1]), ([0], [0]))",
        ),
        (
            &[5, 2, 7],
            &[7, 3, 2],
            &[2, 5, 3],
            "(([2], [0]), ([1], [2]))",
        ),
        (
            &[3, 4, 6, 2],
            &[6, 3, 5, 2],
            &[3, 4, 5],
            "(([2, 3], [0, 3]), ([0], [1]))",
        ),
        (&[17, 33], &[33, 19], &[17, 19], "(([1], [0]), ([], []))"),
        // Read in place with strides: both transposed, xᵀ·g, g·Wᵀ, unit
        // sizes, merged contracting dims, a batch dim in the middle.
        (&[7, 5], &[3, 7], &[5, 3], "(([0], [1]), ([], []))"),
        (&[64, 48], &[64, 40], &[48, 40], "(([0], [0]), ([], []))"),
        (&[40, 48], &[56, 48], &[40, 56], "(([1], [1]), ([], []))"),
        (&[1, 7], &[7, 1], &[1, 1], "(([1], [0]), ([], []))"),
        (&[5, 1], &[1, 3], &[5, 3], "(([1], [0]), ([], []))"),
        (
            &[4, 6, 5],
            &[6, 5, 3],
            &[4, 3],
            "(([1, 2], [0, 1]), ([], []))",
        ),
        (
            &[5, 3, 7],
            &[7, 3, 2],
            &[3, 5, 2],
            "(([2], [0]), ([1], [1]))",
        ),
        (
            &[3, 9, 2, 4],
            &[2, 4, 5, 3],
            &[3, 9, 5],
            "(([2, 3], [0, 1]), ([0], [3]))",
        ),
        // Not flattenable to one stride: copied first.
        (
            &[4, 6, 5],
            &[5, 6, 3],
            &[4, 3],
            "(([1, 2], [1, 0]), ([], []))",
        ),
    ];
    for (l, r, o, dn) in cases {
        for dt in ["f32", "f64"] {
            check(
                &dot_text(dt, l, r, o, dn),
                Dist::Uniform(2.0),
                Tol::Rel(1e-5),
            );
        }
        check(
            &dot_text("i32", l, r, o, dn),
            Dist::Uniform(20.0),
            Tol::Exact,
        );
    }
    // A literal operand and a chain feeding the product.
    check(
        "{ lambda ; a:f32[5] b:f32[5,4]. let
    c:f32[5] = dot_general[dimension_numbers=(([], []), ([], [])) preferred_element_type=float32] 2.0:f32[] a
    d:f32[5] = tanh c
    e:f32[4] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float32] d b
  in (e,) }",
        Dist::Uniform(1.0),
        Tol::Rel(1e-5),
    );
}

#[test]
fn transpose_and_iota() {
    check(
        "{ lambda ; a:f32[3,4,5] b:f32[5,3,4]. let
    c:f32[5,3,4] = transpose[permutation=(2, 0, 1)] a
    d:f32[5,3,4] = mul c b
    e:f32[4,3,5] = transpose[permutation=(2, 1, 0)] d
    f:f32[4,5,3] = transpose[permutation=(0, 2, 1)] e
  in (e, f) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f32[2,6]. let
    b:f32[2,6] = iota[dimension=1 dtype=float32 shape=(2, 6) sharding=None]
    c:u32[3] = iota[dimension=0 dtype=uint32 shape=(3,) sharding=None]
    d:f32[2,6] = mul a b
  in (d, c) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

#[test]
fn slices_and_reversals() {
    check(
        "{ lambda ; a:f32[7,9] b:f32[3,4]. let
    c:f32[3,4] = slice[limit_indices=(7, 9) start_indices=(1, 2) strides=(2, 2)] a
    d:f32[3,4] = rev[dimensions=(0, 1)] c
    e:f32[3,4] = add d b
    f:f32[7,9] = rev[dimensions=(1,)] a
    g:f32[2,9] = slice[limit_indices=(7, 9) start_indices=(5, 0) strides=None] a
  in (e, f, g) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f64[40]. let
    b:f64[13] = slice[limit_indices=(40,) start_indices=(3,) strides=(3,)] a
    c:f64[13] = rev[dimensions=(0,)] b
    d:f64[13] = exp c
  in (d,) }",
        Dist::Uniform(2.0),
        Tol::Ulp(3),
    );
}

#[test]
fn pad_and_concatenate() {
    check(
        "{ lambda ; a:f32[3,4]. let
    b:f32[7,5] = pad[padding_config=((1, -1, 2), (-1, 2, 0))] a -1.5:f32[]
  in (b,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:i32[5] b:i32[]. let
    c:i32[11] = pad[padding_config=((2, 0, 1),)] a b
    d:i32[3] = pad[padding_config=((-2, 0, 0),)] a 0:i32[]
  in (c, d) }",
        Dist::Uniform(9.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f32[3,5]. let
    b:f32[3,1] c:f32[3,2] d:f32[3,2] = split[axis=1 sizes=(1, 2, 2)] a
    e:f32[3,2] = add c d
  in (b, e) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f32[2,3] b:f32[2,5] c:f32[2,1]. let
    d:f32[2,9] = concatenate[dimension=1] a b c
    e:f32[2,9] = exp d
    f:f32[4,3] = concatenate[dimension=0] a a
  in (e, f) }",
        Dist::Uniform(2.0),
        Tol::Ulp(3),
    );
}

#[test]
fn control_flow_runs_compiled_bodies() {
    check(
        "{ lambda ; a:f32[2,3]. let
    b:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] a
    c:bool[] = gt b 0.0:f32[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f32[2,3] = cond[
      branches=(
        { lambda ; f:f32[2,3]. let
            g:f32[2,3] = cos f
            h:f32[2,3] = mul g 2.0:f32[]
          in (h,) }
        { lambda ; i:f32[2,3]. let j:f32[2,3] = sin i in (j,) }
      )
    ] d a
  in (e,) }",
        Dist::Uniform(2.0),
        Tol::Ulp(3),
    );
    check(
        "{ lambda ; a:f32[3] l:f32[]. let
    b:i32[] c:f32[3] = while[
      body_jaxpr={ lambda ; m:f32[] d:i32[] e:f32[3]. let
          f:i32[] = add d 1:i32[]
          g:f32[3] = mul e 0.8999999761581421:f32[]
          h:f32[3] = add g m
        in (f, h) }
      body_nconsts=1
      cond_jaxpr={ lambda ; i:i32[] j:f32[3]. let
          k:bool[] = lt i 5:i32[]
        in (k,) }
      cond_nconsts=0
    ] l 0:i32[] a
  in (c, b) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    // An uninitialised value (grad jaxprs' unused cond outputs) is zeros.
    check(
        "{ lambda ; a:f32[3]. let
    b:f32[] = empty2[dtype=float32 memory_space=MemorySpace.Device]
    c:f32[3] = mul a b
  in (c,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    for reverse in ["False", "True"] {
        check(
            &format!(
                "{{ lambda ; a:f32[3] xs:f32[4,3] k:f32[3]. let
    _:i32[] b:f32[3] ys:f32[4,3] = scan[
      jaxpr={{ lambda ; kk:f32[3] c:i32[] d:f32[3] x:f32[3]. let
          e:i32[] = add c 1:i32[]
          f:f32[3] = tanh d
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c
          h:f32[3] = add f g
          i:f32[3] = mul x kk
          j:f32[3] = add h i
          y:f32[3] = mul j x
        in (e, j, y) }}
      length=4
      num_carry=2
      num_consts=1
      reverse={reverse}
      unroll=1
    ] k 0:i32[] a xs
  in (b, ys) }}"
            ),
            Dist::Uniform(2.0),
            // tanh (f32: 4.5 ulp) through four steps that add and cancel.
            Tol::Rel(1e-6),
        );
    }
}

#[test]
fn cumulative_ops() {
    for op in ["cumsum", "cumprod", "cummax", "cummin"] {
        for dt in ["f32", "f64", "i32", "u8"] {
            for (axis, reverse) in [(0, "False"), (1, "True"), (2, "False")] {
                let t = ty(dt, &[3, 5, 4]);
                let text = format!(
                    "{{ lambda ; a:{t}. let b:{t} = {op}[axis={axis} reverse={reverse}] a in (b,) }}"
                );
                check(&text, Dist::Uniform(2.0), Tol::Exact);
            }
        }
    }
}

#[test]
fn argmax_and_argmin() {
    for op in ["argmax", "argmin"] {
        for dt in ["f32", "f64", "i32", "u8", "bool"] {
            for (axis, out) in [(0, &[5usize, 4][..]), (1, &[3, 4]), (2, &[3, 5])] {
                let text = format!(
                    "{{ lambda ; a:{}. let b:{} = {op}[axes=({axis},) index_dtype=int32] a in (b,) }}",
                    ty(dt, &[3, 5, 4]),
                    ty("i32", out)
                );
                // Few distinct values: ties are common.
                check(&text, Dist::Uniform(2.0), Tol::Exact);
            }
        }
        // NaNs (from sqrt of negatives) win over every number.
        check(
            &format!(
                "{{ lambda ; a:f32[6,7]. let
    b:f32[6,7] = sqrt a
    c:i32[6] = {op}[axes=(1,) index_dtype=int32] b
  in (c,) }}"
            ),
            Dist::Between(-0.3, 2.0),
            Tol::Exact,
        );
    }
}

#[test]
fn jit_calls_literal_outputs_and_passthrough() {
    check(
        "{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] = jit[
      name=f
      jaxpr={ lambda ; d:f32[8] e:f32[8]. let
          f:f32[8] = mul d e
          g:f32[8] = logistic f
        in (g,) }
    ] a b
    h:f32[] = add 1.0:f32[] 2.0:f32[]
  in (c, h, a, 3:i32[]) }",
        Dist::Uniform(2.0),
        Tol::Ulp(4),
    );
}

/// f32 products of at least 2^24 multiply-adds run our packed GEMM
/// (`dot/packed.rs`): with guard pages after the result, its packed panels
/// and the operands, every layout it packs (row-major, transposed `a`,
/// transposed `b`, batched), edge tiles in both directions, depth blocks
/// that do not divide the depth, and the accumulating form.
#[test]
fn packed_gemms_under_guard_pages() {
    let dot = |lc: usize, rc: usize, batch: &str| {
        format!("dot_general[dimension_numbers=(([{lc}], [{rc}]), ({batch})) preferred_element_type=float32]")
    };
    let cases = [
        format!("{{ lambda ; a:f32[97,301] b:f32[301,613]. let c:f32[97,613] = {} a b in (c,) }}", dot(1, 0, "[], []")),
        format!("{{ lambda ; a:f32[301,97] b:f32[301,613]. let c:f32[97,613] = {} a b in (c,) }}", dot(0, 0, "[], []")),
        format!("{{ lambda ; a:f32[97,301] b:f32[613,301]. let c:f32[97,613] = {} a b in (c,) }}", dot(1, 1, "[], []")),
        format!("{{ lambda ; a:f32[2,61,1100] b:f32[2,1100,250]. let c:f32[2,61,250] = {} a b in (c,) }}", dot(2, 1, "[0], [0]")),
        format!("{{ lambda ; a:f32[97,301] b:f32[301,613] d:f32[97,613]. let c:f32[97,613] = {} a b; e:f32[97,613] = add d c in (e,) }}", dot(1, 0, "[], []")),
    ];
    for text in &cases {
        check(text, Dist::Uniform(1.0), Tol::Rel(1e-5));
    }
}

/// GEMMs on two threads against the interpreter: small ones (`gemm`'s own
/// threading), and large ones, which run the packed GEMM in f32 (its
/// tiles' edges) and `dot/split.rs`'s blocks in f64, checked in f64 on
/// both sides of every block or tile edge.
#[test]
fn threaded_gemms() {
    use common::{assert_close, parse, random_args, run};
    use jaxon_backend_cpu::CpuBackend;
    use jaxon_ir::interp::InterpreterBackend;
    let cases = [
        "{ lambda ; a:f32[300,200] b:f32[200,150]. let c:f32[300,150] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b in (c,) }",
        "{ lambda ; a:f64[200,257] b:f64[200,96]. let c:f64[257,96] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float64] a b in (c,) }",
        "{ lambda ; a:f32[131,64] b:f32[64,512] d:f32[131,512]. let c:f32[131,512] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b; e:f32[131,512] = add d c in (e,) }",
    ];
    let cpu = CpuBackend::with_threads(2);
    let interp = InterpreterBackend::new();
    for text in cases {
        let closed = parse(text);
        let args = random_args(&closed, 7, Dist::Uniform(1.0));
        let got = run(&cpu, &closed, &args);
        let want = run(&interp, &closed, &args);
        assert_close(&got[0], &want[0], Tol::Rel(1e-5), 1.0, text);
    }
    // Products of at least 2^31 multiply-adds: f64 ones run as blocks of
    // rows or of columns (`dot/split.rs`), f32 ones as 96×256 tiles of the
    // packed GEMM, in chunks of depth 1024: entries on both sides of every
    // block edge and of some tile edges.
    /// `(m, k, n)`, whether the product is added to an operand, and the
    /// rows and columns of the result to check.
    type SplitCase = (
        (usize, usize, usize),
        bool,
        &'static [usize],
        &'static [usize],
    );
    let split_cases: [SplitCase; 3] = [
        (
            (1300, 1300, 1300),
            false,
            &[0, 95, 96, 335, 336, 671, 672, 1007, 1008, 1247, 1248, 1299],
            &[0, 1, 255, 256, 640, 1279, 1280, 1299],
        ),
        (
            (200, 4000, 2800),
            false,
            &[0, 1, 199],
            &[703, 704, 1407, 1408, 2111, 2112, 2799],
        ),
        (
            (200, 4000, 2800),
            true,
            &[0, 117],
            &[0, 703, 704, 2112, 2799],
        ),
    ];
    let dtypes = [("f32", "float32"), ("f64", "float64")];
    for (((m, k, n), acc, rows, cols), (t, pref)) in
        split_cases.into_iter().flat_map(|c| dtypes.map(|d| (c, d)))
    {
        let dot = format!(
            "c:{t}[{m},{n}] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type={pref}] a b"
        );
        let text = if acc {
            format!("{{ lambda ; a:{t}[{m},{k}] b:{t}[{k},{n}] d:{t}[{m},{n}]. let {dot}; e:{t}[{m},{n}] = add d c in (e,) }}")
        } else {
            format!("{{ lambda ; a:{t}[{m},{k}] b:{t}[{k},{n}]. let {dot} in (c,) }}")
        };
        let closed = parse(&text);
        let args = random_args(&closed, 11, Dist::Uniform(1.0));
        let got = run(&cpu, &closed, &args)[0].to_f64_vec();
        let (a, b) = (args[0].to_f64_vec(), args[1].to_f64_vec());
        let d = args.get(2).map(|d| d.to_f64_vec());
        for &i in rows {
            for &j in cols {
                let terms = (0..k).map(|p| a[i * k + p] * b[p * n + j]);
                let want = terms.clone().sum::<f64>() + d.as_ref().map_or(0.0, |d| d[i * n + j]);
                // f32 accumulation: well inside k·ε·Σ|terms|.
                let bound = 1e-5 * terms.map(f64::abs).sum::<f64>();
                let g = got[i * n + j];
                assert!(
                    (g - want).abs() <= bound,
                    "{t} {m}x{k}x{n}: c[{i},{j}] = {g} vs {want}"
                );
            }
        }
    }
}
