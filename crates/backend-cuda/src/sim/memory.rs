//! The simulator's memories: global buffers ([`SimBuffer`], bytes as on the
//! device) and one block's shared arrays ([`SharedMem`]) with their race
//! tracking.
//!
//! Invariants: a [`SimBuffer`] holds whole little-endian elements of its
//! dtype (`bool` one byte, 0 or 1); element accessors take indices already
//! bounds-checked by the caller and return `None` instead of panicking when
//! they are not. A shared element's tracking is valid only for the barrier
//! epoch it records; an element of an older epoch counts as untouched, so
//! starting a new epoch (a barrier, a new block) costs nothing.

use super::value::{canon, poison, raw};

use jaxon_ir::DType;

/// A global buffer on the simulated device: little-endian elements of
/// `dtype` (`bool` as one byte, 0 or 1).
#[derive(Clone, Debug, PartialEq)]
pub struct SimBuffer {
    /// The element type.
    pub dtype: DType,
    /// The elements' bytes.
    pub bytes: Vec<u8>,
}

impl SimBuffer {
    /// `len` zero elements.
    pub fn zeroed(dtype: DType, len: usize) -> SimBuffer {
        SimBuffer {
            dtype,
            bytes: vec![0; len * dtype.size_bytes()],
        }
    }

    /// `len` zero elements, or `None` when the allocator cannot provide
    /// them (instead of aborting the process).
    pub fn try_zeroed(dtype: DType, len: usize) -> Option<SimBuffer> {
        let n = len.checked_mul(dtype.size_bytes())?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(n).ok()?;
        bytes.resize(n, 0);
        Some(SimBuffer { dtype, bytes })
    }

    /// Elements rounded from `values` as [`Const::from_f64`](crate::kir::Const::from_f64) rounds.
    pub fn from_f64(dtype: DType, values: &[f64]) -> SimBuffer {
        SimBuffer {
            dtype,
            bytes: crate::host::encode(dtype, values),
        }
    }

    /// Elements from values in [`Const`](crate::kir::Const)'s encoding (only the low bits of
    /// each are kept).
    pub fn from_bits(dtype: DType, bits: &[u64]) -> SimBuffer {
        let mut b = SimBuffer::zeroed(dtype, bits.len());
        for (i, &v) in bits.iter().enumerate() {
            b.set(i, v);
        }
        b
    }

    /// The number of whole elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size_bytes()
    }

    /// True if the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` in [`Const`](crate::kir::Const)'s encoding, if in bounds.
    pub fn get(&self, i: usize) -> Option<u64> {
        let n = self.dtype.size_bytes();
        let bytes = self
            .bytes
            .get(i.checked_mul(n)?..i.checked_mul(n)?.checked_add(n)?)?;
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(bytes);
        Some(canon(self.dtype, u64::from_le_bytes(buf)))
    }

    /// Sets element `i` from a value in [`Const`](crate::kir::Const)'s encoding; false if out
    /// of bounds.
    pub fn set(&mut self, i: usize, bits: u64) -> bool {
        let n = self.dtype.size_bytes();
        let Some(start) = i.checked_mul(n) else {
            return false;
        };
        let Some(dst) = start
            .checked_add(n)
            .and_then(|end| self.bytes.get_mut(start..end))
        else {
            return false;
        };
        dst.copy_from_slice(&raw(self.dtype, bits).to_le_bytes()[..n]);
        true
    }

    /// Every element in [`Const`](crate::kir::Const)'s encoding.
    pub fn to_bits(&self) -> Vec<u64> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

    /// Every element as an `f64` (exact but for 64-bit integers beyond 2^53).
    pub fn to_f64(&self) -> Vec<f64> {
        crate::host::decode(self.dtype, &self.bytes)
    }
}

/// No thread.
const NONE: u32 = u32::MAX;

/// Who touched a shared element in the barrier epoch `epoch`.
#[derive(Clone, Copy, Debug)]
struct Track {
    epoch: u64,
    /// The last thread that stored to it.
    writer: u32,
    /// Up to two distinct threads that read it.
    readers: [u32; 2],
    /// Up to two distinct threads that ran atomics on it.
    atomics: [u32; 2],
}

impl Track {
    const UNTOUCHED: Track = Track {
        epoch: 0,
        writer: NONE,
        readers: [NONE; 2],
        atomics: [NONE; 2],
    };
}

/// How a thread touches a shared element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An atomic read-modify-write.
    Atomic,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
            Access::Atomic => "updates atomically",
        }
    }
}

/// A race: the other thread and what it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Race {
    /// The other thread (linear index in the block).
    pub other: u32,
    /// What the other thread did.
    pub other_did: &'static str,
    /// What this thread does.
    pub this_does: &'static str,
}

/// One shared array of the running block.
#[derive(Clone, Debug)]
pub(crate) struct SharedMem {
    /// The element type.
    pub dtype: DType,
    /// The elements, in `Const`'s encoding.
    pub data: Vec<u64>,
    track: Vec<Track>,
}

impl SharedMem {
    /// An array of `len` poisoned elements.
    pub fn new(dtype: DType, len: usize) -> SharedMem {
        SharedMem {
            dtype,
            data: vec![poison(dtype); len],
            track: vec![Track::UNTOUCHED; len],
        }
    }

    /// Poisons every element for a new block (tracking resets with the
    /// epoch).
    pub fn reset(&mut self) {
        let p = poison(self.dtype);
        self.data.iter_mut().for_each(|v| *v = p);
    }

    /// Records that thread `t` touches element `i` (in bounds) in `epoch`,
    /// or returns the race this makes with another thread of the same epoch.
    /// Reads race with others' writes and atomics; writes with others'
    /// reads, writes and atomics; atomics with others' reads and writes.
    pub fn touch(&mut self, i: usize, t: u32, how: Access, epoch: u64) -> Result<(), Race> {
        let Some(tr) = self.track.get_mut(i) else {
            return Ok(());
        };
        if tr.epoch != epoch {
            *tr = Track {
                epoch,
                ..Track::UNTOUCHED
            };
        }
        let other = |slots: &[u32], what: &'static str| {
            slots.iter().find(|&&o| o != NONE && o != t).map(|&o| Race {
                other: o,
                other_did: what,
                this_does: how.verb(),
            })
        };
        let writer = [tr.writer];
        let conflict = match how {
            Access::Read => other(&writer, "wrote").or_else(|| other(&tr.atomics, "updated")),
            Access::Write => other(&writer, "wrote")
                .or_else(|| other(&tr.readers, "read"))
                .or_else(|| other(&tr.atomics, "updated")),
            Access::Atomic => other(&writer, "wrote").or_else(|| other(&tr.readers, "read")),
        };
        if let Some(race) = conflict {
            return Err(race);
        }
        let add = |slots: &mut [u32; 2]| {
            if slots[0] == NONE || slots[0] == t {
                slots[0] = t;
            } else if slots[1] == NONE {
                slots[1] = t;
            }
        };
        match how {
            Access::Read => add(&mut tr.readers),
            Access::Write => tr.writer = t,
            Access::Atomic => add(&mut tr.atomics),
        }
        Ok(())
    }
}
