//! `cargo xtask gpu-check`: builds the CUDA backend's test binaries here,
//! stripped, into `target/gpu-check/` (ignored by git) beside a script that
//! runs them all on a machine with an NVIDIA GPU and writes a report, then
//! prints the device command that carries the folder and runs the script.
//! The NCCL test binary runs as its own step, with `libnccl.so.2` found
//! on the machine when it has one. The conformance runner and the JAX corpus travel too: the script runs
//! the corpus on the GPU (`--backend cuda`), and so do the facade's examples.
//! The folder is packed into `target/gc-bundle/gc.tar.xz` for the trip.
//!
//! The GPU machines have no Rust toolchain and short leases: everything is
//! built here, the script needs only bash and the driver (NVRTC comes from
//! the machine's CUDA install), and it stops itself within `$GPU_CHECK_BUDGET` seconds (6 minutes unless set).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The folder the binaries and the script go to, relative to the root.
pub const DIR: &str = "target/gpu-check";

/// The folder holding `gc.tar.xz`, the packed [`DIR`] that a device call
/// carries.
pub const BUNDLE: &str = "target/gc-bundle";

/// The runner script; the `@..@` placeholders are replaced by the names of
/// the binaries, the examples and the corpus.
const RUN_SH: &str = r#"#!/usr/bin/env bash
# jaxon GPU checks, written by `cargo xtask gpu-check`. Runs, most telling
# first: the runtime and catalogue test, the JAX corpus and the lowering's
# differential tests on the GPU, the facade's examples on the CPU and on the
# GPU, compute-sanitizer's memcheck, then the remaining test binaries.
# Writes logs to ./report beside this script, and copies summary.txt and
# the logs as report.tgz (kernel dumps as dumps.tgz) to $OUT where the
# device tool sets it (it returns at most 8 files). Steps that would start
# after $GPU_CHECK_BUDGET seconds (default 360) are skipped and count as
# failures. Exit status: 0 when every step passed.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/report"
rm -rf "$out"
budget="${GPU_CHECK_BUDGET:-360}"
mkdir -p "$out"
# CUDA_CACHE_DISABLE: with a driver present, NVRTC 13 serves kernels it has
# compiled before from the driver's compute cache without running ptxas, so
# its log lacks the resource report the compile tests check (seen on an H100,
# 2026-11-26).
export JAXON_REQUIRE_GPU=1 JAXON_REQUIRE_NVRTC=1 RUST_BACKTRACE=1 CUDA_CACHE_DISABLE=1
export JAXON_CACHE_DIR="$out/kernel-cache"
# The correctness steps compare with exact f32 oracles (the interpreter,
# JAX's CPU outputs), so f32 products run in full f32 there, as JAX's own
# tests set `jax_default_matmul_precision`; `lowering_tf32` checks the
# GPU's default, TF32, and the workloads run at that default.
export JAXON_DEFAULT_MATMUL_PRECISION=float32
summary="$out/summary.txt"
: > "$summary"
status=0
env | grep -iE 'cuda|nvrtc|ptx|ld_library' > "$out/env.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } \
  > "$out/device.txt" 2>&1
step() { # name, timeout, command (a program: `timeout` cannot run a function)...
  local name="$1" limit="$2"; shift 2
  local left=$((budget - SECONDS))
  if [ "$left" -lt 15 ]; then
    printf '%-28s skipped: out of time\n' "$name" | tee -a "$summary"
    status=1
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - start))" | tee -a "$summary"
  [ "$rc" -eq 0 ] || status=1
}
# 1. The runtime, every catalogue kernel against its host reference and the
#    simulator, cuBLASLt against its model.
step gpu 120 "$here/bin/gpu" --test-threads=1 --nocapture
# 1b. NCCL (`bin/nccl`): collectives on a communicator of size 1, and of
#    size 2 when there are two GPUs, against the host. libnccl.so.2 is
#    looked for in the loader's cache and in Python's `nvidia/nccl/lib`;
#    when found, a skip is a failure (JAXON_REQUIRE_NCCL), otherwise the
#    step records that NCCL was not tested.
if [ -x "$here/bin/nccl" ]; then
  nccl_dir="" nccl_found=""
  ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2' && nccl_found=1
  ldp="${LD_LIBRARY_PATH:-}"
  for d in ${ldp//:/ }; do [ -e "$d/libnccl.so.2" ] && nccl_found=1; done
  if [ -z "$nccl_found" ]; then
    for py in python3 python; do
      d="$($py -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)"
      [ -n "$d" ] && [ -e "$d/libnccl.so.2" ] && { nccl_dir="$d"; nccl_found=1; break; }
    done
  fi
  if [ -n "$nccl_found" ]; then
    step nccl 90 env JAXON_REQUIRE_NCCL=1 LD_LIBRARY_PATH="${nccl_dir:+$nccl_dir:}${LD_LIBRARY_PATH:-}" \
      "$here/bin/nccl" --test-threads=1 --nocapture
  else
    step nccl 90 "$here/bin/nccl" --test-threads=1 --nocapture
    echo "gpu-check: nccl: no libnccl.so.2 on this machine; only the missing-library path ran" \
      | tee -a "$summary"
  fi
fi
# 2. The jaxpr lowering on the device: JAX's corpus (unsupported primitives
#    are listed, not failed) and the differential tests against the
#    interpreter.
step conformance-cuda 120 "$here/tools/conformance" "$here/data/@CORPUS@" \
  --backend cuda --require eval --allow-unsupported --timeout 60
for b in @LOWERING@; do
  step "$b-cuda" 90 env JAXON_LOWERING_BACKEND=cuda "$here/bin/$b" --test-threads=2
done
# 3. The facade's examples, on the CPU and then on the GPU.
#    (The driver's compute cache may serve them: they read no ptxas report.)
for e in @EXAMPLES@; do
  step "$e-cpu" 60 env JAXON_BACKEND=cpu "$here/tools/$e"
  step "$e-cuda" 120 env -u CUDA_CACHE_DISABLE JAXON_BACKEND=cuda JAXON_DUMP="$out/dump-$e" \
    "$here/tools/$e"
done
# 4. memcheck. Timing tests are skipped under the sanitizer (it slows
#    kernels down), and so is the test that asks the driver for 8 PiB.
if command -v compute-sanitizer > /dev/null; then
  step memcheck-gpu 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$here/bin/gpu" --test-threads=1 --skip throughput --skip bandwidth \
    --skip impossible_allocation
  step memcheck-lowering 90 env JAXON_LOWERING_BACKEND=cuda compute-sanitizer \
    --tool memcheck --error-exitcode 9 "$here/bin/lowering" --test-threads=1
else
  echo "memcheck skipped: no compute-sanitizer" | tee -a "$summary"
fi
# 5. The rest (NVRTC compile reports, the smoke test, unit tests).
for b in @REST@; do
  step "$b" 90 "$here/bin/$b" --test-threads=1 --nocapture
done
# 6. The GPU workloads of issue 20 (`workloads --gpu --quick`), with what
#    time is left; their JSON records are in the step's log.
if [ -x "$here/tools/workloads" ]; then
  step workloads-gpu 150 env -u JAXON_DEFAULT_MATMUL_PRECISION "$here/tools/workloads" --gpu --quick
fi
grep -h '^gpu-check:' "$out"/*.log | tee -a "$summary"
echo "gpu-check: $([ $status -eq 0 ] && echo passed || echo FAILED) in ${SECONDS}s; logs in $out" \
  | tee -a "$summary"
if [ -n "${OUT:-}" ]; then
  cp "$summary" "$OUT/"
  tar -C "$out" --exclude='dump*' --exclude=kernel-cache -czf "$OUT/report.tgz" .
  (cd "$out" && ls -d dump* > /dev/null 2>&1 && tar -czf "$OUT/dumps.tgz" dump*)
fi
exit $status
"#;

/// Builds the test binaries and the script; prints the device command.
pub fn gpu_check(root: &Path, cargo: impl Fn() -> Command) -> ExitCode {
    println!("==> building the CUDA backend's test binaries (release)");
    let output = cargo()
        .args([
            "test",
            "--release",
            "-p",
            "jaxon-backend-cuda",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output();
    let output = match output {
        Ok(o) if o.status.success() => o,
        Ok(_) => {
            eprintln!("gpu-check: the build failed");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("gpu-check: could not run cargo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    // The facade's GPU-residency test (`device_put` and `jit` under `cuda`).
    match cargo()
        .args([
            "test",
            "--release",
            "-p",
            "jaxon",
            "--test",
            "device_put",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(o) if o.status.success() => stdout.push_str(&String::from_utf8_lossy(&o.stdout)),
        _ => {
            eprintln!("gpu-check: building the facade's device_put test failed");
            return ExitCode::FAILURE;
        }
    }
    // The examples too: diagnostics that print what a test cannot assert.
    match cargo()
        .args([
            "build",
            "--release",
            "-p",
            "jaxon-backend-cuda",
            "--examples",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(o) if o.status.success() => stdout.push_str(&String::from_utf8_lossy(&o.stdout)),
        _ => {
            eprintln!("gpu-check: building the examples failed");
            return ExitCode::FAILURE;
        }
    }
    println!("==> building the facade's examples (release)");
    let facade = match cargo()
        .args([
            "build",
            "--release",
            "-p",
            "jaxon",
            "--examples",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => {
            eprintln!("gpu-check: building the facade's examples failed");
            return ExitCode::FAILURE;
        }
    };
    println!("==> building the GPU workloads binary (release)");
    let workloads = cargo()
        .args([
            "build",
            "--release",
            "-p",
            "jaxon-benches",
            "--bin",
            "workloads",
        ])
        .status();
    if !matches!(workloads, Ok(s) if s.success()) {
        eprintln!("gpu-check: building the workloads binary failed");
        return ExitCode::FAILURE;
    }
    println!("==> building the conformance runner (release)");
    let runner = cargo()
        .args([
            "build",
            "--release",
            "-p",
            "jaxon-tests",
            "--bin",
            "conformance",
        ])
        .status();
    if !matches!(runner, Ok(s) if s.success()) {
        eprintln!("gpu-check: building the conformance runner failed");
        return ExitCode::FAILURE;
    }
    let dir = root.join(DIR);
    let bin = dir.join("bin");
    let _ = fs::remove_dir_all(&dir);
    for d in [&bin, &dir.join("tools"), &dir.join("data")] {
        if let Err(e) = fs::create_dir_all(d) {
            eprintln!("gpu-check: cannot create {}: {e}", d.display());
            return ExitCode::FAILURE;
        }
    }
    let corpus = Path::new(crate::DEFAULT_CORPUS);
    let corpus_name = corpus
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let carried = [
        (
            root.join("target/release/conformance"),
            dir.join("tools/conformance"),
        ),
        (root.join(corpus), dir.join("data").join(&corpus_name)),
        (
            root.join("target/release/workloads"),
            dir.join("tools/workloads"),
        ),
    ];
    for (from, to) in &carried {
        if let Err(e) = fs::copy(from, to) {
            eprintln!("gpu-check: copying {}: {e}", from.display());
            return ExitCode::FAILURE;
        }
    }
    for tool in ["conformance", "workloads"] {
        let _ = Command::new("strip")
            .arg(dir.join("tools").join(tool))
            .status();
    }
    let mut examples = Vec::new();
    for exe in executables(&facade) {
        let name = test_name(&exe);
        let dest = dir.join("tools").join(&name);
        if let Err(e) = fs::copy(&exe, &dest) {
            eprintln!("gpu-check: copying {}: {e}", exe.display());
            return ExitCode::FAILURE;
        }
        let _ = Command::new("strip").arg(&dest).status();
        examples.push(name);
    }
    let mut names = Vec::new();
    for exe in executables(&stdout) {
        let name = test_name(&exe);
        if names.contains(&name) {
            continue;
        }
        let dest = bin.join(&name);
        if let Err(e) = fs::copy(&exe, &dest) {
            eprintln!("gpu-check: copying {}: {e}", exe.display());
            return ExitCode::FAILURE;
        }
        let stripped = Command::new("strip").arg(&dest).status();
        if !matches!(stripped, Ok(s) if s.success()) {
            println!("gpu-check: could not strip {name}; carrying it unstripped");
        }
        names.push(name);
    }
    if !names.iter().any(|n| n == "nccl") {
        eprintln!("gpu-check: the `nccl` test binary was not built");
        return ExitCode::FAILURE;
    }
    if !names.iter().any(|n| n == "gpu") {
        eprintln!("gpu-check: the `gpu` test binary was not built");
        return ExitCode::FAILURE;
    }
    let (lowering, rest): (Vec<_>, Vec<_>) = names
        .iter()
        .filter(|n| *n != "gpu" && *n != "nccl")
        .cloned()
        .partition(|n| n.starts_with("lowering"));
    let script = RUN_SH
        .replace("@LOWERING@", &lowering.join(" "))
        .replace("@EXAMPLES@", &examples.join(" "))
        .replace("@REST@", &rest.join(" "))
        .replace("@CORPUS@", &corpus_name);
    if let Err(e) = fs::write(dir.join("run.sh"), script) {
        eprintln!("gpu-check: writing run.sh: {e}");
        return ExitCode::FAILURE;
    }
    let size: u64 = fs::read_dir(&bin)
        .map(|it| {
            it.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    println!(
        "gpu-check: {} binaries ({}) in {DIR}, {:.1} MiB",
        names.len(),
        names.join(", "),
        size as f64 / (1 << 20) as f64
    );
    // A device call carries at most 64 MiB; the folder is larger, so it
    // travels as one xz archive.
    let bundle = root.join(BUNDLE);
    let _ = fs::remove_dir_all(&bundle);
    let packed = fs::create_dir_all(&bundle).is_ok()
        && Command::new("sh")
            .arg("-c")
            .arg(format!(
                "tar -C target --exclude=gpu-check/report -cf - gpu-check | xz -T2 -6 > {BUNDLE}/gc.tar.xz"
            ))
            .current_dir(root)
            .status()
            .is_ok_and(|s| s.success());
    println!("gpu-check: on the GPU machine, from the repository root, run");
    println!("    bash {DIR}/run.sh");
    if packed {
        let mib = fs::metadata(bundle.join("gc.tar.xz"))
            .map_or(0.0, |m| m.len() as f64 / (1 << 20) as f64);
        println!(
            "  (device tool: carry [\"{BUNDLE}\"] ({mib:.1} MiB), timeout_s 420, command\n    \
             `tar -xJf {BUNDLE}/gc.tar.xz -C target && bash {DIR}/run.sh`)"
        );
    } else {
        println!("gpu-check: could not pack {BUNDLE}/gc.tar.xz (tar and xz); carry [\"{DIR}\"] if it fits");
    }
    ExitCode::SUCCESS
}

/// The `"executable"` paths of cargo's JSON messages (test targets only).
fn executables(json: &str) -> Vec<PathBuf> {
    json.lines()
        .filter(|l| {
            l.contains("\"reason\":\"compiler-artifact\"")
                && (l.contains("\"test\":true") || l.contains("\"kind\":[\"example\"]"))
        })
        .filter_map(|l| {
            let start = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let end = start + l[start..].find('"')?;
            Some(PathBuf::from(&l[start..end]))
        })
        .collect()
}

/// `target/release/deps/gpu-0123abcd` → `gpu`; the library's own tests are
/// `unit`.
fn test_name(exe: &Path) -> String {
    let file = exe
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file.rsplit_once('-').map_or(file.as_str(), |(s, _)| s);
    let is_example = exe
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "examples");
    if stem == "jaxon_backend_cuda" {
        "unit".to_string()
    } else if is_example {
        format!("example_{file}")
    } else {
        stem.to_string()
    }
}
