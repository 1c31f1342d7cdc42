//! Dynamic shapes on the CUDA backend: jaxprs with dimension variables
//! (the CPU backend's dynamic cases and traced dynamic programs) compile
//! once on `cuda-sim` and run for every size, matching the reference
//! interpreter; no kernel is built after the compile, and every kernel of
//! a dynamic program compiles with NVRTC for sm_80 and sm_90 (a skip line
//! without NVRTC). What does not lower is a compile-time error naming its
//! equation. The tests share a process-wide kernel counter, so they hold
//! one lock.

mod lowering_util;

use jaxon_backend_cuda::lower::dynamic;
use jaxon_backend_cuda::lower::CudaSimBackend;
use jaxon_ir::{eval_closed_jaxpr, parse_closed_jaxpr, Backend, ClosedJaxpr, DType, HostArray};
use jaxon_trace::control::{cond, for_loop, while_loop_with};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{jit, make_jaxpr, Array};
use lowering_util::{nvrtc_check, random, Dist, Rng};
use std::sync::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

fn f64s(rng: &mut Rng, shape: &[usize]) -> HostArray {
    random(rng, DType::F64, shape, Dist::Uniform(1.0))
}

/// Compiles `j` once on `cuda-sim`, runs it for every argument list of
/// `inputs` and compares with the interpreter (relative `tol`); asserts
/// that no kernel was built after the compile, and compiles the kernels
/// with NVRTC.
fn agree(label: &str, j: &ClosedJaxpr, inputs: &[Vec<HostArray>], tol: f64) {
    let backend = CudaSimBackend::new();
    let exe = backend
        .compile(j)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let built = dynamic::kernels_built();
    for args in inputs {
        let shapes: Vec<_> = args.iter().map(|a| a.shape().to_vec()).collect();
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe
            .execute(&bufs)
            .unwrap_or_else(|e| panic!("{label} {shapes:?}: {e}"));
        let want = eval_closed_jaxpr(j, args).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            let g = g.to_host().unwrap();
            assert_eq!(
                (g.dtype(), g.shape()),
                (w.dtype(), w.shape()),
                "{label} {shapes:?}"
            );
            for (a, b) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1.0) || (a.is_nan() && b.is_nan()),
                    "{label} {shapes:?}: {a} vs {b}"
                );
            }
        }
    }
    assert_eq!(
        dynamic::kernels_built(),
        built,
        "{label}: a call built kernels"
    );
    let prog = dynamic::compile(j).unwrap();
    assert!(!prog.kernels().is_empty() || inputs.is_empty());
    nvrtc_check(&format!("dyn_{label}"), prog.kernels(), |_, _| false);
}

/// `dynamic::compile` refuses `j`, naming `what`.
fn refused(j: &ClosedJaxpr, what: &str) {
    let err = dynamic::compile(j).expect_err("must not lower").to_string();
    assert!(err.contains(what), "{err}");
    let err = CudaSimBackend::new()
        .compile(j)
        .err()
        .expect("must not compile")
        .to_string();
    assert!(err.contains(what), "{err}");
}

const SEED_000: &str = "{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      a
    _:i64[] c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:i64[] f:i64[] g:f64[e]. let
          h:f64[] = convert_element_type[new_dtype=float64 weak_type=False] d
          i:f64[e] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] h e
          j:f64[e] = mul g i
        in (e, j) }
      body_nconsts=1
      nimplicit=1
      preserve_dimensions=True
    ] a a 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    k:f64[a] = add b c
  in (k,) }";

const SEED_003: &str = "{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      a
    c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]. let
          h:f64[d] = add g e
        in (h,) }
      body_nconsts=2
      nimplicit=0
      preserve_dimensions=True
    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    i:f64[a] = add b c
  in (i,) }";

const ONES_PLUS_ONE: &str = "{ lambda ; a:i64[]. let
    b:i64[] = add a 1:i64[]
    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] b
  in (b, c) }";

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

fn ones(n: &Array) -> Array {
    ok_or_raise(dyn_::ones(&[n.into()], DType::F64))
}

#[test]
fn loops_and_branches_with_dynamic_carries() {
    let _g = lock();
    use jaxon_trace::control::{for_loop_with, ForLoopOptions};
    let sizes: Vec<Vec<HostArray>> = [0i64, 1, 3, 9, 300].map(|n| vec![i64s(n)]).to_vec();
    let shared = |sz: Array| {
        let a0 = ones(&sz);
        ok_or_raise(for_loop(
            0,
            10,
            1,
            |_i, (a, b): (Array, Array)| (&a * 2.0, &b + &a),
            (a0.clone(), a0),
        ))
    };
    agree(
        "shared",
        &make_jaxpr(shared)(Array::scalar(2i64)).unwrap(),
        &sizes,
        0.0,
    );
    let fresh = |sz: Array| {
        let a0 = ones(&sz);
        let (x, y) = ok_or_raise(for_loop(
            0,
            3,
            1,
            |_i, (_a, _b): (Array, Array)| {
                let b = ones(&(&sz + 1));
                (b.clone(), b)
            },
            (a0.clone(), a0),
        ));
        &x + &y
    };
    // The carry changes from [sz] to [sz + 1] in the body: refused.
    refused(&make_jaxpr(fresh)(Array::scalar(2i64)).unwrap(), "for_loop");
    let opts = ForLoopOptions {
        preserve_dimensions: false,
        ..Default::default()
    };
    let per_use = |sz: Array| {
        let a0 = ones(&sz);
        let b0 = ones(&(&sz + 1));
        ok_or_raise(for_loop_with(
            opts,
            0,
            10,
            1,
            |_i, (a, b, c): (Array, Array, Array)| (&a + 1.0, &b * 2.0, c),
            (a0, b0.clone(), b0),
        ))
    };
    agree(
        "per_use",
        &make_jaxpr(per_use)(Array::scalar(2i64)).unwrap(),
        &sizes,
        0.0,
    );
    // The loop index sizes the result: refused, naming the dimension.
    let by_index = |sz: Array| {
        let a0 = ones(&sz);
        ok_or_raise(for_loop(0, 10, 1, |i, _a: Array| ones(&i), a0))
    };
    refused(
        &make_jaxpr(by_index)(Array::scalar(4i64)).unwrap(),
        "dimension",
    );
    // A for_loop and a same-size cond with a runtime predicate.
    let f = |(sz, p): (Array, Array)| {
        let a = ok_or_raise(dyn_::iota(DType::F64, &sz));
        let looped = ok_or_raise(for_loop(
            0,
            4,
            1,
            |i: Array, c: Array| &c * 0.5 + i.astype(DType::F64),
            a.clone(),
        ));
        let branched = ok_or_raise(cond(
            &p,
            |x: Array| x * 2.0,
            |x: Array| x.sin() + &x,
            looped.clone(),
        ));
        (looped, branched)
    };
    let j = make_jaxpr(f)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    let inputs: Vec<Vec<HostArray>> = [0i64, 1, 3, 7, 130]
        .iter()
        .flat_map(|&n| {
            [true, false].map(|p| vec![i64s(n), HostArray::scalar(DType::Bool, p as u8 as f64)])
        })
        .collect();
    agree("for_cond", &j, &inputs, 1e-14);
    // A while loop whose carry grows each iteration: refused.
    let grow = |sz: Array| {
        let a = ok_or_raise(dyn_::iota(DType::F64, &sz));
        ok_or_raise(while_loop_with(
            false,
            |x: Array| ok_or_raise(dyn_::size_of(&x, 0)).lt(100),
            |x: Array| ok_or_raise(dyn_::concatenate(&[x.clone(), x], 0)),
            a,
        ))
    };
    refused(
        &make_jaxpr(grow)(Array::scalar(3i64)).unwrap(),
        "dimension variable",
    );
    // A while loop over a fixed-size dynamic carry with a runtime trip count.
    let halve = |sz: Array| {
        let a = ok_or_raise(dyn_::iota(DType::F64, &sz)) + 1.0;
        ok_or_raise(while_loop_with(
            true,
            |x: Array| x.sum(jnp::All).gt(1.0),
            |x: Array| &x * 0.5,
            a,
        ))
    };
    agree(
        "while",
        &make_jaxpr(halve)(Array::scalar(3i64)).unwrap(),
        &sizes,
        0.0,
    );
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

type Op = Box<dyn Fn(&Array) -> Array>;

fn dynamic_ops() -> Vec<(&'static str, Op)> {
    let sum = |a: Array| a.sum(jnp::All);
    vec![
        ("exp", Box::new(move |x: &Array| sum(x.exp()))),
        ("log", Box::new(move |x: &Array| sum((x * x + 1.0).log()))),
        (
            "pow",
            Box::new(move |x: &Array| {
                sum(ok_or_raise(jnp::power(
                    &(x * x + 1.0),
                    &Array::scalar(1.5f64),
                )))
            }),
        ),
        ("integer_pow", Box::new(move |x: &Array| sum(x.powi(3)))),
        ("max", Box::new(|x: &Array| x.max(jnp::All))),
        ("min", Box::new(|x: &Array| x.min(jnp::All))),
        ("mean", Box::new(|x: &Array| x.mean(jnp::All))),
        (
            "relu",
            Box::new(move |x: &Array| sum(ok_or_raise(jaxon_trace::nn::relu(x)) * x)),
        ),
        ("dot", Box::new(|x: &Array| ok_or_raise(jnp::dot(x, x)))),
        (
            "where",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::where_(&x.gt(0.0), x, &(x * 2.0))))),
        ),
        (
            "softmax",
            Box::new(move |x: &Array| {
                let e = x - x.max(jnp::All);
                sum(&e.exp() / e.exp().sum(jnp::All) * x)
            }),
        ),
        (
            "concatenate",
            Box::new(move |x: &Array| {
                sum(ok_or_raise(dyn_::concatenate(&[x.clone(), x * 2.0], 0)).sin())
            }),
        ),
        (
            "outer_sum_rows",
            Box::new(move |x: &Array| {
                let n: Size = ok_or_raise(dyn_::size_of(x, 0)).into();
                let m = ok_or_raise(dyn_::broadcast_in_dim(x, &[n.clone(), n], &[1]));
                let t = m.transpose(&[1, 0]);
                (&m * 2.0 - &t).max(1usize).sum(jnp::All)
            }),
        ),
    ]
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
    // cumsum and sort have no dynamic lowering yet: refused by name.
    let cs = make_jaxpr(move |n: Array| ok_or_raise(jnp::cumsum(&x_of(&n), Some(0))))(
        Array::scalar(3i64),
    )
    .unwrap();
    refused(&cs, "cumsum");
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

fn iota(n: &Array) -> Array {
    ok_or_raise(dyn_::iota(DType::F64, n))
}

#[test]
fn traced_dynamic_control_flow_matches_the_interpreter() {
    let _g = lock();
    use jaxon_trace::control::while_loop;
    let sizes: Vec<Vec<HostArray>> = [0i64, 1, 2, 6, 77].map(|n| vec![i64s(n)]).to_vec();
    // A while loop whose carries share the argument's dimension.
    let shared = |sz: Array| {
        let a = iota(&sz);
        let (x, y, _) = ok_or_raise(while_loop(
            |(_x, _y, k): (Array, Array, Array)| k.lt(5),
            |(x, y, k): (Array, Array, Array)| (&x + &y, &y * 2.0, k + 1),
            (a.clone(), a, Array::scalar(0i64)),
        ));
        (x, y)
    };
    agree(
        "while_shared",
        &make_jaxpr(shared)(Array::scalar(3i64)).unwrap(),
        &sizes,
        0.0,
    );
    // A while body adding a captured array of the same dimension.
    let captured = |sz: Array| {
        let a0 = iota(&sz);
        let (a, _) = ok_or_raise(while_loop(
            |(_a, k): (Array, Array)| k.lt(3),
            |(a, k): (Array, Array)| (&a + &a0, k + 1),
            (a0.clone(), Array::scalar(0i64)),
        ));
        a
    };
    agree(
        "while_captured",
        &make_jaxpr(captured)(Array::scalar(3i64)).unwrap(),
        &sizes,
        0.0,
    );
    // A cond whose branches keep the input dimension.
    let keeps = |(sz, p): (Array, Array)| {
        let a = iota(&sz);
        let b = ok_or_raise(cond(&p, |x: Array| x.sin(), |x: Array| x.cos(), a.clone()));
        &a + &b
    };
    let j = make_jaxpr(keeps)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    let inputs: Vec<Vec<HostArray>> = [0i64, 1, 5, 40]
        .iter()
        .flat_map(|&n| {
            [true, false].map(|p| vec![i64s(n), HostArray::scalar(DType::Bool, p as u8 as f64)])
        })
        .collect();
    agree("cond_keeps", &j, &inputs, 1e-14);
    // Branches of different sizes give a dimension computed on the device:
    // refused at compile time.
    let differ = |(sz, p): (Array, Array)| {
        let a = iota(&sz);
        ok_or_raise(cond(
            &p,
            |x: Array| x * 2.0,
            |x: Array| ok_or_raise(dyn_::concatenate(&[x.clone(), x], 0)),
            a,
        ))
    };
    let j = make_jaxpr(differ)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    refused(&j, "dimension variable");
}

/// Elementwise ops, reductions and a matmul (as in the CPU backend's
/// transforms tests).
fn g(x: &Array) -> Array {
    let y = x.sin() * x;
    let s = y.sum(jnp::All);
    &s * ok_or_raise(jnp::matmul(x, x)) + (&y * 0.5).max(jnp::All)
}

#[test]
fn jvp_vmap_and_grad_of_dynamic_programs() {
    let _g = lock();
    use jaxon_transforms::{grad, jvp, vmap};
    let sizes: Vec<Vec<HostArray>> = [1i64, 2, 7, 64].map(|n| vec![i64s(n)]).to_vec();
    let x_of = |n: &Array| iota(n) * 0.37 - 0.8;
    let tangent = make_jaxpr(move |n: Array| {
        let x = x_of(&n);
        let t = x.cos();
        ok_or_raise(jvp(|x: Array| g(&x), x, t)).1
    })(Array::scalar(3i64))
    .unwrap();
    agree("jvp", &tangent, &sizes, 1e-12);
    let batched = make_jaxpr(move |n: Array| {
        let x = x_of(&n);
        let xs = ok_or_raise(dyn_::broadcast_in_dim(
            &x,
            &[Size::Const(3), (&n).into()],
            &[1],
        ));
        ok_or_raise(vmap(|x: Array| g(&x)).call(&xs * &xs.cos()))
    })(Array::scalar(3i64))
    .unwrap();
    agree("vmap", &batched, &sizes, 1e-12);
    for (name, f) in dynamic_ops() {
        let f = std::rc::Rc::new(f);
        let f3 = f.clone();
        let cot = make_jaxpr(move |n: Array| ok_or_raise(grad(|x: Array| f3(&x))(x_of(&n))))(
            Array::scalar(3i64),
        )
        .unwrap_or_else(|e| panic!("{name} grad: {e}"));
        agree(&format!("grad_{name}"), &cot, &sizes, 1e-12);
    }
    // vmap of a cond over a batch of predicates (a select per row).
    let f = |n: Array| {
        let x = iota(&n) * 0.3 - 0.5;
        let xs = ok_or_raise(dyn_::broadcast_in_dim(
            &x,
            &[Size::Const(3), (&n).into()],
            &[1],
        ));
        let xs = &xs * &xs.cos();
        let ps = Array::from_vec(vec![true, false, true], &[3]);
        ok_or_raise(
            vmap(|(p, x): (Array, Array)| {
                ok_or_raise(cond(
                    &p,
                    |x: Array| x.sin() * 2.0,
                    |x: Array| x.cos() + &x,
                    x,
                ))
            })
            .call((ps, xs)),
        )
    };
    agree(
        "vmap_cond",
        &make_jaxpr(f)(Array::scalar(4i64)).unwrap(),
        &sizes,
        1e-14,
    );
}

#[test]
fn fori_loop_over_a_dynamic_carry() {
    let _g = lock();
    use jaxon_trace::control::fori_loop;
    let f = jit(|c: Array| {
        ok_or_raise(fori_loop(
            0,
            20,
            |i: Array, c: Array| {
                let i = ok_or_raise(jaxon_trace::lax::convert_element_type(
                    &i,
                    DType::F64,
                    false,
                ));
                &c * 0.99 + c.sin() * 0.01 + i * 1e-3
            },
            c,
        ))
    })
    .abstracted_axes(&[&[(0, "n")]]);
    let lowered = f.lower(Array::from_vec(vec![0.5; 3], &[3])).unwrap();
    let n_implicit = lowered.jaxpr.invars.len() - 1;
    let mut rng = Rng::new(9);
    let inputs: Vec<Vec<HostArray>> = [0usize, 1, 7, 64, 500]
        .iter()
        .map(|&n| {
            let mut a: Vec<HostArray> = [n][..n_implicit].iter().map(|&s| i64s(s as i64)).collect();
            a.push(f64s(&mut rng, &[n]));
            a
        })
        .collect();
    agree("fori", &lowered, &inputs, 1e-14);
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
