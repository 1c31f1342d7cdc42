//! Fuzz target: generated `pallas_call`s (random grids, block shapes,
//! index maps, kernels) on small operands, run by the interpreter and the
//! CPU backend. Invariant under test: neither panics; when both succeed
//! they agree on every output element a block writes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = jaxon_fuzzing::pallas::pallas_blocks(data);
});
