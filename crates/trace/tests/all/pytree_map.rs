//! Multi-tree `tree_map` and the tree utilities (`jax.tree.map` with
//! several trees, `leaves`, `structure`, `reduce`), checked leaf by leaf
//! against the same arithmetic on the flattened arrays.

use crate::common;

use jaxon_trace::pytree::{
    tree_leaves, tree_map, tree_map2, tree_map_n, tree_reduce, tree_structure,
};
use jaxon_trace::{Array, Static};
use std::collections::BTreeMap;

type Params = (Vec<Array>, BTreeMap<String, Array>, Static<u32>);

fn params(seed: u64) -> Params {
    let w = vec![
        Array::from_vec(common::uniform_f32(6, seed, 1.0), &[2, 3]),
        Array::from_vec(common::uniform_f32(3, seed + 1, 1.0), &[3]),
    ];
    let mut m = BTreeMap::new();
    m.insert(
        "b".to_string(),
        Array::from_vec(common::uniform_f32(4, seed + 2, 1.0), &[4]),
    );
    m.insert(
        "a".to_string(),
        Array::from_vec(common::uniform_f32(1, seed + 3, 1.0), &[]),
    );
    (w, m, Static(7))
}

#[test]
fn tree_map2_combines_corresponding_leaves() {
    let (p, g) = (params(1), params(2));
    // An SGD step, as `jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)`.
    let step = tree_map2(&p, &g, |p, g| p - &(g * 0.1)).unwrap();
    let (pl, gl, sl) = (tree_leaves(&p), tree_leaves(&g), tree_leaves(&step));
    assert_eq!(sl.len(), 4);
    for ((p, g), s) in pl.iter().zip(&gl).zip(&sl) {
        assert_eq!(s.shape(), p.shape());
        let want: Vec<f32> = p
            .to_vec::<f32>()
            .iter()
            .zip(g.to_vec::<f32>())
            .map(|(p, g)| p - g * 0.1)
            .collect();
        assert_eq!(s.to_vec::<f32>(), want);
    }
    assert_eq!(tree_structure(&step), tree_structure(&p));
    assert_eq!(step.2, Static(7));
}

#[test]
fn tree_map_n_sees_one_leaf_of_each_tree_in_order() {
    let (a, b, c) = (params(3), params(4), params(5));
    let out = tree_map_n(&[&a, &b, &c], |xs| &(&xs[0] * &xs[1]) - &xs[2]).unwrap();
    let leaves = |t: &Params| -> Vec<Vec<f32>> {
        tree_leaves(t).iter().map(|x| x.to_vec::<f32>()).collect()
    };
    let (la, lb, lc, lo) = (leaves(&a), leaves(&b), leaves(&c), leaves(&out));
    for k in 0..lo.len() {
        for i in 0..lo[k].len() {
            assert_eq!(lo[k][i], la[k][i] * lb[k][i] - lc[k][i], "leaf {k}[{i}]");
        }
    }
    // One tree is `tree_map`.
    let one = tree_map_n(&[&a], |xs| -&xs[0]).unwrap();
    let neg = tree_map(&a, |x| -x).unwrap();
    assert_eq!(leaves(&one), leaves(&neg));
}

#[test]
fn different_structures_are_an_error_naming_both() {
    let a = vec![Array::scalar(1.0f32), Array::scalar(2.0f32)];
    let b = vec![Array::scalar(1.0f32)];
    let e = tree_map2(&a, &b, |x, y| x + y).unwrap_err().to_string();
    assert!(
        e.contains("tree 1 has structure") && e.contains("tree 0 has"),
        "{e}"
    );
    // Static leaves are part of the structure.
    let (s1, s2) = (
        (Array::scalar(1.0f32), Static(1u8)),
        (Array::scalar(1.0f32), Static(2u8)),
    );
    assert!(tree_map2(&s1, &s2, |x, y| x + y).is_err());
    let none: [&Vec<Array>; 0] = [];
    let e = tree_map_n(&none, |xs| xs[0].clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no trees"), "{e}");
}

#[test]
fn leaves_structure_and_reduce() {
    let p = params(6);
    let leaves = tree_leaves(&p);
    assert_eq!(leaves.len(), 4);
    assert_eq!(tree_structure(&p).num_leaves(), 4);
    // A parameter count, as `jax.tree.reduce(lambda n, x: n + x.size, p, 0)`.
    let n = tree_reduce(&p, 0usize, |n, x| n + x.shape().iter().product::<usize>());
    assert_eq!(n, 6 + 3 + 4 + 1);
    // The sum of squares of every leaf.
    let ss = tree_reduce(&p, 0.0f64, |acc, x| {
        acc + x
            .to_vec::<f32>()
            .iter()
            .map(|v| (v * v) as f64)
            .sum::<f64>()
    });
    let want: f64 = leaves
        .iter()
        .flat_map(|x| x.to_vec::<f32>())
        .map(|v| (v * v) as f64)
        .sum();
    assert_eq!(ss, want);
}
