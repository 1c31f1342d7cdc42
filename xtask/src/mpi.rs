//! Open MPI for `jaxon::distributed` (the facade's `mpi` feature): found, or
//! installed from Debian's packages when this is a Debian-like machine and
//! we are root; otherwise a reason, which `test-all` prints as a skip.

use std::process::{Command, Stdio};

/// The Debian packages the `mpi` feature needs: the library and headers,
/// `mpirun`, and libclang for the bindings' generator.
const PACKAGES: [&str; 3] = ["libopenmpi-dev", "openmpi-bin", "libclang-dev"];

fn found(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a libclang shared library is installed where bindgen looks
/// (the system library folders, or an `llvm-*` folder's `lib`).
fn libclang() -> bool {
    let has = |dir: &std::path::Path| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libclang"))
        })
    };
    let llvm = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten();
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .any(|d| has(std::path::Path::new(d)))
        || llvm
            .filter(|e| e.file_name().to_string_lossy().starts_with("llvm"))
            .any(|e| has(&e.path().join("lib")))
}

fn ready() -> bool {
    found("mpicc", "--showme:version") && found("mpirun", "--version") && libclang()
}

fn apt_install() -> bool {
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(PACKAGES)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    install()
        || (Command::new("apt-get")
            .args(["update", "-q"])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            && install())
}

/// `Ok(())` when the `mpi` feature can be built and run here (installing
/// Open MPI if it is missing and we may), else why not.
pub fn ensure() -> Result<(), String> {
    if std::env::var_os("JAXON_NO_MPI").is_some() {
        return Err("JAXON_NO_MPI is set".into());
    }
    if ready() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !found("apt-get", "--version") {
        return Err(format!(
            "Open MPI not found and not installable here (needs root and apt-get): install {}",
            PACKAGES.join(" ")
        ));
    }
    println!("xtask: installing {} for the MPI tests", PACKAGES.join(" "));
    if apt_install() && ready() {
        Ok(())
    } else {
        Err(format!("apt-get install {} failed", PACKAGES.join(" ")))
    }
}
