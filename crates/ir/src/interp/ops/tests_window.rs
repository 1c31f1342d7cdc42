//! Window kernels on random inputs against naive nested loops.

use super::testutil::{arr, assert_close, Rng};
use super::window::{reduce_window, select_and_gather_add, select_and_scatter_add};
use crate::dtype::DType;
use crate::primitive::{SelectPrim, WindowGeometry, WindowOp};

fn geometry() -> WindowGeometry {
    WindowGeometry {
        window_dimensions: vec![2, 3],
        window_strides: vec![1, 2],
        padding: vec![(1, 0), (2, 1)],
        base_dilation: vec![2, 1],
        window_dilation: vec![1, 2],
    }
}

/// The naive 2-D windowed fold, written independently of `window_map`:
/// `None` for padding and holes.
fn naive(x: &[f64], shape: [usize; 2], w: &WindowGeometry, mut f: impl FnMut(&[Option<(usize, f64)>]) -> f64) -> (Vec<usize>, Vec<f64>) {
    let out: Vec<usize> = (0..2).map(|d| w.out_dim(d, shape[d]).unwrap()).collect();
    let mut v = Vec::new();
    for i in 0..out[0] {
        for j in 0..out[1] {
            let mut win = Vec::new();
            for a in 0..w.window_dimensions[0] {
                for b in 0..w.window_dimensions[1] {
                    let p = (i * w.window_strides[0] + a * w.window_dilation[0]) as i64 - w.padding[0].0;
                    let q = (j * w.window_strides[1] + b * w.window_dilation[1]) as i64 - w.padding[1].0;
                    let (bd0, bd1) = (w.base_dilation[0] as i64, w.base_dilation[1] as i64);
                    let ok = p >= 0 && q >= 0 && p % bd0 == 0 && q % bd1 == 0 && p / bd0 < shape[0] as i64 && q / bd1 < shape[1] as i64;
                    win.push(ok.then(|| {
                        let k = (p / bd0) as usize * shape[1] + (q / bd1) as usize;
                        (k, x[k])
                    }));
                }
            }
            v.push(f(&win));
        }
    }
    (out, v)
}

fn random(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(-3.0, 3.0).round()).collect()
}

#[test]
fn reduce_window_matches_loops() {
    let mut rng = Rng(7);
    let w = geometry();
    for dt in [DType::F64, DType::F32, DType::I32] {
        let x = random(&mut rng, 21);
        let a = arr(dt, &[3, 7], &x);
        for op in WindowOp::ALL {
            let (shape, want) = naive(&x, [3, 7], &w, |win| {
                let vals = win.iter().flatten().map(|p| p.1);
                match op {
                    WindowOp::Sum => vals.sum(),
                    WindowOp::Max => vals.fold(if dt == DType::I32 { i32::MIN as f64 } else { f64::NEG_INFINITY }, f64::max),
                    WindowOp::Min => vals.fold(if dt == DType::I32 { i32::MAX as f64 } else { f64::INFINITY }, f64::min),
                }
            });
            let got = reduce_window(op, &a, &w).unwrap();
            assert_close(&got, dt, &shape, &want, 1e-6);
        }
    }
}

#[test]
fn select_and_scatter_gather_match_loops() {
    let mut rng = Rng(11);
    let w = WindowGeometry { base_dilation: vec![1, 1], window_dilation: vec![1, 1], ..geometry() };
    let x: Vec<f64> = (0..21).map(|_| rng.uniform(-3.0, 3.0)).collect();
    let t: Vec<f64> = (0..21).map(|_| rng.uniform(-3.0, 3.0)).collect();
    let (xa, ta) = (arr(DType::F64, &[3, 7], &x), arr(DType::F64, &[3, 7], &t));
    for sel in [SelectPrim::Ge, SelectPrim::Le] {
        let pick = |win: &[Option<(usize, f64)>]| -> Option<usize> {
            let mut best: Option<(usize, f64)> = None;
            for &(k, v) in win.iter().flatten() {
                let better = match (best, sel) {
                    (None, _) => true,
                    (Some((_, b)), SelectPrim::Ge) => v > b,
                    (Some((_, b)), SelectPrim::Le) => v < b,
                };
                if better {
                    best = Some((k, v));
                }
            }
            best.map(|b| b.0)
        };
        let (shape, want) = naive(&x, [3, 7], &w, |win| pick(win).map_or(0.0, |k| t[k]));
        let got = select_and_gather_add(&ta, &xa, sel, &w).unwrap();
        assert_close(&got, DType::F64, &shape, &want, 1e-12);
        let n: usize = shape.iter().product();
        let s: Vec<f64> = (0..n).map(|_| rng.uniform(-3.0, 3.0)).collect();
        let mut want = vec![0.0; 21];
        let mut i = 0;
        naive(&x, [3, 7], &w, |win| {
            if let Some(k) = pick(win) {
                want[k] += s[i];
            }
            i += 1;
            0.0
        });
        let got = select_and_scatter_add(&arr(DType::F64, &shape, &s), &xa, sel, &w).unwrap();
        assert_close(&got, DType::F64, &[3, 7], &want, 1e-12);
    }
}

#[test]
fn bad_window_params_are_errors() {
    let a = arr(DType::F32, &[3], &[1.0, 2.0, 3.0]);
    let mut w = WindowGeometry { window_dimensions: vec![2], window_strides: vec![0], padding: vec![(0, 0)], base_dilation: vec![1], window_dilation: vec![1] };
    assert!(reduce_window(WindowOp::Sum, &a, &w).is_err());
    w.window_strides = vec![1, 1];
    assert!(reduce_window(WindowOp::Sum, &a, &w).is_err());
    w.window_strides = vec![1];
    w.padding = vec![(-5, 0)];
    assert!(reduce_window(WindowOp::Sum, &a, &w).is_err());
}
