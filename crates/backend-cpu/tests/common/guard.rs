//! A test-only global allocator with guard pages (Linux). While a thread
//! has guarding switched on ([`guarded`]), each of its allocations gets
//! fresh pages in a reserved region, placed so that the byte after the
//! allocation is the first byte of an inaccessible page; freed pages are
//! released and made inaccessible, never reused. An out-of-bounds read or
//! write past an array's end, or a use after free, then faults instead of
//! silently reading a neighbour. Other allocations go to the system
//! allocator.
//!
//! `unsafe` here is the allocator contract and the `mmap`/`mprotect`/
//! `madvise` calls on the reserved region; every range passed to them lies
//! inside the region and is page-aligned.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64)
        -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> i32;
    fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
    fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
}

const PROT_NONE: i32 = 0;
const PROT_RW: i32 = 1 | 2;
const MAP_PRIVATE: i32 = 0x02;
const MAP_ANONYMOUS: i32 = 0x20;
const MAP_NORESERVE: i32 = 0x4000;
const MADV_DONTNEED: i32 = 4;
/// The page size assumed (x86-64 and most aarch64 Linux kernels).
pub const PAGE: usize = 4096;
/// Address space reserved for guarded allocations (never touched unless used).
const REGION: usize = 1 << 38;

static BASE: AtomicUsize = AtomicUsize::new(0);
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
}

/// The guard-page allocator.
pub struct GuardAlloc;

fn region() -> usize {
    let b = BASE.load(Ordering::Acquire);
    if b != 0 {
        return b;
    }
    // SAFETY: an anonymous PROT_NONE reservation; no memory is accessed.
    let p = unsafe {
        mmap(
            std::ptr::null_mut(),
            REGION,
            PROT_NONE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p as isize == -1 {
        return 0;
    }
    match BASE.compare_exchange(0, p as usize, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => p as usize,
        Err(other) => {
            // SAFETY: `p` is the reservation made above, unused.
            unsafe { munmap(p, REGION) };
            other
        }
    }
}

fn in_region(a: usize) -> bool {
    let b = BASE.load(Ordering::Acquire);
    b != 0 && a >= b && a < b + REGION
}

// SAFETY: returns either System's memory or `size` writable bytes aligned
// to `align`, inside pages nobody else uses until `dealloc`.
unsafe impl GlobalAlloc for GuardAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let on = ON.try_with(|c| c.get()).unwrap_or(false);
        if !on || l.align() > PAGE {
            return unsafe { System.alloc(l) };
        }
        let base = region();
        let size = l.size().max(1);
        let pages = size.div_ceil(PAGE);
        let span = (pages + 1) * PAGE;
        let off = NEXT.fetch_add(span, Ordering::Relaxed);
        if base == 0 || off + span > REGION {
            return unsafe { System.alloc(l) };
        }
        let start = base + off;
        // SAFETY: `start..start + pages * PAGE` is page-aligned, inside the
        // region and owned by this allocation alone.
        if unsafe { mprotect(start as *mut c_void, pages * PAGE, PROT_RW) } != 0 {
            // Out of mappings (each guarded allocation is one; a panic's
            // backtrace makes thousands): unguarded, so that a failing
            // test reports its message instead of aborting.
            return unsafe { System.alloc(l) };
        }
        let end = start + pages * PAGE;
        ((end - size) & !(l.align() - 1)) as *mut u8
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let a = p as usize;
        if !in_region(a) {
            return unsafe { System.dealloc(p, l) };
        }
        let start = a & !(PAGE - 1);
        let end = (a + l.size().max(1)).next_multiple_of(PAGE);
        // SAFETY: the pages of this allocation; they are never handed out
        // again, so making them inaccessible turns a use after free into a
        // fault.
        unsafe {
            madvise(start as *mut c_void, end - start, MADV_DONTNEED);
            mprotect(start as *mut c_void, end - start, PROT_NONE);
        }
    }
}

/// Runs `f` with this thread's allocations guarded.
pub fn guarded<R>(f: impl FnOnce() -> R) -> R {
    ON.with(|c| c.set(true));
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            ON.with(|c| c.set(false));
        }
    }
    let _off = Off;
    f()
}

/// Whether `p` came from the guarded region.
pub fn is_guarded(p: *const u8) -> bool {
    in_region(p as usize)
}
