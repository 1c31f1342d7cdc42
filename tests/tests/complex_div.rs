//! Complex division on special values — zeros of both signs, infinities,
//! NaNs, values near `f32`'s overflow and underflow — agrees with JAX
//! (`data/complex-div-jax.txt`, written by `data/gen_complex_div.py` from
//! JAX 0.10.2 on the CPU) on the interpreter, the CPU backend and the CUDA
//! backend on its simulator: NaN where JAX has NaN, the same infinities and
//! signed zeros, finite parts within a few ulps.

use jaxon_backend_cpu::CpuBackend;
use jaxon_backend_cuda::lower::CudaSimBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::num_complex::Complex64;
use jaxon_ir::{parse_jaxpr, Backend, ClosedJaxpr, DType, HostArray};

/// One dtype's block: every `(x, y)` in `VALUES^4` order and JAX's `x / y`.
struct Block {
    dtype: DType,
    x: Vec<Complex64>,
    y: Vec<Complex64>,
    want: Vec<Complex64>,
}

fn blocks() -> Vec<Block> {
    let text = include_str!("../data/complex-div-jax.txt");
    let mut lines = text.lines();
    let head = lines.next().expect("header");
    let values: Vec<f64> = head
        .split("values: ")
        .nth(1)
        .expect("values in the header")
        .split(' ')
        .map(|v| v.parse().expect("a value"))
        .collect();
    let n = values.len();
    let mut out = Vec::new();
    while let Some(block) = lines.next() {
        let (name, count) = block.split_once(' ').expect("block header");
        let count: usize = count.parse().expect("count");
        assert_eq!(count, n.pow(4));
        let dtype = DType::from_name(name).expect("dtype");
        let (mut x, mut y, mut want) = (vec![], vec![], vec![]);
        for i in 0..count {
            let q = |k: u32| values[i / n.pow(3 - k) % n];
            x.push(Complex64::new(q(0), q(1)));
            y.push(Complex64::new(q(2), q(3)));
            let l = lines.next().expect("a quotient line");
            let (re, im) = l.split_once(' ').expect("two parts");
            want.push(Complex64::new(re.parse().unwrap(), im.parse().unwrap()));
        }
        out.push(Block { dtype, x, y, want });
    }
    out
}

/// `got` is JAX's `want`, part by part: NaN for NaN, infinities with
/// their signs, zeros with their signs where both of JAX's parts are zero,
/// and finite parts within 4 units of the dtype's precision `eps` of the
/// quotient's larger part `scale` (XLA contracts `a·b + c` into FMAs, so a
/// part that cancels to zero here may be a rounding error away there).
///
/// XLA's CPU runtime flushes subnormals to zero (FTZ and DAZ), jaxon keeps
/// them: where JAX has a zero, a nonzero subnormal (below `tiny`, the
/// dtype's smallest normal) is accepted.
fn same(got: f64, want: f64, scale: f64, eps: f64, tiny: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() || scale == 0.0 {
        return got == want && got.is_sign_negative() == want.is_sign_negative()
            || want == 0.0 && got != 0.0 && got.abs() < tiny;
    }
    (got - want).abs() <= 4.0 * eps * scale.max(tiny)
}

fn check(backend: &dyn Backend, name: &str) {
    for b in blocks() {
        let ty = format!("{}[{}]", b.dtype.short_name(), b.x.len());
        let j = parse_jaxpr(&format!(
            "{{ lambda ; a:{ty} b:{ty}. let c:{ty} = div a b in (c,) }}"
        ))
        .expect("parses");
        let exe = backend
            .compile(&ClosedJaxpr::without_consts(j))
            .expect("compiles");
        let args = [&b.x, &b.y].map(|v| {
            let a = HostArray::from_c128(b.dtype, &[v.len()], v).expect("array");
            backend.to_device(&a).expect("to device")
        });
        let out = exe.execute(&args).expect("runs")[0]
            .to_host()
            .expect("reads");
        let (eps, tiny) = match b.dtype {
            DType::C64 => (f32::EPSILON as f64, f32::MIN_POSITIVE as f64),
            _ => (f64::EPSILON, f64::MIN_POSITIVE),
        };
        let mut bad = Vec::new();
        for (i, g) in out.to_c128_vec().iter().enumerate() {
            let w = b.want[i];
            // Smith's ratio `min(|c|,|d|) / max(|c|,|d|)` of a divisor
            // `c + di`: where it is subnormal, XLA flushed it to zero (so
            // `∞ · ratio` is NaN there, not ∞); those quotients are not
            // comparable.
            let (c, d) = (b.y[i].re.abs(), b.y[i].im.abs());
            let ratio = c.min(d) / c.max(d);
            if ratio != 0.0 && ratio < tiny {
                continue;
            }
            let scale = if w.re.is_finite() && w.im.is_finite() {
                w.re.abs().max(w.im.abs())
            } else {
                f64::INFINITY
            };
            if !(same(g.re, w.re, scale, eps, tiny) && same(g.im, w.im, scale, eps, tiny)) {
                bad.push(format!("({}) / ({}) = {g}, JAX {w}", b.x[i], b.y[i]));
            }
        }
        assert!(
            bad.is_empty(),
            "{name} {}: {} of {} quotients differ from JAX, e.g.\n{}",
            b.dtype,
            bad.len(),
            b.x.len(),
            bad[..bad.len().min(12)].join("\n")
        );
    }
}

#[test]
fn the_interpreter_divides_as_jax() {
    check(&InterpreterBackend, "interpreter");
}

#[test]
fn the_cpu_backend_divides_as_jax() {
    check(&CpuBackend::with_threads(1), "cpu");
}

#[test]
fn the_cuda_simulator_divides_as_jax() {
    check(&CudaSimBackend::new(), "cuda-sim");
}

/// The fuzzer's reproducer (`cargo xtask fuzz diff`, session 21): a
/// complex program dividing by an input that is zero. JAX 0.10.2 gives
/// `(0.5-0.25j)/0 = inf-infj`, so `e[0] = -inf+infj` and `k = -inf`.
#[test]
fn the_fuzzers_division_by_zero_gives_jaxs_values() {
    let text = "{ lambda ; a:c64[3]. let
    b:c64[3] = mul a (1+2j):c64[]
    c:c64[3] = add b 1j:c64[]
    d:c64[3] = div (0.5-0.25j):c64[] a
    e:c64[3] = sub c d
    f:f32[3] = real e
    g:f32[3] = imag e
    h:f32[3] = mul 0.5:f32[] g
    i:f32[3] = sub f h
    j:f32[] = reduce_sum[axes=(0,) out_sharding=None] i
    k:f32[] = add 0.0:f32[] j
  in (k, e) }";
    let j = ClosedJaxpr::without_consts(parse_jaxpr(text).expect("parses"));
    let a = [(0.0, 0.0), (-3.0, 0.0), (2.5, -1.0)].map(|(r, i)| Complex64::new(r, i));
    let a = HostArray::from_c128(DType::C64, &[3], &a).expect("array");
    let want_e = [
        (f64::NEG_INFINITY, f64::INFINITY),
        (-2.833_333_253_860_473_6, -5.083_333_492_279_053),
        (4.293_103_218_078_613, 5.017_241_477_966_309),
    ];
    let backends: [(&dyn Backend, &str); 3] = [
        (&InterpreterBackend, "interpreter"),
        (&CpuBackend::with_threads(1), "cpu"),
        (&CudaSimBackend::new(), "cuda-sim"),
    ];
    for (backend, name) in backends {
        let exe = backend.compile(&j).expect("compiles");
        let arg = backend.to_device(&a).expect("to device");
        let out = exe.execute(&[arg]).expect("runs");
        let k = out[0].to_host().expect("reads").to_f64_vec()[0];
        assert_eq!(k, f64::NEG_INFINITY, "{name}: k");
        let e = out[1].to_host().expect("reads").to_c128_vec();
        for (i, (z, (re, im))) in e.iter().zip(want_e).enumerate() {
            let eps = f32::EPSILON as f64;
            let scale = if re.is_finite() {
                re.abs().max(im.abs())
            } else {
                0.0
            };
            assert!(
                same(z.re, re, scale, eps, 0.0) && same(z.im, im, scale, eps, 0.0),
                "{name}: e[{i}] = {z}, JAX {re}{im:+}j"
            );
        }
    }
}

/// One block of `complex-maxmin-jax.txt`: per line, two complex values.
fn pairs(lines: &mut std::str::Lines<'_>, n: usize) -> Vec<(Complex64, Complex64)> {
    (0..n)
        .map(|_| {
            let v: Vec<f64> = lines
                .next()
                .expect("a line")
                .split(' ')
                .map(|w| w.parse().expect("a number"))
                .collect();
            (Complex64::new(v[0], v[1]), Complex64::new(v[2], v[3]))
        })
        .collect()
}

/// Whether `got` is `want` exactly: NaN for NaN, zeros with their signs.
fn same_bits(got: Complex64, want: Complex64) -> bool {
    let eq = |g: f64, w: f64| {
        (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
    };
    eq(got.re, want.re) && eq(got.im, want.im)
}

/// Complex `max`/`min` elementwise (all three evaluators) and reduced over
/// rows (interpreter and CPU; the CUDA rewrite refuses complex reductions
/// to an extremum) equal JAX's bit for bit on ties, signed zeros,
/// infinities and NaNs (`data/complex-maxmin-jax.txt`).
#[test]
fn complex_max_and_min_follow_xla_order() {
    let text = include_str!("../data/complex-maxmin-jax.txt");
    let mut lines = text.lines();
    let head = lines.next().expect("header");
    let values: Vec<f64> = head
        .split("values: ")
        .nth(1)
        .expect("values")
        .split(' ')
        .map(|v| v.parse().expect("a value"))
        .collect();
    let k = values.len();
    while let Some(block) = lines.next() {
        let (name, count) = block.split_once(' ').expect("block header");
        let dtype = DType::from_name(name).expect("dtype");
        let n: usize = count.parse().expect("count");
        let want = pairs(&mut lines, n);
        let (rname, rcount) = lines
            .next()
            .expect("reduce header")
            .split_once(' ')
            .expect("header");
        assert_eq!(rname, "reduce");
        let rows: usize = rcount.parse().expect("count");
        let rwant = pairs(&mut lines, rows);
        let x: Vec<Complex64> = (0..n)
            .map(|i| Complex64::new(values[i / k.pow(3)], values[i / k.pow(2) % k]))
            .collect();
        let y: Vec<Complex64> = (0..n)
            .map(|i| Complex64::new(values[i / k % k], values[i % k]))
            .collect();
        let ty = format!("{}[{n}]", dtype.short_name());
        let rty = format!("{}[{rows},{}]", dtype.short_name(), n / rows);
        let elementwise = ClosedJaxpr::without_consts(
            parse_jaxpr(&format!(
                "{{ lambda ; a:{ty} b:{ty}. let c:{ty} = max a b
    d:{ty} = min a b in (c, d) }}"
            ))
            .expect("parses"),
        );
        let rt = format!("{}[{rows}]", dtype.short_name());
        let reduced = ClosedJaxpr::without_consts(
            parse_jaxpr(&format!(
                "{{ lambda ; a:{rty}. let b:{rt} = reduce_max[axes=(1,) out_sharding=None] a
    c:{rt} = reduce_min[axes=(1,) out_sharding=None] a in (b, c) }}"
            ))
            .expect("parses"),
        );
        let xa = HostArray::from_c128(dtype, &[n], &x).expect("array");
        let ya = HostArray::from_c128(dtype, &[n], &y).expect("array");
        let ra = HostArray::from_c128(dtype, &[rows, n / rows], &x).expect("array");
        let backends: [(&dyn Backend, &str, bool); 3] = [
            (&InterpreterBackend, "interpreter", true),
            (&CpuBackend::with_threads(1), "cpu", true),
            (&CudaSimBackend::new(), "cuda-sim", false),
        ];
        for (backend, bname, reduces) in backends {
            let run = |j: &ClosedJaxpr, args: &[&HostArray]| -> Vec<Vec<Complex64>> {
                let exe = backend.compile(j).expect("compiles");
                let bufs: Vec<_> = args
                    .iter()
                    .map(|a| backend.to_device(a).expect("to device"))
                    .collect();
                exe.execute(&bufs)
                    .expect("runs")
                    .iter()
                    .map(|b| b.to_host().expect("reads").to_c128_vec())
                    .collect()
            };
            let got = run(&elementwise, &[&xa, &ya]);
            for (i, (mx, mn)) in want.iter().enumerate() {
                assert!(
                    same_bits(got[0][i], *mx) && same_bits(got[1][i], *mn),
                    "{bname} {name}: max/min({}, {}) = {}, {}; JAX {mx}, {mn}",
                    x[i],
                    y[i],
                    got[0][i],
                    got[1][i]
                );
            }
            if reduces {
                let got = run(&reduced, &[&ra]);
                for (r, (mx, mn)) in rwant.iter().enumerate() {
                    assert!(
                        same_bits(got[0][r], *mx) && same_bits(got[1][r], *mn),
                        "{bname} {name}: row {r} reduce_max/min = {}, {}; JAX {mx}, {mn}",
                        got[0][r],
                        got[1][r]
                    );
                }
            }
        }
    }
}
