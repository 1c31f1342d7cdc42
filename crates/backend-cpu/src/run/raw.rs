//! Copies between a program's raw buffers and host arrays.
//!
//! `unsafe` here relies on each caller's stated contract: the pointer holds
//! (or has room for) the elements of the dtype and shape given, aligned for
//! them, and does not overlap the host array.

use jaxon_ir::{with_storage, DType, HostArray, IrError, Storage};

/// A copy of the array of `dt` and `shape` at `p`.
///
/// # Safety
/// `p` points to `shape.product()` initialised elements of `dt`, aligned
/// for it.
pub(crate) unsafe fn read_array(
    p: *const u8,
    dt: DType,
    shape: &[usize],
) -> Result<HostArray, IrError> {
    let n: usize = shape.iter().product();
    // Not zeroed first: every element is copied in.
    let mut s = Storage::zeros(dt, 0);
    with_storage!(&mut s, v => {
        v.reserve_exact(n);
        // SAFETY: the caller's contract: `p` holds `n` initialised elements
        // of `dt` (valid values of the element type); `v` has room for `n`,
        // all of which are initialised by the copy before `set_len`.
        unsafe {
            std::ptr::copy_nonoverlapping(p.cast(), v.as_mut_ptr(), n);
            v.set_len(n);
        }
    });
    HostArray::new(shape.to_vec(), s)
}

/// Copies `a`'s elements to `p`.
///
/// # Safety
/// `p` has room for `a.len()` elements of its dtype and does not overlap
/// `a`.
pub(crate) unsafe fn write_array(a: &HostArray, p: *mut u8) {
    with_storage!(a.data(), v => {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p.cast(), v.len()) }
    });
}
