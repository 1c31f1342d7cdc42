//! Thread safety (issue 23): one jitted function called from 8 threads at
//! once gives what serial calls give, bit for bit; 8 threads hitting a cold
//! cache at once compile the function once; a trace on one thread does not
//! see another thread's eager work (the trace stack is per thread).
//!
//! The oracle is the same function run serially, and, for the values, a
//! plain-Rust computation of it.

use jaxon::prelude::*;
use std::sync::{Arc, Barrier};

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
        // Tracing is not single-flight: threads that miss at once each
        // trace, and all but the first entry are dropped.
        assert!(
            jf.trace_count() <= THREADS,
            "trial {trial}: {} traces",
            jf.trace_count()
        );
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
