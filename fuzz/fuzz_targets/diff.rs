//! Fuzz target: small checked jaxprs run by the interpreter and the CPU
//! backend on the same inputs. Invariant under test: neither panics; when
//! both succeed they agree on dtypes, shapes and values (within a loose
//! tolerance for floats).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    jaxon_fuzzing::differential(data);
});
