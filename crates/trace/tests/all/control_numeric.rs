//! Control flow computes the right numbers: eagerly and under `jit`, on
//! seeded random inputs, against plain Rust loops in f64.

use jaxon_trace::{cond, fori_loop, jit, scan, switch, while_loop, Array};
use std::cell::Cell;

/// A small deterministic generator (xorshift) for test inputs.
fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

fn close(a: &[f32], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!(
            ((*x as f64) - y).abs() <= 1e-4 * (1.0 + y.abs()),
            "{a:?} vs {b:?}"
        );
    }
}

#[test]
fn cond_eager_runs_only_the_taken_branch_and_jit_agrees() {
    let x = rand_vec(5, 1);
    let xa = Array::from_vec(x.clone(), &[5]);
    for &p in &[true, false] {
        let calls = Cell::new(0);
        let out = cond(
            &Array::scalar(p),
            |v: Array| {
                calls.set(calls.get() + 1);
                v.sin() * 2.0
            },
            |v: Array| v.exp() - 1.0,
            xa.clone(),
        )
        .unwrap();
        assert_eq!(calls.get(), usize::from(p));
        let want: Vec<f64> = x
            .iter()
            .map(|&v| {
                let v = v as f64;
                if p {
                    v.sin() * 2.0
                } else {
                    v.exp() - 1.0
                }
            })
            .collect();
        close(&out.to_vec::<f32>(), &want);
        let f = jit(|(p, v): (Array, Array)| {
            cond(&p, |v: Array| v.sin() * 2.0, |v: Array| v.exp() - 1.0, v).unwrap()
        });
        close(
            &f.call((Array::scalar(p), xa.clone()))
                .unwrap()
                .to_vec::<f32>(),
            &want,
        );
    }
}

#[test]
fn switch_clamps_the_index_eagerly_and_under_jit() {
    let x = rand_vec(4, 2);
    let xa = Array::from_vec(x.clone(), &[4]);
    let b0 = |v: Array| v * 3.0;
    let b1 = |v: Array| v.cos();
    let b2 = |v: Array| v.square() - 0.5;
    let refs: [fn(f64) -> f64; 3] = [|v| v * 3.0, |v| v.cos(), |v| v * v - 0.5];
    let f = jit(|(i, v): (Array, Array)| switch(&i, &[&b0, &b1, &b2], v).unwrap());
    for i in [-3, 0, 1, 2, 7] {
        let want: Vec<f64> = x
            .iter()
            .map(|&v| refs[i.clamp(0, 2) as usize](v as f64))
            .collect();
        let eager = switch(&Array::scalar(i), &[&b0, &b1, &b2], xa.clone()).unwrap();
        close(&eager.to_vec::<f32>(), &want);
        close(
            &f.call((Array::scalar(i), xa.clone()))
                .unwrap()
                .to_vec::<f32>(),
            &want,
        );
    }
    assert_eq!(f.trace_count(), 1);
}

#[test]
fn cond_with_captured_constants_under_jit() {
    let c = rand_vec(3, 3);
    let ca = Array::from_vec(c.clone(), &[3]);
    let x = rand_vec(3, 4);
    let f = jit(|(s, v): (Array, Array)| {
        cond(&s.gt(0.0), |v: Array| &v * &ca + &s, |v: Array| v - &ca, v).unwrap()
    });
    for s in [0.75f32, -0.5] {
        let want: Vec<f64> = (0..3)
            .map(|k| {
                let (v, cc) = (x[k] as f64, c[k] as f64);
                if s > 0.0 {
                    v * cc + s as f64
                } else {
                    v - cc
                }
            })
            .collect();
        let out = f
            .call((Array::scalar(s), Array::from_vec(x.clone(), &[3])))
            .unwrap();
        close(&out.to_vec::<f32>(), &want);
    }
}

#[test]
fn while_loop_matches_a_rust_loop() {
    // Collatz-like iteration on a float carry with a step counter.
    let x0 = rand_vec(1, 5)[0].abs() + 0.1;
    let cond_fn = |(i, y): (Array, Array)| i.lt(50).logical_and(y.lt(100.0));
    let body_fn = |(i, y): (Array, Array)| (i + 1, y * 1.5 + 0.25);
    let (mut i, mut y) = (0i32, x0 as f64);
    while i < 50 && y < 100.0 {
        i += 1;
        y = y * 1.5 + 0.25;
    }
    let (ei, ey) = while_loop(cond_fn, body_fn, (Array::weak(0), Array::scalar(x0))).unwrap();
    assert_eq!(ei.item::<i32>(), i);
    close(&[ey.item::<f32>()], &[y]);
    let f = jit(|y0: Array| while_loop(cond_fn, body_fn, (Array::weak(0), y0)).unwrap());
    let (ji, jy) = f.call(Array::scalar(x0)).unwrap();
    assert_eq!(ji.item::<i32>(), i);
    close(&[jy.item::<f32>()], &[y]);
}

#[test]
fn fori_loop_static_and_traced_bounds() {
    let x = rand_vec(6, 6);
    let xa = Array::from_vec(x.clone(), &[6]);
    let body = |i: Array, c: Array| c * 0.5 + i;
    let rust = |lo: i32, hi: i32| -> Vec<f64> {
        x.iter()
            .map(|&v| {
                let mut c = v as f64;
                for i in lo..hi {
                    c = c * 0.5 + i as f64;
                }
                c
            })
            .collect()
    };
    close(
        &fori_loop(2, 9, body, xa.clone()).unwrap().to_vec::<f32>(),
        &rust(2, 9),
    );
    close(
        &fori_loop(4, 1, body, xa.clone()).unwrap().to_vec::<f32>(),
        &rust(4, 1),
    );
    let f = jit(|(n, v): (Array, Array)| fori_loop(1, &n, body, v).unwrap());
    for n in [0, 3, 7] {
        let out = f.call((Array::scalar(n), xa.clone())).unwrap();
        close(&out.to_vec::<f32>(), &rust(1, n));
    }
    let g = jit(|v: Array| fori_loop(0, 5, body, v).unwrap());
    close(&g.call(xa.clone()).unwrap().to_vec::<f32>(), &rust(0, 5));
}

#[test]
fn scan_carries_and_stacks_forward_and_reverse() {
    let n = 7;
    let xs1 = rand_vec(n * 2, 7);
    let xs2 = rand_vec(n, 8);
    let w = rand_vec(2, 9);
    let wa = Array::from_vec(w.clone(), &[2]);
    let body = |(acc, m): (Array, Array), (a, b): (Array, Array)| {
        let acc2 = &acc + &a * &b + &wa;
        let m2 = m.maximum(b.clone());
        ((acc2, m2), (acc * 2.0, b))
    };
    for reverse in [false, true] {
        let order: Vec<usize> = if reverse {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        let mut acc = [0.0f64; 2];
        let mut m = -10.0f64;
        let mut ys = vec![[0.0f64; 2]; n];
        for &t in &order {
            let b = xs2[t] as f64;
            ys[t] = [acc[0] * 2.0, acc[1] * 2.0];
            for k in 0..2 {
                acc[k] += xs1[t * 2 + k] as f64 * b + w[k] as f64;
            }
            m = m.max(b);
        }
        let init = (
            Array::from_vec(vec![0.0f32; 2], &[2]),
            Array::scalar(-10.0f32),
        );
        let xs = (
            Array::from_vec(xs1.clone(), &[n, 2]),
            Array::from_vec(xs2.clone(), &[n]),
        );
        let check = |((acc_o, m_o), (ys_o, bs_o)): ((Array, Array), (Array, Array))| {
            close(&acc_o.to_vec::<f32>(), &acc);
            close(&[m_o.item::<f32>()], &[m]);
            close(&ys_o.to_vec::<f32>(), &ys.concat());
            // The forwarded `xs` slice comes back as the `xs` leaf itself.
            assert_eq!(bs_o.to_vec::<f32>(), xs2);
        };
        check(scan(body, init.clone(), xs.clone(), None, reverse).unwrap());
        let f = jit(|(init, xs): ((Array, Array), (Array, Array))| {
            scan(body, init, xs, None, reverse).unwrap()
        });
        check(f.call((init, xs)).unwrap());
    }
}

#[test]
fn nested_control_flow_under_jit() {
    // A scan whose body holds a cond and a fori_loop, against Rust.
    let xs = rand_vec(5, 10);
    let body = |c: Array, x: Array| {
        let c2 = cond(
            &x.gt(0.0),
            |(c, x): (Array, Array)| c + x,
            |(c, x): (Array, Array)| fori_loop(0, 3, |_, a: Array| a * 0.5, c).unwrap() - x,
            (c.clone(), x),
        )
        .unwrap();
        (c2.clone(), c2)
    };
    let mut c = 1.0f64;
    let mut ys = Vec::new();
    for &x in &xs {
        let x = x as f64;
        c = if x > 0.0 { c + x } else { c * 0.125 - x };
        ys.push(c);
    }
    let f = jit(|xs: Array| scan(body, Array::scalar(1.0f32), xs, None, false).unwrap());
    let (co, yo) = f.call(Array::from_vec(xs.clone(), &[5])).unwrap();
    close(&[co.item::<f32>()], &[c]);
    close(&yo.to_vec::<f32>(), &ys);
    let (co, yo) = scan(
        body,
        Array::scalar(1.0f32),
        Array::from_vec(xs, &[5]),
        None,
        false,
    )
    .unwrap();
    close(&[co.item::<f32>()], &[c]);
    close(&yo.to_vec::<f32>(), &ys);
}
