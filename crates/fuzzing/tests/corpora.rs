//! Replays every checked-in fuzz input through its target's body: 250
//! inputs of each corpus of the hour-long runs and the crash reproducers,
//! in `fuzz/regressions/<target>/` (`parse`, `check`, `interp`, `diff`,
//! `pallas`). A body panics when an invariant of issue 23 breaks (a panic
//! in jaxon, a printed jaxpr that does not parse back, the interpreter and
//! the CPU backend disagreeing), so this test fails on any regression that
//! the fuzzers once covered, without libFuzzer.

use std::path::Path;

/// The body of each target, as `fuzz/fuzz_targets/*.rs` calls it.
fn body(target: &str) -> fn(&[u8]) {
    match target {
        "parse" => jaxon_fuzzing::parse_and_print,
        "check" => jaxon_fuzzing::check_roundtrip,
        "interp" => jaxon_fuzzing::interp,
        "diff" => jaxon_fuzzing::differential,
        "pallas" => |d| {
            let _ = jaxon_fuzzing::pallas::pallas_blocks(d);
        },
        other => panic!("no fuzz target `{other}`"),
    }
}

#[test]
fn every_checked_in_fuzz_input_keeps_its_invariants() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut total = 0;
    let mut failures = Vec::new();
    for target in ["parse", "check", "interp", "diff", "pallas"] {
        let dir = root.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no inputs", dir.display());
        let run = body(target);
        for f in &files {
            let data = std::fs::read(f).expect("readable");
            total += 1;
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                failures.push(format!("{target}: {}", f.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} inputs broke an invariant:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("fuzz regressions: {total} inputs replayed");
}
