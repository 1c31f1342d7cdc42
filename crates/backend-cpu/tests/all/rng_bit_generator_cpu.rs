//! `rng_bit_generator` on the CPU backend: every call recorded from JAX
//! 0.10.2 on the CPU (`tests/data/rng-bit-generator-jax.txt`, written by
//! `tests/data/gen_rng_bit_generator.py`: three algorithms, four dtypes,
//! scalar, odd, even and empty shapes, `u32[4]` and `u64[2]` keys, a
//! counter about to wrap) gives JAX's new key and bits bit for bit, as one
//! compiled program per case; and a program chaining it with fused
//! arithmetic on the key and the bits gives the interpreter's values.

use crate::common::{parse, run};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{DType, HostArray, Storage};

fn words(s: &str) -> Vec<u64> {
    s.split_whitespace().map(|w| w.parse().unwrap()).collect()
}

fn array(dtype: DType, shape: &[usize], v: &[u64]) -> HostArray {
    let data = match dtype {
        DType::U32 => Storage::U32(v.iter().map(|&x| x as u32).collect()),
        DType::U64 => Storage::U64(v.to_vec()),
        d => panic!("no {d} keys in the data"),
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

#[test]
fn recorded_jax_calls_reproduce_on_the_cpu_backend() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/rng-bit-generator-jax.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let cpu = CpuBackend::new();
    let mut n = 0;
    for line in text.lines().filter(|l| l.starts_with("call ")) {
        let f: Vec<&str> = line.split(" | ").collect();
        let h: Vec<&str> = f[0].split(' ').collect();
        let (alg, dtype, kdt) = (
            h[1],
            DType::from_name(h[2]).unwrap(),
            DType::from_name(h[4]).unwrap(),
        );
        let shape: Vec<usize> = match h[3] {
            "-" => vec![],
            s => s.split('x').map(|d| d.parse().unwrap()).collect(),
        };
        let key = words(f[1]);
        let ktype = format!("{}[{}]", kdt.short_name(), key.len());
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let tuple = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let jaxpr = format!(
            "{{ lambda ; a:{ktype}. let b:{ktype} c:{}[{}] = rng_bit_generator[algorithm={alg} \
             dtype={} out_sharding=None shape={tuple}] a in (b, c) }}",
            dtype.short_name(),
            dims.join(","),
            dtype.numpy_name(),
        );
        let out = run(&cpu, &parse(&jaxpr), &[array(kdt, &[key.len()], &key)]);
        assert_eq!(words_of(&out[0]), words(f[2]), "new key of {line}");
        assert_eq!(out[1].dtype(), dtype);
        assert_eq!(out[1].shape(), &shape[..]);
        assert_eq!(
            words_of(&out[1]),
            words(f.get(3).copied().unwrap_or("")),
            "bits of {line}"
        );
        n += 1;
    }
    assert!(n >= 140, "only {n} cases");
}

#[test]
fn chained_with_fused_code_matches_the_interpreter() {
    let text = "{ lambda ; a:u32[4] x:f32[4,6]. let
    k:u32[4] = add a 7:u32[]
    b:u32[4] c:u16[4,6] = rng_bit_generator[algorithm=RNG_THREE_FRY dtype=uint16 out_sharding=None shape=(4, 6)] k
    d:u32[4] e:u32[4,6] = rng_bit_generator[algorithm=RNG_PHILOX dtype=uint32 out_sharding=None shape=(4, 6)] b
    f:f32[4,6] = convert_element_type[new_dtype=float32 weak_type=False] c
    g:f32[4,6] = mul f x
    h:u32[4,6] = shift_right_logical e 9:u32[]
    i:f32[4,6] = convert_element_type[new_dtype=float32 weak_type=False] h
    j:f32[4,6] = add g i
  in (d, j) }";
    let closed = parse(text);
    let key = array(DType::U32, &[4], &[0x9E37_79B9, 17, 0xFFFF_FFF0, 3]);
    let xs: Vec<f64> = (0..24).map(|i| (i as f64 * 0.7).sin()).collect();
    let x = HostArray::from_f64(DType::F32, &[4, 6], &xs).unwrap();
    let got = run(&CpuBackend::new(), &closed, &[key.clone(), x.clone()]);
    let want = run(&InterpreterBackend::new(), &closed, &[key, x]);
    assert_eq!(words_of(&got[0]), words_of(&want[0]));
    assert_eq!(got[1], want[1]);
}
