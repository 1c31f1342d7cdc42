//! jvp and transpose rules for cumulative ops, sort, top_k, tile and stack:
//! jvp against central differences in f64 and vjp against jvp
//! (`<ct, J t> == <Jᵀ ct, t>`), on random inputs of several shapes.

use jaxon_ir::primitive::CumulativeOp;
use jaxon_ir::primitive::{Indexing, ScatterParams, StackParams, Structural, TileParams};
use jaxon_trace::{catch, lax, numpy as jnp, Array};
use jaxon_transforms::{jvp, vjp};

fn rand(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// jvp vs central differences and vjp vs jvp for `f` at a random point.
fn check(
    name: &str,
    f: impl Fn(Array) -> Array + Clone,
    shape: &[usize],
    seed: u64,
    lo: f64,
    hi: f64,
) {
    let n: usize = shape.iter().product();
    let x = rand(n, seed, lo, hi);
    let t = rand(n, seed + 100, -1.0, 1.0);
    let xa = Array::from_vec(x.clone(), shape);
    let ta = Array::from_vec(t.clone(), shape);
    let (y, jt) = jvp(f.clone(), xa.clone(), ta.clone()).unwrap();
    let jt = jt.to_vec::<f64>();
    let eps = 1e-6;
    let at = |s: f64| {
        let v: Vec<f64> = x.iter().zip(&t).map(|(a, b)| a + s * b).collect();
        catch(|| f(Array::from_vec(v, shape)))
            .unwrap()
            .to_vec::<f64>()
    };
    let (p, m) = (at(eps), at(-eps));
    for i in 0..jt.len() {
        let fd = (p[i] - m[i]) / (2.0 * eps);
        assert!(
            (jt[i] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "{name}: jvp[{i}] {} vs fd {fd}",
            jt[i]
        );
    }
    let ct = rand(jt.len(), seed + 200, -1.0, 1.0);
    let (_, pb) = vjp(f, xa).unwrap();
    let g: Array = pb.call(Array::from_vec(ct.clone(), &y.shape())).unwrap();
    let (l, r) = (dot(&ct, &jt), dot(&g.to_vec::<f64>(), &t));
    assert!(
        (l - r).abs() < 1e-9 * (1.0 + l.abs()),
        "{name}: <ct,Jt>={l} <J^T ct,t>={r}"
    );
}

#[test]
fn cumulative_ops_jvp_and_vjp() {
    let ops = [
        CumulativeOp::Cumprod,
        CumulativeOp::Cummax,
        CumulativeOp::Cummin,
        CumulativeOp::Cumlogsumexp,
        CumulativeOp::Cumsum,
    ];
    for (k, op) in ops.into_iter().enumerate() {
        for (shape, axis) in [(&[5][..], 0), (&[3, 4][..], 1), (&[4, 1, 3][..], 0)] {
            for reverse in [false, true] {
                let f = move |x: Array| lax::cumulative(op, &x, axis, reverse).unwrap();
                // Cumprod stays away from zero (its rule divides by x).
                check(
                    &format!("{op:?} {shape:?} {axis} {reverse}"),
                    f,
                    shape,
                    10 + k as u64,
                    0.3,
                    1.7,
                );
            }
        }
    }
}

#[test]
fn sort_and_top_k_jvp_and_vjp() {
    for (shape, dim) in [(&[6][..], 0), (&[3, 5][..], 1), (&[4, 3][..], 0)] {
        let f = move |x: Array| lax::sort(&[x], dim, true, 1).unwrap().remove(0);
        check("sort", f, shape, 40, -2.0, 2.0);
        // Two operands sorted by the first: the second follows its keys.
        let g = move |x: Array| {
            let outs = lax::sort(&[x.sin(), x.clone() * 3.0], dim, true, 1).unwrap();
            &outs[0] * &outs[1]
        };
        check("sort2", g, shape, 41, -2.0, 2.0);
    }
    for shape in [&[7][..], &[2, 6][..]] {
        let f = |x: Array| {
            let (v, _) = lax::top_k(&x, 3).unwrap();
            v.square()
        };
        check("top_k", f, shape, 42, -2.0, 2.0);
    }
}

#[test]
fn tile_and_stack_transpose() {
    let f = |x: Array| {
        let p = jaxon_ir::Primitive::Structural(Structural::Tile(TileParams {
            reps: jaxon_ir::primitive::Ints::new(vec![2, 3]),
        }));
        jaxon_trace::bind1(&p, &[x.sin()]).unwrap()
    };
    check("tile", f, &[2, 3], 50, -1.0, 1.0);
    check("tile1", f, &[1, 4], 51, -1.0, 1.0);
    let g = |x: Array| {
        let p = jaxon_ir::Primitive::Structural(Structural::Stack(StackParams { axis: 1 }));
        jaxon_trace::bind1(&p, &[x.clone(), x.cos(), x * 2.0]).unwrap()
    };
    check("stack", g, &[3, 2], 52, -1.0, 1.0);
    check(
        "stack0",
        |x: Array| jnp::stack(&[x.clone(), x.exp()], 0).unwrap(),
        &[4],
        53,
        -1.0,
        1.0,
    );
}

#[test]
fn scatter_set_transpose_with_unique_indices() {
    use jaxon_ir::primitive::{GatherScatterMode, Ints, ScatterDimensionNumbers, ScatterKind};
    let scatter = |unique: bool| {
        jaxon_ir::Primitive::Indexing(Indexing::Scatter(ScatterParams {
            kind: ScatterKind::Set,
            dimension_numbers: ScatterDimensionNumbers {
                update_window_dims: Ints::new(vec![1]),
                inserted_window_dims: Ints::new(vec![0]),
                scatter_dims_to_operand_dims: Ints::new(vec![0]),
                ..Default::default()
            },
            indices_are_sorted: false,
            mode: GatherScatterMode::FillOrDrop,
            unique_indices: unique,
            update_jaxpr: None,
        }))
    };
    let idx = Array::from_vec(vec![3i32, 0], &[2, 1]);
    // x: [5, 2]; rows 3 and 0 are overwritten by a function of x itself.
    let f = {
        let idx = idx.clone();
        move |x: Array| {
            let upd = lax::slice(&x, &[1, 0], &[3, 2], None).unwrap().sin();
            jaxon_trace::bind1(&scatter(true), &[x.clone() * 2.0, idx.clone(), upd]).unwrap()
        }
    };
    check("scatter set", f, &[5, 2], 60, -1.0, 1.0);
    let g = move |x: Array| {
        jaxon_trace::bind1(&scatter(false), &[x.clone(), idx.clone(), x.clone()]).unwrap()
    };
    // Without the unique_indices promise the transpose takes the id-scatter
    // path (rules_conv.rs tests repeated indices).
    check(
        "scatter set, indices not promised unique",
        g,
        &[2, 2],
        61,
        -1.0,
        1.0,
    );
}

#[test]
fn take_along_axis_jvp_and_vjp() {
    // Batched gathers (`operand_batching_dims`), in-range indices with
    // repeats and negative ones; and broadcast of a size-1 index row.
    let i = Array::from_vec(vec![0i32, 3, -1, 3, 1, 1, 2, -4], &[2, 4]);
    check(
        "take_along_axis(axis=1)",
        move |x| catch(|| jnp::take_along_axis(&x, &i, Some(1)).unwrap()).unwrap(),
        &[2, 4],
        41,
        -2.0,
        2.0,
    );
    let i = Array::from_vec(vec![2i32, 0, 0, 1, -1], &[5, 1]);
    check(
        "take_along_axis(axis=0, broadcast)",
        move |x| catch(|| jnp::take_along_axis(&x, &i, Some(0)).unwrap()).unwrap(),
        &[3, 4],
        42,
        -2.0,
        2.0,
    );
}
