//! The measuring protocol of `benches/jax/bench_jax.py`, so jaxon's
//! numbers compare with JAX's: warm up, calibrate an inner count so one
//! repetition lasts at least `min_time`, time `reps` repetitions, report the
//! median per unit with CPU time and minor page faults per unit.

use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

/// Timing of one workload unit.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Median seconds per unit.
    pub median_s: f64,
    /// Fastest repetition, seconds per unit.
    pub min_s: f64,
    /// Slowest repetition, seconds per unit.
    pub max_s: f64,
    /// Units per repetition.
    pub inner: u64,
    /// Repetitions.
    pub reps: usize,
    /// User CPU seconds per unit.
    pub user_s: f64,
    /// System CPU seconds per unit.
    pub sys_s: f64,
    /// Minor page faults per unit.
    pub minflt: f64,
}

/// `(user ticks, system ticks, minor faults)` of this process, from
/// `/proc/self/stat` (zeros where it is unavailable).
fn own_usage() -> (f64, f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0, 0.0);
    };
    // Fields after the parenthesised command name; minflt is field 10,
    // utime 14 and stime 15 (1-based, in clock ticks of 1/100 s).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|s| s.parse().unwrap_or(0.0))
        .collect();
    let get = |i: usize| f.get(i - 3).copied().unwrap_or(0.0);
    (get(14) / 100.0, get(15) / 100.0, get(10))
}

/// Runs `unit` (which must return with its result ready) under the protocol.
pub fn measure(
    mut unit: impl FnMut(),
    reps: usize,
    min_time: Duration,
    warmup: usize,
) -> Measurement {
    for _ in 0..warmup {
        unit();
    }
    let mut inner: u64 = 1;
    loop {
        let t0 = Instant::now();
        for _ in 0..inner {
            unit();
        }
        let dt = t0.elapsed();
        if dt >= min_time || inner >= 1_000_000 {
            break;
        }
        inner = if dt.is_zero() {
            inner * 10
        } else {
            let scale = min_time.as_secs_f64() * 1.1 / dt.as_secs_f64();
            (inner + 1)
                .max((inner as f64 * scale).ceil() as u64)
                .min(1_000_000)
        };
    }
    let u0 = own_usage();
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        for _ in 0..inner {
            unit();
        }
        times.push(t0.elapsed().as_secs_f64() / inner as f64);
    }
    let u1 = own_usage();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let median_s = if reps % 2 == 1 {
        sorted[reps / 2]
    } else {
        (sorted[reps / 2 - 1] + sorted[reps / 2]) / 2.0
    };
    let units = (reps as u64 * inner) as f64;
    Measurement {
        median_s,
        min_s: sorted[0],
        max_s: sorted[reps - 1],
        inner,
        reps,
        user_s: (u1.0 - u0.0) / units,
        sys_s: (u1.1 - u0.1) / units,
        minflt: (u1.2 - u0.2) / units,
    }
}

/// Rounds to `n` significant digits, as the Python script does.
pub fn sig(x: f64, n: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let p = 10f64.powi(n - 1 - x.abs().log10().floor() as i32);
    (x * p).round() / p
}

/// The per-unit timing summary in `unit` (`"ms"`, `"us"`), every time
/// divided by `div` (units per call).
pub fn timing_details(m: &Measurement, scale: f64, unit: &str, div: f64) -> Map<String, Value> {
    let mut d = Map::new();
    let t = |x: f64| sig(x / div * scale, 4);
    d.insert(format!("median_{unit}"), json!(t(m.median_s)));
    d.insert(format!("min_{unit}"), json!(t(m.min_s)));
    d.insert(format!("max_{unit}"), json!(t(m.max_s)));
    d.insert(
        "spread".into(),
        json!(sig((m.max_s - m.min_s) / m.median_s, 4)),
    );
    d.insert("inner".into(), json!(m.inner));
    d.insert("reps".into(), json!(m.reps));
    d.insert(
        format!("user_cpu_{unit}"),
        json!(sig(m.user_s / div * scale, 3)),
    );
    d.insert(
        format!("sys_cpu_{unit}"),
        json!(sig(m.sys_s / div * scale, 3)),
    );
    d.insert(
        "cpu_util".into(),
        json!(sig((m.user_s + m.sys_s) / m.median_s, 3)),
    );
    d.insert("minor_faults".into(), json!(sig(m.minflt / div, 3)));
    d
}

/// A suffix for every record name that lacks it (`_gpu` under
/// `workloads --gpu`, where the CPU workloads run again on the GPU under
/// the names of `bench_jax_gpu.py`).
static SUFFIX: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Sets the record-name suffix (once per process).
pub fn set_record_suffix(suffix: &'static str) {
    let _ = SUFFIX.set(suffix);
}

/// `workload` with the record suffix, unless it already ends with it.
pub fn record_name(workload: &str) -> String {
    match SUFFIX.get() {
        Some(sfx) if !workload.ends_with(sfx) => format!("{workload}{sfx}"),
        _ => workload.to_string(),
    }
}

/// Prints one JSON record in the schema of `bench_jax.py`.
/// Every record's `details` also name the CPU model and the ISA path the
/// CPU kernels ran (`jaxon_backend_cpu::isa`), so tables from different
/// machines, or from one machine under `JAXON_CPU_ISA`, never mix.
pub fn emit(workload: &str, metric: &str, value: f64, unit: &str, mut details: Map<String, Value>) {
    use jaxon_backend_cpu::isa;
    static CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let cpu = CPU.get_or_init(isa::cpu_model);
    details.entry("cpu").or_insert_with(|| json!(cpu));
    details
        .entry("cpu_isa")
        .or_insert_with(|| json!(isa::isa().name()));
    println!(
        "{}",
        json!({"workload": record_name(workload), "metric": metric, "value": value, "unit": unit, "details": details})
    );
}
