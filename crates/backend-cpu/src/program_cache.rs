//! The CPU backend's compiled-program caches: bounded maps from a jaxpr's
//! fingerprint to its program, least recently used out (`jaxon_ir::lru`).
//!
//! Invariants: a cache holds at most its limit of programs (at least 1);
//! a hit refreshes its entry; an evicted program stays alive as long as an
//! executable holds it. The default limit is
//! `JAXON_CPU_PROGRAM_CACHE_SIZE` (a positive integer) if set, else
//! [`DEFAULT_PROGRAM_CACHE_SIZE`].

use std::sync::OnceLock;

/// Programs each cache keeps unless configured otherwise.
pub const DEFAULT_PROGRAM_CACHE_SIZE: usize = 1024;

/// The default limit (read from the environment once).
pub(crate) fn default_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        jaxon_ir::lru::limit_from_env("JAXON_CPU_PROGRAM_CACHE_SIZE", DEFAULT_PROGRAM_CACHE_SIZE)
    })
}

/// A bounded LRU map from fingerprint to program.
pub(crate) type ProgramCache<V> = jaxon_ir::lru::Lru<String, V>;
