//! A bounded map, least recently used out: the compile caches of the
//! backends (the CPU backend's programs, the CUDA backend's NVRTC modules).
//!
//! Invariants: it holds at most `limit` entries (a limit is at least 1); a
//! `get` refreshes its entry, a `peek` does not; inserting past the limit
//! drops the least recently used entries. Values are handed out by clone
//! (an `Arc` in every cache), so an evicted value lives on wherever it is
//! held.

use std::collections::HashMap;
use std::hash::Hash;

/// A bounded least-recently-used map.
#[derive(Debug)]
pub struct Lru<K, V> {
    map: HashMap<K, (u64, V)>,
    tick: u64,
    limit: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    /// An empty map that keeps at most `limit` entries (at least 1).
    pub fn new(limit: usize) -> Lru<K, V> {
        Lru {
            map: HashMap::new(),
            tick: 0,
            limit: limit.max(1),
        }
    }

    /// Changes the limit (at least 1), evicting what no longer fits.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
        self.evict();
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// The value for `key`, refreshed as most recently used.
    pub fn get(&mut self, key: &K) -> Option<V> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(key).map(|(used, v)| {
            *used = tick;
            v.clone()
        })
    }

    /// The value for `key` without refreshing it.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.map.get(key).map(|(_, v)| v)
    }

    /// Keeps `v` under `key`, evicting the least recently used entries
    /// beyond the limit.
    pub fn insert(&mut self, key: K, v: V) {
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

/// A positive integer from the environment variable `var`, else `default`
/// (what every cache size setting reads).
pub fn limit_from_env(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recently_used() {
        let mut c = Lru::new(2);
        c.insert("a", 1);
        c.insert("b", 2);
        assert_eq!(c.get(&"a"), Some(1));
        c.insert("c", 3);
        assert_eq!((c.len(), c.peek(&"b")), (2, None));
        assert_eq!((c.get(&"a"), c.get(&"c")), (Some(1), Some(3)));
        c.set_limit(1);
        assert_eq!((c.len(), c.peek(&"c")), (1, Some(&3)));
        c.clear();
        assert!(c.is_empty());
        assert_eq!(Lru::<u8, u8>::new(0).limit(), 1);
    }
}
