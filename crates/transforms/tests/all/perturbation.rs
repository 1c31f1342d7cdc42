//! Perturbation confusion: nested derivatives that close over an outer
//! tracer must keep the two perturbations apart.

use jaxon_trace::Array;
use jaxon_transforms::{grad, jvp};

fn scalar(x: f64) -> Array {
    Array::scalar(x)
}

#[test]
fn inner_derivative_closing_over_outer_value_is_not_confused() {
    // f(x) = x * d/dy (x + y) at y = 0 is x, so f'(1) = 1 (a confused
    // implementation mixes the perturbations and gets 2).
    let f = |x: Array| {
        let inner = {
            let x = x.clone();
            grad(move |y: Array| &x + y)(scalar(0.0)).unwrap()
        };
        x * inner
    };
    let d = grad(f)(scalar(1.0)).unwrap();
    assert_eq!(d.item::<f64>(), 1.0);
    // The same through forward mode.
    let (_, t) = jvp(f, scalar(1.0), scalar(1.0)).unwrap();
    assert_eq!(t.item::<f64>(), 1.0);
}

#[test]
fn siskind_pearlmutter_nested_derivative() {
    // d/dx (x * d/dy (x * y)) at x = 1: the inner derivative is x, so the
    // result is d/dx x² = 2x = 2.
    let g = |x: Array| {
        let inner = {
            let x = x.clone();
            grad(move |y: Array| &x * y)(scalar(1.0)).unwrap()
        };
        x * inner
    };
    assert_eq!(grad(g)(scalar(1.0)).unwrap().item::<f64>(), 2.0);
    let (_, t) = jvp(g, scalar(1.0), scalar(1.0)).unwrap();
    assert_eq!(t.item::<f64>(), 2.0);
}
