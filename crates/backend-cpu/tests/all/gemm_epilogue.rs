//! GEMM epilogues (`plan::epilogue`): `dot_general` followed by a bias
//! along the last axis and/or relu, fused into the GEMM's stores. Each
//! program runs fused (the product read only by the epilogue) and unfused
//! (the product also returned, so the epilogue is a separate pass over
//! it): the two must agree bit for bit (NaN payloads aside: every path
//! runs the same GEMM, and the epilogue adds the bias to the finished sum
//! as the separate pass does), and with the interpreter within the dot
//! tolerance of `differential` (`Tol::Rel`), NaN where it has NaN. Inputs
//! hold NaN and `-0.0`; shapes cover `m`, `n` off the register tiles,
//! `k` of 0 and 1, batches, and products large enough for the packed
//! GEMM. `cargo xtask test-all` runs this module again under each
//! narrower `JAXON_CPU_ISA` (the scalar, AVX2 and AVX-512 paths).

use crate::common;
use common::{assert_close, random_args, run, Dist, Tol};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{parse_closed_jaxpr, HostArray, Storage};

/// Which epilogue.
#[derive(Clone, Copy, Debug)]
enum Kind {
    BiasRelu,
    Bias,
    Relu,
}

/// `dot_general` of `[batch.., m, k] · [batch.., k, n]` then the
/// epilogue, returning `(y,)` (fused) or `(y, d)` (unfused: the product
/// has a second reader).
fn program(
    dt: &str,
    batch: &[usize],
    m: usize,
    k: usize,
    n: usize,
    kind: Kind,
    fused: bool,
) -> String {
    let dims = |tail: &[usize]| {
        batch
            .iter()
            .chain(tail)
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let t = |tail: &[usize]| format!("{dt}[{}]", dims(tail));
    let r = batch.len() + 2;
    let nb = batch.len();
    let bd: Vec<String> = (0..nb).map(|i| i.to_string()).collect();
    let bd = bd.join(",");
    let batch_dn = if nb == 0 {
        "[], []".to_string()
    } else {
        format!("[{bd}], [{bd}]")
    };
    let pet = if dt == "f32" { "float32" } else { "float64" };
    let mut text = format!(
        "{{ lambda ; a:{} b:{} c:{dt}[{n}]. let\n    d:{} = dot_general[dimension_numbers=(([{}], [{}]), ({batch_dn})) preferred_element_type={pet}] a b\n",
        t(&[m, k]),
        t(&[k, n]),
        t(&[m, n]),
        r - 1,
        r - 2,
    );
    let ones: Vec<String> = (0..r - 1).map(|_| "1".to_string()).collect();
    let bshape = format!("{}, {n}", ones.join(", "));
    let out_t = t(&[m, n]);
    let mut x = "d";
    if matches!(kind, Kind::BiasRelu | Kind::Bias) {
        text += &format!(
            "    e:{dt}[{}] = broadcast_in_dim[broadcast_dimensions=({},) shape=({bshape}) sharding=None] c\n    f:{out_t} = add d e\n",
            bshape.replace(' ', ""),
            r - 1
        );
        x = "f";
    }
    if matches!(kind, Kind::BiasRelu | Kind::Relu) {
        text += &format!("    g:{out_t} = max {x} 0.0:{dt}[]\n");
        x = "g";
    }
    // A relu-only program still reads the bias (a constant argument list).
    if matches!(kind, Kind::Relu) {
        text += &format!("    h:{dt}[{n}] = neg c\n");
    }
    let extra = match (fused, kind) {
        (true, Kind::Relu) => ", h".to_string(),
        (true, _) => String::new(),
        (false, Kind::Relu) => ", h, d".to_string(),
        (false, _) => ", d".to_string(),
    };
    text += &format!("  in ({x}{extra}) }}");
    text
}

/// Puts NaN and `-0.0` at a few places of a float array (seeded).
fn sprinkle(a: &mut HostArray, seed: u64) {
    let len = a.len();
    if len == 0 {
        return;
    }
    let at = |i: u64| ((seed.wrapping_mul(0x9E37_79B9) + i * 7919) as usize) % len;
    match a.data_mut() {
        Storage::F32(v) => {
            v[at(1)] = -0.0;
            v[at(2)] = -0.0;
            if seed.is_multiple_of(2) {
                v[at(3)] = f32::NAN;
            }
        }
        Storage::F64(v) => {
            v[at(1)] = -0.0;
            v[at(2)] = -0.0;
            if seed.is_multiple_of(2) {
                v[at(3)] = f64::NAN;
            }
        }
        _ => {}
    }
}

/// Bit equality, any NaN equal to any NaN.
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn check(dt: &str, batch: &[usize], m: usize, k: usize, n: usize, kind: Kind) {
    let (cpu, interp) = (CpuBackend::new(), InterpreterBackend::new());
    let fused = parse_closed_jaxpr(&program(dt, batch, m, k, n, kind, true), Vec::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let unfused_text = program(dt, batch, m, k, n, kind, false);
    let unfused = parse_closed_jaxpr(&unfused_text, Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    let what = format!("{dt} batch {batch:?} m={m} k={k} n={n} {kind:?}");
    for seed in 1..=2u64 {
        let mut args = random_args(&fused, seed, Dist::Uniform(2.0));
        for (i, a) in args.iter_mut().enumerate() {
            sprinkle(a, seed * 3 + i as u64);
        }
        let got = run(&cpu, &fused, &args);
        let sep = run(&cpu, &unfused, &args);
        let want = run(&interp, &fused, &args);
        let (y, y_sep) = (&got[0], &sep[0]);
        assert_eq!(y.shape(), y_sep.shape(), "{what}");
        for i in 0..y.len() {
            let (g, s) = (y.data().get_f64(i), y_sep.data().get_f64(i));
            assert!(
                same(g, s),
                "{what} seed {seed}: element {i}: fused {g:e} vs unfused {s:e}"
            );
            if matches!(kind, Kind::BiasRelu | Kind::Relu) {
                assert!(
                    g.is_nan() || g > 0.0 || g.to_bits() == 0,
                    "{what}: relu gave {g:e}"
                );
            }
        }
        let tol = if dt == "f32" {
            Tol::Rel(1e-5)
        } else {
            Tol::Rel(1e-12)
        };
        assert_close(y, &want[0], tol, 0.0, &format!("{what} seed {seed}"));
    }
}

/// Shapes: off-tile `m` and `n` (tiles are 6×16/12×32 in f32, 6×8/12×16
/// in f64), `k` of 0 and 1, the RNN's step, a batch, and products the
/// packed GEMM takes (≥ 2^24 multiply-adds, a second depth chunk past
/// 1024).
const SHAPES: [(&[usize], usize, usize, usize); 10] = [
    (&[], 7, 5, 3),
    (&[], 13, 0, 37),
    (&[], 29, 1, 45),
    (&[], 32, 256, 256),
    (&[], 1, 64, 100),
    (&[3], 9, 17, 21),
    (&[2, 2], 13, 3, 40),
    (&[], 256, 260, 300),
    (&[], 37, 1100, 530),
    (&[2], 130, 300, 250),
];

#[test]
fn epilogues_match_the_unfused_program_and_the_interpreter() {
    for dt in ["f32", "f64"] {
        for (batch, m, k, n) in SHAPES {
            for kind in [Kind::BiasRelu, Kind::Bias, Kind::Relu] {
                check(dt, batch, m, k, n, kind);
            }
        }
    }
}

/// A product that another equation also reads is not fused, and a bias
/// of the wrong axis (broadcast along rows) is not one: both still match
/// the interpreter.
#[test]
fn other_readers_and_other_axes_stay_unfused_and_right() {
    let texts = [
        // The sum `f` is read twice: the bias fuses, relu is a pass.
        "{ lambda ; a:f32[40,50] b:f32[50,70] c:f32[70]. let
    d:f32[40,70] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[1,70] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 70) sharding=None] c
    f:f32[40,70] = add d e
    g:f32[40,70] = max f 0.0:f32[]
    h:f32[40,70] = mul f 2.0:f32[]
  in (g, h) }",
        // The bias along the first axis.
        "{ lambda ; a:f32[40,50] b:f32[50,40] c:f32[40]. let
    d:f32[40,40] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[40,40] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(40, 40) sharding=None] c
    f:f32[40,40] = add d e
    g:f32[40,40] = max f 0.0:f32[]
  in (g,) }",
        // `max` against `-0.0` is not relu.
        "{ lambda ; a:f32[40,50] b:f32[50,70]. let
    d:f32[40,70] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    g:f32[40,70] = max d -0.0:f32[]
  in (g,) }",
    ];
    for text in texts {
        common::check(text, Dist::Uniform(2.0), Tol::Rel(1e-5));
    }
}
