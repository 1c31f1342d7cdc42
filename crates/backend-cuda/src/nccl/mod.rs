//! Collectives between GPUs through NCCL: a communicator over the GPUs of
//! this process ([`NcclComm::for_devices`], as `ncclCommInitAll`) or over
//! processes ([`NcclComm::from_unique_id`], the id broadcast by the caller,
//! e.g. over `jaxon::distributed`'s MPI), and the collectives jaxon's
//! `psum`/`pmean`/`pmax`/`pmin`, `all_gather`, `psum_scatter`, `ppermute`
//! and `all_to_all` need, on [`DeviceBuffer`]s.
//!
//! Invariants:
//! - NCCL is opened at the first call (`library.rs`); without it, or without
//!   a GPU, every entry point returns [`crate::CudaError::NcclMissing`] or
//!   [`crate::CudaError::NoDevice`], never panics.
//! - Arguments are checked (`wire.rs`) before anything is queued: a dtype
//!   NCCL cannot reduce, buffers of different lengths or dtypes, the wrong
//!   number of buffers, a buffer on another device, a rank out of range.
//! - Every collective queues its NCCL calls on each device's one stream
//!   (stream order with the kernels before and after it), inside one
//!   `ncclGroupStart`/`ncclGroupEnd`, and allocates its results from the
//!   devices' pools; nothing waits for the GPU until a result is read
//!   ([`Device::download`]) or [`NcclComm::synchronize`] is called.
//! - Checks across processes are the caller's: NCCL cannot see that another
//!   process gave a different length, and would hang or read garbage.

mod library;
mod wire;

pub use library::{LIBRARY_NAMES, MIN_VERSION};
pub use wire::ReduceOp;

use crate::error::Result;
use crate::runtime::{driver, Device, DeviceBuffer};
use cudarc::driver::result as drv;
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclUniqueId};
use jaxon_ir::DType;
use library::Api;
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use wire::error;

/// The version of the NCCL found, `(major, minor, patch)`, loading it.
pub fn nccl_version() -> Result<(u32, u32, u32)> {
    Ok(library::api()?.version())
}

/// The 128 bytes that name a communicator across processes: made by one
/// process with [`nccl_unique_id`], sent to the others (e.g. with MPI's
/// broadcast), and given by each to [`NcclComm::from_unique_id`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NcclId([u8; 128]);

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NcclId(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

impl NcclId {
    /// The id's bytes, to send to the other processes.
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }

    /// The id from the bytes another process sent; an error unless there
    /// are exactly 128.
    pub fn from_bytes(bytes: &[u8]) -> Result<NcclId> {
        let raw: [u8; 128] = bytes.try_into().map_err(|_| {
            error(
                "from_unique_id",
                format!("an NCCL id is 128 bytes, not {}", bytes.len()),
            )
        })?;
        Ok(NcclId(raw))
    }

    fn raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.0.map(|b| b as std::ffi::c_char),
        }
    }
}

/// A new communicator id (`ncclGetUniqueId`): call it on one process and
/// broadcast it to the others.
pub fn nccl_unique_id() -> Result<NcclId> {
    let api = library::api()?;
    let mut id = ncclUniqueId { internal: [0; 128] };
    // SAFETY: writes the 128-byte id.
    api.check(unsafe { (api.get_unique_id)(&mut id) }, "ncclGetUniqueId")?;
    Ok(NcclId(id.internal.map(|c| c as u8)))
}

/// One rank of the communicator that lives in this process.
struct Member {
    comm: ncclComm_t,
    device: Arc<Device>,
    rank: usize,
}

impl Member {
    fn stream(&self) -> cudaStream_t {
        self.device.cu_stream() as cudaStream_t
    }
}

/// An NCCL communicator: `size` ranks in all, some of them (one per GPU)
/// in this process.
pub struct NcclComm {
    api: &'static Api,
    members: Vec<Member>,
    size: usize,
}

// SAFETY: NCCL communicators may be used from any thread, one at a time;
// `NcclComm` is not `Sync`, so its calls never overlap.
unsafe impl Send for NcclComm {}

impl std::fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclComm")
            .field("size", &self.size)
            .field("local_ranks", &self.local_ranks())
            .finish()
    }
}

impl NcclComm {
    /// A communicator over GPUs `ordinals` of this process, rank `i` on
    /// `ordinals[i]` (`ncclCommInitAll`); opens the devices.
    pub fn for_devices(ordinals: &[usize]) -> Result<NcclComm> {
        let api = library::api()?;
        let devices = ordinals
            .iter()
            .map(|&o| Device::open(o))
            .collect::<Result<Vec<_>>>()?;
        Self::init_all(api, devices)
    }

    /// A communicator over devices already opened, rank `i` on
    /// `devices[i]`; buffers made on them can be given to it directly.
    pub fn for_opened(devices: &[Arc<Device>]) -> Result<NcclComm> {
        let api = library::api()?;
        Self::init_all(api, devices.to_vec())
    }

    fn init_all(api: &'static Api, devices: Vec<Arc<Device>>) -> Result<NcclComm> {
        if devices.is_empty() {
            return Err(error(
                "for_devices",
                "a communicator needs at least one device",
            ));
        }
        let ordinals: Vec<c_int> = devices.iter().map(|d| d.ordinal() as c_int).collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(error(
                    "for_devices",
                    format!("device {o} is named twice: NCCL takes one rank per GPU"),
                ));
            }
        }
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `comms` has room for one communicator per device.
        api.check(
            unsafe {
                (api.comm_init_all)(
                    comms.as_mut_ptr(),
                    devices.len() as c_int,
                    ordinals.as_ptr(),
                )
            },
            "ncclCommInitAll",
        )?;
        let size = devices.len();
        let members = comms
            .into_iter()
            .zip(devices)
            .enumerate()
            .map(|(rank, (comm, device))| Member { comm, device, rank })
            .collect();
        Ok(NcclComm { api, members, size })
    }

    /// This process's rank `rank` of a communicator of `size` ranks named
    /// by `id` (`ncclCommInitRank`), on `device`. Every rank must call it:
    /// the call returns once all `size` have joined.
    pub fn from_unique_id(
        device: &Arc<Device>,
        id: &NcclId,
        rank: usize,
        size: usize,
    ) -> Result<NcclComm> {
        let api = library::api()?;
        wire::rank("from_unique_id", "rank", rank, size)?;
        let size_c = c_int::try_from(size)
            .map_err(|_| error("from_unique_id", format!("{size} ranks are too many")))?;
        device.bind()?;
        let mut comm: ncclComm_t = std::ptr::null_mut();
        // SAFETY: writes one communicator; the id is 128 bytes by value.
        api.check(
            unsafe { (api.comm_init_rank)(&mut comm, size_c, id.raw(), rank as c_int) },
            "ncclCommInitRank",
        )?;
        Ok(NcclComm {
            api,
            members: vec![Member {
                comm,
                device: device.clone(),
                rank,
            }],
            size,
        })
    }

    /// The number of ranks in all processes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The ranks that live in this process, in the order their buffers are
    /// given to the collectives.
    pub fn local_ranks(&self) -> Vec<usize> {
        self.members.iter().map(|m| m.rank).collect()
    }

    /// The device of each local rank, in the same order.
    pub fn devices(&self) -> Vec<Arc<Device>> {
        self.members.iter().map(|m| m.device.clone()).collect()
    }

    /// Waits for every queued collective of the local ranks, and reports an
    /// error NCCL met asynchronously (a peer that failed).
    pub fn synchronize(&self) -> Result<()> {
        for m in &self.members {
            m.device.synchronize()?;
            let mut status: c_int = 0;
            // SAFETY: the communicator is live; writes one status.
            self.api.check(
                unsafe { (self.api.comm_get_async_error)(m.comm, &mut status) },
                "ncclCommGetAsyncError",
            )?;
            self.api.check(status, "an asynchronous NCCL error")?;
        }
        Ok(())
    }

    /// Checks the inputs (one per local rank, each on its rank's device,
    /// all of one dtype and length).
    fn inputs(&self, op: &str, inputs: &[&DeviceBuffer]) -> Result<(DType, usize)> {
        let shapes: Vec<_> = inputs.iter().map(|b| (b.dtype(), b.len())).collect();
        let (dtype, len) = wire::uniform(op, &shapes, self.members.len())?;
        for (b, m) in inputs.iter().zip(&self.members) {
            if b.device().ordinal() != m.device.ordinal() {
                return Err(error(
                    op,
                    format!(
                        "rank {}'s buffer is on GPU {}, but the rank is on GPU {}",
                        m.rank,
                        b.device().ordinal(),
                        m.device.ordinal()
                    ),
                ));
            }
        }
        Ok((dtype, len))
    }

    /// One new buffer of `len` x `dtype` per local rank.
    fn outputs(&self, dtype: DType, len: usize) -> Result<Vec<DeviceBuffer>> {
        self.members
            .iter()
            .map(|m| m.device.alloc(dtype, len))
            .collect()
    }

    /// Runs `each` for every local rank between `ncclGroupStart` and
    /// `ncclGroupEnd`. The group is always ended, even after an error.
    fn group(&self, what: &str, mut each: impl FnMut(&Member, usize) -> Result<()>) -> Result<()> {
        let api = self.api;
        // SAFETY: no arguments.
        api.check(unsafe { (api.group_start)() }, "ncclGroupStart")?;
        let mut first = Ok(());
        for (i, m) in self.members.iter().enumerate() {
            if let Err(e) = m.device.bind().and_then(|()| each(m, i)) {
                first = Err(e);
                break;
            }
        }
        // SAFETY: closes the group opened above.
        let ended = api.check(unsafe { (api.group_end)() }, what);
        first.and(ended)
    }

    /// `op` over the ranks, elementwise: every rank gets the reduction of
    /// all ranks' inputs (`psum`, `pmax`, `pmin`, `pmean`).
    pub fn all_reduce(&self, inputs: &[&DeviceBuffer], op: ReduceOp) -> Result<Vec<DeviceBuffer>> {
        let (dtype, len) = self.inputs("all_reduce", inputs)?;
        let w = wire::reduced("all_reduce", dtype, op)?;
        let out = self.outputs(dtype, len)?;
        if len == 0 {
            return Ok(out);
        }
        self.group("ncclAllReduce", |m, i| {
            // SAFETY: both buffers hold `len` elements of `w` on the rank's
            // device; the output stays alive while the stream uses it.
            let s = unsafe {
                (self.api.all_reduce)(
                    addr(inputs[i]),
                    addr(&out[i]) as *mut c_void,
                    len * w.per_element,
                    w.ty,
                    op.nccl(),
                    m.comm,
                    m.stream(),
                )
            };
            self.api.check(s, "ncclAllReduce")
        })?;
        Ok(out)
    }

    /// The ranks' inputs concatenated in rank order, on every rank
    /// (`all_gather` with `tiled=True` along the leading dimension).
    pub fn all_gather(&self, inputs: &[&DeviceBuffer]) -> Result<Vec<DeviceBuffer>> {
        let (dtype, len) = self.inputs("all_gather", inputs)?;
        let w = wire::moved(dtype);
        let out = self.outputs(dtype, len * self.size)?;
        if len == 0 {
            return Ok(out);
        }
        self.group("ncclAllGather", |m, i| {
            // SAFETY: the input holds `len` elements and the output
            // `size * len`, on the rank's device.
            let s = unsafe {
                (self.api.all_gather)(
                    addr(inputs[i]),
                    addr(&out[i]) as *mut c_void,
                    len * w.per_element,
                    w.ty,
                    m.comm,
                    m.stream(),
                )
            };
            self.api.check(s, "ncclAllGather")
        })?;
        Ok(out)
    }

    /// The reduction of the ranks' inputs, split in `size` equal blocks:
    /// rank `r` gets block `r` (`psum_scatter` with `tiled=True` along the
    /// leading dimension). The length must divide by the size.
    pub fn reduce_scatter(
        &self,
        inputs: &[&DeviceBuffer],
        op: ReduceOp,
    ) -> Result<Vec<DeviceBuffer>> {
        let (dtype, len) = self.inputs("reduce_scatter", inputs)?;
        let w = wire::reduced("reduce_scatter", dtype, op)?;
        let part = wire::share("reduce_scatter", len, self.size)?;
        let out = self.outputs(dtype, part)?;
        if part == 0 {
            return Ok(out);
        }
        self.group("ncclReduceScatter", |m, i| {
            // SAFETY: the input holds `size * part` elements and the output
            // `part`, on the rank's device.
            let s = unsafe {
                (self.api.reduce_scatter)(
                    addr(inputs[i]),
                    addr(&out[i]) as *mut c_void,
                    part * w.per_element,
                    w.ty,
                    op.nccl(),
                    m.comm,
                    m.stream(),
                )
            };
            self.api.check(s, "ncclReduceScatter")
        })?;
        Ok(out)
    }

    /// Rank `root`'s input, on every rank. Every rank gives a buffer of the
    /// same dtype and length; only the root's contents are read.
    pub fn broadcast(&self, inputs: &[&DeviceBuffer], root: usize) -> Result<Vec<DeviceBuffer>> {
        let (dtype, len) = self.inputs("broadcast", inputs)?;
        wire::rank("broadcast", "root", root, self.size)?;
        let w = wire::moved(dtype);
        let out = self.outputs(dtype, len)?;
        if len == 0 {
            return Ok(out);
        }
        self.group("ncclBroadcast", |m, i| {
            // SAFETY: both buffers hold `len` elements on the rank's device.
            let s = unsafe {
                (self.api.broadcast)(
                    addr(inputs[i]),
                    addr(&out[i]) as *mut c_void,
                    len * w.per_element,
                    w.ty,
                    root as c_int,
                    m.comm,
                    m.stream(),
                )
            };
            self.api.check(s, "ncclBroadcast")
        })?;
        Ok(out)
    }

    /// `ppermute`: for each pair `(source, destination)` of `perm` (a
    /// partial permutation of the ranks) the destination gets the source's
    /// input, by `ncclSend`/`ncclRecv` pairs in one group; a rank that is
    /// no destination gets zeros, as in JAX.
    pub fn ppermute(
        &self,
        inputs: &[&DeviceBuffer],
        perm: &[(usize, usize)],
    ) -> Result<Vec<DeviceBuffer>> {
        let (dtype, len) = self.inputs("ppermute", inputs)?;
        wire::permutation(perm, self.size)?;
        let w = wire::moved(dtype);
        let out = self.outputs(dtype, len)?;
        if len == 0 {
            return Ok(out);
        }
        let bytes = len * w.per_element;
        for (m, o) in self.members.iter().zip(&out) {
            if !perm.iter().any(|&(_, d)| d == m.rank) {
                m.device.bind()?;
                // SAFETY: the buffer holds `bytes` bytes on this device.
                unsafe { drv::memset_d8_async(o.ptr(), 0, bytes, m.device.cu_stream()) }
                    .map_err(driver("zeroing a ppermute result"))?;
            }
        }
        self.group("ppermute (ncclSend/ncclRecv)", |m, i| {
            for &(s, d) in perm {
                if s == m.rank {
                    // SAFETY: the input holds `bytes` bytes on the device.
                    let st = unsafe {
                        (self.api.send)(
                            addr(inputs[i]),
                            bytes,
                            w.ty,
                            d as c_int,
                            m.comm,
                            m.stream(),
                        )
                    };
                    self.api.check(st, "ncclSend")?;
                }
                if d == m.rank {
                    // SAFETY: the output holds `bytes` bytes on the device.
                    let st = unsafe {
                        (self.api.recv)(
                            addr(&out[i]) as *mut c_void,
                            bytes,
                            w.ty,
                            s as c_int,
                            m.comm,
                            m.stream(),
                        )
                    };
                    self.api.check(st, "ncclRecv")?;
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// `all_to_all` over flat buffers: each rank's input is split in `size`
    /// equal blocks, block `j` goes to rank `j`, and rank `r`'s result is
    /// the blocks `r` of every rank in rank order (JAX's `all_to_all` with
    /// `split_axis = concat_axis = 0`; other axes are a transpose before
    /// and after). The length must divide by the size.
    pub fn all_to_all(&self, inputs: &[&DeviceBuffer]) -> Result<Vec<DeviceBuffer>> {
        let (dtype, len) = self.inputs("all_to_all", inputs)?;
        let part = wire::share("all_to_all", len, self.size)?;
        let w = wire::moved(dtype);
        let out = self.outputs(dtype, len)?;
        if part == 0 {
            return Ok(out);
        }
        let bytes = part * w.per_element;
        self.group("all_to_all (ncclSend/ncclRecv)", |m, i| {
            for peer in 0..self.size {
                let off = (peer * bytes) as u64;
                // SAFETY: block `peer` of the input and of the output lies
                // within their `size * bytes` bytes.
                let st = unsafe {
                    (self.api.send)(
                        (inputs[i].ptr() + off) as *const c_void,
                        bytes,
                        w.ty,
                        peer as c_int,
                        m.comm,
                        m.stream(),
                    )
                };
                self.api.check(st, "ncclSend")?;
                // SAFETY: as above.
                let st = unsafe {
                    (self.api.recv)(
                        (out[i].ptr() + off) as *mut c_void,
                        bytes,
                        w.ty,
                        peer as c_int,
                        m.comm,
                        m.stream(),
                    )
                };
                self.api.check(st, "ncclRecv")?;
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// A buffer's device address as NCCL takes it.
fn addr(b: &DeviceBuffer) -> *const c_void {
    b.ptr() as *const c_void
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        for m in &self.members {
            let _ = m.device.bind();
            // SAFETY: the communicator was made by NCCL and is destroyed
            // once, after its queued work (ncclCommDestroy waits for it).
            let s = unsafe { (self.api.comm_destroy)(m.comm) };
            if let Err(e) = self.api.check(s, "ncclCommDestroy") {
                tracing::warn!("{e}; aborting the communicator");
                // SAFETY: as above; abort frees what destroy could not.
                let _ = unsafe { (self.api.comm_abort)(m.comm) };
            }
        }
    }
}

impl From<&NcclId> for Vec<u8> {
    fn from(id: &NcclId) -> Vec<u8> {
        id.0.to_vec()
    }
}
