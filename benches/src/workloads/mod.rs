//! The workloads of `benches/WORKLOADS.md`, each a function printing its JSON records in the schema of
//! `bench_jax.py`. Inputs come from jaxon's own `random` with the seeds
//! `bench_jax.py` uses: the values differ from NumPy's, the distributions
//! do not.

mod dispatch;
pub mod gpu;
mod gpu_pallas;
mod kernels;
mod loops;
mod machine;
mod mlp;
mod pallas;
mod spmd;

pub use dispatch::{chain, dispatch_tiny, trace_chain_1000};
pub use kernels::{
    eltwise_fused_16m, matmul_1024, matmul_2048, matmul_bf16_1024, reduce_sum_rows, softmax_4096,
};
pub use loops::{fori_loop_1000, scan_rnn};
pub use machine::{copy_bandwidth_cpu, fma_peak_cpu};
pub use mlp::{
    compile_mlp_grad, init_mlp, loss1, mlp_data, mlp_inputs, mlp_loss, mlp_train_step,
    mlp_value_and_grad, per_example_grads, trace_mlp_grad, Params, MLP_BATCH, MLP_SIZES,
};
pub use pallas::{pallas_add_interpret, pallas_matmul_gelu, pallas_matmul_interpret};
pub use spmd::psum_64mib_cpu2;

use jaxon::prelude::*;
use std::time::Duration;

/// Settings shared by every workload.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Repetitions (11, or 3 with `--quick`).
    pub reps: usize,
    /// Minimum duration of one repetition.
    pub min_time: Duration,
    /// `--quick`.
    pub quick: bool,
}

/// A workload: its name, the metrics it emits, and the function.
pub type Workload = (&'static str, &'static [&'static str], fn(Settings));

/// Every workload implemented here, in WORKLOADS.md order.
pub const WORKLOADS: &[Workload] = &[
    // Not in WORKLOADS.md: issue 24's physical anchors, measured in the
    // same run as the workloads they bound.
    ("fma_peak_cpu", &["fma_peak_cpu"], fma_peak_cpu),
    (
        "copy_bandwidth_cpu",
        &["copy_bandwidth_cpu"],
        copy_bandwidth_cpu,
    ),
    ("trace_chain_1000", &["trace_chain_1000"], trace_chain_1000),
    ("trace_mlp_grad", &["trace_mlp_grad"], trace_mlp_grad),
    ("compile_mlp_grad", &["compile_mlp_grad"], compile_mlp_grad),
    (
        "dispatch_tiny",
        &["dispatch_tiny", "dispatch_tiny_async"],
        dispatch_tiny,
    ),
    (
        "eltwise_fused_16M",
        &["eltwise_fused_16M"],
        eltwise_fused_16m,
    ),
    ("softmax_4096", &["softmax_4096"], softmax_4096),
    ("reduce_sum_rows", &["reduce_sum_rows"], reduce_sum_rows),
    ("matmul_1024", &["matmul_1024"], matmul_1024),
    ("matmul_2048", &["matmul_2048"], matmul_2048),
    // Not in WORKLOADS.md: issue 24's bf16 GEMM (`vdpbf16ps`).
    ("matmul_bf16_1024", &["matmul_bf16_1024"], matmul_bf16_1024),
    ("mlp_train_step", &["mlp_train_step"], mlp_train_step),
    (
        "per_example_grads",
        &["per_example_grads"],
        per_example_grads,
    ),
    ("fori_loop_1000", &["fori_loop_1000"], fori_loop_1000),
    ("scan_rnn", &["scan_rnn_fwd", "scan_rnn_grad"], scan_rnn),
    (
        "pallas_matmul_interpret",
        &["pallas_matmul_interpret"],
        pallas_matmul_interpret,
    ),
    (
        "pallas_add_interpret",
        &["pallas_add_interpret"],
        pallas_add_interpret,
    ),
    // Not in WORKLOADS.md: issue 7's fused matmul + GELU against jit.
    (
        "pallas_matmul_gelu",
        &["pallas_matmul_gelu"],
        pallas_matmul_gelu,
    ),
    // Not in WORKLOADS.md: issue 22's psum between 2 CPU devices, with
    // its 64 MiB copy anchor.
    (
        "psum_64mib_cpu2",
        &["copy_64mib", "psum_64mib_cpu2"],
        psum_64mib_cpu2,
    ),
];

/// Turns an error inside a traced closure into jaxon's unwinding payload,
/// which the enclosing entry point (`make_jaxpr`, `jit(..).call`) catches.
fn ok<T>(r: Result<T>) -> T {
    r.unwrap_or_else(|e| std::panic::resume_unwind(Box::new(e)))
}

/// Waits for `x`'s value (`block_until_ready`: a no-op for host arrays,
/// a device synchronisation for GPU ones): the end of one unit of work.
fn ready(x: &Array) {
    std::hint::black_box(x.block_until_ready().expect("the computation succeeds"));
}

/// The name of the backend eager operations and `jit` run on.
pub fn backend_name() -> String {
    jaxon::eval_backend().map_or_else(|e| format!("none ({e})"), |b| b.name().to_string())
}

/// `x ~ N(0,1)` of `shape`, f32, from `seed`.
fn normal(seed: u64, shape: &[usize]) -> Array {
    ok(random::normal(&random::key(seed), shape, DType::F32))
}

/// `x ~ U(lo,hi)` of `shape`, f32, from `seed`.
fn uniform(seed: u64, shape: &[usize], lo: f32, hi: f32) -> Array {
    ok(random::uniform(
        &random::key(seed),
        shape,
        DType::F32,
        &Array::scalar(lo),
        &Array::scalar(hi),
    ))
}
