//! The physical anchors of the CPU workloads, measured in the same run as
//! them: `fma_peak_cpu` (GFLOP/s of a register-only FMA loop at the
//! widest vector width the kernels may use, on every thread) and
//! `copy_bandwidth_cpu` (GB/s of a large copy, read plus write, on every
//! thread). A kernel's ratio to these says how far it is from the
//! machine's limit, whatever the machine.
//!
//! The FMA loop keeps independent accumulator chains per thread, more
//! than the FMA latency (4 cycles) times the FMA pipes (2) on every x86
//! core so far, so the pipes, not the chains, bound it: 16 in `zmm`, 12 in
//! `ymm` (16 chains and two operands would spill AVX2's 16 registers and
//! halve the rate, as a first version did). Its width follows
//! `jaxon_backend_cpu::isa::isa()`, so `JAXON_CPU_ISA=avx2` measures the
//! 256-bit peak on an AVX-512 machine.

use super::Settings;
use crate::measure::{emit, measure, sig, timing_details};
use jaxon_backend_cpu::isa::{isa, Isa};
use serde_json::json;
use std::time::Instant;

/// Accumulator chains per thread in `zmm` registers (32 of them).
const CHAINS: usize = 16;
/// Accumulator chains per thread in `ymm` registers (16 of them).
const CHAINS_YMM: usize = 12;
/// FMA steps per chain in one call of the inner loop.
const STEPS: usize = 1 << 16;
/// Calls of the inner loop per thread in one burst: a burst of one call
/// (about 0.3 ms) lost 10–20% of it to starting and joining the threads,
/// so the anchor read below the rate JAX's matmul reaches on Zen 4.
const CALLS: usize = 32;

/// The threads the workloads run on: every CPU this process may use.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `fma_peak_cpu`: the best of several timed bursts of the FMA loop on
/// all threads at once.
pub fn fma_peak_cpu(s: Settings) {
    let level = isa();
    let (lanes, chains, run): (usize, usize, fn(usize) -> f32) = match level {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => (16, CHAINS, |steps| {
            // SAFETY: `isa()` found AVX-512 F on this CPU.
            unsafe { x86::fma_zmm(steps) }
        }),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => (8, CHAINS_YMM, |steps| {
            // SAFETY: `isa()` found AVX2 and FMA on this CPU.
            unsafe { x86::fma_ymm(steps) }
        }),
        _ => (1, CHAINS, scalar_fma),
    };
    let n = threads();
    let burst = || {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..n)
                .map(|_| scope.spawn(|| (0..CALLS).map(|_| run(STEPS)).sum::<f32>()))
                .collect();
            for h in handles {
                std::hint::black_box(h.join().expect("the FMA loop does not panic"));
            }
        })
    };
    let m = measure(burst, s.reps, s.min_time, 2);
    let flops = (2 * lanes * chains * STEPS * CALLS * n) as f64;
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("threads".into(), json!(n));
    d.insert("vector_bits".into(), json!(lanes * 32));
    d.insert(
        "best_GFLOP_per_s".into(),
        json!(sig(flops / m.min_s / 1e9, 4)),
    );
    emit(
        "fma_peak_cpu",
        "throughput",
        sig(flops / m.median_s / 1e9, 4),
        "GFLOP/s",
        d,
    );
}

/// The portable loop: `CHAINS` scalar chains, as the compiler vectorises
/// or not.
fn scalar_fma(steps: usize) -> f32 {
    let mut acc = [1.0f32; CHAINS];
    let (x, y) = std::hint::black_box((0.999_999f32, 1e-7f32));
    for _ in 0..steps {
        for a in &mut acc {
            *a = a.mul_add(x, y);
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The vector FMA loops, one per width.
    use super::{CHAINS, CHAINS_YMM, STEPS};
    use std::arch::x86_64::*;

    /// `CHAINS` 512-bit chains of `steps` FMAs each.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma_zmm(steps: usize) -> f32 {
        let x = _mm512_set1_ps(std::hint::black_box(0.999_999));
        let y = _mm512_set1_ps(std::hint::black_box(1e-7));
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        for _ in 0..steps.min(STEPS) {
            for a in &mut acc {
                *a = _mm512_fmadd_ps(*a, x, y);
            }
        }
        let sum = acc
            .iter()
            .fold(_mm512_setzero_ps(), |s, &a| _mm512_add_ps(s, a));
        _mm512_reduce_add_ps(sum)
    }

    /// `CHAINS_YMM` 256-bit chains of `steps` FMAs each.
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_ymm(steps: usize) -> f32 {
        let x = _mm256_set1_ps(std::hint::black_box(0.999_999));
        let y = _mm256_set1_ps(std::hint::black_box(1e-7));
        let mut acc = [_mm256_set1_ps(1.0); CHAINS_YMM];
        for _ in 0..steps.min(STEPS) {
            for a in &mut acc {
                *a = _mm256_fmadd_ps(*a, x, y);
            }
        }
        let sum = acc
            .iter()
            .fold(_mm256_setzero_ps(), |s, &a| _mm256_add_ps(s, a));
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), sum);
        lanes.iter().sum()
    }
}

/// Bytes copied by `copy_bandwidth_cpu`: 256 MiB, far past every cache.
const COPY_BYTES: usize = 256 << 20;

/// `copy_bandwidth_cpu`: a 256 MiB `f32` copy into a buffer already
/// touched, split evenly over all threads; bandwidth counts the bytes
/// read and the bytes written, as `eltwise_fused_16M` and `softmax_4096`
/// count theirs.
pub fn copy_bandwidth_cpu(s: Settings) {
    let n = COPY_BYTES / 4;
    let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut dst = vec![0f32; n];
    let threads = threads();
    let part = n.div_ceil(threads);
    let mut copy = || {
        std::thread::scope(|scope| {
            for (d, s) in dst.chunks_mut(part).zip(src.chunks(part)) {
                scope.spawn(move || d.copy_from_slice(s));
            }
        });
        std::hint::black_box(&dst);
    };
    let t0 = Instant::now();
    copy();
    let first = t0.elapsed();
    let m = measure(copy, s.reps, s.min_time, 1);
    assert!(
        dst[n - 1] == (n - 1) as f32 && dst[n / 3] == (n / 3) as f32,
        "the copy copied"
    );
    let bytes = 2.0 * COPY_BYTES as f64;
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("threads".into(), json!(threads));
    d.insert("bytes".into(), json!(bytes));
    d.insert("first_ms".into(), json!(sig(first.as_secs_f64() * 1e3, 4)));
    d.insert("best_GB_per_s".into(), json!(sig(bytes / m.min_s / 1e9, 4)));
    emit(
        "copy_bandwidth_cpu",
        "bandwidth",
        sig(bytes / m.median_s / 1e9, 4),
        "GB/s",
        d,
    );
}
