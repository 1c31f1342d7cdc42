//! The GPU workloads of `benches/WORKLOADS.md` (`workloads --gpu`): the
//! names, metrics and units of `bench_jax_gpu.py`, run on the `cuda`
//! backend (`JAXON_GPU_BENCH_BACKEND` picks another: `cuda-sim` with
//! `--smoke` checks the harness on a machine without a GPU).
//!
//! Inputs are placed on the device before timing (`device_put`, or drawn
//! there by `random`), and one unit of work is one call followed by
//! `block_until_ready`. `--smoke` runs every workload at tiny sizes, to
//! check the harness, not the machine. The CPU workloads that WORKLOADS.md
//! reuses (`scan_rnn`, `fori_loop_1000`, `compile_mlp_grad`,
//! `dispatch_tiny`) run again with `_gpu` appended to their record names.

use super::{backend_name, normal, ok, ready, uniform, Settings};
use crate::measure::{emit, measure, sig, timing_details, Measurement};
use jaxon::prelude::*;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};

static SMOKE: AtomicBool = AtomicBool::new(false);

/// Tiny sizes for every workload (`--smoke`).
pub fn set_smoke(on: bool) {
    SMOKE.store(on, Ordering::Relaxed);
}

fn smoke() -> bool {
    SMOKE.load(Ordering::Relaxed)
}

/// `full`, or `tiny` under `--smoke`.
pub(super) fn size(full: usize, tiny: usize) -> usize {
    if smoke() {
        tiny
    } else {
        full
    }
}

/// The backend the GPU workloads run on.
pub fn gpu_backend() -> String {
    std::env::var("JAXON_GPU_BENCH_BACKEND").unwrap_or_else(|_| "cuda".into())
}

/// A GPU workload group: its name (as `bench_jax_gpu.py --list` prints
/// it), its records, and the function.
pub type GpuWorkload = super::Workload;

/// Every GPU workload, in WORKLOADS.md order.
pub const GPU_WORKLOADS: &[GpuWorkload] = &[
    (
        "dispatch_tiny_gpu",
        &["dispatch_tiny_gpu", "dispatch_tiny_async_gpu"],
        super::dispatch_tiny,
    ),
    (
        "copy_bandwidth_gpu",
        &["copy_bandwidth_gpu"],
        copy_bandwidth,
    ),
    ("eltwise_fused_gpu", &["eltwise_fused_gpu"], eltwise_fused),
    ("softmax_gpu", &["softmax_gpu"], softmax),
    (
        "reduce_sum_rows_gpu",
        &["reduce_sum_rows_gpu"],
        reduce_sum_rows,
    ),
    ("layernorm_gpu", &["layernorm_gpu"], layernorm),
    ("matmul_bf16_gpu", &["matmul_bf16_gpu"], matmul_bf16),
    ("matmul_f32_gpu", &["matmul_f32_gpu"], matmul_f32),
    (
        "mlp_train_step_gpu",
        &["mlp_train_step_gpu"],
        mlp_train_step,
    ),
    (
        "scan_rnn_gpu",
        &["scan_rnn_fwd_gpu", "scan_rnn_grad_gpu"],
        super::scan_rnn,
    ),
    (
        "fori_loop_1000_gpu",
        &["fori_loop_1000_gpu"],
        super::fori_loop_1000,
    ),
    (
        "compile_mlp_grad_gpu",
        &["compile_mlp_grad_gpu"],
        super::compile_mlp_grad,
    ),
    (
        "pallas_matmul_bf16_gpu",
        &["pallas_matmul_bf16_gpu"],
        super::gpu_pallas::pallas_matmul_bf16,
    ),
    (
        "pallas_softmax_gpu",
        &["pallas_softmax_gpu"],
        super::gpu_pallas::pallas_softmax,
    ),
    ("attention_fwd_gpu", &["attention_fwd_gpu"], attention_fwd),
];

/// Runs a jitted function to a ready result once, then measures one call
/// plus `block_until_ready` per unit.
pub(super) fn time_ready<T: jaxon::pytree::Pytree + Clone, F: Fn(T) -> Array>(
    f: &jaxon::Jit<F, T, Array>,
    args: &T,
    s: Settings,
) -> (Array, Measurement) {
    let first = f.call(args.clone()).expect("runs");
    ready(&first);
    let m = measure(
        || ready(&f.call(args.clone()).expect("runs")),
        s.reps,
        s.min_time,
        2,
    );
    (first, m)
}

pub(super) fn on_device(x: Array) -> Array {
    let x = jaxon::device_put(&x).expect("device_put");
    ready(&x);
    x
}

/// Emits a record with the backend and the smoke flag in its details.
pub(super) fn emit_gpu(
    name: &str,
    metric: &str,
    value: f64,
    unit: &str,
    mut d: Map<String, Value>,
) {
    d.insert("backend".into(), json!(backend_name()));
    d.insert("smoke".into(), json!(smoke()));
    emit(name, metric, value, unit, d);
}

fn bandwidth(name: &str, m: &Measurement, nbytes: f64, mut d: Map<String, Value>) {
    d.insert("bytes".into(), json!(nbytes));
    emit_gpu(
        name,
        "bandwidth",
        sig(nbytes / m.median_s / 1e9, 4),
        "GB/s",
        d,
    );
}

/// A device-to-device copy of `f32[2^28]`: the best of `x + 0.0` and `-x`
/// (both read and write every element; XLA folds `jnp.copy`, so does
/// jaxon's simplifier).
fn copy_bandwidth(s: Settings) {
    let n = size(1 << 28, 1 << 12);
    let x = on_device(uniform(20, &[n], -1.0, 1.0));
    let add = jit(|x: Array| x + 0.0);
    let neg = jit(|x: Array| -x);
    let (ya, ma) = time_ready(&add, &x, s);
    let (_, mn) = time_ready(&neg, &x, s);
    let best = if ma.median_s <= mn.median_s { &ma } else { &mn };
    let mut d = timing_details(best, 1e3, "ms", 1.0);
    d.insert("n".into(), json!(n));
    d.insert("add_zero_ms".into(), json!(sig(ma.median_s * 1e3, 4)));
    d.insert("neg_ms".into(), json!(sig(mn.median_s * 1e3, 4)));
    d.insert(
        "check".into(),
        json!(ya.to_vec::<f32>()[..4] == x.to_vec::<f32>()[..4]),
    );
    bandwidth("copy_bandwidth_gpu", best, 8.0 * n as f64, d);
}

/// `jit(tanh(x*2+1)*x - exp(-x))` on `f32[2^26]`.
fn eltwise_fused(s: Settings) {
    let n = size(1 << 26, 1 << 12);
    let x = on_device(uniform(3, &[n], -1.0, 1.0));
    let f = jit(|x: Array| (&x * 2.0 + 1.0).tanh() * &x - (-&x).exp());
    let (y, m) = time_ready(&f, &x, s);
    let (xs, ys) = (x.to_vec::<f32>(), y.to_vec::<f32>());
    let err = (0..n)
        .step_by(4099)
        .map(|i| {
            let v = f64::from(xs[i]);
            ((v * 2.0 + 1.0).tanh() * v - (-v).exp() - f64::from(ys[i])).abs()
        })
        .fold(0.0, f64::max);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("n".into(), json!(n));
    d.insert("max_abs_err_sampled".into(), json!(err));
    bandwidth("eltwise_fused_gpu", &m, 8.0 * n as f64, d);
}

/// Row softmax of `f32[8192,8192]`.
fn softmax(s: Settings) {
    let n = size(8192, 64);
    let x = on_device(normal(4, &[n, n]));
    let f = jit(|x: Array| {
        let e = (&x - ok(jnp::max(&x, [1], true))).exp();
        let total = ok(jnp::sum(&e, [1], true));
        e / total
    });
    let (y, m) = time_ready(&f, &x, s);
    let rows = ok(jnp::sum(&y, [1], false)).to_vec::<f32>();
    let err = rows.iter().map(|r| (r - 1.0).abs()).fold(0.0f32, f32::max);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("shape".into(), json!([n, n]));
    d.insert("max_row_sum_err".into(), json!(err));
    bandwidth("softmax_gpu", &m, 8.0 * (n * n) as f64, d);
}

/// `jit(sum(x, axis=1))` of `f32[16384,16384]`.
fn reduce_sum_rows(s: Settings) {
    let n = size(16384, 64);
    let x = on_device(normal(5, &[n, n]));
    let f = jit(|x: Array| ok(jnp::sum(&x, [1], false)));
    let (y, m) = time_ready(&f, &x, s);
    let xs = x.to_vec::<f32>();
    let want: f64 = xs[..n].iter().map(|v| f64::from(*v)).sum();
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("shape".into(), json!([n, n]));
    d.insert(
        "row0_abs_err".into(),
        json!((f64::from(y.to_vec::<f32>()[0]) - want).abs()),
    );
    bandwidth("reduce_sum_rows_gpu", &m, 4.0 * (n * n + n) as f64, d);
}

/// Layer norm over the last axis of `f32[8192,8192]`, with `g` and `b`.
fn layernorm(s: Settings) {
    let n = size(8192, 64);
    let x = on_device(normal(21, &[n, n]));
    let g = on_device(normal(22, &[n]) * 0.1 + 1.0);
    let b = on_device(normal(23, &[n]) * 0.1);
    let f = jit(|(x, g, b): (Array, Array, Array)| {
        let mean = ok(jnp::mean(&x, [1], true));
        let c = &x - &mean;
        let var = ok(jnp::mean(&(&c * &c), [1], true));
        c * (var + 1e-5).rsqrt() * g + b
    });
    let (_, m) = time_ready(&f, &(x, g, b), s);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("shape".into(), json!([n, n]));
    bandwidth("layernorm_gpu", &m, (8 * n * n + 8 * n) as f64, d);
}

fn matmul(s: Settings, name: &str, n: usize, dtype: DType, seeds: (u64, u64)) {
    let a = on_device(normal(seeds.0, &[n, n]).astype(dtype));
    let b = on_device(normal(seeds.1, &[n, n]).astype(dtype));
    let f = jit(|(a, b): (Array, Array)| a.matmul(&b));
    let (first, m) = time_ready(&f, &(a.clone(), b.clone()), s);
    // Row 0 against an f64 product of the same rounded inputs.
    let (av, bv) = (
        a.astype(DType::F32).to_vec::<f32>(),
        b.astype(DType::F32).to_vec::<f32>(),
    );
    let got = first.astype(DType::F32).to_vec::<f32>();
    let err = (0..n.min(64))
        .map(|j| {
            let want: f64 = (0..n)
                .map(|k| f64::from(av[k]) * f64::from(bv[k * n + j]))
                .sum();
            (f64::from(got[j]) - want).abs() / want.abs().max(1.0)
        })
        .fold(0.0, f64::max);
    let flops = 2.0 * (n as f64).powi(3);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("n".into(), json!(n));
    d.insert("dtype".into(), json!(dtype.short_name()));
    d.insert("row0_rel_err".into(), json!(err));
    emit_gpu(
        name,
        "throughput",
        sig(flops / m.median_s / 1e12, 4),
        "TFLOP/s",
        d,
    );
}

/// `jit(a @ b)`, bf16 8192³.
fn matmul_bf16(s: Settings) {
    matmul(s, "matmul_bf16_gpu", size(8192, 64), DType::BF16, (30, 31));
}

/// `jit(a @ b)`, f32 4096³.
fn matmul_f32(s: Settings) {
    matmul(s, "matmul_f32_gpu", size(4096, 64), DType::F32, (6, 7));
}

/// One SGD step of an MLP 784-4096-4096-10 on a batch of 4096.
fn mlp_train_step(s: Settings) {
    let (hidden, batch) = (size(4096, 32), size(4096, 16));
    super::mlp::train_step_workload(s, "mlp_train_step_gpu", &[784, hidden, hidden, 10], batch);
}

/// Causal self-attention, bf16, `[4, 4096, 16, 128]` (BTNH): the `jnp`
/// form (the XLA path of `dot_product_attention`) and a Pallas flash
/// kernel (`gpu_pallas::flash_attention`); the record is the faster, as
/// `bench_jax_gpu.py` reports its best implementation.
fn attention_fwd(s: Settings) {
    let (b, t, h, dh) = (4, size(4096, 16), 16, size(128, 8));
    let q = on_device(normal(50, &[b, t, h, dh]).astype(DType::BF16));
    let k = on_device(normal(51, &[b, t, h, dh]).astype(DType::BF16));
    let v = on_device(normal(52, &[b, t, h, dh]).astype(DType::BF16));
    let scale = 1.0 / (dh as f64).sqrt();
    let f = jit(move |(q, k, v): (Array, Array, Array)| {
        let t = q.shape()[1];
        // [B,N,T,S] logits in f32.
        let qh = ok(jnp::transpose(&q, Some(&[0, 2, 1, 3]))).astype(DType::F32);
        let kh = ok(jnp::transpose(&k, Some(&[0, 2, 3, 1]))).astype(DType::F32);
        let vh = ok(jnp::transpose(&v, Some(&[0, 2, 1, 3]))).astype(DType::F32);
        let logits = qh.matmul(&kh) * scale;
        let mask = ok(jnp::tril(&ok(jnp::ones(&[t, t], DType::Bool)), 0));
        let logits = ok(jnp::where_(
            &mask,
            &logits,
            &Array::scalar(f32::NEG_INFINITY),
        ));
        let p = ok(jaxon::nn::softmax(&logits, -1));
        ok(jnp::transpose(&p.matmul(&vh), Some(&[0, 2, 1, 3]))).astype(DType::BF16)
    });
    let args = (q, k, v);
    let (want, m) = time_ready(&f, &args, s);
    let bq = size(64, 8);
    let flash = jit(move |(q, k, v): (Array, Array, Array)| {
        let heads_first = |x: &Array| {
            ok(jnp::transpose(x, Some(&[0, 2, 1, 3]))).reshape(&[
                (b * h) as isize,
                t as isize,
                dh as isize,
            ])
        };
        let o = super::gpu_pallas::flash_attention(
            &heads_first(&q),
            &heads_first(&k),
            &heads_first(&v),
            bq,
        );
        ok(jnp::transpose(
            &o.reshape(&[b as isize, h as isize, t as isize, dh as isize]),
            Some(&[0, 2, 1, 3]),
        ))
        .astype(DType::BF16)
    });
    let (got, mf) = time_ready(&flash, &args, s);
    let err = {
        let (g, w) = (
            got.astype(DType::F32).to_vec::<f32>(),
            want.astype(DType::F32).to_vec::<f32>(),
        );
        g.iter()
            .zip(&w)
            .map(|(a, b)| f64::from((a - b).abs()))
            .fold(0.0, f64::max)
    };
    let flops = 4.0 * (b * h * t * t * dh) as f64 / 2.0;
    let rate = |m: &Measurement| sig(flops / m.median_s / 1e12, 4);
    let best = if mf.median_s < m.median_s { &mf } else { &m };
    let mut d = timing_details(best, 1e3, "ms", 1.0);
    d.insert("shape_btnh".into(), json!([b, t, h, dh]));
    d.insert("jnp_TFLOP_per_s".into(), json!(rate(&m)));
    d.insert("pallas_flash_TFLOP_per_s".into(), json!(rate(&mf)));
    d.insert("pallas_flash_block_q".into(), json!(bq));
    d.insert("pallas_vs_jnp_max_abs_err".into(), json!(sig(err, 3)));
    d.insert(
        "best_impl".into(),
        json!(if mf.median_s < m.median_s {
            "pallas flash (jaxon.pallas)"
        } else {
            "jnp (XLA path)"
        }),
    );
    emit_gpu("attention_fwd_gpu", "throughput", rate(best), "TFLOP/s", d);
}
