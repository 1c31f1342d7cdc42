//! The top-level `jax.*` functions of issue 21's coverage work, through the
//! facade on the default (CPU) backend: `device_get` of a pytree,
//! `typeof_`, `default_backend`, `disable_jit` (a jitted function runs op
//! by op and is not traced while the guard is held, traced once after), the
//! collectives under `jaxon::lax`, and `jnp.vectorize` under `jaxon::numpy`.

use jaxon::ir::shape::fmt_aval;
use jaxon::prelude::*;
use jaxon::{default_backend, device_get, disable_jit, typeof_};

#[test]
fn device_get_copies_every_leaf_to_the_host() {
    let x = Array::from_vec(vec![1f32, 2.0, 3.0], &[3]);
    let y = jnp::multiply(&x, &x).unwrap();
    let (a, b): (Array, Vec<Array>) = device_get(&(y.clone(), vec![x.clone()])).unwrap();
    assert_eq!(a.to_vec::<f32>(), [1.0, 4.0, 9.0]);
    assert_eq!(b[0].to_vec::<f32>(), [1.0, 2.0, 3.0]);
    // A tracer cannot be fetched.
    let err = jit(|x: Array| {
        device_get(&x)
            .map(|_| x.clone())
            .unwrap_or_else(|e| jaxon::raise(e))
    })
    .call(x)
    .unwrap_err()
    .to_string();
    assert!(err.contains("device_get"), "{err}");
}

#[test]
fn typeof_and_default_backend() {
    let x = Array::from_vec(vec![0f32; 6], &[2, 3]);
    assert_eq!(fmt_aval(&typeof_(&x)), "f32[2,3]");
    // Inside a trace, the tracer's type.
    let seen = std::sync::Mutex::new(String::new());
    jit(|x: Array| {
        *seen.lock().unwrap() = fmt_aval(&typeof_(&x));
        x
    })
    .call(Array::from_vec(vec![1i32; 4], &[4]))
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), "i32[4]");
    assert_eq!(default_backend().unwrap(), "cpu");
}

#[test]
fn disable_jit_runs_jitted_functions_op_by_op() {
    let traced = std::sync::Mutex::new(Vec::new());
    let f = jit(|x: Array| {
        traced.lock().unwrap().push(x.is_tracer());
        jnp::sin(&x).unwrap()
    });
    let x = Array::from_vec(vec![0.5f64, -1.0], &[2]);
    let want: Vec<f64> = vec![0.5f64.sin(), (-1.0f64).sin()];
    {
        let _guard = disable_jit();
        let nested = disable_jit();
        assert_eq!(f.call(x.clone()).unwrap().to_vec::<f64>(), want);
        drop(nested);
        assert_eq!(f.call(x.clone()).unwrap().to_vec::<f64>(), want);
        assert_eq!(f.trace_count(), 0);
    }
    // Enabled again: traced once, then served from the cache.
    assert_eq!(f.call(x.clone()).unwrap().to_vec::<f64>(), want);
    assert_eq!(f.call(x).unwrap().to_vec::<f64>(), want);
    assert_eq!(f.trace_count(), 1);
    // Two concrete runs under the guard, then one trace.
    assert_eq!(*traced.lock().unwrap(), [false, false, true]);
}

#[test]
fn collectives_are_in_lax_too() {
    let x = Array::from_vec(vec![1f32, 2.0, 3.0, 4.0], &[4]);
    let y = vmap(|x: Array| jaxon::lax::psum(&x, "i").unwrap())
        .axis_name("i")
        .call(x.clone())
        .unwrap();
    assert_eq!(y.to_vec::<f32>(), [10.0; 4]);
    let m = vmap(|x: Array| jaxon::lax::pmax(&x, "i").unwrap())
        .axis_name("i")
        .call(x)
        .unwrap();
    assert_eq!(m.to_vec::<f32>(), [4.0; 4]);
}

#[test]
fn vectorize_is_in_numpy() {
    let f = jnp::vectorize(
        |xs: &[Array]| Ok(vec![jnp::sum(&xs[0], jnp::All, false)?]),
        Some("(n)->()"),
    )
    .unwrap();
    let x = Array::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]);
    assert_eq!(f.call(&[x]).unwrap()[0].to_vec::<f32>(), [3.0, 12.0]);
}
