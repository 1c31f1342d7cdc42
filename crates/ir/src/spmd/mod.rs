//! SPMD execution between the devices of one process: a [`Communicator`]
//! (barrier-and-slots exchange over shared memory) and the per-thread
//! device context that collectives read.
//!
//! A `shard_map` runs one program instance per device of its mesh, each on
//! its own thread; every instance executes the same collectives in the same
//! order, so each collective is one [`Communicator::exchange`]: every device
//! deposits its value, the last to arrive publishes all of them, and each
//! device reads the values of its group (the devices that differ from it
//! only along the collective's axes).
//!
//! Invariants: an exchange returns only when every device has deposited
//! for the same round; if an instance fails (or finishes while others wait
//! at a collective it will never reach), the communicator is poisoned and
//! every waiting or later exchange returns an error instead of blocking.
//! Waits are bounded by [`Communicator::timeout`] as a last resort.

mod collective;
mod global;
mod run;

pub use collective::{collective, named_axes};
pub use global::{
    process_count, process_group, process_index, set_process_group, shard_map_on, signature,
    ProcessGroup, ABORT,
};
pub use run::{assemble, run_instances, shard_map, split_operands};

use crate::array::HostArray;
use crate::error::IrError;
use crate::primitive::Mesh;
use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// What a device deposits in one round: an array (the generic
/// collectives), or anything else its peers know how to read (a backend's
/// buffer addresses, nothing at all for a barrier). Deposits are moved in,
/// never cloned.
pub type Token = Arc<dyn Any + Send + Sync>;

#[derive(Default)]
struct State {
    /// This round's deposits, by rank.
    slots: Vec<Option<Token>>,
    /// How many devices deposited in this round.
    arrived: usize,
    /// How many instances have finished their program.
    done: usize,
    /// Completed rounds.
    round: u64,
    /// The values of the last completed round.
    published: Option<Arc<Vec<Token>>>,
    /// Why the communicator stopped, if it did.
    poisoned: Option<String>,
    /// Whether a cross-process call failed (every process knows then).
    cross_failed: bool,
}

/// The shared-memory exchange between the `size` devices of one mesh, or
/// between the devices this process hosts of a mesh across processes
/// (`global.rs`), whose rounds then also all-gather with the other
/// processes.
pub struct Communicator {
    size: usize,
    /// The ranks that deposit here.
    local: std::ops::Range<usize>,
    /// The other processes, for a mesh across processes.
    span: Option<global::Span>,
    state: Mutex<State>,
    cond: Condvar,
    timeout: Duration,
}

impl Communicator {
    /// A communicator between `size` devices; a wait longer than `timeout`
    /// fails.
    pub fn new(size: usize, timeout: Duration) -> Communicator {
        Communicator {
            size,
            local: 0..size,
            span: None,
            state: Mutex::new(State {
                slots: vec![None; size],
                ..State::default()
            }),
            cond: Condvar::new(),
            timeout,
        }
    }

    /// The communicator of the devices `local` of a mesh of `size`
    /// devices across processes.
    pub(crate) fn spanning(
        size: usize,
        local: std::ops::Range<usize>,
        span: global::Span,
    ) -> Communicator {
        let mut c = Communicator::new(size, default_timeout());
        c.local = local;
        c.span = Some(span);
        c
    }

    /// Whether the mesh spans processes (then deposits must be arrays or
    /// barriers: addresses do not travel).
    pub fn spans_processes(&self) -> bool {
        self.span.is_some()
    }

    /// Whether a cross-process call of this communicator failed.
    pub(crate) fn cross_failed(&self) -> bool {
        self.lock().cross_failed
    }

    /// The number of devices.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The wait limit.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned mutex means a thread panicked while holding it; the
        // state is still consistent (every update is one assignment).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the communicator: every waiting and later exchange fails
    /// with `why` (the first reason is kept).
    pub fn poison(&self, why: &str) {
        let mut s = self.lock();
        if s.poisoned.is_none() {
            s.poisoned = Some(why.to_string());
        }
        self.cond.notify_all();
    }

    /// Records that one instance finished its program: the others can no
    /// longer complete a round that needs it.
    pub fn finish(&self) {
        let mut s = self.lock();
        s.done += 1;
        self.cond.notify_all();
    }

    fn failed(why: &str) -> IrError {
        IrError::Eval(format!("collective aborted: {why}"))
    }

    /// Deposits `value` for device `rank` and returns every device's value
    /// of this round, by rank (each an `Arc<HostArray>`).
    pub fn exchange(&self, rank: usize, value: HostArray) -> Result<Arc<Vec<Token>>, IrError> {
        self.exchange_token(rank, Arc::new(value))
    }

    /// Waits until every device has reached this round (and so finished
    /// everything it did before it).
    pub fn barrier(&self, rank: usize) -> Result<(), IrError> {
        self.exchange_token(rank, Arc::new(())).map(|_| ())
    }

    /// Deposits any token for device `rank` and returns every device's
    /// token of this round, by rank. Everything a device did before it
    /// deposited happens before every device's return.
    pub fn exchange_token(&self, rank: usize, value: Token) -> Result<Arc<Vec<Token>>, IrError> {
        if !self.local.contains(&rank) {
            return Err(IrError::Eval(format!(
                "collective: device {rank} is not one of {:?} of {}",
                self.local, self.size
            )));
        }
        let mut s = self.lock();
        if let Some(why) = &s.poisoned {
            return Err(Self::failed(why));
        }
        if s.slots[rank].is_some() {
            return Err(IrError::Eval(format!(
                "collective: device {rank} deposited twice in one round"
            )));
        }
        s.slots[rank] = Some(value);
        s.arrived += 1;
        let here = self.local.len();
        if s.arrived == here {
            let values = match &self.span {
                None => {
                    let values: Option<Vec<Token>> = s.slots.iter_mut().map(Option::take).collect();
                    values.ok_or_else(|| IrError::Eval("collective: a slot is empty".into()))?
                }
                Some(span) => match self.cross_round(&mut s, span) {
                    Ok(v) => v,
                    Err(e) => {
                        s.poisoned = Some(e.to_string());
                        s.cross_failed = true;
                        self.cond.notify_all();
                        return Err(e);
                    }
                },
            };
            let out = Arc::new(values);
            s.published = Some(out.clone());
            s.arrived = 0;
            s.round += 1;
            self.cond.notify_all();
            return Ok(out);
        }
        let round = s.round;
        loop {
            if let Some(why) = &s.poisoned {
                return Err(Self::failed(why));
            }
            if s.round != round {
                return s
                    .published
                    .clone()
                    .ok_or_else(|| IrError::Eval("collective: nothing published".into()));
            }
            if s.arrived + s.done >= here && s.done > 0 {
                let why = format!(
                    "{} device(s) finished without reaching this collective (the devices' \
                     programs diverged)",
                    s.done
                );
                s.poisoned = Some(why.clone());
                self.cond.notify_all();
                return Err(Self::failed(&why));
            }
            let (next, timeout) = self
                .cond
                .wait_timeout(s, self.timeout)
                .unwrap_or_else(|e| e.into_inner());
            s = next;
            if timeout.timed_out() && s.round == round && s.poisoned.is_none() {
                let why = format!(
                    "device {rank} waited more than {:?} for the other devices",
                    self.timeout
                );
                s.poisoned = Some(why.clone());
                self.cond.notify_all();
                return Err(Self::failed(&why));
            }
        }
    }
}

impl Communicator {
    /// Completes a round across processes: this process's deposits (arrays
    /// or barriers) all-gathered with the others', by global rank. Runs on
    /// the last local device to arrive, under the lock (every local device
    /// waits in this round meanwhile).
    fn cross_round(&self, s: &mut State, span: &global::Span) -> Result<Vec<Token>, IrError> {
        let mine: Vec<Token> = self
            .local
            .clone()
            .map(|r| s.slots[r].take())
            .collect::<Option<_>>()
            .ok_or_else(|| IrError::Eval("collective: a slot is empty".into()))?;
        let mut items = Vec::with_capacity(mine.len());
        for (t, r) in mine.iter().zip(self.local.clone()) {
            if let Some(a) = t.downcast_ref::<HostArray>() {
                items.push(Some(a));
            } else if t.downcast_ref::<()>().is_some() {
                items.push(None);
            } else {
                return Err(IrError::Eval(format!(
                    "collective: device {r} deposited a value that cannot travel across \
                     processes (only arrays and barriers do)"
                )));
            }
        }
        let all = span.gather(&format!("collective round {}", s.round), &items)?;
        if all.len() != self.size {
            return Err(IrError::Eval(format!(
                "collective: {} values across processes for {} devices",
                all.len(),
                self.size
            )));
        }
        Ok(global::tokens(all))
    }
}

/// What a program instance knows about the device it runs on.
#[derive(Clone)]
pub struct DeviceContext {
    /// The mesh.
    pub mesh: Mesh,
    /// This device's coordinates on the mesh.
    pub coords: Vec<usize>,
    /// The exchange shared by the mesh's devices.
    pub comm: Arc<Communicator>,
}

impl DeviceContext {
    /// This device's rank (row-major over the mesh axes).
    pub fn rank(&self) -> usize {
        self.mesh.rank(&self.coords)
    }

    /// The position and size of mesh axis `name`, or an error naming it.
    pub fn axis(&self, prim: &str, name: &str) -> Result<(usize, usize), IrError> {
        match (self.mesh.axis_pos(name), self.mesh.axis_size(name)) {
            (Some(p), Some(s)) => Ok((p, s)),
            _ => Err(IrError::Eval(format!(
                "{prim}: axis '{name}' is not in scope (the enclosing shard_map's mesh is {})",
                self.mesh
            ))),
        }
    }

    /// The ranks of this device's group over `axes` (the devices equal to
    /// it off those axes), ordered by the mixed-radix index over `axes`
    /// (major first), and this device's index in it.
    pub fn group(&self, prim: &str, axes: &[String]) -> Result<(Vec<usize>, usize), IrError> {
        let mut pos = Vec::with_capacity(axes.len());
        for a in axes {
            let (p, s) = self.axis(prim, a)?;
            if pos.iter().any(|(q, _)| *q == p) {
                return Err(IrError::Eval(format!("{prim}: axis '{a}' named twice")));
            }
            pos.push((p, s));
        }
        let n: usize = pos.iter().map(|(_, s)| s).product();
        let mut ranks = Vec::with_capacity(n);
        for i in 0..n {
            let mut c = self.coords.clone();
            let mut r = i;
            for (p, s) in pos.iter().rev() {
                c[*p] = r % s;
                r /= s;
            }
            ranks.push(self.mesh.rank(&c));
        }
        let me = pos.iter().fold(0, |acc, (p, s)| acc * s + self.coords[*p]);
        Ok((ranks, me))
    }

    /// Exchanges `value` with every device and returns the values of this
    /// device's group over `axes`, in group order, and this device's index.
    pub fn gather_group(
        &self,
        prim: &str,
        axes: &[String],
        value: HostArray,
    ) -> Result<(Vec<HostArray>, usize), IrError> {
        let (ranks, me) = self.group(prim, axes)?;
        let all = self.comm.exchange(self.rank(), value)?;
        let mut out = Vec::with_capacity(ranks.len());
        for r in ranks {
            let v = all
                .get(r)
                .and_then(|t| t.downcast_ref::<HostArray>())
                .ok_or_else(|| IrError::Eval(format!("{prim}: no array from device {r}")))?;
            out.push(v.clone());
        }
        Ok((out, me))
    }
}

thread_local! {
    static CONTEXT: RefCell<Vec<DeviceContext>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with `cx` as this thread's innermost device context.
pub fn with_context<T>(cx: DeviceContext, f: impl FnOnce() -> T) -> T {
    CONTEXT.with(|c| c.borrow_mut().push(cx));
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            CONTEXT.with(|c| {
                c.borrow_mut().pop();
            });
        }
    }
    let _pop = Pop;
    f()
}

/// The innermost device context whose mesh has every axis of `axes`, or
/// `None` outside every `shard_map` naming them.
pub fn context_for(axes: &[&str]) -> Option<DeviceContext> {
    CONTEXT.with(|c| {
        c.borrow()
            .iter()
            .rev()
            .find(|cx| axes.iter().all(|a| cx.mesh.axis_pos(a).is_some()))
            .cloned()
    })
}

/// Whether this thread runs inside a `shard_map`.
pub fn in_spmd() -> bool {
    CONTEXT.with(|c| !c.borrow().is_empty())
}

/// The default wait limit of a collective (`JAXON_COLLECTIVE_TIMEOUT_S`,
/// else 300 s).
pub fn default_timeout() -> Duration {
    let secs = std::env::var("JAXON_COLLECTIVE_TIMEOUT_S")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(300);
    Duration::from_secs(secs.max(1))
}
