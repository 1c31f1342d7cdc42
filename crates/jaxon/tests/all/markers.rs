//! `checkpoint_name` and `optimization_barrier` through the facade: the
//! values pass through eagerly, under `jit`, `grad` and `vmap`, and the
//! staged text is JAX's.

use jaxon::numpy::All;
use jaxon::{checkpoint_name, grad, jit, lax, make_jaxpr, vmap, Array};

#[test]
fn markers_pass_values_and_derivatives_through() {
    let x = Array::from_vec(vec![0.5f32, -1.0, 2.0], &[3]);
    let f = |x: Array| {
        let h = checkpoint_name(&x.sin(), "hidden").unwrap();
        let (a, b) = lax::optimization_barrier((h.clone(), &h * &h)).unwrap();
        (&a + &b).sum(All)
    };
    let want: f32 = [0.5f32, -1.0, 2.0]
        .iter()
        .map(|v| v.sin() + v.sin() * v.sin())
        .sum();
    assert!((f(x.clone()).to_vec::<f32>()[0] - want).abs() < 1e-6);
    assert!((jit(f).call(x.clone()).unwrap().to_vec::<f32>()[0] - want).abs() < 1e-6);
    let g = grad(f)(x.clone()).unwrap().to_vec::<f32>();
    for (gi, v) in g.iter().zip([0.5f32, -1.0, 2.0]) {
        let d = v.cos() * (1.0 + 2.0 * v.sin());
        assert!((gi - d).abs() < 1e-5, "{gi} vs {d}");
    }
    let batched = vmap(|x: Array| checkpoint_name(&x.exp(), "e").unwrap())
        .call(Array::from_vec(vec![0.0f32, 1.0, 2.0, 3.0], &[2, 2]))
        .unwrap()
        .to_vec::<f32>();
    for (b, v) in batched.iter().zip([0.0f32, 1.0, 2.0, 3.0]) {
        assert!((b - v.exp()).abs() < 1e-5);
    }
    let text = make_jaxpr(f)(x).unwrap().to_string();
    assert!(text.contains("= name[name=hidden] "), "{text}");
    assert!(text.contains("= optimization_barrier "), "{text}");
}
