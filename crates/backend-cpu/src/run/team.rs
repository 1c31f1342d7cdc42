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

use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// How long an idle helper spins before it sleeps: longer than the gaps
/// between a program's parallel regions, short enough that an idle
/// program stops using the CPU at once.
const SPIN: Duration = Duration::from_micros(300);

/// For how much of [`SPIN`] a helper pauses between checks; after that
/// it yields its CPU instead.
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
    /// The first panic of a helper in the current job, for the caller to
    /// raise again (dropping it on the helper could panic there).
    panicked: Mutex<Option<Box<dyn Any + Send>>>,
    /// The process that started the helpers: a child forked from it has
    /// none, so its calls are refused.
    process: u32,
}

thread_local! {
    /// Set on helpers, and on a caller while it runs its own share of a
    /// job: a nested call is refused at once (`busy` would refuse it too).
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
            panicked: Mutex::new(None),
            process: std::process::id(),
        }));
        let started = (0..cpus - 1)
            .take_while(|&index| {
                std::thread::Builder::new()
                    .name(format!("jaxon-team-{index}"))
                    .spawn(move || helper(team, index))
                    .is_ok()
            })
            .count();
        team.helpers.store(started, Ordering::Relaxed);
        team
    })
}

/// Runs `f` on the calling thread and on up to `threads - 1` helpers at
/// once, returning when every one has finished. Returns `false`, having
/// run nothing, when the team is busy with another caller's job, the
/// call comes from inside a job, or the process was forked from the one
/// that started the helpers; the caller then runs `f` its own way.
///
/// # Panics
/// Re-raises the panic of `f` on the calling thread if it had one, else
/// the first on a helper, after every thread has finished.
pub(crate) fn run(threads: usize, f: &(dyn Fn() + Sync)) -> bool {
    if IN_JOB.get() {
        return false;
    }
    let team = team();
    if team.process != std::process::id() {
        return false;
    }
    let wanted = threads
        .saturating_sub(1)
        .min(team.helpers.load(Ordering::Relaxed));
    if wanted == 0 {
        // Alone (one CPU), but still a job: a call from inside `f` is
        // refused like one from inside a shared job (on a one-CPU
        // machine it ran, and the nesting test failed).
        IN_JOB.set(true);
        let mine = panic::catch_unwind(AssertUnwindSafe(f));
        IN_JOB.set(false);
        if let Err(payload) = mine {
            panic::resume_unwind(payload);
        }
        return true;
    }
    let _busy = match team.busy.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(e)) => e.into_inner(),
        Err(TryLockError::WouldBlock) => return false,
    };
    // SAFETY: only the lifetime is erased; this function waits for every
    // helper below and clears the slot before `f`'s borrow ends.
    let job = Job(unsafe {
        std::mem::transmute::<*const (dyn Fn() + Sync + '_), *const (dyn Fn() + Sync + 'static)>(f)
    });
    team.remaining.store(wanted, Ordering::Relaxed);
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
    let theirs = lock(&team.panicked).take();
    if let Some(payload) = mine.err().or(theirs) {
        panic::resume_unwind(payload);
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
        if let Err(payload) = ran {
            let mut first = lock(&team.panicked);
            match *first {
                None => *first = Some(payload),
                // Dropping a payload runs user code that may panic too.
                Some(_) => std::mem::forget(payload),
            }
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
    use std::sync::atomic::{AtomicBool, AtomicU32};

    fn helpers() -> usize {
        team().helpers.load(Ordering::Relaxed)
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

    /// The distinct threads that ran one job of `threads`, each once.
    fn threads_that_ran(threads: usize) -> usize {
        let ids = Mutex::new(Vec::new());
        assert!(run_when_free(threads, &|| lock(&ids).push(std::thread::current().id())));
        let ids = ids.into_inner().unwrap();
        let distinct: HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "a thread ran the job twice");
        ids.len()
    }

    #[test]
    fn every_wanted_thread_runs_the_job_once() {
        for threads in [0, 1, 2, 3, 8].into_iter().cycle().take(100) {
            let expect = threads.clamp(1, 1 + helpers());
            assert_eq!(threads_that_ran(threads), expect, "threads {threads}");
        }
    }

    #[test]
    fn sleeping_helpers_wake_for_the_next_job() {
        for _ in 0..20 {
            std::thread::sleep(SPIN * 4);
            assert_eq!(threads_that_ran(2), 2.min(1 + helpers()));
        }
    }

    #[test]
    fn the_caller_waits_for_helpers_even_when_its_own_share_panics() {
        if helpers() == 0 {
            return;
        }
        let caller = std::thread::current().id();
        let helper_done = AtomicBool::new(false);
        let job = || {
            if std::thread::current().id() == caller {
                panic!("caller fails");
            }
            std::thread::sleep(Duration::from_millis(20));
            helper_done.store(true, Ordering::Relaxed);
        };
        let start = Instant::now();
        loop {
            match panic::catch_unwind(|| run(2, &job)) {
                Err(_) => break,
                Ok(true) => panic!("the caller's panic was lost"),
                Ok(false) => assert!(start.elapsed() < Duration::from_secs(20), "team busy"),
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(helper_done.load(Ordering::Relaxed));
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
        let payload = loop {
            match panic::catch_unwind(|| run(2, &failing)) {
                Err(payload) => break payload,
                Ok(true) => panic!("ran, yet the helper's panic was lost"),
                Ok(false) => assert!(start.elapsed() < Duration::from_secs(20), "team busy"),
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"helper fails"));
        assert_eq!(threads_that_ran(2), 2);
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
        assert!(run_when_free(4, &work));
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_call_from_inside_a_job_is_refused() {
        let inner = Mutex::new(Vec::new());
        assert!(run_when_free(2, &|| lock(&inner).push(run(2, &|| ()))));
        let inner = inner.into_inner().unwrap();
        assert_eq!(inner.len(), 2.min(1 + helpers()));
        assert!(inner.iter().all(|&ran| !ran));
    }

    #[test]
    fn concurrent_callers_each_run_on_the_team_or_alone() {
        let (total, on_team) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        let job = || {
                            total.fetch_add(1, Ordering::Relaxed);
                        };
                        if run(2, &job) {
                            on_team.fetch_add(1, Ordering::Relaxed);
                        } else {
                            job();
                        }
                    }
                });
            }
        });
        let on_team = on_team.load(Ordering::Relaxed);
        let expect = 400 + on_team * 1.min(helpers());
        assert_eq!(total.load(Ordering::Relaxed), expect);
    }
}
