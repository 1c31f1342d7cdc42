//! The generic `reduce_window` through `lax::reduce_window_with`: values
//! against a direct loop (argmax pooling, with padding and strides),
//! XLA's padding semantics (padding reads the init value), jvp against
//! central differences in f64 (reverse mode refused, as in JAX), vmap against a loop of calls, and errors.

use jaxon_trace::lax::{self, Padding};
use jaxon_trace::numpy::All;
use jaxon_trace::Array;
use jaxon_transforms::{grad, jvp, vmap};

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
        })
        .collect()
}

/// Max and first argmax over windows of 3 with stride 2 along the last
/// axis, padded by one on each side, of `x` and the indices `idx`.
fn argmax_pool(x: &Array, idx: &Array) -> Vec<Array> {
    lax::reduce_window_with(
        &[x.clone(), idx.clone()],
        &[Array::scalar(f64::NEG_INFINITY), Array::scalar(-1i32)],
        |acc, el| {
            let keep = lax::ge(&acc[0], &el[0])?;
            Ok(vec![
                lax::select_n(&keep, &[el[0].clone(), acc[0].clone()])?,
                lax::select_n(&keep, &[el[1].clone(), acc[1].clone()])?,
            ])
        },
        &[1, 3],
        &[1, 2],
        Padding::Explicit(vec![(0, 0), (1, 1)]),
        None,
        None,
    )
    .unwrap()
}

#[test]
fn argmax_pooling_matches_a_loop() {
    let (rows, cols) = (3, 8);
    let xv = rand(rows * cols, 7);
    let iv: Vec<i32> = (0..rows * cols).map(|k| (k % cols) as i32).collect();
    let out = argmax_pool(
        &Array::from_vec(xv.clone(), &[rows, cols]),
        &Array::from_vec(iv, &[rows, cols]),
    );
    let n_out = (cols + 2 - 3) / 2 + 1;
    assert_eq!(out[0].shape(), vec![rows, n_out]);
    let (m, a) = (out[0].to_vec::<f64>(), out[1].to_vec::<i32>());
    for r in 0..rows {
        for o in 0..n_out {
            let (mut best, mut arg) = (f64::NEG_INFINITY, -1);
            for k in 0..3 {
                let c = (o * 2 + k) as i64 - 1;
                let v = if (0..cols as i64).contains(&c) {
                    xv[r * cols + c as usize]
                } else {
                    f64::NEG_INFINITY
                };
                if v > best {
                    (best, arg) = (v, c as i32);
                }
            }
            assert_eq!(m[r * n_out + o], best, "max at ({r}, {o})");
            assert_eq!(a[r * n_out + o], arg, "argmax at ({r}, {o})");
        }
    }
}

#[test]
fn padding_reads_the_init_value() {
    let x = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let out = lax::reduce_window_with(
        &[x],
        &[Array::scalar(1.0f64)],
        |acc, el| Ok(vec![lax::add(&acc[0], &el[0])?]),
        &[3],
        &[1],
        Padding::Explicit(vec![(1, 1)]),
        None,
        None,
    )
    .unwrap();
    // init + (pad=init) + 1 + 2, init + 1 + 2 + 3, init + 2 + 3 + (pad=init).
    assert_eq!(out[0].to_vec::<f64>(), vec![5.0, 7.0, 7.0]);
}

/// Sum of squares over dilated windows: `acc + x * x`, base-dilated.
fn sum_sq(x: &Array) -> Array {
    let out = lax::reduce_window_with(
        std::slice::from_ref(x),
        &[Array::scalar(0.0f64)],
        |acc, el| Ok(vec![lax::add(&acc[0], &lax::mul(&el[0], &el[0])?)?]),
        &[2, 3],
        &[1, 2],
        Padding::Explicit(vec![(0, 1), (1, 0)]),
        Some(&[1, 2]),
        Some(&[1, 1]),
    )
    .unwrap();
    out[0].clone()
}

#[test]
fn jvp_matches_central_differences_and_grad_is_refused_as_in_jax() {
    let shape = [3, 5];
    let xv = rand(15, 11);
    let tv = rand(15, 12);
    let (y, dy) = jvp(
        |x: Array| sum_sq(&x),
        Array::from_vec(xv.clone(), &shape),
        Array::from_vec(tv.clone(), &shape),
    )
    .unwrap();
    let h = 1e-6;
    let at = |d: f64| {
        let v: Vec<f64> = xv.iter().zip(&tv).map(|(x, t)| x + d * t).collect();
        sum_sq(&Array::from_vec(v, &shape)).to_vec::<f64>()
    };
    let (hi, lo) = (at(h), at(-h));
    assert_eq!(y.to_vec::<f64>(), at(0.0));
    for (k, dy) in dy.to_vec::<f64>().iter().enumerate() {
        let fd = (hi[k] - lo[k]) / (2.0 * h);
        assert!(
            (dy - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "dy[{k}]: {dy} vs {fd}"
        );
    }
    let e = grad(|x: Array| sum_sq(&x).sum(All))(Array::from_vec(xv, &shape)).unwrap_err();
    assert!(e.to_string().contains("reverse-mode"), "{e}");
}

#[test]
fn vmap_matches_a_loop() {
    let (b, rows, cols) = (4, 2, 6);
    let xv = rand(b * rows * cols, 3);
    let idx = Array::from_vec(
        (0..rows * cols).map(|k| (k % cols) as i32).collect(),
        &[rows, cols],
    );
    let batched = vmap(|x: Array| argmax_pool(&x, &idx))
        .call(Array::from_vec(xv.clone(), &[b, rows, cols]))
        .unwrap();
    let per = rows * ((cols + 2 - 3) / 2 + 1);
    for i in 0..b {
        let one = argmax_pool(
            &Array::from_vec(
                xv[i * rows * cols..(i + 1) * rows * cols].to_vec(),
                &[rows, cols],
            ),
            &idx,
        );
        assert_eq!(
            batched[0].to_vec::<f64>()[i * per..(i + 1) * per],
            one[0].to_vec::<f64>()[..]
        );
        assert_eq!(
            batched[1].to_vec::<i32>()[i * per..(i + 1) * per],
            one[1].to_vec::<i32>()[..]
        );
    }
}

#[test]
fn bad_arguments_are_errors() {
    let x = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let add = |acc: &[Array], el: &[Array]| Ok(vec![lax::add(&acc[0], &el[0])?]);
    let two_inits = lax::reduce_window_with(
        std::slice::from_ref(&x),
        &[Array::scalar(0.0f64), Array::scalar(0.0f64)],
        add,
        &[1],
        &[1],
        Padding::Valid,
        None,
        None,
    );
    assert!(format!("{}", two_inits.unwrap_err()).contains("1 operands but 2 init values"));
    let wrong_dtype = lax::reduce_window_with(
        std::slice::from_ref(&x),
        &[Array::scalar(0i32)],
        add,
        &[1],
        &[1],
        Padding::Valid,
        None,
        None,
    );
    assert!(wrong_dtype.is_err());
    let bad_rank = lax::reduce_window_with(
        std::slice::from_ref(&x),
        &[Array::scalar(0.0f64)],
        add,
        &[1, 1],
        &[1],
        Padding::Valid,
        None,
        None,
    );
    assert!(format!("{}", bad_rank.unwrap_err()).contains("rank"));
}
