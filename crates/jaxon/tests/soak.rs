//! Soak tests (issue 23): resident memory stays flat over many calls of one
//! jitted function and over many distinct compiles with bounded caches.
//!
//! RSS is `VmRSS` of `/proc/self/status` (Linux; elsewhere the tests only
//! run the calls). Each test warms up first (pools, arenas and caches
//! reach their steady size), then asserts that RSS grew by less than a
//! stated bound over the rest of the run.
//!
//! - `soak_quick` (runs with the suite, a few seconds in debug): 10⁴ calls
//!   and 500 distinct compiles with a jit cache of 16 and a CPU program
//!   cache of 16.
//! - `soak_full` (ignored; the numbers): 10⁵ calls and 10⁴ distinct
//!   compiles. Run it with
//!   `cargo test --release -p jaxon --test soak -- --ignored --nocapture`
//!   (a few minutes; in debug, tens of minutes).
//!
//! Both replace the `"cpu"` backend with one whose program cache holds 16
//! programs (the default, 1024, would let 10⁴ distinct compiles keep 1024
//! programs, which is bounded but not flat over the run).

use jaxon::backend_cpu::CpuBackend;
use jaxon::prelude::*;
use std::sync::Arc;

/// Resident set size in KiB, if the platform says.
fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn f(x: Array) -> Array {
    ((x.sin() * 2.5 + 1.0) * &x).sum(All)
}

fn vector(n: usize) -> Array {
    Array::from_vec((0..n).map(|i| i as f32 * 0.01 - 0.5).collect(), &[n])
}

/// Installs a `"cpu"` backend with a small program cache.
fn small_cpu_cache() {
    jaxon::register_backend(Arc::new(CpuBackend::new().with_program_cache_limit(16)));
}

/// Calls one jitted function `calls` times; returns RSS growth (KiB) after
/// the first tenth.
fn many_calls(calls: usize) -> Option<i64> {
    let jf = jit(f);
    let x = vector(256);
    let want = jf.call(x.clone()).unwrap().item::<f32>().to_bits();
    let warm = calls / 10;
    let mut base = None;
    for i in 0..calls {
        if i == warm {
            base = rss_kib();
        }
        let y = jf.call(x.clone()).unwrap();
        assert_eq!(y.item::<f32>().to_bits(), want);
    }
    assert_eq!(jf.compile_count(), 1);
    Some(rss_kib()? as i64 - base? as i64)
}

/// Compiles `compiles` distinct signatures (vectors of 1..=compiles
/// elements) with a jit cache of 16; returns RSS growth (KiB) after the
/// first tenth.
fn many_compiles(compiles: usize) -> Option<i64> {
    let jf = jit(f).cache_limit(16);
    let warm = compiles / 10;
    let mut base = None;
    for n in 1..=compiles {
        if n == warm {
            base = rss_kib();
        }
        jf.call(vector(n)).unwrap();
        assert!(jf.cached_signatures() <= 16);
    }
    assert_eq!(jf.compile_count(), compiles);
    Some(rss_kib()? as i64 - base? as i64)
}

fn report(what: &str, growth: Option<i64>, bound_kib: i64) {
    match growth {
        None => eprintln!("{what}: no /proc/self/status; RSS not checked"),
        Some(g) => {
            eprintln!("{what}: RSS grew {g} KiB after warm-up (bound {bound_kib} KiB)");
            assert!(
                g < bound_kib,
                "{what}: RSS grew {g} KiB after warm-up, bound {bound_kib} KiB"
            );
        }
    }
}

/// 10⁴ calls, 500 distinct compiles; RSS grows less than 8 MiB (calls) and
/// 4 MiB (compiles: evicted programs' code is freed) after warm-up.
#[test]
fn soak_quick() {
    small_cpu_cache();
    report("10^4 calls", many_calls(10_000), 8 << 10);
    report("500 compiles", many_compiles(500), 4 << 10);
}

/// 10⁵ calls and 10⁴ distinct compiles; RSS grows less than 8 MiB (calls)
/// and 16 MiB (compiles) after warm-up.
#[test]
#[ignore = "soak: minutes; cargo test --release -p jaxon --test soak -- --ignored"]
fn soak_full() {
    small_cpu_cache();
    report("10^5 calls", many_calls(100_000), 8 << 10);
    report("10^4 compiles", many_compiles(10_000), 16 << 10);
}
