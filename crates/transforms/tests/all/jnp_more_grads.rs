//! Derivatives and batching of issue 21's `jnp`/`nn`/`scipy` functions:
//! `nn.dot_product_attention`'s gradients against JAX 0.10.2's recorded
//! ones (`crates/trace/tests/data/jnp_more.json`), gradients of `interp`,
//! `nanvar`, `nanquantile`, the polynomial functions, `polyfit` and
//! `block_diag` and `expm` against central differences in f64, and `vmap` of
//! `interp`, `gcd`, `unique` (static size) and attention against a loop
//! of unbatched calls.

use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{nn, scipy, Array};
use jaxon_transforms::{grad, vmap};
use serde_json::Value;

fn decode(v: &Value) -> (Vec<usize>, Vec<f64>) {
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
            Value::Bool(b) => f64::from(u8::from(*b)),
            x => x.as_f64().expect("number"),
        })
        .collect();
    (shape, values)
}

fn array(v: &Value) -> Array {
    let (shape, values) = decode(v);
    let dtype = match v["dtype"].as_str().expect("dtype") {
        "bool" => jaxon_ir::DType::Bool,
        _ => jaxon_ir::DType::F32,
    };
    Array::from_host(jaxon_ir::HostArray::from_f64(dtype, &shape, &values).expect("array"))
}

fn close(got: &[f64], want: &[f64], rtol: f64, atol: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, want {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g - w).abs() > atol + rtol * w.abs() {
            return Err(format!("element {i}: got {g}, want {w}"));
        }
    }
    Ok(())
}

fn f64s(x: &Array) -> Vec<f64> {
    x.try_to_host("test").expect("host").to_f64_vec()
}

#[test]
fn attention_gradients_match_jax() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../trace/tests/data/jnp_more.json"
    ))
    .expect("jnp_more.json");
    let data: Value = serde_json::from_str(&text).expect("json");
    let mut seen = 0;
    for c in data["cases"].as_array().expect("cases") {
        if c["name"] != "dot_product_attention_grad" {
            continue;
        }
        seen += 1;
        let p = &c["params"];
        let args: Vec<Array> = c["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(array)
            .collect();
        let ct = args.last().expect("cotangent").clone();
        let mut rest = args[3..args.len() - 1].iter();
        let bias = p.get("bias").map(|_| rest.next().expect("bias").clone());
        let mask = p.get("mask").map(|_| rest.next().expect("mask").clone());
        let scale = p["scale"].as_f64();
        let causal = p["is_causal"].as_bool().unwrap_or(false);
        let f = |qkv: Vec<Array>| {
            ok_or_raise((|| {
                let o = nn::dot_product_attention(
                    &qkv[0],
                    &qkv[1],
                    &qkv[2],
                    bias.as_ref(),
                    mask.as_ref(),
                    scale,
                    causal,
                )?;
                jnp::sum(&jnp::multiply(&o, &ct)?, All, false)
            })())
        };
        let g = grad(f)(args[..3].to_vec()).expect("grad");
        for (i, (gi, o)) in g
            .iter()
            .zip(c["outs"].as_array().expect("outs"))
            .enumerate()
        {
            let (shape, want) = decode(o);
            assert_eq!(gi.shape(), shape, "{p} d/darg{i}");
            close(&f64s(gi), &want, 1e-4, 1e-5).unwrap_or_else(|e| panic!("{p} d/darg{i}: {e}"));
        }
    }
    assert_eq!(seen, 5);
}

/// `d/dx_i sum(f(x) * w)` by central differences in f64.
fn central(f: &dyn Fn(&Array) -> Array, x: &[f64], shape: &[usize]) -> Vec<f64> {
    let h = 1e-6;
    (0..x.len())
        .map(|i| {
            let mut p = x.to_vec();
            let mut m = x.to_vec();
            p[i] += h;
            m[i] -= h;
            let s = |v: Vec<f64>| f64s(&f(&Array::from_vec(v, shape))).iter().sum::<f64>();
            (s(p) - s(m)) / (2.0 * h)
        })
        .collect()
}

/// Deterministic pseudo-random values in (-2, 2).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
        })
        .collect()
}

type Check = (&'static str, Vec<usize>, Box<dyn Fn(&Array) -> Array>);

#[test]
fn gradients_match_central_differences() {
    let v = |n: usize, seed: u64| Array::from_vec(values(n, seed), &[n]);
    let xp = Array::from_vec(vec![-1.5, -0.7, 0.1, 0.4, 1.3, 1.9], &[6]);
    let fp = v(6, 7);
    let weights = v(5, 3);
    let xq = Array::from_vec(vec![-1.2, -0.3, 0.25, 0.9, 1.6], &[5]);
    let w2 = v(4, 5);
    let checks: Vec<Check> = vec![
        ("interp(x, xp, fp) w.r.t. x", vec![5], {
            let (xp, fp, w) = (xp.clone(), fp.clone(), weights.clone());
            Box::new(move |x: &Array| {
                let y = jnp::interp(x, &xp, &fp, None, None, None).unwrap();
                jnp::multiply(&y, &w).unwrap()
            })
        }),
        ("interp(xq, xp, fp) w.r.t. fp", vec![6], {
            let (xp, xq, w) = (xp.clone(), xq.clone(), weights.clone());
            Box::new(move |fp: &Array| {
                let y = jnp::interp(&xq, &xp, fp, Some(-1.0), Some(2.0), Some(4.0)).unwrap();
                jnp::multiply(&y, &w).unwrap()
            })
        }),
        ("nanvar(x, axis=1, ddof=1)", vec![3, 4], {
            let w = Array::from_vec(vec![0.3, -1.1, 0.7], &[3]);
            Box::new(move |x: &Array| {
                jnp::multiply(&jnp::nanvar(x, 1isize, 1, false).unwrap(), &w).unwrap()
            })
        }),
        (
            "nanstd(x)",
            vec![3, 4],
            Box::new(|x: &Array| jnp::nanstd(x, All, 0, false).unwrap()),
        ),
        ("nanquantile(x, [0.3, 0.8], axis=0)", vec![5, 2], {
            Box::new(move |x: &Array| {
                let q = jnp::nanquantile(x, &[0.3, 0.8], Some(0), false).unwrap();
                jnp::multiply(&q, &Array::from_vec(vec![1.0, -0.5, 2.0, 0.25], &[2, 2])).unwrap()
            })
        }),
        ("polymul(p, [1, -2, 0.5])", vec![4], {
            let w = v(6, 13);
            Box::new(move |p: &Array| {
                let q = Array::from_vec(vec![1.0, -2.0, 0.5], &[3]);
                jnp::multiply(&jnp::polymul(p, &q).unwrap(), &w).unwrap()
            })
        }),
        ("polyint(polyder(p, 1), 2, k=[1, 2])", vec![4], {
            let w = v(5, 17);
            Box::new(move |p: &Array| {
                let d = jnp::polyder(p, 1).unwrap();
                jnp::multiply(&jnp::polyint(&d, 2, Some(&[1.0, 2.0])).unwrap(), &w).unwrap()
            })
        }),
        ("poly(roots)", vec![3], {
            let w = w2.clone();
            Box::new(move |r: &Array| jnp::multiply(&jnp::poly(r).unwrap(), &w).unwrap())
        }),
        ("polyfit(x, y, 3) w.r.t. y", vec![9], {
            let xs = Array::from_vec((0..9).map(|i| i as f64 * 0.3 - 1.0).collect(), &[9]);
            let w = w2.clone();
            Box::new(move |y: &Array| {
                jnp::multiply(&jnp::polyfit(&xs, y, 3, None).unwrap(), &w).unwrap()
            })
        }),
        ("block_diag(a, b)", vec![2, 2], {
            let w = Array::from_vec(values(6 * 5, 19), &[6, 5]);
            Box::new(move |a: &Array| {
                let b = jnp::multiply(a, &Array::scalar(2.0f64)).unwrap();
                let b = jnp::concatenate(&[b.clone(), b], 0).unwrap();
                let b = jnp::concatenate(&[b, Array::from_vec(vec![1.0; 4], &[4, 1])], 1).unwrap();
                let m = scipy::linalg::block_diag(&[a.clone(), b]).unwrap();
                jnp::multiply(&m, &w).unwrap()
            })
        }),
        ("expm(A) (Padé 13 with squaring)", vec![3, 3], {
            let w = Array::from_vec(values(9, 29), &[3, 3]);
            Box::new(move |a: &Array| jnp::multiply(&scipy::linalg::expm(a).unwrap(), &w).unwrap())
        }),
        ("expm(A / 100) (Padé 3)", vec![3, 3], {
            let w = Array::from_vec(values(9, 31), &[3, 3]);
            Box::new(move |a: &Array| {
                let small = jnp::multiply(a, &Array::scalar(0.01f64)).unwrap();
                jnp::multiply(&scipy::linalg::expm(&small).unwrap(), &w).unwrap()
            })
        }),
    ];
    for (name, shape, f) in &checks {
        let n: usize = shape.iter().product();
        let x0 = values(n, n as u64 + 23);
        let x = Array::from_vec(x0.clone(), shape);
        let g = grad(|x: Array| ok_or_raise(jnp::sum(&f(&x), All, false)))(x).expect(name);
        let want = central(f.as_ref(), &x0, shape);
        close(&f64s(&g), &want, 1e-6, 1e-6).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn vmap_matches_a_loop() {
    // interp over a batch of query rows.
    let xp = Array::from_vec(vec![-1.0f32, 0.0, 0.5, 2.0], &[4]);
    let fp = Array::from_vec(vec![3.0f32, -1.0, 0.0, 2.5], &[4]);
    let xs = Array::from_vec(values(12, 1).iter().map(|&v| v as f32).collect(), &[3, 4]);
    let batched = vmap(|x: Array| ok_or_raise(jnp::interp(&x, &xp, &fp, None, None, None)))
        .call(xs.clone())
        .expect("vmap interp");
    let rows = xs.to_vec::<f32>();
    let mut looped = Vec::new();
    for r in rows.chunks(4) {
        let x = Array::from_vec(r.to_vec(), &[4]);
        looped.extend(
            jnp::interp(&x, &xp, &fp, None, None, None)
                .unwrap()
                .to_vec::<f32>(),
        );
    }
    assert_eq!(batched.to_vec::<f32>(), looped);
    // gcd's while loop under vmap.
    let a = Array::from_vec(vec![12i32, 7, 0, 100, 18, 9], &[3, 2]);
    let b = Array::from_vec(vec![18i32, 21, 5, 75, 0, 6], &[3, 2]);
    let batched = vmap(|ab: (Array, Array)| ok_or_raise(jnp::gcd(&ab.0, &ab.1)))
        .call((a.clone(), b.clone()))
        .expect("vmap gcd");
    assert_eq!(
        batched.to_vec::<i32>(),
        jnp::gcd(&a, &b).unwrap().to_vec::<i32>()
    );
    assert_eq!(batched.to_vec::<i32>(), vec![6, 7, 5, 25, 18, 3]);
    // unique with a static size, row by row.
    let u = Array::from_vec(vec![3i32, 1, 3, 2, 5, 5, 5, 1], &[2, 4]);
    let batched = vmap(|x: Array| {
        let r = ok_or_raise(jnp::unique_all(&x, Some(4), Some(&Array::scalar(-1i32))));
        (r.values, r.counts)
    })
    .call(u)
    .expect("vmap unique");
    assert_eq!(batched.0.to_vec::<i32>(), vec![1, 2, 3, -1, 1, 5, -1, -1]);
    assert_eq!(batched.1.to_vec::<i32>(), vec![1, 1, 2, 0, 1, 3, 0, 0]);
    // attention over a leading batch of [T, N, H] problems.
    let q = Array::from_vec(
        values(2 * 3 * 2 * 4, 2).iter().map(|&v| v as f32).collect(),
        &[2, 3, 2, 4],
    );
    let k = Array::from_vec(
        values(2 * 5 * 4, 3).iter().map(|&v| v as f32).collect(),
        &[2, 5, 1, 4],
    );
    let batched = vmap(|qk: (Array, Array)| {
        ok_or_raise(nn::dot_product_attention(
            &qk.0, &qk.1, &qk.1, None, None, None, true,
        ))
    })
    .call((q.clone(), k.clone()))
    .expect("vmap attention");
    let whole = nn::dot_product_attention(&q, &k, &k, None, None, None, true).unwrap();
    close(&f64s(&batched), &f64s(&whole), 1e-6, 1e-6).expect("vmap attention");
}

#[test]
fn jacobian_is_jacrev() {
    let x = Array::from_vec(vec![0.3f64, -1.2, 2.0], &[3]);
    let f = |x: Array| ok_or_raise(jnp::polymul(&x, &x));
    let j = jaxon_transforms::jacobian(f)(x.clone()).expect("jacobian");
    let r = jaxon_transforms::jacrev(f)(x).expect("jacrev");
    let (a, b) = (j.block(0, 0).expect("block"), r.block(0, 0).expect("block"));
    assert_eq!(a.shape(), vec![5, 3]);
    assert_eq!(f64s(a), f64s(b));
    // d(p*p)/dp_0 = 2 p shifted: column 0 is 2 * [p0, p1, p2, 0, 0].
    let col0: Vec<f64> = f64s(a).chunks(3).map(|row| row[0]).collect();
    assert_eq!(col0, vec![0.6, -2.4, 4.0, 0.0, 0.0]);
}
