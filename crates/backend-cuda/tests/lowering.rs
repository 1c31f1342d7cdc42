//! Differential tests of the lowering table: every lowered primitive runs
//! on `cuda-sim` (the plan on the kernel simulator) and on the reference
//! interpreter, on seeded random inputs and random shapes (sizes 0 and 1,
//! and odd sizes that divide neither a warp nor a block), for f32, f64,
//! i32 and bool where the primitive takes them. Math functions compare
//! within a few ulps (the simulator uses the host's functions), sums and
//! products within a relative tolerance (the warp reduction reassociates),
//! everything else exactly.

mod lowering_util;
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use lowering_util::{args_for, awkward, check, check_with, random, tuple, ty, Dist, Rng, Tol};

const MAX: usize = 300;

fn unary_dist(op: UnaryOp) -> Option<(Dist, Tol)> {
    use UnaryOp as U;
    let u = Dist::Uniform;
    Some(match op {
        U::Neg | U::Abs | U::Sign | U::Floor | U::Ceil | U::Sqrt | U::Rsqrt | U::Square => {
            (u(5.0), Tol::Exact)
        }
        U::Copy | U::StopGradient => (u(4.0), Tol::Exact),
        // The simulator's erf family (libm) and the interpreter's differ
        // by tens of ulps in f64.
        U::Cbrt | U::Erfc | U::Erf => (u(4.0), Tol::Rel(1e-6)),
        U::ErfInv => (Dist::Between(-0.99, 0.99), Tol::Rel(1e-6)),
        U::Asin | U::Acos => (Dist::Between(-1.0, 1.0), Tol::Ulp(4)),
        U::Atanh => (Dist::Between(-0.9, 0.9), Tol::Ulp(4)),
        U::Acosh => (Dist::Between(1.0, 20.0), Tol::Ulp(4)),
        U::Log => (Dist::Between(0.0, 50.0), Tol::Ulp(4)),
        U::Log1p => (Dist::Between(-1.0, 5.0), Tol::Ulp(4)),
        U::Tan => (u(1.5), Tol::Ulp(4)),
        U::Exp
        | U::Exp2
        | U::Expm1
        | U::Tanh
        | U::Logistic
        | U::Sin
        | U::Cos
        | U::Atan
        | U::Sinh
        | U::Cosh
        | U::Asinh => (u(5.0), Tol::Ulp(4)),
        // Special functions: `tests/lowering_special.rs`.
        U::Lgamma | U::Digamma | U::BesselI0e | U::BesselI1e => return None,
        U::IsFinite | U::Not => return None,
        // Integer only: `unary_integer_and_bool_ops`.
        U::PopulationCount | U::Clz => return None,
    })
}

#[test]
fn unary_float_ops_on_random_shapes() {
    let mut rng = Rng::new(1);
    for op in UnaryOp::ALL {
        let Some((dist, tol)) = unary_dist(op) else {
            continue;
        };
        for dt in ["f32", "f64"] {
            let rank = rng.range(0, 3) as usize;
            let t = ty(dt, &rng.shape(rank, MAX));
            let text = format!("{{ lambda ; a:{t}. let b:{t} = {} a in (b,) }}", op.name());
            check(&text, rng.next(), dist, tol);
        }
    }
    // f16 computes in f32 and rounds once.
    for op in [UnaryOp::Exp, UnaryOp::Neg, UnaryOp::Sqrt, UnaryOp::Tanh] {
        let t = ty("f16", &[37]);
        let text = format!("{{ lambda ; a:{t}. let b:{t} = {} a in (b,) }}", op.name());
        check(&text, 5, Dist::Between(0.0, 3.0), Tol::Ulp(1));
    }
}

#[test]
fn unary_integer_and_bool_ops() {
    let mut rng = Rng::new(2);
    for op in [
        UnaryOp::Neg,
        UnaryOp::Sign,
        UnaryOp::Abs,
        UnaryOp::Not,
        UnaryOp::Square,
    ] {
        for dt in ["i32", "u8", "i8"] {
            let t = ty(dt, &rng.shape(2, MAX));
            let text = format!("{{ lambda ; a:{t}. let b:{t} = {} a in (b,) }}", op.name());
            check(&text, rng.next(), Dist::Uniform(100.0), Tol::Exact);
        }
    }
    for op in [UnaryOp::PopulationCount, UnaryOp::Clz] {
        for dt in ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"] {
            let t = ty(dt, &rng.shape(2, MAX));
            let text = format!("{{ lambda ; a:{t}. let b:{t} = {} a in (b,) }}", op.name());
            check(&text, rng.next(), Dist::Uniform(100.0), Tol::Exact);
        }
    }
    let t = ty("bool", &[37]);
    check(
        &format!("{{ lambda ; a:{t}. let b:{t} = not a in (b,) }}"),
        3,
        Dist::Uniform(1.0),
        Tol::Exact,
    );
    let (a, b) = (ty("f32", &[33]), ty("bool", &[33]));
    let text =
        format!("{{ lambda ; a:{a}. let c:{a} = div a 0.0:f32[] b:{b} = is_finite c in (b,) }}");
    check(&text, 4, Dist::Uniform(2.0), Tol::Exact);
}

#[test]
fn binary_ops_on_random_shapes() {
    let mut rng = Rng::new(3);
    for op in BinaryOp::ALL {
        use BinaryOp as B;
        let (dts, out): (&[&str], Option<&str>) = match op {
            // Special functions: `tests/lowering_special.rs`.
            B::Igamma
            | B::Igammac
            | B::IgammaGradA
            | B::RandomGammaGrad
            | B::Polygamma
            | B::Zeta => continue,
            B::And | B::Or | B::Xor => (&["i32", "u8", "bool"], None),
            B::ShiftLeft | B::ShiftRightArithmetic | B::ShiftRightLogical => {
                (&["i32", "u16", "i8"], None)
            }
            B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => {
                (&["f32", "i32", "bool", "u32"], Some("bool"))
            }
            B::LtTo | B::LeTo => (&["f32", "f64", "i32", "bool", "u32"], Some("bool")),
            B::Atan2 | B::Nextafter => (&["f32", "f64"], None),
            _ => (&["f32", "f64", "i32"], None),
        };
        for dt in dts {
            let rank = rng.range(0, 3) as usize;
            let s = rng.shape(rank, MAX);
            let (t, o) = (ty(dt, &s), ty(out.unwrap_or(dt), &s));
            let (dist, tol) = match op {
                B::Pow if dt.starts_with('f') => (Dist::Between(0.1, 3.0), Tol::Ulp(2)),
                B::Pow => (Dist::Uniform(4.0), Tol::Exact),
                B::Atan2 => (Dist::Uniform(4.0), Tol::Ulp(4)),
                B::ShiftLeft | B::ShiftRightArithmetic | B::ShiftRightLogical => {
                    (Dist::Uniform(40.0), Tol::Exact)
                }
                // Small integers: division and remainder by zero occur.
                _ => (Dist::Uniform(3.0), Tol::Exact),
            };
            let text = format!(
                "{{ lambda ; a:{t} b:{t}. let c:{o} = {} a b in (c,) }}",
                op.name()
            );
            check(&text, rng.next(), dist, tol);
        }
    }
    // The total order on NaNs of both signs, ±inf, ±0 and finite values,
    // given as inputs: the sign of a NaN that arithmetic makes (0/0) is the
    // hardware's (x86: negative, NVIDIA: positive), not the program's.
    let mut rng = Rng::new(10);
    for dt in ["f32", "f64", "f16", "bf16"] {
        let (t, o) = (ty(dt, &[41]), ty("bool", &[41]));
        let text = format!(
            "{{ lambda ; a:{t} b:{t}. let
    c:{o} = lt_to a b
    d:{o} = le_to a b
    e:{o} = lt_to b a
    f:{o} = le_to a a
  in (c, d, e, f) }}"
        );
        let dtype = jaxon_ir::DType::from_name(dt).expect("dtype");
        let args = [
            awkward(&mut rng, dtype, &[41]),
            awkward(&mut rng, dtype, &[41]),
        ];
        check_with(&text, &args, Tol::Exact);
    }
    // A scalar operand, and size-1 dimensions broadcasting against others.
    check(
        "{ lambda ; a:f32[3,1] b:f32[3,5] c:f32[]. let
    d:f32[3,5] = add a b
    e:f32[3,5] = mul d c
  in (e,) }",
        6,
        Dist::Uniform(3.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f32[8] b:i32[8]. let c:f32[8] = pow a b in (c,) }",
        7,
        Dist::Uniform(3.0),
        Tol::Ulp(2),
    );
}

#[test]
fn other_elementwise_primitives() {
    for dt in ["f32", "f64", "f16"] {
        let t = ty(dt, &[37]);
        let text = format!(
            "{{ lambda ; a:{t} b:{t} c:{t} d:bool[37]. let
    e:{t} = integer_pow[y=3] a
    f:{t} = round[rounding_method=0] b
    g:{t} = round[rounding_method=1] b
    h:{t} = clamp a c b
    i:{t} = select_n d e f
    j:{t} = add i g
    k:{t} = integer_pow[y=-2] a
  in (j, h, k) }}"
        );
        check(&text, 8, Dist::Uniform(3.0), Tol::Ulp(1));
    }
    check(
        "{ lambda ; a:i32[33] b:i32[33] c:f32[33] d:f32[33] e:f32[33]. let
    f:i32[33] = integer_pow[y=5] a
    g:i32[33] = integer_pow[y=-1] b
    h:f32[33] = select_n a c d e
    i:i32[33] = clamp -1:i32[] a 2:i32[]
  in (f, g, h, i) }",
        9,
        Dist::Uniform(3.0),
        Tol::Exact,
    );
    let conv = [
        ("f32", "i32", "int32"),
        ("f32", "u8", "uint8"),
        ("f64", "f32", "float32"),
        ("f32", "f16", "float16"),
        ("f64", "bf16", "bfloat16"),
        ("i32", "f32", "float32"),
        ("f32", "bool", "bool"),
        ("bool", "f32", "float32"),
        ("i32", "i8", "int8"),
        ("f16", "f64", "float64"),
    ];
    for (i, (from, to, long)) in conv.iter().enumerate() {
        let text = format!(
            "{{ lambda ; a:{}. let b:{} = convert_element_type[new_dtype={long} weak_type=False] a in (b,) }}",
            ty(from, &[33]),
            ty(to, &[33])
        );
        check(&text, 10 + i as u64, Dist::Uniform(300.0), Tol::Exact);
    }
    check(
        "{ lambda ; a:f32[7] b:i32[7]. let
    c:i32[7] = bitcast_convert_type[new_dtype=int32] a
    d:f32[7] = bitcast_convert_type[new_dtype=float32] b
  in (c, d) }",
        20,
        Dist::Uniform(1e5),
        Tol::Exact,
    );
}

#[test]
fn fused_chains_with_data_movement() {
    check(
        "{ lambda ; a:f32[5,7] b:f32[7] c:f32[7,5]. let
    d:f32[5,7] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(5, 7) sharding=None] b
    e:f32[5,7] = transpose[permutation=(1, 0)] c
    f:f32[5,7] = mul a d
    g:f32[5,7] = sub f e
    h:f32[5,7] = rev[dimensions=(0,)] g
    i:f32[35] = reshape[dimensions=None new_sizes=(35,) sharding=None] h
    j:f32[13] = slice[limit_indices=(30,) start_indices=(5,) strides=(2,)] i
    k:f32[13] = exp j
  in (k, g) }",
        21,
        Dist::Uniform(2.0),
        Tol::Ulp(2),
    );
}

#[test]
fn structural_primitives_on_random_shapes() {
    let mut rng = Rng::new(4);
    for round in 0..3u64 {
        let s = rng.shape(3, MAX);
        let (a, b, c) = (s[0], s[1], s[2]);
        let t = ty("f32", &s);
        let text = format!(
            "{{ lambda ; x:{t} p:f32[]. let
    bx:f32[2,{a},{b},{c}] = broadcast_in_dim[broadcast_dimensions=(1, 2, 3) shape=(2, {a}, {b}, {c}) sharding=None] x
    tx:f32[{c},{a},{b}] = transpose[permutation=(2, 0, 1)] x
    rx:{t} = rev[dimensions=(0, 2)] x
    px:f32[{pa},{b},{pc}] = pad[padding_config=((1, 2, 1), (0, 0, 0), (-1, 1, 0))] x p
    cx:f32[{a},{b2},{c}] = concatenate[dimension=1] x rx
    sx:f32[{a},2,{b},{c}] = stack[axis=1] x rx
    ix:i32[{a},{b},{c}] = iota[dimension=2 dtype=int32 shape=({a}, {b}, {c}) sharding=None]
    fx:f32[{a},{b},{c}] = iota[dimension=0 dtype=float32 shape=({a}, {b}, {c}) sharding=None]
    tl:f32[{a2},{b},{c}] = tile[reps=(2, 1, 1)] x
  in (bx, tx, rx, px, cx, sx, ix, fx, tl) }}",
            pa = if a == 0 { 3 } else { 2 * a + 2 },
            pc = c,
            b2 = 2 * b,
            a2 = 2 * a,
        );
        check(&text, 30 + round, Dist::Uniform(5.0), Tol::Exact);
    }
    check(
        "{ lambda ; a:f32[4,1,5]. let
    b:f32[4,5] = squeeze[dimensions=(1,)] a
    c:f32[20] = reshape[dimensions=None new_sizes=(20,) sharding=None] a
    d:f32[4,2] e:f32[4,3] = split[axis=1 sizes=(2, 3)] b
    f:f32[5,4] = reshape[dimensions=(2, 1, 0) new_sizes=(5, 4) sharding=None] a
    g:f32[2,10] = reshape[dimensions=(1, 0) new_sizes=(2, 10) sharding=None] b
  in (b, c, d, e, f, g) }",
        40,
        Dist::Uniform(5.0),
        Tol::Exact,
    );
}

#[test]
fn dynamic_slices_clamp_their_starts() {
    let text = "{ lambda ; a:f32[7,37] b:i32[] c:i32[] d:f32[3,5]. let
    e:f32[3,5] = dynamic_slice[slice_sizes=(3, 5)] a b c
    f:f32[7,37] = dynamic_update_slice a d c b
  in (e, f) }";
    let mut rng = Rng::new(5);
    for (i, j) in [(0, 0), (2, 30), (-4, 100), (6, -1), (5, 36)] {
        let mut args = args_for(text, rng.next(), Dist::Uniform(5.0));
        args[1] = jaxon_ir::HostArray::scalar(jaxon_ir::DType::I32, i as f64);
        args[2] = jaxon_ir::HostArray::scalar(jaxon_ir::DType::I32, j as f64);
        check_with(text, &args, Tol::Exact);
    }
}

#[test]
fn reductions_over_random_axes() {
    let mut rng = Rng::new(6);
    let ops = [
        ("reduce_sum", &["f32", "f64", "i32"][..]),
        ("reduce_max", &["f32", "i32", "u8"][..]),
        ("reduce_min", &["f64", "i32", "i8"][..]),
        ("reduce_prod", &["f32", "i32"][..]),
        ("reduce_and", &["bool", "i32"][..]),
        ("reduce_or", &["bool", "u8"][..]),
        ("reduce_xor", &["bool", "i32"][..]),
    ];
    for (op, dts) in ops {
        for dt in dts {
            let rank = rng.range(1, 3) as usize;
            let s = rng.shape(rank, 2000);
            let mut axes: Vec<usize> = (0..rank).filter(|_| rng.next() & 1 == 1).collect();
            if axes.is_empty() {
                axes.push(rng.range(0, rank as i64 - 1) as usize);
            }
            let out: Vec<usize> = (0..rank)
                .filter(|d| !axes.contains(d))
                .map(|d| s[d])
                .collect();
            let text = format!(
                "{{ lambda ; a:{}. let b:{} = {op}[axes={} out_sharding=None] a in (b,) }}",
                ty(dt, &s),
                ty(dt, &out),
                tuple(&axes)
            );
            let text = if op == "reduce_sum" {
                text
            } else {
                text.replace(" out_sharding=None", "")
            };
            let dist = if op == "reduce_prod" {
                Dist::Between(0.5, 1.5)
            } else {
                Dist::Uniform(50.0)
            };
            let dist = if op == "reduce_prod" && *dt == "i32" {
                Dist::Uniform(2.0)
            } else {
                dist
            };
            check(&text, rng.next(), dist, Tol::Rel(1e-5));
        }
    }
    // A reduction with its elementwise producers fused in.
    check(
        "{ lambda ; a:f32[37,33] b:f32[33]. let
    c:f32[37,33] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(37, 33) sharding=None] b
    d:f32[37,33] = mul a c
    e:f32[37,33] = exp d
    f:f32[37] = reduce_sum[axes=(1,) out_sharding=None] e
    g:f32[33] = reduce_max[axes=(0,)] d
  in (f, g) }",
        50,
        Dist::Uniform(1.0),
        Tol::Rel(1e-5),
    );
}

#[test]
fn argmax_and_argmin_take_the_first_extremum() {
    let mut rng = Rng::new(7);
    for op in ["argmax", "argmin"] {
        for dt in ["f32", "i32", "bool"] {
            let s = rng.shape(2, 1500);
            let s = [s[0].max(1), s[1].max(1), 3];
            let axis = rng.range(0, 2) as usize;
            let out: Vec<usize> = (0..3).filter(|&d| d != axis).map(|d| s[d]).collect();
            let text = format!(
                "{{ lambda ; a:{}. let b:{} = {op}[axes=({axis},) index_dtype=int32] a in (b,) }}",
                ty(dt, &s),
                ty("i32", &out)
            );
            // Few distinct values: ties everywhere.
            check(&text, rng.next(), Dist::Uniform(3.0), Tol::Exact);
        }
    }
    // NaN wins.
    let text = "{ lambda ; a:f32[40]. let b:i32[] = argmax[axes=(0,) index_dtype=int32] a c:i32[] = argmin[axes=(0,) index_dtype=int32] a in (b, c) }";
    let mut rng = Rng::new(8);
    let mut a = random(&mut rng, jaxon_ir::DType::F32, &[40], Dist::Uniform(2.0)).to_f64_vec();
    a[33] = f64::NAN;
    a[35] = f64::NAN;
    let a = jaxon_ir::HostArray::from_f64(jaxon_ir::DType::F32, &[40], &a).unwrap();
    check_with(text, &[a], Tol::Exact);
}

#[test]
fn dot_general_through_gemm_plans_and_kernels() {
    let mut rng = Rng::new(9);
    for _ in 0..3 {
        let (m, k, n) = (
            rng.pick(&[1, 3, 33]),
            rng.pick(&[0, 1, 7, 37]),
            rng.pick(&[1, 5, 33]),
        );
        for dt in ["f32", "f64", "i32"] {
            let text = format!(
                "{{ lambda ; a:{} b:{} c:{} d:{}. let
    e:{} = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type={long}] a b
    f:{} = dot_general[dimension_numbers=(([1], [1]), ([], [])) preferred_element_type={long}] a c
    g:{} = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type={long}] d b
  in (e, f, g) }}",
                ty(dt, &[m, k]),
                ty(dt, &[k, n]),
                ty(dt, &[n, k]),
                ty(dt, &[k, m]),
                ty(dt, &[m, n]),
                ty(dt, &[m, n]),
                ty(dt, &[m, n]),
                long = match dt {
                    "f32" => "float32",
                    "f64" => "float64",
                    _ => "int32",
                }
            );
            check(&text, rng.next(), Dist::Uniform(3.0), Tol::Rel(1e-5));
        }
    }
    // Batched, with an operand layout that needs a permutation.
    check(
        "{ lambda ; a:f32[3,4,5] b:f32[5,3,6]. let
    c:f32[3,4,6] = dot_general[dimension_numbers=(([2], [0]), ([0], [1])) preferred_element_type=float32] a b
  in (c,) }",
        60,
        Dist::Uniform(2.0),
        Tol::Rel(1e-5),
    );
    check(
        "{ lambda ; a:bf16[4,8] b:bf16[8,3]. let
    c:f32[4,3] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
  in (c,) }",
        61,
        Dist::Uniform(2.0),
        Tol::Rel(1e-5),
    );
}
