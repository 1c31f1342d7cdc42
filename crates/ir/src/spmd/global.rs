//! A mesh across processes (JAX's multi-controller model): the
//! [`ProcessGroup`] injection point, the wire format of a round's deposits,
//! and [`shard_map_on`], which runs a `shard_map` either on this process's
//! devices alone or as this process's part of a global mesh.
//!
//! `jaxon_ir` knows no transport: `jaxon::distributed` registers an MPI
//! [`ProcessGroup`] ([`set_process_group`]) when a session starts, and this
//! module only calls [`ProcessGroup::all_gather`].
//!
//! With `P` processes of `L` local devices each, global device `g` lives on
//! process `g / L` and is mesh rank `g` (row-major). A mesh of at most `L`
//! devices runs on each process's own devices, independently (as without a
//! group); a larger one must hold all `P·L` devices, and then each process
//! runs only its `L` instances:
//! - every process holds the operands whole and slices its devices' shards;
//! - the communicator's rounds span processes: once this process's devices
//!   have deposited, one of its threads all-gathers their deposits (arrays
//!   or barriers) with the other processes', so every device reads every
//!   global device's value and the collectives keep the interpreter's
//!   definitions, summation order included (bit for bit the one-process
//!   result);
//! - the results of every device are all-gathered and assembled whole on
//!   every process.
//!
//! Invariants: every cross-process call is preceded by a handshake on a
//! signature (the operation and the dtypes and shapes moved), so
//! processes that diverge get an error, not mismatched data; a process
//! whose own device fails sends one "aborted" handshake so that its peers
//! fail at their next cross-process call instead of timing out; waits are
//! bounded by the group's timeout.

use super::run::{assemble, run_ranks, split_ranks};
use super::{shard_map, Communicator, Token};
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{Mesh, PartitionSpec};
use std::sync::{Arc, RwLock};

/// The processes of a multi-process program, as a transport offers them.
pub trait ProcessGroup: Send + Sync {
    /// This process's index, `0..count()`.
    fn index(&self) -> usize;
    /// How many processes there are.
    fn count(&self) -> usize;
    /// Every process's `mine`, concatenated in process order, after a
    /// handshake: every process must pass the same `sig` and the same
    /// length, else every process gets an error naming the first that
    /// differs (`sig == ABORT` on a peer: it stopped). Errors also when a
    /// process does not take part within the timeout.
    fn all_gather(&self, sig: u64, mine: &[u8]) -> Result<Vec<u8>, String>;
}

/// The signature a process sends when its own part of a global
/// `shard_map` failed: its peers' next cross-process call fails.
pub const ABORT: u64 = 0xab0a_7ab0_a7ab_0a7a;

static GROUP: RwLock<Option<Arc<dyn ProcessGroup>>> = RwLock::new(None);

/// Registers (or with `None` removes) the process group that global meshes
/// use. `jaxon::distributed` calls it when a session starts and ends.
pub fn set_process_group(group: Option<Arc<dyn ProcessGroup>>) {
    *GROUP.write().unwrap_or_else(|e| e.into_inner()) = group;
}

/// The registered process group, if any.
pub fn process_group() -> Option<Arc<dyn ProcessGroup>> {
    GROUP.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// How many processes share global meshes (1 without a group).
pub fn process_count() -> usize {
    process_group().map_or(1, |g| g.count().max(1))
}

/// This process's index in the group (0 without a group).
pub fn process_index() -> usize {
    process_group().map_or(0, |g| g.index())
}

/// FNV-1a, for signatures (stable across processes and builds): what
/// callers of [`shard_map_on`] pass as a body's signature.
pub fn signature(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn dtype_code(d: DType) -> u8 {
    DType::ALL
        .iter()
        .position(|x| *x == d)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

/// One deposit or result on the wire: `None` is a barrier's unit token.
/// Appends its descriptor to `head` and its bytes to `data`.
fn put(head: &mut Vec<u8>, data: &mut Vec<u8>, v: Option<&HostArray>) {
    match v {
        None => head.push(0),
        Some(a) => {
            head.push(1);
            head.push(dtype_code(a.dtype()));
            head.extend_from_slice(&(a.ndim() as u64).to_le_bytes());
            for &d in a.shape() {
                head.extend_from_slice(&(d as u64).to_le_bytes());
            }
            data.extend_from_slice(&a.to_le_bytes());
        }
    }
}

/// The wire form of `items` (descriptors, then the bytes) and its
/// signature (of the descriptors and `what`, not the values).
pub(crate) fn encode(what: &str, items: &[Option<&HostArray>]) -> (Vec<u8>, u64) {
    let (mut head, mut data) = (Vec::new(), Vec::new());
    head.extend_from_slice(&(items.len() as u64).to_le_bytes());
    for v in items {
        put(&mut head, &mut data, *v);
    }
    let mut sig = what.as_bytes().to_vec();
    sig.extend_from_slice(&head);
    let sig = signature(&sig);
    head.extend_from_slice(&data);
    (head, sig)
}

/// The inverse of [`encode`]'s bytes.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Option<HostArray>>, IrError> {
    let bad = || IrError::Eval("global mesh: a malformed message from another process".into());
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], IrError> {
        let s = bytes.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let word = |s: &[u8]| -> Result<usize, IrError> {
        let a: [u8; 8] = s.try_into().map_err(|_| bad())?;
        usize::try_from(u64::from_le_bytes(a)).map_err(|_| bad())
    };
    let count = word(take(8)?)?;
    let mut descs = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        match take(1)?[0] {
            0 => descs.push(None),
            1 => {
                let code = take(1)?[0];
                let dtype = *DType::ALL.get(usize::from(code)).ok_or_else(bad)?;
                let ndim = word(take(8)?)?;
                let shape = (0..ndim)
                    .map(|_| word(take(8)?))
                    .collect::<Result<Vec<_>, _>>()?;
                descs.push(Some((dtype, shape)));
            }
            _ => return Err(bad()),
        }
    }
    descs
        .into_iter()
        .map(|d| match d {
            None => Ok(None),
            Some((dtype, shape)) => {
                let n = shape.iter().product::<usize>() * dtype.size_bytes();
                Ok(Some(HostArray::from_le_bytes(dtype, &shape, take(n)?)?))
            }
        })
        .collect()
}

/// Where this process stands in a global mesh.
#[derive(Clone)]
pub(crate) struct Span {
    pub(crate) group: Arc<dyn ProcessGroup>,
    /// Devices per process.
    pub(crate) local: usize,
}

impl Span {
    /// The first global rank this process hosts.
    pub(crate) fn first(&self) -> usize {
        self.group.index() * self.local
    }

    /// All-gathers `items` (this process's, in rank order) with every
    /// process's and returns them by global position.
    pub(crate) fn gather(
        &self,
        what: &str,
        items: &[Option<&HostArray>],
    ) -> Result<Vec<Option<HostArray>>, IrError> {
        let (bytes, sig) = encode(what, items);
        let all = self
            .group
            .all_gather(sig, &bytes)
            .map_err(|e| IrError::Eval(format!("{what} across processes: {e}")))?;
        let per = bytes.len();
        let mut out = Vec::with_capacity(items.len() * self.group.count());
        for p in 0..self.group.count() {
            let part = all
                .get(p * per..(p + 1) * per)
                .ok_or_else(|| IrError::Eval(format!("{what}: process {p} sent too few bytes")))?;
            out.extend(decode(part)?);
        }
        Ok(out)
    }
}

/// A gathered round's values as tokens: arrays, or `()` for barriers.
pub(crate) fn tokens(values: Vec<Option<HostArray>>) -> Vec<Token> {
    values
        .into_iter()
        .map(|v| match v {
            Some(a) => Arc::new(a) as Token,
            None => Arc::new(()) as Token,
        })
        .collect()
}

/// A `shard_map` on this process's `local` devices, or, when a process
/// group is registered and the mesh is larger than `local`, this process's
/// part of a global mesh of every process's devices (module docs).
/// `body_sig` identifies the body (the same program on every process must
/// give the same value). Errors name the mesh size and the devices of the
/// processes.
pub fn shard_map_on<F>(
    mesh: &Mesh,
    in_specs: &[PartitionSpec],
    out_specs: &[PartitionSpec],
    args: &[&HostArray],
    local: usize,
    body_sig: u64,
    body: F,
) -> Result<Vec<HostArray>, IrError>
where
    F: Fn(Vec<HostArray>) -> Result<Vec<HostArray>, IrError> + Sync,
{
    let n = mesh.size();
    let group = match process_group() {
        Some(g) if g.count() > 1 && n > local => g,
        _ => return shard_map(mesh, in_specs, out_specs, args, body),
    };
    let procs = group.count();
    let total = procs * local;
    if n != total {
        let why = if n > total {
            format!("but the {procs} processes have {total} ({procs} × {local} local devices)")
        } else {
            format!(
                "more than this process's {local} but not all {total} devices of the {procs} \
                 processes; a mesh across processes holds every process's devices"
            )
        };
        return Err(IrError::Invalid(format!(
            "shard_map: the mesh {mesh} has {n} devices, {why}"
        )));
    }
    let span = Span { group, local };
    // The programs must agree before any data moves.
    let mut what = format!("shard_map {mesh} {in_specs:?} -> {out_specs:?} body {body_sig:#x}");
    for a in args {
        what.push_str(&format!(" {}{:?}", a.dtype(), a.shape()));
    }
    span.gather(&what, &[])?;
    let first = span.first();
    let ranks = first..first + local;
    let shards = split_ranks(mesh, in_specs, args, ranks.clone())?;
    let comm = Arc::new(Communicator::spanning(n, ranks.clone(), span.clone()));
    let outs = match run_ranks(mesh, ranks, shards, &comm, body) {
        Ok(o) => o,
        Err(e) => {
            if !comm.cross_failed() {
                // Tell the peers, which wait at their next cross-process
                // call; their error names this process.
                let _ = span.group.all_gather(ABORT, &[]);
            }
            return Err(e);
        }
    };
    let mine: Vec<Option<&HostArray>> = outs.iter().flatten().map(Some).collect();
    let k = out_specs.len();
    let all = span.gather("shard_map results", &mine)?;
    let mut per_device = Vec::with_capacity(n);
    let mut it = all.into_iter();
    for rank in 0..n {
        let vals: Option<Vec<HostArray>> = it.by_ref().take(k).collect();
        per_device.push(vals.ok_or_else(|| {
            IrError::Eval(format!("shard_map: device {rank}'s results did not arrive"))
        })?);
    }
    assemble(mesh, out_specs, per_device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Storage;

    #[test]
    fn the_wire_format_round_trips() {
        let a = HostArray::new(
            vec![2, 3],
            Storage::F32(vec![1.5, -2.0, 0.0, 3.25, 7.0, 9.0]),
        )
        .unwrap();
        let b = HostArray::new(vec![], Storage::I64(vec![-4])).unwrap();
        let (bytes, sig) = encode("x", &[Some(&a), None, Some(&b)]);
        let back = decode(&bytes).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[0].as_ref().unwrap(), &a);
        assert!(back[1].is_none());
        assert_eq!(back[2].as_ref().unwrap(), &b);
        // The signature follows dtypes and shapes, not values.
        let c = HostArray::new(vec![2, 3], Storage::F32(vec![0.0; 6])).unwrap();
        assert_eq!(encode("x", &[Some(&c), None, Some(&b)]).1, sig);
        assert_ne!(encode("y", &[Some(&c), None, Some(&b)]).1, sig);
        assert_ne!(encode("x", &[Some(&b), None, Some(&c)]).1, sig);
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
