//! `rng_bit_generator` under the transforms: `vmap` over a batch of keys
//! gives JAX 0.10.2's recorded results (JAX's rule draws every member's
//! bits from the first key), eagerly, under `jit` and with the batch axis
//! last; `vmap` with an unbatched key equals a loop of unbatched calls;
//! `grad` through the bits treats them as constants (no tangent), and
//! `make_jaxpr` stages the primitive. Data: `tests/data/rng-bit-generator-jax.txt`.

use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::lax::{self, RandomAlgorithm};
use jaxon_trace::{catch, jit, make_jaxpr, numpy as jnp, Array};
use jaxon_transforms::{grad, vmap, Axes};

/// A recorded line: algorithm, dtype, shape, keys, new keys, bits.
type Line = (
    RandomAlgorithm,
    DType,
    Vec<usize>,
    Vec<u32>,
    Vec<u32>,
    Vec<u64>,
);

fn lines(kind: &str) -> Vec<Line> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/rng-bit-generator-jax.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let words =
        |s: &str| -> Vec<u64> { s.split_whitespace().map(|w| w.parse().unwrap()).collect() };
    text.lines()
        .filter(|l| l.starts_with(kind) && l.contains(" uint32 | "))
        .map(|l| {
            let f: Vec<&str> = l.split(" | ").collect();
            let h: Vec<&str> = f[0].split(' ').collect();
            let alg = RandomAlgorithm::ALL
                .into_iter()
                .find(|a| a.name() == h[1])
                .unwrap();
            let shape = match h[3] {
                "-" => vec![],
                s => s.split('x').map(|d| d.parse().unwrap()).collect(),
            };
            let u32s = |s: &str| words(s).into_iter().map(|w| w as u32).collect();
            (
                alg,
                DType::from_name(h[2]).unwrap(),
                shape,
                u32s(f[1]),
                u32s(f[2]),
                words(f.get(3).copied().unwrap_or("")),
            )
        })
        .collect()
}

fn u64s(x: &Array) -> Vec<u64> {
    lax::convert_element_type(x, DType::U64, false)
        .unwrap()
        .to_vec::<u64>()
}

#[test]
fn vmap_over_keys_matches_jax() {
    let cases = lines("vmap");
    assert_eq!(cases.len(), 9);
    for (alg, dtype, shape, keys, new_keys, bits) in cases {
        let n = keys.len() / 4;
        let keys = Array::from_vec(keys, &[n, 4]);
        let sh = shape.clone();
        let f = move |k: Array| -> Vec<Array> {
            let (nk, b) = ok(lax::rng_bit_generator(&k, &sh, dtype, alg));
            vec![nk, b]
        };
        let eager = vmap(f.clone()).call(keys.clone()).unwrap();
        let g = f.clone();
        let jitted = jit(move |k: Array| ok(vmap(g.clone()).call(k)))
            .call(keys.clone())
            .unwrap();
        let last = vmap(f)
            .in_axes(Axes::Leaves(vec![Some(1)]))
            .call(keys.transpose(&[1, 0]))
            .unwrap();
        for (label, got) in [
            ("vmap", &eager),
            ("jit(vmap)", &jitted),
            ("vmap axis 1", &last),
        ] {
            let what = format!("{label} {} {dtype} {shape:?}", alg.name());
            assert_eq!(got[0].to_vec::<u32>(), new_keys, "{what}: new keys");
            assert_eq!(got[1].dtype(), dtype, "{what}");
            let mut want_shape = vec![n];
            want_shape.extend(&shape);
            assert_eq!(got[1].shape(), want_shape, "{what}");
            assert_eq!(u64s(&got[1]), bits, "{what}: bits");
        }
    }
}

/// With the key shared, every batch member is the unbatched call: vmap
/// over `x` equals a loop of `f` on each row, stacked.
#[test]
fn vmap_with_a_shared_key_equals_a_loop() {
    for (alg, _, _, key, _, _) in lines("call").into_iter().step_by(7).take(6) {
        let key = Array::from_vec(key, &[4]);
        let k = key.clone();
        let f = move |x: Array| -> Vec<Array> {
            let (nk, b) = ok(lax::rng_bit_generator(&k, &[2, 3], DType::U16, alg));
            let b = ok(lax::convert_element_type(&b, DType::F32, false));
            vec![nk, &b * &x]
        };
        let xs: Vec<f32> = (0..4 * 6).map(|i| (i as f32 * 0.37).sin()).collect();
        let xs = Array::from_vec(xs, &[4, 2, 3]);
        let got = vmap(f.clone()).call(xs.clone()).unwrap();
        let g = f.clone();
        let jitted = jit(move |x: Array| ok(vmap(g.clone()).call(x)))
            .call(xs.clone())
            .unwrap();
        let per: Vec<Vec<Array>> = (0..4)
            .map(|i| {
                let row = lax::slice(&xs, &[i, 0, 0], &[i + 1, 2, 3], None).unwrap();
                let row = lax::squeeze(&row, &[0]).unwrap();
                catch(|| f(row)).unwrap()
            })
            .collect();
        for j in 0..2 {
            let col: Vec<Array> = per.iter().map(|o| o[j].clone()).collect();
            let want = jnp::stack(&col, 0).unwrap();
            for g in [&got[j], &jitted[j]] {
                assert_eq!(g.shape(), want.shape(), "{}", alg.name());
                let (a, b) = (
                    lax::convert_element_type(g, DType::F64, false)
                        .unwrap()
                        .to_vec::<f64>(),
                    lax::convert_element_type(&want, DType::F64, false)
                        .unwrap()
                        .to_vec::<f64>(),
                );
                assert_eq!(a, b, "{} output {j}", alg.name());
            }
        }
    }
}

/// The bits carry no tangent: d/dx sum(x * bits) is the bits, as floats.
#[test]
fn grad_treats_the_bits_as_constants() {
    let (alg, dtype, shape, key, _, bits) = lines("call")
        .into_iter()
        .find(|(a, d, s, ..)| *a == RandomAlgorithm::ThreeFry && *d == DType::U8 && s == &[3, 5])
        .unwrap();
    let k = Array::from_vec(key, &[4]);
    let sh = shape.clone();
    let f = move |x: Array| -> Array {
        let (_, b) = ok(lax::rng_bit_generator(&k, &sh, dtype, alg));
        let b = ok(lax::convert_element_type(&b, DType::F64, false));
        ok(lax::reduce(ReduceOp::Sum, &(&b * &x), &[0, 1]))
    };
    let x: Vec<f64> = (0..15).map(|i| (i as f64 * 0.61).cos()).collect();
    let x = Array::from_vec(x, &shape);
    let g = grad(f)(x).unwrap().to_vec::<f64>();
    let want: Vec<f64> = bits.iter().map(|&b| b as f64).collect();
    assert_eq!(g, want);
}

#[test]
fn make_jaxpr_stages_one_equation() {
    let f = |k: Array| {
        let (nk, b) = ok(lax::rng_bit_generator(
            &k,
            &[2, 3],
            DType::U8,
            RandomAlgorithm::Philox,
        ));
        vec![nk, b]
    };
    let j = make_jaxpr(f)(Array::from_vec(vec![1u32, 2, 3, 4], &[4])).unwrap();
    assert_eq!(
        j.to_string(),
        "{ lambda ; a:u32[4]. let
    b:u32[4] c:u8[2,3] = rng_bit_generator[
      algorithm=RNG_PHILOX
      dtype=uint8
      out_sharding=None
      shape=(2, 3)
    ] a
  in (b, c) }"
    );
}

#[test]
fn bad_dtype_and_key_are_errors() {
    let k = Array::from_vec(vec![1u32, 2, 3, 4], &[4]);
    let e = lax::rng_bit_generator(&k, &[2], DType::I32, RandomAlgorithm::Default)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rng_bit_generator") && e.contains("int32"),
        "{e}"
    );
    let k3 = Array::from_vec(vec![1u32, 2, 3], &[3]);
    let e = lax::rng_bit_generator(&k3, &[2], DType::U32, RandomAlgorithm::Default)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rng_bit_generator") && e.contains("u32[4] or u64[2]"),
        "{e}"
    );
    let e = jit(|k: Array| {
        ok(lax::rng_bit_generator(
            &k,
            &[2],
            DType::U32,
            RandomAlgorithm::ThreeFry,
        ))
        .1
    })
    .call(Array::from_vec(vec![1.0f32, 2.0], &[2]))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("u32[4] or u64[2]") && e.contains("f32[2]"),
        "{e}"
    );
}
