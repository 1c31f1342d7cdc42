//! `lax.map`, `lax.associative_scan`, `lax.custom_root` and
//! `lax.conv_transpose` against oracles: map against a loop of calls,
//! associative_scan against cumsum/cumprod and sequential loops of
//! non-commutative operations, custom_root's values and derivatives
//! against the closed form and central differences in f64, conv_transpose
//! against the input gradient of a convolution and hand-computed values.

use jaxon_trace::lax::{self, ConvOptions, Padding};
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{catch, jit, Array};
use jaxon_transforms::lax_fns::{custom_root, map};
use jaxon_transforms::{grad, jvp, vjp, vmap};

fn rand(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}\n{got:?}\n{want:?}"
        );
    }
}

fn row(x: &Array, i: usize) -> Array {
    let s = x.shape();
    let mut lo = vec![0; s.len()];
    let mut hi = s.clone();
    lo[0] = i;
    hi[0] = i + 1;
    let r = lax::slice(x, &lo, &hi, None).unwrap();
    lax::reshape(&r, &s[1..]).unwrap()
}

// ------------------------------------------------------------------ map --

fn body((a, b): (Array, Array)) -> (Array, Array) {
    let s = a.sin() * b.sum(All);
    (s, &b * 2.0)
}

#[test]
fn map_matches_a_loop_of_calls_for_every_batch_size() {
    let n = 7;
    let a = Array::from_vec(rand(n * 3, 1, -2.0, 2.0), &[n, 3]);
    let b = Array::from_vec(rand(n * 2, 2, -2.0, 2.0), &[n, 2]);
    let (want_s, want_t): (Vec<Array>, Vec<Array>) =
        (0..n).map(|i| body((row(&a, i), row(&b, i)))).unzip();
    let want_s = jnp::stack(&want_s, 0).unwrap().to_vec::<f64>();
    let want_t = jnp::stack(&want_t, 0).unwrap().to_vec::<f64>();
    for bs in [None, Some(1), Some(2), Some(3), Some(7), Some(10)] {
        let (s, t) = map(body, (a.clone(), b.clone()), bs).unwrap();
        assert_eq!(s.shape(), [n, 3], "batch_size {bs:?}");
        assert_eq!(t.shape(), [n, 2], "batch_size {bs:?}");
        close(&s.to_vec::<f64>(), &want_s, 1e-14, &format!("map {bs:?}"));
        close(&t.to_vec::<f64>(), &want_t, 1e-14, &format!("map {bs:?}"));
        // Staged under jit, the same values.
        let (sj, _) = jit(move |xy: (Array, Array)| map(body, xy, bs).unwrap())
            .call((a.clone(), b.clone()))
            .unwrap();
        close(
            &sj.to_vec::<f64>(),
            &want_s,
            1e-14,
            &format!("jit map {bs:?}"),
        );
    }
}

#[test]
fn map_differentiates_like_the_loop() {
    let n = 5;
    let a = Array::from_vec(rand(n * 3, 3, -2.0, 2.0), &[n, 3]);
    let b = Array::from_vec(rand(n * 2, 4, -2.0, 2.0), &[n, 2]);
    let looped = |(a, b): (Array, Array)| {
        let mut acc = Array::scalar(0.0f64);
        for i in 0..n {
            let (s, t) = body((row(&a, i), row(&b, i)));
            acc = acc + s.sum(All) * 0.5 + t.sum(All);
        }
        acc
    };
    let (ga, gb) = grad(looped)((a.clone(), b.clone())).unwrap();
    for bs in [None, Some(2)] {
        let mapped = move |xy: (Array, Array)| {
            let (s, t) = map(body, xy, bs).unwrap();
            s.sum(All) * 0.5 + t.sum(All)
        };
        let (ma, mb) = grad(mapped)((a.clone(), b.clone())).unwrap();
        close(&ma.to_vec::<f64>(), &ga.to_vec::<f64>(), 1e-13, "grad a");
        close(&mb.to_vec::<f64>(), &gb.to_vec::<f64>(), 1e-13, "grad b");
    }
}

#[test]
fn map_rejects_bad_input() {
    let x = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let y = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    assert!(catch(|| map(|x: Array| x, x.clone(), Some(0)))
        .unwrap()
        .is_err());
    assert!(catch(|| map(|xy: (Array, Array)| xy, (x, y), Some(1)))
        .unwrap()
        .is_err());
}

// ------------------------------------------------------- associative_scan --

#[test]
fn associative_scan_matches_cumsum_and_cumprod() {
    for n in 1..=9 {
        let x = Array::from_vec(rand(3 * n, 10 + n as u64, 0.5, 1.5), &[3, n]);
        for reverse in [false, true] {
            let s =
                lax::associative_scan(|a: Array, b: Array| &a + &b, x.clone(), reverse, 1).unwrap();
            let p =
                lax::associative_scan(|a: Array, b: Array| &a * &b, x.clone(), reverse, 1).unwrap();
            let flip = |y: &Array| lax::rev(y, &[1]).unwrap();
            let src = if reverse { flip(&x) } else { x.clone() };
            let (mut ws, mut wp) = (
                jnp::cumsum(&src, Some(1)).unwrap(),
                jnp::cumprod(&src, Some(1)).unwrap(),
            );
            if reverse {
                ws = flip(&ws);
                wp = flip(&wp);
            }
            let what = format!("n={n} reverse={reverse}");
            close(&s.to_vec::<f64>(), &ws.to_vec::<f64>(), 1e-14, &what);
            close(&p.to_vec::<f64>(), &wp.to_vec::<f64>(), 1e-14, &what);
        }
    }
    // Integers and bools interleave exactly too.
    let i = Array::from_vec((1..=6).collect::<Vec<i32>>(), &[6]);
    let s = lax::associative_scan(|a: Array, b: Array| &a + &b, i, false, 0).unwrap();
    assert_eq!(s.to_vec::<i32>(), [1, 3, 6, 10, 15, 21]);
    let m = Array::from_vec(vec![false, true, false, false, true], &[5]);
    let any = lax::associative_scan(
        |a: Array, b: Array| lax::bitwise_or(&a, &b).unwrap(),
        m,
        false,
        0,
    )
    .unwrap();
    assert_eq!(any.to_vec::<bool>(), [false, true, true, true, true]);
}

fn matmul2(a: &[f64], b: &[f64]) -> [f64; 4] {
    [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
    ]
}

#[test]
fn associative_scan_of_matrix_products_keeps_the_order() {
    for n in [1, 2, 3, 5, 8, 11] {
        let v = rand(4 * n, 40 + n as u64, -1.5, 1.5);
        let mats = Array::from_vec(v.clone(), &[n, 2, 2]);
        for reverse in [false, true] {
            let got = lax::associative_scan(
                |a: Array, b: Array| jnp::matmul(&a, &b).unwrap(),
                mats.clone(),
                reverse,
                0,
            )
            .unwrap()
            .to_vec::<f64>();
            // Sequential: forward P_i = M_0 .. M_i; reverse combines from
            // the end, f(later, earlier): P_i = M_{n-1} .. M_i.
            let m = |i: usize| &v[4 * i..4 * i + 4];
            let mut want = vec![0.0; 4 * n];
            let order: Vec<usize> = if reverse {
                (0..n).rev().collect()
            } else {
                (0..n).collect()
            };
            let mut acc: [f64; 4] = m(order[0]).try_into().unwrap();
            want[4 * order[0]..4 * order[0] + 4].copy_from_slice(&acc);
            for &i in &order[1..] {
                acc = matmul2(&acc, m(i));
                want[4 * i..4 * i + 4].copy_from_slice(&acc);
            }
            close(&got, &want, 1e-12, &format!("n={n} reverse={reverse}"));
        }
    }
}

#[test]
fn associative_scan_over_a_pytree_composes_affine_maps() {
    // (a, b) is x -> a x + b; composing first (a1, b1) then (a2, b2) gives
    // (a1 a2, a2 b1 + b2): the linear recurrence x_t = a_t x_{t-1} + b_t.
    let n = 10;
    let (av, bv) = (rand(n, 50, -1.2, 1.2), rand(n, 51, -1.0, 1.0));
    let elems = (
        Array::from_vec(av.clone(), &[n]),
        Array::from_vec(bv.clone(), &[n]),
    );
    let compose = |(a1, b1): (Array, Array), (a2, b2): (Array, Array)| (&a1 * &a2, &a2 * &b1 + &b2);
    let (_, xs) = lax::associative_scan(compose, elems.clone(), false, 0).unwrap();
    let mut x = 0.0;
    let want: Vec<f64> = (0..n)
        .map(|t| {
            x = av[t] * x + bv[t];
            x
        })
        .collect();
    close(&xs.to_vec::<f64>(), &want, 1e-13, "affine recurrence");
    // Its gradient is that of the sequential recurrence.
    let seq = |(a, b): (Array, Array)| {
        let mut x = Array::scalar(0.0f64);
        let mut total = Array::scalar(0.0f64);
        for t in 0..n {
            x = row(&a, t) * &x + row(&b, t);
            total = total + &x;
        }
        total
    };
    let par = move |ab: (Array, Array)| {
        let (_, xs) = lax::associative_scan(compose, ab, false, 0).unwrap();
        xs.sum(All)
    };
    let (ga, gb) = grad(seq)(elems.clone()).unwrap();
    let (pa, pb) = grad(par)(elems).unwrap();
    close(&pa.to_vec::<f64>(), &ga.to_vec::<f64>(), 1e-12, "grad a");
    close(&pb.to_vec::<f64>(), &gb.to_vec::<f64>(), 1e-12, "grad b");
}

#[test]
fn associative_scan_rejects_bad_input() {
    let x = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let y = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let add = |a: Array, b: Array| &a + &b;
    assert!(lax::associative_scan(add, x.clone(), false, 1).is_err());
    let pair = |(a, b): (Array, Array), (c, d): (Array, Array)| (&a + &c, &b + &d);
    assert!(lax::associative_scan(pair, (x, y), false, 0).is_err());
}

// ------------------------------------------------------------ custom_root --

fn newton(f: &dyn Fn(Array) -> Array, x0: Array) -> Array {
    // Newton with a derivative by central differences of f itself: the
    // solver is opaque to differentiation (custom_root never looks in).
    let mut x = x0;
    for _ in 0..40 {
        let h = 1e-6;
        let d = (f(&x + h) - f(&x - h)) / (2.0 * h);
        x = &x - &(f(x.clone()) / d);
    }
    x
}

fn scalar_solve(g: &dyn Fn(Array) -> Array, y: Array) -> Array {
    let one = jnp::ones_like(&y).unwrap();
    &y / &g(one)
}

/// The root of x^3 + a x - b per element (a > 0: one real root).
fn cubic_root(a: &Array, b: &Array) -> Array {
    let guess = jnp::ones_like(b).unwrap();
    let (a, b) = (a.clone(), b.clone());
    let f = move |x: Array| &x * &x * &x + &a * &x - &b;
    custom_root(f, guess, &newton, &scalar_solve).unwrap()
}

#[test]
fn custom_root_sqrt_value_and_gradient() {
    let sqrt = |a: Array| {
        let f = |x: Array| &x * &x - &a;
        custom_root(f, Array::scalar(1.0f64), &newton, &scalar_solve).unwrap()
    };
    for a in [0.5f64, 2.0, 9.0] {
        let x = sqrt(Array::scalar(a)).item::<f64>();
        assert!((x - a.sqrt()).abs() < 1e-12, "sqrt({a}) = {x}");
        let g = grad(sqrt)(Array::scalar(a)).unwrap().item::<f64>();
        let h = 1e-5;
        let fd = (sqrt(Array::scalar(a + h)).item::<f64>()
            - sqrt(Array::scalar(a - h)).item::<f64>())
            / (2.0 * h);
        assert!((g - 0.5 / a.sqrt()).abs() < 1e-10, "grad sqrt({a}) = {g}");
        assert!((g - fd).abs() < 1e-7, "grad {g} vs central {fd}");
        // Under jit, and the second derivative through the implicit rule.
        let gj = jit(move |a: Array| grad(sqrt)(a).unwrap())
            .call(Array::scalar(a))
            .unwrap()
            .item::<f64>();
        assert!((gj - g).abs() < 1e-12, "jit grad {gj} vs {g}");
    }
}

#[test]
fn custom_root_vector_derivatives_match_central_differences() {
    let n = 4;
    let a = Array::from_vec(rand(n, 60, 0.5, 2.0), &[n]);
    let b = Array::from_vec(rand(n, 61, -2.0, 2.0), &[n]);
    let x = cubic_root(&a, &b).to_vec::<f64>();
    let (av, bv) = (a.to_vec::<f64>(), b.to_vec::<f64>());
    for i in 0..n {
        let r = x[i] * x[i] * x[i] + av[i] * x[i] - bv[i];
        assert!(r.abs() < 1e-12, "residual {r}");
    }
    // jvp in a random direction vs central differences.
    let (ta, tb) = (
        Array::from_vec(rand(n, 62, -1.0, 1.0), &[n]),
        Array::from_vec(rand(n, 63, -1.0, 1.0), &[n]),
    );
    let f = |(a, b): (Array, Array)| cubic_root(&a, &b);
    let (_, t) = jvp(f, (a.clone(), b.clone()), (ta.clone(), tb.clone())).unwrap();
    let h = 1e-6;
    let shift = |s: f64| {
        let a2 = &a + &(&ta * s);
        let b2 = &b + &(&tb * s);
        cubic_root(&a2, &b2).to_vec::<f64>()
    };
    let (p, m) = (shift(h), shift(-h));
    let fd: Vec<f64> = p.iter().zip(&m).map(|(p, m)| (p - m) / (2.0 * h)).collect();
    close(&t.to_vec::<f64>(), &fd, 1e-7, "jvp vs central differences");
    // Closed form: dx = (db - x da) / (3x^2 + a).
    let want: Vec<f64> = (0..n)
        .map(|i| {
            (tb.to_vec::<f64>()[i] - x[i] * ta.to_vec::<f64>()[i]) / (3.0 * x[i] * x[i] + av[i])
        })
        .collect();
    close(&t.to_vec::<f64>(), &want, 1e-10, "jvp vs implicit formula");
    // Reverse mode agrees with forward mode: <ct, J t> == <J^T ct, t>.
    let ct = Array::from_vec(rand(n, 64, -1.0, 1.0), &[n]);
    let (_, pb) = vjp(f, (a.clone(), b.clone())).unwrap();
    let (ga, gb) = pb.call(ct.clone()).unwrap();
    let lhs: f64 = (&ct * &t).sum(All).item();
    let rhs: f64 = ((&ga * &ta).sum(All) + (&gb * &tb).sum(All)).item();
    assert!((lhs - rhs).abs() < 1e-10, "{lhs} vs {rhs}");
    // vmap over a batch of problems matches solving each.
    let a2 = Array::from_vec(rand(3 * n, 65, 0.5, 2.0), &[3, n]);
    let b2 = Array::from_vec(rand(3 * n, 66, -2.0, 2.0), &[3, n]);
    let batched = vmap(f).call((a2.clone(), b2.clone())).unwrap();
    let looped: Vec<Array> = (0..3)
        .map(|i| cubic_root(&row(&a2, i), &row(&b2, i)))
        .collect();
    close(
        &batched.to_vec::<f64>(),
        &jnp::stack(&looped, 0).unwrap().to_vec::<f64>(),
        1e-12,
        "vmap",
    );
}

#[test]
fn custom_root_checks_structures() {
    let f = |x: Array| &x * &x - 2.0;
    let bad = |_: &dyn Fn(Array) -> Array, x: Array| jnp::stack(&[x.clone(), x], 0).unwrap();
    let r = catch(|| custom_root(f, Array::scalar(1.0f64), &bad, &scalar_solve)).unwrap();
    assert!(r.is_err());
}

// --------------------------------------------------------- conv_transpose --

fn nhwc(n: usize, h: usize, w: usize, c: usize, seed: u64) -> Array {
    Array::from_vec(rand(n * h * w * c, seed, -1.0, 1.0), &[n, h, w, c])
}

fn layouts() -> Option<(String, String, String)> {
    Some(("NHWC".into(), "HWIO".into(), "NHWC".into()))
}

#[test]
fn conv_transpose_is_the_input_gradient_of_conv() {
    // (input size, kernel, stride, padding) with the transposed output
    // size equal to the input's.
    for (size, k, s, pad) in [
        (8, 3, 2, Padding::Same),
        (6, 2, 2, Padding::Same),
        (7, 3, 2, Padding::Valid),
        (5, 3, 1, Padding::Valid),
        (9, 3, 3, Padding::Valid),
    ] {
        let x = nhwc(2, size, size, 3, 70);
        let w = Array::from_vec(rand(k * k * 3 * 4, 71, -1.0, 1.0), &[k, k, 3, 4]);
        let conv = |x: Array| {
            lax::conv_general_dilated(
                &x,
                &w,
                &[s, s],
                pad.clone(),
                ConvOptions {
                    dimension_numbers: layouts(),
                    ..ConvOptions::default()
                },
            )
            .unwrap()
        };
        let (y, pb) = vjp(conv, x.clone()).unwrap();
        let ys = y.shape();
        let ct = nhwc(ys[0], ys[1], ys[2], ys[3], 72);
        let want = pb.call(ct.clone()).unwrap();
        let got =
            lax::conv_transpose(&ct, &w, &[s, s], pad.clone(), None, layouts(), true).unwrap();
        assert_eq!(got.shape(), x.shape(), "{size} {k} {s} {pad:?}");
        close(
            &got.to_vec::<f64>(),
            &want.to_vec::<f64>(),
            1e-12,
            &format!("{size} {k} {s} {pad:?}"),
        );
    }
}

#[test]
fn conv_transpose_small_cases_by_hand() {
    // 1-D, NHC/HIO: [1, 2, 3] dilated by 2 and padded (1, 1) is
    // [0 1 0 2 0 3 0]; correlating with [1, 2] gives [2 1 4 2 6 3], and
    // with the flipped kernel (transpose_kernel) [1 2 2 4 3 6].
    let x = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[1, 3, 1]);
    let k = Array::from_vec(vec![1.0f64, 2.0], &[2, 1, 1]);
    let y = lax::conv_transpose(&x, &k, &[2], Padding::Valid, None, None, false).unwrap();
    assert_eq!(y.shape(), [1, 6, 1]);
    assert_eq!(y.to_vec::<f64>(), [2.0, 1.0, 4.0, 2.0, 6.0, 3.0]);
    let y = lax::conv_transpose(&x, &k, &[2], Padding::Valid, None, None, true).unwrap();
    assert_eq!(y.to_vec::<f64>(), [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]);
    // SAME with stride 2 and k = 2: pads (1, 1) of the length-2 total,
    // output length 3 * 2 = 6.
    let y = lax::conv_transpose(&x, &k, &[2], Padding::Same, None, None, true).unwrap();
    assert_eq!(y.to_vec::<f64>(), [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]);
    // A 3-wide kernel, stride 1, VALID: a full convolution, output 3 + 2.
    let k3 = Array::from_vec(vec![1.0f64, 10.0, 100.0], &[3, 1, 1]);
    let y = lax::conv_transpose(&x, &k3, &[1], Padding::Valid, None, None, false).unwrap();
    assert_eq!(y.to_vec::<f64>(), [100.0, 210.0, 321.0, 32.0, 3.0]);
    // Explicit padding passes through; kernel dilation widens the window.
    let y = lax::conv_transpose(
        &x,
        &k,
        &[1],
        Padding::Explicit(vec![(0, 0)]),
        Some(vec![2]),
        None,
        false,
    )
    .unwrap();
    // x[i] + 2 x[i + 2] for the one full window.
    assert_eq!(y.to_vec::<f64>(), [7.0]);
    // Bad arguments are errors.
    assert!(lax::conv_transpose(&x, &k, &[0], Padding::Valid, None, None, false).is_err());
    assert!(lax::conv_transpose(&x, &k, &[1], Padding::SameLower, None, None, false).is_err());
    let k4 = Array::from_vec(vec![1.0f64], &[1, 1, 1, 1]);
    assert!(lax::conv_transpose(&x, &k4, &[1], Padding::Valid, None, None, false).is_err());
}
