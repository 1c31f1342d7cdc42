//! The CPU backend's compiled-program caches: bounded maps from a jaxpr's
//! fingerprint to its program, least recently used out.
//!
//! Invariants: a cache holds at most its limit of programs (at least 1);
//! a hit refreshes its entry; an evicted program stays alive as long as an
//! executable holds it. The default limit is
//! `JAXON_CPU_PROGRAM_CACHE_SIZE` (a positive integer) if set, else
//! [`DEFAULT_PROGRAM_CACHE_SIZE`].

use std::collections::HashMap;
use std::sync::OnceLock;

/// Programs each cache keeps unless configured otherwise.
pub const DEFAULT_PROGRAM_CACHE_SIZE: usize = 1024;

/// The default limit (read from the environment once).
pub(crate) fn default_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("JAXON_CPU_PROGRAM_CACHE_SIZE")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_PROGRAM_CACHE_SIZE)
    })
}

/// A bounded LRU map from fingerprint to program.
pub(crate) struct ProgramCache<V> {
    map: HashMap<String, (u64, V)>,
    tick: u64,
    limit: usize,
}

impl<V: Clone> ProgramCache<V> {
    pub fn new(limit: usize) -> ProgramCache<V> {
        ProgramCache {
            map: HashMap::new(),
            tick: 0,
            limit: limit.max(1),
        }
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
        self.evict();
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// The program for `key`, refreshed as most recently used.
    pub fn get(&mut self, key: &str) -> Option<V> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(key).map(|(used, v)| {
            *used = tick;
            v.clone()
        })
    }

    /// The program for `key` without refreshing it.
    pub fn peek(&self, key: &str) -> Option<&V> {
        self.map.get(key).map(|(_, v)| v)
    }

    /// Caches `v` under `key`, evicting the least recently used programs
    /// beyond the limit.
    pub fn insert(&mut self, key: String, v: V) {
        self.tick += 1;
        self.map.insert(key, (self.tick, v));
        self.evict();
    }

    fn evict(&mut self) {
        while self.map.len() > self.limit {
            let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            self.map.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recently_used() {
        let mut c = ProgramCache::new(2);
        c.insert("a".into(), 1);
        c.insert("b".into(), 2);
        assert_eq!(c.get("a"), Some(1));
        c.insert("c".into(), 3);
        assert_eq!((c.len(), c.peek("b")), (2, None));
        assert_eq!((c.get("a"), c.get("c")), (Some(1), Some(3)));
        c.set_limit(1);
        assert_eq!((c.len(), c.peek("c")), (1, Some(&3)));
        c.clear();
        assert_eq!(c.len(), 0);
    }
}
