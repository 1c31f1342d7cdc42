//! Running a `pallas_call`'s grid: serially on the calling thread, or its
//! parallel groups of grid points on rayon's pool (the calling thread
//! taking the first chunk), each worker with its reused buffers.

use super::blocks::{fill, uninit_bytes, words, Ptr};
use super::{err, Frame, PallasOp};
use jaxon_ir::IrError;
use std::sync::Mutex;

impl PallasOp {
    /// Runs every grid point on the operands and outputs at `bases`.
    ///
    /// # Safety
    /// `bases` point at live arrays of the compiled types (inputs, then
    /// outputs); nothing else reads or writes the outputs or writes the
    /// inputs during the call.
    pub(super) unsafe fn run_grid(&self, bases: &[Ptr], threads: usize) -> Result<(), IrError> {
        let total = self.points.len();
        // Spawning threads costs tens of microseconds: small grids run on
        // the calling thread.
        let work: usize = total
            * self
                .geoms
                .iter()
                .map(|g| g.block.iter().product::<usize>())
                .sum::<usize>();
        let workers = if work >= crate::run::sched::PARALLEL_MIN_WORK {
            threads.min(self.groups.len()).max(1)
        } else {
            1
        };
        if workers <= 1 {
            let mut f = Frame {
                bases,
                scratch: self
                    .scratch
                    .iter()
                    .map(|(dt, s)| {
                        let mut b = words(dt.size_bytes() * s.iter().product::<usize>());
                        // SAFETY: `b` holds at least this many bytes.
                        let bytes = unsafe {
                            std::slice::from_raw_parts_mut(
                                b.as_mut_ptr().cast::<u8>(),
                                dt.size_bytes() * s.iter().product::<usize>(),
                            )
                        };
                        fill(bytes, &uninit_bytes(*dt));
                        b
                    })
                    .collect(),
                threads,
            };
            let mut w = self.worker();
            let mut res = Ok(());
            for p in 0..total {
                // SAFETY: `bases` are the live operands, checked above; one
                // thread runs the points.
                res = unsafe { self.run_point(&mut w, p, &mut f) };
                if res.is_err() {
                    break;
                }
            }
            self.give_back(w);
            res?;
        } else {
            let chunk = self.groups.len().div_ceil(workers);
            let run_chunk = move |gs: &[Vec<usize>]| {
                let mut f = Frame {
                    bases,
                    scratch: Vec::new(),
                    threads: 1,
                };
                let mut w = self.worker();
                let mut res = Ok(());
                'all: for g in gs {
                    for &p in g {
                        // SAFETY: groups write disjoint output blocks
                        // (`partition`) and read only inputs and their own
                        // output blocks.
                        res = unsafe { self.run_point(&mut w, p, &mut f) };
                        if res.is_err() {
                            break 'all;
                        }
                    }
                }
                self.give_back(w);
                res
            };
            // The calling thread runs the first chunk, rayon's pool the
            // others: its threads live on (no spawn per call, and `gemm`'s
            // per-thread packing buffers are reused).
            let failed: Mutex<Option<IrError>> = Mutex::new(None);
            let fail = |e: IrError| {
                if let Ok(mut f) = failed.lock() {
                    f.get_or_insert(e);
                }
            };
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rayon::in_place_scope(|s| {
                    let mut chunks = self.groups.chunks(chunk);
                    let first = chunks.next().unwrap_or(&[]);
                    for gs in chunks {
                        let fail = &fail;
                        s.spawn(move |_| {
                            if let Err(e) = run_chunk(gs) {
                                fail(e);
                            }
                        });
                    }
                    if let Err(e) = run_chunk(first) {
                        fail(e);
                    }
                })
            }));
            if panicked.is_err() {
                return Err(err("a program panicked"));
            }
            if let Some(e) = failed.into_inner().ok().flatten() {
                return Err(e);
            }
        }
        Ok(())
    }
}
