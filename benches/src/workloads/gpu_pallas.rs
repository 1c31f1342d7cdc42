//! The Pallas GPU workloads (`pallas_matmul_bf16_gpu`, `pallas_softmax_gpu`,
//! and the flash-attention variant of `attention_fwd_gpu`), written with
//! `jaxon::pallas` as the portable `pallas_call` kernels of
//! `bench_jax_gpu.py`. They run on the CUDA backend's `pallas_call`
//! lowering (one thread block per program; bf16 `dot`s on tensor cores,
//! `mma.sync`, since 2026-11-27, untimed on a GPU yet). Each checks its
//! result against the same computation written with `jnp` on the same
//! backend.

use super::{normal, ok, Settings};
use crate::measure::{sig, timing_details};
use jaxon::pallas::ops::FlashAttention;
use jaxon::pallas::{dot, fori_loop, load, pallas_call, shape_dtype, BlockSpec, Ref};
use jaxon::prelude::*;
use serde_json::json;

use super::gpu::{emit_gpu, on_device, size, time_ready};

/// The largest `|got - want| / (1 + |want|)` over the elements.
fn max_rel_err(got: &Array, want: &Array) -> f64 {
    let (g, w) = (
        got.astype(DType::F32).to_vec::<f32>(),
        want.astype(DType::F32).to_vec::<f32>(),
    );
    g.iter()
        .zip(&w)
        .map(|(a, b)| f64::from((a - b).abs()) / (1.0 + f64::from(b.abs())))
        .fold(0.0, f64::max)
}

/// The portable Pallas matmul, bf16 4096³: grid (M/128, N/128), blocks
/// `(128, K)` and `(K, 128)`, a `fori_loop` over K in steps of 64
/// accumulating `dot` in f32, the bf16 result.
pub(super) fn pallas_matmul_bf16(s: Settings) {
    let (n, bm, bk) = (size(4096, 32), size(128, 16), size(64, 8));
    let a = on_device(normal(40, &[n, n]).astype(DType::BF16));
    let b = on_device(normal(41, &[n, n]).astype(DType::BF16));
    let kernel = move |r: &[Ref]| {
        let (x_ref, y_ref, o_ref) = (&r[0], &r[1], &r[2]);
        let acc0 = ok(jnp::zeros(&[bm, bm], DType::F32));
        let acc = ok(fori_loop(
            0,
            n / bk,
            |k, acc: Array| {
                let start = &k * bk as i32;
                let x = x_ref.get(jaxon::pallas::ix![.., jaxon::pallas::ds(&start, bk)]);
                let y = y_ref.get(jaxon::pallas::ix![jaxon::pallas::ds(&start, bk), ..]);
                acc + dot(&x, &y)
            },
            acc0,
        ));
        o_ref.set(jaxon::pallas::ix![.., ..], acc.astype(DType::BF16));
    };
    let call = pallas_call(kernel, shape_dtype(&[n, n], DType::BF16))
        .grid([n / bm, n / bm])
        .in_specs(vec![
            BlockSpec::map2([bm, n], |i, _| (i, 0)),
            BlockSpec::map2([n, bm], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bm], |i, j| (i, j)));
    let f = jit(move |(a, b): (Array, Array)| ok(call.call1(&[a, b])));
    let (got, m) = time_ready(&f, &(a.clone(), b.clone()), s);
    let xla = jit(|(a, b): (Array, Array)| a.matmul(&b));
    let (want, mx) = time_ready(&xla, &(a, b), s);
    let flops = 2.0 * (n as f64).powi(3);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("n".into(), json!(n));
    d.insert("blocks".into(), json!([bm, bm, bk]));
    d.insert("variant".into(), json!("pallas_call (portable kernel)"));
    d.insert(
        "max_rel_err_vs_matmul".into(),
        json!(sig(max_rel_err(&got, &want), 3)),
    );
    d.insert(
        "ratio_to_matmul_same_size".into(),
        json!(sig(mx.median_s / m.median_s, 4)),
    );
    emit_gpu(
        "pallas_matmul_bf16_gpu",
        "throughput",
        sig(flops / m.median_s / 1e12, 4),
        "TFLOP/s",
        d,
    );
}

/// The portable Pallas row softmax of the `softmax_gpu` input: grid (M,),
/// blocks `(None, N)`.
pub(super) fn pallas_softmax(s: Settings) {
    let n = size(8192, 64);
    let x = on_device(normal(4, &[n, n]));
    let kernel = |r: &[Ref]| {
        let row = load(&r[0], ..).read();
        let e = (&row - row.max(All)).exp();
        r[1].store(&e / e.sum(All));
    };
    let spec = || BlockSpec::map1([None, Some(n)], |i| (i, 0));
    let call = pallas_call(kernel, shape_dtype(&[n, n], DType::F32))
        .grid(n)
        .in_specs(vec![spec()])
        .out_spec(spec());
    let f = jit(move |x: Array| ok(call.call1(&[x])));
    let (got, m) = time_ready(&f, &x, s);
    let xla = jit(|x: Array| {
        let e = (&x - ok(jnp::max(&x, [1], true))).exp();
        &e / ok(jnp::sum(&e, [1], true))
    });
    let (want, mx) = time_ready(&xla, &x, s);
    let nbytes = 8.0 * (n * n) as f64;
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("shape".into(), json!([n, n]));
    d.insert("bytes".into(), json!(nbytes));
    d.insert("variant".into(), json!("pallas_call"));
    d.insert(
        "max_rel_err_vs_jnp".into(),
        json!(sig(max_rel_err(&got, &want), 3)),
    );
    d.insert(
        "ratio_to_jnp_softmax".into(),
        json!(sig(mx.median_s / m.median_s, 4)),
    );
    emit_gpu(
        "pallas_softmax_gpu",
        "bandwidth",
        sig(nbytes / m.median_s / 1e9, 4),
        "GB/s",
        d,
    );
}

/// Causal flash attention forward (`jaxon::pallas::ops::flash_attention`)
/// on heads-first `[B·N, T, D]` operands, blocks of `bq` queries and keys.
pub(super) fn flash_attention(q: &Array, k: &Array, v: &Array, bq: usize) -> Array {
    let p = FlashAttention {
        block_q: bq,
        block_k: bq,
        causal: true,
        scale: None,
    };
    ok(jaxon::pallas::ops::flash_attention(q, k, v, &p))
}
