//! `while_loop` and `cond` on dynamic shapes (the seed-003 bind algorithm):
//! an array that doubles until its length passes a bound, carries that keep
//! or break the sharing of dimensions, and branches returning arrays of
//! different dynamic sizes.

use jaxon_ir::{check_closed_jaxpr, eval_closed_jaxpr, parse_jaxpr, DType, HostArray};
use jaxon_trace::control::{cond, while_loop, while_loop_with};
use jaxon_trace::dynshape::{self as dyn_};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::{jit, make_jaxpr, Array};

fn print(j: &jaxon_ir::ClosedJaxpr) -> String {
    jaxon_ir::print::print_jaxpr(&j.jaxpr)
}

fn roundtrip(j: &jaxon_ir::ClosedJaxpr) {
    check_closed_jaxpr(j).unwrap();
    let text = print(j);
    let parsed = parse_jaxpr(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
    jaxon_ir::check_jaxpr(&parsed).unwrap();
}

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

fn iota(n: &Array) -> Array {
    ok_or_raise(dyn_::iota(DType::F64, n))
}

#[test]
fn while_loop_doubles_an_array_until_its_length_passes_a_bound() {
    // while len(a) < 100: a = concatenate([a, a + len(a)])
    let f = |sz: Array| {
        ok_or_raise(while_loop_with(
            false,
            |a: Array| ok_or_raise(dyn_::size_of(&a, 0)).lt(100),
            |a: Array| {
                let n = ok_or_raise(dyn_::size_of(&a, 0)).astype(DType::F64);
                ok_or_raise(dyn_::concatenate(&[a.clone(), &a + n], 0))
            },
            iota(&sz),
        ))
    };
    let j = make_jaxpr(f)(Array::scalar(3i64)).unwrap();
    roundtrip(&j);
    let text = print(&j);
    assert!(text.contains("while["), "{text}");
    for n in [1i64, 3, 7, 100, 120] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        let mut len = n;
        while len < 100 {
            len *= 2;
        }
        assert_eq!(out[0].data().get_i64(0), len);
        // Doubling by appending a + len(a) to a = iota(n) gives iota(len).
        let want: Vec<f64> = (0..len).map(|i| i as f64).collect();
        assert_eq!(out[1].to_f64_vec(), want);
    }
}

#[test]
fn while_loop_with_shared_dimension_keeps_its_size() {
    // Two carries of one dynamic size, preserve_dimensions (the default of
    // while_loop on dynamic shapes): one implicit carry.
    let f = jit(|sz: Array| {
        let a = iota(&sz);
        let (x, y, _) = ok_or_raise(while_loop(
            |(_x, _y, k): (Array, Array, Array)| k.lt(5),
            |(x, y, k): (Array, Array, Array)| (&x + &y, &y * 2.0, k + 1),
            (a.clone(), a, Array::scalar(0i64)),
        ));
        (x, y)
    })
    .backend("interpreter");
    for n in [2i64, 6] {
        let (x, y) = f.call(Array::scalar(n)).unwrap();
        // y_k = 2^k a; x_5 = a (1 + 1 + 2 + 4 + 8 + 16) = 32 a
        let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
        assert_eq!(
            x.to_vec::<f64>(),
            a.iter().map(|v| 32.0 * v).collect::<Vec<_>>()
        );
        assert_eq!(
            y.to_vec::<f64>(),
            a.iter().map(|v| 32.0 * v).collect::<Vec<_>>()
        );
    }
    assert_eq!((f.trace_count(), f.compile_count()), (1, 1));
}

#[test]
fn while_loop_error_names_the_result_breaking_the_sharing() {
    let f = |sz: Array| {
        let a = iota(&sz);
        ok_or_raise(while_loop(
            |(x, _y): (Array, Array)| x.sum(jaxon_trace::numpy::All).lt(10.0),
            |(x, _y): (Array, Array)| {
                let z = ok_or_raise(dyn_::concatenate(&[x.clone(), x.clone()], 0));
                (x, z)
            },
            (a.clone(), a),
        ))
    };
    let e = make_jaxpr(f)(Array::scalar(3i64)).unwrap_err().to_string();
    assert!(
        e.contains("result 1 breaks the arguments' dimension sharing"),
        "{e}"
    );
}

#[test]
fn cond_branches_of_different_dynamic_sizes_get_a_fresh_dimension() {
    // p ? a (size n) : concatenate(a, a) (size n + n)
    let f = |(sz, p): (Array, Array)| {
        let a = iota(&sz);
        ok_or_raise(cond(
            &p,
            |x: Array| x * 2.0,
            |x: Array| ok_or_raise(dyn_::concatenate(&[x.clone(), x], 0)),
            a,
        ))
    };
    let j = make_jaxpr(f)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    roundtrip(&j);
    let text = print(&j);
    assert!(text.contains("cond["), "{text}");
    for n in [1i64, 4] {
        for p in [true, false] {
            let out = eval_closed_jaxpr(
                &j,
                &[i64s(n), HostArray::scalar(DType::Bool, p as u8 as f64)],
            )
            .unwrap();
            let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let want: Vec<f64> = if p {
                a.iter().map(|v| v * 2.0).collect()
            } else {
                a.iter().chain(&a).copied().collect()
            };
            let got = out.last().unwrap();
            assert_eq!(got.to_f64_vec(), want, "n={n} p={p}");
        }
    }
}

#[test]
fn cond_keeps_an_input_dimension_both_branches_agree_on() {
    let f = |(sz, p): (Array, Array)| {
        let a = iota(&sz);
        let b = ok_or_raise(cond(&p, |x: Array| x.sin(), |x: Array| x.cos(), a.clone()));
        &a + &b
    };
    let j = make_jaxpr(f)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    roundtrip(&j);
    for p in [true, false] {
        let out = eval_closed_jaxpr(
            &j,
            &[i64s(5), HostArray::scalar(DType::Bool, p as u8 as f64)],
        )
        .unwrap();
        let want: Vec<f64> = (0..5)
            .map(|i| {
                i as f64
                    + if p {
                        (i as f64).sin()
                    } else {
                        (i as f64).cos()
                    }
            })
            .collect();
        assert_eq!(out[0].to_f64_vec(), want);
    }
}

#[test]
fn while_loop_body_adding_a_captured_array_shares_its_dimension() {
    // Seed 000's "Caveats" program with a while loop: `a + a0` in the body,
    // a0 captured, the carry starting from a0.
    let f = |sz: Array| {
        let a0 = iota(&sz);
        let (a, _) = ok_or_raise(while_loop(
            |(_a, k): (Array, Array)| k.lt(3),
            |(a, k): (Array, Array)| (&a + &a0, k + 1),
            (a0.clone(), Array::scalar(0i32)),
        ));
        &a + &a0
    };
    let j = make_jaxpr(f)(Array::scalar(3i64)).unwrap();
    roundtrip(&j);
    for n in [1i64, 5] {
        let out = eval_closed_jaxpr(&j, &[i64s(n)]).unwrap();
        let want: Vec<f64> = (0..n).map(|i| 5.0 * i as f64).collect();
        assert_eq!(out[0].to_f64_vec(), want);
    }
}
