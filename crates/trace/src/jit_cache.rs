//! The compile caches' bookkeeping: `jit`'s per-function cache (a bounded
//! LRU map from input signature to staged entry, with single-flight
//! tracing) and the process-wide [`clear_caches`].
//!
//! Invariants:
//! - A `Cache` holds at most its limit of ready entries; inserting one
//!   more evicts the least recently used (a hit refreshes an entry).
//! - A signature missing from the cache is traced by one thread (the
//!   *leader*, which holds a `Lead`); threads that miss it meanwhile wait
//!   on the leader's `Flight` and share its entry or its error. A failed
//!   or abandoned flight leaves no slot behind, so the next call traces
//!   again (an error never poisons a key). A leader that unwinds (a
//!   panicking user closure) hands its waiters an error.
//! - A thread that leads a flight never waits on another (it traces on its
//!   own instead), so waits cannot form a cycle: jitted functions that call
//!   each other while tracing on different threads cannot deadlock, and a
//!   function that calls itself while tracing cannot wait on itself.
//! - [`clear_caches`] bumps a global generation; every cache compares it on
//!   each lookup and empties itself when it moved, so live `Jit`s and every
//!   thread's eager cache drop their entries without a registry. A flight
//!   that started before the clear completes for its waiters but is not
//!   cached.
//! - Locks poisoned by a panicking thread are recovered (`into_inner`):
//!   the cache's data stays consistent between statements.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::pytree::TreeDef;
use hashbrown::HashMap;
use jaxon_ir::Aval;
use std::cell::Cell;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Ready entries a `jit` function keeps when neither
/// [`Jit::cache_limit`](crate::Jit::cache_limit) nor `JAXON_JIT_CACHE_SIZE`
/// says otherwise.
pub const DEFAULT_JIT_CACHE_SIZE: usize = 4096;

/// The default per-function limit: `JAXON_JIT_CACHE_SIZE` (a positive
/// integer) if set, else [`DEFAULT_JIT_CACHE_SIZE`]. Read once.
pub fn default_cache_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("JAXON_JIT_CACHE_SIZE")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_JIT_CACHE_SIZE)
    })
}

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The current cache generation; [`clear_caches`] advances it.
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Empties every compile cache (JAX's `jax.clear_caches()`): the entries
/// of every live `jit` function, every thread's eager-operation cache (each
/// at its next lookup) and every registered backend's program cache. The
/// next call of any function traces and compiles afresh. Executables and
/// results already handed out stay valid.
pub fn clear_caches() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    crate::eval::clear_backend_caches();
}

/// A cache key: the input structure and every leaf's aval (weak flag
/// included).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Key {
    pub in_def: TreeDef,
    pub avals: Vec<Aval>,
}

/// Hashes a cache key from its parts, so that an owned [`Key`] and a
/// borrowed [`LeafKey`] of the same type hash alike.
fn hash_key<'a, H: Hasher>(
    in_def: &TreeDef,
    avals: impl ExactSizeIterator<Item = &'a Aval>,
    h: &mut H,
) {
    in_def.hash(h);
    h.write_usize(avals.len());
    for a in avals {
        a.hash(h);
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, h: &mut H) {
        hash_key(&self.in_def, self.avals.iter(), h)
    }
}

/// The cache key of a call, borrowed from its leaves: a cache hit (every
/// steady-state dispatch) then copies no aval.
pub(crate) struct LeafKey<'a> {
    pub in_def: &'a TreeDef,
    pub leaves: &'a [Array],
}

impl Hash for LeafKey<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        hash_key(self.in_def, self.leaves.iter().map(Array::aval), h)
    }
}

impl hashbrown::Equivalent<Key> for LeafKey<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        *self.in_def == key.in_def
            && self.leaves.len() == key.avals.len()
            && self
                .leaves
                .iter()
                .zip(&key.avals)
                .all(|(l, a)| l.aval() == a)
    }
}

/// How a flight ended.
enum FlightState<E> {
    Running,
    Done(Arc<E>),
    Failed(Error),
    /// The leader's entry cannot be shared (it captured tracers of its own
    /// trace): each waiter looks up again.
    Abandoned,
}

/// One signature being traced: waiters block on it until the leader ends.
pub(crate) struct Flight<E> {
    state: Mutex<FlightState<E>>,
    done: Condvar,
}

/// What a waiter gets from a flight.
pub(crate) enum Landed<E> {
    Done(Arc<E>),
    Failed(Error),
    Retry,
}

impl<E> Flight<E> {
    /// Blocks until the leader ends the flight.
    pub fn wait(&self) -> Landed<E> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match &*s {
                FlightState::Running => {
                    s = self.done.wait(s).unwrap_or_else(|e| e.into_inner());
                }
                FlightState::Done(e) => return Landed::Done(e.clone()),
                FlightState::Failed(e) => return Landed::Failed(e.clone()),
                FlightState::Abandoned => return Landed::Retry,
            }
        }
    }

    fn land(&self, state: FlightState<E>) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        self.done.notify_all();
    }
}

enum Slot<E> {
    Ready { entry: Arc<E>, used: u64 },
    Pending(Arc<Flight<E>>),
}

/// A `jit` function's cache: see the module invariants.
pub(crate) struct Cache<E> {
    entries: HashMap<Key, Slot<E>>,
    /// The key of the last miss (for the miss explanation).
    pub last_key: Option<Key>,
    tick: u64,
    generation: u64,
    limit: usize,
}

/// The outcome of a lookup.
pub(crate) enum Lookup<E> {
    Hit(Arc<E>),
    /// Another thread is tracing this signature.
    Wait(Arc<Flight<E>>),
    Miss,
}

thread_local! {
    /// Flights this thread leads right now.
    static LEADING: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread leads a flight (and so must not wait on one).
pub(crate) fn leading() -> bool {
    LEADING.with(|l| l.get() > 0)
}

impl<E> Cache<E> {
    pub fn new(limit: usize) -> Cache<E> {
        Cache {
            entries: HashMap::new(),
            last_key: None,
            tick: 0,
            generation: generation(),
            limit: limit.max(1),
        }
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
        self.evict();
    }

    /// Empties the cache if [`clear_caches`] ran since it last looked.
    fn sync(&mut self) {
        let g = generation();
        if g != self.generation {
            self.entries.clear();
            self.last_key = None;
            self.generation = g;
        }
    }

    /// Ready entries held.
    pub fn len(&mut self) -> usize {
        self.sync();
        self.entries
            .values()
            .filter(|s| matches!(s, Slot::Ready { .. }))
            .count()
    }

    /// Looks `key` up, refreshing a hit.
    pub fn lookup<Q>(&mut self, key: &Q) -> Lookup<E>
    where
        Q: Hash + hashbrown::Equivalent<Key> + ?Sized,
    {
        self.sync();
        self.tick += 1;
        let tick = self.tick;
        match self.entries.get_mut(key) {
            Some(Slot::Ready { entry, used }) => {
                *used = tick;
                Lookup::Hit(entry.clone())
            }
            Some(Slot::Pending(f)) => Lookup::Wait(f.clone()),
            None => Lookup::Miss,
        }
    }

    /// Starts a flight for `key` (which must have missed just now, under
    /// the same lock): the caller traces and ends it with [`Lead::finish`].
    pub fn lead<'a>(&mut self, lock: &'a Mutex<Cache<E>>, key: &Key) -> Lead<'a, E> {
        let flight = Arc::new(Flight {
            state: Mutex::new(FlightState::Running),
            done: Condvar::new(),
        });
        self.entries
            .insert(key.clone(), Slot::Pending(flight.clone()));
        LEADING.with(|l| l.set(l.get() + 1));
        Lead {
            cache: lock,
            key: key.clone(),
            flight,
            generation: self.generation,
            ended: false,
        }
    }

    /// Evicts least recently used ready entries down to the limit.
    fn evict(&mut self) {
        loop {
            let ready = self.entries.iter().filter_map(|(k, s)| match s {
                Slot::Ready { used, .. } => Some((*used, k)),
                Slot::Pending(_) => None,
            });
            let mut n = 0;
            let mut oldest: Option<(u64, &Key)> = None;
            for (used, k) in ready {
                n += 1;
                if oldest.is_none_or(|(u, _)| used < u) {
                    oldest = Some((used, k));
                }
            }
            match oldest {
                Some((_, k)) if n > self.limit => {
                    let k = k.clone();
                    self.entries.remove(&k);
                }
                _ => return,
            }
        }
    }

    /// Removes `key`'s slot if it is `flight`'s.
    fn remove_flight(&mut self, key: &Key, flight: &Arc<Flight<E>>) {
        if matches!(self.entries.get(key), Some(Slot::Pending(f)) if Arc::ptr_eq(f, flight)) {
            self.entries.remove(key);
        }
    }
}

/// The leader's side of a flight; dropping it unfinished (an unwinding
/// tracer) fails the flight and frees the key.
pub(crate) struct Lead<'a, E> {
    cache: &'a Mutex<Cache<E>>,
    key: Key,
    flight: Arc<Flight<E>>,
    generation: u64,
    ended: bool,
}

impl<E> Lead<'_, E> {
    /// Ends the flight: `Ok(Some(entry))` caches and shares the entry,
    /// `Ok(None)` (an entry that cannot be shared) sends waiters to look
    /// up again, `Err` hands them the error. Neither failure caches.
    pub fn finish(mut self, result: &Result<Option<Arc<E>>>) {
        self.ended = true;
        {
            let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            c.sync();
            let ours = matches!(c.entries.get(&self.key),
                Some(Slot::Pending(f)) if Arc::ptr_eq(f, &self.flight));
            match result {
                Ok(Some(entry)) if ours && c.generation == self.generation => {
                    c.tick += 1;
                    let used = c.tick;
                    c.entries.insert(
                        self.key.clone(),
                        Slot::Ready {
                            entry: entry.clone(),
                            used,
                        },
                    );
                    c.evict();
                }
                _ => c.remove_flight(&self.key, &self.flight),
            }
        }
        self.flight.land(match result {
            Ok(Some(e)) => FlightState::Done(e.clone()),
            Ok(None) => FlightState::Abandoned,
            Err(e) => FlightState::Failed(e.clone()),
        });
    }
}

impl<E> Drop for Lead<'_, E> {
    fn drop(&mut self) {
        LEADING.with(|l| l.set(l.get().saturating_sub(1)));
        if self.ended {
            return;
        }
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove_flight(&self.key, &self.flight);
        self.flight.land(FlightState::Failed(Error::InvalidArgument(
            "jit: the thread tracing this signature panicked; call again to retrace".into(),
        )));
    }
}
