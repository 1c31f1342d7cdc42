//! `nn` activations on seeded random inputs, eagerly and under
//! `jit(..).call`, against the same formulas in f64.

use jaxon_ir::DType;
use jaxon_trace::{jit, nn, Array};

fn f(shape: &[usize], seed: u64) -> (Array, Vec<f64>) {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(11);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s % 8001) as f32 / 1000.0) - 4.0
        })
        .collect();
    let w = v.iter().map(|&x| x as f64).collect();
    (Array::from_vec(v, shape), w)
}

fn both(fun: impl Fn(Array) -> Array + Copy, x: &Array) -> [Vec<f32>; 2] {
    [
        fun(x.clone()).to_vec(),
        jit(fun).call(x.clone()).unwrap().to_vec(),
    ]
}

fn close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * (1.0 + w.abs()),
            "element {k}: {g} vs {w}"
        );
    }
}

/// erf by its Abramowitz–Stegun 7.1.26 series is too coarse; integrate
/// exp(-t^2) with Simpson's rule instead.
fn erf(x: f64) -> f64 {
    let n = 2000;
    let h = x / n as f64;
    let g = |t: f64| (-t * t).exp();
    let mut s = g(0.0) + g(x);
    for k in 1..n {
        s += g(k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn elementwise_activations() {
    let (x, xv) = f(&[4, 6], 1);
    let map = |g: fn(f64) -> f64| xv.iter().map(|&v| g(v)).collect::<Vec<_>>();
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    for got in both(|x| nn::relu(&x).unwrap(), &x) {
        close(&got, &map(|v| v.max(0.0)), 1e-6);
    }
    for got in both(|x| nn::sigmoid(&x).unwrap(), &x) {
        close(&got, &map(sig), 1e-6);
    }
    for got in both(|x| nn::silu(&x).unwrap(), &x) {
        close(&got, &map(|v| v / (1.0 + (-v).exp())), 1e-6);
    }
    let tanh_gelu = |v: f64| {
        0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh())
    };
    for got in both(|x| nn::gelu(&x, true).unwrap(), &x) {
        close(&got, &map(tanh_gelu), 1e-5);
    }
    for got in both(|x| nn::gelu(&x, false).unwrap(), &x) {
        close(&got, &map(|v| 0.5 * v * (1.0 + erf(v / 2f64.sqrt()))), 1e-5);
    }
}

#[test]
fn softmax_and_log_softmax_rows() {
    let (x, xv) = f(&[3, 5], 2);
    let mut soft = Vec::new();
    let mut logsoft = Vec::new();
    for row in xv.chunks(5) {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
        soft.extend(row.iter().map(|v| (v - m).exp() / z));
        logsoft.extend(row.iter().map(|v| v - m - z.ln()));
    }
    for got in both(|x| nn::softmax(&x, -1).unwrap(), &x) {
        close(&got, &soft, 1e-6);
    }
    for got in both(|x| nn::log_softmax(&x, 1).unwrap(), &x) {
        close(&got, &logsoft, 1e-5);
    }
    // Over axis 0, columns sum to one.
    let cols = nn::softmax(&x, 0).unwrap().to_vec::<f32>();
    for c in 0..5 {
        let s: f32 = (0..3).map(|r| cols[r * 5 + c]).sum();
        assert!((s - 1.0).abs() < 1e-6);
    }
}

#[test]
fn one_hot_marks_in_range_classes() {
    let labels = Array::from_vec(vec![2i32, 0, 4, -1, 1], &[5]);
    let want: Vec<f32> = [2i32, 0, 4, -1, 1]
        .iter()
        .flat_map(|&l| (0..4).map(move |c| if c == l { 1.0 } else { 0.0 }))
        .collect();
    let g = |l: Array| nn::one_hot(&l, 4, DType::F32).unwrap();
    assert_eq!(g(labels.clone()).to_vec::<f32>(), want);
    assert_eq!(jit(g).call(labels).unwrap().to_vec::<f32>(), want);
}

#[test]
fn logsumexp_is_stable_for_large_inputs() {
    let x = Array::from_vec(vec![1000.0f32, 1000.0, f32::NEG_INFINITY], &[3]);
    let got = nn::logsumexp(&x, jaxon_trace::numpy::All, false).unwrap();
    assert!((got.item::<f32>() - (1000.0 + 2f32.ln())).abs() < 1e-3);
    let all_neg_inf = Array::from_vec(vec![f32::NEG_INFINITY; 2], &[2]);
    let got = nn::logsumexp(&all_neg_inf, jaxon_trace::numpy::All, false).unwrap();
    assert_eq!(got.item::<f32>(), f32::NEG_INFINITY);
}
