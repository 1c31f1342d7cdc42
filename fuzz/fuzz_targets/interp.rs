//! Fuzz target: small checked jaxprs evaluated by the reference
//! interpreter on inputs derived from the text. Invariant under test: a
//! result or an error, never a panic or an abort.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    jaxon_fuzzing::interp(data);
});
