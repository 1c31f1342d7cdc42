//! The JAX conformance runner: `conformance CORPUS.jsonl [--require KINDS]`.
//!
//! For each case it checks that the jaxpr parses and type-checks (`parse`),
//! prints back byte for byte (`print`) and evaluates to JAX's outputs
//! (`eval`), and the same for JAX's grad jaxpr (`grad_parse`, `grad_print`,
//! `grad_eval`). `own_grad`, `own_jvp` and `own_vmap` apply jaxon's
//! transforms to the parsed jaxpr and compare with JAX's recorded results.
//!
//! Usage:
//! `conformance CORPUS.jsonl [--require parse,print,eval]
//!  [--backend interpreter|cpu|cuda-sim|cuda] [--allow-unsupported]
//!  [--filter SUBSTRING] [--groups G1,G2] [--timeout SECONDS] [--known-failures FILE]
//!  [--cpu-devices N] [--sim-devices N]`
//!
//! `--require` takes check names or kinds (`parse` covers `parse` and
//! `grad_parse`); the exit status is 1 if any required check fails, 2 on a
//! usage or corpus error.
//!
//! `--backend cpu` evaluates on the Cranelift backend instead of the
//! reference interpreter. Evaluations it cannot compile yet are reported as
//! `FAIL (unsupported)` and summarised by primitive at the end.
//! `--cpu-devices N` gives it N CPU devices (else `JAXON_CPU_DEVICES`,
//! default 1): the shard corpus needs 2. `--sim-devices N` gives
//! `cuda-sim` N simulated devices (else `JAXON_CUDA_SIM_DEVICES`, default 1).
//! `--backend cuda-sim` evaluates the CUDA lowering's launch plans on the
//! kernel simulator (`jaxon-backend-cuda`), reported the same way; it is
//! slow and not part of the required conformance run. `--backend cuda`
//! runs them on the GPU (`cargo xtask gpu-check` carries this runner).
//! With `--allow-unsupported`, a required check that fails only because
//! the backend cannot compile a primitive yet does not fail the run (wrong
//! values still do).

use jaxon_backend_cpu::CpuBackend;
use jaxon_backend_cuda::lower::{CudaBackend, CudaSimBackend};
use jaxon_ir::{
    check_closed_jaxpr, eval_closed_jaxpr, parse_closed_jaxpr, print::print_jaxpr, Backend,
    ClosedJaxpr, HostArray, IrError,
};
use jaxon_tests::{compare_outputs, decode_case, decode_header, own_transforms, Case, Tolerance};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

/// Every check, in report order, with its kind.
const CHECKS: [(&str, &str); 9] = [
    ("parse", "parse"),
    ("print", "print"),
    ("eval", "eval"),
    ("grad_parse", "parse"),
    ("grad_print", "print"),
    ("grad_eval", "eval"),
    ("own_grad", "transform"),
    ("own_jvp", "transform"),
    ("own_vmap", "transform"),
];

/// The outcome of one check of one case.
#[derive(Clone, Debug)]
enum Outcome {
    Pass,
    Fail(String),
    /// The case has no record for this check (e.g. no grad): not counted.
    NotApplicable,
}

/// Which backend evaluates the `eval` checks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum EvalBackend {
    /// The reference interpreter.
    Interpreter,
    /// The Cranelift CPU backend.
    Cpu,
    /// The CUDA lowering, run on the kernel simulator.
    CudaSim,
    /// The CUDA lowering, run on the GPU.
    Cuda,
}

impl EvalBackend {
    /// The name `--backend` takes.
    fn name(self) -> &'static str {
        match self {
            EvalBackend::Interpreter => "interpreter",
            EvalBackend::Cpu => "cpu",
            EvalBackend::CudaSim => "cuda-sim",
            EvalBackend::Cuda => "cuda",
        }
    }
}

/// The marker of evaluations the chosen backend cannot compile yet.
const UNSUPPORTED: &str = "unsupported: ";

/// The CPU backend's device count (`--cpu-devices`).
static CPU_DEVICES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// The simulator's device count (`--sim-devices`).
static SIM_DEVICES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

struct Options {
    corpus: String,
    backend: EvalBackend,
    require: Vec<String>,
    filter: Option<String>,
    /// Only the cases of these groups (all when empty).
    groups: Vec<String>,
    timeout: Duration,
    /// `(case, check)` failures that are documented and do not fail `--require`.
    known: Vec<(String, String)>,
    /// Unsupported-primitive failures do not fail `--require`.
    allow_unsupported: bool,
}

/// Whether the case is left out by `--filter` or `--groups`.
fn skipped(opts: &Options, name: &str, group: &str) -> bool {
    opts.filter
        .as_ref()
        .is_some_and(|f| !name.contains(f.as_str()))
        || (!opts.groups.is_empty() && !opts.groups.iter().any(|g| g == group))
}

/// Whether `(case, check)` is a documented failure (`CASE *` covers every
/// check of the case).
fn is_known(opts: &Options, case: &str, check: &str) -> bool {
    opts.known
        .iter()
        .any(|(c, k)| c == case && (k == check || k == "*"))
}

/// Reads a known-failures file: `CASE CHECK  # reason` per line (`*` for
/// every check).
fn read_known(path: &str) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut known = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some(case), Some(check)) => known.push((case.to_string(), check.to_string())),
            _ => return Err(format!("{path}: expected `CASE CHECK`, found {line:?}")),
        }
    }
    Ok(known)
}

fn usage() -> String {
    "usage: conformance CORPUS.jsonl [--require parse,print,eval] \
     [--backend interpreter|cpu|cuda-sim|cuda] [--allow-unsupported] \
     [--filter SUBSTRING] [--groups G1,G2] [--timeout SECONDS] [--known-failures FILE] \
     [--cpu-devices N] [--sim-devices N]"
        .to_string()
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut corpus = None;
    let mut require = Vec::new();
    let mut filter = None;
    let mut groups = Vec::new();
    let mut known = Vec::new();
    let mut timeout = Duration::from_secs(120);
    let mut backend = EvalBackend::Interpreter;
    let mut allow_unsupported = false;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or(format!("{name} needs a value\n{}", usage()))
        };
        match arg.as_str() {
            "--require" => {
                for k in value("--require")?.split(',').filter(|k| !k.is_empty()) {
                    if !CHECKS.iter().any(|&(n, kind)| n == k || kind == k) {
                        return Err(format!("--require: unknown check {k:?}"));
                    }
                    require.push(k.to_string());
                }
            }
            "--backend" => {
                let b = value("--backend")?;
                backend = match b.as_str() {
                    "interpreter" => EvalBackend::Interpreter,
                    "cpu" => EvalBackend::Cpu,
                    "cuda-sim" => EvalBackend::CudaSim,
                    "cuda" => EvalBackend::Cuda,
                    _ => {
                        return Err(format!(
                            "--backend {b}: expected interpreter, cpu, cuda-sim or cuda"
                        ))
                    }
                };
            }
            "--allow-unsupported" => allow_unsupported = true,
            "--filter" => filter = Some(value("--filter")?),
            "--groups" => {
                groups = value("--groups")?
                    .split(',')
                    .filter(|g| !g.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "--known-failures" => known = read_known(&value("--known-failures")?)?,
            "--timeout" => {
                let s = value("--timeout")?;
                let secs: u64 = s
                    .parse()
                    .map_err(|_| format!("--timeout: bad seconds {s:?}"))?;
                timeout = Duration::from_secs(secs);
            }
            "--cpu-devices" => {
                let s = value("--cpu-devices")?;
                let n: usize = s
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| format!("--cpu-devices: bad device count {s:?}"))?;
                CPU_DEVICES
                    .set(n)
                    .map_err(|_| "--cpu-devices given twice".to_string())?;
            }
            "--sim-devices" => {
                let s = value("--sim-devices")?;
                let n: usize = s
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| format!("--sim-devices: bad device count {s:?}"))?;
                SIM_DEVICES
                    .set(n)
                    .map_err(|_| "--sim-devices given twice".to_string())?;
            }
            "-h" | "--help" => return Err(usage()),
            a if a.starts_with("--") => return Err(format!("unknown option {a}\n{}", usage())),
            a => {
                if corpus.replace(a.to_string()).is_some() {
                    return Err(format!("more than one corpus given\n{}", usage()));
                }
            }
        }
    }
    Ok(Options {
        corpus: corpus.ok_or_else(usage)?,
        backend,
        require,
        filter,
        groups,
        timeout,
        known,
        allow_unsupported,
    })
}

/// The primitive named by an unsupported-evaluation message
/// ("... cannot compile `NAME` ...").
fn unsupported_primitive(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix(UNSUPPORTED)?;
    let start = rest.find('`')? + 1;
    let len = rest[start..].find('`')?;
    Some(rest[start..start + len].to_string())
}

/// Runs `f`, turning a panic into a failure message.
fn guarded(f: impl FnOnce() -> Outcome) -> Outcome {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(o) => o,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown payload".into());
            Outcome::Fail(format!("panicked: {msg}"))
        }
    }
}

/// The first difference between printed and expected text.
fn text_difference(got: &str, exp: &str) -> String {
    let at = got
        .bytes()
        .zip(exp.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(exp.len()));
    let line = exp[..at.min(exp.len())].matches('\n').count() + 1;
    let snippet = |s: &str| {
        let start = s.floor_char_boundary(at.saturating_sub(20));
        let end = s.ceil_char_boundary((at + 40).min(s.len()));
        format!("{:?}", &s[start..end])
    };
    format!(
        "byte {at} (line {line}): got {}, expected {}",
        snippet(got),
        snippet(exp)
    )
}

/// Evaluates on the chosen backend. A compile error of a compiling backend
/// that is an equation it cannot compile yet is marked with
/// [`UNSUPPORTED`].
fn evaluate(
    backend: EvalBackend,
    closed: &ClosedJaxpr,
    inputs: &[HostArray],
) -> Result<Vec<HostArray>, String> {
    match backend {
        EvalBackend::Interpreter => eval_closed_jaxpr(closed, inputs).map_err(|e| e.to_string()),
        EvalBackend::Cpu => {
            let cpu = match CPU_DEVICES.get() {
                Some(&n) => CpuBackend::new().with_devices(n),
                None => CpuBackend::new(),
            };
            run_on(&cpu, closed, inputs)
        }
        EvalBackend::CudaSim => {
            let sim = match SIM_DEVICES.get() {
                Some(&n) => CudaSimBackend::new().with_devices(n),
                None => CudaSimBackend::new(),
            };
            run_on(&sim, closed, inputs)
        }
        EvalBackend::Cuda => run_on(&CudaBackend::new(), closed, inputs),
    }
}

/// Compiles and runs `closed` on `backend`, marking `Unsupported` compile
/// errors with [`UNSUPPORTED`].
fn run_on(
    backend: &dyn Backend,
    closed: &ClosedJaxpr,
    inputs: &[HostArray],
) -> Result<Vec<HostArray>, String> {
    let exe = backend.compile(closed).map_err(|e| match &e {
        IrError::Unsupported { .. } => format!("{UNSUPPORTED}{e}"),
        _ => e.to_string(),
    })?;
    let bufs = inputs
        .iter()
        .map(|a| backend.to_device(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    exe.execute(&bufs)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|b| b.to_host().map_err(|e| e.to_string()))
        .collect()
}

/// parse + print + eval of one jaxpr text; returns the three outcomes.
fn check_jaxpr_text(
    backend: EvalBackend,
    text: &str,
    consts: &[HostArray],
    inputs: &[HostArray],
    outputs: &[HostArray],
    tol: Tolerance,
) -> [Outcome; 3] {
    let parsed: Result<ClosedJaxpr, String> =
        match panic::catch_unwind(|| parse_closed_jaxpr(text, consts.to_vec())) {
            Ok(r) => r.map_err(|e| format!("parse error at {e}")),
            Err(_) => Err("parser panicked".into()),
        };
    let closed = match parsed {
        Ok(c) => c,
        Err(e) => {
            let blocked = Outcome::Fail("not run: the jaxpr did not parse".into());
            return [Outcome::Fail(e), blocked.clone(), blocked];
        }
    };
    let parse = guarded(|| match check_closed_jaxpr(&closed) {
        Ok(()) => Outcome::Pass,
        Err(e) => Outcome::Fail(format!("check failed: {e}")),
    });
    let print = guarded(|| {
        let got = print_jaxpr(&closed.jaxpr);
        if got == text {
            Outcome::Pass
        } else {
            Outcome::Fail(text_difference(&got, text))
        }
    });
    let eval = guarded(|| match evaluate(backend, &closed, inputs) {
        Ok(got) => match compare_outputs(&got, outputs, tol) {
            Ok(()) => Outcome::Pass,
            Err(e) => Outcome::Fail(e),
        },
        Err(e) if e.starts_with(UNSUPPORTED) => Outcome::Fail(e),
        Err(e) => Outcome::Fail(format!("eval error: {e}")),
    });
    [parse, print, eval]
}

/// All checks of one case, in the order of [`CHECKS`].
fn run_case(case: &Case, backend: EvalBackend) -> Vec<Outcome> {
    let tol = Tolerance {
        rtol: case.rtol,
        atol: case.atol,
    };
    let mut out = Vec::with_capacity(CHECKS.len());
    out.extend(check_jaxpr_text(
        backend,
        &case.jaxpr,
        &case.consts,
        &case.inputs,
        &case.outputs,
        tol,
    ));
    match &case.grad {
        Some(g) => out.extend(check_jaxpr_text(
            backend,
            &g.jaxpr,
            &g.consts,
            &case.inputs,
            &g.outputs,
            tol,
        )),
        None => out.extend([
            Outcome::NotApplicable,
            Outcome::NotApplicable,
            Outcome::NotApplicable,
        ]),
    }
    let outcome = |r: Result<(), String>| match r {
        Ok(()) => Outcome::Pass,
        Err(e) => Outcome::Fail(e),
    };
    out.push(match &case.grad {
        Some(g) => guarded(|| outcome(own_transforms::own_grad(case, g, tol))),
        None => Outcome::NotApplicable,
    });
    out.push(match &case.jvp {
        Some(j) => guarded(|| outcome(own_transforms::own_jvp(case, j, tol))),
        None => Outcome::NotApplicable,
    });
    out.push(match &case.vmap {
        Some(v) => guarded(|| outcome(own_transforms::own_vmap(case, v, tol))),
        None => Outcome::NotApplicable,
    });
    out
}

/// Runs a case on its own thread, giving up after `timeout`.
fn run_case_with_timeout(case: &Case, timeout: Duration, backend: EvalBackend) -> Vec<Outcome> {
    let (tx, rx) = mpsc::channel();
    let owned = case.clone();
    let spawned = std::thread::Builder::new()
        .name(case.name.clone())
        .stack_size(64 << 20)
        .spawn(move || {
            let _ = tx.send(run_case(&owned, backend));
        });
    if let Err(e) = spawned {
        return vec![Outcome::Fail(format!("could not start thread: {e}")); CHECKS.len()];
    }
    match rx.recv_timeout(timeout) {
        Ok(o) => o,
        // The thread keeps running detached; the process exit ends it.
        Err(_) => vec![Outcome::Fail(format!("timed out after {timeout:?}")); CHECKS.len()],
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Tally {
    fn add(&mut self, o: &Outcome) {
        match o {
            Outcome::Pass => self.passed += 1,
            Outcome::Fail(_) => self.failed += 1,
            Outcome::NotApplicable => {}
        }
    }
}

fn print_table(groups: &BTreeMap<String, Vec<Tally>>) {
    let width = groups.keys().map(String::len).max().unwrap_or(5).max(5);
    println!();
    println!("passed/failed/skipped by group and check:");
    let mut header = format!("{:width$}", "group");
    for (name, _) in CHECKS {
        header.push_str(&format!(" {name:>11}"));
    }
    println!("{header}");
    let mut totals = vec![Tally::default(); CHECKS.len()];
    for (group, tallies) in groups {
        let mut row = format!("{group:width$}");
        for (k, t) in tallies.iter().enumerate() {
            row.push_str(&format!(
                " {:>11}",
                format!("{}/{}/{}", t.passed, t.failed, t.skipped)
            ));
            totals[k].passed += t.passed;
            totals[k].failed += t.failed;
            totals[k].skipped += t.skipped;
        }
        println!("{row}");
    }
    let mut row = format!("{:width$}", "total");
    for t in &totals {
        row.push_str(&format!(
            " {:>11}",
            format!("{}/{}/{}", t.passed, t.failed, t.skipped)
        ));
    }
    println!("{row}");
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&opts.corpus) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("conformance: cannot read {}: {e}", opts.corpus);
            return ExitCode::from(2);
        }
    };
    // Panics are reported as failures; keep their default messages quiet.
    panic::set_hook(Box::new(|_| {}));

    let mut groups: BTreeMap<String, Vec<Tally>> = BTreeMap::new();
    let mut total = Tally::default();
    let mut required_failed = 0usize;
    let mut unsupported_by_prim: BTreeMap<String, usize> = BTreeMap::new();
    for (lineno, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (name, group, outcomes) = match decode_case(line) {
            Ok(case) => {
                if skipped(&opts, &case.name, &case.group) {
                    continue;
                }
                let outcomes = run_case_with_timeout(&case, opts.timeout, opts.backend);
                (case.name, case.group, outcomes)
            }
            // A well-formed line whose values this build cannot decode (an
            // unknown dtype): every check of the case fails with the reason.
            Err(e) => match decode_header(line) {
                Ok((name, group)) => {
                    if skipped(&opts, &name, &group) {
                        continue;
                    }
                    let msg = format!("cannot decode the case: {e}");
                    (name, group, vec![Outcome::Fail(msg); CHECKS.len()])
                }
                Err(_) => {
                    eprintln!("conformance: {}:{}: {e}", opts.corpus, lineno + 1);
                    return ExitCode::from(2);
                }
            },
        };
        let tallies = groups
            .entry(group.clone())
            .or_insert_with(|| vec![Tally::default(); CHECKS.len()]);
        for (k, o) in outcomes.iter().enumerate() {
            let (check, kind) = CHECKS[k];
            tallies[k].add(o);
            total.add(o);
            match o {
                Outcome::Fail(msg) => {
                    let is_known = is_known(&opts, &name, check);
                    let unsupported = msg.starts_with(UNSUPPORTED);
                    if let Some(prim) = unsupported_primitive(msg) {
                        *unsupported_by_prim.entry(prim).or_default() += 1;
                    }
                    let tag = match (is_known, unsupported) {
                        (true, _) => "FAIL (known)",
                        (false, true) => "FAIL (unsupported)",
                        (false, false) => "FAIL",
                    };
                    println!("{tag} {name} {check}: {msg}");
                    let excused = is_known || (unsupported && opts.allow_unsupported);
                    if !excused && opts.require.iter().any(|r| r == check || r == kind) {
                        required_failed += 1;
                    }
                }
                Outcome::Pass if is_known(&opts, &name, check) => {
                    println!("NOTE {name} {check} passes now: remove it from the known failures");
                }
                Outcome::Pass | Outcome::NotApplicable => {}
            }
        }
    }
    print_table(&groups);
    println!();
    if !unsupported_by_prim.is_empty() {
        let total: usize = unsupported_by_prim.values().sum();
        println!(
            "unsupported by the {} backend ({total} checks):",
            opts.backend.name()
        );
        for (prim, n) in &unsupported_by_prim {
            println!("  {prim} x{n}");
        }
    }
    println!(
        "conformance: {} passed, {} failed, {} skipped",
        total.passed, total.failed, total.skipped
    );
    if required_failed > 0 {
        eprintln!(
            "conformance: {required_failed} required check(s) failed (--require {})",
            opts.require.join(",")
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_difference_points_at_first_differing_byte() {
        let exp = "{ lambda ; a:f32[]. let\n    b:f32[] = neg a\n  in (b,) }";
        let got = "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n  in (b,) }";
        let d = text_difference(got, exp);
        assert!(d.starts_with("byte 38 (line 2): got "), "{d}");
        assert!(d.contains("sin a") && d.contains("neg a"), "{d}");
        // A prefix: the difference is where the shorter text ends.
        assert!(text_difference("abc", "abcd").starts_with("byte 3 (line 1)"));
    }

    #[test]
    fn unsupported_messages_name_the_primitive() {
        let m = format!("{UNSUPPORTED}the cpu backend cannot compile `cumsum`: ... (eqn 0: ...)");
        assert_eq!(unsupported_primitive(&m).as_deref(), Some("cumsum"));
        assert_eq!(unsupported_primitive("eval error: `x`"), None);
    }

    #[test]
    fn cpu_backend_evaluates_a_case() {
        let line = r#"{"name":"n","group":"g","jaxpr":"{ lambda ; a:f32[3]. let b:f32[3] = neg a in (b,) }",
            "consts":[],"inputs":[{"dtype":"f32","shape":[3],"data":[1.0,-2.0,0.5]}],
            "outputs":[{"dtype":"f32","shape":[3],"data":[-1.0,2.0,-0.5]}],
            "rtol":0,"atol":0,"grad":null,"jvp":null,"vmap":null}"#;
        let case = decode_case(&line.replace('\n', " ")).unwrap();
        let out = run_case(&case, EvalBackend::Cpu);
        assert!(matches!(out[2], Outcome::Pass), "{:?}", out[2]);
        let bad = line.replace("[-1.0,2.0,-0.5]", "[-1.0,2.0,0.5]");
        let case = decode_case(&bad.replace('\n', " ")).unwrap();
        assert!(matches!(
            run_case(&case, EvalBackend::Cpu)[2],
            Outcome::Fail(_)
        ));
    }

    #[test]
    fn cuda_sim_backend_evaluates_a_case_and_marks_unsupported() {
        let line = r#"{"name":"n","group":"g","jaxpr":"{ lambda ; a:f32[3]. let b:f32[3] = neg a in (b,) }",
            "consts":[],"inputs":[{"dtype":"f32","shape":[3],"data":[1.0,-2.0,0.5]}],
            "outputs":[{"dtype":"f32","shape":[3],"data":[-1.0,2.0,-0.5]}],
            "rtol":0,"atol":0,"grad":null,"jvp":null,"vmap":null}"#;
        let case = decode_case(&line.replace('\n', " ")).unwrap();
        let out = run_case(&case, EvalBackend::CudaSim);
        assert!(matches!(out[2], Outcome::Pass), "{:?}", out[2]);
        // A width-changing bitcast does not lower yet.
        let bytes = line.replace(
            "b:f32[3] = neg a",
            "b:u8[3,4] = bitcast_convert_type[new_dtype=uint8] a",
        );
        let case = decode_case(&bytes.replace('\n', " ")).unwrap();
        match &run_case(&case, EvalBackend::CudaSim)[2] {
            Outcome::Fail(m) => assert_eq!(
                unsupported_primitive(m).as_deref(),
                Some("bitcast_convert_type"),
                "{m}"
            ),
            o => panic!("expected an unsupported bitcast_convert_type, got {o:?}"),
        }
    }

    #[test]
    fn own_transforms_never_pass_on_a_bad_jaxpr() {
        let line = r#"{"name":"n","group":"g","jaxpr":"x","consts":[],"inputs":[],"outputs":[],
            "rtol":0,"atol":0,"grad":null,"jvp":{"tangents":[],"out_tangents":[]},"vmap":null}"#;
        let case = decode_case(&line.replace('\n', " ")).unwrap();
        let out = run_case(&case, EvalBackend::Interpreter);
        assert_eq!(out.len(), CHECKS.len());
        assert!(matches!(out[6], Outcome::NotApplicable));
        assert!(matches!(out[7], Outcome::Fail(_)));
        assert!(matches!(out[8], Outcome::NotApplicable));
        assert!(!out.iter().skip(3).any(|o| matches!(o, Outcome::Pass)));
    }
}
