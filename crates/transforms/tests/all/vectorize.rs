//! `jnp.vectorize` against a loop of unbatched calls on random inputs:
//! with a gufunc signature (a dot product, a matrix-vector product whose
//! loop axes broadcast, two outputs), without one (elementwise with
//! broadcasting), under `jit` and `grad`, and its errors.

use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{jit, lax, Array};
use jaxon_transforms::grad;
use jaxon_transforms::vectorize::vectorize;

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            2.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 1.0
        })
        .collect()
}

fn arr(shape: &[usize], seed: u64) -> (Array, Vec<f64>) {
    let v = rand(shape.iter().product(), seed);
    (Array::from_vec(v.clone(), shape), v)
}

fn close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn matvec_over_broadcast_loop_axes_equals_a_loop() {
    // a: [2, 1, 3, 4] (loop [2, 1], core (m, n) = (3, 4)); v: [5, 4] (loop
    // [5], core (n)). Loop axes broadcast to [2, 5].
    let (a, av) = arr(&[2, 1, 3, 4], 1);
    let (v, vv) = arr(&[5, 4], 2);
    let calls = std::cell::Cell::new(0);
    let mv = vectorize(
        |xs: &[Array]| {
            calls.set(calls.get() + 1);
            assert_eq!(xs[0].shape(), [3, 4], "f sees core shapes only");
            Ok(vec![jnp::matmul(&xs[0], &xs[1])?])
        },
        Some("(m,n),(n)->(m)"),
    )
    .unwrap();
    let y = mv.call(&[a, v]).unwrap();
    assert_eq!(y[0].shape(), [2, 5, 3]);
    assert_eq!(calls.get(), 1, "traced once under nested vmaps, not looped");
    let mut want = Vec::new();
    for i in 0..2 {
        for j in 0..5 {
            for m in 0..3 {
                want.push((0..4).map(|n| av[i * 12 + m * 4 + n] * vv[j * 4 + n]).sum());
            }
        }
    }
    close(&y[0].to_vec::<f64>(), &want, "matvec");
}

#[test]
fn two_outputs_and_an_unmapped_size_one_axis() {
    // x: [1, 4, 3] and y: [3]: the leading size-1 loop axis maps nothing and
    // comes back as size 1 on both outputs.
    let (x, xv) = arr(&[1, 4, 3], 3);
    let (y, yv) = arr(&[3], 4);
    let f = vectorize(
        |xs: &[Array]| {
            let p = jnp::multiply(&xs[0], &xs[1])?;
            Ok(vec![
                jnp::sum(&p, All, false)?,
                jnp::max(&xs[0], All, false)?,
            ])
        },
        Some("(k),(k)->(),()"),
    )
    .unwrap();
    let out = f.call(&[x, y]).unwrap();
    assert_eq!(out[0].shape(), [1, 4]);
    assert_eq!(out[1].shape(), [1, 4]);
    let dots: Vec<f64> = (0..4)
        .map(|r| (0..3).map(|k| xv[r * 3 + k] * yv[k]).sum())
        .collect();
    let maxes: Vec<f64> = (0..4)
        .map(|r| (0..3).map(|k| xv[r * 3 + k]).fold(f64::MIN, f64::max))
        .collect();
    close(&out[0].to_vec::<f64>(), &dots, "dot");
    close(&out[1].to_vec::<f64>(), &maxes, "max");
}

#[test]
fn without_a_signature_it_is_elementwise_with_broadcasting() {
    let (x, xv) = arr(&[3, 1], 5);
    let (y, yv) = arr(&[4], 6);
    let f = vectorize(
        |xs: &[Array]| {
            assert_eq!(xs[0].ndim(), 0);
            Ok(vec![lax::mul(&lax::sin(&xs[0])?, &xs[1])?])
        },
        None,
    )
    .unwrap();
    let out = f.call(&[x, y]).unwrap();
    assert_eq!(out[0].shape(), [3, 4]);
    let want: Vec<f64> = (0..12).map(|i| xv[i / 4].sin() * yv[i % 4]).collect();
    close(&out[0].to_vec::<f64>(), &want, "elementwise");
}

#[test]
fn under_jit_and_grad() {
    let (a, av) = arr(&[4, 3], 7);
    let norm = || {
        vectorize(
            |xs: &[Array]| Ok(vec![jnp::sum(&lax::mul(&xs[0], &xs[0])?, All, false)?]),
            Some("(n)->()"),
        )
        .unwrap()
    };
    let f = jit(move |x: Array| norm().call(&[x]).unwrap().remove(0));
    let want: Vec<f64> = (0..4)
        .map(|r| (0..3).map(|k| av[r * 3 + k].powi(2)).sum())
        .collect();
    close(&f.call(a.clone()).unwrap().to_vec::<f64>(), &want, "jit");
    let g = grad(move |x: Array| norm().call(&[x]).unwrap().remove(0).sum(All))(a).unwrap();
    let want: Vec<f64> = av.iter().map(|x| 2.0 * x).collect();
    close(&g.to_vec::<f64>(), &want, "grad");
}

#[test]
fn errors_name_the_problem() {
    for bad in ["(n)", "(n,)->(", "(n)(m)->()"] {
        assert!(
            vectorize(|xs: &[Array]| Ok(xs.to_vec()), Some(bad)).is_err(),
            "{bad}"
        );
    }
    let f = vectorize(|xs: &[Array]| Ok(vec![xs[0].clone()]), Some("(n),(n)->(n)")).unwrap();
    let (a, _) = arr(&[3], 8);
    let (b, _) = arr(&[4], 9);
    let err = f.call(&[a.clone(), b]).unwrap_err().to_string();
    assert!(
        err.contains("\"n\"") && err.contains('3') && err.contains('4'),
        "{err}"
    );
    let err = f.call(std::slice::from_ref(&a)).unwrap_err().to_string();
    assert!(err.contains("2 inputs"), "{err}");
    let (s, _) = arr(&[], 10);
    assert!(
        f.call(&[s, a.clone()]).is_err(),
        "fewer axes than the core axes"
    );
    let wrong_out = vectorize(|xs: &[Array]| Ok(vec![xs[0].clone()]), Some("(n)->()")).unwrap();
    let err = wrong_out.call(&[a]).unwrap_err().to_string();
    assert!(err.contains("output 0"), "{err}");
    let (p, _) = arr(&[2, 3], 11);
    let (q, _) = arr(&[4, 3], 12);
    assert!(
        vectorize(|xs: &[Array]| Ok(xs.to_vec()), Some("(n),(n)->(n),(n)"))
            .unwrap()
            .call(&[p, q])
            .is_err()
    );
}
