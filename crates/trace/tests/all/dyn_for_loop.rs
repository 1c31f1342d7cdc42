//! Catalyst's `for_loop` with dynamic shapes: the seeds' golden jaxprs
//! (printed, parsed back, run for several sizes) and every example of the
//! seeds' "Loop expansion specifics" / "For-loop expansion specifics".

use jaxon_ir::{check_closed_jaxpr, eval_closed_jaxpr, parse_jaxpr, DType, HostArray};
use jaxon_trace::control::{for_loop, for_loop_with, ForLoopOptions};
use jaxon_trace::dynshape::{self as dyn_};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::{jit, make_jaxpr, Array};

fn print(j: &jaxon_ir::ClosedJaxpr) -> String {
    jaxon_ir::print::print_jaxpr(&j.jaxpr)
}

fn golden(j: &jaxon_ir::ClosedJaxpr, want: &str) {
    check_closed_jaxpr(j).unwrap();
    let text = print(j);
    assert_eq!(text, want);
    let parsed = parse_jaxpr(&text).unwrap();
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
    jaxon_ir::check_jaxpr(&parsed).unwrap();
}

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

fn ones(n: &Array) -> Array {
    ok_or_raise(dyn_::ones(&[n.into()], DType::F64))
}

const SEED_000: &str = "{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      a
    _:i64[] c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:i64[] f:i64[] g:f64[e]. let
          h:f64[] = convert_element_type[new_dtype=float64 weak_type=False] d
          i:f64[e] = mul g h
        in (e, i) }
      body_nconsts=1
      nimplicit=1
      preserve_dimensions=True
    ] a a 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    j:f64[a] = add b c
  in (j,) }";

#[test]
fn seed_000_circuit_loop_times_sz() {
    // a0 = ones([sz]); loop(i, a) = a*sz for 10 steps; return a0 + loop(a0)
    let circuit = |sz: Array| {
        let a0 = ones(&sz);
        let a2 = ok_or_raise(for_loop(0, 10, 1, |_i, a: Array| &a * &sz, a0.clone()));
        &a0 + &a2
    };
    let j = make_jaxpr(circuit)(Array::scalar(3i64)).unwrap();
    golden(&j, SEED_000);
    for n in [1i64, 2, 5] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        let want = 1.0 + (n as f64).powi(10);
        assert_eq!(out[0].to_f64_vec(), vec![want; n as usize]);
    }
}

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

#[test]
fn seed_003_circuit_captured_array_shares_the_dimension() {
    // The seed-003 overview program; also seed 000's "Caveats" case, which
    // Catalyst rejects and we accept: a captured a0 and the loop argument
    // share one dimension variable.
    let circuit = |sz: Array| {
        let a0 = ones(&sz);
        let a2 = ok_or_raise(for_loop(0, 10, 1, |_i, a: Array| &a + &a0, a0.clone()));
        &a0 + &a2
    };
    let j = make_jaxpr(circuit)(Array::scalar(3i64)).unwrap();
    golden(&j, SEED_003);
    for n in [0i64, 1, 4] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        assert_eq!(out[0].to_f64_vec(), vec![12.0; n as usize]);
    }
}

#[test]
fn jit_circuit_compiles_once_for_every_size() {
    let circuit = jit(|sz: Array| {
        let a0 = ones(&sz);
        let a2 = ok_or_raise(for_loop(0, 10, 1, |_i, a: Array| &a + &a0, a0.clone()));
        &a0 + &a2
    })
    .backend("interpreter");
    for n in [3i64, 1, 7] {
        let got = circuit.call(Array::scalar(n)).unwrap().to_vec::<f64>();
        assert_eq!(got, vec![12.0; n as usize]);
    }
    assert_eq!(circuit.trace_count(), 1);
    assert_eq!(circuit.compile_count(), 1);
}

#[test]
fn correct_shared_dimension_in_both_inputs_and_outputs() {
    // loop(i, a, a_) = (a, a_); loop(a0, a0)
    let f = |sz: Array| {
        let a0 = ones(&sz);
        ok_or_raise(for_loop(
            0,
            10,
            1,
            |_i, (a, b): (Array, Array)| (&a * 2.0, &b + &a),
            (a0.clone(), a0),
        ))
    };
    let j = make_jaxpr(f)(Array::scalar(2i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    let text = print(&j);
    assert!(text.contains("nimplicit=1"), "{text}");
    for n in [1i64, 3] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        // a doubles each step; b accumulates the a's: 1 + (1+2+...+2^9).
        assert_eq!(out[0].to_f64_vec(), vec![1024.0; n as usize]);
        assert_eq!(out[1].to_f64_vec(), vec![1024.0; n as usize]);
    }
}

#[test]
fn correct_new_shared_dimension_from_the_body() {
    // loop(i, a, a_) = (b, b) with b = ones([sz+1]); loop(a0, a0)
    let f = |sz: Array| {
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
    let j = make_jaxpr(f)(Array::scalar(2i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for n in [1i64, 4] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        assert_eq!(out.last().unwrap().to_f64_vec(), vec![2.0; n as usize + 1]);
    }
}

#[test]
fn error_results_break_the_dimension_sharing() {
    // loop(i, a, a_) = (a, b) with b = ones([sz+1]): ERROR
    let f = |sz: Array| {
        let a0 = ones(&sz);
        ok_or_raise(for_loop(
            0,
            10,
            1,
            |_i, (a, _b): (Array, Array)| (a, ones(&(&sz + 1))),
            (a0.clone(), a0),
        ))
    };
    let e = make_jaxpr(f)(Array::scalar(2i64)).unwrap_err().to_string();
    assert!(
        e.contains("result 1 breaks the arguments' dimension sharing"),
        "{e}"
    );
    assert!(e.contains("f64[") && e.contains("result 0"), "{e}");
}

#[test]
fn preserve_dimensions_false_gives_one_dimension_per_use() {
    // loop(i, a, b, b_) = (a, b, b_) with preserve_dimensions=False: CORRECT
    let opts = ForLoopOptions {
        preserve_dimensions: false,
        ..Default::default()
    };
    let f = |sz: Array| {
        let a0 = ones(&sz);
        let b0 = ones(&(&sz + 1));
        let (a, b, c) = ok_or_raise(for_loop_with(
            opts,
            0,
            10,
            1,
            |_i, (a, b, c): (Array, Array, Array)| (&a + 1.0, &b * 2.0, c),
            (a0, b0.clone(), b0),
        ));
        (a, b, c)
    };
    let j = make_jaxpr(f)(Array::scalar(2i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    let text = print(&j);
    assert!(
        text.contains("nimplicit=3") && text.contains("preserve_dimensions=False"),
        "{text}"
    );
    let out = eval_closed_jaxpr(&j, &[i64s(3)]).unwrap();
    let n = out.len();
    assert_eq!(out[n - 3].to_f64_vec(), vec![11.0; 3]);
    assert_eq!(out[n - 2].to_f64_vec(), vec![1024.0; 4]);
    assert_eq!(out[n - 1].to_f64_vec(), vec![1.0; 4]);
    // ... but `b + b_` is not possible: their dimensions differ now.
    let g = |sz: Array| {
        let b0 = ones(&sz);
        ok_or_raise(for_loop_with(
            opts,
            0,
            10,
            1,
            |_i, (b, c): (Array, Array)| (&b + &c, c),
            (b0.clone(), b0),
        ))
    };
    let e = make_jaxpr(g)(Array::scalar(2i64)).unwrap_err().to_string();
    assert!(e.contains("add") && e.contains("f64["), "{e}");
}

#[test]
fn loop_index_sizes_a_result() {
    // loop(i, a) = ones([i]): the result's dimension is an OutDBIdx.
    let f = |sz: Array| {
        let a0 = ones(&sz);
        ok_or_raise(for_loop(0, 10, 1, |i, _a: Array| ones(&i), a0))
    };
    let j = make_jaxpr(f)(Array::scalar(4i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    let text = print(&j);
    assert!(text.contains("c:i64[] d:f64[c] = for_loop"), "{text}");
    let parsed = parse_jaxpr(&text).unwrap();
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
    jaxon_ir::check_jaxpr(&parsed).unwrap();
    assert!(text.contains("in (c, d) }"), "{text}");
    for n in [1i64, 6] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        assert_eq!(out[0].data().get_i64(0), 9);
        assert_eq!(out[1].to_f64_vec(), vec![1.0; 9]);
    }
}

#[test]
fn for_loop_runs_eagerly_and_with_static_shapes() {
    let x = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let y = jaxon_trace::with_backend("interpreter", || {
        for_loop(1, 4, 1, |i, a: Array| &a * i.astype(DType::F64), x)
    })
    .unwrap()
    .unwrap();
    assert_eq!(y.to_vec::<f64>(), vec![6.0, 12.0, 18.0]);
}

#[test]
fn correct_arguments_returned_unchanged_keep_one_shared_dimension() {
    // loop(i, a, a_) = (a, a_); loop(a0, a0): the implicit result is the
    // implicit argument itself, so the results keep the outer dimension.
    let f = |sz: Array| {
        let a0 = ok_or_raise(dyn_::iota(DType::F64, &sz));
        let (a, b) = ok_or_raise(for_loop(
            0,
            10,
            1,
            |_i, (a, b): (Array, Array)| (a, b),
            (a0.clone(), a0.clone()),
        ));
        &(&a + &b) + &a0
    };
    let j = make_jaxpr(f)(Array::scalar(2i64)).unwrap();
    golden_roundtrip(&j);
    let text = print(&j);
    assert!(
        text.contains("nimplicit=1") && text.contains("in (e, g, h) }"),
        "{text}"
    );
    let out = eval_closed_jaxpr(&j, &[i64s(4)]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![0.0, 3.0, 6.0, 9.0]);
}

#[test]
fn captured_constant_with_its_own_dimension_is_prepended() {
    // Seed 003 "Adding Jax constants": a body over a, b (dimension d)
    // capturing o (dimension od) gets `od, o, d, i, a, b`.
    let f = |(sz, osz): (Array, Array)| {
        let a0 = ones(&sz);
        let o = ok_or_raise(dyn_::iota(DType::F64, &osz));
        let (a, b) = ok_or_raise(for_loop(
            0,
            3,
            1,
            |_i, (a, b): (Array, Array)| {
                let s = o.sum(jaxon_trace::numpy::All);
                (&a + &s, &b * 2.0)
            },
            (a0.clone(), a0),
        ));
        (a, b)
    };
    let j = make_jaxpr(f)((Array::scalar(2i64), Array::scalar(5i64))).unwrap();
    golden_roundtrip(&j);
    let text = print(&j);
    assert!(
        text.contains("body_jaxpr={ lambda ; g:i64[] h:f64[g] i:i64[] j:i64[] k:f64[i] l:f64[i]."),
        "{text}"
    );
    assert!(
        text.contains("body_nconsts=2") && text.contains("nimplicit=1"),
        "{text}"
    );
    for (n, m) in [(2i64, 5i64), (3, 1)] {
        let out = eval_closed_jaxpr(&j, &[i64s(n), i64s(m)]).unwrap();
        let s: f64 = (0..m).map(|i| i as f64).sum();
        assert_eq!(out[0].to_f64_vec(), vec![1.0 + 3.0 * s; n as usize]);
        assert_eq!(out[1].to_f64_vec(), vec![8.0; n as usize]);
    }
}

fn golden_roundtrip(j: &jaxon_ir::ClosedJaxpr) {
    check_closed_jaxpr(j).unwrap();
    let text = print(j);
    let parsed = parse_jaxpr(&text).unwrap();
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
}
