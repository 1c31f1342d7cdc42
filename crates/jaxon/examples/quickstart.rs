//! Quick start: print a jaxpr, run a jitted function and its gradient, and
//! time the cached call.

use jaxon::prelude::*;
use std::time::Instant;

/// A small layer: `tanh(x @ w + b)`, then the mean of its squares.
fn layer((x, w, b): (Array, Array, Array)) -> Array {
    let h = (x.matmul(&w) + &b).tanh();
    (&h * &h).mean(All)
}

fn main() -> Result<()> {
    let x = Array::from_vec((0..32).map(|i| (i as f32 * 0.37).sin()).collect(), &[4, 8]);
    let w = Array::from_vec(
        (0..48).map(|i| (i as f32 * 0.11).cos() * 0.3).collect(),
        &[8, 6],
    );
    let b = Array::from_vec(vec![0.1f32, -0.2, 0.3, -0.4, 0.5, -0.6], &[6]);

    println!(
        "The jaxpr of `layer`:\n{}\n",
        make_jaxpr(layer)((x.clone(), w.clone(), b.clone()))?
    );

    let fast = jit(layer);
    let y = fast.call((x.clone(), w.clone(), b.clone()))?;
    println!(
        "jit(layer)(x, w, b) = {} (on the `{}` backend)",
        y.item::<f32>(),
        jaxon::eval_backend()?.name()
    );

    let dlayer = grad(layer);
    let (dx, dw, db) = dlayer((x.clone(), w.clone(), b.clone()))?;
    println!(
        "grad shapes: dx {:?}, dw {:?}, db {:?}; db = {:?}",
        dx.shape(),
        dw.shape(),
        db.shape(),
        db.to_vec::<f32>()
    );

    let n = 1000;
    let t = Instant::now();
    for _ in 0..n {
        fast.call((x.clone(), w.clone(), b.clone()))?;
    }
    let per_call = t.elapsed() / n;
    println!(
        "{n} cached calls: {per_call:?} per call ({} trace, {} compile)",
        fast.trace_count(),
        fast.compile_count()
    );
    Ok(())
}
