//! Criterion benches of dynamic shapes: the `fori_loop_1000` recurrence
//! compiled once with its length abstracted (`abstracted_axes`), against
//! the same loop compiled for the static shape. Their difference is the
//! dynamic-shape driver's overhead per iteration (a step list run by the
//! driver instead of one native loop).

use criterion::{criterion_group, criterion_main, Criterion};
use jaxon::prelude::*;

fn recurrence(c: Array) -> Array {
    fori_loop(0, 1000, |_, c: Array| &c * 0.999 + c.sin() * 0.001, c).expect("traces")
}

fn bench_dynamic(c: &mut Criterion) {
    let x = Array::from_vec((0..64).map(|i| (i as f32 * 0.37).sin()).collect(), &[64]);
    let fixed = jit(recurrence);
    let dynamic = jit(recurrence).abstracted_axes(&[&[(0, "n")]]);
    // Both compile to the same values: the bench measures equal work.
    let (a, b) = (
        fixed.call(x.clone()).expect("runs").to_vec::<f32>(),
        dynamic.call(x.clone()).expect("runs").to_vec::<f32>(),
    );
    assert_eq!(a, b, "static and dynamic loops disagree");
    c.bench_function("fori_loop_1000_static_f32[64]", |bch| {
        bch.iter(|| fixed.call(x.clone()).expect("runs"))
    });
    c.bench_function("fori_loop_1000_dynamic_f32[n=64]", |bch| {
        bch.iter(|| dynamic.call(x.clone()).expect("runs"))
    });
    // One executable serves every size.
    let x1000 = Array::from_vec(
        (0..1000).map(|i| (i as f32 * 0.11).cos()).collect(),
        &[1000],
    );
    dynamic.call(x1000.clone()).expect("runs");
    assert_eq!(dynamic.compile_count(), 1, "the dynamic loop recompiled");
    c.bench_function("fori_loop_1000_dynamic_f32[n=1000]", |bch| {
        bch.iter(|| dynamic.call(x1000.clone()).expect("runs"))
    });
}

criterion_group!(benches, bench_dynamic);
criterion_main!(benches);
