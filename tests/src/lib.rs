//! Shared helpers of jaxon's integration tests and conformance runner.
//!
//! - [`json`]: decoding the conformance corpus (arrays, cases) from JSON.
//! - [`compare`]: comparing arrays within a case's tolerances and reporting
//!   the first difference.

pub mod compare;
pub mod json;
pub mod own_transforms;

pub use compare::{compare_arrays, compare_outputs, Tolerance};
pub use json::{decode_array, decode_case, decode_header, Case, GradRecord, JvpRecord, VmapRecord};
