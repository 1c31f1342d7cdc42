//! A model written in JAX runs in jaxon (`examples/jax_model.rs`): the CNN
//! jaxpr that JAX 0.10.2 printed, with its safetensors weights, gives JAX's
//! output on the interpreter and on the CPU backend, eagerly and under
//! `jit`; its gradient agrees with central differences; and `call_jaxpr`
//! refuses arguments of the wrong type.

use jaxon::io::read_safetensors;
use jaxon::{call_jaxpr, grad, jit, load_jaxpr, ok_or_raise, with_backend, Array, DType};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/jax_cnn")
}

/// The jaxpr, its arguments in order (weights by sorted name, then `x`),
/// and JAX's output.
fn load() -> (jaxon::ir::ClosedJaxpr, Vec<Array>, Vec<f32>) {
    let text = std::fs::read_to_string(data().join("model.jaxpr")).expect("model.jaxpr");
    let model = load_jaxpr(&text).expect("JAX's jaxpr parses");
    let weights: BTreeMap<String, Array> =
        read_safetensors(data().join("weights.safetensors")).expect("weights");
    let mut io = read_safetensors(data().join("io.safetensors")).expect("io");
    let mut args: Vec<Array> = weights.into_values().collect();
    args.push(io.remove("x").expect("x"));
    let want = io.remove("y").expect("y").to_vec::<f32>();
    (model, args, want)
}

fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol,
            "{what}: element {i}: {g} vs JAX's {w}"
        );
    }
}

#[test]
fn jax_printed_cnn_matches_jax_on_every_backend() {
    let (model, args, want) = load();
    for backend in ["interpreter", "cpu"] {
        let eager = with_backend(backend, || call_jaxpr(&model, &args)).expect("backend");
        assert_close(&eager.expect("eager")[0].to_vec(), &want, 1e-5, backend);
        let m = model.clone();
        let f = jit(move |a: Vec<Array>| ok_or_raise(call_jaxpr(&m, &a)));
        let jitted = with_backend(backend, || f.call(args.clone())).expect("backend");
        assert_close(&jitted.expect("jit")[0].to_vec(), &want, 1e-5, backend);
    }
}

#[test]
fn gradient_of_the_jax_model_agrees_with_central_differences() {
    let (model, args, _) = load();
    // d/d(dense.b) of the mean log-probability of class 3, in f64.
    let args64: Vec<Array> = args.iter().map(|a| a.astype(DType::F64)).collect();
    let text = std::fs::read_to_string(data().join("model.jaxpr"))
        .expect("model.jaxpr")
        .replace("f32", "f64")
        .replace("float32", "float64");
    let m64 = load_jaxpr(&text).expect("the f64 jaxpr parses");
    let objective = |b: Array, all: &[Array]| -> Array {
        let mut a = all.to_vec();
        a[2] = b;
        let y = ok_or_raise(call_jaxpr(&m64, &a)).remove(0);
        let col = ok_or_raise(jaxon::numpy::take(
            &y,
            &Array::from_vec(vec![3i32], &[1]),
            Some(1),
        ));
        col.mean(jaxon::numpy::All)
    };
    let base = args64.clone();
    let g = grad(|b: Array| objective(b, &base))(args64[2].clone()).expect("grad");
    let g = g.to_vec::<f64>();
    let b0 = args64[2].to_vec::<f64>();
    let h = 1e-6;
    for j in 0..b0.len() {
        let shifted = |d: f64| {
            let mut v = b0.clone();
            v[j] += d;
            objective(Array::from_vec(v, &[b0.len()]), &args64).item::<f64>()
        };
        let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
        assert!((g[j] - fd).abs() < 1e-7, "d/db[{j}]: {} vs {fd}", g[j]);
    }
    drop(model);
}

#[test]
fn call_jaxpr_refuses_wrong_arguments() {
    let (model, mut args, _) = load();
    let e = call_jaxpr(&model, &args[..2]).unwrap_err().to_string();
    assert!(e.contains("takes 5 inputs, got 2"), "{e}");
    args[4] = Array::from_vec(vec![0f32; 144], &[1, 1, 12, 12]);
    let e = call_jaxpr(&model, &args).unwrap_err().to_string();
    assert!(
        e.contains("f32[5,1,12,12]") && e.contains("f32[1,1,12,12]"),
        "{e}"
    );
    let e = load_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a\n in (c,) }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("2:6") && e.contains("`c`"), "{e}");
}
