//! Unit tests of the shape rules.
