//! Transforms of dynamic-shape programs (traced sizes), checked against the
//! same programs run with static shapes: jvp and vmap of elementwise ops,
//! reductions and matmul; grad (the backward pass resolves the linear
//! jaxpr's dimension variables to their values).

use jaxon_ir::{check_closed_jaxpr, eval_closed_jaxpr, DType, HostArray};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{make_jaxpr, Array};
use jaxon_transforms::{grad, jvp, vmap};

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

/// Elementwise ops and reductions.
fn g2(x: &Array) -> Array {
    let y = x.sin() * x;
    y.sum(jnp::All) + (&y * 0.5).max(jnp::All)
}

/// The test function: elementwise ops, a reduction and a matmul.
fn g(x: &Array) -> Array {
    let y = x.sin() * x;
    let s = y.sum(jnp::All);
    &s * ok_or_raise(jnp::matmul(x, x)) + (&y * 0.5).sum(jnp::All)
}

/// The same values the traced programs compute (`iota * 0.37 - 0.8`, with
/// the weakly typed f32 literals), with a static shape.
fn xs(n: usize) -> Vec<f64> {
    let i = Array::from_vec((0..n).map(|i| i as f64).collect::<Vec<_>>(), &[n]);
    (i * 0.37 - 0.8).to_vec::<f64>()
}

#[test]
fn jvp_of_a_dynamic_shape_program_matches_static_shapes() {
    let f = |n: Array| {
        let x = ok_or_raise(dyn_::iota(DType::F64, &n)) * 0.37 - 0.8;
        let t = ok_or_raise(dyn_::iota(DType::F64, &n)).cos();
        let (p, tan) = ok_or_raise(jvp(|x: Array| g(&x), x, t));
        (p, tan)
    };
    let j = make_jaxpr(f)(Array::scalar(3i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for n in [1usize, 4, 9] {
        let out = eval_closed_jaxpr(&j, &[i64s(n as i64)]).unwrap();
        let x = Array::from_vec(xs(n), &[n]);
        let t = Array::from_vec((0..n).map(|i| (i as f64).cos()).collect::<Vec<_>>(), &[n]);
        let (p, tan) = jvp(|x: Array| g(&x), x, t).unwrap();
        let close = |a: &[f64], b: &[f64]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + y.abs()))
        };
        assert!(
            close(&out[0].to_f64_vec(), &p.to_vec::<f64>()),
            "n={n} {:?} {:?} {:?}",
            out,
            p,
            tan
        );
        assert!(close(&out[1].to_f64_vec(), &tan.to_vec::<f64>()), "n={n}");
    }
}

#[test]
fn vmap_over_a_static_batch_of_dynamic_rows_matches_static_shapes() {
    // x: (3, n) built from a traced n; vmap g over the rows.
    let f = |n: Array| {
        let three_n = ok_or_raise(dyn_::mul_sizes(&Size::Const(3), &(&n).into()));
        let flat = ok_or_raise(dyn_::iota(DType::F64, three_n)) * 0.37 - 0.8;
        let x = ok_or_raise(dyn_::reshape(&flat, &[Size::Const(3), (&n).into()]));
        ok_or_raise(vmap(|r: Array| (g2(&r), g(&r))).call(x))
    };
    let j = make_jaxpr(f)(Array::scalar(2i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for n in [1usize, 5] {
        let out = eval_closed_jaxpr(&j, &[i64s(n as i64)]).unwrap();
        assert_eq!(out.len(), 2, "{}", jaxon_ir::print::print_jaxpr(&j.jaxpr));
        let all = xs(3 * n);
        let want: Vec<f64> = (0..3)
            .map(|r| {
                g2(&Array::from_vec(all[r * n..(r + 1) * n].to_vec(), &[n])).to_vec::<f64>()[0]
            })
            .collect();
        let got = out[0].to_f64_vec();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())),
            "{got:?} vs {want:?}"
        );
        // With a matmul per row.
        let want: Vec<f64> = (0..3)
            .map(|r| g(&Array::from_vec(all[r * n..(r + 1) * n].to_vec(), &[n])).to_vec::<f64>()[0])
            .collect();
        let got = out[1].to_f64_vec();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn grad_of_a_dynamic_shape_program_matches_static_shapes() {
    let f = |n: Array| {
        let x = ok_or_raise(dyn_::iota(DType::F64, &n)) * 0.37 - 0.8;
        ok_or_raise(grad(|x: Array| g(&x))(x))
    };
    let j = make_jaxpr(f)(Array::scalar(3i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for n in [1usize, 4, 7] {
        let out = eval_closed_jaxpr(&j, &[i64s(n as i64)]).unwrap();
        let want = grad(|x: Array| g(&x))(Array::from_vec(xs(n), &[n]))
            .unwrap()
            .to_vec::<f64>();
        let got = out[0].to_f64_vec();
        assert!(
            got.len() == want.len()
                && got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())),
            "{got:?} vs {want:?}"
        );
    }
}

/// A for_loop over a dynamic carry that also captures a dynamic array.
fn looped(x: &Array, w: &Array) -> Array {
    ok_or_raise(jaxon_trace::control::for_loop(
        0,
        3,
        1,
        |i, a: Array| a.sin() * &a + w * i.astype(DType::F64),
        x.clone(),
    ))
}

#[test]
fn jvp_of_a_dynamic_for_loop_matches_static_shapes() {
    let f = |n: Array| {
        let x = ok_or_raise(dyn_::iota(DType::F64, &n)) * 0.37 - 0.8;
        let w = ok_or_raise(dyn_::iota(DType::F64, &n)).cos();
        let t = ok_or_raise(dyn_::ones(&[(&n).into()], DType::F64));
        let (p, tan) = ok_or_raise(jvp(
            |(x, w): (Array, Array)| looped(&x, &w),
            (x, w.clone()),
            (t, w),
        ));
        (p, tan)
    };
    let j = make_jaxpr(f)(Array::scalar(3i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    let text = jaxon_ir::print::print_jaxpr(&j.jaxpr);
    assert!(text.contains("for_loop["), "{text}");
    for n in [1usize, 4] {
        let out = eval_closed_jaxpr(&j, &[i64s(n as i64)]).unwrap();
        let x = Array::from_vec(xs(n), &[n]);
        let w = Array::from_vec((0..n).map(|i| (i as f64).cos()).collect::<Vec<_>>(), &[n]);
        let t = Array::from_vec(vec![1.0f64; n], &[n]);
        let (p, tan) = jaxon_trace::with_backend("interpreter", || {
            jvp(
                |(x, w): (Array, Array)| looped(&x, &w),
                (x, w.clone()),
                (t, w),
            )
        })
        .unwrap()
        .unwrap();
        let close = |a: &[f64], b: &[f64]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + y.abs()))
        };
        let n_out = out.len();
        assert!(
            close(&out[n_out - 2].to_f64_vec(), &p.to_vec::<f64>()),
            "n={n}"
        );
        assert!(
            close(&out[n_out - 1].to_f64_vec(), &tan.to_vec::<f64>()),
            "n={n}"
        );
        // Against central differences of the static program.
        let h = 1e-6;
        let xv = xs(n);
        let wv: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
        let eval = |s: f64| {
            let x = Array::from_vec(xv.iter().map(|v| v + s).collect::<Vec<_>>(), &[n]);
            let w = Array::from_vec(wv.iter().map(|v| v * (1.0 + s)).collect::<Vec<_>>(), &[n]);
            jaxon_trace::with_backend("interpreter", || looped(&x, &w))
                .unwrap()
                .to_vec::<f64>()
        };
        let (hi, lo) = (eval(h), eval(-h));
        let fd: Vec<f64> = hi
            .iter()
            .zip(&lo)
            .map(|(a, b)| (a - b) / (2.0 * h))
            .collect();
        let tv = tan.to_vec::<f64>();
        assert!(
            tv.iter()
                .zip(&fd)
                .all(|(a, b)| (a - b).abs() <= 1e-5 * (1.0 + b.abs())),
            "{tv:?} vs {fd:?}"
        );
    }
}

/// One doubling step: the array grows from n to 2n.
fn grow(a: &Array) -> Array {
    ok_or_raise(dyn_::concatenate(&[a * 1.5, a.sin()], 0))
}

#[test]
fn jvp_of_a_dynamic_while_and_cond_matches_unrolled_static_programs() {
    // while len(a) < 20: a = grow(a); then a cond choosing between two
    // results of different sizes.
    let prog = |a: Array, p: &Array| {
        let a = ok_or_raise(jaxon_trace::control::while_loop_with(
            false,
            |a: Array| ok_or_raise(dyn_::size_of(&a, 0)).lt(20),
            |a: Array| grow(&a),
            a,
        ));
        ok_or_raise(jaxon_trace::control::cond(
            p,
            |a: Array| a.cos(),
            |a: Array| grow(&a),
            a,
        ))
    };
    let f = |(n, p): (Array, Array)| {
        let x = ok_or_raise(dyn_::iota(DType::F64, &n)) * 0.37 - 0.8;
        let t = ok_or_raise(dyn_::iota(DType::F64, &n)).cos();
        ok_or_raise(jvp(|x: Array| prog(x, &p), x, t))
    };
    let j = make_jaxpr(f)((Array::scalar(3i64), Array::scalar(true))).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for n in [3usize, 7] {
        for p in [true, false] {
            let out = eval_closed_jaxpr(
                &j,
                &[
                    i64s(n as i64),
                    HostArray::scalar(DType::Bool, p as u8 as f64),
                ],
            )
            .unwrap();
            // The same computation with static shapes: Rust control flow.
            let unrolled = |a: Array| {
                let mut a = a;
                while a.shape()[0] < 20 {
                    a = grow(&a);
                }
                if p {
                    a.cos()
                } else {
                    grow(&a)
                }
            };
            let x = Array::from_vec(xs(n), &[n]);
            let t = Array::from_vec((0..n).map(|i| (i as f64).cos()).collect::<Vec<_>>(), &[n]);
            let (pw, tw) = jaxon_trace::with_backend("interpreter", || jvp(unrolled, x, t))
                .unwrap()
                .unwrap();
            let k = out.len();
            let close = |a: &[f64], b: &[f64]| {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + y.abs()))
            };
            assert!(
                close(&out[k - 2].to_f64_vec(), &pw.to_vec::<f64>()),
                "n={n} p={p}"
            );
            assert!(
                close(&out[k - 1].to_f64_vec(), &tw.to_vec::<f64>()),
                "n={n} p={p}"
            );
        }
    }
}

#[test]
fn vmap_of_dynamic_for_loop_and_while_matches_static_rows() {
    // x, w: (3, n) with a traced n; per row: the for_loop, then a while
    // that grows the row past 10 elements, then its sum.
    let row = |(x, w): (Array, Array)| {
        let y = looped(&x, &w);
        let z = ok_or_raise(jaxon_trace::control::while_loop_with(
            false,
            |a: Array| ok_or_raise(dyn_::size_of(&a, 0)).lt(10),
            |a: Array| grow(&a),
            y,
        ));
        z.sum(jnp::All)
    };
    let f = |n: Array| {
        let three_n = ok_or_raise(dyn_::mul_sizes(&Size::Const(3), &(&n).into()));
        let shape = [Size::Const(3), (&n).into()];
        let flat = ok_or_raise(dyn_::iota(DType::F64, three_n.clone())) * 0.37 - 0.8;
        let x = ok_or_raise(dyn_::reshape(&flat, &shape));
        let w = ok_or_raise(dyn_::reshape(
            &ok_or_raise(dyn_::iota(DType::F64, three_n)).cos(),
            &shape,
        ));
        ok_or_raise(vmap(row).call((x, w)))
    };
    let j = make_jaxpr(f)(Array::scalar(2i64)).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for n in [1usize, 4] {
        let out = eval_closed_jaxpr(&j, &[i64s(n as i64)]).unwrap();
        let all = xs(3 * n);
        let ws: Vec<f64> = (0..3 * n).map(|i| (i as f64).cos()).collect();
        let want: Vec<f64> = (0..3)
            .map(|r| {
                let x = Array::from_vec(all[r * n..(r + 1) * n].to_vec(), &[n]);
                let w = Array::from_vec(ws[r * n..(r + 1) * n].to_vec(), &[n]);
                let mut a = jaxon_trace::with_backend("interpreter", || looped(&x, &w)).unwrap();
                while a.shape()[0] < 10 {
                    a = grow(&a);
                }
                a.sum(jnp::All).to_vec::<f64>()[0]
            })
            .collect();
        let got = out[0].to_f64_vec();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())),
            "{got:?} vs {want:?}"
        );
    }
}
