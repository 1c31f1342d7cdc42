//! The operations generated code calls out to: `dot` (GEMM plans and our
//! packed GEMM), `native` (gathers, scatters, sorts, convolutions, state
//! and Pallas ops), `copy` (pads, concatenations, splits), `cumulative`
//! (cumulative ops and arg-reductions).
//!
//! Invariant: an op knows its operands and results, never the program that
//! calls it (except `native::pallas`, whose kernel is a nested program).

pub(crate) mod copy;
pub(crate) mod cumulative;
pub(crate) mod dot;
pub(crate) mod native;
