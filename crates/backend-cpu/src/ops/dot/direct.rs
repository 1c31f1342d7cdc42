//! Small and skinny products (the RNN's `32×256 · 256×256` per step) with
//! both operands read in place: the register tiles of `microkernel`
//! broadcast `a`'s values from its rows (`StridedFn`) and load each depth
//! step of `c` straight from its row (`crs` = its row stride), so a call
//! copies neither operand (packing `a`'s rows cost the Pallas matmul's
//! 64-row blocks 15–19% of their time). The last column strip, when `n` is not a multiple of
//! the tile width, is copied into a zero-padded panel, so no load reads
//! past `c`. Tiles (one row panel by one column strip, the whole depth in
//! registers) are handed out to threads in column-major order, so a
//! thread's consecutive tiles share a strip of `c` in L1.
//!
//! Invariant (the `unsafe` below): the product is checked with
//! `Product::fits` before anything runs, and tiles write disjoint
//! rectangles of `dst`, a unique borrow distinct from the operands.

use super::microkernel::{Kernel, Tile};
use super::packed::with_panels;
use super::split::SharedDst;
use super::Product;
use crate::run::sched::share_ranges;

/// Products of at least this many multiply-adds: below it `gemm`'s small
/// kernels (no threads, no packing at all) win.
const MIN_WORK: usize = 1 << 18;
/// At most this many values of `a` per call (256 KiB in f32): larger
/// operands are worth packing (`packed`'s panels stay in L2 where `a`'s
/// rows might not).
const MAX_A: usize = 1 << 16;

/// Whether [`gemm`] should run `p` (a product too small for `packed`).
pub(super) fn wanted<T: Tile>(p: &Product<'_, T>) -> bool {
    Kernel::<T>::choose().is_some_and(|kernel| {
        let work = p.m.saturating_mul(p.k).saturating_mul(p.n);
        p.c.cs == 1
            && !switched_off()
            && p.k > 0
            && p.n >= kernel.nr
            && work >= MIN_WORK
            && p.m.saturating_mul(p.k) <= MAX_A
    })
}

/// Off unless `JAXON_CPU_DIRECT_GEMM=1`: on Zen 4 it lost to `gemm`'s
/// small kernels on the Pallas matmul's 64×256·256×64 blocks (0.194 ms
/// against 0.168–0.174 per call) and tied on the RNN (alternating runs),
/// so it stays opt-in, tested, until a machine shows it ahead.
fn switched_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os("JAXON_CPU_DIRECT_GEMM").is_none_or(|v| v != "1"))
}

/// Runs `p` into `dst` on up to `threads` threads. Needs [`wanted`] to
/// have said yes.
pub(super) fn gemm<T: Tile>(p: Product<'_, T>, dst: &mut [T], threads: usize) {
    let kernel = Kernel::<T>::choose().expect("`wanted` found a register tile");
    gemm_with(kernel, p, dst, threads);
}

/// [`gemm`] with the given kernel (tests run every kernel the CPU has).
fn gemm_with<T: Tile>(kernel: Kernel<T>, p: Product<'_, T>, dst: &mut [T], threads: usize) {
    assert!(p.fits(dst) && p.c.cs == 1 && p.k > 0);
    let Product {
        m,
        k,
        n,
        a,
        c,
        drs,
        acc,
        epi,
    } = p;
    let (mr, nr) = (kernel.mr, kernel.nr);
    // The last, partial column strip of `c`, zero-padded to `nr`, in the
    // calling thread's panel cache; `a` is read in place.
    let panels = m.div_ceil(mr);
    let whole = n / nr;
    let tail = n - whole * nr;
    let strip_len = if tail > 0 { k * nr } else { 0 };
    with_panels(0, strip_len, |_: &mut [T], strip: &mut [T]| {
        let strip = &mut strip[..strip_len];
        for (p, step) in strip.chunks_exact_mut(nr).enumerate() {
            step[..tail].copy_from_slice(&c.data[p * c.rs + whole * nr..][..tail]);
            step[tail..].fill(T::default());
        }
        let strips = n.div_ceil(nr);
        let out = SharedDst(dst.as_mut_ptr());
        let tile = |t: usize| {
            let (s, g) = (t / panels, t % panels);
            let (row, col) = (g * mr, s * nr);
            let (cv, crs) = if s < whole {
                (&c.data[col..], c.rs)
            } else {
                (&strip[..], nr)
            };
            // SAFETY: the module invariant: entries `(row + r, col + t)`
            // of `dst` for `r < min(mr, m - row)`, `t < min(nr, n - col)`
            // lie inside the checked product and belong to this tile
            // alone; `a` from row `row` holds its rows' `k` values
            // (`covers`), and `cv` `(k - 1)·crs + nr` (a whole strip of
            // `c`, checked by `covers`, or the padded tail); a bias holds
            // `n` values (`fits`), `n - col` of them from this column.
            unsafe {
                kernel.run_strided(
                    k,
                    (&a.data[row * a.rs..], a.rs, a.cs),
                    cv,
                    crs,
                    out.at(row * drs + col),
                    drs,
                    !acc,
                    mr.min(m - row),
                    nr.min(n - col),
                    epi.at_col(col),
                )
            }
        };
        share_ranges(panels * strips, 1, threads, |lo, hi| {
            (lo..hi).for_each(tile)
        });
    });
}

#[cfg(test)]
mod tests {
    use super::super::test_values as values;
    use super::super::{Epi, View};
    use super::*;
    use crate::isa::Isa;

    /// `(m, k, n)`, `a` transposed, extra row stride of `c` and of `dst`,
    /// accumulate.
    type Case = (usize, usize, usize, bool, usize, usize, bool);

    const CASES: [Case; 6] = [
        (32, 256, 256, false, 0, 0, false),
        (32, 128, 256, true, 0, 0, true),
        (13, 300, 70, false, 3, 2, false),
        (1, 1000, 300, false, 0, 0, true),
        (50, 33, 47, true, 5, 0, false),
        (25, 2, 1000, false, 0, 7, true),
    ];

    fn check<T: Tile + Into<f64>>(from: fn(f64) -> T, eps: f64) {
        for level in [Isa::Avx2, Isa::Avx512] {
            let Some(kernel) = Kernel::<T>::at(level) else {
                eprintln!("skipped: this CPU lacks {level}");
                continue;
            };
            for (m, k, n, ta, cpad, dpad, acc) in CASES {
                let crs = n + cpad;
                let av: Vec<T> = values(m * k, 4).into_iter().map(from).collect();
                let cv: Vec<T> = values(k * crs, 5).into_iter().map(from).collect();
                let (ars, acs) = if ta { (1, m) } else { (k, 1) };
                let a = View {
                    data: &av,
                    rs: ars,
                    cs: acs,
                };
                let c = View {
                    data: &cv,
                    rs: crs,
                    cs: 1,
                };
                let drs = n + dpad;
                let start: Vec<T> = values(m * drs, 6).into_iter().map(from).collect();
                for threads in [1, 2] {
                    let mut dst = start.clone();
                    let p = Product {
                        m,
                        k,
                        n,
                        a,
                        c,
                        drs,
                        acc,
                        epi: Epi::NONE,
                    };
                    gemm_with(kernel, p, &mut dst, threads);
                    for i in 0..m {
                        for j in 0..drs {
                            let got: f64 = dst[i * drs + j].into();
                            let before: f64 = start[i * drs + j].into();
                            if j >= n {
                                assert_eq!(got, before, "{level}: padding ({i},{j}) written");
                                continue;
                            }
                            let mut want = if acc { before } else { 0.0 };
                            for p in 0..k {
                                let x: f64 = av[i * ars + p * acs].into();
                                let y: f64 = cv[p * crs + j].into();
                                want += x * y;
                            }
                            assert!(
                                (got - want).abs() <= eps * (k as f64 + 1.0),
                                "{level}: ({m},{k},{n}) ta={ta} acc={acc} threads={threads}: ({i},{j}) = {got}, want {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn direct_products_match_f64_loops() {
        check::<f32>(|x| x as f32, 2e-7);
        check::<f64>(|x| x, 4e-16);
    }
}
