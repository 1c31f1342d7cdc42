//! `cargo xtask`: the project's task runner (test-all, conformance, bench).
//!
//! - `cargo xtask test-all [--fail-fast]`: fmt check, clippy, `cargo doc`
//!   with `RUSTDOCFLAGS="-D warnings"`, tests, then the JAX conformance
//!   corpus (dev profile) with `--require parse,print,eval,transform` on the interpreter and
//!   the CPU backend, and the api2 corpus's finished groups (`API2_GROUPS`,
//!   known failures in `tests/data/known-failures-api2.txt`) and the shard corpus on the
//!   interpreter and on the CPU backend with two CPU devices (`--cpu-devices 2`;
//!   `shard_map`; every check required), and both corpora on the CUDA
//!   lowering's kernel simulator (`--backend cuda-sim`: every program
//!   lowers and every value is right, gradients included); then, for each
//!   CPU kernel path narrower than the machine's (`JAXON_CPU_ISA=avx2`,
//!   `scalar`), the CPU backend's differential, per-primitive and ulp
//!   suites and both corpora on the cpu backend again; prints a summary with
//!   timings and what was skipped and why; exits 1 if any step failed.
//! - `cargo xtask conformance [FILE] [ARGS...]`: the conformance runner
//!   (release build) on FILE (default: the public JAX 0.10.2 corpus).
//! - `cargo xtask bench [ARGS...]`: `cargo bench -p jaxon-benches`;
//!   `cargo xtask bench --json [--only A,B] [--quick]` runs the WORKLOADS.md
//!   harness and prints JSON lines for `benches/jax/compare.py`.
//!
//! - `cargo xtask gpu-check`: builds the CUDA backend's test binaries into
//!   `target/gpu-check/` with a script that runs them on a GPU machine, and
//!   prints the device command (see `gpu_check.rs`).
//!
//! - `cargo xtask nvrtc-path`: installs NVRTC for CUDA 13.0 from PyPI into
//!   `target/nvrtc-wheel` if needed and prints its lib folder (see
//!   [`nvrtc`]); `test-all` puts it on `LD_LIBRARY_PATH` for the tests.
//!
//! - `cargo xtask fuzz TARGET [--seconds N]`: coverage-guided fuzzing of
//!   `parse`, `check`, `interp`, `diff` or `pallas` with cargo-fuzz on stable (see
//!   `fuzz.rs` and `docs/reliability.md`).
//! - `cargo xtask hygiene`: every tracked Rust file opens with `//!`, no
//!   merge-conflict markers, library files under 1000 lines (`hygiene.rs`;
//!   `test-all`'s first step).
//!
//! `test-all` installs Open MPI (`mpi.rs`) when it is missing and it may, and
//! then builds and tests jaxon's `mpi` feature too; otherwise it prints why not.
//!
//! Only the standard library is used, so that it builds on a fresh clone.

mod fuzz;
mod gpu_check;
mod hygiene;
mod mpi;
mod nvrtc;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The public conformance corpus, relative to the repository root.
pub(crate) const DEFAULT_CORPUS: &str = "tests/data/jax-0.10.2-public.jsonl";

/// The second JAX corpus (issue 21's API), and the groups of it that
/// `test-all` requires so far on both evaluators.
const API2_CORPUS: &str = "tests/data/jax-0.10.2-api2-public.jsonl";
const SHARD_CORPUS: &str = "tests/data/jax-0.10.2-shard-public.jsonl";
const API2_GROUPS: &str = "complex,fft,linalg2,nn2,numpy2,random,solve,special,window";

/// The repository root (the parent of this crate's directory).
fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The cargo that runs us (so the pinned toolchain is used), else `cargo`.
fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(repo_root());
    c
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <command>\n\
         \n\
         commands:\n\
         \x20 test-all [--fail-fast]      fmt, clippy, doc, tests, conformance; summary at the end\n\
         \x20 conformance [FILE] [ARGS]   run the JAX conformance corpus (default {DEFAULT_CORPUS})\n\
         \x20 bench [ARGS]                run the criterion benchmarks\n\
         \x20 gpu-check                   build the GPU checks into target/gpu-check and print how to run them\n\
         \x20 nvrtc-path                  install NVRTC (CUDA 13.0 wheel) if needed; print its lib folder\n\
         \x20 fuzz TARGET [--seconds N]   coverage-guided fuzzing (parse, check, interp, diff, pallas; `seeds` writes seeds only)"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test-all") => test_all(&args[1..]),
        Some("conformance") => conformance(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("gpu-check") => gpu_check::gpu_check(&repo_root(), cargo),
        Some("nvrtc-path") => nvrtc::nvrtc_path_command(),
        Some("fuzz") => fuzz::fuzz(&repo_root(), &args[1..], cargo),
        Some("hygiene") => match hygiene::check(&repo_root()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        },
        _ => usage(),
    }
}

/// The result of one step of `test-all`.
struct StepResult {
    name: String,
    ok: bool,
    time: Duration,
    note: String,
}

/// One cargo invocation of `test-all`: a display name, the arguments, and
/// environment variables set on that command only.
struct Step {
    name: String,
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
}

impl Step {
    fn new(name: &str, args: &[&str]) -> Step {
        Step {
            name: name.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
        }
    }

    /// A run of the conformance runner with `args` (after its `--`).
    fn conformance(name: &str, args: &[&str]) -> Step {
        let mut all = vec!["run", "-p", "jaxon-tests", "--bin", "conformance", "--"];
        all.extend_from_slice(args);
        Step::new(name, &all)
    }

    /// Sets `key=value` for this step's command.
    fn env(mut self, key: &'static str, value: &'static str) -> Step {
        self.env.push((key, value));
        self
    }
}

/// The command of a `test-all` step. A `cargo run ... --bin conformance --
/// ARGS` step runs the runner that `cargo test --workspace` has already
/// built (`target/debug/conformance`, with the workspace's features), so no
/// dependency is rebuilt for another feature set; cargo builds it only when
/// it is missing.
fn step_command(args: &[String]) -> Command {
    let runner = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| repo_root().join("target"), PathBuf::from)
        .join("debug/conformance");
    match args.iter().position(|a| a == "--") {
        Some(dash) if args[0] == "run" && runner.is_file() => {
            let mut c = Command::new(runner);
            c.current_dir(repo_root()).args(&args[dash + 1..]);
            c
        }
        Some(_) | None => {
            let mut c = cargo();
            c.args(args);
            c
        }
    }
}

/// Runs a command with inherited output; returns success and the elapsed
/// time.
fn run(cmd: &mut Command) -> (bool, Duration) {
    let start = Instant::now();
    let ok = match cmd.status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("xtask: could not run {cmd:?}: {e}");
            false
        }
    };
    (ok, start.elapsed())
}

/// Runs a command, echoing its stdout, and returns success, elapsed time and
/// the last stdout line that starts with `summary_prefix`.
fn run_capturing(cmd: &mut Command, summary_prefix: &str) -> (bool, Duration, Option<String>) {
    let start = Instant::now();
    let mut child = match cmd.stdout(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("xtask: could not run {cmd:?}: {e}");
            return (false, start.elapsed(), None);
        }
    };
    let mut summary = None;
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            if line.starts_with(summary_prefix) {
                summary = Some(line);
            }
        }
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    (ok, start.elapsed(), summary)
}

/// True if `cargo <sub> --version` works.
fn cargo_subcommand_works(sub: &str) -> bool {
    cargo()
        .args([sub, "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Makes sure rustfmt and clippy are installed for the pinned toolchain,
/// installing them with rustup if needed.
fn ensure_components() -> Result<(), String> {
    let missing: Vec<&str> = [("fmt", "rustfmt"), ("clippy", "clippy")]
        .into_iter()
        .filter(|(sub, _)| !cargo_subcommand_works(sub))
        .map(|(_, component)| component)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!(
        "xtask: installing missing components: {}",
        missing.join(" ")
    );
    let status = Command::new("rustup")
        .current_dir(repo_root())
        .args(["component", "add"])
        .args(&missing)
        .status()
        .map_err(|e| {
            format!(
                "rustup not available ({e}); install {} by hand",
                missing.join(" ")
            )
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("rustup component add {} failed", missing.join(" ")))
    }
}

/// What `test-all` does not run yet, and why. Reasons follow the tree: a
/// skip disappears from this list once its crate exists and has a step.
fn skipped_work(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let has = |dir: &str| root.join(dir).is_dir();
    if !has("crates/backend-cuda") {
        out.push("CUDA backend tests: no backend-cuda crate yet".to_string());
    } else {
        out.push(
            "GPU runs of the CUDA backend's tests: this machine is not where they run; \
             `cargo xtask gpu-check` builds them for a GPU machine"
                .to_string(),
        );
    }
    if !has("crates/transforms") {
        out.push(
            "own grad/jvp/vmap conformance checks (own_grad, own_jvp, own_vmap): \
             need the transforms crate"
                .to_string(),
        );
    }
    out
}

fn fmt_duration(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn test_all(args: &[String]) -> ExitCode {
    let mut fail_fast = false;
    for a in args {
        match a.as_str() {
            "--fail-fast" => fail_fast = true,
            other => {
                eprintln!("test-all: unknown option {other}");
                return usage();
            }
        }
    }
    let root = repo_root();
    let total = Instant::now();
    let mut results: Vec<StepResult> = Vec::new();

    let started = Instant::now();
    let clean = hygiene::check(&root);
    results.push(StepResult {
        name: "repository hygiene (//! headers, conflict markers, file sizes)".into(),
        ok: clean.is_ok(),
        time: started.elapsed(),
        note: clean.err().unwrap_or_default(),
    });

    let setup = Instant::now();
    let components = ensure_components();
    results.push(StepResult {
        name: "toolchain components (rustfmt, clippy)".into(),
        ok: components.is_ok(),
        time: setup.elapsed(),
        note: components.err().unwrap_or_default(),
    });

    // NVRTC for the CUDA backend's compile tests (no GPU needed): with it
    // found, those tests must run (JAXON_REQUIRE_NVRTC=1).
    let nvrtc_setup = Instant::now();
    let nvrtc_dir = nvrtc::nvrtc_lib_dir();
    results.push(StepResult {
        name: "NVRTC 13.0 for the CUDA compile tests (cargo xtask nvrtc-path)".into(),
        ok: true,
        time: nvrtc_setup.elapsed(),
        note: match &nvrtc_dir {
            Ok(d) => d.display().to_string(),
            Err(e) => format!("skipped, CUDA compile tests will skip: {e}"),
        },
    });

    // Open MPI for `jaxon::distributed`: with it, the facade's `mpi`
    // feature is linted, documented and tested (`tests/distributed_mpi.rs`
    // runs `mpirun -np 2`).
    let mpi_setup = Instant::now();
    let mpi = mpi::ensure();
    results.push(StepResult {
        name: "Open MPI for the distributed tests (jaxon's `mpi` feature)".into(),
        ok: true,
        time: mpi_setup.elapsed(),
        note: match &mpi {
            Ok(()) => "found".into(),
            Err(e) => format!("skipped, the `mpi` feature is not built or tested: {e}"),
        },
    });
    let features = if mpi.is_ok() {
        "jaxon/ndarray,jaxon/mpi"
    } else {
        "jaxon/ndarray"
    };

    let corpus = root.join(DEFAULT_CORPUS);
    let corpus = corpus.to_str().unwrap_or(DEFAULT_CORPUS);
    let api2 = root.join(API2_CORPUS);
    let api2 = api2.to_str().unwrap_or(API2_CORPUS);
    let shard = root.join(SHARD_CORPUS);
    let shard = shard.to_str().unwrap_or(SHARD_CORPUS);
    let steps = [
        Step::new("cargo fmt --all --check", &["fmt", "--all", "--check"]),
        Step::new(
            &format!("cargo clippy --workspace --all-targets --features {features} -- -D warnings"),
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--features",
                features,
                "--",
                "-D",
                "warnings",
            ],
        ),
        Step::new(
            &format!("RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps --features {features}"),
            &["doc", "--workspace", "--no-deps", "--features", features],
        )
        .env("RUSTDOCFLAGS", "-D warnings"),
        // Optional features are tested too; --no-fail-fast so that one
        // failing test binary does not hide the ones after it.
        Step::new(
            &format!("cargo test --workspace --features {features} --no-fail-fast"),
            &[
                "test",
                "--workspace",
                "--features",
                features,
                "--no-fail-fast",
            ],
        ),
        // The corpora run on the dev profile (opt-level 1, already built by
        // `cargo test`, see `step_command`): all five runs take about 3 s,
        // where a release build cost CI 450 s of its 30 minutes.
        Step::conformance(
            "conformance --require parse,print,eval,transform",
            &[
                corpus,
                "--require",
                "parse,print,eval,transform",
                "--known-failures",
                "tests/data/known-failures.txt",
            ],
        ),
        Step::conformance(
            "conformance --backend cpu --require parse,print,eval",
            &[
                corpus,
                "--backend",
                "cpu",
                "--require",
                "parse,print,eval",
            ],
        ),
        Step::conformance(
            "conformance api2 (required groups) --require parse,print,eval,transform",
            &[
                api2,
                "--groups",
                API2_GROUPS,
                "--require",
                "parse,print,eval,transform",
                "--known-failures",
                "tests/data/known-failures-api2.txt",
            ],
        ),
        // The shard corpus (shard_map and collectives, two CPU devices) on
        // the interpreter.
        Step::conformance(
            "conformance shard --require parse,print,eval,transform",
            &[
                shard,
                "--require",
                "parse,print,eval,transform",
            ],
        ),
        // The shard corpus on the cpu backend with two CPU devices.
        Step::conformance(
            "conformance shard --backend cpu --require parse,print,eval,transform",
            &[
                shard,
                "--backend",
                "cpu",
                "--cpu-devices",
                "2",
                "--require",
                "parse,print,eval,transform",
            ],
        ),
        // The shard corpus on the kernel simulator with two simulated
        // devices (the collectives are the interpreter's exchanges).
        Step::conformance(
            "conformance shard --backend cuda-sim --require parse,print,eval,transform",
            &[
                shard,
                "--backend",
                "cuda-sim",
                "--sim-devices",
                "2",
                "--require",
                "parse,print,eval,transform",
            ],
        ),
        // The CUDA lowering on the kernel simulator: every program of both
        // corpora lowers, and every value and gradient it computes is right
        // (nothing is allowed to be unsupported).
        Step::conformance(
            "conformance --backend cuda-sim --require parse,print,eval,grad_eval",
            &[
                corpus,
                "--backend",
                "cuda-sim",
                "--require",
                "parse,print,eval,grad_eval",
            ],
        ),
        Step::conformance(
            "conformance api2 --backend cuda-sim --require parse,print,eval",
            &[api2, "--backend", "cuda-sim", "--require", "parse,print,eval"],
        ),
        Step::conformance(
            "conformance api2 (required groups) --backend cpu --require parse,print,eval,transform",
            &[
                api2,
                "--groups",
                API2_GROUPS,
                "--backend",
                "cpu",
                "--require",
                "parse,print,eval,transform",
                "--known-failures",
                "tests/data/known-failures-api2.txt",
            ],
        ),
    ]
    .into_iter()
    .chain(narrower_isa_steps(features, corpus, api2))
    .collect::<Vec<_>>();
    let planned = results.len() + steps.len();

    for step in steps {
        if fail_fast && results.iter().any(|r| !r.ok) {
            break;
        }
        println!("\n==> {}", step.name);
        let mut cmd = step_command(&step.args);
        for (key, value) in &step.env {
            cmd.env(key, value);
        }
        if let (Ok(dir), "test") = (&nvrtc_dir, step.args[0].as_str()) {
            cmd.env("LD_LIBRARY_PATH", nvrtc::ld_library_path_with(dir));
            cmd.env("JAXON_REQUIRE_NVRTC", "1");
        }
        let (ok, time, note) = if step.args[0] == "run" {
            let (ok, time, summary) = run_capturing(&mut cmd, "conformance:");
            (ok, time, summary.unwrap_or_default())
        } else {
            let (ok, time) = run(&mut cmd);
            (ok, time, String::new())
        };
        results.push(StepResult {
            name: step.name,
            ok,
            time,
            note,
        });
    }

    println!("\n==> summary");
    for r in &results {
        let status = if r.ok { "[ok]    " } else { "[FAILED]" };
        let note = if r.note.is_empty() {
            String::new()
        } else {
            format!("  [{}]", r.note)
        };
        println!("{status} {:>7}  {}{note}", fmt_duration(r.time), r.name);
    }
    let ran: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    if fail_fast && results.len() < planned {
        println!(
            "skipped: the remaining steps after {} (--fail-fast)",
            ran.last().unwrap_or(&"")
        );
    }
    for s in skipped_work(&root) {
        println!("skipped: {s}");
    }
    let failed = results.iter().filter(|r| !r.ok).count();
    println!(
        "test-all: {} of {} steps passed in {}",
        results.len() - failed,
        results.len(),
        fmt_duration(total.elapsed())
    );
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The CPU kernel paths narrower than this machine's widest, as
/// `JAXON_CPU_ISA` spells them: on an AVX-512 machine `avx2` and
/// `scalar`, on an AVX2 one `scalar` (the same test as
/// `jaxon_backend_cpu::isa::detected`).
fn narrower_isas() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let avx512 = has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl");
        if avx512 {
            vec!["avx2", "scalar"]
        } else if has!("avx2") && has!("fma") {
            vec!["scalar"]
        } else {
            Vec::new()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

/// The steps that test the CPU backend again under each narrower kernel
/// path (issue 24): its differential, per-primitive and ulp suites, run
/// from the test binary `cargo test --workspace` built (the same
/// features, so nothing is rebuilt), and both corpora on the cpu backend.
fn narrower_isa_steps(features: &'static str, corpus: &str, api2: &str) -> Vec<Step> {
    // `cargo test` of backend-cpu's integration suites named by `filters`.
    let suites = |name: String, filters: &[&str]| {
        let mut args = vec![
            "test",
            "--workspace",
            "--features",
            features,
            "--test",
            "all",
            "--",
        ];
        args.extend(filters);
        Step::new(&name, &args)
    };
    let mut steps = Vec::new();
    if narrower_isas().len() == 2 {
        // An AVX-512 machine: where the GEMM takes `ymm` tiles by default
        // (`isa::gemm_isa`, Zen 4), the `zmm` tiles are tested here.
        steps.push(
            suites(
                "JAXON_CPU_GEMM_TILE=avx512 cargo test (backend-cpu GEMM suites)".into(),
                &["differential::", "coverage::", "gemm_epilogue::"],
            )
            .env("JAXON_CPU_GEMM_TILE", "avx512"),
        );
    }
    for isa in narrower_isas() {
        steps.push(
            suites(
                format!("JAXON_CPU_ISA={isa} cargo test (backend-cpu kernel suites)"),
                &[
                    "differential::",
                    "coverage::",
                    "math_ulp::",
                    "wide_math::",
                    "dot_half::",
                    "gemm_epilogue::",
                ],
            )
            .env("JAXON_CPU_ISA", isa),
        );
        for (name, file) in [("", corpus), ("api2 ", api2)] {
            let mut args = vec![file, "--backend", "cpu", "--require", "parse,print,eval"];
            if !name.is_empty() {
                args.extend([
                    "--groups",
                    API2_GROUPS,
                    "--known-failures",
                    "tests/data/known-failures-api2.txt",
                ]);
            }
            steps.push(
                Step::conformance(
                    &format!("JAXON_CPU_ISA={isa} conformance {name}--backend cpu --require parse,print,eval"),
                    &args,
                )
                .env("JAXON_CPU_ISA", isa),
            );
        }
    }
    steps
}

fn conformance(args: &[String]) -> ExitCode {
    let root = repo_root();
    let (file, rest) = match args.first() {
        Some(f) if !f.starts_with("--") => (PathBuf::from(f), &args[1..]),
        _ => (root.join(DEFAULT_CORPUS), args),
    };
    // A relative FILE is relative to where the user ran the command.
    let file = std::env::current_dir()
        .map(|d| d.join(&file))
        .unwrap_or(file);
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "-p",
        "jaxon-tests",
        "--bin",
        "conformance",
        "--",
    ])
    .arg(file)
    .args(rest);
    let (ok, time) = run(&mut cmd);
    println!(
        "xtask conformance: {} in {}",
        if ok { "ok" } else { "FAILED" },
        fmt_duration(time)
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn bench(args: &[String]) -> ExitCode {
    let mut cmd = cargo();
    if args.iter().any(|a| a == "--json" || a == "--list") {
        // The WORKLOADS.md harness: JSON lines for benches/jax/compare.py.
        let rest: Vec<&String> = args.iter().filter(|a| *a != "--json").collect();
        cmd.args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "jaxon-benches",
            "--bin",
            "workloads",
            "--",
        ])
        .args(rest);
        let status = cmd.status();
        return match status {
            Ok(s) if s.success() => ExitCode::SUCCESS,
            _ => ExitCode::FAILURE,
        };
    }
    cmd.args(["bench", "-p", "jaxon-benches"]).args(args);
    let (ok, time) = run(&mut cmd);
    println!(
        "xtask bench: {} in {}",
        if ok { "ok" } else { "FAILED" },
        fmt_duration(time)
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
