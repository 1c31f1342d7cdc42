//! Dynamic shapes: creating and computing with arrays whose sizes are
//! traced integers (seeds 000/003), printed, parsed back and run on the
//! reference interpreter for several sizes.

use jaxon_ir::{check_closed_jaxpr, eval_closed_jaxpr, parse_jaxpr, DType, HostArray};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{jit, make_jaxpr, Array};

fn print(j: &jaxon_ir::ClosedJaxpr) -> String {
    jaxon_ir::print::print_jaxpr(&j.jaxpr)
}

fn sz(n: i64) -> Array {
    Array::scalar(n)
}

/// Prints, round-trips through the parser and checks.
fn golden(j: &jaxon_ir::ClosedJaxpr, want: &str) {
    check_closed_jaxpr(j).unwrap();
    let text = print(j);
    assert_eq!(text, want);
    let parsed = parse_jaxpr(&text).unwrap();
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
    jaxon_ir::check_jaxpr(&parsed).unwrap();
}

fn run(j: &jaxon_ir::ClosedJaxpr, args: &[HostArray]) -> Vec<HostArray> {
    eval_closed_jaxpr(j, args).unwrap()
}

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

const ONES_PLUS_ONE: &str = "{ lambda ; a:i64[]. let
    b:i64[] = add a 1:i64[]
    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      b
  in (b, c) }";

#[test]
fn ones_of_sz_plus_one_returns_its_size_implicitly() {
    // def f(sz): return jnp.ones((sz+1,), dtype=float)
    let f = |sz: Array| ok_or_raise(dyn_::ones(&[(&sz + 1).into()], DType::F64));
    let j = make_jaxpr(f)(sz(3)).unwrap();
    golden(&j, ONES_PLUS_ONE);
    for n in [0i64, 1, 4, 9] {
        let out = run(&j, &[i64s(n)]);
        assert_eq!(out[0].data().get_i64(0), n + 1);
        assert_eq!(out[1].shape(), &[(n + 1) as usize]);
        assert!(out[1].to_f64_vec().iter().all(|&x| x == 1.0));
    }
}

#[test]
fn elementwise_reductions_and_matmul_on_dynamic_shapes() {
    // x = arange(n) as f64; y = 2*x + 1; s = sum(y * y); m = outer-free matmul
    let f = |n: Array| {
        let x = ok_or_raise(dyn_::arange(&n, DType::F64));
        let y = &x * 2.0 + 1.0;
        let s = (&y * &y).sum(jnp::All);
        let d = ok_or_raise(jnp::matmul(&x, &y));
        (s, d, y.sin(), y.mean(jnp::All))
    };
    let j = make_jaxpr(f)(sz(4)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    let text = print(&j);
    assert_eq!(
        print(&jaxon_ir::ClosedJaxpr {
            jaxpr: std::sync::Arc::new(parse_jaxpr(&text).unwrap()),
            consts: j.consts.clone()
        }),
        text
    );
    for n in [1i64, 5, 12] {
        let out = run(&j, &[i64s(n)]);
        let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 2.0 * x + 1.0).collect();
        let s: f64 = ys.iter().map(|y| y * y).sum();
        let d: f64 = xs.iter().zip(&ys).map(|(x, y)| x * y).sum();
        assert_eq!(out[0].to_f64_vec(), vec![s]);
        assert_eq!(out[1].to_f64_vec(), vec![d]);
        let sin: Vec<f64> = ys.iter().map(|y| y.sin()).collect();
        assert_eq!(out[2].to_f64_vec(), sin);
        let mean = ys.iter().sum::<f64>() / n as f64;
        assert!((out[3].to_f64_vec()[0] - mean).abs() <= 1e-12 * mean.abs());
    }
}

#[test]
fn different_dimension_variables_do_not_mix() {
    let f = |(n, m): (Array, Array)| {
        let a = ok_or_raise(dyn_::ones(&[(&n).into()], DType::F64));
        let b = ok_or_raise(dyn_::ones(&[(&m).into()], DType::F64));
        a + b
    };
    let e = make_jaxpr(f)((sz(3), sz(3))).unwrap_err().to_string();
    assert!(e.contains("f64[a]") || e.contains("f64["), "{e}");
    assert!(e.contains("add"), "{e}");
    // Same variable: fine.
    let g = |n: Array| {
        let a = ok_or_raise(dyn_::ones(&[(&n).into()], DType::F64));
        let b = ok_or_raise(dyn_::zeros(&[(&n).into()], DType::F64));
        a + b
    };
    assert!(make_jaxpr(g)(sz(3)).is_ok());
}

#[test]
fn concatenate_emits_the_size_sum() {
    let f = |n: Array| {
        let a = ok_or_raise(dyn_::iota(DType::F64, &n));
        ok_or_raise(dyn_::concatenate(&[a.clone(), &a * 10.0], 0))
    };
    let j = make_jaxpr(f)(sz(2)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    let text = print(&j);
    assert!(text.contains("add a a"), "{text}");
    for n in [0i64, 1, 3] {
        let out = run(&j, &[i64s(n)]);
        assert_eq!(out[0].data().get_i64(0), 2 * n);
        let mut want: Vec<f64> = (0..n).map(|i| i as f64).collect();
        want.extend((0..n).map(|i| 10.0 * i as f64));
        assert_eq!(out[1].to_f64_vec(), want);
    }
}

#[test]
fn reshape_iota_and_dynamic_slice_with_traced_sizes() {
    // x = iota(2n) reshaped to (2, n); row sums; a traced-size slice.
    let f = |(n, k, s): (Array, Array, Array)| {
        let two_n = ok_or_raise(dyn_::mul_sizes(&Size::Const(2), &(&n).into()));
        let x = ok_or_raise(dyn_::iota(DType::F64, two_n));
        let m = ok_or_raise(dyn_::reshape(&x, &[Size::Const(2), (&n).into()]));
        let rows = m.sum(1usize);
        let sl = ok_or_raise(dyn_::dynamic_slice(&x, &[s], &[(&k).into()]));
        (rows, sl)
    };
    let j = make_jaxpr(f)((sz(3), sz(2), sz(1))).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for (n, k, s) in [(3i64, 2i64, 1i64), (5, 4, 3), (4, 3, 7)] {
        let out = run(&j, &[i64s(n), i64s(k), i64s(s)]);
        let xs: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
        let r0: f64 = xs[..n as usize].iter().sum();
        let r1: f64 = xs[n as usize..].iter().sum();
        assert_eq!(out[0].to_f64_vec(), vec![r0, r1]);
        let st = s.clamp(0, 2 * n - k) as usize;
        assert_eq!(out[1].to_f64_vec(), xs[st..st + k as usize].to_vec());
    }
}

#[test]
fn jit_of_a_size_argument_compiles_once() {
    let f = jit(|n: Array| {
        let x = ok_or_raise(dyn_::arange(&n, DType::F64));
        (&x * &x).sum(jnp::All)
    })
    .backend("interpreter");
    for n in [2i64, 5, 9, 1] {
        let got = f.call(sz(n)).unwrap().to_vec::<f64>();
        let want: f64 = (0..n).map(|i| (i * i) as f64).sum();
        assert_eq!(got, vec![want]);
    }
    assert_eq!(f.trace_count(), 1);
    assert_eq!(f.compile_count(), 1);
}

#[test]
fn jit_abstracted_axes_share_one_size_and_one_executable() {
    let f = jit(|(x, y): (Array, Array)| (&x * &y).sum(jnp::All) + x.sin())
        .backend("interpreter")
        .abstracted_axes(&[&[(0, "n")], &[(0, "n")]]);
    let text = print(
        &f.lower((
            Array::from_vec(vec![1.0f64; 3], &[3]),
            Array::from_vec(vec![1.0f64; 3], &[3]),
        ))
        .unwrap(),
    );
    assert!(
        text.starts_with("{ lambda ; a:i64[] b:f64[a] c:f64[a]. let"),
        "{text}"
    );
    for n in [1usize, 4, 7] {
        let xs: Vec<f64> = (0..n).map(|i| 0.3 * i as f64 - 0.5).collect();
        let ys: Vec<f64> = (0..n).map(|i| 1.0 + 0.25 * i as f64).collect();
        let out = f
            .call((
                Array::from_vec(xs.clone(), &[n]),
                Array::from_vec(ys.clone(), &[n]),
            ))
            .unwrap()
            .to_vec::<f64>();
        let dot: f64 = xs.iter().zip(&ys).map(|(x, y)| x * y).sum();
        let want: Vec<f64> = xs.iter().map(|x| dot + x.sin()).collect();
        assert_eq!(out, want);
    }
    assert_eq!(f.trace_count(), 1);
    assert_eq!(f.compile_count(), 1);
    // Sizes of a shared name must agree.
    let e = f
        .call((
            Array::from_vec(vec![1.0f64; 2], &[2]),
            Array::from_vec(vec![1.0f64; 3], &[3]),
        ))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'n'") && e.contains("f64[2]") && e.contains("f64[3]"),
        "{e}"
    );
}

#[test]
fn jit_abstracted_axes_with_distinct_names_and_static_axes() {
    // x: (n, 3), y: (m,): a matrix-vector product over the static axis and
    // a concatenation whose size n + m is computed.
    let f = jit(|(x, y, w): (Array, Array, Array)| {
        let xv = ok_or_raise(jnp::matmul(&x, &w));
        ok_or_raise(dyn_::concatenate(&[xv, y], 0))
    })
    .backend("interpreter")
    .abstracted_axes(&[&[(0, "n")], &[(0, "m")]]);
    for (n, m) in [(2usize, 1usize), (3, 4), (1, 1)] {
        let xs: Vec<f64> = (0..3 * n).map(|i| i as f64 * 0.5).collect();
        let ys: Vec<f64> = (0..m).map(|i| -(i as f64)).collect();
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
        assert_eq!(out.to_vec::<f64>(), want);
    }
    assert_eq!((f.trace_count(), f.compile_count()), (1, 1));
}

#[test]
fn nested_jit_returns_an_array_of_a_new_dynamic_size() {
    let inner = jit(|n: Array| ok_or_raise(dyn_::ones(&[(&n + 1).into()], DType::F64)))
        .backend("interpreter")
        .name("inner");
    let f = |sz: Array| {
        let o = ok_or_raise(inner.call(sz.clone()));
        o.sum(jnp::All) * 2.0
    };
    let j = make_jaxpr(f)(sz(3)).unwrap();
    golden_roundtrip_ok(&j);
    let text = print(&j);
    // The implicit result `b` sizes `c`, so it is named, not `_`.
    assert_eq!(
        text,
        "{ lambda ; a:i64[]. let
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
  in (e,) }"
    );
    for n in [0i64, 4] {
        let out = run(&j, &[i64s(n)]);
        assert_eq!(out[0].to_f64_vec(), vec![2.0 * (n + 1) as f64]);
    }
}

fn golden_roundtrip_ok(j: &jaxon_ir::ClosedJaxpr) {
    check_closed_jaxpr(j).unwrap();
    let text = print(j);
    let parsed = parse_jaxpr(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
}
