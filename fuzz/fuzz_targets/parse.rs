//! Fuzz target: any text through the parser; a parsed jaxpr is printed.
//! Invariant under test: neither panics, whatever the text.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    jaxon_fuzzing::parse_and_print(data);
});
