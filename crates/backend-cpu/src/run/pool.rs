//! The output pool: program results are written into storage taken from a
//! free list keyed by (dtype, length), and a result buffer returns its
//! storage to that list when the caller drops it. Steady-state calls thus
//! reuse pages that are already mapped instead of faulting in fresh ones
//! (a 64 MiB output costs 16,384 minor page faults when freshly mapped).
//!
//! Program arenas go back to the pool when their program is dropped, so a
//! program compiled afresh (a new `jit` of the same function) reuses
//! mapped pages too.
//!
//! The pool holds at most [`MAX_PER_KEY`] free buffers per key,
//! [`MAX_ARENAS`] arenas and [`MAX_BYTES`] in all; beyond that, dropped
//! storage is freed.

use jaxon_ir::{Buffer, DType, HostArray, IrError, ShapedArray, Storage};
// Hashed on every output buffer taken and returned: a fast hasher.
use hashbrown::HashMap;
use std::sync::{Arc, Mutex};

/// Free buffers kept per (dtype, length).
const MAX_PER_KEY: usize = 4;
/// Bytes of free buffers kept in all.
const MAX_BYTES: usize = 512 << 20;

/// A free list of output storage.
#[derive(Default, Debug)]
pub(crate) struct Pool {
    free: Mutex<Free>,
}

#[derive(Default, Debug)]
struct Free {
    lists: HashMap<(DType, usize), Vec<Storage>>,
    /// Free program arenas (any length), reused by programs compiled
    /// later: a recompiled program does not fault its arena in again.
    arenas: Vec<Vec<u64>>,
    bytes: usize,
}

/// Free arenas kept.
const MAX_ARENAS: usize = 8;

impl Pool {
    /// Storage for `n` elements of `dt`: a freed buffer when one is free
    /// (its contents are stale: the program overwrites every element),
    /// else a fresh zeroed one, allocated through the checked path
    /// (`RESOURCE_EXHAUSTED` instead of an abort).
    pub fn take(&self, dt: DType, shape: &[usize]) -> Result<Storage, IrError> {
        // (An overflowing product is no key; the checked path reports it.)
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if let (Some(n), Ok(mut f)) = (n, self.free.lock()) {
            if let Some(s) = f.lists.get_mut(&(dt, n)).and_then(Vec::pop) {
                f.bytes -= n * dt.size_bytes();
                return Ok(s);
            }
        }
        // Fresh large zeroed storage is mapped but untouched: advise it
        // before the program writes it.
        let s = jaxon_ir::memory::try_zeros("cpu backend: a result", dt, shape)?;
        crate::run::hugepages::advise_storage(&s);
        Ok(s)
    }

    /// Returns storage to the free list (or frees it when the pool is full).
    pub fn give(&self, s: Storage) {
        let (dt, n) = (s.dtype(), s.len());
        let bytes = n * dt.size_bytes();
        if bytes == 0 {
            return;
        }
        if let Ok(mut f) = self.free.lock() {
            if f.bytes + bytes > MAX_BYTES {
                return;
            }
            let list = f.lists.entry((dt, n)).or_default();
            if list.len() < MAX_PER_KEY {
                list.push(s);
                f.bytes += bytes;
            }
        }
    }

    /// An arena of at least `words` words: a freed one of at most twice
    /// that length when one is free (stale contents: programs never read
    /// an arena byte they did not write), else a fresh zeroed one.
    pub fn take_arena(&self, words: usize) -> Result<Vec<u64>, IrError> {
        if let Ok(mut f) = self.free.lock() {
            let best = f
                .arenas
                .iter()
                .enumerate()
                .filter(|(_, a)| a.len() >= words && a.len() <= 2 * words)
                .min_by_key(|(_, a)| a.len())
                .map(|(i, _)| i);
            if let Some(i) = best {
                let a = f.arenas.swap_remove(i);
                f.bytes -= 8 * a.len();
                return Ok(a);
            }
        }
        jaxon_ir::memory::try_arena("cpu backend: a program's arena", words)
    }

    /// Returns a program's arena to the pool (or frees it when full).
    pub fn give_arena(&self, a: Vec<u64>) {
        let bytes = 8 * a.len();
        if bytes == 0 {
            return;
        }
        if let Ok(mut f) = self.free.lock() {
            if f.bytes + bytes <= MAX_BYTES && f.arenas.len() < MAX_ARENAS {
                f.arenas.push(a);
                f.bytes += bytes;
            }
        }
    }

    /// Bytes currently held free.
    #[cfg(test)]
    pub fn free_bytes(&self) -> usize {
        self.free.lock().map(|f| f.bytes).unwrap_or(0)
    }
}

/// A program result whose storage returns to its pool on drop.
#[derive(Debug)]
pub(crate) struct PooledBuffer {
    array: HostArray,
    pool: Arc<Pool>,
}

impl PooledBuffer {
    /// Wraps a result array taken from `pool`.
    pub fn new(array: HostArray, pool: Arc<Pool>) -> PooledBuffer {
        PooledBuffer { array, pool }
    }

    /// The array.
    pub fn array(&self) -> &HostArray {
        &self.array
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        // The storage moves out, an empty one (no allocation) stays behind
        // for the array's own drop.
        let dt = self.array.dtype();
        let storage = std::mem::replace(self.array.data_mut(), Storage::zeros(dt, 0));
        self.pool.give(storage);
    }
}

impl Buffer for PooledBuffer {
    fn aval(&self) -> ShapedArray {
        self.array.aval()
    }

    fn to_host(&self) -> Result<HostArray, IrError> {
        Ok(self.array.clone())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_buffers_are_reused_by_key() {
        let pool = Arc::new(Pool::default());
        let s = pool.take(DType::F32, &[1000]).expect("small");
        let ptr = match &s {
            Storage::F32(v) => v.as_ptr(),
            _ => panic!("f32"),
        };
        let a = HostArray::new(vec![10, 100], s).expect("sizes");
        drop(PooledBuffer::new(a, pool.clone()));
        assert_eq!(pool.free_bytes(), 4000);
        // Another key does not take it; the same key gets the same memory.
        let other = pool.take(DType::F32, &[999]).expect("small");
        assert_eq!(other.len(), 999);
        let again = pool.take(DType::F32, &[1000]).expect("small");
        assert!(matches!(&again, Storage::F32(v) if v.as_ptr() == ptr));
        assert_eq!(pool.free_bytes(), 0);
    }

    #[test]
    fn arenas_are_reused_best_fit_within_twice_the_length() {
        let pool = Pool::default();
        let small = pool.take_arena(100).expect("small");
        let big = pool.take_arena(1000).expect("small");
        let (ps, pb) = (small.as_ptr(), big.as_ptr());
        pool.give_arena(small);
        pool.give_arena(big);
        assert_eq!(pool.free_bytes(), 8 * 1100);
        // 600 words: the 1000-word arena fits (and is at most twice as long).
        let a = pool.take_arena(600).expect("small");
        assert_eq!(a.as_ptr(), pb);
        // 40 words: the 100-word arena is more than twice too long.
        let b = pool.take_arena(40).expect("small");
        assert_ne!(b.as_ptr(), ps);
        assert_eq!(b.len(), 40);
        let c = pool.take_arena(90).expect("small");
        assert_eq!(c.as_ptr(), ps);
        assert_eq!(pool.free_bytes(), 0);
    }
}
