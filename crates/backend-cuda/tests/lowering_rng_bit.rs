//! `rng_bit_generator` on `cuda-sim` (`lower/rng_bit.rs`), bit for bit:
//! against JAX 0.10.2's recorded outputs (`tests/data/rng-bit-generator-
//! jax.txt`, every unbatched line: three algorithms, four bit widths,
//! `u32[4]` and `u64[2]` keys, scalar, empty and odd shapes), and against
//! the interpreter on random keys and random shapes.

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::{check_with, parse, random, run_lowered, Dist, Rng, Tol};

fn text(alg: &str, dt: &str, shape: &[usize], key: &str) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = match shape {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let long = match dt {
        "u8" => "uint8",
        "u16" => "uint16",
        "u32" => "uint32",
        _ => "uint64",
    };
    format!(
        "{{ lambda ; a:{key}. let
    b:{key} c:{dt}[{}] = rng_bit_generator[
      algorithm={alg}
      dtype={long}
      out_sharding=None
      shape={tuple}
    ] a
  in (b, c) }}",
        dims.join(",")
    )
}

fn short(long: &str) -> &'static str {
    match long {
        "uint8" => "u8",
        "uint16" => "u16",
        "uint32" => "u32",
        _ => "u64",
    }
}

fn words(s: &str) -> Vec<f64> {
    s.split_whitespace()
        .map(|w| w.parse::<u64>().expect("a word") as f64)
        .collect()
}

fn array(dt: DType, shape: &[usize], s: &str) -> HostArray {
    let v: Vec<u64> = s
        .split_whitespace()
        .map(|w| w.parse().expect("a word"))
        .collect();
    match dt {
        // Exact for u64 words above 2^53: build from bytes.
        DType::U64 => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            HostArray::from_le_bytes(dt, shape, &bytes).expect("u64 array")
        }
        _ => HostArray::from_f64(dt, shape, &words(s)).expect("array"),
    }
}

#[test]
fn matches_jax_bit_for_bit() {
    let data = include_str!("../../../tests/data/rng-bit-generator-jax.txt");
    let mut n = 0;
    for line in data.lines().filter(|l| l.starts_with("call ")) {
        let parts: Vec<&str> = line.split('|').collect();
        let head: Vec<&str> = parts[0].split_whitespace().collect();
        let (alg, dt, shape, kt) = (head[1], short(head[2]), head[3], short(head[4]));
        let shape: Vec<usize> = if shape == "-" {
            Vec::new()
        } else {
            shape.split('x').map(|d| d.parse().expect("dim")).collect()
        };
        let (kdt, kshape) = if kt == "u64" {
            (DType::U64, vec![2])
        } else {
            (DType::U32, vec![4])
        };
        let key_ty = format!("{kt}[{}]", kshape[0]);
        let t = text(alg, dt, &shape, &key_ty);
        let key = array(kdt, &kshape, parts[1]);
        let want_key = array(kdt, &kshape, parts[2]);
        let bdt = DType::from_name(dt).expect("dtype");
        let want_bits = array(bdt, &shape, parts[3]);
        let got = run_lowered(&parse(&t), &[key]).unwrap_or_else(|e| panic!("{e}\n{line}"));
        assert_eq!(
            got[0].to_le_bytes(),
            want_key.to_le_bytes(),
            "new key of {line}"
        );
        assert_eq!(got[1].shape(), want_bits.shape(), "{line}");
        assert_eq!(
            got[1].to_le_bytes(),
            want_bits.to_le_bytes(),
            "bits of {line}"
        );
        n += 1;
    }
    assert!(n >= 140, "only {n} lines checked");
}

#[test]
fn matches_the_interpreter_on_random_keys_and_shapes() {
    let mut rng = Rng::new(701);
    for alg in ["RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"] {
        for dt in ["u8", "u16", "u32", "u64"] {
            for _ in 0..4 {
                let rank = rng.range(0, 3) as usize;
                let shape = rng.shape(rank, 9);
                let (key_ty, kdt, kn) = if rng.range(0, 1) == 0 {
                    ("u32[4]", DType::U32, 4)
                } else {
                    ("u64[2]", DType::U64, 2)
                };
                let t = text(alg, dt, &shape, key_ty);
                let mut key = random(&mut rng, kdt, &[kn], Dist::Uniform(4e9));
                if kdt == DType::U64 {
                    // Full 64-bit words, the counter near its wrap.
                    let w = [rng.next(), u64::MAX - rng.range(0, 3) as u64];
                    let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
                    key = HostArray::from_le_bytes(kdt, &[2], &bytes).expect("key");
                }
                check_with(&t, &[key], Tol::Exact);
            }
        }
    }
}
