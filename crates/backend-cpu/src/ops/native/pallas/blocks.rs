//! Raw block copies for `pallas_call`: boxes between row-major buffers of
//! different strides (edge blocks in and out, strided output blocks), the
//! uninitialised fill of padding, and buffers shared by worker threads.

use jaxon_ir::{DType, HostArray};

/// A pointer handed to the worker threads of one `pallas_call` run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ptr(pub *mut u8);

// SAFETY: the pointers refer to the operand and output buffers of one run,
// which outlive its scoped worker threads; workers only read inputs and
// write blocks no other worker writes (the grid partition's invariant).
unsafe impl Send for Ptr {}
// SAFETY: as above.
unsafe impl Sync for Ptr {}

/// The bytes of one uninitialised element (NaN, integer minimum, false),
/// as interpret mode pads blocks.
pub(super) fn uninit_bytes(dtype: DType) -> Vec<u8> {
    let one = super::uninit(dtype, 1);
    jaxon_ir::with_storage!(&one, v => {
        let n = std::mem::size_of_val(v.as_slice());
        // SAFETY: `v` holds `n` initialised bytes (plain numeric types).
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), n) }.to_vec()
    })
}

/// Fills `buf` with copies of the element `pattern`.
pub(super) fn fill(buf: &mut [u8], pattern: &[u8]) {
    for c in buf.chunks_exact_mut(pattern.len()) {
        c.copy_from_slice(pattern);
    }
}

/// Fills the box of size `extent` at `dst` (element strides `ds`, unit in
/// the last dimension) with copies of the element `pattern`.
///
/// # Safety
/// Every element of the box lies inside the buffer at `dst`.
pub(super) unsafe fn fill_box(dst: *mut u8, ds: &[usize], extent: &[usize], pattern: &[u8]) {
    let es = pattern.len();
    let nd = extent.len();
    let row = extent.last().copied().unwrap_or(1);
    if extent.contains(&0) {
        return;
    }
    let outer = &extent[..nd.saturating_sub(1)];
    let mut idx = vec![0usize; outer.len()];
    loop {
        let off: usize = idx.iter().zip(ds).map(|(i, s)| i * s).sum();
        // SAFETY: the caller's contract: the row lies inside the buffer.
        let r = unsafe { std::slice::from_raw_parts_mut(dst.add(off * es), row * es) };
        fill(r, pattern);
        if !super::next_index(&mut idx, outer) {
            return;
        }
    }
}

/// Copies the box of size `extent` from `src` (element strides `ss`) to
/// `dst` (strides `ds`); both have unit stride in the last dimension.
///
/// # Safety
/// Every element of the box, at its offset under either set of strides,
/// lies inside the buffer it is read from or written to, and the two
/// boxes do not overlap.
pub(super) unsafe fn copy_box(
    src: *const u8,
    ss: &[usize],
    dst: *mut u8,
    ds: &[usize],
    extent: &[usize],
    es: usize,
) {
    let nd = extent.len();
    if nd == 0 {
        // SAFETY: the caller's contract (one element).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, es) };
        return;
    }
    if extent.contains(&0) {
        return;
    }
    let row = extent[nd - 1] * es;
    let outer = &extent[..nd - 1];
    let mut idx = vec![0usize; nd - 1];
    loop {
        let (mut so, mut dof) = (0, 0);
        for (d, &i) in idx.iter().enumerate() {
            so += i * ss[d];
            dof += i * ds[d];
        }
        // SAFETY: the caller's contract: the row lies inside both buffers.
        unsafe { std::ptr::copy_nonoverlapping(src.add(so * es), dst.add(dof * es), row) };
        if !super::next_index(&mut idx, outer) {
            return;
        }
    }
}

/// A zeroed scratch buffer of at least `bytes` bytes, 8-byte aligned.
pub(super) fn words(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8).max(1)]
}

/// The address of a host array's first element.
pub(super) fn addr(a: &HostArray) -> *mut u8 {
    jaxon_ir::with_storage!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut())
}

/// The address of a mutable host array's first element.
pub(super) fn addr_mut(a: &mut HostArray) -> *mut u8 {
    jaxon_ir::with_storage!(a.data_mut(), v => v.as_mut_ptr().cast::<u8>())
}
