//! Errors raised outside any entry point are ordinary panics whose message
//! the default panic hook prints; inside an entry point they come back as
//! `Err` and print nothing.
//!
//! A plain `main` (no test harness, `harness = false`): run without
//! arguments it runs each case as a child process of itself (the case named
//! by `JAXON_UNCAUGHT_CASE`, executed straight in the child's `main`, so the
//! panic hook is the default one) and checks its exit code and output.

use jaxon::prelude::*;
use std::process::{Command, ExitCode};

const CASE_VAR: &str = "JAXON_UNCAUGHT_CASE";

/// The cases, run in the child's `main`.
fn run_case(name: &str) {
    let a = Array::from_vec(vec![1f32, 2.0, 3.0], &[3]);
    let b = Array::from_vec(vec![1f32, 2.0], &[2]);
    match name {
        // An eager shape error in plain code: nothing catches it.
        "eager_add" => {
            let c = &a + &b;
            println!("unreachable: {c:?}");
        }
        // A bad `Array::from_vec` in plain code.
        "from_vec" => {
            let c = Array::from_vec(vec![1f32, 2.0, 3.0], &[2, 2]);
            println!("unreachable: {c:?}");
        }
        // The same error inside `jit`: an `Err`, nothing printed by the hook.
        "inside_jit" => {
            let b2 = b.clone();
            let r = jit(move |x: Array| &x + &b2).call(a.clone());
            match r {
                Err(e) => println!("jit returned Err: {e}"),
                Ok(v) => println!("jit returned Ok: {v:?}"),
            }
            // And after the entry point returned, plain code panics again.
            let r = jaxon::catch(|| &a + &b);
            match r {
                Err(e) => println!("catch returned Err: {e}"),
                Ok(v) => println!("catch returned Ok: {v:?}"),
            }
        }
        other => panic!("unknown case {other}"),
    }
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn spawn(case: &str) -> Outcome {
    let exe = std::env::current_exe().expect("the test executable");
    let out = Command::new(exe)
        .env(CASE_VAR, case)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("spawn the child");
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn check(failures: &mut Vec<String>, case: &str, ok: bool, what: &str, o: &Outcome) {
    if ok {
        println!("ok   {case}: {what}");
    } else {
        failures.push(format!(
            "{case}: expected {what}\n  exit code: {:?}\n  stdout: {}\n  stderr: {}",
            o.code, o.stdout, o.stderr
        ));
    }
}

fn main() -> ExitCode {
    if let Ok(case) = std::env::var(CASE_VAR) {
        run_case(&case);
        return ExitCode::SUCCESS;
    }
    let mut failures = Vec::new();

    let o = spawn("eager_add");
    check(
        &mut failures,
        "eager_add",
        o.code == Some(101),
        "exit code 101",
        &o,
    );
    check(
        &mut failures,
        "eager_add",
        o.stderr.contains("panicked at") && o.stderr.contains("add"),
        "a panic message naming the operation",
        &o,
    );
    check(
        &mut failures,
        "eager_add",
        o.stderr.contains("f32[3]") && o.stderr.contains("f32[2]"),
        "both shapes in the message",
        &o,
    );
    check(
        &mut failures,
        "eager_add",
        o.stderr.contains("uncaught_errors.rs"),
        "the user's line as the panic location",
        &o,
    );
    check(
        &mut failures,
        "eager_add",
        !o.stdout.contains("unreachable"),
        "no result",
        &o,
    );

    let o = spawn("from_vec");
    check(
        &mut failures,
        "from_vec",
        o.code == Some(101),
        "exit code 101",
        &o,
    );
    check(
        &mut failures,
        "from_vec",
        o.stderr.contains("[2, 2]") && o.stderr.contains("3 elements"),
        "the shape and the element count in the message",
        &o,
    );
    check(
        &mut failures,
        "from_vec",
        o.stderr.contains("uncaught_errors.rs"),
        "the user's line as the panic location",
        &o,
    );

    let o = spawn("inside_jit");
    check(
        &mut failures,
        "inside_jit",
        o.code == Some(0),
        "exit code 0",
        &o,
    );
    check(
        &mut failures,
        "inside_jit",
        o.stdout.contains("jit returned Err:")
            && o.stdout.contains("f32[3]")
            && o.stdout.contains("catch returned Err:"),
        "both errors returned as Err",
        &o,
    );
    check(
        &mut failures,
        "inside_jit",
        o.stderr.is_empty(),
        "nothing on stderr",
        &o,
    );

    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("FAIL {f}");
        }
        ExitCode::FAILURE
    }
}
