//! `lax::map`, `associative_scan`, `custom_root`, `conv_transpose` and the
//! total-order comparisons through the facade, whose default backend is
//! the CPU backend: under `jit` they compile and give the values the
//! interpreter-free oracles give.

use jaxon::lax::{self, Padding};
use jaxon::{grad, jit, Array};

#[test]
fn map_and_associative_scan_compile_on_the_cpu_backend() {
    let xs = Array::from_vec((1..=7).map(f64::from).collect::<Vec<_>>(), &[7]);
    let f = |x: Array| {
        let ys = lax::map(|v: Array| &v * &v + 1.0, x.clone(), Some(3)).unwrap();
        lax::associative_scan(|a: Array, b: Array| &a + &b, ys, true, 0).unwrap()
    };
    let got = jit(f).call(xs).unwrap().to_vec::<f64>();
    let sq: Vec<f64> = (1..=7).map(|v| f64::from(v * v + 1)).collect();
    let want: Vec<f64> = (0..7).map(|i| sq[i..].iter().sum()).collect();
    assert_eq!(got, want);
}

#[test]
fn custom_root_gradient_under_jit_on_the_cpu_backend() {
    let cbrt = |a: Array| {
        let f = |x: Array| &x * &x * &x - &a;
        let newton = |f: &dyn Fn(Array) -> Array, x0: Array| {
            let mut x = x0;
            for _ in 0..40 {
                x = &x - &(f(x.clone()) / (&x * &x * 3.0));
            }
            x
        };
        let div = |g: &dyn Fn(Array) -> Array, y: Array| &y / &g(Array::scalar(1.0f64));
        lax::custom_root(f, Array::scalar(1.0f64), &newton, &div).unwrap()
    };
    let g = jit(move |a: Array| grad(cbrt)(a).unwrap())
        .call(Array::scalar(8.0f64))
        .unwrap()
        .item::<f64>();
    // d/da a^(1/3) = 1 / (3 a^(2/3)) = 1/12 at 8.
    assert!((g - 1.0 / 12.0).abs() < 1e-12, "{g}");
}

#[test]
fn conv_transpose_and_total_order_on_the_cpu_backend() {
    let x = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[1, 3, 1]);
    let k = Array::from_vec(vec![1.0f64, 2.0], &[2, 1, 1]);
    let y = jit(move |x: Array| {
        lax::conv_transpose(&x, &k, &[2], Padding::Valid, None, None, true).unwrap()
    })
    .call(x)
    .unwrap();
    assert_eq!(y.to_vec::<f64>(), [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]);
    let a = Array::from_vec(vec![-0.0f32, f32::NAN, -f32::NAN, 1.0], &[4]);
    let b = Array::from_vec(vec![0.0f32, f32::INFINITY, f32::NEG_INFINITY, 1.0], &[4]);
    let lt = jit(|(a, b): (Array, Array)| lax::lt_to(&a, &b).unwrap())
        .call((a.clone(), b.clone()))
        .unwrap();
    assert_eq!(lt.to_vec::<bool>(), [true, false, true, false]);
    let le = jit(|(a, b): (Array, Array)| lax::le_to(&a, &b).unwrap())
        .call((a, b))
        .unwrap();
    assert_eq!(le.to_vec::<bool>(), [true, false, true, true]);
    let n = Array::from_vec(vec![0u8, 1, 255, 16], &[4]);
    let pc = jit(|n: Array| lax::population_count(&n).unwrap())
        .call(n.clone())
        .unwrap();
    let lz = jit(|n: Array| lax::clz(&n).unwrap()).call(n).unwrap();
    assert_eq!(pc.to_vec::<u8>(), [0, 1, 8, 1]);
    assert_eq!(lz.to_vec::<u8>(), [8, 7, 0, 3]);
}
