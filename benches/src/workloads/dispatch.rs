//! Tracing and dispatch workloads: `trace_chain_1000`, `dispatch_tiny`.

use super::Settings;
use crate::measure::{emit, measure, sig, timing_details};
use jaxon::prelude::*;
use serde_json::json;
use std::time::Duration;

fn input_128() -> Array {
    Array::from_vec((0..128).map(|i| (i as f32 * 0.37).sin()).collect(), &[128])
}

/// The traced chain: `x = sin(x) * 1.01 + 0.5`, 333 times.
pub fn chain(x: Array) -> Array {
    let mut x = x;
    for _ in 0..333 {
        x = x.sin() * 1.01 + 0.5;
    }
    x
}

/// `make_jaxpr` of the 999-equation chain; a fresh closure per trace.
pub fn trace_chain_1000(s: Settings) {
    let x = input_128();
    let n_eqns = make_jaxpr(chain)(x.clone())
        .map(|j| j.jaxpr.eqns.len())
        .unwrap_or(0);
    let m = measure(
        || {
            let fresh = |x: Array| chain(x);
            let j = make_jaxpr(fresh)(x.clone()).expect("traces");
            std::hint::black_box(j);
        },
        s.reps,
        s.min_time,
        2,
    );
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("n_eqns".into(), json!(n_eqns));
    d.insert("input".into(), json!("f32[128]"));
    d.insert("ops_per_iter".into(), json!("sin, mul 1.01, add 0.5"));
    d.insert("iters".into(), json!(333));
    d.insert("fresh_fn_each_trace".into(), json!(true));
    emit(
        "trace_chain_1000",
        "make_jaxpr_time_per_eqn",
        sig(m.median_s * 1e6 / n_eqns as f64, 4),
        "us/eqn",
        d,
    );
}

/// A cached `jit(x + 1.0)` on `f32[4]`. Execution is synchronous, so the
/// async variant measures the same loop with the result read only at the
/// end.
pub fn dispatch_tiny(s: Settings) {
    let f = jit(|x: Array| x + 1.0);
    let x = Array::from_vec(vec![0.0f32, 1.0, 2.0, 3.0], &[4]);
    let n = if s.quick { 2000 } else { 10000 };
    for _ in 0..200 {
        f.call(x.clone()).expect("runs");
    }
    let sync = measure(
        || {
            for _ in 0..n {
                let y = f.call(x.clone()).expect("runs");
                super::ready(&y);
            }
        },
        s.reps,
        Duration::ZERO,
        1,
    );
    let asynchronous = measure(
        || {
            let mut y = None;
            for _ in 0..n {
                y = Some(f.call(x.clone()).expect("runs"));
            }
            std::hint::black_box(y);
        },
        s.reps,
        Duration::ZERO,
        1,
    );
    // The executable alone, to separate jit's own overhead from the run.
    let backend = jaxon::eval_backend().expect("a backend");
    let exe = backend
        .compile(&f.lower(x.clone()).expect("lowers"))
        .expect("compiles");
    let buffers = vec![x.buffer().expect("concrete").clone()];
    let raw = measure(
        || {
            for _ in 0..n {
                std::hint::black_box(exe.execute(&buffers).expect("runs"));
            }
        },
        s.reps,
        Duration::ZERO,
        1,
    );
    let raw_us = raw.median_s / n as f64 * 1e6;
    for (name, m, mode) in [
        ("dispatch_tiny", sync, "result ready after every call"),
        (
            "dispatch_tiny_async",
            asynchronous,
            "result read only after the last call",
        ),
    ] {
        let mut d = timing_details(&m, 1e6, "us", n as f64);
        d.insert("calls_per_rep".into(), json!(n));
        d.insert("fn".into(), json!("x + 1.0"));
        d.insert("input".into(), json!("f32[4]"));
        d.insert("mode".into(), json!(mode));
        d.insert("traces".into(), json!(f.trace_count()));
        d.insert("executable_only_us".into(), json!(sig(raw_us, 4)));
        d.insert(
            "jit_overhead_us".into(),
            json!(sig(m.median_s / n as f64 * 1e6 - raw_us, 4)),
        );
        emit(
            name,
            "per_call_latency",
            sig(m.median_s / n as f64 * 1e6, 4),
            "us/call",
            d,
        );
    }
}
