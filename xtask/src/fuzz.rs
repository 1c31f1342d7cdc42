//! `cargo xtask fuzz`: coverage-guided fuzzing with cargo-fuzz (libFuzzer)
//! on the pinned stable toolchain (`--sanitizer none`: no nightly flags).
//!
//! - `cargo xtask fuzz TARGET [--seconds N] [-- LIBFUZZER_ARGS...]`: writes
//!   the seeds (every jaxpr text of `tests/data/*.jsonl`, grad jaxprs
//!   included) to `fuzz/seeds/`, then runs TARGET (`parse`, `check`,
//!   `interp`, `diff`) for N seconds (default 60), growing
//!   `fuzz/corpus/TARGET/`; crashes go to `fuzz/artifacts/TARGET/`.
//! - `cargo xtask fuzz seeds`: only writes the seeds.
//!
//! Needs `cargo install cargo-fuzz` and a C++ compiler (libFuzzer is
//! built from source by `libfuzzer-sys`). Only the standard library.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The fuzz targets (`fuzz/fuzz_targets/*.rs`).
pub const TARGETS: [&str; 5] = ["parse", "check", "interp", "diff", "pallas"];

/// Decodes the JSON string starting just after its opening quote at
/// `s[i..]`; returns the text and the index after the closing quote.
fn json_string(s: &str, mut i: usize) -> Option<(String, usize)> {
    let b = s.as_bytes();
    let mut out = String::new();
    while i < b.len() {
        match b[i] {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
                let c = *b.get(i + 1)?;
                i += 2;
                match c {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'b' => out.push('\u{8}'),
                    b'f' => out.push('\u{c}'),
                    b'u' => {
                        let hex = s.get(i..i + 4)?;
                        let code = u32::from_str_radix(hex, 16).ok()?;
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        i += 4;
                    }
                    other => out.push(other as char),
                }
            }
            _ => {
                // Copy one UTF-8 character.
                let ch = s[i..].chars().next()?;
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    None
}

/// Every `"jaxpr": "..."` string value in a JSON text.
fn jaxpr_strings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let key = "\"jaxpr\":";
    let mut at = 0;
    while let Some(k) = text[at..].find(key) {
        let mut i = at + k + key.len();
        while text[i..].starts_with(' ') {
            i += 1;
        }
        at = i;
        if text[i..].starts_with('"') {
            if let Some((s, end)) = json_string(text, i + 1) {
                out.push(s);
                at = end;
            }
        }
    }
    out
}

/// Writes the seed corpus: one file per jaxpr text of the conformance
/// corpora (deduplicated). Returns the seed directory.
pub fn write_seeds(root: &Path) -> Result<PathBuf, String> {
    let dir = root.join("fuzz/seeds");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let data = root.join("tests/data");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&data)
        .map_err(|e| format!("{}: {e}", data.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut seen = std::collections::BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        for j in jaxpr_strings(&text) {
            seen.insert(j);
        }
    }
    for (k, j) in seen.iter().enumerate() {
        let p = dir.join(format!("seed-{k:04}.jaxpr"));
        std::fs::write(&p, j).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    eprintln!("fuzz: {} seeds in {}", seen.len(), dir.display());
    Ok(dir)
}

/// `cargo xtask fuzz ...`.
pub fn fuzz(root: &Path, args: &[String], cargo: fn() -> Command) -> ExitCode {
    let usage = || {
        eprintln!(
            "usage: cargo xtask fuzz TARGET [--seconds N] [-- LIBFUZZER_ARGS...]\n\
             \x20      cargo xtask fuzz seeds\n\
             targets: {}",
            TARGETS.join(", ")
        );
        ExitCode::from(2)
    };
    let Some(target) = args.first() else {
        return usage();
    };
    let seeds = match write_seeds(root) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("fuzz: cannot write seeds: {e}");
            return ExitCode::FAILURE;
        }
    };
    if target == "seeds" {
        return ExitCode::SUCCESS;
    }
    if !TARGETS.contains(&target.as_str()) {
        return usage();
    }
    let mut seconds = 60u64;
    let mut extra: Vec<String> = Vec::new();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => match it.next().and_then(|s| s.parse().ok()) {
                Some(s) => seconds = s,
                None => return usage(),
            },
            "--" => extra.extend(it.by_ref().cloned()),
            _ => return usage(),
        }
    }
    if !crate::cargo_subcommand_works("fuzz") {
        eprintln!("fuzz: cargo-fuzz is missing: `cargo install cargo-fuzz`");
        return ExitCode::FAILURE;
    }
    let corpus = root.join("fuzz/corpus").join(target);
    let artifacts = root.join("fuzz/artifacts").join(target);
    for d in [&corpus, &artifacts] {
        if let Err(e) = std::fs::create_dir_all(d) {
            eprintln!("fuzz: {}: {e}", d.display());
            return ExitCode::FAILURE;
        }
    }
    let mut cmd = cargo();
    cmd.args([
        "fuzz",
        "run",
        "--sanitizer",
        "none",
        "--fuzz-dir",
        "fuzz",
        target,
    ])
    .arg(&corpus)
    .arg(&seeds)
    .arg("--")
    .arg(format!("-max_total_time={seconds}"))
    // A slow input is a finding only past 30 s (evaluating targets skip loops).
    .arg("-timeout=30")
    .arg("-rss_limit_mb=4096")
    .arg("-print_final_stats=1")
    .arg(format!("-artifact_prefix={}/", artifacts.display()))
    .args(&extra);
    eprintln!("fuzz: {cmd:?}");
    match cmd.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => {
            eprintln!(
                "fuzz: {target} failed; reproducers are in {}",
                artifacts.display()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("fuzz: cannot run cargo fuzz: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaxpr_strings_decode_escapes() {
        let t = r#"{"name":"a","jaxpr":"{ lambda ; a:f32[]. let\n    b:f32[] = neg a\n  in (b,) }","grad":{"jaxpr": "x\"y\u00e9"}}"#;
        assert_eq!(
            jaxpr_strings(t),
            vec![
                "{ lambda ; a:f32[]. let\n    b:f32[] = neg a\n  in (b,) }".to_string(),
                "x\"y\u{e9}".to_string()
            ]
        );
    }
}
