//! Differential tests of the random family (`lower/random.rs`) on
//! `cuda-sim` against the interpreter, bit for bit: `random_seed` from
//! every integer width (negative and 64-bit seeds included),
//! `random_wrap`/`random_unwrap`, `random_bits` at 8, 16, 32 and 64 bits,
//! `random_split`, `random_fold_in` and `threefry2x32` with broadcasting,
//! `random_gamma` (within ulps: its normal draws go through `erf_inv`), on
//! random keys and shapes; keys as program inputs and results, and moved
//! by the data-movement primitives.

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::{check_with, random, tuple, ty, Dist, Rng, Tol};

fn keys(rng: &mut Rng, shape: &[usize]) -> HostArray {
    let mut s = shape.to_vec();
    s.push(2);
    let words = random(rng, DType::U32, &s, Dist::Uniform(4e9));
    let n: usize = shape.iter().product();
    let bytes = words.to_le_bytes();
    assert_eq!(bytes.len(), n * 8);
    HostArray::from_le_bytes(DType::KeyFry, shape, &bytes).expect("keys")
}

fn kty(shape: &[usize]) -> String {
    ty("key<fry>", shape)
}

#[test]
fn seeds_of_every_integer_width_wrap_and_unwrap() {
    let mut rng = Rng::new(390);
    for (dt, r) in [
        ("i32", 2e9),
        ("u32", 4e9),
        ("i64", 4e18),
        ("u64", 4e18),
        ("i8", 120.0),
        ("u16", 6e4),
        ("bool", 1.0),
    ] {
        let rank = rng.range(0, 2) as usize;
        let shape = rng.shape(rank, 50);
        let (t, k, w) = (ty(dt, &shape), kty(&shape), {
            let mut s = shape.clone();
            s.push(2);
            ty("u32", &s)
        });
        let text = format!(
            "{{ lambda ; a:{t}. let
    b:{k} = random_seed[impl=fry] a
    c:{w} = random_unwrap b
    d:{k} = random_wrap[impl=fry] c
  in (b, c, d) }}"
        );
        let d = DType::from_name(dt).expect("dtype");
        let a = random(&mut rng, d, &shape, Dist::Uniform(r));
        check_with(&text, &[a], Tol::Exact);
    }
    // A literal seed.
    check_with(
        "{ lambda ; . let a:key<fry>[] = random_seed[impl=fry] -7:i32[] b:u32[3] = random_bits[bit_width=32 shape=(3,)] a in (a, b) }",
        &[],
        Tol::Exact,
    );
}

#[test]
fn bits_and_split_over_key_arrays() {
    let mut rng = Rng::new(391);
    for width in [8u32, 16, 32, 64] {
        for trial in 0..3 {
            let kshape = rng.shape(trial, 6);
            let rank = rng.range(0, 2) as usize;
            let shape = rng.shape(rank, 40);
            let mut out = kshape.clone();
            out.extend_from_slice(&shape);
            let text = format!(
                "{{ lambda ; k:{}. let b:{} = random_bits[bit_width={width} shape={}] k in (b,) }}",
                kty(&kshape),
                ty(&format!("u{width}"), &out),
                tuple(&shape)
            );
            check_with(&text, &[keys(&mut rng, &kshape)], Tol::Exact);
        }
    }
    for trial in 0..4 {
        let kshape = rng.shape(trial.min(2), 6);
        let rank = rng.range(0, 2) as usize;
        let shape = rng.shape(rank, 9);
        let mut out = kshape.clone();
        out.extend_from_slice(&shape);
        let text = format!(
            "{{ lambda ; k:{}. let s:{} = random_split[shape={}] k b:{} = random_bits[bit_width=32 shape=(2,)] s in (s, b) }}",
            kty(&kshape),
            kty(&out),
            tuple(&shape),
            ty("u32", &[out.clone(), vec![2]].concat()),
        );
        check_with(&text, &[keys(&mut rng, &kshape)], Tol::Exact);
    }
}

#[test]
fn fold_in_and_threefry_broadcast() {
    let mut rng = Rng::new(392);
    for (ks, ms) in [
        (vec![], vec![]),
        (vec![], vec![5]),
        (vec![4], vec![]),
        (vec![3, 1], vec![3, 4]),
        (vec![1, 2], vec![3, 1]),
    ] {
        let out = if ks.len() >= ms.len() && !ks.is_empty() {
            ks.iter()
                .zip(ms.iter().chain(std::iter::repeat(&1)))
                .map(|(a, b)| *a.max(b))
                .collect::<Vec<_>>()
        } else {
            ms.iter()
                .zip(ks.iter().chain(std::iter::repeat(&1)))
                .map(|(a, b)| *a.max(b))
                .collect()
        };
        let text = format!(
            "{{ lambda ; k:{} m:{}. let f:{} = random_fold_in k m in (f,) }}",
            kty(&ks),
            ty("u32", &ms),
            kty(&out)
        );
        let m = random(&mut rng, DType::U32, &ms, Dist::Uniform(4e9));
        check_with(&text, &[keys(&mut rng, &ks), m], Tol::Exact);
        let text = format!(
            "{{ lambda ; a:{} b:{} c:{} d:{}. let e:{o} f:{o} = threefry2x32 a b c d in (e, f) }}",
            ty("u32", &ks),
            ty("u32", &ms),
            ty("u32", &ms),
            ty("u32", &ks),
            o = ty("u32", &out)
        );
        let args: Vec<HostArray> = [&ks, &ms, &ms, &ks]
            .iter()
            .map(|s| random(&mut rng, DType::U32, s, Dist::Uniform(4e9)))
            .collect();
        check_with(&text, &args, Tol::Exact);
    }
}

#[test]
fn uniform_floats_from_bits_as_jax_traces_them() {
    let text = "{ lambda ; q:i32[]. let
    r:key<fry>[] = random_seed[impl=fry] q
    h:u32[5] = random_bits[bit_width=32 shape=(5,)] r
    i:u32[5] = shift_right_logical h 9:u32[]
    j:u32[5] = or i 1065353216:u32[]
    k:f32[5] = bitcast_convert_type[new_dtype=float32] j
    l:f32[5] = sub k 1.0:f32[]
  in (l,) }";
    for seed in [0.0, 1.0, -5.0, 123456.0] {
        let q = HostArray::from_f64(DType::I32, &[], &[seed]).expect("seed");
        check_with(text, &[q], Tol::Exact);
    }
}

#[test]
fn gamma_samples_by_rejection() {
    let mut rng = Rng::new(395);
    for (dt, log_space) in [("f32", false), ("f64", false), ("f32", true), ("f64", true)] {
        for kshape in [vec![], vec![3]] {
            let ashape = [kshape.clone(), vec![7]].concat();
            let text = format!(
                "{{ lambda ; k:{} a:{t}. let g:{t} = random_gamma[log_space={}] k a in (g,) }}",
                kty(&kshape),
                if log_space { "True" } else { "False" },
                t = ty(dt, &ashape)
            );
            let d = DType::from_name(dt).expect("dtype");
            // Shapes below 1 (boosted) and above; tiny shapes give
            // underflowing samples.
            let mut a = random(&mut rng, d, &ashape, Dist::Between(0.05, 6.0)).to_f64_vec();
            a[0] = 1e-3;
            a[1] = 1.0;
            let a = HostArray::from_f64(d, &ashape, &a).expect("alpha");
            // The simulator's erf_inv is within a few f64 ulps of the
            // interpreter's; the sampler carries that into its result.
            // On a GPU (CUDA's erf_inv), a relative tolerance.
            let tol = match (dt, lowering_util::backend_name() == "cuda") {
                (_, true) => Tol::Rel(1e-5),
                ("f64", false) => Tol::Ulp(64),
                (_, false) => Tol::Ulp(4),
            };
            check_with(&text, &[keys(&mut rng, &kshape), a], tol);
        }
    }
}

#[test]
fn keys_move_as_word_pairs() {
    // `jax.random.split` unpacked as JAX traces it, and the other
    // data-movement primitives on key arrays.
    let text = "{ lambda ; a:key<fry>[] b:key<fry>[2,3]. let
    l:key<fry>[2] = random_split[shape=(2,)] a
    m:key<fry>[1] = slice[limit_indices=(1,) start_indices=(0,) strides=(1,)] l
    n:key<fry>[] = squeeze[dimensions=(0,)] m
    o:key<fry>[1] = slice[limit_indices=(2,) start_indices=(1,) strides=None] l
    p:key<fry>[] = squeeze[dimensions=(0,)] o
    q:u32[6] = random_bits[bit_width=32 shape=(6,)] n
    r:u32[6] = random_bits[bit_width=32 shape=(6,)] p
    c:key<fry>[3,2] = transpose[permutation=(1, 0)] b
    d:key<fry>[6] = reshape[dimensions=None new_sizes=(6,) sharding=None] c
    e:key<fry>[6] = rev[dimensions=(0,)] d
    f:key<fry>[4,6] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 6) sharding=None] e
    h:u32[4,6,2] = random_bits[bit_width=32 shape=(2,)] f
    i:u32[6,2] = random_unwrap e
  in (q, r, h, i, f) }";
    let mut rng = Rng::new(393);
    for _ in 0..3 {
        let args = [keys(&mut rng, &[]), keys(&mut rng, &[2, 3])];
        check_with(text, &args, Tol::Exact);
    }
}

#[test]
fn keys_outside_the_random_family_and_data_movement_are_unsupported() {
    let text = "{ lambda ; k:key<fry>[2] p:bool[2]. let s:key<fry>[2] = select_n p k k in (s,) }";
    let closed = lowering_util::parse(text);
    let mut rng = Rng::new(394);
    let p = random(&mut rng, DType::Bool, &[2], Dist::Uniform(1.0));
    match lowering_util::run_lowered(&closed, &[keys(&mut rng, &[2]), p]) {
        Err(jaxon_ir::IrError::Unsupported { primitive, .. }) => assert_eq!(primitive, "select_n"),
        other => panic!("expected Unsupported, got {:?}", other.map(|v| v.len())),
    }
}
