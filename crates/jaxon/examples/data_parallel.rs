//! Data-parallel training over processes: every process holds the same MLP,
//! computes the gradient of its share of each global batch, and the
//! gradients are averaged over the processes with `distributed::pmean`
//! before the SGD update, so every process takes the step that one process
//! would take on the whole batch.
//!
//! ```text
//! cargo build --release --features mpi --example data_parallel
//! mpirun -np 2 target/release/examples/data_parallel     # two processes
//! target/release/examples/data_parallel                  # one, same result
//! ```
//!
//! Process 0 prints the loss of every step, the median time per step (and
//! of its gradient and `pmean`) and a checksum of the final parameters.
//! `--steps N` trains for N steps instead of 5 (for timing: the first step
//! compiles).

use jaxon::distributed;
use jaxon::nn;
use jaxon::ok_or_raise as ok;
use jaxon::prelude::*;
use jaxon::value_and_grad_with;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Input features, hidden width and classes (the `mlp_train_step`
/// benchmark's first layer).
pub const SIZES: [usize; 3] = [784, 1024, 10];
/// Examples per global batch (split evenly over the processes).
pub const GLOBAL_BATCH: usize = 256;
/// SGD steps taken.
pub const STEPS: usize = 5;
const LR: f64 = 0.1;

/// `(W1, b1, W2, b2)`.
pub type Params = Vec<(Array, Array)>;

/// The same parameters on every process (the same key).
pub fn init() -> Result<Params> {
    let keys = random::split(&random::key(7), 2)?;
    let mut params = Vec::new();
    for (i, win) in SIZES.windows(2).enumerate() {
        let (din, dout) = (win[0], win[1]);
        let k = random::key_at(&keys, &[i])?;
        let w = random::normal(&k, &[din, dout], DType::F32)? * (2.0 / din as f64).sqrt();
        params.push((w, jnp::zeros(&[dout], DType::F32)?));
    }
    Ok(params)
}

/// Global batch `step`: inputs `f32[GLOBAL_BATCH, 784]` and labels from a
/// fixed teacher, the same on every process.
pub fn batch(step: usize) -> Result<(Array, Array)> {
    let k = random::fold_in(&random::key(11), step as u32)?;
    let (kx, kt) = random::split2(&k)?;
    let x = random::normal(&kx, &[GLOBAL_BATCH, SIZES[0]], DType::F32)?;
    let teacher = random::normal(&kt, &[SIZES[0], SIZES[2]], DType::F32)?;
    Ok((x.clone(), x.matmul(&teacher).argmax(Some(-1))))
}

fn loss((params, x, y): (Params, Array, Array)) -> Array {
    let (w1, b1) = &params[0];
    let (w2, b2) = &params[1];
    let h = ok(nn::relu(&(x.matmul(w1) + b1)));
    let logp = ok(nn::log_softmax(&(h.matmul(w2) + b2), -1));
    let onehot = ok(nn::one_hot(&y, SIZES[2], DType::F32));
    -(onehot * logp).sum(-1).mean(All)
}

/// What a run gives back: the final parameters, the mean loss of every
/// step over the processes, and the median time per step.
pub struct Run {
    /// Parameters after [`STEPS`] steps.
    pub params: Params,
    /// The global batch's loss before each step.
    pub losses: Vec<f32>,
    /// Median wall time per step (gradient, `pmean`, update).
    pub step_time: Duration,
    /// Median wall time of the step's gradient.
    pub grad_time: Duration,
    /// Median wall time of the step's `pmean`.
    pub pmean_time: Duration,
}

/// Trains for [`STEPS`] steps on this process's rows of each global batch,
/// averaging gradients over the processes (a group of one, before
/// `distributed::initialize`, trains on the whole batch).
pub fn train() -> Result<Run> {
    train_steps(STEPS)
}

/// [`train`] for `steps` steps.
pub fn train_steps(steps: usize) -> Result<Run> {
    let (me, n) = (distributed::process_index(), distributed::process_count());
    if !GLOBAL_BATCH.is_multiple_of(n) {
        return Err(Error::InvalidArgument(format!(
            "{n} processes do not divide a batch of {GLOBAL_BATCH}"
        )));
    }
    let local = GLOBAL_BATCH / n;
    let grad = jit(|(p, x, y): (Params, Array, Array)| -> (Array, Params) {
        ok(value_and_grad_with(loss, 0)((p, x, y)))
    });
    let update = jit(|(p, g): (Params, Params)| -> Params {
        p.iter()
            .zip(&g)
            .map(|((w, b), (gw, gb))| (w - gw * LR, b - gb * LR))
            .collect()
    });
    let mut params = init()?;
    let mut losses = Vec::new();
    let mut times = Vec::new();
    let mut comm = Vec::new();
    let mut grads = Vec::new();
    for step in 0..steps {
        let (x, y) = batch(step)?;
        let rows = |a: &Array| -> Result<Array> {
            let mut lo = vec![0; a.ndim()];
            let mut hi = a.shape();
            lo[0] = me * local;
            hi[0] = (me + 1) * local;
            lax::slice(a, &lo, &hi, None)
        };
        let (x, y) = (rows(&x)?, rows(&y)?);
        let t0 = Instant::now();
        let (l, g) = grad.call((params.clone(), x, y))?;
        // The batch's loss and gradient are means, so the mean of the
        // equal shares' means is the whole batch's.
        let t1 = Instant::now();
        grads.push(t1 - t0);
        let (l, g) = distributed::pmean(&(l, g))?;
        comm.push(t1.elapsed());
        params = update.call((params, g))?;
        times.push(t0.elapsed());
        losses.push(l.item::<f32>());
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    Ok(Run {
        params,
        losses,
        step_time: median(times),
        grad_time: median(grads),
        pmean_time: median(comm),
    })
}

/// The sum of every parameter, in f64.
pub fn checksum(params: &Params) -> f64 {
    params
        .iter()
        .flat_map(|(w, b)| [w.to_vec::<f32>(), b.to_vec::<f32>()])
        .flatten()
        .map(f64::from)
        .sum()
}

#[allow(dead_code)]
fn main() -> ExitCode {
    let session = match distributed::initialize() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let me = distributed::process_index();
    let args: Vec<String> = std::env::args().collect();
    let steps = match args.iter().position(|a| a == "--steps") {
        None => STEPS,
        Some(i) => match args.get(i + 1).and_then(|n| n.parse().ok()) {
            Some(n) if n > 0 => n,
            _ => {
                eprintln!("usage: data_parallel [--steps N] (N > 0)");
                return ExitCode::FAILURE;
            }
        },
    };
    let run = train_steps(steps);
    drop(session);
    match run {
        Ok(run) => {
            if me == 0 {
                for (i, l) in run.losses.iter().enumerate() {
                    println!("step {i}: loss {l:.6}");
                }
                println!(
                    "time per step: {:?} (gradient {:?}, pmean {:?})",
                    run.step_time, run.grad_time, run.pmean_time
                );
                println!("parameter checksum: {:.6}", checksum(&run.params));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error on process {me}: {e}");
            ExitCode::FAILURE
        }
    }
}
