//! `random` against JAX 0.10.2: values recorded from the installed JAX
//! (default config: x32, threefry2x32, partitionable threefry). Keys, bits,
//! `uniform` on `[0, 1)`, and the integer/bool samplers compare bit for
//! bit. Float results differ where XLA's CPU code does: it contracts
//! `a * b + c` into an FMA (`uniform` with a general range: checked against
//! f32 math on JAX's exact bits and within one product ulp of JAX), and its
//! `erf_inv`/`log` are polynomials a few ulp off the interpreter's
//! correctly rounded ones (`normal`, `gumbel`: a few ulp).

use jaxon_ir::DType;
use jaxon_trace::random as jr;
use jaxon_trace::Array;

fn u32s(a: &Array) -> Vec<u32> {
    a.to_vec::<u32>()
}

fn f32_bits(a: &Array) -> Vec<u32> {
    a.to_vec::<f32>().iter().map(|x| x.to_bits()).collect()
}

/// Distance in ulps between two same-sign finite f32s given as bits.
fn ulps(a: u32, b: u32) -> u32 {
    let key = |x: u32| {
        if x >> 31 == 1 {
            -((x & 0x7FFF_FFFF) as i64)
        } else {
            x as i64
        }
    };
    (key(a) - key(b)).unsigned_abs() as u32
}

#[test]
fn key_wraps_seed_to_32_bits_like_jax_x32() {
    // jax.random.key_data(jax.random.key(s))
    let cases: [(u64, [u32; 2]); 5] = [
        (0, [0, 0]),
        (42, [0, 42]),
        ((-1i64) as u64, [0, 4294967295]),
        ((1u64 << 40) + 7, [0, 7]),
        (123456789, [0, 123456789]),
    ];
    for (seed, want) in cases {
        assert_eq!(u32s(&jr::key(seed)), want, "seed {seed}");
    }
}

#[test]
fn split_matches_jax_bits() {
    // jax.random.key_data(jax.random.split(jax.random.key(0)))
    let s = jr::split(&jr::key(0), 2).unwrap();
    assert_eq!(s.shape(), vec![2, 2]);
    assert_eq!(u32s(&s), [1797259609, 2579123966, 928981903, 3453687069]);
    // split(key(42), 3)
    let s = jr::split(&jr::key(42), 3).unwrap();
    assert_eq!(
        u32s(&s),
        [1832780943, 270669613, 64467757, 2916123636, 2465931498, 255383827]
    );
    // split(key(7), (2, 3))
    let s = jr::split_shape(&jr::key(7), &[2, 3]).unwrap();
    assert_eq!(s.shape(), vec![2, 3, 2]);
    assert_eq!(
        u32s(&s),
        [
            3625411723, 1954958720, 195045567, 4062205631, 966301609, 1948237315, 276534068,
            1641862660, 51277378, 3088387524, 3583082021, 1947592014
        ]
    );
    let k = jr::key_at(&s, &[1, 2]).unwrap();
    assert_eq!(u32s(&k), [3583082021, 1947592014]);
}

#[test]
fn fold_in_matches_jax_bits() {
    let k = jr::fold_in(&jr::key(42), 7).unwrap();
    assert_eq!(u32s(&k), [2547012911, 1371500959]);
    let k = jr::fold_in(&jr::key(0), 0xdeadbeef).unwrap();
    assert_eq!(u32s(&k), [3503448033, 2196607573]);
    // Integer data of another dtype wraps to u32 first.
    let k = jr::fold_in_array(&jr::key(0), &Array::scalar(0xdeadbeef_u32 as i32)).unwrap();
    assert_eq!(u32s(&k), [3503448033, 2196607573]);
}

#[test]
fn bits_match_jax_for_each_width_and_shape() {
    let b = jr::bits(&jr::key(42), &[7]).unwrap();
    assert_eq!(
        u32s(&b),
        [2098992034, 2919706841, 2646866425, 2409546199, 1935504149, 2516274904, 321304473]
    );
    let b = jr::bits(&jr::key(3), &[2, 3]).unwrap();
    assert_eq!(
        u32s(&b),
        [318053758, 4029299397, 2787249374, 4190260272, 1195623854, 2503700069]
    );
    let b = jr::bits(&jr::key(3), &[]).unwrap();
    assert_eq!(b.shape(), Vec::<usize>::new());
    assert_eq!(u32s(&b), [318053758]);
    let b = jr::bits_of(&jr::key(3), &[5], DType::U8).unwrap();
    assert_eq!(b.to_vec::<u8>(), [126, 197, 222, 48, 174]);
    let b = jr::bits_of(&jr::key(3), &[5], DType::U16).unwrap();
    assert_eq!(b.to_vec::<u16>(), [7550, 15045, 3294, 19504, 50606]);
    // 64-bit words are (first word << 32) | second word of each block.
    let b = jr::bits_of(&jr::key(3), &[2], DType::U64).unwrap();
    let (k0, k1) = (Array::scalar(0u32), Array::scalar(3u32));
    let (hi, lo) = jr::iota_2x32(&[2]).unwrap();
    let (w0, w1) = jr::threefry2x32(&k0, &k1, &hi, &lo).unwrap();
    let want: Vec<u64> = u32s(&w0)
        .iter()
        .zip(u32s(&w1))
        .map(|(&a, b)| ((a as u64) << 32) | b as u64)
        .collect();
    assert_eq!(b.to_vec::<u64>(), want);
}

#[test]
fn threefry_matches_the_published_known_answer() {
    // Salmon et al.'s Random123 known-answer vectors for Threefry-2x32-20.
    let k = |a: u32| Array::from_vec(vec![a], &[1]);
    let scalar = |a: u32| Array::scalar(a);
    let (a, b) = jr::threefry2x32(&scalar(0), &scalar(0), &k(0), &k(0)).unwrap();
    assert_eq!((u32s(&a)[0], u32s(&b)[0]), (0x6b200159, 0x99ba4efe));
    let m = 0xffffffff;
    let (a, b) = jr::threefry2x32(&scalar(m), &scalar(m), &k(m), &k(m)).unwrap();
    assert_eq!((u32s(&a)[0], u32s(&b)[0]), (0x1cb996fc, 0xbb002be7));
    let (a, b) = jr::threefry2x32(
        &scalar(0x13198a2e),
        &scalar(0x03707344),
        &k(0x243f6a88),
        &k(0x85a308d3),
    )
    .unwrap();
    assert_eq!((u32s(&a)[0], u32s(&b)[0]), (0xc4923a9c, 0x483df7a0));
}

#[test]
fn uniform_is_bit_exact() {
    let (zero, one) = (Array::weak(0.0), Array::weak(1.0));
    let u = jr::uniform(&jr::key(42), &[5], DType::F32, &zero, &one).unwrap();
    assert_eq!(
        f32_bits(&u),
        [1056585764, 1059981104, 1058915320, 1057988288, 1055308516]
    );
    let u = jr::uniform(
        &jr::key(1),
        &[2, 3],
        DType::F32,
        &Array::weak(-2.0),
        &Array::weak(3.0),
    )
    .unwrap()
    .to_vec::<f32>();
    // jax.random.bits(key(1), (2, 3)), bit-exact as tested above.
    let bits = [
        1883912375u32,
        2292451390,
        1915204986,
        1882898417,
        3854144420,
        2400655036,
    ];
    let want_jax = [
        1044761696u32,
        1059796008,
        1047206416,
        1044682456,
        1075783670,
        1061909358,
    ];
    assert_eq!(u32s(&jr::bits(&jr::key(1), &[2, 3]).unwrap()), bits);
    for ((&got, &b), &jax) in u.iter().zip(&bits).zip(&want_jax) {
        let f = f32::from_bits((b >> 9) | 0x3F80_0000) - 1.0;
        assert_eq!(got.to_bits(), (-2.0f32).max(f * 5.0 + -2.0).to_bits());
        assert!((got - f32::from_bits(jax)).abs() <= 5.0 * f32::EPSILON);
    }
    let u = jr::uniform(&jr::key(1), &[4], DType::F16, &zero, &one).unwrap();
    let bits: Vec<u16> = u
        .to_vec::<half::f16>()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert_eq!(bits, [13072, 10240, 14762, 14846]);
    let u = jr::uniform(&jr::key(1), &[4], DType::BF16, &zero, &one).unwrap();
    let bits: Vec<u16> = u
        .to_vec::<half::bf16>()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert_eq!(bits, [16182, 15992, 16116, 16240]);
}

#[test]
fn normal_is_within_eight_ulp_of_jax() {
    let n = jr::normal(&jr::key(42), &[6], DType::F32).unwrap();
    let want = [
        3169312533u32,
        1055861736,
        1050109537,
        1042103076,
        3187541227,
        1046356250,
    ];
    for (got, want) in f32_bits(&n).into_iter().zip(want) {
        assert!(ulps(got, want) <= 8, "{got:#x} vs {want:#x}");
    }
}

#[test]
fn gumbel_is_within_eight_ulp_of_jax() {
    let g = jr::gumbel(&jr::key(1), &[4], DType::F32).unwrap();
    let want = [1044782435u32, 1055806918, 1046137553, 1044738591];
    for (got, want) in f32_bits(&g).into_iter().zip(want) {
        assert!(ulps(got, want) <= 8, "{got:#x} vs {want:#x}");
    }
}

/// JAX 0.10.2's values (the api2 corpus case
/// `exponential_gumbel_laplace_logistic`, seed 1529017419, f32[4]).
#[test]
fn exponential_laplace_logistic_are_within_eight_ulp_of_jax() {
    let k = jr::key(1529017419);
    // JAX's f32 values, printed as the shortest f64 repr.
    let cases: [(&str, Array, [f64; 4]); 4] = [
        (
            "exponential",
            jr::exponential(&k, &[4], DType::F32).unwrap(),
            [
                4.835324764251709,
                1.6205233335494995,
                0.0753384381532669,
                0.7731540203094482,
            ],
        ),
        (
            "gumbel",
            jr::gumbel(&k, &[4], DType::F32).unwrap(),
            [
                4.831339359283447,
                1.5123507976531982,
                -0.9643939733505249,
                0.4795370399951935,
            ],
        ),
        (
            "laplace",
            jr::laplace(&k, &[4], DType::F32).unwrap(),
            [
                -4.142181396484375,
                -0.9273763298988342,
                1.930050015449524,
                -0.0800069272518158,
            ],
        ),
        (
            "logistic",
            jr::logistic(&k, &[4], DType::F32).unwrap(),
            [
                4.827348709106445,
                1.4001320600509644,
                -2.5478591918945312,
                0.15408408641815186,
            ],
        ),
    ];
    for (name, got, want) in cases {
        for (g, w) in f32_bits(&got).into_iter().zip(want) {
            let w = (w as f32).to_bits();
            assert!(ulps(g, w) <= 8, "{name}: {g:#x} vs {w:#x}");
        }
    }
}

#[test]
fn bernoulli_matches_jax() {
    let b = jr::bernoulli(&jr::key(5), &Array::weak(0.3), Some(&[10])).unwrap();
    let got: Vec<u8> = b.to_vec::<bool>().iter().map(|&x| x as u8).collect();
    assert_eq!(got, [0, 0, 0, 1, 0, 0, 1, 1, 1, 0]);
    let p = Array::from_vec(vec![0.1f32, 0.5, 0.9, 0.7], &[4]);
    let b = jr::bernoulli(&jr::key(5), &p, None).unwrap();
    assert_eq!(b.to_vec::<bool>(), [false, false, true, true]);
}

#[test]
fn categorical_matches_jax() {
    let lg = Array::from_vec(
        vec![
            0.1f32, 1.0, -0.5, 2.0, 1.5, 0.2, 0.3, -1.0, 0.0, 0.0, 0.0, 0.0,
        ],
        &[3, 4],
    );
    let c = jr::categorical(&jr::key(9), &lg, -1).unwrap();
    assert_eq!(c.to_vec::<i32>(), [1, 1, 2]);
    let c = jr::categorical(&jr::key(9), &lg, 0).unwrap();
    assert_eq!(c.to_vec::<i32>(), [1, 0, 2, 0]);
}

#[test]
fn permutation_matches_jax() {
    let p = jr::permutation(&jr::key(0), 10usize).unwrap();
    assert_eq!(p.to_vec::<i32>(), [0, 1, 8, 5, 6, 4, 3, 2, 7, 9]);
    let x = Array::from_vec((0..6).map(|i| i as f32 * 1.5).collect(), &[6]);
    let p = jr::permutation(&jr::key(1), &x).unwrap();
    assert_eq!(p.to_vec::<f32>(), [4.5, 3.0, 0.0, 1.5, 7.5, 6.0]);
    // Whole rows move together.
    let x = Array::from_vec((0..12).collect::<Vec<i32>>(), &[4, 3]);
    let p = jr::permutation(&jr::key(2), &x).unwrap();
    assert_eq!(p.to_vec::<i32>(), [6, 7, 8, 3, 4, 5, 9, 10, 11, 0, 1, 2]);
    let x = Array::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4]);
    let p = jr::permutation_along(&jr::key(2), &x, 1, false).unwrap();
    assert_eq!(p.to_vec::<i32>(), [2, 1, 3, 0, 6, 5, 7, 4, 10, 9, 11, 8]);
}

#[test]
fn permutation_of_2000_takes_two_sort_rounds_like_jax() {
    let p = jr::permutation(&jr::key(4), 2000usize)
        .unwrap()
        .to_vec::<i32>();
    assert_eq!(
        &p[..10],
        [265, 883, 779, 1530, 1755, 1686, 1702, 196, 1575, 525]
    );
    let mut sorted = p.clone();
    sorted.sort();
    assert_eq!(sorted, (0..2000).collect::<Vec<i32>>());
}

#[test]
fn randint_matches_jax() {
    let r = jr::randint(
        &jr::key(3),
        &[8],
        &Array::weak(0),
        &Array::weak(10),
        DType::I32,
    );
    assert_eq!(r.unwrap().to_vec::<i32>(), [5, 9, 5, 4, 6, 2, 3, 4]);
    let r = jr::randint(
        &jr::key(3),
        &[6],
        &Array::weak(-5),
        &Array::weak(100000),
        DType::I32,
    );
    assert_eq!(
        r.unwrap().to_vec::<i32>(),
        [40698, 35524, 69342, 84366, 26308, 7327]
    );
    let r = jr::randint(
        &jr::key(8),
        &[4],
        &Array::scalar(i32::MIN),
        &Array::scalar(i32::MAX),
        DType::I32,
    );
    assert_eq!(
        r.unwrap().to_vec::<i32>(),
        [2077877175, 441190977, 689159731, -964964043]
    );
}

#[test]
fn randint_narrow_dtypes_and_empty_range_match_jax() {
    let r = jr::randint(
        &jr::key(5),
        &[6],
        &Array::weak(0),
        &Array::weak(256),
        DType::U8,
    );
    assert_eq!(r.unwrap().to_vec::<u8>(), [1, 64, 247, 8, 60, 53]);
    let r = jr::randint(
        &jr::key(5),
        &[6],
        &Array::weak(-100),
        &Array::weak(100),
        DType::I8,
    );
    assert_eq!(r.unwrap().to_vec::<i8>(), [61, -52, 3, 36, -16, 1]);
    let r = jr::randint(
        &jr::key(6),
        &[5],
        &Array::weak(3),
        &Array::weak(3),
        DType::I32,
    );
    assert_eq!(r.unwrap().to_vec::<i32>(), [3; 5]);
}

#[test]
fn independent_permutation_matches_jax() {
    let x = Array::from_vec((0..12).map(|i| i as f32).collect(), &[4, 3]);
    let p = jr::permutation_along(&jr::key(2), &x, 1, true).unwrap();
    assert_eq!(
        p.to_vec::<f32>(),
        [2.0, 1.0, 0.0, 4.0, 3.0, 5.0, 7.0, 6.0, 8.0, 10.0, 9.0, 11.0]
    );
}

#[test]
fn categorical_with_sample_shape_matches_jax() {
    // categorical(key(11), log([0.2, 0.3, 0.5]), shape=(20,))
    let p = Array::from_vec(vec![0.2f32, 0.3, 0.5], &[3]);
    let lg = jaxon_trace::numpy::log(&p).unwrap();
    let c = jr::categorical_shape(&jr::key(11), &lg, -1, Some(&[20])).unwrap();
    assert_eq!(
        c.to_vec::<i32>(),
        [2, 1, 1, 0, 1, 1, 1, 1, 2, 2, 1, 0, 2, 2, 2, 2, 2, 2, 2, 2]
    );
}

/// Typed keys give the raw-key functions' bits: seed, split, fold_in and
/// bits through `random_seed`/`random_split`/`random_fold_in`/`random_bits`.
#[test]
fn typed_keys_match_raw_keys() {
    for seed in [0u64, 42, 1_236_864_836] {
        let tk = jr::typed_key(seed).unwrap();
        let rk = jr::key(seed);
        assert_eq!(u32s(&jr::key_data(&tk).unwrap()), u32s(&rk));
        let ts = jr::split_typed(&tk, &[3]).unwrap();
        assert_eq!(
            u32s(&jr::key_data(&ts).unwrap()),
            u32s(&jr::split(&rk, 3).unwrap())
        );
        let tf = jr::fold_in_typed(&tk, &Array::scalar(7i32)).unwrap();
        assert_eq!(
            u32s(&jr::key_data(&tf).unwrap()),
            u32s(&jr::fold_in(&rk, 7).unwrap())
        );
        let tb = jr::bits_typed(&tk, 32, &[2, 3]).unwrap();
        assert_eq!(u32s(&tb), u32s(&jr::bits(&rk, &[2, 3]).unwrap()));
        let w = jr::wrap_key_data(&rk).unwrap();
        assert_eq!(u32s(&jr::key_data(&w).unwrap()), u32s(&rk));
    }
}
