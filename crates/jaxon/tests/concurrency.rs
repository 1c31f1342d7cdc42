//! Thread safety (issue 23): one jitted function called from 8 threads at
//! once gives what serial calls give, bit for bit; 8 threads hitting a cold
//! cache at once trace and compile the function once (single-flight
//! tracing) and get serial's bits; two jitted functions whose traces call
//! each other on two threads do not deadlock; a trace on one thread does
//! not see another thread's eager work (the trace stack is per thread).
//!
//! The oracle is the same function run serially, and, for the values, a
//! plain-Rust computation of it.

use jaxon::prelude::*;
use std::cell::Cell;
use std::sync::{Arc, Barrier, OnceLock};

const THREADS: usize = 8;

/// `sum(sin(x) * 2.5 + x * x)` over a vector.
fn f(x: Array) -> Array {
    (x.sin() * 2.5 + &x * &x).sum(All)
}

/// The same in plain f64 (the value oracle).
fn f_ref(x: &[f32]) -> f64 {
    x.iter()
        .map(|&v| (v as f64).sin() * 2.5 + v as f64 * v as f64)
        .sum()
}

/// Input `k`: 33 distinct non-round values.
fn input(k: usize) -> Vec<f32> {
    (0..33)
        .map(|i| (((i * 7919 + k * 104_729) % 997) as f32) / 211.0 - 2.3)
        .collect()
}

#[test]
fn one_jitted_function_from_8_threads_matches_serial_calls() {
    let jf = Arc::new(jit(f));
    let serial: Vec<f32> = (0..THREADS * 4)
        .map(|k| {
            jf.call(Array::from_vec(input(k), &[33]))
                .unwrap()
                .item::<f32>()
        })
        .collect();
    for (k, s) in serial.iter().enumerate() {
        let want = f_ref(&input(k));
        assert!(
            (*s as f64 - want).abs() <= 1e-4 * want.abs().max(1.0),
            "{s} vs {want}"
        );
    }
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (jf, start) = (jf.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut got = Vec::new();
                for round in 0..50 {
                    let k = (t + round) % (THREADS * 4);
                    let y = jf.call(Array::from_vec(input(k), &[33])).unwrap();
                    got.push((k, y.item::<f32>()));
                }
                got
            })
        })
        .collect();
    for h in handles {
        for (k, y) in h.join().unwrap() {
            assert_eq!(
                y.to_bits(),
                serial[k].to_bits(),
                "input {k}: {y} vs {}",
                serial[k]
            );
        }
    }
    assert_eq!(jf.compile_count(), 1, "one shape, one compile");
}

#[test]
fn eight_threads_on_a_cold_cache_compile_once() {
    for trial in 0..5 {
        let jf = Arc::new(jit(f));
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (jf, start) = (jf.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let x = input(t);
                    (t, jf.call(Array::from_vec(x, &[33])).unwrap().item::<f32>())
                })
            })
            .collect();
        for h in handles {
            let (t, y) = h.join().unwrap();
            let want = f_ref(&input(t));
            assert!(
                (y as f64 - want).abs() <= 1e-4 * want.abs().max(1.0),
                "{y} vs {want}"
            );
        }
        assert_eq!(
            jf.compile_count(),
            1,
            "trial {trial}: compiles of one signature"
        );
        // Tracing is single-flight: the threads that miss at once wait
        // for the first one's trace.
        assert_eq!(jf.trace_count(), 1, "trial {trial}: traces");
    }
}

#[test]
fn single_flight_one_trace_one_compile_bit_identical_to_serial() {
    // A slow trace (every thread arrives while the first one traces).
    let slow = |x: Array| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        f(x)
    };
    let serial = jit(slow);
    let want: Vec<u32> = (0..THREADS)
        .map(|t| {
            serial
                .call(Array::from_vec(input(t), &[33]))
                .unwrap()
                .item::<f32>()
                .to_bits()
        })
        .collect();
    for trial in 0..3 {
        let jf = Arc::new(jit(slow));
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (jf, start) = (jf.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let y = jf.call(Array::from_vec(input(t), &[33])).unwrap();
                    (t, y.item::<f32>().to_bits())
                })
            })
            .collect();
        for h in handles {
            let (t, bits) = h.join().unwrap();
            assert_eq!(bits, want[t], "trial {trial}, thread {t}");
        }
        assert_eq!(jf.trace_count(), 1, "trial {trial}: traces");
        assert_eq!(jf.compile_count(), 1, "trial {trial}: compiles");
    }
}

type JitFn = jaxon::Jit<fn(Array) -> Array, Array, Array>;
static JA: OnceLock<JitFn> = OnceLock::new();
static JB: OnceLock<JitFn> = OnceLock::new();

thread_local! {
    /// Which jitted function this thread's trace calls into: 1 = `a`
    /// calls `b`, 2 = `b` calls `a`, 0 = neither.
    static ROLE: Cell<u8> = const { Cell::new(0) };
}

fn fa(x: Array) -> Array {
    std::thread::sleep(std::time::Duration::from_millis(200));
    let y = x.sin();
    match (ROLE.with(Cell::get), JB.get()) {
        (1, Some(b)) => b.call(y).unwrap_or_else(|e| jaxon::raise(e)),
        _ => y,
    }
}

fn fb(x: Array) -> Array {
    std::thread::sleep(std::time::Duration::from_millis(200));
    let y = x * 2.0;
    match (ROLE.with(Cell::get), JA.get()) {
        (2, Some(a)) => a.call(y).unwrap_or_else(|e| jaxon::raise(e)),
        _ => y,
    }
}

#[test]
fn jitted_functions_tracing_each_other_on_two_threads_do_not_deadlock() {
    // Thread 1 traces `a`, whose trace calls `b`; thread 2 traces `b`,
    // whose trace calls `a`, at the same time, on the same signature. Were
    // a tracing thread to wait on another's trace, each would wait on the
    // other forever; a thread that leads a trace traces on its own instead.
    let a = JA.get_or_init(|| jit(fa as fn(Array) -> Array));
    let b = JB.get_or_init(|| jit(fb as fn(Array) -> Array));
    let start = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [(1u8, a), (2, b)]
        .into_iter()
        .map(|(role, j)| {
            let start = start.clone();
            std::thread::spawn(move || {
                ROLE.with(|r| r.set(role));
                start.wait();
                j.call(Array::from_vec(input(0), &[33]))
                    .unwrap()
                    .to_vec::<f32>()
            })
        })
        .collect();
    let got: Vec<Vec<f32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Both compute 2·sin(x) (a then b) or sin(2x) (b then a).
    let x = input(0);
    for (k, (g1, g2)) in got[0].iter().zip(&got[1]).enumerate() {
        let want1 = (x[k].sin() * 2.0) as f64;
        let want2 = (x[k] * 2.0).sin() as f64;
        assert!((*g1 as f64 - want1).abs() <= 1e-5, "{g1} vs {want1}");
        assert!((*g2 as f64 - want2).abs() <= 1e-5, "{g2} vs {want2}");
    }
}

#[test]
fn a_trace_does_not_see_another_threads_eager_work() {
    // Thread A traces `g` and, in the middle of the trace, waits for
    // thread B to run eager operations; B's operations must neither join
    // A's jaxpr nor be staged themselves.
    let mid = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let (mid_a, done_a) = (mid.clone(), done.clone());
    let tracer = std::thread::spawn(move || {
        let g = move |x: Array| {
            let y = x.sin();
            mid_a.wait();
            done_a.wait();
            y * 3.0
        };
        make_jaxpr(g)(Array::from_vec(input(0), &[33])).unwrap()
    });
    let eager = std::thread::spawn(move || {
        mid.wait();
        let x = Array::from_vec(input(1), &[33]);
        let mut acc = x.clone();
        for _ in 0..20 {
            acc = (acc.cos() + &x).exp() * 0.01;
        }
        let got = acc.to_vec::<f32>();
        done.wait();
        got
    });
    let jaxpr = tracer.join().unwrap();
    let got = eager.join().unwrap();
    // The jaxpr holds exactly A's two equations.
    let eqns: Vec<&str> = jaxpr
        .jaxpr
        .eqns
        .iter()
        .map(|e| e.primitive.name())
        .collect();
    assert_eq!(eqns, ["sin", "mul"], "{jaxpr}");
    // B's values are its own computation's (concrete, not tracers).
    let x = input(1);
    let mut acc: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for _ in 0..20 {
        acc = acc
            .iter()
            .zip(&x)
            .map(|(a, &v)| ((a.cos() + v as f64).exp() * 0.01) as f32 as f64)
            .collect();
    }
    for (g, w) in got.iter().zip(&acc) {
        assert!(
            (*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{g} vs {w}"
        );
    }
}
