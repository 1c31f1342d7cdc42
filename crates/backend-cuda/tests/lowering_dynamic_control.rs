//! Dynamic shapes on the CUDA backend, control flow and transforms:
//! `for_loop`, `while`, `cond` and `fori_loop` over dynamically sized
//! carries (the CPU backend's and the trace crate's dynamic cases), and
//! jvp, vmap and grad of dynamic programs, compiled once on `cuda-sim` and
//! run for several sizes against the reference interpreter. Loops whose
//! carries change shape and dimensions computed on the device are refused
//! at compile time.

mod dynamic_util;
mod lowering_util;

use dynamic_util::*;
use jaxon_ir::{DType, HostArray};
use jaxon_trace::control::{cond, for_loop, while_loop_with};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{jit, make_jaxpr, Array};
use lowering_util::Rng;

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
        "inside `while`",
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
        // sort's jvp gathers with static shapes: not traceable on a dynamic
        // axis (as on the CPU backend).
        if name == "sort" {
            continue;
        }
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

/// A `for_loop` whose upper bound is computed from array data: a `While`
/// on a trip count computed on the device (literal and size bounds are a
/// `Scan` of a size-expression length, with no readback).
const DATA_BOUND: &str = "{ lambda ; a:i64[] b:f64[a]. let
    c:f64[] = reduce_sum[axes=(0,) out_sharding=None] b
    d:i64[] = convert_element_type[new_dtype=int64 weak_type=False] c
    e:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; f:i64[] i:i64[] g:f64[f]. let
          h:f64[f] = mul g 2.0:f64[]
        in (h,) }
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=True
    ] a 0:i64[] d 1:i64[] 0:i64[] b
  in (e,) }";

#[test]
fn for_loop_bounds_from_data_and_from_sizes() {
    let _g = lock();
    let j = jaxon_ir::parse_closed_jaxpr(DATA_BOUND, Vec::new()).unwrap();
    let mut rng = Rng::new(21);
    let inputs: Vec<Vec<HostArray>> = [0usize, 1, 5, 40]
        .iter()
        .map(|&n| {
            let x = lowering_util::random(
                &mut rng,
                DType::F64,
                &[n],
                lowering_util::Dist::Between(0.0, 1.5),
            );
            vec![i64s(n as i64), x]
        })
        .collect();
    agree("data_bound", &j, &inputs, 0.0);
    let prog = jaxon_backend_cuda::lower::dynamic::compile(&j).unwrap();
    let p = prog.instantiate(&[5, 0]).unwrap();
    assert!(p
        .all_steps()
        .iter()
        .any(|s| matches!(s, jaxon_backend_cuda::lower::plan::Step::While { .. })));
    // The seed's literal bounds: a Scan, no While.
    let j = jaxon_ir::parse_closed_jaxpr(SEED_000, Vec::new()).unwrap();
    let p = jaxon_backend_cuda::lower::dynamic::compile(&j)
        .unwrap()
        .instantiate(&[5])
        .unwrap();
    let steps = p.all_steps();
    assert!(steps.iter().any(|s| matches!(
        s,
        jaxon_backend_cuda::lower::plan::Step::Scan { length: 10, .. }
    )));
    assert!(!steps
        .iter()
        .any(|s| matches!(s, jaxon_backend_cuda::lower::plan::Step::While { .. })));
}

/// A `debug_callback` in a `for_loop` over a dynamically sized carry: one
/// compile; per size, one call per iteration seeing what the interpreter's
/// calls see.
const DEBUG_LOOP: &str = "{ lambda ; s:i64[] a:f32[s] k:i32[]. let
    b:f32[s] c:i32[] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] i:i32[] x:f32[d] m:i32[]. let
          debug_callback[
            callback=<function f at 0xXXXXXXXXXXXX>
            effect=Debug
            partitioned=False
          ] i x m
          y:f32[d] = sin x
          z:i32[] = add m i
        in (y, z) }
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=True
    ] s 0:i32[] k 1:i32[] 0:i32[] a 7:i32[]
  in (b, c) }";

#[test]
fn debug_callback_in_a_dynamic_loop_runs_once_per_iteration() {
    use jaxon_backend_cuda::lower::CudaSimBackend;
    use jaxon_ir::primitive::HostFn;
    use jaxon_ir::Backend;
    use std::sync::{Arc, Mutex};
    let _g = lock();
    type Log = Arc<Mutex<Vec<Vec<f64>>>>;
    let seen = |log: Log| -> HostFn {
        Arc::new(move |xs: &[HostArray]| {
            let row: Vec<f64> = xs.iter().flat_map(|x| x.to_f64_vec()).collect();
            log.lock().map_err(|e| e.to_string())?.push(row);
            Ok(Vec::new())
        })
    };
    let (li, lb): (Log, Log) = (Arc::default(), Arc::default());
    let want_j = lowering_util::closed_with(DEBUG_LOOP, &seen(li.clone()));
    let got_j = lowering_util::closed_with(DEBUG_LOOP, &seen(lb.clone()));
    let backend = CudaSimBackend::new();
    let exe = backend.compile(&got_j).unwrap();
    let mut rng = Rng::new(71);
    for (n, trips) in [(0usize, 2i64), (1, 0), (5, 3), (40, 4)] {
        li.lock().unwrap().clear();
        lb.lock().unwrap().clear();
        let args = vec![
            i64s(n as i64),
            lowering_util::random(
                &mut rng,
                DType::F32,
                &[n],
                lowering_util::Dist::Uniform(2.0),
            ),
            HostArray::from_f64(DType::I32, &[], &[trips as f64]).unwrap(),
        ];
        let want = jaxon_ir::eval_closed_jaxpr(&want_j, &args).unwrap();
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe.execute(&bufs).unwrap();
        for (g, w) in got.iter().zip(&want) {
            for (x, y) in g.to_host().unwrap().to_f64_vec().iter().zip(w.to_f64_vec()) {
                assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "{x} vs {y}");
            }
        }
        let (li, lb) = (li.lock().unwrap(), lb.lock().unwrap());
        assert_eq!(lb.len(), trips as usize, "one call per iteration");
        assert_eq!(lb.len(), li.len());
        for (b, i) in lb.iter().zip(li.iter()) {
            assert_eq!(b.len(), i.len());
            for (x, y) in b.iter().zip(i) {
                assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "{x} vs {y}");
            }
        }
    }
}
