//! The operations generated code calls out to: `dot` (GEMM plans and our
//! packed GEMM), `native` (gathers, scatters, sorts, convolutions, state
//! and Pallas ops), `copy` (fills, pads, concatenations, splits), `cumulative`
//! (cumulative ops and arg-reductions), `movement` (strided copies with
//! runtime strides), `reduce` (folds along axes), `typed` (typed views of
//! storage).
//!
//! Invariant: an op knows its operands and results, never the program that
//! calls it, and nothing here imports `plan/` or `compile` (a
//! `pallas_call`'s kernel is compiled by `plan::pallas` and handed to its
//! op).

pub(crate) mod copy;
pub(crate) mod cumulative;
pub(crate) mod dot;
pub(crate) mod movement;
pub(crate) mod native;
pub(crate) mod reduce;
pub(crate) mod typed;
