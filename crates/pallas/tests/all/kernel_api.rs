//! The kernel API in interpret mode, checked against plain Rust loops on
//! seeded random inputs: whole-ref and indexed reads/writes, `ds` with a
//! traced start, integer-array indices, masked loads/stores, program ids,
//! atomics, `dot`, `when` and `fori_loop` inside kernels.

use crate::common;

use common::{assert_close, Rng};
use jaxon_ir::DType::{F32, I32};
use jaxon_pallas::*;
use jaxon_trace::{numpy as jnp, Array};

#[test]
fn add_kernel_whole_array() {
    let add = |r: &[Ref]| r[2].store(r[0].load() + r[1].load());
    let x = Array::from_vec((0..8).collect::<Vec<i32>>(), &[8]);
    let y = Array::from_vec((8..16).collect::<Vec<i32>>(), &[8]);
    let out = pallas_call(add, shape_dtype(&[8], I32))
        .interpret(true)
        .call1(&[x, y])
        .unwrap();
    assert_eq!(
        out.to_vec::<i32>(),
        (0..8).map(|i| 2 * i + 8).collect::<Vec<i32>>()
    );
}

#[test]
fn add_kernel_blocked_grid4() {
    let mut rng = Rng::new(1);
    let (a, b) = (rng.i32s(8, -100, 100), rng.i32s(8, -100, 100));
    let add = |r: &[Ref]| r[2].set(.., r[0].get(..) + r[1].get(..));
    let spec = || BlockSpec::map1([2], |i| i);
    let out = pallas_call(add, shape_dtype(&[8], I32))
        .grid(4)
        .in_specs(vec![spec(), spec()])
        .out_spec(spec())
        .interpret(true)
        .call1(&[
            Array::from_vec(a.clone(), &[8]),
            Array::from_vec(b.clone(), &[8]),
        ])
        .unwrap();
    let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(out.to_vec::<i32>(), want);
}

#[test]
fn exp_by_program_id() {
    // o[i] = exp(x[i]) with one program per element.
    let mut rng = Rng::new(2);
    let xs = rng.f32s(6);
    let k = |r: &[Ref]| {
        let i = program_id(0);
        r[1].set(&i, r[0].get(&i).exp());
    };
    let out = pallas_call(k, shape_dtype(&[6], F32))
        .grid(6)
        .interpret(true)
        .call1(&[Array::from_vec(xs.clone(), &[6])])
        .unwrap();
    let want: Vec<f64> = xs.iter().map(|v| (*v as f64).exp()).collect();
    assert_close(&out.to_vec::<f32>(), &want, 1e-6);
}

#[test]
fn static_slices_and_integer_arrays() {
    // x: (3, 8, 4); o1 = x[0, 2:5, :]; o2 = x[1][arange(2)[:, None], arange(3)[None, :]]
    let mut rng = Rng::new(3);
    let xs = rng.f32s(96);
    let k = |r: &[Ref]| {
        r[1].store(r[0].get(ix![0, 2..5, ..]));
        let rows = jnp::arange(2).unwrap().reshape(&[2, 1]);
        let cols = jnp::arange(3).unwrap().reshape(&[1, 3]);
        r[2].store(r[0].get(ix![1, &rows, &cols]));
    };
    let outs = pallas_call(
        k,
        vec![shape_dtype(&[3, 4], F32), shape_dtype(&[2, 3], F32)],
    )
    .interpret(true)
    .call(&[Array::from_vec(xs.clone(), &[3, 8, 4])])
    .unwrap();
    let at = |a: usize, b: usize, c: usize| xs[a * 32 + b * 4 + c] as f64;
    let want1: Vec<f64> = (2..5)
        .flat_map(|b| (0..4).map(move |c| (b, c)))
        .map(|(b, c)| at(0, b, c))
        .collect();
    assert_close(&outs[0].to_vec::<f32>(), &want1, 0.0);
    let want2: Vec<f64> = (0..2)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .map(|(i, j)| at(1, i, j))
        .collect();
    assert_close(&outs[1].to_vec::<f32>(), &want2, 0.0);
}

#[test]
fn ds_with_traced_start_and_masked_load_other() {
    // Program i reads x[2i : 2i+3] (a ds slice with a traced start) and a
    // masked load of x[idx] with idx < 5, other = -inf.
    let mut rng = Rng::new(4);
    let xs = rng.f32s(8);
    let k = |r: &[Ref]| {
        let i = program_id(0);
        let start = &i * 2;
        let w = r[0].get(ds(&start, 3));
        r[1].set(ix![&i, ..], w);
        let idx = jnp::arange(8).unwrap();
        let m = idx.lt(5);
        let v = load(&r[0], &idx).mask(&m).other(f32::NEG_INFINITY).read();
        r[2].set(ix![&i, ..], v);
    };
    let outs = pallas_call(
        k,
        vec![shape_dtype(&[3, 3], F32), shape_dtype(&[3, 8], F32)],
    )
    .grid(3)
    .in_specs(vec![BlockSpec::map1([8], |_| 0)])
    .out_specs(vec![
        BlockSpec::map1([3, 3], |_| (0, 0)),
        BlockSpec::map1([3, 8], |_| (0, 0)),
    ])
    .interpret(true)
    .call(&[Array::from_vec(xs.clone(), &[8])])
    .unwrap();
    let want1: Vec<f64> = (0..3)
        .flat_map(|i| (0..3).map(move |j| 2 * i + j))
        .map(|p| xs[p] as f64)
        .collect();
    assert_close(&outs[0].to_vec::<f32>(), &want1, 0.0);
    let got2 = outs[1].to_vec::<f32>();
    for i in 0..3 {
        for j in 0..8 {
            let g = got2[i * 8 + j];
            if j < 5 {
                assert_eq!(g, xs[j]);
            } else {
                assert_eq!(g, f32::NEG_INFINITY);
            }
        }
    }
}

#[test]
fn masked_store_add_and_atomics() {
    let mut rng = Rng::new(5);
    let xs = rng.i32s(8, -50, 50);
    // Refs: x, init (aliased to output 1), o0, o1, o2.
    let k = |r: &[Ref]| {
        let x = r[0].load();
        r[2].store(0);
        let m = jnp::arange(8).unwrap().ge(3);
        store(&r[2], .., &x).mask(&m);
        r[2].add(0, 100);
        let old = atomic_add(&r[3], 0, 7);
        r[4].set(0, old);
        let prev = atomic_max(&r[3], 1, 1000);
        r[4].set(1, prev);
    };
    let outs = pallas_call(
        k,
        vec![
            shape_dtype(&[8], I32),
            shape_dtype(&[2], I32),
            shape_dtype(&[2], I32),
        ],
    )
    .in_specs(vec![BlockSpec::whole(), BlockSpec::whole()])
    .input_output_aliases(&[(1, 1)])
    .interpret(true)
    .call(&[
        Array::from_vec(xs.clone(), &[8]),
        Array::from_vec(vec![1i32, 2], &[2]),
    ])
    .unwrap();
    let mut want = vec![0; 8];
    want[3..].copy_from_slice(&xs[3..]);
    want[0] += 100;
    assert_eq!(outs[0].to_vec::<i32>(), want);
    assert_eq!(outs[1].to_vec::<i32>(), vec![8, 1000]);
    assert_eq!(outs[2].to_vec::<i32>(), vec![1, 2]);
}

#[test]
fn dot_with_transposes_when_and_fori_loop() {
    let mut rng = Rng::new(6);
    let (a, b) = (rng.f32s(12), rng.f32s(12));
    // a: (3, 4), b: (4, 3) ; o0 = a @ b, o1 = a^T @ a (trans_a), o2 = a @ a^T (trans_b)
    let k = |r: &[Ref]| {
        let (a, b) = (r[0].load(), r[1].load());
        r[2].store(dot(&a, &b));
        r[3].store(dot_t(&a, &a, true, false));
        let acc = fori_loop(
            0,
            3,
            |i, acc: Array| acc + dot_t(&a, &a, false, true) * i.astype(F32),
            jnp::zeros(&[3, 3], F32).unwrap(),
        )
        .unwrap();
        r[4].store(acc);
        when(&program_id(0).eq(0), || r[4].add(ix![0, 0], 1000.0));
    };
    let outs = pallas_call(
        k,
        vec![
            shape_dtype(&[3, 3], F32),
            shape_dtype(&[4, 4], F32),
            shape_dtype(&[3, 3], F32),
        ],
    )
    .grid(1)
    .interpret(true)
    .call(&[
        Array::from_vec(a.clone(), &[3, 4]),
        Array::from_vec(b.clone(), &[4, 3]),
    ])
    .unwrap();
    let a_ = |i: usize, j: usize| a[i * 4 + j] as f64;
    let b_ = |i: usize, j: usize| b[i * 3 + j] as f64;
    let mm = |m: usize, n: usize, k: usize, f: &dyn Fn(usize, usize, usize) -> f64| -> Vec<f64> {
        (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| (0..k).map(|p| f(i, j, p)).sum())
            .collect()
    };
    assert_close(
        &outs[0].to_vec::<f32>(),
        &mm(3, 3, 4, &|i, j, p| a_(i, p) * b_(p, j)),
        1e-5,
    );
    assert_close(
        &outs[1].to_vec::<f32>(),
        &mm(4, 4, 3, &|i, j, p| a_(p, i) * a_(p, j)),
        1e-5,
    );
    let mut aat = mm(3, 3, 4, &|i, j, p| a_(i, p) * a_(j, p));
    for v in aat.iter_mut() {
        *v *= 3.0; // 0 + 1 + 2
    }
    aat[0] += 1000.0;
    assert_close(&outs[2].to_vec::<f32>(), &aat, 1e-5);
}

#[test]
fn seed_indexing_examples_with_integer_array_writes() {
    // x: (2, 8, 4). o[arange(3), :] = x[0, 2:5, :]; and
    // o2 = load(x, (0, 2 + arange(3), :)) stored with ds(2, 3) rows.
    let mut rng = Rng::new(7);
    let xs = rng.f32s(64);
    let k = |r: &[Ref]| {
        let x = r[0].get(ix![0, 2..5, ..]);
        let rows = jnp::arange(3).unwrap();
        r[1].set(ix![&rows, ..], x);
        let x2 = load(&r[0], ix![1, &rows + 2, ..]).read();
        r[2].store(0.0);
        store(&r[2], ix![ds(2, 3), ..], x2);
    };
    let outs = pallas_call(
        k,
        vec![shape_dtype(&[3, 4], F32), shape_dtype(&[6, 4], F32)],
    )
    .interpret(true)
    .call(&[Array::from_vec(xs.clone(), &[2, 8, 4])])
    .unwrap();
    let at = |a: usize, b: usize, c: usize| xs[a * 32 + b * 4 + c] as f64;
    let want1: Vec<f64> = (0..3)
        .flat_map(|i| (0..4).map(move |c| (i, c)))
        .map(|(i, c)| at(0, i + 2, c))
        .collect();
    assert_close(&outs[0].to_vec::<f32>(), &want1, 0.0);
    let want2: Vec<f64> = (0..6)
        .flat_map(|i| (0..4).map(move |c| (i, c)))
        .map(|(i, c)| {
            if (2..5).contains(&i) {
                at(1, i, c)
            } else {
                0.0
            }
        })
        .collect();
    assert_close(&outs[1].to_vec::<f32>(), &want2, 0.0);
}

#[test]
fn partial_edge_blocks_are_padded_and_discarded() {
    // f32[10] in blocks of 4 over a grid of 3: the last input block has two
    // NaN-padded lanes; the padded output lanes are dropped.
    let mut rng = Rng::new(8);
    let xs = rng.f32s(10);
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let nan = x.ne(&x);
        r[1].store(jnp::where_(&nan, &Array::weak(-7.0), &(&x * 2.0)).unwrap());
        r[2].set(program_id(0), nan.astype(I32).sum(jnp::All));
    };
    let outs = pallas_call(k, vec![shape_dtype(&[10], F32), shape_dtype(&[3], I32)])
        .grid(3)
        .in_specs(vec![BlockSpec::map1([4], |i| i)])
        .out_specs(vec![BlockSpec::map1([4], |i| i), BlockSpec::whole()])
        .interpret(true)
        .call(&[Array::from_vec(xs.clone(), &[10])])
        .unwrap();
    let want: Vec<f64> = xs.iter().map(|v| 2.0 * *v as f64).collect();
    assert_close(&outs[0].to_vec::<f32>(), &want, 0.0);
    assert_eq!(outs[1].to_vec::<i32>(), vec![0, 0, 2]);
}

#[test]
fn masked_lanes_are_not_accessed() {
    // Lanes 5..8 of the index are out of bounds for x: f32[5], but masked.
    let mut rng = Rng::new(9);
    let xs = rng.f32s(5);
    let k = |r: &[Ref]| {
        let idx = jnp::arange(8).unwrap();
        let m = idx.lt(5);
        r[1].store(load(&r[0], &idx).mask(&m).other(0.5).read());
        store(&r[2], &idx, r[1].load() * 2.0).mask(&m);
    };
    let outs = pallas_call(k, vec![shape_dtype(&[8], F32), shape_dtype(&[5], F32)])
        .interpret(true)
        .call(&[Array::from_vec(xs.clone(), &[5])])
        .unwrap();
    let mut want: Vec<f64> = xs.iter().map(|v| *v as f64).collect();
    want.extend([0.5; 3]);
    assert_close(&outs[0].to_vec::<f32>(), &want, 0.0);
    let want2: Vec<f64> = xs.iter().map(|v| 2.0 * *v as f64).collect();
    assert_close(&outs[1].to_vec::<f32>(), &want2, 0.0);
    // `other` without a mask is an error.
    let bad = |r: &[Ref]| r[1].store(load(&r[0], ..).other(0.0).read());
    let e = pallas_call(bad, shape_dtype(&[5], F32))
        .call(&[Array::from_vec(xs, &[5])])
        .unwrap_err();
    assert!(
        e.to_string().contains("only meaningful with a `mask`"),
        "{e}"
    );
}

#[test]
fn store_as_a_kernel_or_when_tail_expression() {
    let mut rng = Rng::new(10);
    let xs = rng.f32s(4);
    let k = |r: &[Ref]| {
        when(&program_id(0).eq(1), || store(&r[1], 0, r[0].get(0) * 3.0));
        store(&r[1], 1, r[0].get(1) + program_id(0).astype(F32))
    };
    let out = pallas_call(k, shape_dtype(&[2], F32))
        .grid(2)
        .in_specs(vec![BlockSpec::whole()])
        .out_spec(BlockSpec::whole())
        .interpret(true)
        .call1(&[Array::from_vec(xs.clone(), &[4])])
        .unwrap();
    // Program 1 runs last: o[0] = 3 x[0], o[1] = x[1] + 1.
    assert_close(
        &out.to_vec::<f32>(),
        &[3.0 * xs[0] as f64, xs[1] as f64 + 1.0],
        1e-6,
    );
}
