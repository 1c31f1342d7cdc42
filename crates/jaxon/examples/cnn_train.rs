//! Trains a small CNN — 3×3 convolution with bias and ReLU, 2×2 max
//! pooling, a dense layer, log-softmax — with `jit(value_and_grad)` and
//! full-batch SGD on synthetic images (a bright blob in one of four
//! quadrants; the label is the quadrant), with a progress bar.
//!
//! The images and the starting weights are the ones JAX's script
//! `examples/data/jax_cnn/generate.py` wrote, together with JAX's losses
//! over the first SGD steps: the example checks that jaxon's first steps
//! give JAX's losses, then trains on. Run with
//! `cargo run --release --example cnn_train`.

use indicatif::{ProgressBar, ProgressStyle};
use jaxon::io::{load_safetensors, read_safetensors};
use jaxon::lax::{self, ConvOptions, Padding};
use jaxon::prelude::*;
use jaxon::{nn, ok_or_raise, tree_map2};
use std::path::Path;

/// SGD's step size, as in JAX's script.
pub const LEARNING_RATE: f64 = 0.1;
const STEPS: usize = 150;

/// A convolution's kernel `w: f32[out, in, 3, 3]` and bias `b: f32[out]`.
/// Fields in sorted order, as JAX flattens its dicts (see `jax_model.rs`).
#[derive(Pytree, Clone)]
pub struct Conv {
    /// The bias.
    pub b: Array,
    /// The kernel (OIHW).
    pub w: Array,
}

/// A dense layer `x @ w + b`.
#[derive(Pytree, Clone)]
pub struct Dense {
    /// The bias.
    pub b: Array,
    /// The weights.
    pub w: Array,
}

/// The CNN's parameters.
#[derive(Pytree, Clone)]
pub struct Params {
    /// The convolution.
    pub conv: Conv,
    /// The classifier.
    pub dense: Dense,
}

/// Log-probabilities `f32[n, 10]` of images `x: f32[n, 1, 12, 12]` (NCHW).
pub fn cnn(p: &Params, x: &Array) -> Result<Array> {
    let dn = ("NCHW".into(), "OIHW".into(), "NCHW".into());
    let opts = ConvOptions {
        dimension_numbers: Some(dn),
        ..ConvOptions::default()
    };
    let h = lax::conv_general_dilated(x, &p.conv.w, &[1, 1], Padding::Same, opts)?;
    let b = p.conv.b.reshape(&[1, 4, 1, 1]);
    let h = nn::relu(&(h + b))?;
    let h = lax::reduce_window_max(&h, &[1, 1, 2, 2], &[1, 1, 2, 2], Padding::Valid)?;
    let logits = h.reshape(&[-1, 144]).matmul(&p.dense.w) + &p.dense.b;
    nn::log_softmax(&logits, 1)
}

/// Mean cross-entropy of the CNN on images `x` with `labels: i32[n]`.
pub fn loss((p, x, labels): (Params, Array, Array)) -> Array {
    let logp = ok_or_raise(cnn(&p, &x));
    let picked = ok_or_raise(jnp::take_along_axis(
        &logp,
        &labels.reshape(&[-1, 1]),
        Some(1),
    ));
    -picked.mean(All)
}

/// One jitted SGD step: the loss before it and the updated parameters.
pub fn sgd_step() -> impl Fn((Params, Array, Array)) -> Result<(Params, Array)> {
    let step = jit(|(p, x, y): (Params, Array, Array)| {
        let (l, g) = ok_or_raise(value_and_grad(loss)((p.clone(), x, y)));
        let (gp, _, _) = g;
        let p = ok_or_raise(tree_map2(&p, &gp, |w, d| w - d * LEARNING_RATE));
        (p, l)
    });
    move |args| step.call(args)
}

/// The starting weights, the images and labels, and JAX's first losses.
pub fn load_data() -> Result<(Params, Array, Array, Vec<f32>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/jax_cnn");
    let z = |s: &[usize]| jnp::zeros(s, DType::F32);
    let template = Params {
        conv: Conv {
            b: z(&[4])?,
            w: z(&[4, 1, 3, 3])?,
        },
        dense: Dense {
            b: z(&[10])?,
            w: z(&[144, 10])?,
        },
    };
    let params = load_safetensors(dir.join("weights.safetensors"), &template)?;
    let mut t = read_safetensors(dir.join("train.safetensors"))?;
    let mut take = |k: &str| {
        t.remove(k)
            .ok_or_else(|| Error::InvalidArgument(format!("train.safetensors lacks {k:?}")))
    };
    let (x, y, losses) = (take("images")?, take("labels")?, take("losses")?);
    Ok((params, x, y, losses.to_vec::<f32>()))
}

#[allow(dead_code)] // `tests/cnn_train.rs` includes this file for its model.
fn main() -> Result<()> {
    let (mut params, x, y, jax_losses) = load_data()?;
    let step = sgd_step();
    let pb = ProgressBar::new(STEPS as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40.cyan/blue} step {pos}/{len} {msg} [{elapsed}]")
            .expect("a valid template"),
    );
    let mut first = f32::NAN;
    let mut last = f32::NAN;
    for i in 0..STEPS {
        let (p, l) = step((params, x.clone(), y.clone()))?;
        params = p;
        last = l.item::<f32>();
        if i == 0 {
            first = last;
        }
        if let Some(&want) = jax_losses.get(i) {
            let line = format!("step {i}: loss {last:.6} (JAX: {want:.6})");
            if pb.is_hidden() {
                println!("{line}");
            } else {
                pb.println(line);
            }
            if (last - want).abs() > 1e-4 * want.abs().max(1.0) {
                return Err(Error::InvalidArgument(format!(
                    "step {i}: jaxon's loss {last} differs from JAX's {want}"
                )));
            }
        }
        pb.set_message(format!("loss {last:.4}"));
        pb.inc(1);
    }
    pb.finish_and_clear();
    let pred = cnn(&params, &x)?.argmax(Some(-1)).to_vec::<i32>();
    let labels = y.to_vec::<i32>();
    let right = pred.iter().zip(&labels).filter(|(a, b)| a == b).count();
    println!(
        "loss {first:.4} -> {last:.4} in {STEPS} steps; training accuracy {right}/{}",
        labels.len()
    );
    if last >= first / 10.0 {
        return Err(Error::InvalidArgument("the loss did not go down".into()));
    }
    Ok(())
}
