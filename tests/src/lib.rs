//! Shared helpers of jaxon's integration tests and conformance runner.
