//! `jax.scipy.linalg`'s SciPy spellings, `lu_solve` and the special
//! matrices, and `jnp.linalg`'s array-API spellings (`trace`, `cross`,
//! `vector_norm`, `multi_dot`, `matrix_rank`, `cond`, ...) against JAX 0.10.2's values (`tests/data/scipy_linalg_more.json`,
//! written by `gen_scipy_linalg_more.py` there), and their errors.

use jaxon_ir::DType;
use jaxon_trace::numpy::linalg as jl;
use jaxon_trace::scipy::linalg as sl;
use jaxon_trace::Array;
use serde_json::Value;

fn data() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/scipy_linalg_more.json"
    ))
    .expect("scipy_linalg_more.json");
    serde_json::from_str::<Value>(&text)
        .expect("json")
        .as_array()
        .expect("cases")
        .clone()
}

fn decode(v: &Value) -> (DType, Vec<usize>, Vec<f64>) {
    let dtype = match v["dtype"].as_str().expect("dtype") {
        "float32" => DType::F32,
        "int32" => DType::I32,
        "int64" => DType::I64,
        other => panic!("dtype {other}"),
    };
    let shape = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let values = v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    (dtype, shape, values)
}

fn array(v: &Value) -> Array {
    let (d, shape, values) = decode(v);
    Array::from_host(jaxon_ir::HostArray::from_f64(d, &shape, &values).expect("array"))
}

fn close(name: &str, got: &Array, want: &Value, tol: f64) {
    let (d, shape, values) = decode(want);
    assert_eq!(got.dtype(), d, "{name}: dtype");
    assert_eq!(got.try_shape().unwrap(), shape, "{name}: shape");
    let g = got.try_to_host("test").expect("host");
    let g: Vec<f64> = (0..g.len()).map(|i| g.data().get_f64(i)).collect();
    for (i, (x, y)) in g.iter().zip(&values).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{name}[{i}]: {x} vs JAX's {y}"
        );
    }
}

#[test]
fn values_match_jax() {
    for c in data() {
        let name = c["name"].as_str().unwrap();
        let args: Vec<Array> = c["args"].as_array().unwrap().iter().map(array).collect();
        let outs = c["outs"].as_array().unwrap();
        let kw = &c["kw"];
        let trans = kw["trans"].as_u64().unwrap_or(0) as u8;
        let n = kw["n"].as_u64().unwrap_or(0) as usize;
        let got: Vec<Array> = match name {
            "cholesky_upper" => vec![sl::cholesky(&args[0], false).unwrap()],
            "cholesky_lower" => vec![sl::cholesky(&args[0], true).unwrap()],
            "det" => vec![sl::det(&args[0]).unwrap()],
            "inv" => vec![sl::inv(&args[0]).unwrap()],
            "solve" => vec![sl::solve(&args[0], &args[1]).unwrap()],
            "eigh_w" => vec![sl::eigh(&args[0]).unwrap().0],
            n if n.starts_with("lu_solve") => {
                vec![sl::lu_solve(&args[0], &args[1], &args[2], trans).unwrap()]
            }
            "toeplitz" => vec![sl::toeplitz(&args[0], Some(&args[1])).unwrap()],
            "toeplitz1" => vec![sl::toeplitz(&args[0], None).unwrap()],
            "hankel" => vec![sl::hankel(&args[0], Some(&args[1])).unwrap()],
            "hankel1" => vec![sl::hankel(&args[0], None).unwrap()],
            "circulant" => vec![sl::circulant(&args[0]).unwrap()],
            "fiedler" => vec![sl::fiedler(&args[0]).unwrap()],
            "companion" => vec![sl::companion(&args[0]).unwrap()],
            "leslie" => vec![sl::leslie(&args[0], &args[1]).unwrap()],
            "hilbert" => vec![sl::hilbert(n).unwrap()],
            "helmert" | "helmert_full" => {
                vec![sl::helmert(n, kw["full"].as_bool().unwrap()).unwrap()]
            }
            "hadamard" => vec![sl::hadamard(n, DType::I32).unwrap()],
            "qr_full_shapes" => {
                // Signs may differ: compare shapes and the reconstruction.
                let (q, r) = sl::qr(&args[0], "full").unwrap();
                let (_, qs, _) = decode(&outs[0]);
                let (_, rs, _) = decode(&outs[1]);
                assert_eq!(q.try_shape().unwrap(), qs);
                assert_eq!(r.try_shape().unwrap(), rs);
                let back = jaxon_trace::numpy::matmul(&q, &r).unwrap();
                close(name, &back, &c["args"][0], 1e-5);
                continue;
            }
            "svd_s" => vec![sl::svd(&args[0], true).unwrap().1],
            "jnp_trace" => vec![jl::trace(&args[0], 1).unwrap()],
            "jnp_diagonal" => vec![jl::diagonal(&args[0], -1).unwrap()],
            "jnp_cross" => vec![jl::cross(&args[0], &args[1]).unwrap()],
            "jnp_vecdot" => vec![jl::vecdot(&args[0], &args[1]).unwrap()],
            "jnp_vector_norm2" => vec![jl::vector_norm(&args[0], Some(&[1]), false, 2.0).unwrap()],
            "jnp_vector_norm3" => vec![jl::vector_norm(&args[0], None, false, 3.0).unwrap()],
            "jnp_vector_norm_inf" => {
                vec![jl::vector_norm(&args[0], Some(&[0]), false, f64::INFINITY).unwrap()]
            }
            "jnp_vector_norm0" => vec![jl::vector_norm(&args[0], None, false, 0.0).unwrap()],
            "jnp_multi_dot" => vec![jl::multi_dot(&args).unwrap()],
            "jnp_matrix_rank" => vec![jl::matrix_rank(&args[0], None).unwrap()],
            "jnp_cond" => vec![jl::cond(&args[0]).unwrap()],
            "jnp_matrix_transpose" => vec![jl::matrix_transpose(&args[0]).unwrap()],
            other => panic!("unknown case {other}"),
        };
        for (g, w) in got.iter().zip(outs) {
            close(name, g, w, 2e-5);
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let m = Array::from_vec(vec![1.0f32; 6], &[2, 3]);
    let v = Array::from_vec(vec![1.0f32; 3], &[3]);
    assert!(sl::toeplitz(&m, None)
        .unwrap_err()
        .to_string()
        .contains("1-D"));
    assert!(sl::hadamard(6, DType::I32)
        .unwrap_err()
        .to_string()
        .contains("power of 2"));
    assert!(sl::qr(&m, "nope").unwrap_err().to_string().contains("mode"));
    assert!(sl::leslie(&v, &v)
        .unwrap_err()
        .to_string()
        .contains("len(f) - 1"));
    assert!(sl::companion(&Array::from_vec(vec![1.0f32], &[1])).is_err());
    let piv = Array::from_vec(vec![0i32, 1], &[2]);
    let sq = Array::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2]);
    assert!(sl::lu_solve(&m, &piv, &v, 0)
        .unwrap_err()
        .to_string()
        .contains("square"));
    assert!(sl::lu_solve(&sq, &piv, &v, 0)
        .unwrap_err()
        .to_string()
        .contains("rows"));
    assert!(sl::lu_solve(&sq, &piv, &Array::from_vec(vec![1.0f32; 2], &[2]), 3).is_err());
    assert!(sl::helmert(0, true).is_err());
    assert!(jl::cross(&m, &m).is_ok());
    assert!(jl::cross(&v, &Array::from_vec(vec![1.0f32; 2], &[2])).is_err());
    assert!(jl::multi_dot(std::slice::from_ref(&m)).is_err());
    assert!(jl::matrix_rank(&v, None).is_err());
}
