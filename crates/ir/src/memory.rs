//! Checked allocation of buffers whose size comes from a shape.
//!
//! A shape is input: `f32[100000,100000,10]` is a valid type, and
//! allocating it must not abort the process (Rust's global allocator aborts
//! on failure). Every evaluator asks here first: [`check_alloc`] refuses a
//! buffer over the memory limit, or one the allocator cannot provide, with
//! [`IrError::ResourceExhausted`] naming the shape and the bytes (XLA's
//! `RESOURCE_EXHAUSTED`); [`try_zeros`] allocates through `try_reserve`.
//!
//! The limit is, in order: [`set_memory_limit`], the `JAXON_MEMORY_LIMIT`
//! environment variable (bytes), the machine's physical memory
//! (`MemTotal` in `/proc/meminfo`), or `isize::MAX`. Invariant: no function
//! here panics or aborts on any shape.

use crate::array::Storage;
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use half::{bf16, f16};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Buffers below this size are not probed with `try_reserve` (the limit
/// still applies): probing costs a map and unmap.
const PROBE_BYTES: usize = 256 << 20;

/// The limit set by [`set_memory_limit`]; 0 when unset.
static LIMIT: AtomicUsize = AtomicUsize::new(0);

/// Sets the largest buffer, in bytes, an evaluator may allocate for one
/// value (`None` restores the default: `JAXON_MEMORY_LIMIT` or physical
/// memory). Process-wide.
pub fn set_memory_limit(bytes: Option<usize>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The largest buffer, in bytes, an evaluator may allocate for one value.
pub fn memory_limit() -> usize {
    match LIMIT.load(Ordering::Relaxed) {
        0 => default_limit(),
        n => n,
    }
}

fn default_limit() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        std::env::var("JAXON_MEMORY_LIMIT")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .or_else(physical_memory)
            .unwrap_or(isize::MAX as usize)
    })
}

/// `MemTotal` of `/proc/meminfo`, in bytes (Linux only; `None` elsewhere).
fn physical_memory() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Bytes of `n` elements of each shape dim product times `elem` bytes, in
/// `u128` (saturating), for messages about shapes that overflow `usize`.
fn wide_bytes(shape: &[usize], elem: usize) -> u128 {
    shape
        .iter()
        .fold(elem as u128, |acc, &d| acc.saturating_mul(d as u128))
}

/// Bytes of a dense `dtype[shape]`, or `None` when the element count or
/// the byte count overflows (a valid allocation is at most `isize::MAX`).
pub fn shape_bytes(dtype: DType, shape: &[usize]) -> Option<usize> {
    let n = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))?;
    n.checked_mul(dtype.size_bytes())
        .filter(|&b| b <= isize::MAX as usize)
}

/// Checks that a type's static dims describe a buffer whose size fits in
/// memory arithmetic (`isize::MAX` bytes); dimension variables are skipped.
/// The checker's rule: a shape that overflows `usize` is an error.
pub fn check_shape_size(a: &ShapedArray) -> Result<(), IrError> {
    let dims: Vec<usize> = a.shape.iter().filter_map(|d| d.as_const()).collect();
    if shape_bytes(a.dtype, &dims).is_none() {
        let shown: Vec<String> = a
            .shape
            .iter()
            .map(|d| match d {
                Dim::Const(n) => n.to_string(),
                Dim::Var(v) => format!("#{}", v.0),
            })
            .collect();
        return Err(IrError::Invalid(format!(
            "type {}[{}] has {} bytes, more than any buffer can hold ({} bytes)",
            a.dtype,
            shown.join(","),
            wide_bytes(&dims, a.dtype.size_bytes()),
            isize::MAX
        )));
    }
    Ok(())
}

/// Checks that `dtype[shape]`, with `per_elem` extra bytes per element of
/// working memory (an evaluator's index maps and widened copies), can be
/// allocated: within [`memory_limit`] and, for large buffers, obtainable
/// from the allocator now. Returns the buffer's own bytes.
pub fn check_alloc(
    what: &str,
    dtype: DType,
    shape: &[usize],
    per_elem: usize,
) -> Result<usize, IrError> {
    let elem = dtype.size_bytes();
    let exhausted = |bytes: u128, reason: String| IrError::ResourceExhausted {
        what: what.to_string(),
        dtype,
        shape: shape.to_vec(),
        bytes,
        reason,
    };
    let Some(bytes) = shape_bytes(dtype, shape) else {
        return Err(exhausted(
            wide_bytes(shape, elem),
            "the size overflows the address space".into(),
        ));
    };
    let n = bytes.checked_div(elem).unwrap_or(0);
    let work = n
        .checked_mul(per_elem)
        .and_then(|w| w.checked_add(bytes))
        .filter(|&w| w <= isize::MAX as usize);
    let Some(work) = work else {
        return Err(exhausted(
            bytes as u128,
            format!("with {per_elem} bytes of working memory per element, the size overflows"),
        ));
    };
    let limit = memory_limit();
    if work > limit {
        return Err(exhausted(
            bytes as u128,
            format!("{work} bytes with working memory, over the memory limit of {limit} bytes"),
        ));
    }
    if work >= PROBE_BYTES {
        let mut probe: Vec<u8> = Vec::new();
        if probe.try_reserve_exact(work).is_err() {
            return Err(exhausted(
                bytes as u128,
                format!("the allocator refused {work} bytes"),
            ));
        }
    }
    Ok(bytes)
}

/// A vector of `n` copies of `x`, allocated with `try_reserve`.
fn try_filled<T: Clone>(n: usize, x: T) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, x);
    Some(v)
}

/// `dtype[shape]` zeros (false for bool), refused with
/// [`IrError::ResourceExhausted`] instead of aborting when it cannot be had.
pub fn try_zeros(what: &str, dtype: DType, shape: &[usize]) -> Result<Storage, IrError> {
    let bytes = check_alloc(what, dtype, shape, 0)?;
    let n = bytes.checked_div(dtype.size_bytes()).unwrap_or(0);
    let s = match dtype {
        DType::Bool => try_filled(n, false).map(Storage::Bool),
        DType::I8 => try_filled(n, 0).map(Storage::I8),
        DType::I16 => try_filled(n, 0).map(Storage::I16),
        DType::I32 => try_filled(n, 0).map(Storage::I32),
        DType::I64 => try_filled(n, 0).map(Storage::I64),
        DType::U8 => try_filled(n, 0).map(Storage::U8),
        DType::U16 => try_filled(n, 0).map(Storage::U16),
        DType::U32 => try_filled(n, 0).map(Storage::U32),
        DType::U64 => try_filled(n, 0).map(Storage::U64),
        DType::F16 => try_filled(n, f16::ZERO).map(Storage::F16),
        DType::BF16 => try_filled(n, bf16::ZERO).map(Storage::BF16),
        DType::F32 => try_filled(n, 0.0).map(Storage::F32),
        DType::F64 => try_filled(n, 0.0).map(Storage::F64),
        DType::C64 => try_filled(n, num_complex::Complex32::new(0.0, 0.0)).map(Storage::C64),
        DType::C128 => try_filled(n, num_complex::Complex64::new(0.0, 0.0)).map(Storage::C128),
        DType::KeyFry => try_filled(n, [0u32, 0]).map(Storage::Key),
    };
    s.ok_or_else(|| IrError::ResourceExhausted {
        what: what.to_string(),
        dtype,
        shape: shape.to_vec(),
        bytes: bytes as u128,
        reason: "the allocator refused it".into(),
    })
}

/// A zeroed `u64` arena of `words` words (a backend's scratch memory),
/// refused instead of aborting when it cannot be had.
pub fn try_arena(what: &str, words: usize) -> Result<Vec<u64>, IrError> {
    check_alloc(what, DType::U64, &[words], 0)?;
    try_filled(words, 0u64).ok_or_else(|| IrError::ResourceExhausted {
        what: what.to_string(),
        dtype: DType::U64,
        shape: vec![words],
        bytes: words as u128 * 8,
        reason: "the allocator refused it".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_bytes_detects_overflow() {
        assert_eq!(shape_bytes(DType::F32, &[3, 5]), Some(60));
        assert_eq!(shape_bytes(DType::F32, &[0, usize::MAX]), Some(0));
        assert_eq!(shape_bytes(DType::F32, &[1 << 32, 1 << 32]), None);
        assert_eq!(shape_bytes(DType::F64, &[1 << 61]), None);
    }

    #[test]
    fn huge_allocation_is_an_error_naming_shape_and_bytes() {
        let e = check_alloc("broadcast_in_dim", DType::F32, &[100000, 100000, 10], 16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("RESOURCE_EXHAUSTED"), "{e}");
        assert!(e.contains("400000000000 bytes"), "{e}");
        assert!(e.contains("f32[100000, 100000, 10]"), "{e}");
        let e = try_zeros("x", DType::F64, &[1 << 40, 1 << 40]).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }

    #[test]
    fn small_allocation_succeeds() {
        let s = try_zeros("x", DType::I16, &[3, 4]).unwrap();
        assert_eq!(s, Storage::I16(vec![0; 12]));
        assert_eq!(try_arena("arena", 5).unwrap(), vec![0u64; 5]);
    }
}
