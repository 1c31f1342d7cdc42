//! The `jax.nn` activations of `nn/activations.rs` against their formulas
//! evaluated in f64 on random inputs over a wide range (large magnitudes
//! check the numerically stable forms), in f64 and f32.

use crate::common;

use jaxon_trace::{nn, Array};

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

fn elu(x: f64, a: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        a * x.exp_m1()
    }
}

type Unary = (&'static str, fn(&Array) -> Array, fn(f64) -> f64);

#[test]
fn elementwise_activations_match_their_formulas() {
    let cases: [Unary; 13] = [
        ("softplus", |x| nn::softplus(x).unwrap(), softplus),
        (
            "log_sigmoid",
            |x| nn::log_sigmoid(x).unwrap(),
            |x| -softplus(-x),
        ),
        (
            "leaky_relu",
            |x| nn::leaky_relu(x, 0.01).unwrap(),
            |x| {
                if x >= 0.0 {
                    x
                } else {
                    0.01 * x
                }
            },
        ),
        ("elu", |x| nn::elu(x, 1.5).unwrap(), |x| elu(x, 1.5)),
        (
            "celu",
            |x| nn::celu(x, 0.7).unwrap(),
            |x| x.max(0.0) + 0.7 * (x.min(0.0) / 0.7).exp_m1(),
        ),
        (
            "selu",
            |x| nn::selu(x).unwrap(),
            |x| 1.050_700_987_355_480_5 * elu(x, 1.673_263_242_354_377_3),
        ),
        ("relu6", |x| nn::relu6(x).unwrap(), |x| x.clamp(0.0, 6.0)),
        (
            "hard_tanh",
            |x| nn::hard_tanh(x).unwrap(),
            |x| x.clamp(-1.0, 1.0),
        ),
        (
            "hard_sigmoid",
            |x| nn::hard_sigmoid(x).unwrap(),
            |x| (x + 3.0).clamp(0.0, 6.0) / 6.0,
        ),
        (
            "hard_silu",
            |x| nn::hard_silu(x).unwrap(),
            |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        ),
        (
            "soft_sign",
            |x| nn::soft_sign(x).unwrap(),
            |x| x / (x.abs() + 1.0),
        ),
        ("mish", |x| nn::mish(x).unwrap(), |x| x * softplus(x).tanh()),
        (
            "sigmoid (reference)",
            |x| nn::sigmoid(x).unwrap(),
            |x| 1.0 / (1.0 + (-x).exp()),
        ),
    ];
    for (k, (name, f, want)) in cases.iter().enumerate() {
        for (scale, seed) in [(3.0, 1), (80.0, 2)] {
            let xs = common::uniform(257, seed + 10 * k as u64, scale);
            let got = f(&Array::from_vec(xs.clone(), &[257])).to_vec::<f64>();
            for (x, g) in xs.iter().zip(&got) {
                let w = want(*x);
                assert!(
                    (g - w).abs() <= 1e-13 * (1.0 + w.abs()),
                    "{name}({x}) = {g}, want {w}"
                );
            }
            let x32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
            let got = f(&Array::from_vec(x32.clone(), &[257])).to_vec::<f32>();
            for (x, g) in x32.iter().zip(&got) {
                let w = want(*x as f64);
                assert!(
                    (*g as f64 - w).abs() <= 2e-6 * (1.0 + w.abs()),
                    "{name}({x}) f32 = {g}, want {w}"
                );
            }
        }
    }
}

#[test]
fn glu_and_standardize_match_their_formulas() {
    let xs = common::uniform(3 * 8, 5, 2.0);
    let x = Array::from_vec(xs.clone(), &[3, 8]);
    let g = nn::glu(&x, -1).unwrap();
    assert_eq!(g.shape(), vec![3, 4]);
    let got = g.to_vec::<f64>();
    for r in 0..3 {
        for c in 0..4 {
            let (a, b) = (xs[r * 8 + c], xs[r * 8 + c + 4]);
            let w = a / (1.0 + (-b).exp());
            assert!((got[r * 4 + c] - w).abs() <= 1e-14 * (1.0 + w.abs()));
        }
    }
    let g0 = nn::glu(&Array::from_vec(xs.clone(), &[6, 4]), 0).unwrap();
    assert_eq!(g0.shape(), vec![3, 4]);
    let e = nn::glu(&Array::from_vec(common::uniform(9, 1, 1.0), &[3, 3]), -1).unwrap_err();
    assert!(e.to_string().contains("even"), "{e}");

    let s = nn::standardize(&x, -1, 1e-5).unwrap().to_vec::<f64>();
    for r in 0..3 {
        let row = &xs[r * 8..r * 8 + 8];
        let mean = row.iter().sum::<f64>() / 8.0;
        let var = row.iter().map(|v| v * v).sum::<f64>() / 8.0 - mean * mean;
        for c in 0..8 {
            let w = (row[c] - mean) / (var + 1e-5).sqrt();
            assert!((s[r * 8 + c] - w).abs() <= 1e-12 * (1.0 + w.abs()));
        }
    }
    let s0 = nn::standardize(&x, 0, 1e-5).unwrap();
    assert_eq!(s0.shape(), vec![3, 8]);
}
