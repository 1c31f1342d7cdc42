//! `jaxon::io`: safetensors round trips of pytrees in every dtype the
//! format has (bit for bit), the errors of a bad file or template, and
//! (feature `ndarray`) conversions to and from `ndarray`.

use jaxon::io::{load_safetensors, read_safetensors, save_safetensors, write_safetensors};
use jaxon::{Array, DType, Pytree};
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "jaxon-io-{}-{name}.safetensors",
        std::process::id()
    ))
}

/// xorshift64*: `n` pseudo-random `u64`s.
fn bits(seed: u64, n: usize) -> Vec<u64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_F491_4F6C_DD1D)
        })
        .collect()
}

/// A random array of `dtype` whose bytes are arbitrary (NaN payloads
/// included for floats; bools 0 or 1).
fn random(dtype: DType, shape: &[usize], seed: u64) -> Array {
    let n: usize = shape.iter().product();
    let bytes: Vec<u8> = bits(seed, n * dtype.size_bytes())
        .into_iter()
        .map(|b| {
            if dtype == DType::Bool {
                (b & 1) as u8
            } else {
                b as u8
            }
        })
        .collect();
    Array::from_host(jaxon::ir::HostArray::from_le_bytes(dtype, shape, &bytes).expect("bytes"))
}

fn host_bytes(a: &Array) -> Vec<u8> {
    a.try_to_host("test").expect("concrete").to_le_bytes()
}

#[derive(Pytree, Clone)]
struct Dense {
    w: Array,
    b: Array,
}

#[derive(Pytree, Clone)]
struct Model {
    layers: Vec<Dense>,
    scale: Option<Array>,
}

#[test]
fn every_dtype_round_trips_bit_for_bit() {
    // Every dtype but c128, which safetensors lacks (tested below).
    let dtypes: Vec<DType> = DType::ALL
        .into_iter()
        .filter(|&d| d != DType::C128)
        .collect();
    let tree: Vec<Array> = dtypes
        .iter()
        .enumerate()
        .map(|(i, &d)| random(d, &[3, i % 4, 2], i as u64 + 1))
        .collect();
    let path = temp("dtypes");
    save_safetensors(&path, &tree).expect("save");
    let back = load_safetensors(&path, &tree).expect("load");
    for (a, b) in tree.iter().zip(&back) {
        assert_eq!(a.dtype(), b.dtype());
        assert_eq!(a.shape(), b.shape());
        assert_eq!(host_bytes(a), host_bytes(b), "{}", a.dtype());
    }
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_struct_tree_is_stored_under_its_key_paths() {
    let model = Model {
        layers: vec![
            Dense {
                w: random(DType::F32, &[4, 3], 11),
                b: random(DType::F32, &[3], 12),
            },
            Dense {
                w: random(DType::F32, &[3, 2], 13),
                b: random(DType::F32, &[2], 14),
            },
        ],
        scale: Some(random(DType::F64, &[], 15)),
    };
    let path = temp("model");
    save_safetensors(&path, &model).expect("save");
    let names: Vec<String> = read_safetensors(&path).expect("read").into_keys().collect();
    assert_eq!(
        names,
        [
            "layers.0.b",
            "layers.0.w",
            "layers.1.b",
            "layers.1.w",
            "scale"
        ]
    );
    let back = load_safetensors(&path, &model).expect("load");
    assert_eq!(
        host_bytes(&back.layers[1].w),
        host_bytes(&model.layers[1].w)
    );
    assert_eq!(
        host_bytes(back.scale.as_ref().unwrap()),
        host_bytes(model.scale.as_ref().unwrap())
    );
    std::fs::remove_file(&path).ok();
}

fn err_of<T>(r: jaxon::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_files_and_templates_are_errors_naming_the_problem() {
    let dense = Dense {
        w: random(DType::F32, &[2, 2], 1),
        b: random(DType::F32, &[2], 2),
    };
    let path = temp("errors");
    save_safetensors(&path, &dense).expect("save");

    let wrong_shape = Dense {
        w: random(DType::F32, &[2, 3], 1),
        b: dense.b.clone(),
    };
    let e = err_of(load_safetensors(&path, &wrong_shape));
    assert!(
        e.contains("\"w\"") && e.contains("[2, 2]") && e.contains("[2, 3]"),
        "{e}"
    );

    let wrong_dtype = Dense {
        w: dense.w.clone(),
        b: random(DType::F64, &[2], 2),
    };
    let e = err_of(load_safetensors(&path, &wrong_dtype));
    assert!(
        e.contains("\"b\"") && e.contains("f32") && e.contains("f64"),
        "{e}"
    );

    let bigger = (dense.clone(), random(DType::I32, &[1], 3));
    let e = err_of(load_safetensors(&path, &bigger));
    assert!(e.contains("no tensor named \"0.w\""), "{e}");

    let smaller = Dense {
        w: dense.w.clone(),
        b: dense.b.clone(),
    };
    let extra = temp("extra");
    write_safetensors(&extra, [("w", &dense.w), ("b", &dense.b), ("c", &dense.b)]).expect("write");
    let e = err_of(load_safetensors(&extra, &smaller));
    assert!(e.contains("\"c\"") && e.contains("no place"), "{e}");

    let e = err_of(write_safetensors(
        &extra,
        [("w", &dense.w), ("w", &dense.b)],
    ));
    assert!(e.contains("two tensors are named \"w\""), "{e}");

    let z = Array::from_host(jaxon::ir::HostArray::zeros(DType::C128, &[2]));
    let e = err_of(write_safetensors(&extra, [("z", &z)]));
    assert!(e.contains("c128"), "{e}");

    // A truncated file, garbage, and no file at all.
    let bytes = std::fs::read(&path).expect("read");
    let cut = temp("cut");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).expect("write");
    let e = err_of(read_safetensors(&cut));
    assert!(e.contains(&cut.display().to_string()), "{e}");
    std::fs::write(&cut, b"\xff\xff\xff\xff\xff\xff\xff\x7fnot json").expect("write");
    err_of(read_safetensors(&cut));
    let e = err_of(read_safetensors(temp("missing")));
    assert!(e.contains("missing"), "{e}");
    for p in [path, extra, cut] {
        std::fs::remove_file(p).ok();
    }
}

#[test]
fn traced_arrays_cannot_be_written() {
    let r = jaxon::make_jaxpr(|x: Array| {
        let e = err_of(write_safetensors(temp("traced"), [("x", &x)]));
        assert!(e.contains("concrete"), "{e}");
        x
    })(Array::from_vec(vec![1f32], &[1]));
    r.expect("trace");
}

#[cfg(feature = "ndarray")]
#[test]
fn ndarray_round_trips_in_logical_order() {
    use jaxon::io::ndarray::{from_ndarray, to_ndarray};
    let v: Vec<f64> = bits(7, 24)
        .iter()
        .map(|&b| (b >> 11) as f64 / (1u64 << 53) as f64)
        .collect();
    let a = ndarray::Array3::from_shape_vec((2, 3, 4), v.clone()).expect("shape");
    let x = from_ndarray(&a).expect("from");
    assert_eq!(x.shape(), [2, 3, 4]);
    assert_eq!(x.to_vec::<f64>(), v);
    // A permuted view is copied in its logical order.
    let p = a.view().permuted_axes([2, 0, 1]);
    let y = from_ndarray(&p).expect("from view");
    assert_eq!(y.shape(), [4, 2, 3]);
    assert_eq!(y.to_vec::<f64>(), p.iter().copied().collect::<Vec<_>>());
    let back = to_ndarray::<f64>(&y).expect("to");
    assert_eq!(back, p.to_owned().into_dyn());
    let e = err_of(to_ndarray::<f32>(&y));
    assert!(e.contains("f32") && e.contains("f64"), "{e}");
}
