//! The tile routines inside fused groups (kernel `tiled.rs`), at the
//! process's ISA level (512-bit on an AVX-512 machine; 256-bit under
//! `JAXON_CPU_ISA=avx2`; the unit tests `codegen::kernel::wide::tests`
//! run every width the CPU has in one process):
//! every group is run with them and with everything inline at 128 bits, and
//! the two must agree bit for bit (NaN payloads aside), and with the
//! interpreter or an f64 reference. Every run is guarded: each array ends
//! at an inaccessible page, so a routine reading or writing past a row's
//! end faults.

use crate::common;
use common::{run, same_bits, wide_and_narrow, Rng};
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{parse_closed_jaxpr, DType, HostArray};

/// Runs `f` with guard pages on (where the platform has them).
fn guarded(f: impl FnOnce()) {
    #[cfg(target_os = "linux")]
    common::guard::guarded(f);
    #[cfg(not(target_os = "linux"))]
    f();
}

/// Fused groups around the routines are tiled without changing a bit: the
/// eltwise workload's chain, and softmax's row reductions (rows longer
/// than a tile and not a multiple of the vector width).
/// Both results agree bit for bit (NaNs aside).
fn assert_same(wide: &[f64], narrow: &[f64], what: &str) {
    for (k, (w, q)) in wide.iter().zip(narrow).enumerate() {
        assert!(same_bits(*w, *q), "{what}[{k}]: wide {w:e} vs inline {q:e}");
    }
}

/// `text` run on `arg` by the reference interpreter, as f64s.
fn interpreted(text: &str, arg: &HostArray) -> Vec<f64> {
    let closed = parse_closed_jaxpr(text, Vec::new()).expect("parses");
    run(&InterpreterBackend, &closed, std::slice::from_ref(arg))[0].to_f64_vec()
}

/// The float types the routines exist for, with their jaxpr names.
const TYPES: [(DType, &str); 2] = [(DType::F32, "f32"), (DType::F64, "f64")];

#[test]
fn tiled_groups_match_untiled_bit_for_bit() {
    guarded(tiled_groups);
}

/// Fused groups around the routines are tiled without changing a bit: the
/// eltwise workload's chain (with and without multiply-add contraction),
/// arguments computed inline into slots, division by a literal, and
/// softmax's row reductions (rows longer than a tile and not a multiple
/// of the vector width).
fn tiled_groups() {
    let mut rng = Rng::new(11);
    for (dt, ty) in TYPES {
        let chain = "{ lambda ; a:T[5003]. let b:T[5003] = mul a 2.0:T[]; \
                     c:T[5003] = add b 1.0:T[]; d:T[5003] = tanh c; e:T[5003] = mul d a; \
                     f:T[5003] = neg a; g:T[5003] = exp f; h:T[5003] = sub e g in (h,) }"
            .replace('T', ty);
        let xs: Vec<f64> = (0..5003).map(|_| 6.0 * rng.unit() - 3.0).collect();
        let arr = HostArray::from_f64(dt, &[5003], &xs).expect("array");
        for fma in [false, true] {
            let (wide, narrow) = wide_and_narrow(&chain, &arr, fma);
            assert_same(&wide, &narrow, &format!("{ty} chain, fma {fma}"));
        }
        let nested = "{ lambda ; a:T[5003]. let b:T[5003] = sin a; c:T[5003] = mul b a; \
                      d:T[5003] = exp c; e:T[5003] = mul a a; f:T[5003] = log1p e; \
                      g:T[5003] = add d f; h:T[5003] = div g 3.0:T[] in (h,) }"
            .replace('T', ty);
        let (wide, narrow) = wide_and_narrow(&nested, &arr, false);
        assert_same(&wide, &narrow, &format!("{ty} nested"));
        for (k, x) in xs.iter().enumerate() {
            let want = ((x.sin() * x).exp() + (x * x).ln_1p()) / 3.0;
            assert!(
                (wide[k] - want).abs() <= 1e-6 * want.abs(),
                "{} vs {want}",
                wide[k]
            );
        }
        let softmax = "{ lambda ; a:T[7,1029]. let \
            b:T[7] = reduce_max[axes=(1,) out_sharding=None] a; \
            c:T[7,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(7, 1) sharding=None] b; \
            d:T[7,1029] = sub a c; e:T[7,1029] = exp d; \
            f:T[7] = reduce_sum[axes=(1,) out_sharding=None] e; \
            g:T[7,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(7, 1) sharding=None] f; \
            h:T[7,1029] = div e g in (h,) }"
            .replace('T', ty);
        let xs: Vec<f64> = (0..7 * 1029).map(|_| 20.0 * rng.unit() - 10.0).collect();
        let arr = HostArray::from_f64(dt, &[7, 1029], &xs).expect("array");
        let (wide, narrow) = wide_and_narrow(&softmax, &arr, false);
        assert_same(&wide, &narrow, &format!("{ty} softmax"));
        // And the values are softmax's.
        for r in 0..7 {
            let row = &xs[r * 1029..(r + 1) * 1029];
            let m = row.iter().cloned().fold(f64::MIN, f64::max);
            let s: f64 = row.iter().map(|x| (x - m).exp()).sum();
            for (k, x) in row.iter().enumerate() {
                let want = (x - m).exp() / s;
                let got = wide[r * 1029 + k];
                assert!((got - want).abs() <= 1e-6 * want + 1e-12, "{got} vs {want}");
            }
        }
    }
}

/// Row reductions run by the routines: sums round as the inline code's
/// lanes do, and max/min keep NaN and order +0 above -0, over rows longer
/// than a tile with tails of every length.
#[test]
fn row_reductions_match_inline_and_interpreter() {
    guarded(row_reductions);
}

fn row_reductions() {
    let mut rng = Rng::new(23);
    for (dt, ty) in TYPES {
        for cols in [1029usize, 1024, 515, 64 + 7] {
            let rows = 6;
            let mut xs: Vec<f64> = (0..rows * cols).map(|_| 8.0 * rng.unit() - 4.0).collect();
            // Row 1 holds a NaN; row 2 one +0 early, then -0 in its lane
            // (a lane maximum that keeps the later of two equal values
            // would end at -0); row 3 only -0; row 4 all negative with a
            // -0 at the end.
            xs[cols + cols / 2] = f64::NAN;
            for k in 0..cols {
                xs[2 * cols + k] = if k == 3 { 0.0 } else { -0.0 };
                xs[3 * cols + k] = -0.0;
                xs[4 * cols + k] = -1.0 - rng.unit();
            }
            xs[5 * cols - 1] = -0.0;
            let arr = HostArray::from_f64(dt, &[rows, cols], &xs).expect("array");
            for op in ["reduce_sum", "reduce_max", "reduce_min"] {
                let text = format!(
                    "{{ lambda ; a:{ty}[{rows},{cols}]. let b:{ty}[{rows}] = {op}[axes=(1,) out_sharding=None] a in (b,) }}"
                );
                let (wide, narrow) = wide_and_narrow(&text, &arr, false);
                assert_same(&wide, &narrow, &format!("{ty} {op} {cols}"));
                let want = interpreted(&text, &arr);
                for (r, (got, x)) in wide.iter().zip(&want).enumerate() {
                    if op == "reduce_sum" {
                        assert_eq!(got.is_nan(), x.is_nan(), "{op} row {r}");
                        if !x.is_nan() {
                            assert!(
                                (got - x).abs() <= 1e-5 * cols as f64,
                                "{op} row {r}: {got} vs {x}"
                            );
                        }
                    } else {
                        assert!(
                            same_bits(*got, *x),
                            "{ty} {op} {cols} row {r}: {got:e} vs interpreter {x:e}"
                        );
                    }
                }
            }
        }
    }
}

/// Row reductions of a leaf run four rows per routine call
/// (`kernel/row_blocks.rs`); each row keeps the one-row path's bits:
/// leftover rows, a leading batch dimension, and rows read from inside a
/// wider array (a fused slice: rows `cols + 5` elements apart).
#[test]
fn row_blocks_match_inline_and_interpreter() {
    guarded(row_blocks);
}

fn row_blocks() {
    let mut rng = Rng::new(31);
    for (dt, ty) in TYPES {
        let cols = 1029;
        let cases = [
            (
                vec![11, cols],
                format!("{{ lambda ; a:{ty}[11,{cols}]. let b:{ty}[11] = OP[axes=(1,) out_sharding=None] a in (b,) }}"),
            ),
            (
                vec![3, 6, cols],
                format!("{{ lambda ; a:{ty}[3,6,{cols}]. let b:{ty}[3,6] = OP[axes=(2,) out_sharding=None] a in (b,) }}"),
            ),
            (
                vec![9, cols + 5],
                format!(
                    "{{ lambda ; a:{ty}[9,{w}]. let s:{ty}[9,{cols}] = slice[limit_indices=(9, {e}) start_indices=(0, 2) strides=None] a; \
                     b:{ty}[9] = OP[axes=(1,) out_sharding=None] s in (b,) }}",
                    w = cols + 5,
                    e = cols + 2
                ),
            ),
        ];
        for (shape, text) in cases {
            let len: usize = shape.iter().product();
            let mut xs: Vec<f64> = (0..len).map(|_| 8.0 * rng.unit() - 4.0).collect();
            xs[len / 3] = f64::NAN;
            let arr = HostArray::from_f64(dt, &shape, &xs).expect("array");
            for op in ["reduce_sum", "reduce_max", "reduce_min"] {
                let text = text.replace("OP", op);
                let (wide, narrow) = wide_and_narrow(&text, &arr, false);
                assert_same(&wide, &narrow, &format!("{ty} {op} {shape:?}"));
                let want = interpreted(&text, &arr);
                assert_eq!(wide.len(), want.len());
                for (r, (got, x)) in wide.iter().zip(&want).enumerate() {
                    assert_eq!(got.is_nan(), x.is_nan(), "{ty} {op} {shape:?} row {r}");
                    let tol = if op == "reduce_sum" {
                        1e-5 * cols as f64
                    } else {
                        0.0
                    };
                    assert!(
                        x.is_nan() || (got - x).abs() <= tol,
                        "{ty} {op} {shape:?} row {r}: {got} vs {x}"
                    );
                }
            }
        }
    }
}
