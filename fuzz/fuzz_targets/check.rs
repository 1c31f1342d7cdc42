//! Fuzz target: parsed texts through the checker, and a checked jaxpr's
//! printed text back through parse and check. Invariant under test: no
//! panic; a checked jaxpr's text parses and checks again.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    jaxon_fuzzing::check_roundtrip(data);
});
