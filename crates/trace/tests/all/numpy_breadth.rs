//! `jnp`'s aliases, small elementwise functions and shape functions
//! (`numpy/aliases.rs`, `numpy/shapes.rs`) against JAX 0.10.2's values on
//! random inputs with zeros, infinities and NaNs
//! (`tests/data/jnp_breadth.json`, written by `gen_jnp_breadth.py` there):
//! exact for everything but the transcendental functions, which are
//! within a few ulps of XLA's.

use jaxon_ir::DType;
use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;
use serde_json::Value;

/// `jnp_breadth.json`, read and parsed once for all the tests.
static DATA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/jnp_breadth.json"
    ))
    .expect("jnp_breadth.json");
    serde_json::from_str(&text).expect("json")
});

fn decode(v: &Value) -> (DType, Vec<usize>, Vec<f64>) {
    let dtype = match v["dtype"].as_str().expect("dtype") {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "bool" => DType::Bool,
        other => panic!("dtype {other}"),
    };
    let shape = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let values = v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| match x {
            Value::String(s) => match s.as_str() {
                "nan" => f64::NAN,
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                _ => panic!("{s}"),
            },
            Value::Bool(b) => f64::from(u8::from(*b)),
            x => x.as_f64().expect("number"),
        })
        .collect();
    (dtype, shape, values)
}

fn array(v: &Value) -> Array {
    let (d, shape, values) = decode(v);
    Array::from_host(jaxon_ir::HostArray::from_f64(d, &shape, &values).expect("array"))
}

fn int(p: &Value, k: &str) -> isize {
    p[k].as_i64().unwrap_or_else(|| panic!("{k}")) as isize
}

fn ints(p: &Value, k: &str) -> Option<Vec<isize>> {
    match &p[k] {
        Value::Null => None,
        Value::Array(a) => Some(
            a.iter()
                .map(|x| x.as_i64().expect("int") as isize)
                .collect(),
        ),
        x => Some(vec![x.as_i64().expect("int") as isize]),
    }
}

fn floats(p: &Value, k: &str) -> Vec<f64> {
    p[k].as_array()
        .unwrap_or_else(|| panic!("{k}"))
        .iter()
        .map(|x| x.as_f64().expect("float"))
        .collect()
}

fn run(name: &str, a: &[Array], p: &Value) -> jaxon_trace::Result<Array> {
    let x = &a[0];
    let axis = ints(p, "axis");
    let keep = p["keepdims"].as_bool().unwrap_or(false);
    Ok(match name {
        "absolute" => jnp::absolute(x)?,
        "fabs" => jnp::fabs(x)?,
        "trunc" => jnp::trunc(x)?,
        "rint" => jnp::rint(x)?,
        "deg2rad" => jnp::deg2rad(x)?,
        "rad2deg" => jnp::rad2deg(x)?,
        "log2" => jnp::log2(x)?,
        "log10" => jnp::log10(x)?,
        "signbit" => jnp::signbit(x)?,
        "sinc" => jnp::sinc(x)?,
        "positive" => jnp::positive(x)?,
        "reciprocal" => jnp::reciprocal(x)?,
        "acos" => jnp::acos(x)?,
        "asinh" => jnp::asinh(x)?,
        "atan" => jnp::atan(x)?,
        "bitwise_not" => jnp::bitwise_not(x)?,
        "invert" => jnp::invert(x)?,
        "hypot" => jnp::hypot(x, &a[1])?,
        "copysign" => jnp::copysign(x, &a[1])?,
        "logaddexp" => jnp::logaddexp(x, &a[1])?,
        "logaddexp2" => jnp::logaddexp2(x, &a[1])?,
        "fmax" => jnp::fmax(x, &a[1])?,
        "fmin" => jnp::fmin(x, &a[1])?,
        "heaviside" => jnp::heaviside(x, &a[1])?,
        "atan2" => jnp::atan2(x, &a[1])?,
        "pow" => jnp::pow(x, &a[1])?,
        "true_divide" => jnp::true_divide(x, &a[1])?,
        "mod" => jnp::r#mod(x, &a[1])?,
        "logical_xor" => jnp::logical_xor(x, &a[1])?,
        "ravel" => jnp::ravel(x)?,
        "squeeze" => jnp::squeeze(x, axis.as_deref())?,
        "expand_dims" => jnp::expand_dims(x, &axis.expect("axis"))?,
        "swapaxes" => jnp::swapaxes(x, int(p, "axis1"), int(p, "axis2"))?,
        "moveaxis" => jnp::moveaxis(
            x,
            &ints(p, "source").expect("source"),
            &ints(p, "destination").expect("destination"),
        )?,
        "flip" => jnp::flip(x, axis.as_deref())?,
        "fliplr" => jnp::fliplr(x)?,
        "flipud" => jnp::flipud(x)?,
        "roll" => jnp::roll(x, int(p, "shift"), axis.map(|a| a[0]))?,
        "atleast_1d" => jnp::atleast_1d(x)?,
        "atleast_2d" => jnp::atleast_2d(x)?,
        "atleast_3d" => jnp::atleast_3d(x)?,
        "hstack" => jnp::hstack(a)?,
        "vstack" => jnp::vstack(a)?,
        "dstack" => jnp::dstack(a)?,
        "column_stack" => jnp::column_stack(a)?,
        "diagonal" => jnp::diagonal(x, int(p, "offset"), int(p, "axis1"), int(p, "axis2"))?,
        "trace" => jnp::trace(x, int(p, "offset"), int(p, "axis1"), int(p, "axis2"))?,
        "count_nonzero" => match axis {
            Some(ax) => jnp::count_nonzero(x, ax)?,
            None => jnp::count_nonzero(x, jnp::All)?,
        },
        "ptp" => jnp::ptp(x, axis.expect("axis"), keep)?,
        "amax" => jnp::amax(x, axis.expect("axis"), keep)?,
        "amin" => jnp::amin(x, axis.expect("axis"), keep)?,
        "around" => jnp::around(x, int(p, "decimals") as i32)?,
        "permute_dims" => {
            let axes: Vec<usize> = ints(p, "axes")
                .expect("axes")
                .iter()
                .map(|&a| a as usize)
                .collect();
            jnp::permute_dims(x, &axes)?
        }
        "quantile" | "percentile" => {
            let q = floats(p, "q");
            let ax = axis.map(|a| a[0]);
            if name == "quantile" {
                jnp::quantile(x, &q, ax, keep)?
            } else {
                jnp::percentile(x, &q, ax, keep)?
            }
        }
        "median" => jnp::median(x, axis.map(|a| a[0]), keep)?,
        "average" => jnp::average(x, axis.map(|a| a[0]), a.get(1))?,
        "cov" => jnp::cov(
            x,
            p["rowvar"].as_bool().unwrap_or(true),
            p["ddof"].as_u64().unwrap_or(1) as usize,
        )?,
        "corrcoef" => jnp::corrcoef(x, true)?,
        "norm" => jnp::linalg::norm(x, p["ord"].as_str(), axis.as_deref(), keep)?,
        "tile" => {
            let reps: Vec<usize> = ints(p, "reps")
                .expect("reps")
                .iter()
                .map(|&r| r as usize)
                .collect();
            jnp::tile(x, &reps)?
        }
        "diag" => jnp::diag(x, int(p, "k"))?,
        "inner" => jnp::inner(x, &a[1])?,
        "vdot" => jnp::vdot(x, &a[1])?,
        "cross" => jnp::cross(x, &a[1])?,
        "append" => jnp::append(x, &a[1], axis.map(|a| a[0]))?,
        "fmod" => jnp::fmod(x, &a[1])?,
        "float_power" => jnp::float_power(x, &a[1])?,
        "isposinf" => jnp::isposinf(x)?,
        "isneginf" => jnp::isneginf(x)?,
        "isreal" => jnp::isreal(x)?,
        "matrix_transpose" => jnp::matrix_transpose(x)?,
        "rot90" => {
            let ax = ints(p, "axes").expect("axes");
            jnp::rot90(x, int(p, "k") as i64, (ax[0], ax[1]))?
        }
        "vecdot" => jnp::vecdot(x, &a[1])?,
        "matvec" => jnp::matvec(x, &a[1])?,
        "vecmat" => jnp::vecmat(x, &a[1])?,
        "convolve" | "correlate" => {
            let mode = match p["mode"].as_str().expect("mode") {
                "full" => jnp::ConvolveMode::Full,
                "same" => jnp::ConvolveMode::Same,
                _ => jnp::ConvolveMode::Valid,
            };
            if name == "convolve" {
                jnp::convolve(x, &a[1], mode)?
            } else {
                jnp::correlate(x, &a[1], mode)?
            }
        }
        "trapezoid" => jnp::trapezoid(x, p["dx"].as_f64().expect("dx"), int(p, "axis"))?,
        "ediff1d" => jnp::ediff1d(x)?,
        other => panic!("no case for jnp.{other}"),
    })
}

/// Functions whose values come from libm-style approximations or sums (and
/// division, which XLA's CPU backend does not round correctly in f32; the
/// interpreter does).
fn transcendental(name: &str) -> bool {
    matches!(
        name,
        "log2"
            | "log10"
            | "sinc"
            | "logaddexp"
            | "logaddexp2"
            | "hypot"
            | "acos"
            | "asinh"
            | "atan"
            | "atan2"
            | "pow"
            | "deg2rad"
            | "rad2deg"
            | "true_divide"
            | "around"
            // Sums and interpolations, associated differently from XLA.
            | "quantile"
            | "percentile"
            | "median"
            | "average"
            | "cov"
            | "corrcoef"
            | "norm"
            | "inner"
            | "vdot"
            | "cross"
            | "trace"
            | "float_power"
            | "vecdot"
            | "matvec"
            | "vecmat"
            | "convolve"
            | "correlate"
            | "trapezoid"
    )
}

#[test]
fn jnp_breadth_matches_jax() {
    let data = &*DATA;
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() > 100);
    for c in cases.iter().filter(|c| c["outs"].is_null()) {
        let name = c["name"].as_str().expect("name");
        let args: Vec<Array> = c["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(array)
            .collect();
        let got = run(name, &args, &c["params"]).unwrap_or_else(|e| panic!("jnp.{name}: {e}"));
        let (dtype, shape, want) = decode(&c["out"]);
        let what = format!("jnp.{name}{} ", c["params"]);
        assert_eq!(got.dtype(), dtype, "{what}dtype");
        assert_eq!(got.shape(), shape, "{what}shape");
        let host = got.try_to_host("test").expect("host");
        let eps = if dtype == DType::F32 {
            f32::EPSILON as f64
        } else {
            f64::EPSILON
        };
        for (i, (&w, g)) in want.iter().zip(host.to_f64_vec()).enumerate() {
            let ok = (w.is_nan() && g.is_nan())
                || g == w
                || (transcendental(name) && (g - w).abs() <= 8.0 * eps * w.abs().max(1.0));
            assert!(ok, "{what}element {i}: got {g}, JAX {w}");
            if w == 0.0 && !transcendental(name) {
                assert_eq!(
                    g.is_sign_negative(),
                    w.is_sign_negative(),
                    "{what}element {i}: sign of 0"
                );
            }
        }
    }
}

/// The functions with several results.
fn run_multi(name: &str, a: &[Array]) -> jaxon_trace::Result<Vec<Array>> {
    Ok(match name {
        "divmod" => {
            let (q, r) = jnp::divmod(&a[0], &a[1])?;
            vec![q, r]
        }
        "modf" => {
            let (f, w) = jnp::modf(&a[0])?;
            vec![f, w]
        }
        "unstack" => jnp::unstack(&a[0], 1)?,
        "broadcast_arrays" => jnp::broadcast_arrays(a)?,
        other => panic!("no case for jnp.{other}"),
    })
}

#[test]
fn functions_with_several_results_match_jax() {
    let data = &*DATA;
    let mut seen = 0;
    for c in data["cases"].as_array().expect("cases") {
        let Some(outs) = c["outs"].as_array() else {
            continue;
        };
        seen += 1;
        let name = c["name"].as_str().expect("name");
        let args: Vec<Array> = c["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(array)
            .collect();
        let got = run_multi(name, &args).unwrap_or_else(|e| panic!("jnp.{name}: {e}"));
        assert_eq!(got.len(), outs.len(), "jnp.{name}: number of results");
        for (k, (g, o)) in got.iter().zip(outs).enumerate() {
            let (dtype, shape, want) = decode(o);
            assert_eq!(
                (g.dtype(), g.shape()),
                (dtype, shape),
                "jnp.{name} result {k}"
            );
            let host = g.try_to_host("test").expect("host").to_f64_vec();
            for (i, (&w, gv)) in want.iter().zip(host).enumerate() {
                assert!(
                    (w.is_nan() && gv.is_nan()) || gv == w,
                    "jnp.{name} result {k} element {i}: got {gv}, JAX {w}"
                );
            }
        }
    }
    assert_eq!(seen, 5);
}

#[test]
fn bad_arguments_are_errors_naming_the_problem() {
    let m = Array::from_vec(vec![1f32; 6], &[2, 3]);
    let v = Array::from_vec(vec![1f32; 3], &[3]);
    let e = jnp::convolve(&m, &v, jnp::ConvolveMode::Full)
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32[2,3]") && e.contains("f32[3]"), "{e}");
    let w = Array::from_vec(vec![1f32; 2], &[2]);
    let e = jnp::cross(&m, &w).unwrap_err().to_string();
    assert!(e.contains("f32[2,3]") && e.contains("f32[2]"), "{e}");
    let e = jnp::quantile(&v, &[1.5], None, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("1.5"), "{e}");
    let e = jnp::average(&m, Some(1), Some(&w)).unwrap_err().to_string();
    assert!(e.contains("f32[2]") && e.contains("f32[2,3]"), "{e}");
    let e = jnp::linalg::norm(&v, Some("fro2"), Some(&[0]), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("fro2"), "{e}");
    let e = jnp::matrix_transpose(&v).unwrap_err().to_string();
    assert!(e.contains("f32[3]"), "{e}");
    assert!(jnp::rot90(&m, 1, (0, 0)).is_err());
}

#[test]
fn shape_functions_refuse_bad_axes() {
    let x = Array::from_vec(vec![0f32; 6], &[1, 2, 3]);
    let e = jnp::squeeze(&x, Some(&[1])).unwrap_err().to_string();
    assert!(e.contains("axis 1") && e.contains("size 2"), "{e}");
    assert!(jnp::swapaxes(&x, 0, 3).is_err());
    assert!(jnp::moveaxis(&x, &[0, 0], &[1, 2]).is_err());
    assert!(jnp::moveaxis(&x, &[0], &[1, 2]).is_err());
    assert!(jnp::diagonal(&x, 0, 1, -2).is_err());
    assert!(jnp::invert(&x).is_err());
}
