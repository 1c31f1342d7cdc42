//! The `jnp` functions of issue 21 — sets and indices with static sizes,
//! `interp`, histograms, polynomials, `gcd`/`lcm`, the NaN statistics,
//! window functions, splits — and `nn.dot_product_attention` and
//! `scipy.linalg.block_diag`/`expm`, against JAX 0.10.2's values on random
//! inputs (`tests/data/jnp_more.json`, written by `gen_jnp_more.py`
//! there): exact for integer and boolean results, within each case's
//! relative tolerance for floats. Also the errors for bad arguments.

use jaxon_ir::DType;
use jaxon_trace::numpy::{self as jnp, Bins, Sections};
use jaxon_trace::{nn, scipy, Array};
use serde_json::Value;

static DATA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/jnp_more.json"
    ))
    .expect("jnp_more.json");
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

fn usize_of(p: &Value, k: &str) -> Option<usize> {
    p[k].as_u64().map(|v| v as usize)
}

fn axis(p: &Value) -> Option<isize> {
    p["axis"].as_i64().map(|a| a as isize)
}

fn floats(p: &Value, k: &str) -> Option<Vec<f64>> {
    p[k].as_array()
        .map(|a| a.iter().map(|x| x.as_f64().expect("float")).collect())
}

fn sections(p: &Value) -> Sections {
    match usize_of(p, "sections") {
        Some(k) => Sections::Equal(k),
        None => Sections::At(
            p["at"]
                .as_array()
                .expect("at")
                .iter()
                .map(|x| x.as_u64().expect("index") as usize)
                .collect(),
        ),
    }
}

fn bins(p: &Value, a: &[Array]) -> Bins {
    match usize_of(p, "bins") {
        Some(b) => Bins::Count(b),
        None => Bins::Edges(a[1].clone()),
    }
}

fn range(p: &Value) -> Option<(f64, f64)> {
    floats(p, "range").map(|r| (r[0], r[1]))
}

fn pair((a, b): (Array, Array)) -> Vec<Array> {
    vec![a, b]
}

/// The attention call of a case: `bias`/`mask` follow q, k, v in the
/// arguments when the params name them.
fn attention(p: &Value, a: &[Array]) -> jaxon_trace::Result<Array> {
    let mut rest = a[3..].iter();
    let bias = p.get("bias").map(|_| rest.next().expect("bias"));
    let mask = p.get("mask").map(|_| rest.next().expect("mask"));
    nn::dot_product_attention(
        &a[0],
        &a[1],
        &a[2],
        bias,
        mask,
        p["scale"].as_f64(),
        p["is_causal"].as_bool().unwrap_or(false),
    )
}

fn run(name: &str, a: &[Array], p: &Value) -> jaxon_trace::Result<Vec<Array>> {
    let size = usize_of(p, "size");
    let fill = p["fill"].as_i64();
    let keepdims = p["keepdims"].as_bool().unwrap_or(false);
    let m = usize_of(p, "m").unwrap_or(0);
    let k = p["k"].as_i64().unwrap_or(0);
    let one = |r: jaxon_trace::Result<Array>| r.map(|x| vec![x]);
    match name {
        "unique_all" => {
            let f = fill.map(|f| Array::scalar(f as i32));
            let u = jnp::unique_all(&a[0], size, f.as_ref())?;
            Ok(vec![u.values, u.indices, u.inverse_indices, u.counts])
        }
        "nonzero" => jnp::nonzero(&a[0], size, fill),
        "argwhere" => one(jnp::argwhere(&a[0], size, fill)),
        "flatnonzero" => one(jnp::flatnonzero(&a[0], size, fill)),
        "isin" => one(jnp::isin(
            &a[0],
            &a[1],
            p["invert"].as_bool().unwrap_or(false),
        )),
        "digitize" => one(jnp::digitize(&a[0], &a[1], p["right"] == true)),
        "tril_indices" => Ok(pair(jnp::tril_indices(
            usize_of(p, "n").expect("n"),
            k,
            usize_of(p, "m"),
        ))),
        "triu_indices" => Ok(pair(jnp::triu_indices(
            usize_of(p, "n").expect("n"),
            k,
            usize_of(p, "m"),
        ))),
        "tril_indices_from" => jnp::tril_indices_from(&a[0], k).map(pair),
        "triu_indices_from" => jnp::triu_indices_from(&a[0], k).map(pair),
        "diag_indices" => jnp::diag_indices(
            usize_of(p, "n").expect("n"),
            usize_of(p, "ndim").expect("ndim"),
        ),
        "array_split" => jnp::array_split(&a[0], sections(p), axis(p).unwrap_or(0)),
        "hsplit" => jnp::hsplit(&a[0], sections(p)),
        "vsplit" => jnp::vsplit(&a[0], sections(p)),
        "dsplit" => jnp::dsplit(&a[0], sections(p)),
        "gcd" => one(jnp::gcd(&a[0], &a[1])),
        "lcm" => one(jnp::lcm(&a[0], &a[1])),
        "hanning" => one(jnp::hanning(m)),
        "hamming" => one(jnp::hamming(m)),
        "blackman" => one(jnp::blackman(m)),
        "bartlett" => one(jnp::bartlett(m)),
        "kaiser" => one(jnp::kaiser(m, p["beta"].as_f64().expect("beta"))),
        "histogram" => {
            let w = (a.len() > 1 && p.get("bins").is_some()).then(|| &a[1]);
            jnp::histogram(
                &a[0],
                &bins(p, a),
                range(p),
                w,
                p["density"].as_bool().unwrap_or(false),
            )
            .map(pair)
        }
        "histogram_bin_edges" => one(jnp::histogram_bin_edges(&a[0], &bins(p, a), range(p))),
        "dot_product_attention" => one(attention(p, a)),
        "block_diag" => one(scipy::linalg::block_diag(a)),
        "expm" => one(scipy::linalg::expm(&a[0])),
        "nanvar" => one(jnp::nanvar(
            &a[0],
            axis(p),
            p["ddof"].as_i64().unwrap_or(0),
            keepdims,
        )),
        "nanstd" => one(jnp::nanstd(&a[0], axis(p), 0, keepdims)),
        "nanmedian" => one(jnp::nanmedian(&a[0], axis(p), keepdims)),
        "nanquantile" => one(jnp::nanquantile(
            &a[0],
            &floats(p, "q").expect("q"),
            axis(p),
            keepdims,
        )),
        "nanpercentile" => one(jnp::nanpercentile(
            &a[0],
            &floats(p, "q").expect("q"),
            axis(p),
            keepdims,
        )),
        "nancumsum" => one(jnp::nancumsum(&a[0], axis(p))),
        "nancumprod" => one(jnp::nancumprod(&a[0], axis(p))),
        "nanargmin" => one(jnp::nanargmin(&a[0], axis(p), false)),
        "nanargmax" => one(jnp::nanargmax(&a[0], axis(p), false)),
        "interp" => one(jnp::interp(
            &a[0],
            &a[1],
            &a[2],
            p["left"].as_f64(),
            p["right"].as_f64(),
            p["period"].as_f64(),
        )),
        "polyadd" => one(jnp::polyadd(&a[0], &a[1])),
        "polysub" => one(jnp::polysub(&a[0], &a[1])),
        "polymul" => one(jnp::polymul(&a[0], &a[1])),
        "polyder" => one(jnp::polyder(&a[0], m)),
        "polyint" => one(jnp::polyint(&a[0], m, floats(p, "k").as_deref())),
        "poly" => one(jnp::poly(&a[0])),
        "vander" => one(jnp::vander(
            &a[0],
            usize_of(p, "n"),
            p["increasing"].as_bool().unwrap_or(false),
        )),
        "polyfit" => one(jnp::polyfit(
            &a[0],
            &a[1],
            usize_of(p, "deg").expect("deg"),
            a.get(2),
        )),
        other => panic!("no case for {other}"),
    }
}

#[test]
fn jnp_more_matches_jax() {
    let cases = DATA["cases"].as_array().expect("cases");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (n, c) in cases.iter().enumerate() {
        let name = c["name"].as_str().expect("name");
        if name.ends_with("_grad") {
            continue; // gradients: crates/transforms/tests/all/jnp_more_grads.rs
        }
        let args: Vec<Array> = c["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(array)
            .collect();
        let what = format!("#{n} {name}{}", c["params"]);
        let got = match run(name, &args, &c["params"]) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{what}: {e}"));
                continue;
            }
        };
        let outs = c["outs"].as_array().expect("outs");
        if got.len() != outs.len() {
            failures.push(format!("{what}: {} results, JAX {}", got.len(), outs.len()));
            continue;
        }
        let tol = c["tol"].as_f64().unwrap_or(0.0);
        for (r, (g, o)) in got.iter().zip(outs).enumerate() {
            let (dtype, shape, want) = decode(o);
            if (g.dtype(), g.shape()) != (dtype, shape.clone()) {
                failures.push(format!(
                    "{what} result {r}: {:?}{:?}, JAX {dtype:?}{shape:?}",
                    g.dtype(),
                    g.shape()
                ));
                continue;
            }
            let host = g.try_to_host("test").expect("host").to_f64_vec();
            for (i, (&w, gv)) in want.iter().zip(host).enumerate() {
                let ok = (w.is_nan() && gv.is_nan())
                    || gv == w
                    || (gv - w).abs() <= tol * w.abs().max(1.0);
                if !ok {
                    failures.push(format!("{what} result {r} element {i}: got {gv}, JAX {w}"));
                    break;
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 200, "{checked} results");
}

#[test]
fn bad_arguments_are_errors_naming_the_problem() {
    let m = Array::from_vec(vec![1f32; 6], &[2, 3]);
    let v = Array::from_vec(vec![1f32, 2.0, 3.0], &[3]);
    let e = |r: jaxon_trace::Result<Array>| r.expect_err("an error").to_string();
    let s = e(jnp::interp(&v, &m, &v, None, None, None));
    assert!(s.contains("f32[2,3]"), "{s}");
    let s = e(jnp::interp(&v, &v, &v, None, None, Some(0.0)));
    assert!(s.contains("period"), "{s}");
    let s = e(jnp::digitize(&v, &m, false));
    assert!(s.contains("bins") && s.contains("f32[2,3]"), "{s}");
    let s = e(jnp::histogram(&v, &Bins::Count(0), None, None, false).map(|r| r.0));
    assert!(s.contains("bins"), "{s}");
    let s = e(jnp::histogram(&v, &Bins::Count(3), Some((2.0, 1.0)), None, false).map(|r| r.0));
    assert!(s.contains("range"), "{s}");
    let s = e(jnp::histogram(&v, &Bins::Count(3), None, Some(&m), false).map(|r| r.0));
    assert!(s.contains("weights"), "{s}");
    let s = e(jnp::gcd(&v, &v));
    assert!(s.contains("integers"), "{s}");
    let s = e(jnp::polyadd(&m, &v));
    assert!(s.contains("1-D"), "{s}");
    let s = e(jnp::polyint(&v, 2, Some(&[1.0, 2.0, 3.0])));
    assert!(s.contains("k must have"), "{s}");
    let s = e(jnp::polyfit(&v, &m, 1, None));
    assert!(s.contains("polyfit"), "{s}");
    let s = e(jnp::nanquantile(&v, &[2.0], None, false));
    assert!(s.contains('2'), "{s}");
    let s = e(jnp::nanvar(&m, 2isize, 0, false));
    assert!(s.contains("axis 2"), "{s}");
    assert!(jnp::array_split(&v, Sections::Equal(0), 0).is_err());
    assert!(jnp::vsplit(&v, Sections::Equal(1)).is_err());
    assert!(jnp::dsplit(&m, Sections::Equal(1)).is_err());
    assert!(jnp::hsplit(&m, Sections::Equal(2)).is_err());
    assert!(jnp::tril_indices_from(&v, 0).is_err());
    assert!(jnp::nonzero(&Array::scalar(1f32), None, None).is_err());
    let empty = Array::from_vec(Vec::<f32>::new(), &[0]);
    assert!(jnp::unique(&empty, Some(2), None).is_err());
    let q = Array::from_vec(vec![0f32; 2 * 3 * 4 * 5], &[2, 3, 4, 5]);
    let kv = Array::from_vec(vec![0f32; 2 * 3 * 3 * 5], &[2, 3, 3, 5]);
    let s = e(nn::dot_product_attention(
        &q, &kv, &kv, None, None, None, false,
    ));
    assert!(s.contains("heads"), "{s}");
    let bad_mask = Array::from_vec(vec![0f32; 4], &[2, 2]);
    let k2 = Array::from_vec(vec![0f32; 2 * 3 * 2 * 5], &[2, 3, 2, 5]);
    let s = e(nn::dot_product_attention(
        &q,
        &k2,
        &k2,
        None,
        Some(&bad_mask),
        None,
        false,
    ));
    assert!(s.contains("mask"), "{s}");
    let big = Array::from_vec(vec![0f32; 8], &[2, 2, 2]);
    assert_eq!(jnp::diag_indices_from(&big).expect("cube").len(), 3);
    assert!(jnp::diag_indices_from(&m).is_err());
    assert!(scipy::linalg::block_diag(&[big]).is_err());
    let s = e(scipy::linalg::expm(&m));
    assert!(s.contains("square") && s.contains("f32[2,3]"), "{s}");
}

#[test]
fn sizes_are_needed_under_jit() {
    let x = Array::from_vec(vec![0f32, 1.0, 0.0, 2.0], &[4]);
    let f = jaxon_trace::jit(|x: Array| {
        jaxon_trace::error::ok_or_raise(jnp::flatnonzero(&x, None, None))
    });
    let e = f
        .call(x.clone())
        .expect_err("data-dependent size")
        .to_string();
    assert!(e.contains("size"), "{e}");
    let g = jaxon_trace::jit(|x: Array| {
        jaxon_trace::error::ok_or_raise(jnp::unique(&x, Some(3), None))
    });
    let u = g.call(x.clone()).expect("static size");
    assert_eq!(u.to_vec::<f32>(), vec![0.0, 1.0, 2.0]);
    let (v, c) = jnp::unique_counts(&x).expect("eager");
    assert_eq!(
        (v.to_vec::<f32>(), c.to_vec::<i32>()),
        (vec![0.0, 1.0, 2.0], vec![2, 1, 1])
    );
    let (_, inv) = jnp::unique_inverse(&x).expect("eager");
    assert_eq!(inv.to_vec::<i32>(), vec![0, 1, 0, 2]);
    assert_eq!(
        jnp::unique_values(&x).expect("eager").to_vec::<f32>(),
        vec![0.0, 1.0, 2.0]
    );
}

#[test]
fn quantiles_with_keepdims_and_no_axis_keep_every_axis() {
    // JAX: jnp.quantile(ones((2, 3)), q, keepdims=True).shape == (1, 1),
    // and (2, 1, 1) for two q's; the same for nanquantile.
    let x = Array::from_vec(vec![1f32, 5.0, 2.0, 4.0, 3.0, 6.0], &[2, 3]);
    let one = jnp::quantile(&x, &[0.5], None, true).expect("quantile");
    assert_eq!(one.shape(), vec![1, 1]);
    assert_eq!(one.to_vec::<f32>(), vec![3.5]);
    let two = jnp::percentile(&x, &[50.0, 0.0], None, true).expect("percentile");
    assert_eq!(two.shape(), vec![2, 1, 1]);
    assert_eq!(two.to_vec::<f32>(), vec![3.5, 1.0]);
    let nan = jnp::nanquantile(&x, &[0.5, 1.0], None, true).expect("nanquantile");
    assert_eq!(nan.shape(), vec![2, 1, 1]);
    assert_eq!(nan.to_vec::<f32>(), vec![3.5, 6.0]);
}
