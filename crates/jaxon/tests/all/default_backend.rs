//! The facade makes the CPU backend the default on a machine without a GPU,
//! and eager operations run on it.

use jaxon::prelude::*;

#[test]
fn cpu_is_the_default_backend_and_runs_eager_ops() {
    if std::env::var("JAXON_BACKEND").is_ok() {
        eprintln!("skipped: JAXON_BACKEND overrides the default");
        return;
    }
    let gpu = jaxon::backend_cuda::runtime::device_count().is_ok_and(|n| n > 0)
        && jaxon::backend_cuda::nvrtc::nvrtc_version().is_ok();
    if gpu {
        eprintln!("skipped: this machine has a GPU, the default backend (device_put.rs checks it)");
        return;
    }
    let b = jaxon::eval_backend().expect("a backend");
    assert_eq!(b.name(), "cpu");
    let names = jaxon_trace_names();
    assert!(names.contains(&"interpreter".to_string()), "{names:?}");
    // The same eager op on both backends agrees bit for bit.
    let x = Array::from_vec(
        (0..37)
            .map(|i| ((i * 7919) % 101) as f32 / 13.0 - 3.7)
            .collect(),
        &[37],
    );
    let on_cpu = (x.sin() * 2.5 + &x).to_vec::<f32>();
    let on_interp = jaxon::with_backend("interpreter", || (x.sin() * 2.5 + &x).to_vec::<f32>())
        .expect("interpreter is registered");
    assert_eq!(on_cpu.len(), 37);
    for (a, b) in on_cpu.iter().zip(&on_interp) {
        assert!((a - b).abs() <= 2e-7 * b.abs().max(1.0), "{a} vs {b}");
    }
}

fn jaxon_trace_names() -> Vec<String> {
    ["interpreter", "cpu"]
        .iter()
        .filter(|n| jaxon::with_backend(n, || ()).is_ok())
        .map(|n| n.to_string())
        .collect()
}
