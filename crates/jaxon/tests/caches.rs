//! Bounded compile caches and `clear_caches()` (issue 23).
//!
//! - `jit`'s cache keeps `cache_limit` signatures, least recently used out:
//!   after N+k distinct signatures it holds N, the most recent ones hit,
//!   and the oldest traces and compiles again.
//! - The CPU backend's program cache keeps `with_program_cache_limit`
//!   programs.
//! - `clear_caches()` empties every cache: the next call retraces and
//!   recompiles (on every registered backend) and gives the same bits.
//! - An error while tracing does not poison the signature; a panicking
//!   traced closure hands its waiters an error, not a hang.
//!
//! `clear_caches()` is process-wide, so every test that calls it, or that
//! counts traces a concurrent clear would disturb, holds [`SERIAL`].

use jaxon::backend_cpu::CpuBackend;
use jaxon::ir::{Backend, Buffer, ClosedJaxpr, Executable, HostArray, IrError};
use jaxon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn f(x: Array) -> Array {
    (x.sin() * 2.5 + 1.0).sum(All)
}

fn vector(n: usize) -> Array {
    Array::from_vec((0..n).map(|i| i as f32 * 0.37 - 1.0).collect(), &[n])
}

#[test]
fn jit_cache_keeps_the_limit_and_the_oldest_recompiles() {
    let _s = serial();
    let (limit, extra) = (4, 3);
    let jf = jit(f).cache_limit(limit);
    for n in 1..=limit + extra {
        jf.call(vector(n)).unwrap();
    }
    assert_eq!(jf.cached_signatures(), limit);
    assert_eq!(jf.trace_count(), limit + extra);
    assert_eq!(jf.compile_count(), limit + extra);
    // The most recent `limit` signatures hit.
    for n in extra + 1..=limit + extra {
        jf.call(vector(n)).unwrap();
    }
    assert_eq!(jf.trace_count(), limit + extra, "recent signatures hit");
    // The oldest was evicted: it traces and compiles again.
    jf.call(vector(1)).unwrap();
    assert_eq!(jf.trace_count(), limit + extra + 1);
    assert_eq!(jf.compile_count(), limit + extra + 1);
    assert_eq!(jf.cached_signatures(), limit);
}

#[test]
fn a_hit_refreshes_its_signature() {
    let _s = serial();
    let jf = jit(f).cache_limit(2);
    jf.call(vector(1)).unwrap();
    jf.call(vector(2)).unwrap();
    jf.call(vector(1)).unwrap(); // 1 is now the most recent
    jf.call(vector(3)).unwrap(); // evicts 2
    assert_eq!(jf.trace_count(), 3);
    jf.call(vector(1)).unwrap();
    assert_eq!(jf.trace_count(), 3, "1 stayed");
    jf.call(vector(2)).unwrap();
    assert_eq!(jf.trace_count(), 4, "2 was evicted");
}

#[test]
fn the_cpu_program_cache_keeps_its_limit() {
    let cpu = CpuBackend::with_threads(1).with_program_cache_limit(3);
    let jaxprs: Vec<ClosedJaxpr> = (1..=5).map(|n| make_jaxpr(f)(vector(n)).unwrap()).collect();
    for j in &jaxprs {
        cpu.compile(j).unwrap();
    }
    assert_eq!(cpu.cached_programs(), 3);
    cpu.clear_cache();
    assert_eq!(cpu.cached_programs(), 0);
    // An executable outlives its evicted program's cache entry.
    let exe = cpu.compile(&jaxprs[0]).unwrap();
    for j in &jaxprs[1..] {
        cpu.compile(j).unwrap();
    }
    assert_eq!(cpu.cached_programs(), 3);
    let x = cpu
        .to_device(&vector(1).try_to_host("test").unwrap())
        .unwrap();
    assert_eq!(exe.execute(&[x]).unwrap().len(), 1);
}

/// A CPU backend that counts compiles and cache clears.
struct Counting {
    inner: CpuBackend,
    compiles: AtomicUsize,
    clears: AtomicUsize,
}

impl Backend for Counting {
    fn name(&self) -> &str {
        "counting-cpu"
    }
    fn compile(&self, j: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        self.inner.compile(j)
    }
    fn to_device(&self, a: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        self.inner.to_device(a)
    }
    fn clear_cache(&self) {
        self.clears.fetch_add(1, Ordering::SeqCst);
        self.inner.clear_cache();
    }
}

#[test]
fn clear_caches_retraces_recompiles_and_gives_the_same_bits() {
    let _s = serial();
    let counting = Arc::new(Counting {
        inner: CpuBackend::with_threads(1),
        compiles: AtomicUsize::new(0),
        clears: AtomicUsize::new(0),
    });
    jaxon::register_backend(counting.clone());
    let jf = jit(f).backend("counting-cpu");
    let on_default = jit(f);
    let x = vector(33);
    let first = jf.call(x.clone()).unwrap().item::<f32>();
    let default_first = on_default.call(x.clone()).unwrap().item::<f32>();
    // Eager operations fill this thread's eager cache.
    let eager = (x.sin() * 2.5 + 1.0).sum(All).item::<f32>();
    jf.call(x.clone()).unwrap();
    assert_eq!((jf.trace_count(), jf.compile_count()), (1, 1));
    assert_eq!(counting.inner.cached_programs(), 1);

    jaxon::clear_caches().unwrap();
    assert_eq!(jf.cached_signatures(), 0);
    assert_eq!(on_default.cached_signatures(), 0);
    assert!(counting.clears.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        counting.inner.cached_programs(),
        0,
        "backend programs dropped"
    );

    let again = jf.call(x.clone()).unwrap().item::<f32>();
    assert_eq!((jf.trace_count(), jf.compile_count()), (2, 2));
    assert_eq!(counting.compiles.load(Ordering::SeqCst), 2);
    assert_eq!(counting.inner.cached_programs(), 1, "compiled afresh");
    assert_eq!(again.to_bits(), first.to_bits());
    let default_again = on_default.call(x.clone()).unwrap().item::<f32>();
    assert_eq!(on_default.trace_count(), 2);
    assert_eq!(default_again.to_bits(), default_first.to_bits());
    let eager_again = (x.sin() * 2.5 + 1.0).sum(All).item::<f32>();
    assert_eq!(eager_again.to_bits(), eager.to_bits());
}

#[test]
fn a_tracing_error_does_not_poison_the_signature() {
    let _s = serial();
    let fail = AtomicBool::new(true);
    let g = |x: Array| {
        if fail.swap(false, Ordering::SeqCst) {
            // A shape error while tracing.
            x.reshape(&[7])
        } else {
            x * 2.0
        }
    };
    let jg = jit(g);
    assert!(jg.call(vector(3)).is_err());
    assert_eq!(jg.cached_signatures(), 0);
    let y = jg.call(vector(3)).unwrap();
    assert_eq!(
        y.to_vec::<f32>(),
        vector(3)
            .to_vec::<f32>()
            .iter()
            .map(|v| v * 2.0)
            .collect::<Vec<_>>()
    );
    assert_eq!(jg.trace_count(), 2);
}

#[test]
fn waiters_get_the_first_tracers_error_and_the_key_stays_usable() {
    let _s = serial();
    const THREADS: usize = 8;
    let fail = Arc::new(AtomicBool::new(true));
    let fail2 = fail.clone();
    let g = move |x: Array| {
        // Slow enough that every thread arrives while the first traces.
        std::thread::sleep(std::time::Duration::from_millis(300));
        if fail2.load(Ordering::SeqCst) {
            x.reshape(&[7])
        } else {
            x * 2.0
        }
    };
    let jg = Arc::new(jit(g));
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (jg, start) = (jg.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                jg.call(vector(3)).map(|_| ()).map_err(|e| e.to_string())
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(results.iter().all(|r| r.is_err()), "{results:?}");
    assert_eq!(
        jg.trace_count(),
        1,
        "the waiters shared the first trace's error"
    );
    fail.store(false, Ordering::SeqCst);
    assert!(jg.call(vector(3)).is_ok());
    assert_eq!(jg.trace_count(), 2);
}

#[test]
fn a_panicking_tracer_hands_its_waiters_an_error() {
    let _s = serial();
    const THREADS: usize = 4;
    let panic_now = Arc::new(AtomicBool::new(true));
    let p2 = panic_now.clone();
    let g = move |x: Array| {
        std::thread::sleep(std::time::Duration::from_millis(300));
        if p2.swap(false, Ordering::SeqCst) {
            panic!("user closure panics while tracing");
        }
        x * 2.0
    };
    let jg = Arc::new(jit(g));
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (jg, start) = (jg.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                jg.call(vector(3)).map(|_| ()).map_err(|e| e.to_string())
            })
        })
        .collect();
    let (mut panicked, mut errors) = (0, 0);
    for h in handles {
        match h.join() {
            Err(_) => panicked += 1,
            Ok(Err(e)) => {
                assert!(e.contains("panicked"), "{e}");
                errors += 1;
            }
            Ok(Ok(())) => panic!("a waiter succeeded on a panicked trace"),
        }
    }
    assert_eq!((panicked, errors), (1, THREADS - 1));
    // Not poisoned: the next call traces again and succeeds.
    assert!(jg.call(vector(3)).is_ok());
    assert_eq!(jg.trace_count(), 2);
}
