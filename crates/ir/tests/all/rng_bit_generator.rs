//! `rng_bit_generator` in the IR: JAX's jaxpr texts print back byte for
//! byte, the shape rule refuses bad keys and dtypes with errors naming
//! them, and the interpreter's bits and new keys equal JAX 0.10.2's on the
//! CPU bit for bit (`tests/data/rng-bit-generator-jax.txt`, written by
//! `tests/data/gen_rng_bit_generator.py`) for every algorithm, dtype and
//! the shapes XLA splits differently (odd, even, scalar, empty).

use jaxon_ir::interp::ops::eval_op;
use jaxon_ir::primitive::{RandomAlgorithm, RngBitGeneratorParams};
use jaxon_ir::{
    check_jaxpr, eval_closed_jaxpr, parse_jaxpr, ClosedJaxpr, DType, HostArray, IrError, Primitive,
    Storage,
};

/// One recorded case.
struct Case {
    vmap: bool,
    algorithm: RandomAlgorithm,
    dtype: DType,
    shape: Vec<usize>,
    key_dtype: DType,
    key: Vec<u64>,
    new_key: Vec<u64>,
    bits: Vec<u64>,
}

fn words(s: &str) -> Vec<u64> {
    s.split_whitespace().map(|w| w.parse().unwrap()).collect()
}

fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/rng-bit-generator-jax.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(" | ").collect();
            let h: Vec<&str> = f[0].split(' ').collect();
            Case {
                vmap: h[0] == "vmap",
                algorithm: RandomAlgorithm::ALL
                    .into_iter()
                    .find(|a| a.name() == h[1])
                    .unwrap(),
                dtype: DType::from_name(h[2]).unwrap(),
                shape: match h[3] {
                    "-" => vec![],
                    s => s.split('x').map(|d| d.parse().unwrap()).collect(),
                },
                key_dtype: DType::from_name(h[4]).unwrap(),
                key: words(f[1]),
                new_key: words(f[2]),
                bits: words(f.get(3).copied().unwrap_or("")),
            }
        })
        .collect()
}

fn array(dtype: DType, shape: &[usize], v: &[u64]) -> HostArray {
    let data = match dtype {
        DType::U8 => Storage::U8(v.iter().map(|&x| x as u8).collect()),
        DType::U16 => Storage::U16(v.iter().map(|&x| x as u16).collect()),
        DType::U32 => Storage::U32(v.iter().map(|&x| x as u32).collect()),
        DType::U64 => Storage::U64(v.to_vec()),
        d => panic!("no {d} in the data"),
    };
    HostArray::new(shape.to_vec(), data).unwrap()
}

fn words_of(a: &HostArray) -> Vec<u64> {
    match a.data() {
        Storage::U8(v) => v.iter().map(|&x| x as u64).collect(),
        Storage::U16(v) => v.iter().map(|&x| x as u64).collect(),
        Storage::U32(v) => v.iter().map(|&x| x as u64).collect(),
        Storage::U64(v) => v.clone(),
        d => panic!("unexpected {}", d.dtype()),
    }
}

fn prim(c: &Case, shape: Vec<usize>) -> Primitive {
    RngBitGeneratorParams {
        algorithm: c.algorithm,
        dtype: c.dtype,
        shape,
    }
    .into()
}

#[test]
fn interpreter_bits_equal_jax() {
    let cases = cases();
    assert!(cases.iter().filter(|c| !c.vmap).count() >= 140);
    for c in cases.iter().filter(|c| !c.vmap) {
        let key = array(c.key_dtype, &[c.key.len()], &c.key);
        let out = eval_op(&prim(c, c.shape.clone()), &[key]).unwrap();
        let what = format!(
            "{} {} {:?} {:?}",
            c.algorithm.name(),
            c.dtype,
            c.shape,
            c.key
        );
        assert_eq!(out[0].dtype(), c.key_dtype, "{what}");
        assert_eq!(words_of(&out[0]), c.new_key, "new key of {what}");
        assert_eq!(out[1].dtype(), c.dtype, "{what}");
        assert_eq!(out[1].shape(), &c.shape[..], "{what}");
        assert_eq!(words_of(&out[1]), c.bits, "bits of {what}");
    }
}

/// JAX's batching rule draws every member's bits from the first key (bits
/// of shape `[n, *shape]`) and writes the new first key back: the recorded
/// `vmap` lines equal that unbatched call.
#[test]
fn jax_vmap_lines_are_one_call_on_the_first_key() {
    for c in cases().iter().filter(|c| c.vmap) {
        let n = c.key.len() / 4;
        let first = array(DType::U32, &[4], &c.key[..4]);
        let shape: Vec<usize> = std::iter::once(n).chain(c.shape.clone()).collect();
        let out = eval_op(&prim(c, shape), &[first]).unwrap();
        let mut keys = c.key.clone();
        keys[..4].copy_from_slice(&words_of(&out[0]));
        assert_eq!(keys, c.new_key, "{}", c.algorithm.name());
        assert_eq!(words_of(&out[1]), c.bits, "{}", c.algorithm.name());
    }
}

/// JAX's texts, as `jax.make_jaxpr` printed them.
const TEXTS: &[&str] = &[
    "{ lambda ; a:u32[4]. let
    b:u32[4] c:u32[2,3] = rng_bit_generator[
      algorithm=RNG_DEFAULT
      dtype=uint32
      out_sharding=None
      shape=(2, 3)
    ] a
  in (b, c) }",
    "{ lambda ; a:u32[4]. let
    b:u32[4] c:u8[5] = rng_bit_generator[
      algorithm=RNG_PHILOX
      dtype=uint8
      out_sharding=None
      shape=(5,)
    ] a
  in (b, c) }",
    "{ lambda ; a:u64[2]. let
    b:u64[2] c:u64[5] = rng_bit_generator[
      algorithm=RNG_THREE_FRY
      dtype=uint64
      out_sharding=None
      shape=(5,)
    ] a
  in (b, c) }",
    "{ lambda ; a:u32[4]. let
    b:u32[4] c:u16[] = rng_bit_generator[
      algorithm=RNG_DEFAULT
      dtype=uint16
      out_sharding=None
      shape=()
    ] a
  in (b, c) }",
];

#[test]
fn jax_texts_print_back_and_evaluate() {
    for text in TEXTS {
        let j = parse_jaxpr(text).unwrap();
        check_jaxpr(&j).unwrap();
        assert_eq!(&j.to_string(), text);
    }
    // The first text on a recorded key: the same bits as the kernel.
    let c = cases()
        .into_iter()
        .find(|c| {
            !c.vmap
                && c.algorithm == RandomAlgorithm::Default
                && c.dtype == DType::U32
                && c.shape == [2, 3]
        })
        .unwrap();
    let j = ClosedJaxpr::without_consts(parse_jaxpr(TEXTS[0]).unwrap());
    let out = eval_closed_jaxpr(&j, &[array(DType::U32, &[4], &c.key)]).unwrap();
    assert_eq!(words_of(&out[0]), c.new_key);
    assert_eq!(words_of(&out[1]), c.bits);
}

fn type_error(text: &str) -> String {
    let e: IrError = match parse_jaxpr(text) {
        Err(e) => return e.to_string(),
        Ok(j) => check_jaxpr(&j).unwrap_err(),
    };
    e.to_string()
}

#[test]
fn bad_keys_and_dtypes_are_errors_naming_them() {
    let bad_key = TEXTS[0]
        .replace("a:u32[4]", "a:u32[2]")
        .replace("b:u32[4]", "b:u32[2]");
    let e = type_error(&bad_key);
    assert!(
        e.contains("rng_bit_generator") && e.contains("u32[4] or u64[2]"),
        "{e}"
    );
    assert!(e.contains("u32[2]"), "{e}");
    let bad_dtype = TEXTS[0]
        .replace("c:u32[2,3]", "c:i32[2,3]")
        .replace("dtype=uint32", "dtype=int32");
    let e = type_error(&bad_dtype);
    assert!(e.contains("rng_bit_generator") && e.contains("i32"), "{e}");
    // The kernel refuses them too, when called directly.
    let p: Primitive = RngBitGeneratorParams {
        algorithm: RandomAlgorithm::Philox,
        dtype: DType::F32,
        shape: vec![2],
    }
    .into();
    let key = array(DType::U32, &[4], &[1, 2, 3, 4]);
    let e = eval_op(&p, &[key]).unwrap_err().to_string();
    assert!(e.contains("rng_bit_generator") && e.contains("f32"), "{e}");
    let p: Primitive = RngBitGeneratorParams {
        algorithm: RandomAlgorithm::Philox,
        dtype: DType::U32,
        shape: vec![2],
    }
    .into();
    let e = eval_op(&p, &[array(DType::U32, &[3], &[1, 2, 3])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("u32[4] or u64[2]"), "{e}");
}
