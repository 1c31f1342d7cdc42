//! Criterion benches of tracing and dispatch: the `trace_chain_1000`,
//! `trace_mlp_grad` and `dispatch_tiny` workloads.

use criterion::{criterion_group, criterion_main, Criterion};
use jaxon::prelude::*;
use jaxon_benches::workloads::{chain, mlp_data, mlp_value_and_grad};

fn bench_trace(c: &mut Criterion) {
    let x = Array::from_vec((0..128).map(|i| i as f32 * 0.01).collect(), &[128]);
    c.bench_function("trace_chain_1000", |b| {
        b.iter(|| make_jaxpr(chain)(x.clone()).expect("traces"))
    });
    let args = mlp_data();
    c.bench_function("trace_mlp_grad", |b| {
        b.iter(|| make_jaxpr(mlp_value_and_grad)(args.clone()).expect("traces"))
    });
    let f = jit(|x: Array| x + 1.0);
    let x4 = Array::from_vec(vec![0.0f32, 1.0, 2.0, 3.0], &[4]);
    c.bench_function("dispatch_tiny", |b| {
        b.iter(|| f.call(x4.clone()).expect("runs"))
    });
}

criterion_group!(benches, bench_trace);
criterion_main!(benches);
