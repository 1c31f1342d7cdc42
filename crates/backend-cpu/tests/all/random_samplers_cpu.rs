//! The samplers of `jaxon_trace::random` on the CPU backend: every draw
//! recorded from JAX 0.10.2 (`tests/data/random-samplers-jax.json`) is
//! reproduced eagerly with the CPU backend as the evaluator, to the same
//! standard as on the interpreter (`crates/trace/tests/all/random_samplers_jax.rs`,
//! included here), and a jitted program of several samplers gives the
//! interpreter's values.

#[path = "../../../trace/tests/all/random_samplers_jax.rs"]
#[allow(dead_code)]
mod samplers;

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::random as jr;
use jaxon_trace::{jit, register_backend, with_backend, Array};
use std::sync::Arc;

fn cpu() {
    register_backend(Arc::new(CpuBackend::new()));
}

#[test]
fn recorded_jax_draws_reproduce_on_the_cpu_backend() {
    cpu();
    with_backend("cpu", samplers::check_all).unwrap();
}

#[test]
fn jitted_samplers_agree_with_the_interpreter() {
    cpu();
    let f = |xs: Vec<Array>| {
        let (k, a) = (&xs[0], &xs[1]);
        vec![
            ok_or_raise(jr::beta(k, a, a, None, DType::F32)),
            ok_or_raise(jr::dirichlet(k, a, None, DType::F32)),
            ok_or_raise(jr::binomial(k, &Array::weak(30.0), a, None, DType::F32)),
            ok_or_raise(jr::poisson(k, a, None, DType::I32)),
            ok_or_raise(jr::choice(k, 9usize, &[4], false, None, 0)),
        ]
    };
    let a = Array::from_vec(vec![0.3f32, 0.5, 0.9, 0.7], &[4]);
    let args = vec![jr::key(4), a];
    let on = |backend: &str| with_backend(backend, || jit(f).call(args.clone()).unwrap()).unwrap();
    let (c, i) = (on("cpu"), on("interpreter"));
    for (x, y) in c.iter().zip(&i) {
        assert_eq!(x.dtype(), y.dtype());
        if x.dtype() == DType::F32 {
            let (x, y) = (x.to_vec::<f32>(), y.to_vec::<f32>());
            for (a, b) in x.iter().zip(&y) {
                assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{x:?} vs {y:?}");
            }
        } else {
            assert_eq!(x.to_vec::<i32>(), y.to_vec::<i32>());
        }
    }
}
