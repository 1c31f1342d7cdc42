//! Shared helpers of the differential tests: seeded random inputs, running
//! a jaxpr on the cpu backend and on the reference interpreter, and
//! comparing results exactly, in ulp, or with a relative tolerance.

#![allow(dead_code)]

#[cfg(target_os = "linux")]
pub mod guard;

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{parse_closed_jaxpr, Backend, ClosedJaxpr, DType, HostArray, Storage};
use std::sync::Arc;

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in [lo, hi].
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
}

/// How values are drawn for an argument.
#[derive(Clone, Copy, Debug)]
pub enum Dist {
    /// Floats uniform in [-r, r]; integers uniform in [-r, r] (unsigned: [0, r]).
    Uniform(f64),
    /// Floats uniform in [lo, hi].
    Between(f64, f64),
}

/// A random array of `dtype` and `shape`.
pub fn random(rng: &mut Rng, dtype: DType, shape: &[usize], dist: Dist) -> HostArray {
    let n: usize = shape.iter().product();
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            let (lo, hi) = match dist {
                Dist::Uniform(r) => (-r, r),
                Dist::Between(a, b) => (a, b),
            };
            if dtype.is_float() {
                lo + (hi - lo) * rng.unit()
            } else if dtype == DType::Bool {
                (rng.next() & 1) as f64
            } else if dtype.is_unsigned_int() {
                rng.range(0, hi as i64) as f64
            } else {
                rng.range(lo as i64, hi as i64) as f64
            }
        })
        .collect();
    HostArray::from_f64(dtype, shape, &vals).expect("shape matches")
}

/// Random arguments for every invar of `closed`.
pub fn random_args(closed: &ClosedJaxpr, seed: u64, dist: Dist) -> Vec<HostArray> {
    let mut rng = Rng::new(seed);
    closed
        .jaxpr
        .in_avals()
        .iter()
        .map(|a| {
            let shape = a.array().static_sizes().expect("static shapes");
            random(&mut rng, a.dtype(), &shape, dist)
        })
        .collect()
}

/// Parses a jaxpr without consts.
pub fn parse(text: &str) -> ClosedJaxpr {
    parse_closed_jaxpr(text, Vec::new()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs on a backend.
pub fn run(backend: &dyn Backend, closed: &ClosedJaxpr, args: &[HostArray]) -> Vec<HostArray> {
    let exe = backend
        .compile(closed)
        .unwrap_or_else(|e| panic!("{}: {e}", backend.name()));
    let bufs: Vec<_> = args
        .iter()
        .map(|a| backend.to_device(a).expect("to_device"))
        .collect();
    exe.execute(&bufs)
        .unwrap_or_else(|e| panic!("{}: {e}", backend.name()))
        .iter()
        .map(|b| b.to_host().expect("to_host"))
        .collect::<Vec<_>>()
}

/// Executes a compiled program with this thread's allocations guarded
/// (inputs are copied inside, so they are guarded too).
pub fn run_guarded(
    backend: &dyn Backend,
    exe: &dyn jaxon_ir::Executable,
    args: &[HostArray],
) -> Vec<HostArray> {
    let go = || {
        let bufs: Vec<_> = args
            .iter()
            .map(|a| backend.to_device(&a.clone()).expect("to_device"))
            .collect();
        exe.execute(&bufs)
            .unwrap_or_else(|e| panic!("{}: {e}", backend.name()))
            .iter()
            .map(|b| b.to_host().expect("to_host"))
            .collect::<Vec<_>>()
    };
    #[cfg(target_os = "linux")]
    return guard::guarded(go);
    #[cfg(not(target_os = "linux"))]
    go()
}

/// How results are compared.
#[derive(Clone, Copy, Debug)]
pub enum Tol {
    /// Bit for bit (NaNs compare equal to any NaN).
    Exact,
    /// Within this many units in the last place.
    Ulp(u64),
    /// `|a - b| <= rel * scale` where `scale` is the largest magnitude of
    /// the expected array and of the inputs (for reassociated sums and
    /// products, and for chains that cancel).
    Rel(f64),
}

/// The distance in ulp between two floats of the same width (as f64 bits
/// or f32 bits); NaN vs NaN is 0, NaN vs number is `u64::MAX`.
pub fn ulp_diff(a: f64, b: f64, f32w: bool) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == b {
        return 0;
    }
    if f32w {
        let key = |x: f32| {
            let i = x.to_bits() as i32;
            (if i < 0 { i32::MIN - i } else { i }) as i64
        };
        (key(a as f32) - key(b as f32)).unsigned_abs()
    } else {
        let key = |x: f64| {
            let i = x.to_bits() as i64;
            (if i < 0 { i64::MIN - i } else { i }) as i128
        };
        (key(a) - key(b)).unsigned_abs().min(u64::MAX as u128) as u64
    }
}

/// Asserts `got` matches `want` under `tol`.
/// `scale_floor` raises the scale of `Tol::Rel` (the inputs' magnitude, for
/// results that cancel).
pub fn assert_close(got: &HostArray, want: &HostArray, tol: Tol, scale_floor: f64, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let f32w = matches!(got.data(), Storage::F32(_));
    let float = got.dtype().is_float();
    let scale = (0..want.len())
        .map(|i| want.data().get_f64(i).abs())
        .filter(|x| x.is_finite())
        .fold(scale_floor.max(1e-30), f64::max);
    for i in 0..got.len() {
        let (g, w) = (got.data().get_f64(i), want.data().get_f64(i));
        let ok = if !float {
            got.data().get_i64(i) == want.data().get_i64(i)
                && (g == w || (g.is_nan() && w.is_nan()))
        } else {
            match tol {
                Tol::Exact => {
                    (g.is_nan() && w.is_nan())
                        || (g == w && g.is_sign_negative() == w.is_sign_negative())
                }
                Tol::Ulp(n) => ulp_diff(g, w, f32w) <= n,
                Tol::Rel(r) => (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= r * scale,
            }
        };
        assert!(
            ok,
            "{what}: element {i}: cpu {g:e} vs interpreter {w:e} ({tol:?})"
        );
    }
}

/// Runs `text` on both backends with random inputs (3 seeds) and compares.
pub fn check(text: &str, dist: Dist, tol: Tol) {
    let closed = parse(text);
    let cpu = CpuBackend::new();
    let interp = InterpreterBackend::new();
    // Compiled once, unguarded; executions run with guard pages after
    // every array when the test binary installs `guard::GuardAlloc`.
    let exe = cpu
        .compile(&closed)
        .unwrap_or_else(|e| panic!("cpu: {e}\n{text}"));
    for seed in 1..=3 {
        let args = random_args(&closed, seed, dist);
        let got = run_guarded(&cpu, exe.as_ref(), &args);
        let want = run(&interp, &closed, &args);
        assert_eq!(got.len(), want.len());
        let in_scale = args
            .iter()
            .flat_map(|a| (0..a.len()).map(|i| a.data().get_f64(i).abs()))
            .filter(|x| x.is_finite())
            .fold(0.0f64, f64::max);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_close(
                g,
                w,
                tol,
                in_scale,
                &format!("seed {seed} output {k} of\n{text}"),
            );
        }
    }
}

/// A shared backend for tests that want the cache exercised.
pub fn backend() -> Arc<CpuBackend> {
    Arc::new(CpuBackend::new())
}

/// Runs `text` (one float argument) on the default backend, where float
/// transcendental functions run as 256-bit tile routines on AVX2 CPUs, and
/// with them kept inline at 128 bits; returns both results (as f64, which
/// holds every f32 exactly: compare them with [`same_bits`]).
pub fn wide_and_narrow(text: &str, arg: &HostArray, fma: bool) -> (Vec<f64>, Vec<f64>) {
    let closed = parse_closed_jaxpr(text, Vec::new()).expect("parses");
    let bits = |backend: &CpuBackend| -> Vec<f64> {
        match run(backend, &closed, std::slice::from_ref(arg))[0].data() {
            Storage::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Storage::F64(v) => v.clone(),
            _ => panic!("float output"),
        }
    };
    (
        bits(
            &CpuBackend::new()
                .with_fma_contraction(fma)
                .with_wide_math(true),
        ),
        bits(
            &CpuBackend::new()
                .with_fma_contraction(fma)
                .with_wide_math(false),
        ),
    )
}

/// Whether two results are the same value bit for bit, any two NaNs
/// counting as the same (payloads are not compared).
pub fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// A deterministic sequence in `[-2, 2)` (an LCG; the dynamic-shape tests
/// size their inputs at run time, so they take plain `f64` vectors).
pub fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
        })
        .collect()
}
