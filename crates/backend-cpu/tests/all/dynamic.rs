//! Dynamic shapes on the CPU backend: the seeds' golden jaxprs and traced
//! dynamic programs (elementwise chains, reductions, matmul, concatenate,
//! `for_loop`, `while`, `cond`) compile once and run for every size,
//! matching the reference interpreter.

use crate::common;
use common::values;
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{eval_closed_jaxpr, parse_closed_jaxpr, Backend, ClosedJaxpr, DType, HostArray};
use jaxon_trace::control::{cond, for_loop, while_loop_with};
use jaxon_trace::dynshape::{self as dyn_};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{jit, make_jaxpr, Array};
use std::sync::{Arc, Once};

fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| jaxon_trace::register_backend(Arc::new(CpuBackend::new())));
}

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

/// Runs `j` on the CPU backend (one executable for all `inputs`) and on
/// the interpreter; results must agree to `tol` (relative).
fn agree(j: &ClosedJaxpr, inputs: &[Vec<HostArray>], tol: f64) -> String {
    let backend = CpuBackend::new();
    let exe = backend.compile(j).unwrap();
    for args in inputs {
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe.execute(&bufs).unwrap();
        let want = eval_closed_jaxpr(j, args).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            let g = g.to_host().unwrap();
            assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()));
            for (a, b) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1.0),
                    "{a} vs {b} for {:?}",
                    args.iter().map(|a| a.shape().to_vec()).collect::<Vec<_>>()
                );
            }
        }
    }
    assert_eq!(backend.cached_programs(), 1);
    let plan = backend.dynamic_plan(j).expect("a dynamic program");
    eprintln!("{plan}");
    // Kernels, GEMMs, native steps and nested bodies only: nothing runs
    // the interpreter.
    for line in plan.lines() {
        let l = line.trim_start();
        assert!(
            [
                "flat eqns ",
                "scalar eqns ",
                "gemm eqn ",
                "native eqn ",
                "nested eqn "
            ]
            .iter()
            .any(|k| l.starts_with(k)),
            "{line:?} in\n{plan}"
        );
    }
    plan
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
fn seed_golden_jaxprs_compile_once_and_run_for_every_size() {
    let sizes = [0i64, 1, 2, 5, 33, 1000, 300_000];
    let inputs: Vec<Vec<HostArray>> = sizes.iter().map(|&n| vec![i64s(n)]).collect();
    let plans: Vec<String> = [SEED_000, SEED_003, ONES_PLUS_ONE]
        .iter()
        .map(|text| agree(&parse_closed_jaxpr(text, Vec::new()).unwrap(), &inputs, 0.0))
        .collect();
    // The loop body's broadcast and product are one kernel; the ones and
    // the final sum are kernels too.
    assert!(
        plans[0].contains("  flat eqns 1..3: 1 kernel(s)"),
        "{}",
        plans[0]
    );
    assert!(plans[0].starts_with("flat eqns 0..1"), "{}", plans[0]);
    assert!(plans[1].contains("  flat eqns 0..1"), "{}", plans[1]);
    // Hand-computed values.
    let backend = CpuBackend::new();
    let exe = backend
        .compile(&parse_closed_jaxpr(SEED_000, Vec::new()).unwrap())
        .unwrap();
    for n in [3i64, 7] {
        let out = exe
            .execute(&[backend.to_device(&i64s(n)).unwrap()])
            .unwrap();
        let want = 1.0 + (n as f64).powi(10);
        assert_eq!(
            out[0].to_host().unwrap().to_f64_vec(),
            vec![want; n as usize]
        );
    }
}

#[test]
fn elementwise_chain_and_reduction_fuse_over_a_dynamic_axis() {
    // exp(x) * y - tanh(x) summed, plus x's sine: one flat run then a
    // reduction, for sizes around the vector width and the thread split.
    let f = |(x, y): (Array, Array)| {
        let z = &x.exp() * &y - x.tanh();
        (z.sum(jnp::All) + x.sin(), z)
    };
    let j = jit(f).abstracted_axes(&[&[(0, "n")], &[(0, "n")]]);
    let lowered = j
        .lower((
            Array::from_vec(values(3, 1), &[3]),
            Array::from_vec(values(3, 2), &[3]),
        ))
        .unwrap();
    let inputs: Vec<Vec<HostArray>> = [1usize, 3, 4, 5, 17, 1024, 300_001]
        .iter()
        .map(|&n| {
            vec![
                i64s(n as i64),
                HostArray::from_f64(DType::F64, &[n], &values(n, n as u64)).unwrap(),
                HostArray::from_f64(DType::F64, &[n], &values(n, 7 * n as u64)).unwrap(),
            ]
        })
        .collect();
    // The sum is reassociated (partial sums), tanh/exp are polynomials.
    let plan = agree(&lowered, &inputs, 1e-12);
    assert!(!plan.contains("native"), "every equation is fused:\n{plan}");
}

#[test]
fn jit_on_the_cpu_backend_compiles_once_for_matmul_and_concatenate() {
    register();
    let f = jit(|(x, y, w): (Array, Array, Array)| {
        let xv = ok_or_raise(jnp::matmul(&x, &w));
        ok_or_raise(dyn_::concatenate(&[xv, y], 0))
    })
    .backend("cpu")
    .abstracted_axes(&[&[(0, "n")], &[(0, "m")]]);
    for (n, m) in [(2usize, 1usize), (3, 4), (1, 1), (65, 9)] {
        let xs = values(3 * n, n as u64);
        let ys = values(m, 100 + m as u64);
        let w = vec![1.0, -2.0, 0.5];
        let out = f
            .call((
                Array::from_vec(xs.clone(), &[n, 3]),
                Array::from_vec(ys.clone(), &[m]),
                Array::from_vec(w.clone(), &[3]),
            ))
            .unwrap();
        let mut want: Vec<f64> = (0..n)
            .map(|r| (0..3).map(|c| xs[r * 3 + c] * w[c]).sum())
            .collect();
        want.extend(&ys);
        assert_eq!(out.shape(), vec![n + m]);
        for (a, b) in out.to_vec::<f64>().iter().zip(&want) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }
    assert_eq!((f.trace_count(), f.compile_count()), (1, 1));
}

#[test]
fn dynamic_matmul_of_two_dynamic_axes_matches_the_interpreter() {
    // (n, k) @ (k, m) with all three sizes dynamic.
    let f = jit(|(a, b): (Array, Array)| ok_or_raise(jnp::matmul(&a, &b)).tanh())
        .abstracted_axes(&[&[(0, "n"), (1, "k")], &[(0, "k"), (1, "m")]]);
    let lowered = f
        .lower((
            Array::from_vec(values(6, 1), &[2, 3]),
            Array::from_vec(values(12, 2), &[3, 4]),
        ))
        .unwrap();
    let text = jaxon_ir::print::print_jaxpr(&lowered.jaxpr);
    assert!(text.contains("dot_general"), "{text}");
    let inputs: Vec<Vec<HostArray>> = [
        (1usize, 1usize, 1usize),
        (2, 3, 4),
        (17, 64, 33),
        (128, 40, 70),
    ]
    .iter()
    .map(|&(n, k, m)| {
        let mut args = Vec::new();
        // Implicit sizes first, in the order the type lists them.
        let sizes = implicit_sizes(&lowered, &[n, k, m]);
        args.extend(sizes.into_iter().map(|s| i64s(s as i64)));
        args.push(HostArray::from_f64(DType::F64, &[n, k], &values(n * k, 3)).unwrap());
        args.push(HostArray::from_f64(DType::F64, &[k, m], &values(k * m, 4)).unwrap());
        args
    })
    .collect();
    let plan = agree(&lowered, &inputs, 1e-12);
    assert!(plan.starts_with("gemm eqn 0\nflat"), "{plan}");
}

/// The implicit size arguments of a lowered function whose abstracted axes
/// are named `n`, `k`, `m` in first-use order.
fn implicit_sizes(j: &ClosedJaxpr, nkm: &[usize]) -> Vec<usize> {
    let n_implicit = j.jaxpr.invars.len() - 2;
    nkm[..n_implicit].to_vec()
}

#[test]
fn for_while_and_cond_with_dynamic_carries_run_natively() {
    // A for_loop whose carry has a dynamic size, a while_loop that doubles
    // its array until it passes a bound (preserve_dimensions=false), and a
    // cond whose branches return different sizes.
    let f = |(sz, p): (Array, Array)| {
        let a = ok_or_raise(dyn_::iota(DType::F64, &sz));
        let looped = ok_or_raise(for_loop(
            0,
            4,
            1,
            |i: Array, c: Array| &c * 0.5 + i.astype(DType::F64),
            a.clone(),
        ));
        let grown = ok_or_raise(while_loop_with(
            false,
            |x: Array| ok_or_raise(dyn_::size_of(&x, 0)).lt(100),
            |x: Array| {
                let n = ok_or_raise(dyn_::size_of(&x, 0)).astype(DType::F64);
                ok_or_raise(dyn_::concatenate(&[x.clone(), &x + n], 0))
            },
            a.clone(),
        ));
        let branched = ok_or_raise(cond(
            &p,
            |x: Array| x * 2.0,
            |x: Array| ok_or_raise(dyn_::concatenate(&[x.clone(), x], 0)),
            looped.clone(),
        ));
        (looped, grown, branched)
    };
    let j = make_jaxpr(f)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    let inputs: Vec<Vec<HostArray>> = [1i64, 3, 7, 100, 130]
        .iter()
        .flat_map(|&n| {
            [true, false].map(|p| vec![i64s(n), HostArray::scalar(DType::Bool, p as u8 as f64)])
        })
        .collect();
    agree(&j, &inputs, 0.0);
}

#[test]
fn a_wrong_dynamic_argument_is_an_error_naming_both_types() {
    let j = parse_closed_jaxpr(
        "{ lambda ; a:i64[] b:f64[a]. let c:f64[a] = sin b in (c,) }",
        Vec::new(),
    )
    .unwrap();
    let backend = CpuBackend::new();
    let exe = backend.compile(&j).unwrap();
    let x = HostArray::from_f64(DType::F64, &[4], &values(4, 9)).unwrap();
    let err = exe
        .execute(&[
            backend.to_device(&i64s(5)).unwrap(),
            backend.to_device(&x).unwrap(),
        ])
        .expect_err("a size mismatch must fail")
        .to_string();
    assert!(err.contains("[5]") && err.contains("[4]"), "{err}");
    // A negative size is an error too, not a crash.
    let j = parse_closed_jaxpr(ONES_PLUS_ONE, Vec::new()).unwrap();
    let exe = backend.compile(&j).unwrap();
    let err = exe
        .execute(&[backend.to_device(&i64s(-5)).unwrap()])
        .expect_err("a negative size must fail")
        .to_string();
    assert!(err.contains("negative") && err.contains("-4"), "{err}");
}

fn ones(n: &Array) -> Array {
    ok_or_raise(dyn_::ones(&[n.into()], DType::F64))
}

#[test]
fn seed_loop_expansion_cases_run_on_the_cpu_backend() {
    use jaxon_trace::control::{for_loop_with, ForLoopOptions};
    let sizes: Vec<Vec<HostArray>> = [0i64, 1, 3, 9, 1000].map(|n| vec![i64s(n)]).to_vec();
    // loop(i, a, a_) = (a*2, a_ + a): one shared dimension.
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
        &make_jaxpr(shared)(Array::scalar(2i64)).unwrap(),
        &sizes,
        0.0,
    );
    // loop(i, a, a_) = (b, b) with b = ones([sz+1]): a new shared dimension.
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
    agree(
        &make_jaxpr(fresh)(Array::scalar(2i64)).unwrap(),
        &sizes,
        0.0,
    );
    // preserve_dimensions=False: one implicit dimension per use.
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
        &make_jaxpr(per_use)(Array::scalar(2i64)).unwrap(),
        &sizes,
        0.0,
    );
    // The loop index sizes the result (an OutDBIdx dimension).
    let by_index = |sz: Array| {
        let a0 = ones(&sz);
        ok_or_raise(for_loop(0, 10, 1, |i, _a: Array| ones(&i), a0))
    };
    agree(
        &make_jaxpr(by_index)(Array::scalar(4i64)).unwrap(),
        &sizes,
        0.0,
    );
}

/// Elementwise ops, reductions and a matmul (as in the transforms tests).
fn g(x: &Array) -> Array {
    let y = x.sin() * x;
    let s = y.sum(jnp::All);
    &s * ok_or_raise(jnp::matmul(x, x)) + (&y * 0.5).max(jnp::All)
}

#[test]
fn jvp_vmap_and_grad_of_dynamic_programs_run_on_the_cpu_backend() {
    use jaxon_trace::dynshape::Size;
    use jaxon_transforms::{grad, jvp, vmap};
    let sizes: Vec<Vec<HostArray>> = [1i64, 4, 9, 1000].map(|n| vec![i64s(n)]).to_vec();
    let x_of = |n: &Array| ok_or_raise(dyn_::iota(DType::F64, n)) * 0.37 - 0.8;
    let with_jvp = |n: Array| {
        let t = ok_or_raise(dyn_::iota(DType::F64, &n)).cos();
        ok_or_raise(jvp(|x: Array| g(&x), x_of(&n), t))
    };
    agree(
        &make_jaxpr(with_jvp)(Array::scalar(3i64)).unwrap(),
        &sizes,
        1e-12,
    );
    let with_grad = |n: Array| ok_or_raise(grad(|x: Array| g(&x))(x_of(&n)));
    agree(
        &make_jaxpr(with_grad)(Array::scalar(3i64)).unwrap(),
        &sizes,
        1e-12,
    );
    let with_vmap = |n: Array| {
        let three_n = ok_or_raise(dyn_::mul_sizes(&Size::Const(3), &(&n).into()));
        let flat = ok_or_raise(dyn_::iota(DType::F64, three_n)) * 0.37 - 0.8;
        let x = ok_or_raise(dyn_::reshape(&flat, &[Size::Const(3), (&n).into()]));
        ok_or_raise(vmap(|r: Array| g(&r)).call(x))
    };
    agree(
        &make_jaxpr(with_vmap)(Array::scalar(2i64)).unwrap(),
        &sizes,
        1e-12,
    );
}

#[test]
fn grad_of_dynamic_division_max_and_clamp_runs_on_the_cpu_backend() {
    use jaxon_transforms::grad;
    // d/dx sum(x / (1 + x^2) + max(x, 0.3) + clamp(-0.5, x, 0.5)) on the cpu
    // backend, against the interpreter and the closed form.
    let loss = |x: Array| {
        let d = &x / (&x * &x + 1.0);
        let m = x.maximum(Array::scalar(0.3f64));
        let c = ok_or_raise(jaxon_trace::lax::clamp(
            &Array::scalar(-0.5f64),
            &x,
            &Array::scalar(0.5f64),
        ));
        (d + m + c).sum(jnp::All)
    };
    let f = move |n: Array| {
        let x = ok_or_raise(dyn_::iota(DType::F64, &n)) * 0.173 - 0.9;
        ok_or_raise(grad(loss)(x))
    };
    let j = make_jaxpr(f)(Array::scalar(3i64)).unwrap();
    let sizes: Vec<Vec<HostArray>> = [1i64, 5, 12, 257].map(|n| vec![i64s(n)]).to_vec();
    agree(&j, &sizes, 1e-12);
    let backend = CpuBackend::new();
    let exe = backend.compile(&j).unwrap();
    let out = exe
        .execute(&[backend.to_device(&i64s(12)).unwrap()])
        .unwrap();
    let got = out[0].to_host().unwrap().to_f64_vec();
    for (i, g) in got.iter().enumerate() {
        let x = i as f64 * 0.173 - 0.9;
        let want = (1.0 - x * x) / (1.0 + x * x).powi(2)
            + if x > 0.3 { 1.0 } else { 0.0 }
            + if x.abs() < 0.5 { 1.0 } else { 0.0 };
        assert!((g - want).abs() < 1e-6, "x={x}: {g} vs {want}");
    }
}

type Op = Box<dyn Fn(&Array) -> Array>;

/// Programs on one dynamic axis, and how far the transforms reach them:
/// 2 = jvp, vmap and grad; 0 = vmap only (`sort`'s jvp gathers with static
/// shapes).
fn dynamic_ops() -> Vec<(&'static str, Op, u8)> {
    let sum = |a: Array| a.sum(jnp::All);
    vec![
        ("exp", Box::new(move |x: &Array| sum(x.exp())), 2),
        (
            "log",
            Box::new(move |x: &Array| sum((x * x + 1.0).log())),
            2,
        ),
        ("tanh", Box::new(move |x: &Array| sum(x.tanh())), 2),
        (
            "sqrt",
            Box::new(move |x: &Array| sum((x * x + 1.0).sqrt())),
            2,
        ),
        (
            "pow",
            Box::new(move |x: &Array| {
                sum(ok_or_raise(jnp::power(
                    &(x * x + 1.0),
                    &Array::scalar(1.5f64),
                )))
            }),
            2,
        ),
        ("integer_pow", Box::new(move |x: &Array| sum(x.powi(3))), 2),
        ("max", Box::new(|x: &Array| x.max(jnp::All)), 2),
        ("min", Box::new(|x: &Array| x.min(jnp::All)), 2),
        ("mean", Box::new(|x: &Array| x.mean(jnp::All)), 2),
        ("abs", Box::new(move |x: &Array| sum(x.abs())), 2),
        (
            "relu",
            Box::new(move |x: &Array| sum(ok_or_raise(jaxon_trace::nn::relu(x)) * x)),
            2,
        ),
        ("dot", Box::new(|x: &Array| ok_or_raise(jnp::dot(x, x))), 2),
        (
            "where",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::where_(&x.gt(0.0), x, &(x * 2.0))))),
            2,
        ),
        (
            "softmax",
            Box::new(move |x: &Array| {
                let e = x - x.max(jnp::All);
                sum(&e.exp() / e.exp().sum(jnp::All) * x)
            }),
            2,
        ),
        (
            "cumsum",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::cumsum(x, Some(0))).sin())),
            2,
        ),
        (
            "sort",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::sort(x, Some(0))) * x)),
            0,
        ),
        (
            "concatenate",
            Box::new(move |x: &Array| {
                sum(ok_or_raise(dyn_::concatenate(&[x.clone(), x * 2.0], 0)).sin())
            }),
            2,
        ),
    ]
}

#[test]
fn dynamic_ops_and_their_transforms_match_the_interpreter_on_the_cpu_backend() {
    use jaxon_trace::dynshape::Size;
    use jaxon_transforms::{grad, jvp, vmap};
    let sizes: Vec<Vec<HostArray>> = [1i64, 2, 7, 64, 1001].map(|n| vec![i64s(n)]).to_vec();
    let x_of = |n: &Array| ok_or_raise(dyn_::iota(DType::F64, n)) * 0.37 - 0.8;
    for (name, f, reach) in dynamic_ops() {
        let f = std::rc::Rc::new(f);
        let f0 = f.clone();
        let primal = make_jaxpr(move |n: Array| f0(&x_of(&n)))(Array::scalar(3i64))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        agree(&primal, &sizes, 1e-12);
        if reach >= 1 {
            let f1 = f.clone();
            let tangent = make_jaxpr(move |n: Array| {
                let x = x_of(&n);
                let t = x.cos();
                ok_or_raise(jvp(|x: Array| f1(&x), x, t)).1
            })(Array::scalar(3i64))
            .unwrap_or_else(|e| panic!("{name} jvp: {e}"));
            agree(&tangent, &sizes, 1e-12);
        }
        let f2 = f.clone();
        let batched = make_jaxpr(move |n: Array| {
            let x = x_of(&n);
            let xs = ok_or_raise(dyn_::broadcast_in_dim(
                &x,
                &[Size::Const(2), (&n).into()],
                &[1],
            ));
            ok_or_raise(vmap(|x: Array| f2(&x)).call(&xs * &xs.cos()))
        })(Array::scalar(3i64))
        .unwrap_or_else(|e| panic!("{name} vmap: {e}"));
        agree(&batched, &sizes, 1e-12);
        if reach >= 2 {
            let f3 = f.clone();
            let cot = make_jaxpr(move |n: Array| ok_or_raise(grad(|x: Array| f3(&x))(x_of(&n))))(
                Array::scalar(3i64),
            )
            .unwrap_or_else(|e| panic!("{name} grad: {e}"));
            agree(&cot, &sizes, 1e-12);
        }
    }
}

#[test]
fn dynamic_slice_with_a_traced_size_of_a_dynamic_matrix_runs_on_the_cpu_backend() {
    // x: (n, m) with both sizes dynamic; rows start..start+k (k traced).
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
    let inputs: Vec<Vec<HostArray>> = [(5, 3, 1, 2), (9, 4, 3, 5), (7, 1, 0, 7), (6, 2, 4, 3)]
        .iter()
        .map(|&(n, m, s, k)| vec![i64s(n), i64s(m), i64s(s), i64s(k)])
        .collect();
    // sin/cos are polynomials here and libm in the interpreter.
    agree(&j, &inputs, 1e-14);
}

#[test]
fn vmap_of_a_dynamic_cond_runs_on_the_cpu_backend() {
    use jaxon_trace::dynshape::Size;
    use jaxon_transforms::vmap;
    // Per batch row: p ? sin(x) * 2 : cos(x) + x, x of a dynamic size.
    let f = |n: Array| {
        let x = ok_or_raise(dyn_::iota(DType::F64, &n)) * 0.3 - 0.5;
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
    let j = make_jaxpr(f)(Array::scalar(4i64)).unwrap();
    let sizes: Vec<Vec<HostArray>> = [1i64, 4, 33].map(|n| vec![i64s(n)]).to_vec();
    agree(&j, &sizes, 1e-14);
}

/// `fori_loop` with concrete bounds over a carry of traced size: it loops
/// as a `for_loop` (a `scan` cannot carry a dynamic type), compiled once
/// and checked against the same recurrence in f64 for several sizes.
#[test]
fn fori_loop_with_a_dynamic_carry_compiles_once() {
    use jaxon_trace::control::fori_loop;
    register();
    let f = jit(|c: Array| {
        ok_or_raise(fori_loop(
            0,
            50,
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
    .backend("cpu")
    .abstracted_axes(&[&[(0, "n")]]);
    for n in [1usize, 7, 64, 1000] {
        let c0 = values(n, n as u64);
        let got = f.call(Array::from_vec(c0.clone(), &[n])).unwrap();
        let got: Vec<f64> = got.to_vec();
        for (k, x0) in c0.iter().enumerate() {
            let mut x = *x0;
            for i in 0..50 {
                x = x * 0.99 + x.sin() * 0.01 + i as f64 * 1e-3;
            }
            assert!(
                (got[k] - x).abs() <= 1e-12,
                "n {n} [{k}]: {} vs {x}",
                got[k]
            );
        }
    }
    assert_eq!(f.trace_count(), 1, "one trace for every size");
    assert_eq!(f.compile_count(), 1, "one compile for every size");
}
