//! More unit tests of the shape rules.
