//! `cargo xtask`: the project's task runner (test-all, conformance, bench).

fn main() {
    eprintln!("xtask: not implemented yet");
    std::process::exit(1);
}
