//! The CNN of `examples/cnn_train.rs`, written with jaxon's API, takes
//! JAX's first SGD steps: from the same weights on the same images, its
//! losses are JAX's (recorded by `examples/data/jax_cnn/generate.py`), on
//! the CPU backend and on the interpreter.

#[path = "../../examples/cnn_train.rs"]
mod example;

#[test]
fn first_sgd_steps_give_jax_losses_on_every_backend() {
    for backend in ["cpu", "interpreter"] {
        jaxon::with_backend(backend, || {
            let (mut params, x, y, jax_losses) = example::load_data().expect("data");
            let step = example::sgd_step();
            for (i, want) in jax_losses.iter().enumerate() {
                let (p, l) = step((params, x.clone(), y.clone())).expect("step");
                params = p;
                let got = l.item::<f32>();
                assert!(
                    (got - want).abs() <= 2e-5 * want.abs().max(1.0),
                    "{backend}, step {i}: loss {got}, JAX's {want}"
                );
            }
        })
        .expect("backend");
    }
}
