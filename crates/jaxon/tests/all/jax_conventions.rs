//! JAX's conventions where they differ from the textbook, each checked
//! against the value JAX 0.10.2 gives (recorded by hand from JAX on the
//! CPU; `docs/jax-to-jaxon.md` lists them for users).

use jaxon::numpy as jnp;
use jaxon::prelude::*;

fn s(x: f32) -> Array {
    Array::scalar(x)
}

fn v(x: &[f32]) -> Array {
    Array::from_vec(x.to_vec(), &[x.len()])
}

fn g1(f: impl Fn(Array) -> Array, x: f32) -> f32 {
    grad(f)(s(x)).expect("grad").item::<f32>()
}

#[test]
fn derivatives_at_kinks_follow_jax() {
    // grad(jnp.abs)(0.0) == 1.0: JAX's rule is ẋ where x >= 0.
    assert_eq!(g1(|x| x.abs(), 0.0), 1.0);
    assert_eq!(g1(|x| x.abs(), -0.0), 1.0);
    assert_eq!(g1(|x| x.abs(), -2.0), -1.0);
    // grad(jax.nn.relu)(0.0) == 0.0: relu's custom rule, not max's ½.
    assert_eq!(g1(|x| jaxon::nn::relu(&x).unwrap(), 0.0), 0.0);
    assert_eq!(g1(|x| jaxon::nn::relu(&x).unwrap(), 0.5), 1.0);
    // Ties of max/min split the gradient: grad(maximum(x, 1))(1) == 0.5.
    assert_eq!(g1(|x| jnp::maximum(&x, &s(1.0)).unwrap(), 1.0), 0.5);
    assert_eq!(g1(|x| jnp::minimum(&x, &s(1.0)).unwrap(), 1.0), 0.5);
    // ... and so do ties of a max reduction.
    let gm = grad(|x: Array| jnp::max(&x, All, false).unwrap())(v(&[1.0, 2.0, 2.0])).unwrap();
    assert_eq!(gm.to_vec::<f32>(), [0.0, 0.5, 0.5]);
    // grad(jnp.sqrt)(0.0) == inf, and the `where` trap: the untaken branch's
    // NaN gradient still flows, grad(where(x > 0, sqrt(x), 0))(0) is NaN.
    assert_eq!(g1(|x| x.sqrt(), 0.0), f32::INFINITY);
    let trap = g1(
        |x| jnp::where_(&x.gt(s(0.0)), &x.sqrt(), &s(0.0)).unwrap(),
        0.0,
    );
    assert!(trap.is_nan(), "{trap}");
}

#[test]
fn rounding_and_integer_division_follow_jax() {
    let r = jnp::round(&v(&[0.5, 1.5, 2.5, -0.5]), 0)
        .unwrap()
        .to_vec::<f32>();
    assert_eq!(r, [0.0, 2.0, 2.0, -0.0]);
    assert!(r[3].is_sign_negative());
    let a = Array::from_vec(vec![-7i32], &[1]);
    let two = Array::from_vec(vec![2i32], &[1]);
    assert_eq!(jnp::floor_divide(&a, &two).unwrap().to_vec::<i32>(), [-4]);
    assert_eq!(jnp::remainder(&a, &two).unwrap().to_vec::<i32>(), [1]);
    assert_eq!(jaxon::lax::div(&a, &two).unwrap().to_vec::<i32>(), [-3]);
    assert_eq!(jaxon::lax::rem(&a, &two).unwrap().to_vec::<i32>(), [-1]);
}

#[test]
fn nans_and_conversions_follow_jax() {
    let x = v(&[1.0, f32::NAN, 3.0]);
    assert_eq!(jnp::argmax(&x, None, false).unwrap().item::<i32>(), 1);
    assert!(jnp::max(&x, All, false).unwrap().item::<f32>().is_nan());
    let c = v(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e10]).astype(DType::I32);
    assert_eq!(c.to_vec::<i32>(), [0, i32::MAX, i32::MIN, i32::MAX]);
    let lse = jnp::logsumexp(&v(&[f32::NEG_INFINITY; 2]), All, false).unwrap();
    assert_eq!(lse.item::<f32>(), f32::NEG_INFINITY);
    let z = jaxon::scipy::special::xlogy(&s(0.0), &s(0.0)).unwrap();
    assert_eq!(z.item::<f32>(), 0.0);
    let dx = grad(|x: Array| jaxon::scipy::special::xlogy(&x, &s(0.0)).unwrap())(s(0.0)).unwrap();
    assert_eq!(dx.item::<f32>(), f32::NEG_INFINITY);
}
