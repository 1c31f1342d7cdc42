//! Repository hygiene, checked by `test-all` before anything is built:
//! every tracked Rust file opens with a `//!` header, no tracked text file
//! holds a merge-conflict marker (one slipped into `docs/ARCHITECTURE.md`
//! once and stayed there a session), and no library source file grows past
//! [`MAX_SRC_LINES`] (the style guide asks for about 800).

use std::path::Path;
use std::process::Command;

/// The most lines a file under a crate's `src/` may have.
const MAX_SRC_LINES: usize = 1000;

/// Extensions of the text files searched for conflict markers.
const TEXT: [&str; 8] = ["rs", "md", "toml", "py", "sh", "yml", "json", "txt"];

/// Every violation, one line each; `Ok` when there is none.
pub fn check(root: &Path) -> Result<(), String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !out.status.success() {
        return Err("git ls-files failed (not a git checkout?)".into());
    }
    let mut bad = Vec::new();
    for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        let ext = Path::new(&name)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        if !TEXT.contains(&ext) {
            continue;
        }
        // A tracked file deleted in the work tree is git's business.
        let Ok(text) = std::fs::read_to_string(root.join(&name)) else {
            continue;
        };
        if ext == "rs" && !text.starts_with("//!") {
            bad.push(format!("{name}: does not open with a `//!` header"));
        }
        let conflict = text
            .lines()
            .position(|l| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || l == "=======");
        if let Some(i) = conflict {
            bad.push(format!("{name}:{}: a merge-conflict marker", i + 1));
        }
        let lines = text.lines().count();
        if ext == "rs" && name.contains("/src/") && lines > MAX_SRC_LINES {
            bad.push(format!(
                "{name}: {lines} lines, more than {MAX_SRC_LINES}: split it"
            ));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad.join("\n"))
    }
}
