//! Dynamic shapes on the CUDA backend: jaxprs with dimension variables
//! (the CPU backend's dynamic cases: seed jaxprs, elementwise chains and
//! reductions, matmuls, concatenations, slices, one-axis programs) compile
//! once on `cuda-sim` and run for every size, matching the reference
//! interpreter; no kernel is built after the compile; every kernel compiles
//! with NVRTC for sm_80 and sm_90 (a skip line without NVRTC); with a GPU
//! the same programs run through the `cuda` backend. What does not lower
//! is a compile-time error naming its equation. Loops, branches and
//! transforms are in `lowering_dynamic_control.rs`.

mod dynamic_util;
mod lowering_util;

use dynamic_util::*;
use jaxon_backend_cuda::lower::dynamic;
use jaxon_backend_cuda::lower::CudaSimBackend;
use jaxon_ir::{eval_closed_jaxpr, parse_closed_jaxpr, Backend, DType, HostArray};
use jaxon_trace::dynshape::{self as dyn_};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{jit, make_jaxpr, Array};
use lowering_util::{random, Dist, Rng};

#[test]
fn seed_jaxprs_compile_once_and_run_for_every_size() {
    let _g = lock();
    let inputs: Vec<Vec<HostArray>> = [0i64, 1, 2, 5, 33, 1000]
        .iter()
        .map(|&n| vec![i64s(n)])
        .collect();
    for (name, text) in [
        ("seed_000", SEED_000),
        ("seed_003", SEED_003),
        ("ones_plus_one", ONES_PLUS_ONE),
    ] {
        agree(
            name,
            &parse_closed_jaxpr(text, Vec::new()).unwrap(),
            &inputs,
            0.0,
        );
    }
    // Hand-computed values: 1 + n^10 (every loop iteration multiplies by n).
    let j = parse_closed_jaxpr(SEED_000, Vec::new()).unwrap();
    let prog = dynamic::compile(&j).unwrap();
    for n in [3i64, 7] {
        let out = dynamic::run_simulated(&prog, &[i64s(n)]).unwrap();
        assert_eq!(
            out[0].to_f64_vec(),
            vec![1.0 + (n as f64).powi(10); n as usize]
        );
    }
}

#[test]
fn one_program_serves_every_size_with_the_same_kernels() {
    let _g = lock();
    let j = parse_closed_jaxpr(SEED_000, Vec::new()).unwrap();
    let prog = dynamic::compile(&j).unwrap();
    let a = prog.instantiate(&[4]).unwrap();
    let b = prog.instantiate(&[4000]).unwrap();
    assert_eq!(a.kernels, prog.kernels());
    assert_eq!(b.kernels, prog.kernels());
    assert_eq!(a.buffers.len(), b.buffers.len());
    assert!(a
        .buffers
        .iter()
        .zip(&b.buffers)
        .any(|(x, y)| x.len * 1000 == y.len));
    // Size 0 launches nothing over the empty arrays.
    let z = prog.instantiate(&[0]).unwrap();
    assert!(z.all_steps().len() < a.all_steps().len());
}

#[test]
fn elementwise_chain_and_reduction_over_a_dynamic_axis() {
    let _g = lock();
    let f = |(x, y): (Array, Array)| {
        let z = &x.exp() * &y - x.tanh();
        (z.sum(jnp::All) + x.sin(), z)
    };
    let j = jit(f).abstracted_axes(&[&[(0, "n")], &[(0, "n")]]);
    let lowered = j
        .lower((
            Array::from_vec(vec![0.1, 0.2, 0.3], &[3]),
            Array::from_vec(vec![0.4, 0.5, 0.6], &[3]),
        ))
        .unwrap();
    let mut rng = Rng::new(1);
    let inputs: Vec<Vec<HostArray>> = [1usize, 3, 4, 17, 1024]
        .iter()
        .map(|&n| vec![i64s(n as i64), f64s(&mut rng, &[n]), f64s(&mut rng, &[n])])
        .collect();
    agree("chain", &lowered, &inputs, 1e-12);
}

#[test]
fn matmul_and_concatenate_over_dynamic_axes() {
    let _g = lock();
    let f = jit(|(x, y, w): (Array, Array, Array)| {
        let xv = ok_or_raise(jnp::matmul(&x, &w));
        ok_or_raise(dyn_::concatenate(&[xv, y], 0))
    })
    .abstracted_axes(&[&[(0, "n")], &[(0, "m")]]);
    let lowered = f
        .lower((
            Array::from_vec(vec![0.0; 6], &[2, 3]),
            Array::from_vec(vec![0.0; 1], &[1]),
            Array::from_vec(vec![0.0; 3], &[3]),
        ))
        .unwrap();
    let n_implicit = lowered.jaxpr.invars.len() - 3;
    let mut rng = Rng::new(2);
    let inputs: Vec<Vec<HostArray>> = [(2usize, 1usize), (3, 4), (1, 1), (0, 3), (65, 9)]
        .iter()
        .map(|&(n, m)| {
            let mut a: Vec<HostArray> = [n, m][..n_implicit]
                .iter()
                .map(|&s| i64s(s as i64))
                .collect();
            a.push(f64s(&mut rng, &[n, 3]));
            a.push(f64s(&mut rng, &[m]));
            a.push(f64s(&mut rng, &[3]));
            a
        })
        .collect();
    agree("matmul_concat", &lowered, &inputs, 1e-12);
}

#[test]
fn dynamic_matmul_of_three_dynamic_sizes() {
    let _g = lock();
    let f = jit(|(a, b): (Array, Array)| ok_or_raise(jnp::matmul(&a, &b)).tanh())
        .abstracted_axes(&[&[(0, "n"), (1, "k")], &[(0, "k"), (1, "m")]]);
    let lowered = f
        .lower((
            Array::from_vec(vec![0.0; 6], &[2, 3]),
            Array::from_vec(vec![0.0; 12], &[3, 4]),
        ))
        .unwrap();
    let n_implicit = lowered.jaxpr.invars.len() - 2;
    let mut rng = Rng::new(3);
    // Includes an empty contraction (k = 0: zeros) and empty results.
    let inputs: Vec<Vec<HostArray>> = [
        (1usize, 1usize, 1usize),
        (2, 3, 4),
        (17, 64, 33),
        (3, 0, 2),
        (0, 2, 5),
    ]
    .iter()
    .map(|&(n, k, m)| {
        let mut a: Vec<HostArray> = [n, k, m][..n_implicit]
            .iter()
            .map(|&s| i64s(s as i64))
            .collect();
        a.push(f64s(&mut rng, &[n, k]));
        a.push(f64s(&mut rng, &[k, m]));
        a
    })
    .collect();
    agree("matmul3", &lowered, &inputs, 1e-12);
    // f32 through the GEMM model, a transposed operand (a @ b.T) and a
    // batched product.
    let g = jit(|(a, b): (Array, Array)| {
        let t = ok_or_raise(jnp::matmul(&a, &b.transpose(&[1, 0])));
        t.sum(1usize)
    })
    .abstracted_axes(&[&[(0, "n")], &[(0, "m")]]);
    let lowered = g
        .lower((
            Array::from_vec(vec![0.0f32; 8], &[2, 4]),
            Array::from_vec(vec![0.0f32; 12], &[3, 4]),
        ))
        .unwrap();
    let n_implicit = lowered.jaxpr.invars.len() - 2;
    let inputs: Vec<Vec<HostArray>> = [(1usize, 1usize), (5, 7), (40, 3)]
        .iter()
        .map(|&(n, m)| {
            let mut a: Vec<HostArray> = [n, m][..n_implicit]
                .iter()
                .map(|&s| i64s(s as i64))
                .collect();
            a.push(random(&mut rng, DType::F32, &[n, 4], Dist::Uniform(1.0)));
            a.push(random(&mut rng, DType::F32, &[m, 4], Dist::Uniform(1.0)));
            a
        })
        .collect();
    agree("matmul_t", &lowered, &inputs, 1e-5);
}

#[test]
fn a_wrong_dynamic_argument_is_an_error_naming_both_shapes() {
    let _g = lock();
    let j = parse_closed_jaxpr(
        "{ lambda ; a:i64[] b:f64[a]. let c:f64[a] = sin b in (c,) }",
        Vec::new(),
    )
    .unwrap();
    let backend = CudaSimBackend::new();
    let exe = backend.compile(&j).unwrap();
    let x = HostArray::from_f64(DType::F64, &[4], &[0.5; 4]).unwrap();
    let err = exe
        .execute(&[
            backend.to_device(&i64s(5)).unwrap(),
            backend.to_device(&x).unwrap(),
        ])
        .expect_err("a size mismatch must fail")
        .to_string();
    assert!(err.contains("[5]") && err.contains("[4]"), "{err}");
    let j = parse_closed_jaxpr(ONES_PLUS_ONE, Vec::new()).unwrap();
    let exe = backend.compile(&j).unwrap();
    let err = exe
        .execute(&[backend.to_device(&i64s(-5)).unwrap()])
        .expect_err("a negative size must fail")
        .to_string();
    assert!(err.contains("negative") && err.contains("-4"), "{err}");
}

#[test]
fn dynamic_ops_match_the_interpreter() {
    let _g = lock();
    let sizes: Vec<Vec<HostArray>> = [1i64, 2, 7, 64, 301].map(|n| vec![i64s(n)]).to_vec();
    let x_of = |n: &Array| ok_or_raise(dyn_::iota(DType::F64, n)) * 0.37 - 0.8;
    for (name, f) in dynamic_ops() {
        let primal = make_jaxpr(move |n: Array| f(&x_of(&n)))(Array::scalar(3i64))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        agree(name, &primal, &sizes, 1e-12);
    }
    // top_k of 3 (its values and indices), for sizes of at least 3; fewer
    // elements is an error at the call, as in the interpreter.
    let top = make_jaxpr(move |n: Array| {
        let (v, i) = ok_or_raise(jaxon_trace::lax::top_k(&x_of(&n).sin(), 3));
        (v, i)
    })(Array::scalar(5i64))
    .unwrap();
    let big: Vec<Vec<HostArray>> = [3i64, 7, 64, 301].map(|n| vec![i64s(n)]).to_vec();
    agree("top_k", &top, &big, 0.0);
    let exe = CudaSimBackend::new().compile(&top).unwrap();
    let err = exe
        .execute(&[CudaSimBackend::new().to_device(&i64s(2)).unwrap()])
        .expect_err("top_k of 3 out of 2 must fail")
        .to_string();
    assert!(err.contains("top_k") && err.contains("3 > 2"), "{err}");
}

#[test]
fn dynamic_slice_of_a_dynamic_matrix_with_a_traced_size() {
    let _g = lock();
    let f = |(n, m, start, k): (Array, Array, Array, Array)| {
        let flat = ok_or_raise(dyn_::iota(
            DType::F64,
            ok_or_raise(dyn_::mul_sizes(&(&n).into(), &(&m).into())),
        ));
        let x = ok_or_raise(dyn_::reshape(&flat.sin(), &[(&n).into(), (&m).into()]));
        let zero = Array::scalar(0i64);
        let rows = ok_or_raise(dyn_::dynamic_slice(
            &x,
            &[start, zero],
            &[(&k).into(), (&m).into()],
        ));
        rows.cos()
    };
    let j = make_jaxpr(f)((
        Array::scalar(5i64),
        Array::scalar(3i64),
        Array::scalar(1i64),
        Array::scalar(2i64),
    ))
    .unwrap();
    let inputs: Vec<Vec<HostArray>> = [
        (5, 3, 1, 2),
        (9, 4, 3, 5),
        (7, 1, 0, 7),
        (6, 2, 4, 3),
        (1, 1, 0, 1),
    ]
    .iter()
    .map(|&(n, m, s, k)| vec![i64s(n), i64s(m), i64s(s), i64s(k)])
    .collect();
    agree("dynamic_slice", &j, &inputs, 1e-14);
}

/// The trace crate's `dyn_create` programs: a nested `jit` returning an
/// array of a new size (`n + 1`) with that size, `concatenate` returning
/// its size sum, and `reshape`/`iota`/row sums/`dynamic_slice` with traced
/// sizes.
const NESTED_JIT: &str = "{ lambda ; a:i64[]. let
    b:i64[] c:f64[b] = jit[
      name=inner
      jaxpr={ lambda ; a:i64[]. let
          b:i64[] = add a 1:i64[]
          c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
            b
        in (b, c) }
    ] a
    d:f64[] = reduce_sum[axes=(0,) out_sharding=None] c
    e:f64[] = mul d 2.0:f64[]
  in (e, c) }";

#[test]
fn traced_dynamic_creation_programs_match_the_interpreter() {
    let _g = lock();
    let sizes: Vec<Vec<HostArray>> = [0i64, 1, 4, 33].map(|n| vec![i64s(n)]).to_vec();
    agree(
        "nested_jit",
        &parse_closed_jaxpr(NESTED_JIT, Vec::new()).unwrap(),
        &sizes,
        0.0,
    );
    let concat = |n: Array| {
        let a = ok_or_raise(dyn_::iota(DType::F64, &n));
        ok_or_raise(dyn_::concatenate(&[a.clone(), &a * 10.0], 0))
    };
    agree(
        "concat_sum",
        &make_jaxpr(concat)(Array::scalar(2i64)).unwrap(),
        &sizes,
        0.0,
    );
    let f = |(n, k, s): (Array, Array, Array)| {
        let two_n = ok_or_raise(dyn_::mul_sizes(&dyn_::Size::Const(2), &(&n).into()));
        let x = ok_or_raise(dyn_::iota(DType::F64, two_n));
        let m = ok_or_raise(dyn_::reshape(&x, &[dyn_::Size::Const(2), (&n).into()]));
        let rows = m.sum(1usize);
        let sl = ok_or_raise(dyn_::dynamic_slice(&x, &[s], &[(&k).into()]));
        (rows, sl)
    };
    let j = make_jaxpr(f)((
        Array::scalar(3i64),
        Array::scalar(2i64),
        Array::scalar(1i64),
    ))
    .unwrap();
    let inputs: Vec<Vec<HostArray>> = [
        (3i64, 2i64, 1i64),
        (5, 4, 3),
        (4, 3, 7),
        (1, 0, 0),
        (64, 100, -3),
    ]
    .iter()
    .map(|&(n, k, s)| vec![i64s(n), i64s(k), i64s(s)])
    .collect();
    agree("reshape_slice", &j, &inputs, 0.0);
}

/// `split` along a static axis of a matrix with a dynamic one, `tile`
/// and `stack` of dynamic operands.
const SPLIT_TILE_STACK: &str = "{ lambda ; a:i64[] x:f32[a,5] y:f32[a]. let
    b:f32[a,2] c:f32[a,3] = split[axis=1 sizes=(2, 3)] x
    d:f32[a,6] = tile[reps=(1, 3)] b
    e:f32[2,a] = stack[axis=0] y y
    f:f32[a,2] = stack[axis=1] y y
  in (c, d, e, f) }";

#[test]
fn split_tile_and_stack_over_a_dynamic_axis() {
    let _g = lock();
    let j = parse_closed_jaxpr(SPLIT_TILE_STACK, Vec::new()).unwrap();
    let mut rng = Rng::new(61);
    let inputs: Vec<Vec<HostArray>> = [0usize, 1, 4, 33]
        .iter()
        .map(|&a| {
            vec![
                i64s(a as i64),
                random(&mut rng, DType::F32, &[a, 5], Dist::Uniform(3.0)),
                random(&mut rng, DType::F32, &[a], Dist::Uniform(3.0)),
            ]
        })
        .collect();
    agree("split_tile_stack", &j, &inputs, 0.0);
}

/// A same-width `bitcast_convert_type` and `regularized_incomplete_beta`
/// in one fused run over a dynamic axis.
const BITCAST_BETAINC: &str = "{ lambda ; n:i64[] a:f32[n] b:f32[n] x:f32[n]. let
    c:i32[n] = bitcast_convert_type[new_dtype=int32] x
    d:f32[n] = regularized_incomplete_beta a b x
    e:f32[n] = mul d 2.0:f32[]
  in (c, e) }";

#[test]
fn bitcasts_and_special_functions_fuse_over_a_dynamic_axis() {
    let _g = lock();
    let j = parse_closed_jaxpr(BITCAST_BETAINC, Vec::new()).unwrap();
    let mut rng = Rng::new(81);
    let inputs: Vec<Vec<HostArray>> = [0usize, 1, 9, 70]
        .iter()
        .map(|&n| {
            vec![
                i64s(n as i64),
                random(&mut rng, DType::F32, &[n], Dist::Between(0.5, 4.0)),
                random(&mut rng, DType::F32, &[n], Dist::Between(0.5, 4.0)),
                random(&mut rng, DType::F32, &[n], Dist::Between(0.0, 1.0)),
            ]
        })
        .collect();
    // The static lowering's betainc is the interpreter's series in f64.
    agree("bitcast_betainc", &j, &inputs, 1e-6);
}

/// A reduction of an elementwise run (nothing else of the run used
/// later) is one kernel: the warp-per-output reduction evaluates the run.
/// A run result also used later keeps its own kernel.
#[test]
fn a_reduction_of_an_elementwise_run_fuses_into_one_kernel() {
    let _g = lock();
    let x_of = |n: &Array| iota(n) * 0.37 - 0.8;
    let fused = make_jaxpr(move |n: Array| {
        let x = x_of(&n);
        let m = ok_or_raise(dyn_::broadcast_in_dim(
            &x,
            &[dyn_::Size::Const(3), (&n).into()],
            &[1],
        ));
        (
            (&m.exp() * 2.0 - &m).sum(1usize),
            (x.sin() * 3.0).max(jnp::All),
        )
    })(Array::scalar(3i64))
    .unwrap();
    let kernels = |j: &jaxon_ir::ClosedJaxpr| -> Vec<String> {
        dynamic::compile(j)
            .unwrap()
            .kernels()
            .iter()
            .map(|k| k.name.clone())
            .collect()
    };
    let names = kernels(&fused);
    assert!(
        names.iter().filter(|n| n.starts_with("dyn_ew_")).count() == 1,
        "only x's own run stores: {names:?}"
    );
    let sizes: Vec<Vec<HostArray>> = [0i64, 1, 7, 300].map(|n| vec![i64s(n)]).to_vec();
    agree("fused_reduce", &fused, &sizes, 1e-12);
    // The run's result is also returned: stored by its own kernel.
    let kept = make_jaxpr(move |n: Array| {
        let y = x_of(&n).exp();
        (y.sum(jnp::All), y)
    })(Array::scalar(3i64))
    .unwrap();
    let names = kernels(&kept);
    assert!(names.iter().any(|n| n.starts_with("dyn_ew_")), "{names:?}");
    agree("kept_run", &kept, &sizes, 1e-12);
}

/// A two-operand `sort` along the dynamic minor axis of a matrix, one key:
/// ties keep their order (stable) and NaNs go last.
const SORT2: &str = "{ lambda ; a:i64[] b:i64[] x:f32[a,b] y:i32[a,b]. let
    c:f32[a,b] d:i32[a,b] = sort[dimension=1 is_stable=True num_keys=1] x y
  in (c, d) }";

#[test]
fn stable_sort_of_two_operands_along_a_dynamic_axis() {
    let _g = lock();
    let j = parse_closed_jaxpr(SORT2, Vec::new()).unwrap();
    let mut rng = Rng::new(41);
    let inputs: Vec<Vec<HostArray>> = [(1usize, 1usize), (3, 7), (2, 0), (4, 65)]
        .iter()
        .map(|&(a, b)| {
            // Few distinct keys (ties), some NaNs.
            let keys: Vec<f64> = (0..a * b)
                .map(|i| match rng.range(0, 5) {
                    0 => f64::NAN,
                    v => (v as f64) - 2.0 + if i % 2 == 0 { 0.0 } else { -0.0 },
                })
                .collect();
            vec![
                i64s(a as i64),
                i64s(b as i64),
                HostArray::from_f64(DType::F32, &[a, b], &keys).unwrap(),
                random(&mut rng, DType::I32, &[a, b], Dist::Between(-100.0, 100.0)),
            ]
        })
        .collect();
    agree("sort2", &j, &inputs, 0.0);
}

/// A `scatter-add` of rows over dynamic sizes (what the transpose of a
/// row gather gives), in each out-of-bounds mode, with repeated and
/// out-of-range indices.
fn scatter_rows(dt: &str, mode: &str) -> String {
    format!(
        "{{ lambda ; a:i64[] b:i64[] c:i64[] x:{dt}[a,b] i:i32[c,1] u:{dt}[c,b]. let
    y:{dt}[a,b] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      unique_indices=False
      update_consts=()
      update_jaxpr={{ lambda ; p:{dt}[] q:{dt}[]. let r:{dt}[] = add p q in (r,) }}
    ] x i u
  in (y,) }}"
    )
}

#[test]
fn scatter_add_of_rows_over_dynamic_sizes() {
    let _g = lock();
    let mut rng = Rng::new(31);
    for (dt, dtype, tol) in [("f32", DType::F32, 1e-5), ("i32", DType::I32, 0.0)] {
        for mode in ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"] {
            let j = parse_closed_jaxpr(&scatter_rows(dt, mode), Vec::new()).unwrap();
            let inputs: Vec<Vec<HostArray>> = [
                (4usize, 3usize, 6usize),
                (1, 1, 1),
                (9, 5, 20),
                (3, 0, 2),
                (5, 2, 0),
            ]
            .iter()
            .map(|&(a, b, c)| {
                let dist = Dist::Between(-2.0, a as f64 + 2.0);
                vec![
                    i64s(a as i64),
                    i64s(b as i64),
                    i64s(c as i64),
                    random(&mut rng, dtype, &[a, b], Dist::Uniform(4.0)),
                    random(&mut rng, DType::I32, &[c, 1], dist),
                    random(&mut rng, dtype, &[c, b], Dist::Uniform(4.0)),
                ]
            })
            .collect();
            agree(&format!("scatter_{dt}_{mode}"), &j, &inputs, tol);
        }
    }
}

/// `jit` with abstracted axes on the registered `cuda-sim` backend: one
/// trace and one compile serve every size (the trace crate's counters).
#[test]
fn jit_on_cuda_sim_compiles_once_for_every_size() {
    let _g = lock();
    jaxon_trace::register_backend(std::sync::Arc::new(CudaSimBackend::new()));
    let f = jit(|(x, y, w): (Array, Array, Array)| {
        let xv = ok_or_raise(jnp::matmul(&x, &w));
        ok_or_raise(dyn_::concatenate(&[xv.tanh(), y], 0))
    })
    .backend("cuda-sim")
    .abstracted_axes(&[&[(0, "n")], &[(0, "m")]]);
    let mut rng = Rng::new(51);
    for (n, m) in [(2usize, 1usize), (3, 4), (1, 1), (65, 9), (0, 2)] {
        let xs = random(&mut rng, DType::F64, &[n, 3], Dist::Uniform(1.0)).to_f64_vec();
        let ys = random(&mut rng, DType::F64, &[m], Dist::Uniform(1.0)).to_f64_vec();
        let w = vec![1.0, -2.0, 0.5];
        let out = f
            .call((
                Array::from_vec(xs.clone(), &[n, 3]),
                Array::from_vec(ys.clone(), &[m]),
                Array::from_vec(w.clone(), &[3]),
            ))
            .unwrap();
        let mut want: Vec<f64> = (0..n)
            .map(|r| (0..3).map(|c| xs[r * 3 + c] * w[c]).sum::<f64>().tanh())
            .collect();
        want.extend(&ys);
        assert_eq!(out.shape(), vec![n + m]);
        for (a, b) in out.to_vec::<f64>().iter().zip(&want) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }
    assert_eq!((f.trace_count(), f.compile_count()), (1, 1));
}

/// The same programs on a GPU through the `cuda` backend: one executable
/// (one NVRTC compile and module load) for every size.
#[test]
fn dynamic_programs_run_on_the_gpu() {
    let _g = lock();
    use jaxon_backend_cuda::lower::CudaBackend;
    if let Err(e) = jaxon_backend_cuda::runtime::Device::open(0) {
        assert!(
            std::env::var_os("JAXON_REQUIRE_GPU").is_none(),
            "JAXON_REQUIRE_GPU is set but no GPU opened: {e}"
        );
        println!("skipped: {e}");
        return;
    }
    let backend = CudaBackend::new();
    let cases = [SEED_000, SEED_003, ONES_PLUS_ONE];
    for text in cases {
        let j = parse_closed_jaxpr(text, Vec::new()).unwrap();
        let exe = backend.compile(&j).unwrap();
        for n in [0i64, 1, 5, 1000, 100_000] {
            let args = [i64s(n)];
            let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
            let got = exe.execute(&bufs).unwrap();
            let want = eval_closed_jaxpr(&j, &args).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_host().unwrap().to_f64_vec(), w.to_f64_vec(), "n {n}");
            }
        }
    }
    let f = jit(|(a, b): (Array, Array)| ok_or_raise(jnp::matmul(&a, &b)).tanh().sum(0usize))
        .abstracted_axes(&[&[(0, "n"), (1, "k")], &[(0, "k"), (1, "m")]]);
    let j = f
        .lower((
            Array::from_vec(vec![0.0; 6], &[2, 3]),
            Array::from_vec(vec![0.0; 12], &[3, 4]),
        ))
        .unwrap();
    let exe = backend.compile(&j).unwrap();
    let n_implicit = j.jaxpr.invars.len() - 2;
    let mut rng = Rng::new(5);
    for (n, k, m) in [
        (1usize, 1usize, 1usize),
        (3, 0, 2),
        (100, 64, 33),
        (513, 40, 7),
    ] {
        let mut args: Vec<HostArray> = [n, k, m][..n_implicit]
            .iter()
            .map(|&s| i64s(s as i64))
            .collect();
        args.push(f64s(&mut rng, &[n, k]));
        args.push(f64s(&mut rng, &[k, m]));
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe.execute(&bufs).unwrap();
        let want = eval_closed_jaxpr(&j, &args).unwrap();
        for (a, b) in got[0]
            .to_host()
            .unwrap()
            .to_f64_vec()
            .iter()
            .zip(want[0].to_f64_vec())
        {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
    println!("gpu-check: dynamic shapes: 4 programs, one executable each for every size");
}
