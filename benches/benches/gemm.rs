//! Criterion benches of `jit(a @ b)` on the CPU backend, in f32 and f64:
//! square products and the MLP's 256×784·784×1024 layer. Run once as is
//! and once with `JAXON_CPU_PACKED_GEMM=0` to compare the packed GEMM
//! (`backend-cpu/src/dot/packed.rs`) with the `gemm` crate's.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use jaxon::prelude::*;

/// Deterministic values in `[-1, 1)` that are not round numbers.
fn values(len: usize, salt: usize) -> Vec<f64> {
    (0..len)
        .map(|i| ((i * 7919 + salt * 104_729) % 2003) as f64 / 1001.5 - 1.0)
        .collect()
}

fn bench_gemm(c: &mut Criterion) {
    let product = jit(|(a, b): (Array, Array)| a.matmul(&b));
    let mut group = c.benchmark_group("matmul");
    group.sample_size(20);
    for (m, k, n) in [(1024, 1024, 1024), (256, 784, 1024)] {
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        let (av, bv) = (values(m * k, 1), values(k * n, 2));
        let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        let (a32, b32) = (
            Array::from_vec(f32s(&av), &[m, k]),
            Array::from_vec(f32s(&bv), &[k, n]),
        );
        let (a64, b64) = (
            Array::from_vec(av.clone(), &[m, k]),
            Array::from_vec(bv.clone(), &[k, n]),
        );
        // One entry of each against an f64 dot product: the bench times
        // real products.
        let (i, j) = (m / 3, n / 2 + 1);
        let exact: f64 = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
        let got32 = product
            .call((a32.clone(), b32.clone()))
            .expect("runs")
            .to_vec::<f32>();
        let got64 = product
            .call((a64.clone(), b64.clone()))
            .expect("runs")
            .to_vec::<f64>();
        assert!(
            (got32[i * n + j] as f64 - exact).abs() < 1e-3,
            "f32 product is wrong"
        );
        assert!(
            (got64[i * n + j] - exact).abs() < 1e-10,
            "f64 product is wrong"
        );
        group.bench_function(format!("f32_{m}x{k}x{n}"), |bch| {
            bch.iter(|| product.call((a32.clone(), b32.clone())).expect("runs"))
        });
        group.bench_function(format!("f64_{m}x{k}x{n}"), |bch| {
            bch.iter(|| product.call((a64.clone(), b64.clone())).expect("runs"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_gemm);
criterion_main!(benches);
