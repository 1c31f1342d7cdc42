//! Indexing: boolean masks (concrete only, like JAX), `.at` updates with
//! masks, randomized integer-array gathers/scatters against a plain-Rust
//! oracle, and the errors bad indices give.

use jaxon_trace::index::{index, Idx};
use jaxon_trace::{idx, jit, make_jaxpr, Array, Error};

fn f(shape: &[usize], seed: u64) -> Array {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(3);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    Array::from_vec(v, shape)
}

#[test]
fn concrete_mask_selects_eagerly_and_when_captured_by_jit() {
    let x = f(&[3, 4], 1);
    let xs = x.to_vec::<f32>();
    let bits: Vec<bool> = xs.iter().map(|&v| v > 0.0).collect();
    let mask = Array::from_vec(bits.clone(), &[3, 4]);
    let want: Vec<f32> = xs.iter().copied().filter(|&v| v > 0.0).collect();
    assert_eq!(x.index(&mask).to_vec::<f32>(), want);
    let m = mask.clone();
    let staged = jit(move |x: Array| x.index(&m)).call(x.clone()).unwrap();
    assert_eq!(staged.to_vec::<f32>(), want);
    // A 1-D mask on the first axis keeps whole rows.
    let rows = Array::from_vec(vec![true, false, true], &[3]);
    let want_rows: Vec<f32> = xs[..4].iter().chain(&xs[8..]).copied().collect();
    assert_eq!(x.index(&rows).to_vec::<f32>(), want_rows);
    assert_eq!(x.index(&rows).shape(), vec![2, 4]);
}

#[test]
fn mask_update_sets_the_selected_elements() {
    let x = f(&[2, 5], 2);
    let xs = x.to_vec::<f32>();
    let mask = Array::from_vec(xs.iter().map(|&v| v < 0.0).collect::<Vec<_>>(), &[2, 5]);
    let want: Vec<f32> = xs.iter().map(|&v| if v < 0.0 { 0.0 } else { v }).collect();
    assert_eq!(x.at(&mask).set(0.0).to_vec::<f32>(), want);
    let m = mask.clone();
    let staged = jit(move |x: Array| x.at(&m).mul(2.0))
        .call(x.clone())
        .unwrap();
    let doubled: Vec<f32> = xs
        .iter()
        .map(|&v| if v < 0.0 { v * 2.0 } else { v })
        .collect();
    assert_eq!(staged.to_vec::<f32>(), doubled);
}

#[test]
fn traced_mask_is_a_non_concrete_boolean_index_error() {
    let x = f(&[4], 3);
    let m = Array::from_vec(vec![true, false, false, true], &[4]);
    let err = jit(|(x, m): (Array, Array)| x.index(&m))
        .call((x, m))
        .unwrap_err();
    match err {
        Error::Concretization { op, .. } => {
            assert!(op.contains("NonConcreteBooleanIndexError"), "{op}")
        }
        other => panic!("expected a concretization error, got {other:?}"),
    }
}

#[test]
fn bad_indices_are_errors() {
    let x = f(&[3, 4], 4);
    let cases: Vec<Vec<Idx>> = vec![
        idx![3],
        idx![-4],
        idx![0, 0, 0],
        vec![Idx::Ellipsis, Idx::I(0), Idx::Ellipsis],
        vec![Idx::Array(f(&[2], 5))],
        idx![..;0],
    ];
    for c in cases {
        assert!(index(&x, &c).is_err(), "{c:?} should fail");
    }
    // Through the infallible method, the error surfaces from the entry point.
    assert!(make_jaxpr(|x: Array| x.index(7))(x).is_err());
}

/// Deterministic small integer stream.
struct Ints(u64);

impl Ints {
    fn next(&mut self, n: i64) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as i64
    }
}

#[test]
fn random_array_gathers_and_scatter_adds_match_a_loop_oracle() {
    // x[i, :, j] with broadcast index arrays (non-adjacent: batch dims
    // first), and x.at[i, :, j].add(1) with duplicate indices.
    let mut r = Ints(0x1234_5678);
    for trial in 0..6 {
        let x = f(&[3, 2, 4], 10 + trial);
        let xs = x.to_vec::<f32>();
        let iv: Vec<i32> = (0..2).map(|_| r.next(6) as i32 - 3).collect();
        let jv: Vec<i32> = (0..3).map(|_| r.next(8) as i32 - 4).collect();
        let i = Array::from_vec(iv.clone(), &[2, 1]);
        let j = Array::from_vec(jv.clone(), &[3]);
        let wrap = |v: i32, n: i32| if v < 0 { v + n } else { v } as usize;
        let mut want = Vec::new();
        for a in &iv {
            for b in &jv {
                for m in 0..2 {
                    want.push(xs[wrap(*a, 3) * 8 + m * 4 + wrap(*b, 4)]);
                }
            }
        }
        let g = |(x, i, j): (Array, Array, Array)| x.index(idx![&i, .., &j]);
        let eager = g((x.clone(), i.clone(), j.clone()));
        assert_eq!(eager.shape(), vec![2, 3, 2]);
        assert_eq!(eager.to_vec::<f32>(), want);
        let staged = jit(g).call((x.clone(), i.clone(), j.clone())).unwrap();
        assert_eq!(staged.to_vec::<f32>(), want);

        let mut added = xs.clone();
        for a in &iv {
            for b in &jv {
                for m in 0..2 {
                    added[wrap(*a, 3) * 8 + m * 4 + wrap(*b, 4)] += 1.0;
                }
            }
        }
        let s = |(x, i, j): (Array, Array, Array)| x.at(idx![&i, .., &j]).add(1.0);
        let eager = s((x.clone(), i.clone(), j.clone()));
        let staged = jit(s).call((x, i, j)).unwrap();
        for got in [eager, staged] {
            for (g, w) in got.to_vec::<f32>().iter().zip(&added) {
                assert!((g - w).abs() < 1e-6, "{g} vs {w}");
            }
        }
    }
}

#[test]
fn traced_scalar_index_reads_a_row_with_clamping() {
    let x = f(&[4, 3], 20);
    let xs = x.to_vec::<f32>();
    let row = jit(|(x, i): (Array, Array)| x.index(&i));
    for (i, r) in [(1, 1), (-1, 3), (-4, 0)] {
        let got = row.call((x.clone(), Array::scalar(i))).unwrap();
        assert_eq!(got.to_vec::<f32>(), xs[r * 3..r * 3 + 3].to_vec());
    }
    assert_eq!(row.trace_count(), 1);
}
