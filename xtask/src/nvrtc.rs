//! `cargo xtask nvrtc-path`: makes sure NVRTC for CUDA 13.0 is installed
//! (the PyPI wheel `nvidia-cuda-nvrtc==13.0.*`, unpacked with pip into
//! `target/nvrtc-wheel`) and prints the folder holding `libnvrtc.so.13`, for
//! `LD_LIBRARY_PATH`; CI has no CUDA but compiles every kernel with it.
//!
//! Invariants: pip runs only when no `libnvrtc.so.13` is under the wheel
//! folder yet; the folder returned holds both `libnvrtc.so.13` and
//! `libnvrtc-builtins.so.13.*` (NVRTC dlopens the latter by bare name, so it
//! must be on `LD_LIBRARY_PATH` too); failures are `Err(String)`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The wheel's version: CUDA 13.0, which the GPU machines' driver (580)
/// and their NVRTC (13.0.88) match.
pub const WHEEL: &str = "nvidia-cuda-nvrtc==13.0.*";

/// Where the wheel is unpacked, relative to the repository root.
pub const WHEEL_DIR: &str = "target/nvrtc-wheel";

/// The first folder under `dir` (depth-first, sorted) that holds
/// `libnvrtc.so.13`.
fn find_lib_dir(dir: &Path) -> Option<PathBuf> {
    if dir.join("libnvrtc.so.13").is_file() {
        return Some(dir.to_path_buf());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    subdirs.iter().find_map(|d| find_lib_dir(d))
}

fn has_builtins(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("libnvrtc-builtins.so.13")
            })
        })
        .unwrap_or(false)
}

/// The folder holding `libnvrtc.so.13`, installing the wheel first if
/// needed.
pub fn nvrtc_lib_dir() -> Result<PathBuf, String> {
    let target = crate::repo_root().join(WHEEL_DIR);
    let found = match find_lib_dir(&target) {
        Some(d) => d,
        None => {
            eprintln!("xtask: installing {WHEEL} into {}", target.display());
            let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
            let status = Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--no-deps", "--upgrade", "--target"])
                .arg(&target)
                .arg(WHEEL)
                .status()
                .map_err(|e| format!("could not run {python:?} -m pip: {e}"))?;
            if !status.success() {
                return Err(format!(
                    "`{} -m pip install --target {} --no-deps {WHEEL}` failed ({status})",
                    python.to_string_lossy(),
                    target.display()
                ));
            }
            find_lib_dir(&target).ok_or_else(|| {
                format!(
                    "pip installed {WHEEL} but no libnvrtc.so.13 is under {}",
                    target.display()
                )
            })?
        }
    };
    if !has_builtins(&found) {
        return Err(format!(
            "{} has libnvrtc.so.13 but no libnvrtc-builtins.so.13.*",
            found.display()
        ));
    }
    Ok(found)
}

/// `LD_LIBRARY_PATH` with `dir` first.
pub fn ld_library_path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

/// `cargo xtask nvrtc-path`: prints the folder, or the error.
pub fn nvrtc_path_command() -> std::process::ExitCode {
    match nvrtc_lib_dir() {
        Ok(d) => {
            println!("{}", d.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xtask nvrtc-path: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
