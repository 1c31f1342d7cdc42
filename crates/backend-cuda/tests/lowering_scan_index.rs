//! Differential tests of the lowerings added for issue 19 — `reduce_precision`,
//! the cumulative ops, `gather` and the scatters — on `cuda-sim` against
//! the reference interpreter, on seeded random inputs of several shapes and
//! dtypes. Indices are drawn far outside the operand too, so that every
//! mode's out-of-bounds rule (clamp, fill, drop) is exercised; the
//! simulator reports any out-of-bounds access or race as an error.

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::{args_for, check, check_with, random, ty, Dist, Rng, Tol};

#[test]
fn reduce_precision_matches_the_interpreter_bit_for_bit() {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        65504.0,
        65520.0,
        1e-5,
        -6e-8,
        1e38,
        3.4e38,
        1e-40,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e300,
        1e-310,
    ];
    let cases: [(&str, &[(u32, u32)]); 4] = [
        ("f32", &[(5, 10), (8, 7), (4, 3), (11, 52), (8, 23), (1, 0)]),
        ("f64", &[(8, 23), (5, 10), (11, 52), (11, 20), (2, 60)]),
        ("f16", &[(5, 10), (4, 2), (8, 7)]),
        ("bf16", &[(5, 10), (8, 3)]),
    ];
    let mut rng = Rng::new(70);
    for (dt, params) in cases {
        for &(e, m) in params {
            let n = 64;
            let t = ty(dt, &[n]);
            let text = format!(
                "{{ lambda ; a:{t}. let b:{t} = reduce_precision[exponent_bits={e} mantissa_bits={m}] a c:{t} = mul b 3.0:{dt}[] in (b, c) }}"
            );
            let dtype = DType::from_name(dt).expect("dtype");
            let mut vals = random(&mut rng, dtype, &[n], Dist::Uniform(1e5)).to_f64_vec();
            for (i, s) in specials.iter().enumerate() {
                vals[i] = *s;
            }
            for v in vals.iter_mut().skip(specials.len()).step_by(3) {
                *v *= 1e-9;
            }
            let a = HostArray::from_f64(dtype, &[n], &vals).expect("array");
            check_with(&text, &[a], Tol::Exact);
        }
    }
}

#[test]
fn cumulative_ops_along_random_axes() {
    let mut rng = Rng::new(71);
    let ops: [(&str, &[&str]); 5] = [
        ("cumsum", &["f32", "f64", "i32", "i8", "bool", "f16", "u32"]),
        ("cumprod", &["f32", "f64", "i32", "bool", "bf16"]),
        ("cummax", &["f32", "f64", "i32", "u8", "bool", "f16"]),
        ("cummin", &["f32", "i64", "i16", "bool"]),
        ("cumlogsumexp", &["f32", "f64", "f16"]),
    ];
    for (op, dts) in ops {
        for dt in dts {
            for reverse in ["False", "True"] {
                let rank = rng.range(1, 3) as usize;
                let s = rng.shape(rank, 1200);
                let axis = rng.range(0, rank as i64 - 1) as usize;
                let t = ty(dt, &s);
                let text = format!(
                    "{{ lambda ; a:{t}. let b:{t} = {op}[axis={axis} reverse={reverse}] a in (b,) }}"
                );
                let dist = match (op, *dt) {
                    ("cumprod", "f32" | "f64" | "bf16") => Dist::Between(0.7, 1.3),
                    ("cumprod", _) => Dist::Uniform(3.0),
                    _ => Dist::Uniform(20.0),
                };
                let tol = if op == "cumlogsumexp" {
                    Tol::Ulp(8)
                } else {
                    Tol::Exact
                };
                check(&text, rng.next(), dist, tol);
            }
        }
    }
    // Warp scans over several chunks of 32, both directions, ragged ends.
    for (op, dt, s, axis) in [
        ("cumsum", "i32", [3, 100], 1),
        ("cumsum", "bool", [70, 2], 0),
        ("cumprod", "i8", [2, 77], 1),
        ("cummax", "f32", [65, 3], 0),
        ("cummin", "u16", [1, 129], 1),
        ("cummax", "f16", [4, 33], 1),
    ] {
        for reverse in ["False", "True"] {
            let t = ty(dt, &s);
            let text = format!(
                "{{ lambda ; a:{t}. let b:{t} = {op}[axis={axis} reverse={reverse}] a in (b,) }}"
            );
            check(&text, rng.next(), Dist::Uniform(60.0), Tol::Exact);
        }
    }
    // NaN and infinities propagate as the interpreter's.
    let text = "{ lambda ; a:f32[9]. let b:f32[9] = cummax[axis=0 reverse=False] a c:f32[9] = cumlogsumexp[axis=0 reverse=True] a d:f32[9] = cummin[axis=0 reverse=True] a in (b, c, d) }";
    let a = HostArray::from_f64(
        DType::F32,
        &[9],
        &[
            1.0,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            f64::NAN,
            2.0,
            f64::INFINITY,
            -3.0,
            f64::NEG_INFINITY,
        ],
    )
    .expect("array");
    check_with(text, &[a], Tol::Ulp(2));
    // A scan fed by a fused producer and feeding another kernel. Within
    // ulps: a GPU's `expf` is within 2 ulp of the host's, not equal.
    check(
        "{ lambda ; a:f32[37,5]. let b:f32[37,5] = exp a c:f32[37,5] = cumsum[axis=0 reverse=True] b d:f32[37,5] = mul c a in (d,) }",
        72,
        Dist::Uniform(2.0),
        Tol::Ulp(8),
    );
}

/// Indices for `shape`, drawn near and far outside `0..dim`.
fn indices(rng: &mut Rng, shape: &[usize], dim: usize) -> HostArray {
    let n: usize = shape.iter().product();
    let d = dim as i64;
    let vals: Vec<f64> = (0..n)
        .map(|_| match rng.range(0, 7) {
            0 => rng.pick(&[-1000i64, 1000, -1, d, i32::MAX as i64]) as f64,
            _ => rng.range(-2, d + 1) as f64,
        })
        .collect();
    HostArray::from_f64(DType::I32, shape, &vals).expect("indices")
}

const MODES: [&str; 3] = ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"];

fn gather_text(
    x: &str,
    i: &str,
    out: &str,
    dn: &str,
    sizes: &str,
    mode: &str,
    fill: &str,
) -> String {
    format!(
        "{{ lambda ; a:{x} b:{i}. let
    c:{out} = gather[
      dimension_numbers=GatherDimensionNumbers({dn})
      fill_value={fill}
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      slice_sizes={sizes}
      unique_indices=False
    ] a b
  in (c,) }}"
    )
}

#[test]
fn gathers_in_every_mode() {
    let mut rng = Rng::new(73);
    for mode in MODES {
        for (dt, fill) in [
            ("f32", "None"),
            ("i32", "None"),
            ("u8", "None"),
            ("f16", "None"),
            ("bool", "None"),
            ("f64", "1.5"),
            ("i32", "-7"),
        ] {
            let dtype = DType::from_name(dt).expect("dtype");
            // Rows of a matrix: x[A,B], i[N,1] -> [N,B] (offset dim 1).
            let (a, b, n) = (rng.range(1, 9) as usize, rng.range(1, 40) as usize, 13);
            let text = gather_text(
                &ty(dt, &[a, b]),
                &ty("i32", &[n, 1]),
                &ty(dt, &[n, b]),
                "offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()",
                &format!("(1, {b})"),
                mode,
                fill,
            );
            let x = random(&mut rng, dtype, &[a, b], Dist::Uniform(50.0));
            check_with(&text, &[x, indices(&mut rng, &[n, 1], a)], Tol::Exact);
            // Windows of width 3 at 2-d starts: x[A,B], i[N,M,2] -> [3,N,M]
            // (offset dim first, dim 1 collapsed).
            let (a, b) = (rng.range(2, 6) as usize, rng.range(3, 12) as usize);
            let text = gather_text(
                &ty(dt, &[a, b]),
                &ty("i32", &[4, 3, 2]),
                &ty(dt, &[2, 4, 3]),
                "offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1, 0), operand_batching_dims=(), start_indices_batching_dims=()",
                "(2, 1)",
                mode,
                fill,
            );
            let x = random(&mut rng, dtype, &[a, b], Dist::Uniform(50.0));
            check_with(&text, &[x, indices(&mut rng, &[4, 3, 2], b)], Tol::Exact);
        }
        // Batching dims: x[B,N,K], i[B,M,1] -> [B,M,K].
        let text = gather_text(
            "f32[3,7,4]",
            "i32[3,5,1]",
            "f32[3,5,4]",
            "offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,)",
            "(1, 1, 4)",
            mode,
            "None",
        );
        let x = random(&mut rng, DType::F32, &[3, 7, 4], Dist::Uniform(5.0));
        check_with(&text, &[x, indices(&mut rng, &[3, 5, 1], 7)], Tol::Exact);
    }
}

fn scatter_text(
    kind: &str,
    x: &str,
    i: &str,
    u: &str,
    dn: &str,
    mode: &str,
    update_jaxpr: &str,
) -> String {
    format!(
        "{{ lambda ; a:{x} b:{i} c:{u}. let
    d:{x} = {kind}[
      dimension_numbers=ScatterDimensionNumbers({dn})
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      unique_indices=False
      update_consts=()
      update_jaxpr={update_jaxpr}
    ] a b c
  in (d,) }}"
    )
}

#[test]
fn scatters_in_every_mode_with_duplicate_indices() {
    let mut rng = Rng::new(74);
    let kinds = [
        ("scatter", None),
        ("scatter-add", Some("add")),
        ("scatter-mul", Some("mul")),
        ("scatter-min", Some("min")),
        ("scatter-max", Some("max")),
    ];
    for mode in MODES {
        for (kind, op) in kinds {
            for dt in ["f32", "i32", "f16", "u8", "bool", "f64", "i64"] {
                if dt == "bool" && kind != "scatter" && kind != "scatter-add" {
                    continue;
                }
                let dtype = DType::from_name(dt).expect("dtype");
                let uj = match op {
                    None => "None".to_string(),
                    Some(o) => {
                        format!("{{ lambda ; p:{dt}[] q:{dt}[]. let r:{dt}[] = {o} p q in (r,) }}")
                    }
                };
                let uj = if dt == "bool" && op.is_some() {
                    "{ lambda ; p:bool[] q:bool[]. let r:bool[] = or p q in (r,) }".to_string()
                } else {
                    uj
                };
                // Rows: x[A,B], i[N,1], u[N,B]; few rows, so indices repeat.
                let (a, b, n) = (rng.range(1, 6) as usize, rng.range(1, 20) as usize, 11);
                let text = scatter_text(
                    kind,
                    &ty(dt, &[a, b]),
                    &ty("i32", &[n, 1]),
                    &ty(dt, &[n, b]),
                    "update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()",
                    mode,
                    &uj,
                );
                let dist = if kind == "scatter-mul" {
                    Dist::Uniform(2.0)
                } else {
                    Dist::Uniform(40.0)
                };
                let x = random(&mut rng, dtype, &[a, b], dist);
                let u = random(&mut rng, dtype, &[n, b], dist);
                let tol = if kind == "scatter-add" && matches!(dt, "f32" | "f64") {
                    Tol::Rel(1e-6)
                } else {
                    Tol::Exact
                };
                check_with(&text, &[x, indices(&mut rng, &[n, 1], a), u], tol);
                // Overlapping windows of width 3 along dim 1: x[A,B], i[N,2],
                // u[N,3] (dim 0 inserted).
                let (a, b) = (rng.range(1, 4) as usize, rng.range(3, 9) as usize);
                let text = scatter_text(
                    kind,
                    &ty(dt, &[a, b]),
                    &ty("i32", &[7, 2]),
                    &ty(dt, &[7, 3]),
                    "update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1), operand_batching_dims=(), scatter_indices_batching_dims=()",
                    mode,
                    &uj,
                );
                let x = random(&mut rng, dtype, &[a, b], dist);
                let u = random(&mut rng, dtype, &[7, 3], dist);
                check_with(&text, &[x, indices(&mut rng, &[7, 2], b), u], tol);
            }
        }
        // Batching dims: x[B,N], i[B,M,1], u[B,M].
        let text = scatter_text(
            "scatter-add",
            "f32[3,6]",
            "i32[3,9,1]",
            "f32[3,9]",
            "update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,), scatter_indices_batching_dims=(0,)",
            mode,
            "{ lambda ; p:f32[] q:f32[]. let r:f32[] = add p q in (r,) }",
        );
        let args = args_for(&text, rng.next(), Dist::Uniform(4.0));
        let i = indices(&mut rng, &[3, 9, 1], 6);
        check_with(
            &text,
            &[args[0].clone(), i, args[2].clone()],
            Tol::Rel(1e-6),
        );
        let text = text.replace("scatter-add", "scatter").replace(
            "{ lambda ; p:f32[] q:f32[]. let r:f32[] = add p q in (r,) }",
            "None",
        );
        let i = indices(&mut rng, &[3, 9, 1], 6);
        check_with(&text, &[args[0].clone(), i, args[2].clone()], Tol::Exact);
    }
}

#[test]
fn empty_shapes_and_other_index_dtypes() {
    let cases = [
        "{ lambda ; a:f32[0,3]. let b:f32[0,3] = cumsum[axis=0 reverse=False] a c:f32[0,3] = cummax[axis=1 reverse=True] a in (b, c) }",
        "{ lambda ; a:f32[4,0]. let b:f32[4,0] = sort[dimension=1 is_stable=True num_keys=1] a c:f32[4,0] d:i32[4,0] = top_k[axis=1 k=0] a in (b, c, d) }",
        "{ lambda ; a:f32[4,5]. let c:f32[4,0] d:i32[4,0] = top_k[axis=1 k=0] a in (c, d) }",
    ];
    for (i, text) in cases.iter().enumerate() {
        check(text, 200 + i as u64, Dist::Uniform(3.0), Tol::Exact);
    }
    let mut rng = Rng::new(75);
    for idt in ["i64", "u8", "i8", "u32"] {
        let dtype = DType::from_name(idt).expect("dtype");
        let text = gather_text(
            "f32[6,5]",
            &ty(idt, &[9, 1]),
            "f32[9,5]",
            "offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()",
            "(1, 5)",
            "FILL_OR_DROP",
            "None",
        );
        let x = random(&mut rng, DType::F32, &[6, 5], Dist::Uniform(5.0));
        let i = random(&mut rng, dtype, &[9, 1], Dist::Uniform(9.0));
        check_with(&text, &[x, i.clone()], Tol::Exact);
        let text = scatter_text(
            "scatter",
            "f32[6,5]",
            &ty(idt, &[9, 1]),
            "f32[9,5]",
            "update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()",
            "CLIP",
            "None",
        );
        let x = random(&mut rng, DType::F32, &[6, 5], Dist::Uniform(5.0));
        let u = random(&mut rng, DType::F32, &[9, 5], Dist::Uniform(5.0));
        check_with(&text, &[x, i, u], Tol::Exact);
    }
    // Empty updates, an empty operand dim, and scalar updates.
    let texts = [
        scatter_text(
            "scatter-add",
            "f32[6,5]",
            "i32[0,1]",
            "f32[0,5]",
            "update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()",
            "FILL_OR_DROP",
            "None",
        ),
        scatter_text(
            "scatter-max",
            "f32[7]",
            "i32[5,1]",
            "f32[5]",
            "update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()",
            "PROMISE_IN_BOUNDS",
            "None",
        ),
        gather_text(
            "f32[0,5]",
            "i32[3,1]",
            "f32[3,5]",
            "offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()",
            "(0, 5)",
            "FILL_OR_DROP",
            "2.5",
        ),
    ];
    for (i, text) in texts.iter().enumerate() {
        check(text, 210 + i as u64, Dist::Uniform(8.0), Tol::Exact);
    }
}

#[test]
fn scatters_with_unique_indices_store_in_parallel() {
    let mut rng = Rng::new(76);
    for mode in ["FILL_OR_DROP", "PROMISE_IN_BOUNDS"] {
        for dt in ["f32", "f16", "bool", "i32", "u8"] {
            let dtype = DType::from_name(dt).expect("dtype");
            let (a, b) = (rng.range(4, 12) as usize, rng.range(1, 9) as usize);
            // Distinct indices, some out of bounds (dropped).
            let mut pool: Vec<i64> = (-3..a as i64 + 3).collect();
            let n = rng.range(1, pool.len() as i64) as usize;
            let mut idx = Vec::new();
            for _ in 0..n {
                let j = rng.range(0, pool.len() as i64 - 1) as usize;
                idx.push(pool.swap_remove(j) as f64);
            }
            let text = scatter_text(
                "scatter",
                &ty(dt, &[a, b]),
                &ty("i32", &[n, 1]),
                &ty(dt, &[n, b]),
                "update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()",
                mode,
                "None",
            )
            .replace("unique_indices=False", "unique_indices=True");
            let x = random(&mut rng, dtype, &[a, b], Dist::Uniform(30.0));
            let u = random(&mut rng, dtype, &[n, b], Dist::Uniform(30.0));
            let i = HostArray::from_f64(DType::I32, &[n, 1], &idx).expect("indices");
            check_with(&text, &[x, i, u], Tol::Exact);
        }
    }
}
