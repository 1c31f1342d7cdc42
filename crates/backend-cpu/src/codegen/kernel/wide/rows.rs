//! The row reductions' algorithm, once for every width: generic over
//! [`Rows`] (where the accumulators live) and [`Fold`] (sum, max or min),
//! instantiated as `extern "C"` routines in `routines.rs`.
//!
//! A row folds into an accumulator state laid out as the inline code
//! holds it (see `tile.rs`): [`chunk`] elements at a time into the 64
//! bytes of accumulators, then [`Elem::NW`] at a time into the first
//! 16 bytes, then one at a time into the scalar after them. That is the
//! inline code's order, so sums round identically at every width. Max and
//! min also keep per-lane NaN flags (the lane operation alone would drop
//! a NaN), set in the state when it is stored.
//!
//! Invariant: a routine touches the `n` elements of each row and its
//! state, nothing else. Everything here is `#[inline(always)]` and runs
//! only inside a routine compiled with its width's target features.

use super::tile::{chunk, Elem, Rows};
use super::{ROW_BLOCK, STATE_BYTES};

/// One of the reductions the row routines run.
pub(super) trait Fold {
    /// Whether a NaN anywhere makes the lane NaN (max and min; a sum
    /// keeps NaN by arithmetic).
    const STICKY: bool;
    fn wide<R: Rows>(r: &mut R, a: R::Acc, x: R::Acc) -> R::Acc;
    /// # Safety
    /// The CPU has SSE4.1.
    unsafe fn half<E: Elem>(a: E::H, x: E::H) -> E::H;
    fn scalar<E: Elem>(a: E, x: E) -> E;
}

/// `reduce_sum`.
pub(super) struct Sum;
/// `reduce_max`.
pub(super) struct Max;
/// `reduce_min`.
pub(super) struct Min;

impl Fold for Sum {
    const STICKY: bool = false;
    #[inline(always)]
    fn wide<R: Rows>(r: &mut R, a: R::Acc, x: R::Acc) -> R::Acc {
        r.acc_add(a, x)
    }
    #[inline(always)]
    unsafe fn half<E: Elem>(a: E::H, x: E::H) -> E::H {
        // SAFETY: the caller's contract.
        unsafe { E::h_add(a, x) }
    }
    #[inline(always)]
    fn scalar<E: Elem>(a: E, x: E) -> E {
        E::s_add(a, x)
    }
}

impl Fold for Max {
    const STICKY: bool = true;
    #[inline(always)]
    fn wide<R: Rows>(r: &mut R, a: R::Acc, x: R::Acc) -> R::Acc {
        r.acc_max(a, x)
    }
    #[inline(always)]
    unsafe fn half<E: Elem>(a: E::H, x: E::H) -> E::H {
        // SAFETY: the caller's contract.
        unsafe { E::h_max(a, x) }
    }
    #[inline(always)]
    fn scalar<E: Elem>(a: E, x: E) -> E {
        E::s_max(a, x)
    }
}

impl Fold for Min {
    const STICKY: bool = true;
    #[inline(always)]
    fn wide<R: Rows>(r: &mut R, a: R::Acc, x: R::Acc) -> R::Acc {
        r.acc_min(a, x)
    }
    #[inline(always)]
    unsafe fn half<E: Elem>(a: E::H, x: E::H) -> E::H {
        // SAFETY: the caller's contract.
        unsafe { E::h_min(a, x) }
    }
    #[inline(always)]
    fn scalar<E: Elem>(a: E, x: E) -> E {
        E::s_min(a, x)
    }
}

/// A row's running state: the accumulators and their NaN flags.
struct State<R: Rows> {
    a: R::Acc,
    nan: R::Nan,
}

impl<R: Rows> Clone for State<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: Rows> Copy for State<R> {}

/// # Safety
/// `acc` is valid for a state; the CPU has `R`'s instructions.
#[inline(always)]
unsafe fn load_state<R: Rows>(r: &mut R, acc: *const R::E) -> State<R> {
    // SAFETY: the caller's contract.
    let a = unsafe { r.load_acc(acc) };
    let nan = r.is_nan(a);
    State { a, nan }
}

/// Folds the [`chunk`] elements at `src` into `s`.
///
/// # Safety
/// `src` is valid for [`chunk`] elements; the CPU has `R`'s instructions.
#[inline(always)]
unsafe fn step<R: Rows, O: Fold>(r: &mut R, s: &mut State<R>, src: *const R::E) {
    // SAFETY: the caller's contract.
    let x = unsafe { r.load_acc(src) };
    if O::STICKY {
        let m = r.is_nan(x);
        s.nan = r.nan_or(s.nan, m);
    }
    s.a = O::wide(r, s.a, x);
}

/// Folds elements `i..n` of the row at `src` (fewer than [`chunk`]) and
/// stores the state to `acc`.
///
/// # Safety
/// `src` is valid for `n` elements and `acc` for a state; the CPU has
/// `R`'s instructions (SSE4.1 among them).
#[inline(always)]
unsafe fn finish<R: Rows, O: Fold>(
    r: &mut R,
    s: State<R>,
    src: *const R::E,
    mut i: usize,
    n: usize,
    acc: *mut R::E,
) {
    let nw = <R::E as Elem>::NW;
    let mut a = s.a;
    if O::STICKY {
        a = r.fill_nan(a, s.nan);
    }
    // SAFETY: every access is below `n` in `src` and inside the state at
    // `acc` (the caller's contract); the CPU has SSE4.1.
    unsafe {
        let mut lo = r.low(a);
        let mut nlo = <R::E as Elem>::h_nan(lo);
        while i + nw <= n {
            let x = <R::E as Elem>::load_h(src.add(i));
            if O::STICKY {
                nlo = <R::E as Elem>::h_or(nlo, <R::E as Elem>::h_nan(x));
            }
            lo = O::half::<R::E>(lo, x);
            i += nw;
        }
        if O::STICKY {
            lo = <R::E as Elem>::h_fill_nan(lo, nlo);
        }
        a = r.with_low(a, lo);
        r.store_acc(acc, a);
        let tail = acc.add(chunk::<R::E>());
        let mut v = *tail;
        while i < n {
            v = O::scalar(v, *src.add(i));
            i += 1;
        }
        *tail = v;
    }
}

/// Folds the `n` elements at `src` into the state at `acc`.
///
/// # Safety
/// `src` is valid for `n` elements and `acc` for a state; the CPU has
/// `R`'s instructions.
#[inline(always)]
pub(super) unsafe fn one<R: Rows, O: Fold>(r: &mut R, src: *const R::E, n: usize, acc: *mut R::E) {
    let c = chunk::<R::E>();
    // SAFETY: every access is below `n` in `src` and inside the state
    // (the caller's contract).
    unsafe {
        let mut s = load_state(r, acc);
        let mut i = 0;
        while i + c <= n {
            step::<R, O>(r, &mut s, src.add(i));
            i += c;
        }
        finish::<R, O>(r, s, src, i, n, acc);
    }
}

/// Folds [`ROW_BLOCK`] rows `stride` elements apart, `n` elements each,
/// into the states [`STATE_BYTES`] apart at `acc`, in lockstep, each row
/// in [`one`]'s order (so with its bits): streams from several rows keep
/// more of a core's memory requests in flight than one row does.
///
/// # Safety
/// Rows `q < ROW_BLOCK` at `src + q·stride` are valid for `n` elements
/// each, the states at `acc + q·STATE_BYTES` bytes; the CPU has `R`'s
/// instructions.
#[inline(always)]
pub(super) unsafe fn block<R: Rows, O: Fold>(
    r: &mut R,
    src: *const R::E,
    n: usize,
    acc: *mut R::E,
    stride: isize,
) {
    let c = chunk::<R::E>();
    let row = |q: usize| src.wrapping_offset(q as isize * stride);
    let state = |q: usize| acc.wrapping_byte_add(q * STATE_BYTES);
    // SAFETY: every access is below `n` in a row and inside a state (the
    // caller's contract).
    unsafe {
        let first = load_state(r, state(0));
        let mut s = [first; ROW_BLOCK];
        for (q, s) in s.iter_mut().enumerate().skip(1) {
            *s = load_state(r, state(q));
        }
        let mut i = 0;
        while i + c <= n {
            for (q, s) in s.iter_mut().enumerate() {
                step::<R, O>(r, s, row(q).add(i));
            }
            i += c;
        }
        for (q, s) in s.into_iter().enumerate() {
            finish::<R, O>(r, s, row(q), i, n, state(q));
        }
    }
}
