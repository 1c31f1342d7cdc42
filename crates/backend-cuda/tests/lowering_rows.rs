//! Row runs (`lower/rowrun.rs`): softmax, log-softmax and layer norm as JAX
//! prints them, on `cuda-sim` (or the GPU under
//! `JAXON_LOWERING_BACKEND=cuda`) against the reference interpreter, over
//! row lengths at and around the run's limits (32 and 4096 elements, odd
//! ones, a row not a multiple of the block), one to many rows, rank 3,
//! bf16, and a run whose intermediate is also a result. Where a run
//! applies, the whole computation is one kernel launch (asserted on the
//! lowered plan); where it does not (rows shorter than a warp or longer
//! than 4096), the groups lower one by one and the values are the same.

mod lowering_util;

use jaxon_backend_cuda::lower::plan::Step;
use lowering_util::{args_for, check_with, parse, Dist, Tol};

fn launches(text: &str) -> usize {
    let prog = jaxon_backend_cuda::lower::lower(&parse(text)).expect("lowers");
    prog.all_steps()
        .iter()
        .filter(|s| matches!(s, Step::Launch { .. } | Step::Gemm { .. }))
        .count()
}

fn softmax(dt: &str, shape: &[usize], also_exp: bool) -> String {
    let s = |v: &[usize]| {
        v.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let n = shape.len();
    let rows = &shape[..n - 1];
    let mut keep = rows.to_vec();
    keep.push(1);
    let bd: Vec<String> = (0..n - 1).map(|d| d.to_string()).collect();
    let bd = if bd.len() == 1 {
        format!("({},)", bd[0])
    } else {
        format!("({})", bd.join(", "))
    };
    let out = if also_exp { "(j, g)" } else { "(j,)" };
    format!(
        "{{ lambda ; a:{dt}[{x}]. let
    b:{dt}[{r}] = reduce_max[axes=({ax},) out_sharding=None] a
    c:{dt}[{r}] = max -inf:{dt}[] b
    d:{dt}[{k}] = broadcast_in_dim[broadcast_dimensions={bd} shape=({k},) sharding=None] c
    e:{dt}[{k}] = stop_gradient d
    f:{dt}[{x}] = sub a e
    g:{dt}[{x}] = exp f
    h:{dt}[{r}] = reduce_sum[axes=({ax},) out_sharding=None] g
    i:{dt}[{k}] = broadcast_in_dim[broadcast_dimensions={bd} shape=({k},) sharding=None] h
    j:{dt}[{x}] = div g i
  in {out} }}",
        x = s(shape),
        r = s(rows),
        k = s(&keep),
        ax = n - 1,
    )
}

fn log_softmax(r: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:f32[{r},{c}]. let
    c:f32[{r}] = reduce_max[axes=(1,) out_sharding=None] a
    d:f32[{r}] = max -inf:f32[] c
    e:f32[{r},1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, 1) sharding=None] d
    f:f32[{r},1] = stop_gradient e
    g:f32[{r},{c}] = sub a f
    h:f32[{r},{c}] = exp g
    i:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] h
    j:f32[{r},1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, 1) sharding=None] i
    k:f32[{r},1] = log j
    b:f32[{r},{c}] = sub g k
  in (b,) }}"
    )
}

fn layernorm(r: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:f32[{r},{c}] b:f32[{c}] c:f32[{c}]. let
    d:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] a
    e:f32[{r},1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, 1) sharding=None] d
    f:f32[{r},1] = div e {c}.0:f32[]
    g:f32[{r},{c}] = sub a f
    h:f32[{r},{c}] = integer_pow[y=2] g
    i:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] h
    j:f32[{r},1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, 1) sharding=None] i
    k:f32[{r},1] = div j {c}.0:f32[]
    l:f32[{r},{c}] = sub a f
    m:f32[{r},1] = add k 9.999999747378752e-06:f32[]
    n:f32[{r},1] = rsqrt m
    o:f32[{r},{c}] = mul l n
    p:f32[1,{c}] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, {c}) sharding=None] b
    q:f32[{r},{c}] = mul o p
    s:f32[1,{c}] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, {c}) sharding=None] c
    t:f32[{r},{c}] = add q s
  in (t, f) }}"
    )
}

fn run(text: &str, seed: u64, tol: Tol) {
    let args = args_for(text, seed, Dist::Uniform(4.0));
    check_with(text, &args, tol);
}

#[test]
fn softmax_rows_are_one_kernel_and_match_the_interpreter() {
    for (i, shape) in [
        vec![6, 300],
        vec![1, 32],
        vec![37, 4096],
        vec![5, 257],
        vec![3, 5, 128],
        vec![2, 1000],
    ]
    .iter()
    .enumerate()
    {
        let t = softmax("f32", shape, false);
        assert_eq!(launches(&t), 1, "{t}");
        run(&t, i as u64, Tol::Rel(1e-6));
        let t = softmax("f32", shape, true);
        assert_eq!(launches(&t), 1, "{t}");
        run(&t, 10 + i as u64, Tol::Rel(1e-6));
    }
    let t = softmax("bf16", &[4, 512], false);
    assert_eq!(launches(&t), 1, "{t}");
    run(&t, 20, Tol::Rel(4e-3));
}

#[test]
fn rows_outside_the_limits_lower_group_by_group() {
    for (i, shape) in [vec![9, 31], vec![2, 4097], vec![3, 5000], vec![4, 1]]
        .iter()
        .enumerate()
    {
        let t = softmax("f32", shape, false);
        assert!(launches(&t) > 1, "{t}");
        run(&t, 30 + i as u64, Tol::Rel(1e-6));
    }
}

#[test]
fn log_softmax_and_layer_norm_are_one_kernel() {
    for (i, (r, c)) in [(6, 300), (33, 64), (2, 2048)].into_iter().enumerate() {
        let t = log_softmax(r, c);
        assert_eq!(launches(&t), 1, "{t}");
        run(&t, 40 + i as u64, Tol::Rel(1e-5));
        let t = layernorm(r, c);
        assert_eq!(launches(&t), 1, "{t}");
        run(&t, 50 + i as u64, Tol::Rel(1e-5));
    }
}

/// Every row-run kernel above compiles with NVRTC for sm_80 and sm_90
/// (a 4096-element row holds 16 values per thread of each kept row
/// value), spilling at most a few bytes.
#[test]
fn row_run_kernels_compile_for_sm80_and_sm90() {
    let mut kernels = Vec::new();
    let texts = [
        softmax("f32", &[37, 4096], true),
        softmax("bf16", &[4, 512], false),
        softmax("f32", &[3, 5, 128], false),
        log_softmax(2, 2048),
        layernorm(2, 4096),
    ];
    for (i, t) in texts.iter().enumerate() {
        let prog = jaxon_backend_cuda::lower::lower(&parse(t)).expect("lowers");
        // One module for all: names unique across the programs.
        kernels.extend(prog.kernels.into_iter().map(|mut k| {
            k.name = format!("p{i}_{}", k.name);
            k
        }));
    }
    assert!(kernels.iter().any(|k| k.name.contains("row_run")));
    // A 4096-element layer norm keeps 16 input values per thread across
    // its two reductions; on sm_90 ptxas then spills 12 bytes around the
    // IEEE division's slow-path call (seen with NVRTC 13.0; 1024-element
    // rows do not spill). Row runs may spill that little, nothing else may.
    lowering_util::nvrtc_check("lowering_rows", &kernels, |name, bytes| {
        name.contains("row_run") && bytes <= 32
    });
}

/// Review: row runs over integer, bool and narrow dtypes, a size-1 row
/// dimension, one row, a per-row input read by a scalar member, and a run
/// value transposed after the run.
#[test]
fn review_row_runs_over_odd_dtypes_and_shapes() {
    let texts = [
        "{ lambda ; a:i32[5,40]. let
    b:i32[5] = reduce_max[axes=(1,) out_sharding=None] a
    c:i32[5,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(5, 1) sharding=None] b
    d:i32[5,40] = sub a c
    e:i32[5] = reduce_sum[axes=(1,) out_sharding=None] d
    f:i32[5,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(5, 1) sharding=None] e
    g:i32[5,40] = mul d f
  in (g, e) }",
        "{ lambda ; a:i8[4,300]. let
    b:i8[4] = reduce_sum[axes=(1,) out_sharding=None] a
    c:i8[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1) sharding=None] b
    d:i8[4,300] = add a c
    e:i8[4] = reduce_min[axes=(1,) out_sharding=None] d
    f:i8[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1) sharding=None] e
    g:i8[4,300] = sub d f
  in (g, b) }",
        "{ lambda ; a:f32[3,100]. let
    b:f32[3] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3, 1) sharding=None] b
    d:bool[3,100] = lt a c
    e:bool[3] = reduce_and[axes=(1,) out_sharding=None] d
    f:bool[3,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3, 1) sharding=None] e
    g:bool[3,100] = or d f
    h:f32[3,100] = convert_element_type[new_dtype=float32 weak_type=False sharding=None] g
  in (h, e) }",
        "{ lambda ; a:f16[2,1,3,33] w:f16[2,1,3]. let
    b:f16[2,1,3] = reduce_max[axes=(3,) out_sharding=None] a
    c:f16[2,1,3,1] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(2, 1, 3, 1) sharding=None] b
    d:f16[2,1,3,33] = sub a c
    e:f16[2,1,3,33] = exp d
    f:f16[2,1,3] = reduce_sum[axes=(3,) out_sharding=None] e
    g:f16[2,1,3] = mul f w
    h:f16[2,1,3,1] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(2, 1, 3, 1) sharding=None] g
    i:f16[2,1,3,33] = div e h
  in (i, g) }",
        "{ lambda ; a:f32[1,4096]. let
    b:f32[1] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[1,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(1, 1) sharding=None] b
    d:f32[1,4096] = sub a c
    e:f32[1,4096] = exp d
    f:f32[1] = reduce_sum[axes=(1,) out_sharding=None] e
    h:f32[1,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(1, 1) sharding=None] f
    i:f32[1,4096] = div e h
  in (i,) }",
        "{ lambda ; a:f32[64,64]. let
    b:f32[64] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[64,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(64, 1) sharding=None] b
    d:f32[64,64] = sub a c
    e:f32[64,64] = exp d
    f:f32[64] = reduce_sum[axes=(1,) out_sharding=None] e
    h:f32[1,64] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 64) sharding=None] f
    i:f32[64,64] = div e h
    j:f32[64,64] = transpose[permutation=(1, 0)] e
    k:f32[64,64] = add i j
  in (k,) }",
    ];
    for (i, text) in texts.iter().enumerate() {
        // One kernel, but for the last, whose division reads the row sums
        // along the columns (the run stops before it).
        assert_eq!(launches(text), if i == 5 { 2 } else { 1 }, "{text}");
        let args = args_for(text, 50 + i as u64, Dist::Uniform(3.0));
        check_with(text, &args, Tol::Rel(2e-3));
    }
}

/// Review: a dropped (dead) row-wise value inside what would be a run.
#[test]
fn review_a_dropped_value_inside_a_run() {
    let text = "{ lambda ; a:f32[3,64]. let
    b:f32[3] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3, 1) sharding=None] b
    d:f32[3,64] = sub a c
    _:f32[3,64] = exp d
    _:f32[3] = reduce_min[axes=(1,) out_sharding=None] d
    e:f32[3,64] = exp d
    f:f32[3] = reduce_sum[axes=(1,) out_sharding=None] e
  in (f,) }";
    run(text, 60, Tol::Rel(1e-5));
}
