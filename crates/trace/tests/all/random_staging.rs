//! `random` under tracing: every sampler stages with a traced key under
//! `make_jaxpr`, and `jit(..).call` gives exactly the eager values (same
//! interpreter ops), with one trace reused across different keys.

use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::random as jr;
use jaxon_trace::{jit, make_jaxpr, Array};

type Sampler = fn(Array) -> Array;

fn samplers() -> Vec<(&'static str, Sampler)> {
    vec![
        ("split", |k| ok_or_raise(jr::split(&k, 3))),
        ("split_shape", |k| ok_or_raise(jr::split_shape(&k, &[2, 2]))),
        ("fold_in", |k| ok_or_raise(jr::fold_in(&k, 12345))),
        ("bits", |k| ok_or_raise(jr::bits(&k, &[3, 5]))),
        ("bits64", |k| ok_or_raise(jr::bits_of(&k, &[4], DType::U64))),
        ("uniform", |k| {
            ok_or_raise(jr::uniform(
                &k,
                &[7],
                DType::F32,
                &Array::weak(-1.5),
                &Array::weak(2.0),
            ))
        }),
        ("normal", |k| {
            ok_or_raise(jr::normal(&k, &[2, 4], DType::F32))
        }),
        ("bernoulli", |k| {
            ok_or_raise(jr::bernoulli(&k, &Array::weak(0.4), Some(&[9])))
        }),
        ("categorical", |k| {
            let logits = Array::from_vec(vec![0.3f32, -1.0, 2.0, 0.5, 0.1, 0.7], &[2, 3]);
            ok_or_raise(jr::categorical(&k, &logits, 1))
        }),
        ("permutation", |k| ok_or_raise(jr::permutation(&k, 11usize))),
        ("permutation_2d", |k| {
            let x = Array::from_vec((0..12).map(|i| i as f32).collect(), &[4, 3]);
            ok_or_raise(jr::permutation_along(&k, &x, 1, true))
        }),
        ("randint", |k| {
            ok_or_raise(jr::randint(
                &k,
                &[6],
                &Array::weak(-3),
                &Array::weak(17),
                DType::I32,
            ))
        }),
        ("randint_u8", |k| {
            ok_or_raise(jr::randint(
                &k,
                &[6],
                &Array::weak(0),
                &Array::weak(256),
                DType::U8,
            ))
        }),
    ]
}

fn host_bits(a: &Array) -> Vec<u64> {
    let h = a.try_to_host("test").unwrap();
    (0..h.len())
        .map(|i| h.data().get_f64(i).to_bits())
        .collect()
}

#[test]
fn jitted_samplers_equal_eager_ones() {
    for (name, f) in samplers() {
        let jf = jit(f);
        for seed in [3u64, 1_000_003] {
            let eager = f(jr::key(seed));
            let staged = jf.call(jr::key(seed)).unwrap();
            assert_eq!(eager.aval(), staged.aval(), "{name}");
            assert_eq!(host_bits(&eager), host_bits(&staged), "{name} seed {seed}");
        }
        // Different keys share one trace and give different draws.
        assert_eq!(jf.trace_count(), 1, "{name}");
        let a = jf.call(jr::key(3)).unwrap();
        let b = jf.call(jr::key(4)).unwrap();
        assert_ne!(host_bits(&a), host_bits(&b), "{name}");
    }
}

#[test]
fn samplers_stage_with_a_traced_key() {
    for (name, f) in samplers() {
        let j = make_jaxpr(f)(jr::key(0)).unwrap();
        let text = jaxon_ir::print::print_jaxpr(&j.jaxpr);
        assert!(text.starts_with("{ lambda "), "{name}: {text}");
        assert!(text.contains(":u32[2]. let"), "{name}: {text}");
        // The cipher's rotations are staged, not constant-folded away.
        assert!(text.contains("shift_right_logical"), "{name}: {text}");
    }
}

#[test]
fn split_then_sample_jitted_matches_jax() {
    // k1, k2 = jax.random.split(jax.random.key(0)); the second key's
    // jax.random.bits(k2, (3,)) — values from JAX 0.10.2.
    let f = jit(|k: Array| {
        let (_, k2) = ok_or_raise(jr::split2(&k));
        ok_or_raise(jr::bits(&k2, &[3]))
    });
    let got = f.call(jr::key(0)).unwrap().to_vec::<u32>();
    let want = jr::bits(&Array::from_vec(vec![928981903u32, 3453687069], &[2]), &[3]).unwrap();
    assert_eq!(got, want.to_vec::<u32>());
    assert_eq!(got, GOLDEN_SPLIT_BITS);
}

const GOLDEN_SPLIT_BITS: [u32; 3] = [31327077, 89727312, 2497208264];

#[test]
fn fold_in_with_traced_data_matches_eager() {
    // fold_in(key(42), 7) from JAX 0.10.2, with the data a jit argument.
    let f = jit(|(k, d): (Array, Array)| ok_or_raise(jr::fold_in_array(&k, &d)));
    let got = f.call((jr::key(42), Array::scalar(7i32))).unwrap();
    assert_eq!(got.to_vec::<u32>(), [2547012911, 1371500959]);
    let got = f.call((jr::key(42), Array::scalar(8i32))).unwrap();
    assert_eq!(
        got.to_vec::<u32>(),
        jr::fold_in(&jr::key(42), 8).unwrap().to_vec::<u32>()
    );
    assert_eq!(f.trace_count(), 1);
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let not_a_key = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    let e = jr::split(&not_a_key, 2).unwrap_err().to_string();
    assert!(e.contains("split") && e.contains("f32[2]"), "{e}");
    let keys = jr::split(&jr::key(1), 2).unwrap();
    let e = jr::uniform(
        &keys,
        &[2],
        DType::F32,
        &Array::weak(0.0),
        &Array::weak(1.0),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("u32[2,2]"), "{e}");
    let e = jr::uniform(
        &jr::key(1),
        &[2],
        DType::I32,
        &Array::weak(0.0),
        &Array::weak(1.0),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("uniform") && e.contains("i32"), "{e}");
    let e = jr::bernoulli(&jr::key(1), &Array::weak(1), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bernoulli"), "{e}");
    let e = jr::key_at(&keys, &[2]).unwrap_err().to_string();
    assert!(e.contains("key_at"), "{e}");
    let e = jr::permutation(&jr::key(1), Array::scalar(3i32))
        .unwrap_err()
        .to_string();
    assert!(e.contains("permutation"), "{e}");
}
