//! The commonly used JAX functions added for issue 21's coverage goal:
//! `lax`'s `*_in_dim` family, `select` and `broadcast_shapes`; `jnp`'s
//! dtype questions, `asarray`, `bitwise_count` and `block`; the
//! `tree_util` functions; the orthogonal initializers. Each against an
//! index loop on random inputs, or against JAX 0.10.2's values.

use crate::common::{ints, uniform};
use jaxon_ir::DType;
use jaxon_trace::nn::initializers as init;
use jaxon_trace::numpy::{self as jnp, Block, DTypeCategory as C};
use jaxon_trace::pytree::tree_structure;
use jaxon_trace::tree_util::{self as tu, PathKey};
use jaxon_trace::{lax, random as jr, Array};
use std::collections::BTreeMap;

fn f64s(shape: &[usize], seed: u64) -> (Array, Vec<f64>) {
    let n = shape.iter().product();
    let v = uniform(n, seed, 4.0);
    (Array::from_vec(v.clone(), shape), v)
}

/// Row-major offset of `idx` in `shape`.
fn at(shape: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |o, (&i, &s)| o * s + i)
}

fn each_index(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut f| {
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = f % shape[d];
                f /= shape[d];
            }
            idx
        })
        .collect()
}

#[test]
fn in_dim_family_matches_an_index_loop() {
    let shape = [3, 5, 4];
    let (x, xv) = f64s(&shape, 1);
    for (seed, axis) in [(2u64, 0usize), (3, 1), (4, 2)] {
        let n = shape[axis];
        for start in ints(4, -2, n as i32 + 2, seed) {
            let size = 2.min(n);
            let s = Array::scalar(start);
            // Negative starts count from the end, then clamp (JAX:
            // dynamic_slice_in_dim(arange(5.), -2, 2) == [3, 4], and -7
            // gives [0, 1]).
            let wrapped = if start < 0 { start + n as i32 } else { start };
            let lo = (wrapped.max(0) as usize).min(n - size);
            let got = lax::dynamic_slice_in_dim(&x, &s, size, axis).unwrap();
            let mut out_shape = shape.to_vec();
            out_shape[axis] = size;
            assert_eq!(got.shape(), out_shape);
            let want: Vec<f64> = each_index(&out_shape)
                .iter()
                .map(|i| {
                    let mut j = i.clone();
                    j[axis] += lo;
                    xv[at(&shape, &j)]
                })
                .collect();
            assert_eq!(got.to_vec::<f64>(), want, "slice axis {axis} start {start}");

            let row = lax::dynamic_index_in_dim(&x, &s, axis, false).unwrap();
            let keep = lax::dynamic_index_in_dim(&x, &s, axis, true).unwrap();
            let lo1 = (wrapped.max(0) as usize).min(n - 1);
            let mut row_shape = shape.to_vec();
            row_shape.remove(axis);
            assert_eq!(row.shape(), row_shape);
            assert_eq!(keep.ndim(), 3);
            let want_row: Vec<f64> = each_index(&row_shape)
                .iter()
                .map(|i| {
                    let mut j = i.clone();
                    j.insert(axis, lo1);
                    xv[at(&shape, &j)]
                })
                .collect();
            assert_eq!(row.to_vec::<f64>(), want_row);
            assert_eq!(keep.to_vec::<f64>(), want_row);

            // Writing the negated row back at the same index.
            let upd =
                lax::dynamic_update_index_in_dim(&x, &lax::neg(&row).unwrap(), &s, axis).unwrap();
            let want_upd: Vec<f64> = each_index(&shape)
                .iter()
                .map(|i| {
                    let v = xv[at(&shape, i)];
                    if i[axis] == lo1 {
                        -v
                    } else {
                        v
                    }
                })
                .collect();
            assert_eq!(upd.to_vec::<f64>(), want_upd);
            let upd2 =
                lax::dynamic_update_slice_in_dim(&x, &lax::neg(&keep).unwrap(), &s, axis).unwrap();
            assert_eq!(upd2.to_vec::<f64>(), want_upd);
        }
    }
    let s = Array::scalar(0i32);
    assert!(lax::dynamic_slice_in_dim(&x, &s, 1, 3).is_err());
    let two = Array::from_vec(vec![0i32, 1], &[2]);
    assert!(lax::dynamic_slice_in_dim(&x, &two, 1, 0).is_err());
}

#[test]
fn select_and_broadcast_shapes() {
    let (a, av) = f64s(&[6], 5);
    let (b, bv) = f64s(&[6], 6);
    let p: Vec<bool> = ints(6, 0, 1, 7).iter().map(|&i| i == 1).collect();
    let got = lax::select(&Array::from_vec(p.clone(), &[6]), &a, &b).unwrap();
    let want: Vec<f64> = (0..6).map(|i| if p[i] { av[i] } else { bv[i] }).collect();
    assert_eq!(got.to_vec::<f64>(), want);
    assert!(lax::select(&a, &a, &b).is_err(), "a non-bool predicate");

    // JAX: lax.broadcast_shapes((2,1,3),(4,1),(1,)) == (2,4,3).
    assert_eq!(
        lax::broadcast_shapes(&[&[2, 1, 3], &[4, 1], &[1]]).unwrap(),
        [2, 4, 3]
    );
    assert_eq!(lax::broadcast_shapes(&[]).unwrap(), Vec::<usize>::new());
    let err = lax::broadcast_shapes(&[&[2, 3], &[4, 3]])
        .unwrap_err()
        .to_string();
    assert!(err.contains("[2, 3]") && err.contains("[4, 3]"), "{err}");
    assert_eq!(lax::dtype(&a), DType::F64);
}

#[test]
fn dtype_questions_match_jax() {
    use DType::*;
    // Rows of JAX's answers for bool, i8, u32, bf16, f16, f32, c64, key<fry>.
    let dtypes = [Bool, I8, U32, BF16, F16, F32, C64, KeyFry];
    let table: [(C, [bool; 8]); 9] = [
        (C::Generic, [true; 8]),
        (
            C::Number,
            [false, true, true, true, true, true, true, false],
        ),
        (
            C::Inexact,
            [false, false, false, true, true, true, true, false],
        ),
        (
            C::Floating,
            [false, false, false, true, true, true, false, false],
        ),
        (
            C::ComplexFloating,
            [false, false, false, false, false, false, true, false],
        ),
        (
            C::Integer,
            [false, true, true, false, false, false, false, false],
        ),
        (
            C::SignedInteger,
            [false, true, false, false, false, false, false, false],
        ),
        (
            C::UnsignedInteger,
            [false, false, true, false, false, false, false, false],
        ),
        (
            C::Bool,
            [true, false, false, false, false, false, false, false],
        ),
    ];
    for (cat, row) in table {
        for (d, want) in dtypes.iter().zip(row) {
            assert_eq!(jnp::issubdtype(*d, cat), want, "issubdtype({d}, {cat:?})");
        }
    }
    assert!(jnp::issubdtype(KeyFry, C::PrngKey));
    assert!(jnp::issubdtype(F32, F32) && !jnp::issubdtype(F32, F64));
    // JAX: promote_types(i32, f32) = f32, (u8, i8) = i16, (i64, f16) = f16,
    // (bf16, f16) = f32.
    let p = |a, b| jnp::promote_types(a, b).unwrap();
    assert_eq!(
        [p(I32, F32), p(U8, I8), p(I64, F16), p(BF16, F16)],
        [F32, I16, F16, F32]
    );
    assert!(jnp::promote_types(KeyFry, F32).is_err());

    let z = Array::from_vec(vec![1f32], &[1]);
    assert!(!jnp::iscomplexobj(&z) && jnp::isrealobj(&z));
    let same = jnp::asarray(&z, Some(F32)).unwrap();
    assert_eq!(same.dtype(), F32);
    assert_eq!(jnp::asarray(&z, Some(I32)).unwrap().dtype(), I32);
}

#[test]
fn bitwise_count_matches_a_bit_loop() {
    let v = ints(40, i32::MIN / 2, i32::MAX / 2, 9);
    let got = jnp::bitwise_count(&Array::from_vec(v.clone(), &[40])).unwrap();
    assert_eq!(got.dtype(), DType::U8);
    let want: Vec<u8> = v
        .iter()
        .map(|x| x.unsigned_abs().count_ones() as u8)
        .collect();
    assert_eq!(got.to_vec::<u8>(), want);
    // JAX: bitwise_count(int8[-3, 5, -128]) = [2, 2, 1]; of [True, False] = [1, 0].
    let i8s = Array::from_vec(vec![-3i8, 5, -128], &[3]);
    assert_eq!(jnp::bitwise_count(&i8s).unwrap().to_vec::<u8>(), [2, 2, 1]);
    let bools = Array::from_vec(vec![true, false], &[2]);
    assert_eq!(jnp::bitwise_count(&bools).unwrap().to_vec::<u8>(), [1, 0]);
    assert!(jnp::bitwise_count(&Array::scalar(1f32)).is_err());
}

#[test]
fn block_assembles_like_concatenates() {
    let (a, av) = f64s(&[2, 2], 11);
    let (b, bv) = f64s(&[2, 3], 12);
    let (c, cv) = f64s(&[1, 5], 13);
    let m = jnp::block(&Block::from(vec![
        Block::from(vec![a.clone(), b.clone()]),
        Block::from(vec![c.clone()]),
    ]))
    .unwrap();
    assert_eq!(m.shape(), [3, 5]);
    let mut want: Vec<f64> = Vec::new();
    for r in 0..2 {
        want.extend(&av[2 * r..2 * r + 2]);
        want.extend(&bv[3 * r..3 * r + 3]);
    }
    want.extend(&cv);
    assert_eq!(m.to_vec::<f64>(), want);
    // Depth 1: 1-d pieces concatenate; a scalar becomes a length-1 piece
    // and promotes with the integer array (JAX: block([1, 2, [3, 4]])).
    let v = jnp::block(&Block::from(vec![
        Array::scalar(1i32),
        Array::scalar(2i32),
        Array::from_vec(vec![3i32, 4], &[2]),
    ]))
    .unwrap();
    assert_eq!(v.to_vec::<i32>(), [1, 2, 3, 4]);
    // Depth 2 of vectors gives a matrix (rank max(depth, ndim)).
    let row = |x: f64| Array::from_vec(vec![x, x + 1.0], &[2]);
    let g = jnp::block(&Block::from(vec![vec![row(0.0)], vec![row(5.0)]])).unwrap();
    assert_eq!(g.shape(), [2, 2]);
    assert_eq!(g.to_vec::<f64>(), [0.0, 1.0, 5.0, 6.0]);
    let ragged = Block::List(vec![Block::from(vec![a.clone()]), Block::Array(b)]);
    let err = jnp::block(&ragged).unwrap_err().to_string();
    assert!(err.contains("depth"), "{err}");
    assert!(jnp::block(&Block::List(vec![])).is_err());
}

#[test]
fn tree_util_paths_flatten_and_transpose() {
    let s = |x: f64| Array::scalar(x);
    let mut t: BTreeMap<String, (Vec<Array>, Option<Array>)> = BTreeMap::new();
    t.insert("a".into(), (vec![s(1.0), s(2.0)], Some(s(3.0))));
    t.insert("c".into(), (vec![], None));
    let (leaves, def) = tu::tree_flatten_with_path(&t);
    let paths: Vec<String> = leaves.iter().map(|(p, _)| tu::keystr(p)).collect();
    // JAX writes DictKey then SequenceKey steps: ['a'][0][0] ...
    assert_eq!(paths, ["['a'][0][0]", "['a'][0][1]", "['a'][1]"]);
    assert_eq!(tu::keystr_simple(&leaves[1].0, "/"), "a/0/1");
    assert_eq!(
        leaves[2].0,
        vec![PathKey::Key("a".into()), PathKey::Index(1)]
    );

    let (flat, def2) = tu::tree_flatten(&t);
    assert_eq!(def, def2);
    let back: BTreeMap<String, (Vec<Array>, Option<Array>)> =
        tu::tree_unflatten(&def, flat.iter().map(|x| x * 10.0).collect()).unwrap();
    assert_eq!(back["a"].0[1].item::<f64>(), 20.0);
    assert!(
        tu::tree_unflatten::<BTreeMap<String, (Vec<Array>, Option<Array>)>>(&def, vec![]).is_err()
    );

    let doubled = tu::tree_map_with_path(&t, |p, x| {
        if p.contains(&PathKey::Index(1)) {
            x * 2.0
        } else {
            x.clone()
        }
    })
    .unwrap();
    assert_eq!(doubled["a"].0[1].item::<f64>(), 4.0);
    assert_eq!(doubled["a"].1.as_ref().unwrap().item::<f64>(), 6.0);

    // JAX: tree_all([True, 1, array(True)]) is True; a [2] leaf is ambiguous.
    let yes = vec![Array::scalar(true), Array::scalar(1i32)];
    assert!(tu::tree_all(&yes).unwrap());
    assert!(!tu::tree_all(&vec![Array::scalar(true), Array::scalar(0f32)]).unwrap());
    assert!(tu::tree_all(&Vec::<Array>::new()).unwrap());
    assert!(tu::tree_all(&vec![Array::from_vec(vec![true, true], &[2])]).is_err());

    // JAX: treedef_is_leaf of a leaf and of None is True, of (1,) False.
    assert!(tu::treedef_is_leaf(&tree_structure(&s(0.0))));
    assert!(tu::treedef_is_leaf(&tree_structure(&Option::<Array>::None)));
    assert!(!tu::treedef_is_leaf(&tree_structure(&(s(0.0),))));
    assert_eq!(
        tu::treedef_children(&tree_structure(&(s(0.0), s(1.0)))).len(),
        2
    );

    // JAX: tree_transpose([0,0], (0,0), [(1,2),(3,4)]) == ([1,3],[2,4]).
    let rows = vec![(s(1.0), s(2.0)), (s(3.0), s(4.0)), (s(5.0), s(6.0))];
    let outer = tree_structure(&vec![s(0.0), s(0.0), s(0.0)]);
    let inner = tree_structure(&(s(0.0), s(0.0)));
    let (a, b): (Vec<Array>, Vec<Array>) = tu::tree_transpose(&outer, &inner, &rows).unwrap();
    let v = |xs: &[Array]| xs.iter().map(|x| x.item::<f64>()).collect::<Vec<_>>();
    assert_eq!((v(&a), v(&b)), (vec![1.0, 3.0, 5.0], vec![2.0, 4.0, 6.0]));
    let wrong = tree_structure(&vec![s(0.0), s(0.0)]);
    assert!(tu::tree_transpose::<_, (Vec<Array>, Vec<Array>)>(&wrong, &inner, &rows).is_err());
}

fn close_to_bits(what: &str, got: &Array, shape: &[usize], want: &[u32]) {
    assert_eq!(got.shape(), shape.to_vec(), "{what}");
    for (i, (g, w)) in got.to_vec::<f32>().iter().zip(want).enumerate() {
        let w = f32::from_bits(*w);
        assert!(
            (g - w).abs() <= 2e-6 + 2e-6 * w.abs(),
            "{what}[{i}]: got {g}, JAX {w}"
        );
    }
}

#[test]
fn orthogonal_initializers_match_jax() {
    // jax.nn.initializers.orthogonal()(key(42), (2, 3), float32)
    let o = init::orthogonal(1.0, -1)
        .init(&jr::key(42), &[2, 3], DType::F32)
        .unwrap();
    let want = [
        3182695232, 1063987405, 3200599689, 1063210151, 1048837793, 1054131463,
    ];
    close_to_bits("orthogonal (2,3)", &o, &[2, 3], &want);
    // Its rows are orthonormal.
    let g = jnp::matmul(&o, &lax::transpose(&o, &[1, 0]).unwrap()).unwrap();
    for (i, x) in g.to_vec::<f32>().iter().enumerate() {
        let id = if i % 3 == 0 { 1.0 } else { 0.0 };
        assert!((x - id).abs() < 1e-5, "gram[{i}] = {x}");
    }
    // orthogonal(scale=2.0, column_axis=0)(key(3), (3, 2, 2), float32)
    let o = init::orthogonal(2.0, 0)
        .init(&jr::key(3), &[3, 2, 2], DType::F32)
        .unwrap();
    let want = [
        3212402920, 1068099459, 3210132347, 3208897759, 1069153865, 1053110670, 3215329428,
        1047916138, 1053771274, 3209535897, 3186335929, 3219401801,
    ];
    close_to_bits("orthogonal col 0", &o, &[3, 2, 2], &want);
    // delta_orthogonal()(key(5), (3, 2, 3), float32)
    let d = init::delta_orthogonal(1.0, -1)
        .init(&jr::key(5), &[3, 2, 3], DType::F32)
        .unwrap();
    let mut want = [0u32; 18];
    want[6..12].copy_from_slice(&[
        3177509312, 1054202237, 1063790849, 1060499807, 3206483358, 1051258808,
    ]);
    close_to_bits("delta_orthogonal 3d", &d, &[3, 2, 3], &want);
    // delta_orthogonal(scale=0.5)(key(1), (2, 3, 2, 2), float32): centre (0, 1).
    let d = init::delta_orthogonal(0.5, -1)
        .init(&jr::key(1), &[2, 3, 2, 2], DType::F32)
        .unwrap();
    let mut want = [0u32; 24];
    want[4..8].copy_from_slice(&[3200262858, 1051274369, 3198758017, 3200262859]);
    close_to_bits("delta_orthogonal 4d", &d, &[2, 3, 2, 2], &want);
    assert!(init::orthogonal(1.0, -1)
        .init(&jr::key(0), &[3], DType::F32)
        .is_err());
    assert!(init::delta_orthogonal(1.0, -1)
        .init(&jr::key(0), &[3, 3, 2], DType::F32)
        .is_err());
    assert!(init::orthogonal(1.0, 2)
        .init(&jr::key(0), &[3, 3], DType::F32)
        .is_err());
}

#[test]
fn strict_dtype_promotion_matches_jax() {
    use jnp::{numpy_dtype_promotion, DtypePromotion};
    let x = Array::from_vec(vec![1f32, 2.0, 3.0], &[3]);
    let h = lax::convert_element_type(&x, DType::F16, false).unwrap();
    let i = Array::from_vec(vec![1i32, 2, 3], &[3]);
    let u = Array::from_vec(vec![1u32, 2, 3], &[3]);
    let b = Array::from_vec(vec![true, false, true], &[3]);
    let c = lax::convert_element_type(&x, DType::C64, false).unwrap();
    let add = |a: &Array, b: &Array| jnp::add(a, b).map(|r| r.dtype());
    // Standard promotion first: f32 + i32 is f32.
    assert_eq!(add(&x, &i).unwrap(), DType::F32);
    {
        let _strict = numpy_dtype_promotion(DtypePromotion::Strict);
        // JAX 0.10.2 under numpy_dtype_promotion('strict'):
        assert_eq!(add(&x, &Array::weak(1.0)).unwrap(), DType::F32); // f32 + 1.0
        assert_eq!(add(&x, &Array::weak(1i64)).unwrap(), DType::F32); // f32 + 1
        assert_eq!(add(&u, &Array::weak(1i64)).unwrap(), DType::U32); // u32 + 1
        assert_eq!(add(&c, &Array::weak(1.0)).unwrap(), DType::C64); // c64 + 1.0
        assert_eq!(add(&x, &x).unwrap(), DType::F32);
        assert_eq!(add(&b, &Array::scalar(true)).unwrap(), DType::Bool); // b + True
        assert!(add(&i, &Array::weak(1.0)).is_err()); // i32 + 1.0
        assert!(add(&b, &Array::weak(1i64)).is_err()); // bool + 1
        let err = add(&x, &h).unwrap_err().to_string(); // f32 + f16
        assert!(
            err.contains("f32") && err.contains("f16") && err.contains("strict"),
            "{err}"
        );
        assert!(add(&x, &i).is_err()); // f32 + i32
        {
            // Guards nest and restore.
            let _std = numpy_dtype_promotion(DtypePromotion::Standard);
            assert_eq!(add(&x, &h).unwrap(), DType::F32);
        }
        assert!(add(&x, &h).is_err());
        // Another thread has its own mode.
        let (x2, i2) = (x.to_vec::<f32>(), i.to_vec::<i32>());
        std::thread::spawn(move || {
            let x = Array::from_vec(x2, &[3]);
            let i = Array::from_vec(i2, &[3]);
            assert_eq!(jnp::add(&x, &i).unwrap().dtype(), DType::F32);
        })
        .join()
        .unwrap();
    }
    assert_eq!(add(&x, &h).unwrap(), DType::F32);
}

#[test]
fn rank_promotion_raise_matches_jax() {
    use jnp::{numpy_rank_promotion, RankPromotion};
    let v = Array::from_vec(vec![1f32, 2.0, 3.0], &[3]);
    let m = Array::from_vec(vec![1f32; 6], &[2, 3]);
    let row = Array::from_vec(vec![1f32; 3], &[1, 3]);
    let _raise = numpy_rank_promotion(RankPromotion::Raise);
    // JAX: (3,) + (2,3) raises; (3,) + scalar, (3,) + (3,) and (1,3) + (2,3)
    // are fine.
    let err = jnp::add(&v, &m).unwrap_err().to_string();
    assert!(err.contains("f32[3]") && err.contains("f32[2,3]"), "{err}");
    assert_eq!(jnp::add(&v, &Array::scalar(2f32)).unwrap().shape(), [3]);
    assert_eq!(jnp::add(&v, &v).unwrap().shape(), [3]);
    assert_eq!(jnp::add(&row, &m).unwrap().shape(), [2, 3]);
    let _warn = numpy_rank_promotion(RankPromotion::Warn);
    assert_eq!(jnp::add(&v, &m).unwrap().shape(), [2, 3]);
}

#[test]
fn dynamic_slice_wraps_negative_starts_like_jax() {
    let x = Array::from_vec((0..5).map(|i| i as f32).collect(), &[5]);
    let at = |i: i32| {
        lax::dynamic_slice(&x, &[Array::scalar(i)], &[2])
            .unwrap()
            .to_vec::<f32>()
    };
    // JAX: dynamic_slice_in_dim(arange(5.), -2 / -1 / -7, 2) = [3,4], [3,4], [0,1].
    assert_eq!(
        [at(-2), at(-1), at(-7), at(1)],
        [[3.0, 4.0], [3.0, 4.0], [0.0, 1.0], [1.0, 2.0]]
    );
    // Traced: JAX stages `lt`, `add`, `select_n` before the slice.
    let f = jaxon_trace::jit(|(x, i): (Array, Array)| lax::dynamic_slice(&x, &[i], &[2]).unwrap());
    assert_eq!(
        f.call((x.clone(), Array::scalar(-2i32)))
            .unwrap()
            .to_vec::<f32>(),
        [3.0, 4.0]
    );
    let text = f
        .lower((x.clone(), Array::scalar(-2i32)))
        .unwrap()
        .to_string();
    assert!(
        text.contains("lt") && text.contains("select_n") && text.contains("dynamic_slice["),
        "{text}"
    );
    // The primitive alone clamps a negative start to 0.
    let c = lax::dynamic_slice_clamped(&x, &[Array::scalar(-2i32)], &[2]).unwrap();
    assert_eq!(c.to_vec::<f32>(), [0.0, 1.0]);
    // Updates wrap too: write [9, 9] at -2.
    let u = Array::from_vec(vec![9f32, 9.0], &[2]);
    let y = lax::dynamic_update_slice(&x, &u, &[Array::scalar(-2i32)]).unwrap();
    assert_eq!(y.to_vec::<f32>(), [0.0, 1.0, 2.0, 9.0, 9.0]);
}

#[test]
fn unique_along_an_axis_matches_jax_and_a_set() {
    let x = Array::from_vec(vec![1i32, 2, 1, 2, 3, 0, 3, 1, 1, 2, 1, 2], &[3, 4]);
    let v = |a: &Array| a.to_vec::<i32>();
    // JAX: unique(x, axis=0, return_index/inverse/counts).
    let u = jnp::unique_all_axis(&x, 0, None, None).unwrap();
    assert_eq!(u.values.shape(), [2, 4]);
    assert_eq!(v(&u.values), [1, 2, 1, 2, 3, 0, 3, 1]);
    assert_eq!(
        (v(&u.indices), v(&u.inverse_indices), v(&u.counts)),
        (vec![0, 1], vec![0, 1, 0], vec![2, 1])
    );
    // axis=1: columns [1,3,1], [2,0,2], [1,3,1], [2,1,2].
    let u = jnp::unique_all_axis(&x, 1, None, None).unwrap();
    assert_eq!(u.values.shape(), [3, 3]);
    assert_eq!(v(&u.values), [1, 2, 2, 3, 0, 1, 1, 2, 2]);
    assert_eq!(
        (v(&u.indices), v(&u.inverse_indices), v(&u.counts)),
        (vec![0, 1, 3], vec![0, 1, 0, 2], vec![2, 1, 1])
    );
    // size=3, fill_value=-1 pads a row.
    let u = jnp::unique_all_axis(&x, 0, Some(3), Some(&Array::scalar(-1i32))).unwrap();
    assert_eq!(v(&u.values), [1, 2, 1, 2, 3, 0, 3, 1, -1, -1, -1, -1]);
    assert_eq!(
        (v(&u.indices), v(&u.counts)),
        (vec![0, 1, 0], vec![2, 1, 0])
    );
    // NaN rows are equal to each other and sort last (JAX: [[0, 2], [nan, 1]]).
    let nan = f64::NAN;
    let f = Array::from_vec(vec![nan, 1.0, nan, 1.0, 0.0, 2.0], &[3, 2]);
    let got = jnp::unique_axis(&f, 0, None, None).unwrap().to_vec::<f64>();
    assert_eq!(got[..2], [0.0, 2.0]);
    assert!(got[2].is_nan() && got[3] == 1.0 && got.len() == 4);
    // Random small-integer rows against a sorted set of rows.
    for seed in 0..6u64 {
        let (n, m) = (7 + seed as usize, 3);
        let data = ints(n * m, 0, 2, 40 + seed);
        let xs = Array::from_vec(data.clone(), &[n, m]);
        let u = jnp::unique_all_axis(&xs, 0, None, None).unwrap();
        let rows: std::collections::BTreeSet<Vec<i32>> =
            data.chunks(m).map(<[i32]>::to_vec).collect();
        let want: Vec<i32> = rows.iter().flatten().copied().collect();
        assert_eq!(v(&u.values), want, "seed {seed}");
        let inv = v(&u.inverse_indices);
        let uv = v(&u.values);
        for (r, &k) in data.chunks(m).zip(&inv) {
            assert_eq!(r, &uv[k as usize * m..(k as usize + 1) * m]);
        }
        assert_eq!(v(&u.counts).iter().sum::<i32>(), n as i32);
    }
    assert!(jnp::unique_axis(&x, 2, None, None).is_err());
    // JAX: lexsort(([1,2,1,0], [0,0,1,0])) == [3, 0, 1, 2].
    let k0 = Array::from_vec(vec![1i32, 2, 1, 0], &[4]);
    let k1 = Array::from_vec(vec![0i32, 0, 1, 0], &[4]);
    assert_eq!(v(&jnp::lexsort(&[k0, k1], -1).unwrap()), [3, 0, 1, 2]);
}
