//! The packing and rounding of `bf16`'s half-precision GEMM: operands'
//! bits into depth-major panels (`Pairs`: a `u32` per lane and depth pair,
//! even depth low; `Widen`: f32 values), and the f32 result rounded to
//! bf16 or f16, to nearest even.
//!
//! Invariant: panels are zero past the operand's lanes and depth, so the
//! register tiles may run whole panels; no `unsafe` here.

use super::bf16::{Format, Half};
use super::bf16_tile::{widen_bf16, widen_f16};
use super::View;
use crate::run::sched::share_ranges;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use std::sync::{Mutex, PoisonError};

/// Packs lanes `first..first + count` of `v` (its rows; its columns are
/// the depth), depth values `d0..d1`, into depth-major panels of `w` lanes
/// and `kc` steps each, zero-padding lanes past `count` and steps past
/// `d1`, in `format`'s encoding.
#[allow(clippy::too_many_arguments)]
pub(super) fn pack_panels(
    format: Format,
    out: &mut [u32],
    v: View<'_, u16>,
    first: usize,
    count: usize,
    d0: usize,
    d1: usize,
    kc: usize,
    w: usize,
) {
    let mut row = vec![0f32; kc.max(w)];
    for (g, panel) in out.chunks_exact_mut(w * kc).enumerate() {
        let l0 = first + g * w;
        let h = w.min(count.saturating_sub(g * w));
        match format {
            Format::Pairs => pack_pairs(panel, v, l0, h, d0, d1, w),
            Format::Widen(_, half) if v.cs == 1 => {
                // Each lane's depth run is contiguous: widen it once,
                // scatter it by `w`.
                panel.fill(0);
                for r in 0..h {
                    let src = &v.data[(l0 + r) * v.rs + d0..][..d1 - d0];
                    widen(half, src, &mut row[..d1 - d0]);
                    for (p, x) in row[..d1 - d0].iter().enumerate() {
                        panel[p * w + r] = x.to_bits();
                    }
                }
            }
            Format::Widen(_, half) if v.rs == 1 => {
                // One depth step's lanes are contiguous.
                panel.fill(0);
                for p in 0..d1 - d0 {
                    let src = &v.data[l0 + (d0 + p) * v.cs..][..h];
                    widen(half, src, &mut row[..h]);
                    for (o, x) in panel[p * w..][..h].iter_mut().zip(&row[..h]) {
                        *o = x.to_bits();
                    }
                }
            }
            Format::Widen(_, half) => {
                panel.fill(0);
                for p in 0..d1 - d0 {
                    for r in 0..h {
                        let x = v.data[(l0 + r) * v.rs + (d0 + p) * v.cs];
                        widen(half, &[x], &mut row[..1]);
                        panel[p * w + r] = row[0].to_bits();
                    }
                }
            }
        }
    }
}

/// Widens half-precision bits of `half` to f32.
fn widen(half: Half, src: &[u16], dst: &mut [f32]) {
    match half {
        Half::Bf16 => widen_bf16(src, dst),
        Half::F16 => widen_f16(src, dst),
    }
}

/// Packs one panel of depth pairs: lane `r < h` of step `s` is
/// `v[l0 + r, d0 + 2s] | v[l0 + r, d0 + 2s + 1] << 16` (zero at or past
/// `d1`); lanes from `h` on are zero.
fn pack_pairs(
    panel: &mut [u32],
    v: View<'_, u16>,
    l0: usize,
    h: usize,
    d0: usize,
    d1: usize,
    w: usize,
) {
    panel.fill(0);
    let (whole, odd) = ((d1 - d0) / 2, (d1 - d0) % 2 == 1);
    if v.cs == 1 {
        // A lane's depth run is contiguous: read it as pairs.
        for r in 0..h {
            let src = &v.data[(l0 + r) * v.rs + d0..][..d1 - d0];
            for (s, p) in src.chunks_exact(2).enumerate() {
                panel[s * w + r] = u32::from(p[0]) | u32::from(p[1]) << 16;
            }
            if odd {
                panel[whole * w + r] = u32::from(src[d1 - d0 - 1]);
            }
        }
    } else if v.rs == 1 {
        // Two depth steps' lanes are two contiguous runs: interleave.
        for s in 0..whole {
            let lo = &v.data[l0 + (d0 + 2 * s) * v.cs..][..h];
            let hi = &v.data[l0 + (d0 + 2 * s + 1) * v.cs..][..h];
            for ((o, &x), &y) in panel[s * w..][..h].iter_mut().zip(lo).zip(hi) {
                *o = u32::from(x) | u32::from(y) << 16;
            }
        }
        if odd {
            let lo = &v.data[l0 + (d1 - 1) * v.cs..][..h];
            for (o, &x) in panel[whole * w..][..h].iter_mut().zip(lo) {
                *o = u32::from(x);
            }
        }
    } else {
        for r in 0..h {
            let at = |d: usize| {
                if d < d1 {
                    u32::from(v.data[(l0 + r) * v.rs + d * v.cs])
                } else {
                    0
                }
            };
            for s in 0..(d1 - d0).div_ceil(2) {
                panel[s * w + r] = at(d0 + 2 * s) | at(d0 + 2 * s + 1) << 16;
            }
        }
    }
}

/// A piece of the f32 result and of the rounded one.
type Piece<'a> = (&'a [f32], &'a mut [u16]);

/// Rounds `src` to nearest even into `dst` (half-precision bits of
/// `half`), in parallel pieces. bf16: a branch-free form of `half`'s
/// rounding (NaN stays NaN, quieted), which the compiler vectorises; f16:
/// `half`'s, F16C where the CPU has it.
pub(super) fn narrow(src: &[f32], dst: &mut [u16], half: Half, threads: usize) {
    const PIECE: usize = 1 << 16;
    let pieces: Vec<Mutex<Option<Piece<'_>>>> = src
        .chunks(PIECE)
        .zip(dst.chunks_mut(PIECE))
        .map(|p| Mutex::new(Some(p)))
        .collect();
    let run = |(s, d): Piece<'_>| match half {
        Half::Bf16 => {
            for (o, &x) in d.iter_mut().zip(s) {
                *o = round_bf16(x);
            }
        }
        Half::F16 => {
            let h: &mut [half::f16] = d.reinterpret_cast_mut();
            h.convert_from_f32_slice(s);
        }
    };
    share_ranges(pieces.len(), 1, threads, |lo, hi| {
        for slot in &pieces[lo..hi] {
            let piece = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            piece.map(run);
        }
    });
}

/// `x` rounded to the nearest bf16, ties to even (`half::bf16::from_f32`'s
/// result, without its branch).
#[inline(always)]
fn round_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16;
    let nan = (b >> 16) | 0x40;
    (if x.is_nan() { nan } else { rounded }) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free rounding is `half`'s, bit for bit: ties, the
    /// largest finite values (rounding to infinity), denormals, NaNs.
    #[test]
    fn bf16_rounding_is_halfs() {
        let specials = [
            0x7f7f_8000u32,
            0x7f7f_ffff,
            0x0000_8000,
            0x0001_8000,
            0x7fc0_0001,
            0xff80_0001,
            0x8000_0000,
        ];
        for b in (0..=u32::MAX).step_by(65_521).chain(specials) {
            let x = f32::from_bits(b);
            assert_eq!(round_bf16(x), half::bf16::from_f32(x).to_bits(), "{b:#x}");
        }
    }
}
