//! Out-of-bounds gather and scatter indices in the reference interpreter:
//! random indices far outside the operand, every mode, checked against a
//! direct transcription of JAX's documented semantics (`lax.gather` /
//! `lax.scatter_add`): `clip` and `promise_in_bounds` clamp each window start
//! into `[0, dim - size]`, `fill` gives the fill value for a window that does
//! not fit, scatter's `fill`/`promise_in_bounds` drop such an update. Never a
//! panic, never a read outside the operand.

use jaxon_ir::{check_jaxpr, eval_closed_jaxpr, parse_jaxpr, ClosedJaxpr, DType, HostArray};

/// splitmix64, seeded per test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// An index: mostly near the operand, sometimes far away or extreme.
    fn index(&mut self, dim: usize) -> i64 {
        let d = dim as i64;
        match self.below(8) {
            0 => [i32::MIN as i64, i32::MAX as i64, -1, d][self.below(4) as usize],
            1 => self.below(1000) as i64 - 500,
            _ => self.below((3 * d + 3) as u64) as i64 - d - 1,
        }
    }
    fn value(&mut self) -> f64 {
        // Distinct, non-round values: f32-exact multiples of 1/8 in [-50, 50).
        (self.below(800) as f64 - 400.0) / 8.0
    }
}

const MODES: [&str; 3] = ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"];

fn compile(text: &str) -> ClosedJaxpr {
    let j = parse_jaxpr(text).unwrap_or_else(|e| panic!("parse: {e}\n{text}"));
    check_jaxpr(&j).unwrap_or_else(|e| panic!("check: {e}\n{text}"));
    ClosedJaxpr::without_consts(j)
}

fn assert_same(got: &HostArray, want: &[f64], what: &str) {
    let g = got.to_f64_vec();
    assert_eq!(g.len(), want.len(), "{what}: length");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(
            a == b || (a.is_nan() && b.is_nan()),
            "{what}: element {i}: got {a}, want {b}\n got {g:?}\nwant {want:?}"
        );
    }
}

/// `x:f32[A,B]`, indices `i32[N,2]` into both dims, dim 0 collapsed with
/// slice size `s0` (0 or 1), a window of width `w` along dim 1: `f32[N,w]`.
fn gather_text(a: usize, b: usize, n: usize, s0: usize, w: usize, mode: &str) -> String {
    format!(
        "{{ lambda ; x:f32[{a},{b}] i:i32[{n},2]. let\n    y:f32[{n},{w}] = gather[\n      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())\n      fill_value=None\n      indices_are_sorted=False\n      mode=GatherScatterMode.{mode}\n      slice_sizes=({s0}, {w})\n      unique_indices=False\n    ] x i\n  in (y,) }}"
    )
}

/// JAX's gather for [`gather_text`]: a window start clamps into
/// `[0, dim - size]` (clip, promise) or the whole window fills with NaN when
/// it does not fit (fill). A collapsed dim of slice size 0 still reads its
/// start element, so its bound is `dim - 1`: jaxon never reads outside.
fn gather_oracle(x: &[f64], a: usize, b: usize, idx: &[i64], w: usize, mode: &str) -> Vec<f64> {
    let n = idx.len() / 2;
    let (hi0, hi1) = (a as i64 - 1, b as i64 - w as i64);
    let mut out = Vec::with_capacity(n * w);
    for k in 0..n {
        let (r, c) = (idx[2 * k], idx[2 * k + 1]);
        let fits = (0..=hi0).contains(&r) && (0..=hi1).contains(&c);
        for j in 0..w {
            out.push(if mode == "FILL_OR_DROP" {
                if fits {
                    x[r as usize * b + c as usize + j]
                } else {
                    f64::NAN
                }
            } else {
                let (r, c) = (r.clamp(0, hi0) as usize, c.clamp(0, hi1) as usize);
                x[r * b + c + j]
            });
        }
    }
    out
}

#[test]
fn gather_random_out_of_range_indices_follow_jax_modes() {
    let mut rng = Rng(0x6a7e_0001);
    for case in 0..300 {
        let (a, b) = (1 + rng.below(6) as usize, 1 + rng.below(7) as usize);
        let w = rng.below(b as u64 + 1) as usize;
        let s0 = rng.below(2) as usize;
        let n = 1 + rng.below(6) as usize;
        let mode = MODES[case % 3];
        let x: Vec<f64> = (0..a * b).map(|_| rng.value()).collect();
        let idx: Vec<i64> = (0..n).flat_map(|_| [rng.index(a), rng.index(b)]).collect();
        let j = compile(&gather_text(a, b, n, s0, w, mode));
        let args = [
            HostArray::from_f64(DType::F32, &[a, b], &x).unwrap(),
            HostArray::from_f64(
                DType::I32,
                &[n, 2],
                &idx.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            )
            .unwrap(),
        ];
        let got = eval_closed_jaxpr(&j, &args).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let want = gather_oracle(&x, a, b, &idx, w, mode);
        assert_same(
            &got[0],
            &want,
            &format!("case {case}: gather {mode} {a}x{b} w={w} s0={s0} idx={idx:?}"),
        );
    }
}

/// `x:f32[A,B]`, indices `i32[N,1]` into dim 0 (inserted), updates
/// `f32[N,B]`: rows added into `x`.
fn scatter_text(a: usize, b: usize, n: usize, mode: &str) -> String {
    format!(
        "{{ lambda ; x:f32[{a},{b}] i:i32[{n},1] u:f32[{n},{b}]. let\n    y:f32[{a},{b}] = scatter-add[\n      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n      indices_are_sorted=False\n      mode=GatherScatterMode.{mode}\n      unique_indices=False\n      update_consts=()\n      update_jaxpr={{ lambda ; p:f32[] q:f32[]. let r:f32[] = add p q in (r,) }}\n    ] x i u\n  in (y,) }}"
    )
}

/// JAX's scatter-add for [`scatter_text`]: clip clamps the row, fill and
/// promise drop an update whose row is outside (XLA's scatter semantics).
fn scatter_oracle(x: &[f64], a: usize, b: usize, idx: &[i64], u: &[f64], mode: &str) -> Vec<f64> {
    let mut out = x.to_vec();
    for (k, &r) in idx.iter().enumerate() {
        let row = if mode == "CLIP" {
            r.clamp(0, a as i64 - 1)
        } else if (0..a as i64).contains(&r) {
            r
        } else {
            continue;
        };
        for j in 0..b {
            // f32 accumulation, as the interpreter does for f32.
            let s = out[row as usize * b + j] as f32 + u[k * b + j] as f32;
            out[row as usize * b + j] = s as f64;
        }
    }
    out
}

#[test]
fn scatter_random_out_of_range_indices_follow_jax_modes() {
    let mut rng = Rng(0x6a7e_0002);
    for case in 0..300 {
        let (a, b) = (1 + rng.below(6) as usize, 1 + rng.below(5) as usize);
        let n = 1 + rng.below(6) as usize;
        let mode = MODES[case % 3];
        let x: Vec<f64> = (0..a * b).map(|_| rng.value()).collect();
        let u: Vec<f64> = (0..n * b).map(|_| rng.value()).collect();
        let idx: Vec<i64> = (0..n).map(|_| rng.index(a)).collect();
        let j = compile(&scatter_text(a, b, n, mode));
        let args = [
            HostArray::from_f64(DType::F32, &[a, b], &x).unwrap(),
            HostArray::from_f64(
                DType::I32,
                &[n, 1],
                &idx.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            )
            .unwrap(),
            HostArray::from_f64(DType::F32, &[n, b], &u).unwrap(),
        ];
        let got = eval_closed_jaxpr(&j, &args).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let want = scatter_oracle(&x, a, b, &idx, &u, mode);
        assert_same(
            &got[0],
            &want,
            &format!("case {case}: scatter-add {mode} {a}x{b} idx={idx:?}"),
        );
    }
}

/// The fuzzer's find (issue 23): a collapsed dim of slice size 0 let a
/// start equal to the dim through, and the window read past the operand
/// (`the len is 20 but the index is 23`). Every mode now stays inside.
#[test]
fn gather_zero_size_collapsed_dim_never_reads_past_the_end() {
    let x: Vec<f64> = (0..20).map(|v| v as f64 * 1.5 - 7.0).collect();
    for mode in MODES {
        let j = compile(&gather_text(5, 4, 2, 0, 4, mode));
        let args = [
            HostArray::from_f64(DType::F32, &[5, 4], &x).unwrap(),
            HostArray::from_f64(DType::I32, &[2, 2], &[5.0, 0.0, 2.0, 0.0]).unwrap(),
        ];
        let got = eval_closed_jaxpr(&j, &args).unwrap();
        let want = gather_oracle(&x, 5, 4, &[5, 0, 2, 0], 4, mode);
        assert_same(&got[0], &want, mode);
    }
}

/// An operand dim of size 0 has no start to clamp to: clip is an error,
/// fill gives the fill value.
#[test]
fn gather_from_empty_dim_is_an_error_or_fill() {
    for mode in MODES {
        let j = compile(&gather_text(0, 3, 2, 0, 2, mode));
        let args = [
            HostArray::from_f64(DType::F32, &[0, 3], &[]).unwrap(),
            HostArray::from_f64(DType::I32, &[2, 2], &[0.0, 0.0, 1.0, 1.0]).unwrap(),
        ];
        let got = eval_closed_jaxpr(&j, &args);
        if mode == "FILL_OR_DROP" {
            assert_same(&got.unwrap()[0], &[f64::NAN; 4], mode);
        } else {
            let e = got.unwrap_err().to_string();
            assert!(e.contains("gather") && e.contains("[0, 3]"), "{mode}: {e}");
        }
    }
}
