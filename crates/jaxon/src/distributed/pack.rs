//! Float leaves packed into one buffer per width for a reduction: every
//! leaf computed in f32 (f32, f16, bf16, and c64 as interleaved parts)
//! in one `f32` buffer, every f64 and c128 leaf in one `f64` buffer, in
//! leaf order.
//!
//! The reduced values go back into the leaves' own storage (pages already
//! touched: fresh vectors cost a page fault per 4 KiB, about as much as
//! the sum itself on a VM).
//!
//! Invariant: `count`, `pack` and `unpack` agree leaf by leaf, so a buffer
//! packed from `leaves` on one process unpacks with the same `leaves` on
//! any process whose plan has the same signature.

use jaxon_ir::{HostArray, Storage};
use num_complex::{Complex32, Complex64};

/// The packed buffer a float leaf goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Width {
    /// The `f32` buffer.
    Narrow,
    /// The `f64` buffer.
    Wide,
}

/// The buffer a leaf of this storage goes to and how many values each of
/// its elements takes there (2 for complex); `None` for the dtypes that do
/// not travel packed.
fn width(data: &Storage) -> Option<(Width, usize)> {
    match data {
        Storage::F32(_) | Storage::F16(_) | Storage::BF16(_) => Some((Width::Narrow, 1)),
        Storage::C64(_) => Some((Width::Narrow, 2)),
        Storage::F64(_) => Some((Width::Wide, 1)),
        Storage::C128(_) => Some((Width::Wide, 2)),
        Storage::Bool(_)
        | Storage::I8(_)
        | Storage::I16(_)
        | Storage::I32(_)
        | Storage::I64(_)
        | Storage::U8(_)
        | Storage::U16(_)
        | Storage::U32(_)
        | Storage::U64(_)
        | Storage::Key(_) => None,
    }
}

/// A packing width: `f32` or `f64`.
pub(super) trait Packed: super::shm::Summable + Default {
    /// The leaves this type packs.
    const WIDTH: Width;

    /// Elements `l` takes in a buffer of this width (0: none).
    fn count(l: &HostArray) -> usize {
        match width(l.data()) {
            Some((w, parts)) if w == Self::WIDTH => parts * l.len(),
            Some(_) | None => 0,
        }
    }
    /// Writes `l`'s [`Packed::count`] elements into `into`.
    fn pack(l: &HostArray, into: &mut [Self]);
    /// `l`'s elements replaced, in place, by its packed (reduced)
    /// elements `part`, each divided by `mean_of` when given.
    fn unpack(l: &mut HostArray, part: &[Self], mean_of: Option<usize>);
}

impl Packed for f32 {
    const WIDTH: Width = Width::Narrow;

    fn pack(l: &HostArray, into: &mut [f32]) {
        match l.data() {
            Storage::F32(v) => into.copy_from_slice(v),
            Storage::C64(v) => {
                for (p, z) in into.chunks_exact_mut(2).zip(v) {
                    p[0] = z.re;
                    p[1] = z.im;
                }
            }
            // Halves are exact in f32.
            _ => {
                for (o, x) in into.iter_mut().zip(l.to_f64_vec()) {
                    *o = x as f32;
                }
            }
        }
    }

    fn unpack(l: &mut HostArray, part: &[f32], mean_of: Option<usize>) {
        let scale = |x: f32| mean_of.map_or(x, |n| x / n as f32);
        let dtype = l.dtype();
        match l.data_mut() {
            Storage::F32(v) => {
                for (o, x) in v.iter_mut().zip(part) {
                    *o = scale(*x);
                }
            }
            Storage::C64(v) => {
                for (o, p) in v.iter_mut().zip(part.chunks_exact(2)) {
                    *o = Complex32::new(scale(p[0]), scale(p[1]));
                }
            }
            data => {
                let w: Vec<f64> = part.iter().map(|x| f64::from(scale(*x))).collect();
                *data = Storage::from_f64(dtype, &w);
            }
        }
    }
}

impl Packed for f64 {
    const WIDTH: Width = Width::Wide;

    fn pack(l: &HostArray, into: &mut [f64]) {
        match l.data() {
            Storage::F64(v) => into.copy_from_slice(v),
            Storage::C128(v) => {
                for (p, z) in into.chunks_exact_mut(2).zip(v) {
                    p[0] = z.re;
                    p[1] = z.im;
                }
            }
            _ => {}
        }
    }

    fn unpack(l: &mut HostArray, part: &[f64], mean_of: Option<usize>) {
        let scale = |x: f64| mean_of.map_or(x, |n| x / n as f64);
        match l.data_mut() {
            Storage::F64(v) => {
                for (o, x) in v.iter_mut().zip(part) {
                    *o = scale(*x);
                }
            }
            Storage::C128(v) => {
                for (o, p) in v.iter_mut().zip(part.chunks_exact(2)) {
                    *o = Complex64::new(scale(p[0]), scale(p[1]));
                }
            }
            _ => {}
        }
    }
}

/// Packs every leaf of width `T` into `buf` (of their total count).
pub(super) fn pack_all<T: Packed>(leaves: &[HostArray], buf: &mut [T]) {
    let mut at = 0;
    for l in leaves {
        let c = T::count(l);
        if c > 0 {
            T::pack(l, &mut buf[at..at + c]);
            at += c;
        }
    }
}

/// The reduced leaves of width `T` from `sum`, in place, divided by
/// `mean_of` when given (`pmean` is `psum(x) / n` in the leaf's dtype, f32
/// for the half types).
pub(super) fn unpack_all<T: Packed>(leaves: &mut [HostArray], sum: &[T], mean_of: Option<usize>) {
    let mut at = 0;
    for l in leaves {
        let c = T::count(l);
        if c > 0 {
            T::unpack(l, &sum[at..at + c], mean_of);
            at += c;
        }
    }
}
