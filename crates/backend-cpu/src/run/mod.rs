//! Running compiled programs: `exec` (steps and programs), `executable`
//! (the `Executable` handed to callers), `runtime` (the run context, the
//! call into a program function and the trampolines it calls back),
//! `sched` (splitting work over threads), `team` (the helper threads),
//! `pool` and `hugepages` (buffers), `raw` (copies between raw buffers and
//! host arrays).
//!
//! Invariant: the `unsafe` invariants of calling generated code are stated
//! in `runtime`, `team`, `sched`, `raw` and `hugepages`.

pub(crate) mod exec;
pub(crate) mod executable;
pub(crate) mod hugepages;
pub(crate) mod pool;
pub(crate) mod raw;
pub(crate) mod runtime;
pub(crate) mod sched;
pub(crate) mod team;
