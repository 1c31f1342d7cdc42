//! `#[derive(Pytree)]` and the built-in pytree impls round-trip, and
//! entry points take and return pytrees.

use jaxon_macros::Pytree;
use jaxon_trace::numpy::All;
use jaxon_trace::pytree::{Pytree, TreeDef};
use jaxon_trace::{jit, make_jaxpr, Array, Static};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Pytree)]
struct Layer {
    w: Array,
    b: Array,
    scale: f64,
}

#[derive(Clone, Debug, Pytree)]
struct Pair(Array, Option<Array>);

#[derive(Clone, Debug, Pytree)]
struct Model<T> {
    layers: Vec<Layer>,
    extra: T,
    names: BTreeMap<String, Array>,
    mode: Static<&'static str>,
}

fn arr(v: &[f32]) -> Array {
    Array::from_vec(v.to_vec(), &[v.len()])
}

fn model() -> Model<Pair> {
    Model {
        layers: vec![
            Layer {
                w: arr(&[0.5, -1.25]),
                b: arr(&[0.75]),
                scale: 2.0,
            },
            Layer {
                w: arr(&[1.5, 0.25]),
                b: arr(&[-0.5]),
                scale: 3.0,
            },
        ],
        extra: Pair(arr(&[4.0]), None),
        names: BTreeMap::from([("z".to_string(), arr(&[7.0, 8.0]))]),
        mode: Static("train"),
    }
}

#[test]
fn derived_struct_flattens_in_field_order_and_rebuilds() {
    let m = model();
    let (leaves, def) = m.flatten();
    assert_eq!(leaves.len(), 6);
    assert_eq!(def.num_leaves(), 6);
    let values: Vec<Vec<f32>> = leaves.iter().map(|l| l.to_vec::<f32>()).collect();
    assert_eq!(values[0], vec![0.5, -1.25]);
    assert_eq!(values[5], vec![7.0, 8.0]);
    let back = Model::<Pair>::unflatten(&def, leaves).unwrap();
    assert_eq!(back.layers[1].scale, 3.0);
    assert_eq!(back.mode.0, "train");
    assert!(back.extra.1.is_none());
    // Static values are part of the structure.
    let mut other = model();
    other.layers[0].scale = 2.5;
    assert_ne!(other.flatten().1, def);
}

#[test]
fn unflattening_into_the_wrong_struct_is_an_error() {
    let (leaves, def) = model().layers[0].flatten();
    assert!(Pair::unflatten(&def, leaves).is_err());
    assert!(matches!(def, TreeDef::Node(..)));
}

#[test]
fn jit_takes_and_returns_derived_pytrees() {
    let step = jit(|m: Model<Pair>| {
        let layers = m
            .layers
            .iter()
            .map(|l| Layer {
                w: &l.w * l.scale,
                b: l.b.clone() + 1.0,
                scale: l.scale,
            })
            .collect();
        let total = m
            .layers
            .iter()
            .map(|l| l.w.sum(All))
            .fold(m.extra.0.sum(All), |a, b| a + b);
        (Model { layers, ..m }, total)
    });
    let (m2, total) = step.call(model()).unwrap();
    assert_eq!(m2.layers[0].w.to_vec::<f32>(), vec![1.0, -2.5]);
    assert_eq!(m2.layers[1].b.to_vec::<f32>(), vec![0.5]);
    assert_eq!(total.item::<f32>(), 4.0 + (0.5 - 1.25) + (1.5 + 0.25));
    step.call(model()).unwrap();
    assert_eq!(step.trace_count(), 1);
    let j = make_jaxpr(|p: Pair| p.0.sin())(Pair(arr(&[1.0]), Some(arr(&[2.0])))).unwrap();
    assert_eq!(j.jaxpr.invars.len(), 2);
}
