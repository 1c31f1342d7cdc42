//! bf16 and f16 `dot_general` (the GEMM of `ops::dot::bf16`: `vdpbf16ps`
//! on AVX-512 BF16, f32 tiles on values widened while packing) against an
//! f64 triple loop and against the reference interpreter, through a
//! compiled jaxpr.
//!
//! Shapes are awkward on purpose: odd depths (the zero-padded last pair),
//! rows and columns that are not multiples of a register tile, batches,
//! transposed operands, a depth near 3000 (several depth blocks), results
//! in the operands' dtype and in f32 (`preferred_element_type`).
//!
//! Tolerances, with `u` the result's unit roundoff (2⁻⁸ bf16, 2⁻¹¹ f16,
//! 2⁻²⁴ f32) and `S = Σₚ|aᵢₚ·cₚⱼ|`: an f32 accumulation in any order is
//! within `(k+1)·2⁻²⁴·S` of the exact sum (so is `vdpbf16ps`, which adds
//! each product with one rounding; its flush of denormals is far below
//! that here), and the final rounding adds `u·|exact|`. Against the
//! interpreter, which also sums in f32 but in another order, both sides'
//! errors add up.

use super::common::{parse, random_args, run, Dist};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::HostArray;

/// `(batch, m, k, n, lhs transposed, rhs transposed)`; batch 0 means a
/// 2-D product with no batch dimension.
type Case = (usize, usize, usize, usize, bool, bool);

const CASES: [Case; 9] = [
    (0, 1, 1, 1, false, false),
    (0, 13, 7, 33, false, false),
    (0, 60, 301, 200, false, false),
    (3, 25, 129, 70, false, false),
    (0, 50, 3001, 45, false, false),
    (2, 61, 64, 130, true, false),
    (0, 130, 255, 47, false, true),
    (0, 40, 520, 300, true, true),
    (2, 12, 2, 32, true, true),
];

/// The jaxpr of one case: operands of `dt`, result of `out` (JAX's
/// spellings: `bf16`/`bfloat16`).
fn program(case: Case, dt: (&str, &str), out: (&str, &str)) -> String {
    let (b, m, k, n, ta, tc) = case;
    let batch = |dims: [usize; 2]| {
        let mut v: Vec<usize> = if b > 0 { vec![b] } else { vec![] };
        v.extend(dims);
        v
    };
    let lhs = batch(if ta { [k, m] } else { [m, k] });
    let rhs = batch(if tc { [n, k] } else { [k, n] });
    let res = batch([m, n]);
    let o = usize::from(b > 0);
    let lc = if ta { o } else { o + 1 };
    let rc = if tc { o + 1 } else { o };
    let bd = if b > 0 { "[0], [0]" } else { "[], []" };
    let shape = |s: &[usize]| {
        s.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "{{ lambda ; a:{t}[{l}] b:{t}[{r}]. let
    c:{ot}[{res}] = dot_general[dimension_numbers=(([{lc}], [{rc}]), ({bd})) preferred_element_type={on}] a b
  in (c,) }}",
        t = dt.0,
        l = shape(&lhs),
        r = shape(&rhs),
        ot = out.0,
        res = shape(&res),
        on = out.1,
    )
}

/// The exact product (f64) and `S` per result element, row-major
/// `[batch, m, n]`.
fn exact(case: Case, a: &HostArray, c: &HostArray) -> (Vec<f64>, Vec<f64>) {
    let (b, m, k, n, ta, tc) = case;
    let (mut want, mut mag) = (Vec::new(), Vec::new());
    for i in 0..b.max(1) {
        for p in 0..m {
            for q in 0..n {
                let (mut s, mut g) = (0.0, 0.0);
                for t in 0..k {
                    let x = a
                        .data()
                        .get_f64(i * m * k + if ta { t * m + p } else { p * k + t });
                    let y = c
                        .data()
                        .get_f64(i * k * n + if tc { q * k + t } else { t * n + q });
                    s += x * y;
                    g += (x * y).abs();
                }
                want.push(s);
                mag.push(g);
            }
        }
    }
    (want, mag)
}

/// Every case for operands of `dt` and result `out` with unit roundoff
/// `u` (and absolute slack `tiny` for f16's denormal results).
fn check(dt: (&str, &str), out: (&str, &str), u: f64, tiny: f64) {
    let cpu = CpuBackend::with_threads(2);
    let interp = InterpreterBackend::new();
    for case in CASES {
        let text = program(case, dt, out);
        let closed = parse(&text);
        let args = random_args(
            &closed,
            case.1 as u64 * 31 + case.2 as u64,
            Dist::Uniform(1.0),
        );
        let got = &run(&cpu, &closed, &args)[0];
        let oracle = &run(&interp, &closed, &args)[0];
        let (want, mag) = exact(case, &args[0], &args[1]);
        assert_eq!(got.len(), want.len(), "{text}");
        let k = case.2 as f64;
        for (i, (&w, &s)) in want.iter().zip(&mag).enumerate() {
            let g = got.data().get_f64(i);
            let acc = (k + 1.0) * 2f64.powi(-24) * s;
            let tol = u * w.abs() + (1.0 + u) * acc + tiny;
            assert!(
                (g - w).abs() <= tol,
                "{i}: cpu {g:e}, exact {w:e}, tolerance {tol:e}\n{text}"
            );
            let o = oracle.data().get_f64(i);
            let tol = 2.0 * u * w.abs() + 3.0 * acc + 2.0 * tiny;
            assert!(
                (g - o).abs() <= tol,
                "{i}: cpu {g:e}, interpreter {o:e}, tolerance {tol:e}\n{text}"
            );
        }
    }
}

#[test]
fn bf16_dot_matches_f64_and_the_interpreter() {
    check(
        ("bf16", "bfloat16"),
        ("bf16", "bfloat16"),
        2f64.powi(-8),
        0.0,
    );
}

#[test]
fn bf16_dot_into_f32_matches_f64_and_the_interpreter() {
    check(
        ("bf16", "bfloat16"),
        ("f32", "float32"),
        2f64.powi(-24),
        0.0,
    );
}

#[test]
fn f16_dot_matches_f64_and_the_interpreter() {
    check(
        ("f16", "float16"),
        ("f16", "float16"),
        2f64.powi(-11),
        2f64.powi(-25),
    );
}

#[test]
fn f16_dot_into_f32_matches_f64_and_the_interpreter() {
    check(("f16", "float16"), ("f32", "float32"), 2f64.powi(-24), 0.0);
}
