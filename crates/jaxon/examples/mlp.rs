//! Trains a small MLP classifier with `jit(value_and_grad(loss))` and SGD on
//! synthetic Gaussian blobs drawn with `jaxon::random`, until the loss falls
//! below [`TARGET_LOSS`]; exits non-zero if it does not.
//!
//! `cargo run --release --example mlp`

use indicatif::{ProgressBar, ProgressStyle};
use jaxon::nn;
use jaxon::ok_or_raise as ok;
use jaxon::prelude::*;
use jaxon::value_and_grad_with;
use std::process::ExitCode;
use std::time::Instant;

/// Input features, hidden widths and classes: 16-64-64-4.
const SIZES: [usize; 4] = [16, 64, 64, 4];
/// Training examples (full data set) and minibatch size.
const N: usize = 1024;
const BATCH: usize = 128;
const LR: f64 = 0.5;
const MAX_EPOCHS: usize = 60;
/// The mean cross-entropy the last epoch must reach (a uniform guess is
/// `ln 4 = 1.386`).
const TARGET_LOSS: f32 = 0.15;

/// The parameters: one `(W f32[in,out], b f32[out])` per layer, as in JAX's
/// list-of-tuples MLPs.
type Params = Vec<(Array, Array)>;

/// `W ~ N(0,1)·sqrt(2/fan_in)`, `b = 0`.
fn init(key: &Array) -> Result<Params> {
    let keys = random::split(key, SIZES.len() - 1)?;
    let mut params = Vec::new();
    for (i, win) in SIZES.windows(2).enumerate() {
        let (din, dout) = (win[0], win[1]);
        let k = random::key_at(&keys, &[i])?;
        let w = random::normal(&k, &[din, dout], DType::F32)? * (2.0 / din as f64).sqrt();
        params.push((w, jnp::zeros(&[dout], DType::F32)?));
    }
    Ok(params)
}

/// A teacher network labels Gaussian inputs: `x ~ N(0, I)`, label =
/// `argmax(tanh(x @ A) @ B)` for random `A f32[16,32]`, `B f32[32,4]`. The
/// classes are not linearly separable, but the student can fit them.
fn data(key: &Array) -> Result<(Array, Array)> {
    let (c, d) = (SIZES[3], SIZES[0]);
    let keys = random::split(key, 3)?;
    let x = random::normal(&random::key_at(&keys, &[0])?, &[N, d], DType::F32)?;
    let a = random::normal(&random::key_at(&keys, &[1])?, &[d, 32], DType::F32)? * 0.5;
    let b = random::normal(&random::key_at(&keys, &[2])?, &[32, c], DType::F32)?;
    let y = x.matmul(&a).tanh().matmul(&b).argmax(Some(-1));
    Ok((x, y))
}

/// Mean softmax cross-entropy of the MLP's logits (relu hidden layers).
fn loss((params, x, y): (Params, Array, Array)) -> Array {
    let (last, hidden) = params.split_last().expect("at least one layer");
    let mut h = x;
    for (w, b) in hidden {
        h = ok(nn::relu(&(h.matmul(w) + b)));
    }
    let logits = h.matmul(&last.0) + &last.1;
    let logp = ok(nn::log_softmax(&logits, -1));
    let onehot = ok(nn::one_hot(&y, SIZES[3], DType::F32));
    -(onehot * logp).sum(-1).mean(All)
}

/// Rows `[start, start + BATCH)` of `a`.
fn rows(a: &Array, start: usize) -> Result<Array> {
    let mut lo = vec![0; a.ndim()];
    let mut hi = a.shape();
    lo[0] = start;
    hi[0] = start + BATCH;
    lax::slice(a, &lo, &hi, None)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool> {
    let (kp, kd) = random::split2(&random::key(0))?;
    let mut params = init(&kp)?;
    let (x, y) = data(&kd)?;

    // One SGD step, staged once: the loss and its gradient w.r.t. the
    // parameters (argnum 0), then `p - lr * g` leaf by leaf.
    let step = jit(|(p, x, y): (Params, Array, Array)| {
        let (l, g): (Array, Params) = ok(value_and_grad_with(loss, 0)((p.clone(), x, y)));
        let p: Params = p
            .iter()
            .zip(&g)
            .map(|((w, b), (gw, gb))| (w - gw * LR, b - gb * LR))
            .collect();
        (p, l)
    });

    let t0 = Instant::now();
    let pb = ProgressBar::new(MAX_EPOCHS as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40.cyan/blue} epoch {pos}/{len} {msg} [{elapsed}]")
            .expect("a valid template"),
    );
    let mut last = f32::INFINITY;
    for epoch in 1..=MAX_EPOCHS {
        let mut total = 0.0f32;
        for s in (0..N).step_by(BATCH) {
            let (p, l) = step.call((params, rows(&x, s)?, rows(&y, s)?))?;
            params = p;
            total += l.item::<f32>();
        }
        last = total / (N / BATCH) as f32;
        let line = format!("epoch {epoch:3}: loss {last:.5}");
        if pb.is_hidden() {
            println!("{line}");
        } else {
            pb.println(line);
        }
        pb.set_message(format!("loss {last:.4}"));
        pb.inc(1);
        if last < TARGET_LOSS {
            break;
        }
    }
    pb.finish_and_clear();

    let logits = {
        let (lastl, hidden) = params.split_last().expect("layers");
        let mut h = x.clone();
        for (w, b) in hidden {
            h = nn::relu(&(h.matmul(w) + b))?;
        }
        h.matmul(&lastl.0) + &lastl.1
    };
    let pred = logits.argmax(Some(-1)).to_vec::<i32>();
    let labels = y.to_vec::<i32>();
    let acc = pred.iter().zip(&labels).filter(|(a, b)| a == b).count() as f64 / N as f64;
    println!(
        "final loss {last:.5} (target < {TARGET_LOSS}), accuracy {:.1}%, {:.2?}, {} trace(s)",
        acc * 100.0,
        t0.elapsed(),
        step.trace_count()
    );
    if last < TARGET_LOSS {
        Ok(true)
    } else {
        eprintln!("the loss did not fall below {TARGET_LOSS} in {MAX_EPOCHS} epochs");
        Ok(false)
    }
}
