//! The JAX conformance runner: `conformance CORPUS.jsonl`.

fn main() {
    eprintln!("conformance: not implemented yet");
    std::process::exit(1);
}
