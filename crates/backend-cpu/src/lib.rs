//! Cranelift JIT backend.
