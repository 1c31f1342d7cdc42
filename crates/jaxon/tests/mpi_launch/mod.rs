//! How the MPI test binaries (`distributed_mpi`, `global_mesh_mpi`,
//! `pmap_mpi`, no harness) start themselves as ranks: `mpirun -np 2` on the running test
//! binary with `JAXON_MPI_ROLE` set, output through files so that a full
//! pipe never blocks a rank, killed after a limit.

use std::process::Command;
use std::time::{Duration, Instant};

/// `mpirun -np 2` on this binary as `role` (and `JAXON_MPI_OUT=out` when
/// given), with `env` (`NAME=value`) set in every rank (`-x`): its status
/// (`None` if killed after `limit`), its output (stdout then stderr) and
/// how long it took.
pub fn mpirun(
    role: &str,
    limit: Duration,
    out: Option<&std::path::Path>,
    env: &[String],
) -> (Option<i32>, String, Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let name = exe
        .file_stem()
        .map_or_else(|| "mpi".into(), |s| s.to_string_lossy().into_owned());
    let dir = std::env::temp_dir().join(format!("jaxon-{name}-{}-{role}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let file = |name: &str| std::fs::File::create(dir.join(name)).expect("an output file");
    let t0 = Instant::now();
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .args(["-x", &format!("JAXON_MPI_ROLE={role}")])
        .args(out.map_or_else(Vec::new, |p| {
            vec!["-x".to_string(), format!("JAXON_MPI_OUT={}", p.display())]
        }))
        .args(env.iter().flat_map(|e| ["-x", e.as_str()]))
        .arg(exe)
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("mpirun starts");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let text = format!("{}{}", read("stdout"), read("stderr"));
    let _ = std::fs::remove_dir_all(&dir);
    (status, text, took)
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A rank's body: joins the session, runs `role` through `run` with this
/// process's index, leaves, and reports a failure as `rank N: why`.
pub fn rank_main(
    role: &str,
    run: impl FnOnce(&str, usize) -> Result<(), String>,
) -> std::process::ExitCode {
    use jaxon::distributed;
    use std::process::ExitCode;
    let session = match distributed::initialize() {
        Ok(s) => s,
        Err(e) => {
            println!("rank failed to join: {e}");
            return ExitCode::FAILURE;
        }
    };
    let me = distributed::process_index();
    let result = run(role, me);
    drop(session);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("rank {me}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `mpirun` starts; when it does not, prints the driver's skip
/// line.
pub fn mpirun_found() -> bool {
    let found = Command::new("mpirun").arg("--version").output().is_ok();
    if !found {
        println!("skipped: mpirun not found (Open MPI: apt-get install openmpi-bin)");
    }
    found
}

/// A driver's named checks: each printed as `ok` or `FAIL` (with its
/// detail), the failures summed up by [`Checks::finish`].
#[derive(Default)]
pub struct Checks {
    failures: Vec<String>,
}

impl Checks {
    /// Records check `name`; `detail` is printed when it failed.
    pub fn check(&mut self, name: &str, ok: bool, detail: String) {
        println!("{} {name}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            println!("{detail}");
            self.failures.push(name.to_string());
        }
    }

    /// The driver's exit status, after a summary of the failures.
    pub fn finish(self) -> std::process::ExitCode {
        if self.failures.is_empty() {
            std::process::ExitCode::SUCCESS
        } else {
            println!(
                "{} of the checks failed: {:?}",
                self.failures.len(),
                self.failures
            );
            std::process::ExitCode::FAILURE
        }
    }
}
