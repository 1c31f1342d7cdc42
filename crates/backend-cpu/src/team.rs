//! A team of helper threads that stay awake between parallel regions.
//!
//! Why not rayon alone: its idle workers go to sleep within microseconds,
//! and on this machine's virtual CPUs waking one takes 50–600 µs (median
//! about 110 µs), more than a tile of a GEMM. A matmul call opens two
//! regions (packing, then tiles) and a program often runs several
//! threaded kernels back to back, so each paid that wake-up. The team's
//! helpers spin for [`SPIN`] after a job before they sleep, so the next
//! region finds them running.
//!
//! Invariants (the `unsafe` below): a job is a closure borrowed from the
//! caller of [`run`], which neither returns nor unwinds before every
//! helper it handed the job to has finished with it (`remaining` is back
//! to zero), and clears the job from the slot before it returns. One job
//! runs at a time (`busy`); a call that finds the team busy, or comes
//! from inside a job, is refused and runs elsewhere.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// How long an idle helper spins before it sleeps: longer than the gaps
/// between a program's parallel regions, short enough that an idle
/// program stops using the CPU at once.
const SPIN: Duration = Duration::from_micros(300);

/// For how much of [`SPIN`] a helper only pauses; after that it also
/// yields its CPU on every check.
const PAUSE: Duration = Duration::from_micros(20);

/// A job: the caller's closure, its lifetime erased (module invariant).
#[derive(Clone, Copy)]
struct Job(*const (dyn Fn() + Sync + 'static));

// SAFETY: the closure is `Sync`, so calling it from another thread is
// sound; the pointer is only followed while its caller waits (module
// invariant).
unsafe impl Send for Job {}

/// What the helpers read when a new generation is announced.
struct Slot {
    generation: u64,
    job: Option<Job>,
    /// Helpers with an index below this take part.
    wanted: usize,
    /// Helpers waiting on `wake`.
    sleepers: usize,
}

struct Team {
    /// Helper threads started.
    helpers: AtomicUsize,
    busy: Mutex<()>,
    slot: Mutex<Slot>,
    wake: Condvar,
    /// `slot.generation`, readable without the lock while spinning.
    generation: AtomicU64,
    /// Helpers still running the current job.
    remaining: AtomicUsize,
    panicked: AtomicBool,
}

thread_local! {
    /// Set on helpers, and on a caller while it runs its own share of a
    /// job: a nested call is refused rather than deadlock.
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

/// The process's team, its helpers started on first use: one per CPU
/// besides the caller's.
fn team() -> &'static Team {
    static TEAM: OnceLock<&'static Team> = OnceLock::new();
    TEAM.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let team: &'static Team = Box::leak(Box::new(Team {
            helpers: AtomicUsize::new(0),
            busy: Mutex::new(()),
            slot: Mutex::new(Slot {
                generation: 0,
                job: None,
                wanted: 0,
                sleepers: 0,
            }),
            wake: Condvar::new(),
            generation: AtomicU64::new(0),
            remaining: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
        }));
        let started = (1..cpus)
            .take_while(|&index| {
                std::thread::Builder::new()
                    .name(format!("jaxon-team-{index}"))
                    .spawn(move || helper(team, index - 1))
                    .is_ok()
            })
            .count();
        team.helpers.store(started, Ordering::Relaxed);
        team
    })
}

/// Runs `f` on the calling thread and on up to `threads - 1` helpers at
/// once, returning when every one has finished. Returns `false`, having
/// run nothing, when the team is busy with another caller's job or the
/// call comes from inside a job; the caller then runs `f` its own way.
///
/// # Panics
/// Re-raises a panic of `f` on any thread, after all have finished.
pub(crate) fn run(threads: usize, f: &(dyn Fn() + Sync)) -> bool {
    if IN_JOB.get() {
        return false;
    }
    let team = team();
    let _busy = match team.busy.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(e)) => e.into_inner(),
        Err(TryLockError::WouldBlock) => return false,
    };
    let wanted = threads
        .saturating_sub(1)
        .min(team.helpers.load(Ordering::Relaxed));
    // SAFETY: only the lifetime is erased; this function waits for every
    // helper below and clears the slot before `f`'s borrow ends.
    let job = Job(unsafe {
        std::mem::transmute::<*const (dyn Fn() + Sync + '_), *const (dyn Fn() + Sync + 'static)>(f)
    });
    team.remaining.store(wanted, Ordering::Relaxed);
    team.panicked.store(false, Ordering::Relaxed);
    {
        let mut slot = lock(&team.slot);
        slot.generation += 1;
        slot.job = Some(job);
        slot.wanted = wanted;
        team.generation.store(slot.generation, Ordering::Release);
        if slot.sleepers > 0 {
            team.wake.notify_all();
        }
    }
    IN_JOB.set(true);
    let mine = panic::catch_unwind(AssertUnwindSafe(f));
    IN_JOB.set(false);
    let start = Instant::now();
    while team.remaining.load(Ordering::Acquire) != 0 {
        if start.elapsed() < SPIN {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    lock(&team.slot).job = None;
    if let Err(payload) = mine {
        panic::resume_unwind(payload);
    }
    if team.panicked.load(Ordering::Relaxed) {
        panic!("a jaxon team thread panicked");
    }
    true
}

/// A helper's life: wait for a new generation (spinning, then asleep),
/// run the job if it is wanted, report, repeat.
fn helper(team: &'static Team, index: usize) {
    IN_JOB.set(true);
    let mut seen = 0;
    loop {
        let start = Instant::now();
        while team.generation.load(Ordering::Acquire) == seen {
            let idle = start.elapsed();
            if idle > SPIN {
                break;
            } else if idle > PAUSE {
                // Let a thread that wants this CPU (rayon's, another
                // program's) have it at once.
                std::thread::yield_now();
            } else {
                (0..64).for_each(|_| std::hint::spin_loop());
            }
        }
        let (job, wanted) = {
            let mut slot = lock(&team.slot);
            while slot.generation == seen {
                slot.sleepers += 1;
                slot = team.wake.wait(slot).unwrap_or_else(PoisonError::into_inner);
                slot.sleepers -= 1;
            }
            seen = slot.generation;
            (slot.job, slot.wanted)
        };
        let Some(job) = job.filter(|_| index < wanted) else {
            continue;
        };
        // SAFETY: the job's caller waits until `remaining` is zero, so the
        // closure is alive (module invariant).
        let ran = panic::catch_unwind(AssertUnwindSafe(|| unsafe { (*job.0)() }));
        if ran.is_err() {
            team.panicked.store(true, Ordering::Relaxed);
        }
        team.remaining.fetch_sub(1, Ordering::Release);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicU32;

    fn helpers() -> usize {
        team().helpers.load(Ordering::Relaxed)
    }

    #[test]
    fn every_wanted_thread_runs_the_job_once() {
        for round in 0..200 {
            let threads = 1 + round % 3;
            let ids = Mutex::new(Vec::new());
            let ran = run(threads, &|| lock(&ids).push(std::thread::current().id()));
            if !ran {
                continue; // another test's job held the team
            }
            let ids = ids.into_inner().unwrap();
            let distinct: HashSet<_> = ids.iter().collect();
            let expect = threads.min(1 + helpers());
            assert_eq!(
                (ids.len(), distinct.len()),
                (expect, expect),
                "round {round}"
            );
        }
    }

    #[test]
    fn work_shared_through_a_counter_is_done_exactly_once() {
        let counts: Vec<AtomicU32> = (0..10_007).map(|_| AtomicU32::new(0)).collect();
        let next = AtomicUsize::new(0);
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(c) = counts.get(i) else { break };
            c.fetch_add(1, Ordering::Relaxed);
        };
        if !run(4, &work) {
            work();
        }
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_call_from_inside_a_job_is_refused() {
        let inner = Mutex::new(Vec::new());
        let outer = run(2, &|| lock(&inner).push(run(2, &|| ())));
        if outer {
            assert!(inner.into_inner().unwrap().iter().all(|&ran| !ran));
        }
    }

    /// `run`, retried while other tests' jobs hold the team.
    fn run_when_free(threads: usize, f: &(dyn Fn() + Sync)) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if run(threads, f) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_panic_on_a_helper_reaches_the_caller_and_the_team_goes_on() {
        if helpers() == 0 {
            return;
        }
        let caller = std::thread::current().id();
        let failing = || {
            if std::thread::current().id() != caller {
                panic!("helper fails");
            }
        };
        let start = Instant::now();
        let reraised = loop {
            match panic::catch_unwind(|| run(2, &failing)) {
                Err(_) => break true,
                Ok(true) => break false, // ran, yet the helper's panic was lost
                Ok(false) if start.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Ok(false) => panic!("the team stayed busy"),
            }
        };
        assert!(reraised);
        let hits = AtomicU32::new(0);
        let ran = run_when_free(2, &|| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert!(ran);
        assert_eq!(hits.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn concurrent_callers_all_finish() {
        let total = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        let job = || {
                            total.fetch_add(1, Ordering::Relaxed);
                        };
                        if !run(2, &job) {
                            job();
                        }
                    }
                });
            }
        });
        assert!(total.load(Ordering::Relaxed) >= 400);
    }
}
