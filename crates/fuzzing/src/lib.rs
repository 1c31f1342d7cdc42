//! The fuzz targets' bodies, shared so a crash reproducer can be replayed
//! by a plain test: text in, and the invariants of issue 23 asserted (no
//! panic anywhere; the interpreter and the CPU backend agree).
//!
//! Programs that may legitimately run for long (loops: `while`, `scan`,
//! `for_loop`, `pallas_call` grids) or touch more than [`MAX_ELEMS`]
//! elements in any value are skipped by the evaluating targets: a slow
//! program is not a bug, and libFuzzer would report it as a timeout.

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::primitive::NestedJaxpr;
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{check_jaxpr, parse_jaxpr, Backend, ClosedJaxpr, DType, Dim, HostArray, Jaxpr};
use std::sync::OnceLock;

pub mod pallas;

/// Largest value (elements) an evaluating target lets a program declare.
pub const MAX_ELEMS: usize = 4096;

/// Primitives whose run time is not bounded by their types.
const UNBOUNDED: [&str; 4] = ["while", "scan", "for_loop", "pallas_call"];

/// Decompositions whose vectors are defined only up to sign: the CPU
/// backend (faer) and the interpreter (reference Jacobi) may flip a
/// singular or eigen vector pair, as LAPACK and XLA do between machines,
/// so the differential target skips programs that use them (their values
/// are checked up to sign by the decomposition tests).
const SIGN_AMBIGUOUS: [&str; 2] = ["svd", "eigh"];

/// Whether `j` (or a jaxpr nested in it) applies primitive `name`.
fn uses(j: &Jaxpr, name: &str) -> bool {
    j.eqns.iter().any(|e| {
        e.primitive.name() == name
            || e.primitive.param_jaxprs().iter().any(|p| {
                let nested = match p.jaxpr {
                    NestedJaxpr::Closed(c) => &c.jaxpr,
                    NestedJaxpr::Open(j) => j,
                };
                uses(nested, name)
            })
    })
}

/// Parses `data` as text; prints what parses.
pub fn parse_and_print(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(j) = parse_jaxpr(&text) {
        let _ = print_jaxpr(&j);
    }
}

/// Parses and checks `data`; a checked jaxpr's printed text must parse
/// and check again.
pub fn check_roundtrip(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(j) = parse_jaxpr(&text) else { return };
    if check_jaxpr(&j).is_err() {
        return;
    }
    let printed = print_jaxpr(&j);
    let again = parse_jaxpr(&printed).unwrap_or_else(|e| {
        panic!("printed text of a checked jaxpr does not parse: {e}\n{printed}")
    });
    if let Err(e) = check_jaxpr(&again) {
        panic!("printed text of a checked jaxpr does not check: {e}\n{printed}");
    }
}

/// Whether `j` (and every jaxpr nested in it) has static, small types and
/// no unbounded primitive.
fn bounded(j: &Jaxpr, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    let small = j.vars.iter().all(|a| {
        let mut n = 1usize;
        a.shape().iter().all(|d| match d {
            Dim::Const(k) => {
                n = n.saturating_mul(*k);
                n <= MAX_ELEMS
            }
            Dim::Var(_) => false,
        })
    });
    small
        && j.eqns.iter().all(|e| {
            !UNBOUNDED.contains(&e.primitive.name())
                && e.primitive.param_jaxprs().iter().all(|p| {
                    let nested = match p.jaxpr {
                        NestedJaxpr::Closed(c) => &c.jaxpr,
                        NestedJaxpr::Open(j) => j,
                    };
                    bounded(nested, depth + 1)
                })
        })
}

/// FNV-1a of the text: the seed of its inputs (a reproducer replays).
fn seed(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Random inputs for `j`'s invars: floats (and complex numbers' real
/// parts) in [-3, 3) (never all zeros or ones), integers in [-4, 24)
/// (indices in and out of range), random bools.
fn inputs(j: &Jaxpr, mut s: u64) -> Option<Vec<HostArray>> {
    j.invars
        .iter()
        .map(|v| {
            let a = j.vars.get(v.index())?;
            let shape: Vec<usize> = a
                .shape()
                .iter()
                .map(|d| d.as_const())
                .collect::<Option<_>>()?;
            let dt = a.array().dtype;
            let n: usize = shape.iter().product();
            let vals: Vec<f64> = (0..n)
                .map(|_| {
                    let r = next(&mut s);
                    if dt.is_inexact() {
                        ((r >> 11) as f64 / (1u64 << 53) as f64) * 6.0 - 3.0
                    } else if dt == DType::Bool {
                        (r & 1) as f64
                    } else {
                        (r % 28) as f64 - 4.0
                    }
                })
                .collect();
            HostArray::from_f64(dt, &shape, &vals).ok()
        })
        .collect()
}

/// A small checked jaxpr from `data` with its inputs, or `None`.
fn program(data: &[u8]) -> Option<(ClosedJaxpr, Vec<HostArray>)> {
    let text = std::str::from_utf8(data).ok()?;
    let j = parse_jaxpr(text).ok()?;
    if !j.constvars.is_empty() || check_jaxpr(&j).is_err() || !bounded(&j, 0) {
        return None;
    }
    let args = inputs(&j, seed(data))?;
    Some((ClosedJaxpr::without_consts(j), args))
}

/// Keeps the evaluators' buffers small (a fuzz input is never a reason to
/// take the machine's memory).
fn limit_memory() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| jaxon_ir::memory::set_memory_limit(Some(64 << 20)));
}

/// Evaluates a small checked jaxpr from `data` with the interpreter.
pub fn interp(data: &[u8]) {
    limit_memory();
    if let Some((j, args)) = program(data) {
        let _ = jaxon_ir::eval_closed_jaxpr(&j, &args);
    }
}

/// Float closeness: within 1e-3 + 1e-2·|w|, NaN only with NaN, an
/// infinity only with itself.
fn close(g: f64, w: f64) -> bool {
    if w.is_nan() {
        g.is_nan()
    } else if w.is_infinite() {
        g == w
    } else {
        (g - w).abs() <= 1e-3 + 1e-2 * w.abs()
    }
}

/// The elements of `a` as `f64`s; a complex element gives its real then
/// its imaginary part.
fn parts(a: &HostArray) -> Vec<f64> {
    if a.dtype().is_complex() {
        a.to_c128_vec().iter().flat_map(|z| [z.re, z.im]).collect()
    } else {
        a.to_f64_vec()
    }
}

/// Whether two results agree: same dtype and shape; integers and bools
/// exactly; floats [`close`] (or, with `loose_non_finite`, both
/// non-finite) where the program is well conditioned, that is where the
/// interpreter's own results on inputs perturbed element by element by
/// about one part in a million ([`perturb`]) and with every step's result
/// perturbed by a few ulps ([`rounding_perturbed`]) (`nearby`) are all
/// close to `want`; there `got` may differ from `want` by [`close`]'s
/// tolerance or by four times the largest move of the perturbed runs. A chaotic program (an unrolled iteration of `sin`) or an
/// ill-conditioned one (a variance that cancels to rounding noise, then
/// `rsqrt`) amplifies one rounding difference into any value, and backends
/// may sum in another order.
fn agree(
    got: &HostArray,
    want: &HostArray,
    nearby: &[&HostArray],
    loose_non_finite: bool,
) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "cpu gives {}{:?}, the interpreter {}{:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let float = want.dtype().is_inexact();
    let near: Vec<Vec<f64>> = nearby.iter().map(|n| parts(n)).collect();
    for (i, (g, w)) in parts(got).iter().zip(parts(want)).enumerate() {
        let ok = if !float {
            *g == w
        } else {
            // How far the perturbed runs moved: a result may differ from
            // the interpreter's by four times that on top of `close`.
            let spread = near
                .iter()
                .map(|n| match n.get(i) {
                    Some(&n) if n.is_finite() && w.is_finite() => (n - w).abs(),
                    Some(&n) if n == w || (n.is_nan() && w.is_nan()) => 0.0,
                    Some(_) | None => f64::INFINITY,
                })
                .fold(0.0, f64::max);
            let stable = !near.is_empty() && spread.is_finite() && close(w + spread, w);
            let both_non_finite = !g.is_finite() && !w.is_finite();
            !stable
                || close(*g, w)
                || (g - w).abs() <= 4.0 * spread
                || (loose_non_finite && both_non_finite)
        };
        if !ok {
            let at = if want.dtype().is_complex() {
                let part = if i % 2 == 0 { "real" } else { "imaginary" };
                format!("element {} ({part} part)", i / 2)
            } else {
                format!("element {i}")
            };
            return Err(format!("{at}: cpu {g}, interpreter {w}"));
        }
    }
    Ok(())
}

/// The float arguments with each element scaled by `1 + sign·ε_i`, where
/// `ε_i` cycles through 1, 0.5, -0.75, 0.25 millionths: neighbours move by
/// different amounts (a uniform scale would leave cancellations such as
/// `x - mean(x)` cancelling just as before).
fn perturb(args: &[HostArray], sign: f64) -> Vec<HostArray> {
    const EPS: [f64; 4] = [1e-6, 0.5e-6, -0.75e-6, 0.25e-6];
    args.iter()
        .map(|a| {
            if a.dtype().is_float() {
                let v: Vec<f64> = a
                    .to_f64_vec()
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x * (1.0 + sign * EPS[i % EPS.len()]))
                    .collect();
                HostArray::from_f64(a.dtype(), a.shape(), &v).unwrap_or_else(|_| a.clone())
            } else {
                a.clone()
            }
        })
        .collect()
}

/// Whether the CPU backend may round `p`'s results differently from the
/// interpreter: transcendental functions (polynomials against libm),
/// divisions and powers, reductions (another summation order), products,
/// windows and calls. IEEE-exact arithmetic (`add`, `sub`, `mul`, `sqrt`,
/// ...), comparisons and data movement give the same bits on both, so a
/// difference downstream of them alone is a bug, however ill-conditioned
/// (`cos(x - 1e9)` found the CPU's `cos` wrong past 2^17).
fn rounds_differently(p: &jaxon_ir::primitive::Primitive) -> bool {
    use jaxon_ir::primitive::{Elementwise, Primitive};
    const EXACT: [&str; 14] = [
        "neg",
        "abs",
        "sign",
        "floor",
        "ceil",
        "sqrt",
        "copy",
        "copy_p",
        "stop_gradient",
        "square",
        "add",
        "sub",
        "mul",
        "rem",
    ];
    match p {
        Primitive::Elementwise(Elementwise::Unary(op)) => !EXACT.contains(&op.name()),
        Primitive::Elementwise(Elementwise::Binary(op)) => {
            !EXACT.contains(&op.name()) && !matches!(op.name(), "max" | "min" | "nextafter")
        }
        Primitive::Elementwise(Elementwise::IntegerPow(_))
        | Primitive::Elementwise(Elementwise::RegularizedIncompleteBeta)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Window(_)
        | Primitive::Control(_)
        | Primitive::Random(_) => true,
        Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Callback(_) => false,
    }
}

/// `j` with every f32/f64 result of a top-level equation that
/// [`rounds_differently`] scaled by `1 + sign·2^-21` (four f32 ulps): a
/// stand-in for a backend that rounds those steps differently. Inputs
/// perturbed relative to themselves miss programs that amplify one step's
/// rounding (an unrolled `sin(b·x)` with a large `b` and a tiny `x`); this
/// catches them.
fn rounding_perturbed(j: &ClosedJaxpr, sign: f64) -> ClosedJaxpr {
    use jaxon_ir::primitive::{BinaryOp, Elementwise, Primitive};
    use jaxon_ir::{Atom, Aval, Binder, Eqn, Literal};
    let mut out: Jaxpr = (*j.jaxpr).clone();
    let eqns = std::mem::take(&mut out.eqns);
    for mut e in eqns {
        let mut after = Vec::new();
        let perturbed = rounds_differently(&e.primitive);
        for b in e.outputs.iter_mut().filter(|_| perturbed) {
            let Binder::Var(v) = b else { continue };
            let Some(Aval::Array(a)) = out.try_aval(*v).cloned() else {
                continue;
            };
            if !matches!(a.dtype, DType::F32 | DType::F64) || a.static_sizes().is_none() {
                continue;
            }
            let dtype = a.dtype;
            let exact = out.new_var(Aval::Array(a));
            let shown = std::mem::replace(v, exact);
            after.push(Eqn {
                primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)),
                inputs: vec![
                    Atom::Var(exact),
                    Atom::Lit(Literal::new(1.0 + sign * 2f64.powi(-21), dtype)),
                ],
                outputs: vec![Binder::Var(shown)],
            });
        }
        out.eqns.push(e);
        out.eqns.extend(after);
    }
    ClosedJaxpr {
        jaxpr: std::sync::Arc::new(out),
        consts: j.consts.clone(),
    }
}

/// Runs a small checked jaxpr from `data` on the interpreter and the CPU
/// backend; when both succeed, their results must agree.
pub fn differential(data: &[u8]) {
    limit_memory();
    let Some((j, args)) = program(data) else {
        return;
    };
    if SIGN_AMBIGUOUS.iter().any(|p| uses(&j.jaxpr, p)) {
        return;
    }
    let Ok(want) = jaxon_ir::eval_closed_jaxpr(&j, &args) else {
        return;
    };
    // Inputs perturbed with opposite signs, and every step's rounding
    // perturbed with opposite signs: `None` when any run fails.
    let nearby: Option<Vec<Vec<HostArray>>> =
        [1.0, -1.0]
            .iter()
            .map(|&sign| jaxon_ir::eval_closed_jaxpr(&j, &perturb(&args, sign)).ok())
            .chain([1.0, -1.0].iter().map(|&sign| {
                jaxon_ir::eval_closed_jaxpr(&rounding_perturbed(&j, sign), &args).ok()
            }))
            .collect();
    static CPU: OnceLock<CpuBackend> = OnceLock::new();
    // Exact math: the functions the backend otherwise approximates inline
    // are the interpreter's to the bit (their accuracy is the ulp tables'
    // business), so a chaotic program cannot turn one ulp into a false
    // disagreement.
    let cpu = CPU.get_or_init(|| CpuBackend::with_threads(1).with_exact_math(true));
    let got = (|| {
        let exe = cpu.compile(&j)?;
        let bufs = args
            .iter()
            .map(|a| cpu.to_device(a))
            .collect::<Result<Vec<_>, _>>()?;
        let outs = exe.execute(&bufs)?;
        outs.iter()
            .map(|b| b.to_host())
            .collect::<Result<Vec<_>, _>>()
    })();
    // Compiling clears nothing: drop cached programs now and then so a long
    // run's memory stays flat.
    if cpu.cached_programs() > 256 {
        cpu.clear_cache();
    }
    let Ok(got) = got else { return };
    assert_eq!(got.len(), want.len(), "number of results");
    // An FFT of non-finite values mixes infinities into sums with every
    // twiddle: rustfft and the reference DFT (like XLA's FFT libraries)
    // give infinities or NaNs in different places, so there only
    // finiteness itself must agree.
    let loose = uses(&j.jaxpr, "fft");
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        let n: Vec<&HostArray> = nearby.iter().flatten().filter_map(|n| n.get(k)).collect();
        if let Err(e) = agree(g, w, &n, loose) {
            panic!("result {k}: {e}\n{}", print_jaxpr(&j.jaxpr));
        }
    }
}
