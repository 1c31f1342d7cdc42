//! The single-kernel workloads: `eltwise_fused_16M`, `softmax_4096`,
//! `reduce_sum_rows`, `matmul_1024`, `matmul_2048`, `matmul_bf16_1024`.

use super::{backend_name, normal, ok, uniform, Settings};
use crate::measure::{emit, measure, sig, timing_details, Measurement};
use jaxon::prelude::*;
use serde_json::{json, Map, Value};

/// Runs a jitted one-argument-list function to a ready result once, then
/// measures it.
fn time_jit<T: jaxon::pytree::Pytree + Clone, F: Fn(T) -> Array>(
    f: &jaxon::Jit<F, T, Array>,
    args: T,
    s: Settings,
) -> (Array, Measurement) {
    let first = f.call(args.clone()).expect("runs");
    let m = measure(
        || {
            let y = f.call(args.clone()).expect("runs");
            super::ready(&y);
        },
        s.reps,
        s.min_time,
        2,
    );
    (first, m)
}

fn bandwidth(name: &str, m: &Measurement, nbytes: f64, mut d: Map<String, Value>) {
    d.insert("bytes".into(), json!(nbytes));
    d.insert("ms".into(), json!(sig(m.median_s * 1e3, 4)));
    d.insert("backend".into(), json!(backend_name()));
    emit(
        name,
        "bandwidth",
        sig(nbytes / m.median_s / 1e9, 4),
        "GB/s",
        d,
    );
}

/// `jit(tanh(x*2+1)*x - exp(-x))` on `f32[16·2^20]`, `x ~ U(-1,1)`.
pub fn eltwise_fused_16m(s: Settings) {
    let n = 16 << 20;
    let x = uniform(3, &[n], -1.0, 1.0);
    let f = jit(|x: Array| (&x * 2.0 + 1.0).tanh() * &x - (-&x).exp());
    let (y, m) = time_jit(&f, x.clone(), s);
    // Spot-check a strided sample against f64 math.
    let (xs, ys) = (x.to_vec::<f32>(), y.to_vec::<f32>());
    let err = (0..n)
        .step_by(4099)
        .map(|i| {
            let v = xs[i] as f64;
            ((v * 2.0 + 1.0).tanh() * v - (-v).exp() - ys[i] as f64).abs()
        })
        .fold(0.0, f64::max);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("n".into(), json!(n));
    d.insert(
        "Gelem_per_s".into(),
        json!(sig(n as f64 / m.median_s / 1e9, 4)),
    );
    d.insert("max_abs_err_sampled".into(), json!(err));
    bandwidth("eltwise_fused_16M", &m, 8.0 * n as f64, d);
}

/// Row softmax of `f32[4096,4096]`: `e = exp(x - max); e / sum(e)`.
pub fn softmax_4096(s: Settings) {
    let n = 4096;
    let x = normal(4, &[n, n]);
    let f = jit(|x: Array| {
        let e = (&x - ok(jnp::max(&x, [1], true))).exp();
        let total = ok(jnp::sum(&e, [1], true));
        e / total
    });
    let (y, m) = time_jit(&f, x.clone(), s);
    let reference = ok(jaxon::nn::softmax(&x, -1));
    let err = ok(jnp::max(&(&y - &reference).abs(), All, false)).item::<f32>();
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("shape".into(), json!([n, n]));
    d.insert("max_abs_err_vs_nn_softmax".into(), json!(err));
    bandwidth("softmax_4096", &m, 8.0 * (n * n) as f64, d);
}

/// `jit(sum(x, axis=1))` of `f32[4096,4096]`.
pub fn reduce_sum_rows(s: Settings) {
    let n = 4096;
    let x = normal(5, &[n, n]);
    let f = jit(|x: Array| ok(jnp::sum(&x, [1], false)));
    let (_, m) = time_jit(&f, x, s);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("shape".into(), json!([n, n]));
    bandwidth("reduce_sum_rows", &m, (4 * n * n + 4 * n) as f64, d);
}

fn matmul(n: usize, dtype: DType, name: &str, s: Settings) {
    let a = normal(6, &[n, n]).astype(dtype);
    let b = normal(7, &[n, n]).astype(dtype);
    let f = jit(|(a, b): (Array, Array)| a.matmul(&b));
    let (c, m) = time_jit(&f, (a.clone(), b.clone()), s);
    // One entry against an f64 dot product (of the rounded operands).
    let f32s = |x: &Array| x.astype(DType::F32).to_vec::<f32>();
    let (av, bv, cv) = (f32s(&a), f32s(&b), f32s(&c));
    let (i, j) = (n / 3, n / 2 + 1);
    let exact: f64 = (0..n)
        .map(|k| av[i * n + k] as f64 * bv[k * n + j] as f64)
        .sum();
    let flops = 2.0 * (n as f64).powi(3);
    let gf = flops / m.median_s / 1e9;
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("M=N=K".into(), json!(n));
    d.insert("flops".into(), json!(flops));
    d.insert("ms".into(), json!(sig(m.median_s * 1e3, 4)));
    d.insert(
        "abs_err_one_entry".into(),
        json!((cv[i * n + j] as f64 - exact).abs()),
    );
    d.insert("backend".into(), json!(backend_name()));
    d.insert("dtype".into(), json!(format!("{dtype:?}")));
    emit(name, "throughput", sig(gf, 4), "GFLOP/s", d);
}

/// `jit(a @ b)`, square f32 of side 1024.
pub fn matmul_1024(s: Settings) {
    matmul(1024, DType::F32, "matmul_1024", s)
}

/// `jit(a @ b)`, square f32 of side 2048.
pub fn matmul_2048(s: Settings) {
    matmul(2048, DType::F32, "matmul_2048", s)
}

/// `jit(a @ b)`, square bf16 of side 1024 (f32 accumulation, one rounding).
pub fn matmul_bf16_1024(s: Settings) {
    matmul(1024, DType::BF16, "matmul_bf16_1024", s)
}
