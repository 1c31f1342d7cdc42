//! A model written in JAX, run by jaxon: loads the jaxpr that
//! `jax.make_jaxpr` printed for a small CNN (convolution, ReLU, max
//! pooling, a dense layer, log-softmax) and its weights from a safetensors
//! file, compiles it with `jit`, and checks its output against JAX's.
//!
//! The data is in `examples/data/jax_cnn/`, written by its `generate.py`
//! with JAX 0.10.2. Run with `cargo run --release --example jax_model`.

use jaxon::io::{load_safetensors, read_safetensors};
use jaxon::{call_jaxpr, jit, load_jaxpr, ok_or_raise, Array, DType, Pytree};
use std::path::Path;

// JAX flattens a dict by sorted key, so the fields are declared in that
// order: the leaves then line up with the jaxpr's inputs, and their key
// paths ("conv.b", ...) are the names JAX's script saved them under.
#[derive(Pytree, Clone)]
struct Conv {
    b: Array,
    w: Array,
}

#[derive(Pytree, Clone)]
struct Dense {
    b: Array,
    w: Array,
}

#[derive(Pytree, Clone)]
struct Params {
    conv: Conv,
    dense: Dense,
}

fn zeros(shape: &[usize]) -> jaxon::Result<Array> {
    jaxon::numpy::zeros(shape, DType::F32)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/jax_cnn");
    let model = load_jaxpr(&std::fs::read_to_string(dir.join("model.jaxpr"))?)?;
    println!("JAX's jaxpr: {} equations", model.jaxpr.eqns.len());

    // The template says which tensors to expect, and their shapes.
    let template = Params {
        conv: Conv {
            b: zeros(&[4])?,
            w: zeros(&[4, 1, 3, 3])?,
        },
        dense: Dense {
            b: zeros(&[10])?,
            w: zeros(&[144, 10])?,
        },
    };
    let params = load_safetensors(dir.join("weights.safetensors"), &template)?;
    let mut io = read_safetensors(dir.join("io.safetensors"))?;
    let (x, want) = match (io.remove("x"), io.remove("y")) {
        (Some(x), Some(y)) => (x, y),
        _ => return Err("io.safetensors lacks x or y".into()),
    };

    let forward = jit(move |(p, x): (Params, Array)| -> Vec<Array> {
        let mut args = p.flatten().0;
        args.push(x);
        ok_or_raise(call_jaxpr(&model, &args))
    });
    let got = forward.call((params, x))?;
    let (got, want) = (got[0].to_vec::<f32>(), want.to_vec::<f32>());
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0f32, f32::max);
    println!(
        "log-probabilities of the first example: {:?}",
        &got[..10.min(got.len())]
    );
    println!(
        "largest difference from JAX over {} values: {worst:.2e} (on the `{}` backend)",
        got.len(),
        jaxon::eval_backend()?.name()
    );
    if worst > 1e-5 {
        return Err(format!("jaxon differs from JAX by {worst}").into());
    }
    Ok(())
}
