//! `jax.nn`'s `log1mexp`, `logmeanexp`, `sparse_plus`, `sparse_sigmoid`,
//! `squareplus`, `swish`, `hard_swish`, `tanh` and `identity` against JAX
//! 0.10.2's values (`tests/data/nn_more.json`, from `gen_nn_more.py`), and
//! their errors.

use jaxon_trace::{nn, Array};
use serde_json::Value;

fn data() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nn_more.json"
    ))
    .expect("nn_more.json");
    serde_json::from_str(&text).expect("json")
}

fn array(v: &Value) -> Array {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let vals: Vec<f32> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    Array::from_vec(vals, &shape)
}

fn close(name: &str, got: Array, want: &Value) {
    let w = array(want);
    assert_eq!(got.try_shape().unwrap(), w.try_shape().unwrap(), "{name}");
    for (i, (g, e)) in got
        .to_vec::<f32>()
        .iter()
        .zip(w.to_vec::<f32>())
        .enumerate()
    {
        assert!(
            (g - e).abs() <= 2e-6 * (1.0 + e.abs()),
            "{name}[{i}]: {g} vs JAX's {e}"
        );
    }
}

#[test]
fn values_match_jax() {
    let d = data();
    let (x, pos, m) = (array(&d["x"]), array(&d["pos"]), array(&d["m"]));
    close("log1mexp", nn::log1mexp(&pos).unwrap(), &d["log1mexp"]);
    close(
        "logmeanexp_all",
        nn::logmeanexp(&m, &[], false).unwrap(),
        &d["logmeanexp_all"],
    );
    close(
        "logmeanexp_1",
        nn::logmeanexp(&m, &[1], false).unwrap(),
        &d["logmeanexp_1"],
    );
    close(
        "logmeanexp_0k",
        nn::logmeanexp(&m, &[0], true).unwrap(),
        &d["logmeanexp_0k"],
    );
    close(
        "sparse_plus",
        nn::sparse_plus(&x).unwrap(),
        &d["sparse_plus"],
    );
    close(
        "sparse_sigmoid",
        nn::sparse_sigmoid(&x).unwrap(),
        &d["sparse_sigmoid"],
    );
    close(
        "squareplus",
        nn::squareplus(&x, 4.0).unwrap(),
        &d["squareplus"],
    );
    close(
        "squareplus_b1",
        nn::squareplus(&x, 1.0).unwrap(),
        &d["squareplus_b1"],
    );
    close("swish", nn::swish(&x).unwrap(), &d["swish"]);
    close("hard_swish", nn::hard_swish(&x).unwrap(), &d["hard_swish"]);
    close("tanh", nn::tanh(&x).unwrap(), &d["tanh"]);
    assert_eq!(nn::identity(&x).unwrap().to_vec::<f32>(), x.to_vec::<f32>());
}

#[test]
fn bad_axes_are_errors() {
    let m = Array::from_vec(vec![1.0f32; 6], &[2, 3]);
    let err = nn::logmeanexp(&m, &[2], false).unwrap_err().to_string();
    assert!(err.contains("out of range"), "{err}");
    assert!(nn::logmeanexp(&m, &[-3], false).is_err());
}
