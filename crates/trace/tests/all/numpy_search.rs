//! `round` (with decimals), `searchsorted`, `repeat` and `bincount` against
//! loops over the elements.

use crate::common;

use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;

fn round_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

#[test]
fn round_scales_and_rounds_halves_to_even() {
    let mut xs = common::uniform(200, 1, 50.0);
    xs.extend([0.5, 1.5, 2.5, -0.5, -2.5, 0.125, 0.375]);
    let x = Array::from_vec(xs.clone(), &[xs.len()]);
    for d in [0, 2, -1] {
        let got = jnp::round(&x, d).unwrap().to_vec::<f64>();
        let f = 10f64.powi(d);
        for (v, g) in xs.iter().zip(&got) {
            let w = round_even(v * f) / f;
            assert_eq!(*g, w, "round({v}, {d})");
        }
    }
    let i = Array::from_vec(vec![3i32, -7], &[2]);
    assert_eq!(jnp::round(&i, 2).unwrap().to_vec::<i32>(), [3, -7]);
    assert!(jnp::round(&i, -1).is_err());
}

#[test]
fn searchsorted_counts_like_a_binary_search() {
    let mut a = common::uniform(40, 2, 10.0);
    a.extend([1.0, 1.0, 1.0]);
    a.sort_by(f64::total_cmp);
    let mut v = common::uniform(30, 3, 12.0);
    v.extend([1.0, a[0], a[42], f64::NAN, f64::INFINITY]);
    let (aa, va) = (
        Array::from_vec(a.clone(), &[43]),
        Array::from_vec(v.clone(), &[5, 7]),
    );
    for side in ["left", "right"] {
        let got = jnp::searchsorted(&aa, &va, side).unwrap();
        assert_eq!(got.shape(), vec![5, 7]);
        let want: Vec<i32> = v
            .iter()
            .map(|q| {
                if q.is_nan() {
                    return 43;
                }
                a.iter()
                    .filter(|x| if side == "left" { *x < q } else { *x <= q })
                    .count() as i32
            })
            .collect();
        assert_eq!(got.to_vec::<i32>(), want, "side={side}");
    }
    // NaNs in `a` sort last.
    let an = Array::from_vec(vec![1.0f32, 2.0, f32::NAN], &[3]);
    let q = Array::from_vec(vec![f32::NAN, 5.0], &[2]);
    assert_eq!(
        jnp::searchsorted(&an, &q, "left").unwrap().to_vec::<i32>(),
        [2, 2]
    );
    assert_eq!(
        jnp::searchsorted(&an, &q, "right").unwrap().to_vec::<i32>(),
        [3, 2]
    );
    assert!(jnp::searchsorted(&an, &q, "middle").is_err());
    assert!(jnp::searchsorted(&Array::from_vec(vec![1.0f32; 4], &[2, 2]), &q, "left").is_err());
}

#[test]
fn repeat_and_bincount() {
    let x = Array::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]);
    let r = jnp::repeat(&x, &[2], Some(0)).unwrap();
    assert_eq!(r.shape(), vec![4, 3]);
    assert_eq!(r.to_vec::<i32>(), [0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
    let r = jnp::repeat(&x, &[1, 0, 3], Some(-1)).unwrap();
    assert_eq!(r.shape(), vec![2, 4]);
    assert_eq!(r.to_vec::<i32>(), [0, 2, 2, 2, 3, 5, 5, 5]);
    let r = jnp::repeat(&x, &[2], None).unwrap();
    assert_eq!(r.to_vec::<i32>(), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    assert!(jnp::repeat(&x, &[1, 2], Some(1)).is_err());

    let xs: Vec<i32> = common::uniform(50, 4, 1.0)
        .iter()
        .map(|v| ((v + 1.0) * 4.0) as i32 - 1)
        .collect();
    let w = common::uniform(50, 5, 1.0);
    let x = Array::from_vec(xs.clone(), &[50]);
    let got = jnp::bincount(&x, None, 6).unwrap().to_vec::<i32>();
    let want: Vec<i32> = (0..6)
        .map(|b| xs.iter().filter(|&&v| v == b).count() as i32)
        .collect();
    assert_eq!(got, want);
    let got = jnp::bincount(&x, Some(&Array::from_vec(w.clone(), &[50])), 6)
        .unwrap()
        .to_vec::<f64>();
    for (b, g) in got.iter().enumerate() {
        let want: f64 = xs
            .iter()
            .zip(&w)
            .filter(|(v, _)| **v == b as i32)
            .map(|(_, w)| w)
            .sum();
        assert!((g - want).abs() < 1e-12, "bin {b}: {g} vs {want}");
    }
    assert!(jnp::bincount(&Array::from_vec(vec![1.0f32], &[1]), None, 2).is_err());
}
