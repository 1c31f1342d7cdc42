//! `isnan`/`isinf`/`isfinite`, `isclose`/`allclose`, `nan_to_num` and the
//! NaN-skipping reductions, against loops over the elements (NumPy's
//! documented semantics, which JAX follows).

use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::Array;

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

fn mixed() -> Vec<f64> {
    vec![
        1.0, NAN, -INF, 2.5, INF, -0.0, NAN, 3.0, -1.5, 1e-9, NAN, NAN,
    ]
}

#[test]
fn classification() {
    let x = Array::from_vec(mixed(), &[12]);
    let b = |a: Array| a.to_vec::<bool>();
    let v = mixed();
    assert_eq!(
        b(jnp::isnan(&x).unwrap()),
        v.iter().map(|x| x.is_nan()).collect::<Vec<_>>()
    );
    assert_eq!(
        b(jnp::isinf(&x).unwrap()),
        v.iter().map(|x| x.is_infinite()).collect::<Vec<_>>()
    );
    assert_eq!(
        b(jnp::isfinite(&x).unwrap()),
        v.iter().map(|x| x.is_finite()).collect::<Vec<_>>()
    );
    let i = Array::from_vec(vec![1i32, -2, 3], &[3]);
    assert_eq!(b(jnp::isnan(&i).unwrap()), [false; 3]);
    assert_eq!(b(jnp::isinf(&i).unwrap()), [false; 3]);
    assert_eq!(b(jnp::isfinite(&i).unwrap()), [true; 3]);
}

#[test]
fn isclose_follows_numpy() {
    let a = vec![1.0, 1.0, 1e10, NAN, NAN, INF, INF, -INF, 0.0, 1e-9, 100.0];
    let b = vec![
        1.0 + 1e-6,
        1.1,
        1.00001e10,
        NAN,
        1.0,
        INF,
        -INF,
        -INF,
        1e-9,
        0.0,
        100.001,
    ];
    let want = |equal_nan: bool| -> Vec<bool> {
        a.iter()
            .zip(&b)
            .map(|(&x, &y)| {
                if x.is_nan() || y.is_nan() {
                    equal_nan && x.is_nan() && y.is_nan()
                } else if x.is_infinite() || y.is_infinite() {
                    x == y
                } else {
                    (x - y).abs() <= 1e-8 + 1e-5 * y.abs()
                }
            })
            .collect()
    };
    let (xa, xb) = (
        Array::from_vec(a.clone(), &[11]),
        Array::from_vec(b.clone(), &[11]),
    );
    for en in [false, true] {
        let got = jnp::isclose(&xa, &xb, 1e-5, 1e-8, en)
            .unwrap()
            .to_vec::<bool>();
        assert_eq!(got, want(en), "equal_nan={en}");
    }
    let all = |a: &Array, b: &Array| {
        jnp::allclose(a, b, 1e-5, 1e-8, false)
            .unwrap()
            .to_vec::<bool>()[0]
    };
    assert!(!all(&xa, &xb));
    let c = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let d = Array::from_vec(vec![1.0f32, 2.00001, 3.0], &[3]);
    assert!(all(&c, &d));
    // Integers are promoted to floats.
    let i = Array::from_vec(vec![1i32, 2], &[2]);
    assert!(all(&i, &i));
}

#[test]
fn nan_to_num_replaces_nans_and_infinities() {
    let x = Array::from_vec(mixed(), &[12]);
    let got = jnp::nan_to_num(&x, 0.0, None, None)
        .unwrap()
        .to_vec::<f64>();
    let want: Vec<f64> = mixed()
        .iter()
        .map(|&v| {
            if v.is_nan() {
                0.0
            } else if v == INF {
                f64::MAX
            } else if v == -INF {
                -f64::MAX
            } else {
                v
            }
        })
        .collect();
    assert_eq!(got, want);
    let x32 = Array::from_vec(vec![f32::NAN, f32::INFINITY, -f32::INFINITY, 1.5], &[4]);
    let got = jnp::nan_to_num(&x32, -1.0, Some(9.0), None)
        .unwrap()
        .to_vec::<f32>();
    assert_eq!(got, [-1.0, 9.0, -f32::MAX, 1.5]);
}

#[test]
fn nan_reductions_skip_nans() {
    // Rows: mixed values, all NaN, no NaN.
    let v = vec![1.0, NAN, 3.0, -2.0, NAN, NAN, NAN, NAN, 0.5, 4.0, -1.0, 2.0];
    let x = Array::from_vec(v.clone(), &[3, 4]);
    let rows: Vec<Vec<f64>> = v
        .chunks(4)
        .map(|r| r.iter().copied().filter(|x| !x.is_nan()).collect())
        .collect();
    let same = |got: Vec<f64>, want: Vec<f64>| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!(
                g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() < 1e-12,
                "{got:?} vs {want:?}"
            );
        }
    };
    same(
        jnp::nansum(&x, 1usize, false).unwrap().to_vec(),
        rows.iter().map(|r| r.iter().sum()).collect(),
    );
    same(
        jnp::nanprod(&x, 1usize, false).unwrap().to_vec(),
        rows.iter().map(|r| r.iter().product()).collect(),
    );
    same(
        jnp::nanmean(&x, 1usize, false).unwrap().to_vec(),
        rows.iter()
            .map(|r| {
                if r.is_empty() {
                    NAN
                } else {
                    r.iter().sum::<f64>() / r.len() as f64
                }
            })
            .collect(),
    );
    same(
        jnp::nanmax(&x, 1usize, false).unwrap().to_vec(),
        rows.iter()
            .map(|r| r.iter().copied().fold(NAN, f64::max))
            .collect(),
    );
    same(
        jnp::nanmin(&x, 1usize, false).unwrap().to_vec(),
        rows.iter()
            .map(|r| r.iter().copied().fold(NAN, f64::min))
            .collect(),
    );
    // Over everything, with keepdims.
    let all_rows: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    let m = jnp::nanmax(&x, All, true).unwrap();
    assert_eq!(m.shape(), vec![1, 1]);
    assert_eq!(m.to_vec::<f64>(), [4.0]);
    let s = jnp::nansum(&x, All, false).unwrap().to_vec::<f64>()[0];
    assert!((s - all_rows.iter().sum::<f64>()).abs() < 1e-12);
    // Integers have no NaNs.
    let i = Array::from_vec(vec![3i32, -1, 7], &[3]);
    assert_eq!(jnp::nanmax(&i, All, false).unwrap().to_vec::<i32>(), [7]);
    assert_eq!(jnp::nansum(&i, All, false).unwrap().to_vec::<i32>(), [9]);
}
