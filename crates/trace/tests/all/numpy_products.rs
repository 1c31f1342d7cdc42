//! `outer`, `kron`, `tensordot`, `polyval`, `diff` and `meshgrid` against
//! loops over the elements on random inputs.

use crate::common;

use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn outer_and_kron() {
    let (a, b) = (common::uniform(6, 1, 2.0), common::uniform(4, 2, 2.0));
    let o = jnp::outer(
        &Array::from_vec(a.clone(), &[2, 3]),
        &Array::from_vec(b.clone(), &[4]),
    )
    .unwrap();
    assert_eq!(o.shape(), vec![6, 4]);
    let want: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| x * y))
        .collect();
    close(&o.to_vec(), &want);

    // kron of [2,3] and [4,2] is [8,6]: out[i*4+k, j*2+l] = a[i,j] b[k,l].
    let (a, b) = (common::uniform(6, 3, 2.0), common::uniform(8, 4, 2.0));
    let k = jnp::kron(
        &Array::from_vec(a.clone(), &[2, 3]),
        &Array::from_vec(b.clone(), &[4, 2]),
    )
    .unwrap();
    assert_eq!(k.shape(), vec![8, 6]);
    let mut want = vec![0.0; 48];
    for i in 0..2 {
        for j in 0..3 {
            for p in 0..4 {
                for q in 0..2 {
                    want[(i * 4 + p) * 6 + j * 2 + q] = a[i * 3 + j] * b[p * 2 + q];
                }
            }
        }
    }
    close(&k.to_vec(), &want);
    // Ranks differ: the vector gets a leading 1.
    let k = jnp::kron(
        &Array::from_vec(vec![1.0, 2.0], &[2]),
        &Array::from_vec(vec![1.0, 10.0, 100.0, 1000.0], &[2, 2]),
    )
    .unwrap();
    assert_eq!(k.shape(), vec![2, 4]);
    close(
        &k.to_vec(),
        &[1.0, 10.0, 2.0, 20.0, 100.0, 1000.0, 200.0, 2000.0],
    );
}

#[test]
fn tensordot_contracts_the_given_axes() {
    let (a, b) = (
        common::uniform(2 * 3 * 4, 5, 2.0),
        common::uniform(4 * 3 * 5, 6, 2.0),
    );
    let t = jnp::tensordot(
        &Array::from_vec(a.clone(), &[2, 3, 4]),
        &Array::from_vec(b.clone(), &[4, 3, 5]),
        (&[1, -1], &[1, 0]),
    )
    .unwrap();
    assert_eq!(t.shape(), vec![2, 5]);
    let mut want = vec![0.0; 10];
    for i in 0..2 {
        for m in 0..5 {
            for j in 0..3 {
                for k in 0..4 {
                    want[i * 5 + m] += a[(i * 3 + j) * 4 + k] * b[(k * 3 + j) * 5 + m];
                }
            }
        }
    }
    close(&t.to_vec(), &want);
    let e = jnp::tensordot(
        &Array::from_vec(a.clone(), &[2, 3, 4]),
        &Array::from_vec(b, &[4, 3, 5]),
        (&[0], &[0]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("f64[2,3,4]") && e.contains("f64[4,3,5]"), "{e}");
}

#[test]
fn polyval_is_horner() {
    let (p, x) = (common::uniform(5, 7, 2.0), common::uniform(9, 8, 2.0));
    let y = jnp::polyval(
        &Array::from_vec(p.clone(), &[5]),
        &Array::from_vec(x.clone(), &[3, 3]),
    )
    .unwrap();
    assert_eq!(y.shape(), vec![3, 3]);
    let want: Vec<f64> = x
        .iter()
        .map(|&x| (0..5).map(|k| p[k] * x.powi(4 - k as i32)).sum())
        .collect();
    close(&y.to_vec(), &want);
    assert!(jnp::polyval(&Array::from_vec(p, &[5, 1]), &Array::scalar(1.0)).is_err());
}

#[test]
fn diff_and_meshgrid() {
    let a = common::uniform(3 * 5, 9, 2.0);
    let x = Array::from_vec(a.clone(), &[3, 5]);
    let d = jnp::diff(&x, 2, -1).unwrap();
    assert_eq!(d.shape(), vec![3, 3]);
    let mut want = Vec::new();
    for r in 0..3 {
        for c in 0..3 {
            let v = &a[r * 5..];
            want.push(v[c + 2] - 2.0 * v[c + 1] + v[c]);
        }
    }
    close(&d.to_vec(), &want);
    let d0 = jnp::diff(&x, 1, 0).unwrap();
    assert_eq!(d0.shape(), vec![2, 5]);
    let b = jnp::diff(
        &Array::from_vec(vec![true, true, false, false, true], &[5]),
        1,
        0,
    )
    .unwrap();
    assert_eq!(b.to_vec::<bool>(), [false, true, false, true]);

    let (gx, gy) = (
        Array::from_vec(vec![1.0, 2.0, 3.0], &[3]),
        Array::from_vec(vec![10.0, 20.0], &[2]),
    );
    let xy = jnp::meshgrid(&[gx.clone(), gy.clone()], "xy").unwrap();
    assert_eq!(xy[0].shape(), vec![2, 3]);
    assert_eq!(xy[0].to_vec::<f64>(), [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    assert_eq!(xy[1].to_vec::<f64>(), [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]);
    let ij = jnp::meshgrid(&[gx, gy], "ij").unwrap();
    assert_eq!(ij[0].shape(), vec![3, 2]);
    assert_eq!(ij[0].to_vec::<f64>(), [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    assert_eq!(ij[1].to_vec::<f64>(), [10.0, 20.0, 10.0, 20.0, 10.0, 20.0]);
    assert!(jnp::meshgrid(&[], "xz").is_err());
}
