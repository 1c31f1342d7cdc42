//! Opening NCCL at first use: `libnccl.so.2` (then `libnccl.so`) is loaded
//! and every entry point jaxon calls is resolved at once, into a table of
//! function pointers typed with cudarc's NCCL bindings.
//!
//! Invariants:
//! - Nothing is loaded before the first call of [`api`]; a default build
//!   runs everywhere, with or without NCCL.
//! - A missing library, a missing entry point or an NCCL older than
//!   [`MIN_VERSION`] is [`CudaError::NcclMissing`] naming `libnccl.so.2`,
//!   never a panic. cudarc's own loader (`cudarc::nccl::sys`) is not used:
//!   of NCCL's names it tries `libnccl.so` (the development symlink, absent
//!   where only the runtime package or an `nvidia-nccl` wheel is installed)
//!   but never `libnccl.so.2`, and it panics on a missing library or symbol.
//! - The outcome is cached: the library is opened once per process.
//! - Entry points return `c_int`, not cudarc's `ncclResult_t` enum, so a
//!   status code newer than the bindings cannot be an invalid enum value.

use crate::error::{CudaError, Result};
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// The library names tried, in order, unless `JAXON_NCCL_LIBRARY` names a
/// file.
pub const LIBRARY_NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// The oldest NCCL accepted (2.12: `ncclAvg` and `bfloat16` came in 2.10).
pub const MIN_VERSION: (u32, u32, u32) = (2, 12, 0);

type Status = c_int;

/// NCCL's entry points, resolved from the loaded library.
pub(crate) struct Api {
    pub version: c_int,
    pub get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> Status,
    pub comm_init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> Status,
    pub comm_init_all: unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> Status,
    pub comm_destroy: unsafe extern "C" fn(ncclComm_t) -> Status,
    pub comm_abort: unsafe extern "C" fn(ncclComm_t) -> Status,
    pub comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> Status,
    pub get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    pub group_start: unsafe extern "C" fn() -> Status,
    pub group_end: unsafe extern "C" fn() -> Status,
    #[allow(clippy::type_complexity)]
    pub all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        cudaStream_t,
    ) -> Status,
    pub all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclComm_t,
        cudaStream_t,
    ) -> Status,
    #[allow(clippy::type_complexity)]
    pub reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        cudaStream_t,
    ) -> Status,
    #[allow(clippy::type_complexity)]
    pub broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        cudaStream_t,
    ) -> Status,
    pub send: unsafe extern "C" fn(
        *const c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        cudaStream_t,
    ) -> Status,
    pub recv: unsafe extern "C" fn(
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        cudaStream_t,
    ) -> Status,
    /// Kept open for the life of the process: the pointers above point
    /// into it.
    _lib: libloading::Library,
}

impl Api {
    /// `Ok` for `ncclSuccess`, else NCCL's message for the status, with
    /// what was being done.
    pub fn check(&self, status: Status, what: &str) -> Result<()> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for any status value.
        let msg = unsafe {
            let p = (self.get_error_string)(status);
            if p.is_null() {
                String::from("unknown error")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(CudaError::Nccl(format!(
            "{what}: {msg} (ncclResult_t {status})"
        )))
    }

    /// The loaded NCCL's version as `(major, minor, patch)`.
    pub fn version(&self) -> (u32, u32, u32) {
        split_version(self.version)
    }
}

/// Splits `ncclGetVersion`'s code: `major*10000 + minor*100 + patch` from
/// 2.9 on, `major*1000 + minor*100 + patch` before.
pub(crate) fn split_version(code: c_int) -> (u32, u32, u32) {
    let code = code.max(0) as u32;
    if code >= 10000 {
        (code / 10000, (code % 10000) / 100, code % 100)
    } else {
        (code / 1000, (code % 1000) / 100, code % 100)
    }
}

/// The NCCL entry points, loading the library at the first call.
pub(crate) fn api() -> Result<&'static Api> {
    static API: OnceLock<Result<Api, CudaError>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn missing(what: String) -> CudaError {
    CudaError::NcclMissing(format!(
        "{what}; install NCCL {}.{}+ (Debian: `libnccl2`, pip: `nvidia-nccl-cu13`) and make \
         `libnccl.so.2` findable (LD_LIBRARY_PATH), or set JAXON_NCCL_LIBRARY to its path",
        MIN_VERSION.0, MIN_VERSION.1
    ))
}

fn open() -> Result<libloading::Library> {
    let names: Vec<String> = match std::env::var("JAXON_NCCL_LIBRARY") {
        Ok(path) if !path.is_empty() => vec![path],
        _ => LIBRARY_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let mut why = Vec::new();
    for name in &names {
        // SAFETY: loading NCCL runs its (trivial) initialisers only.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return Ok(lib),
            Err(e) => match std::error::Error::source(&e) {
                Some(cause) => why.push(format!("{cause}")),
                None => why.push(format!("{name}: {e}")),
            },
        }
    }
    Err(missing(format!("could not open {}", why.join("; "))))
}

fn load() -> Result<Api> {
    let lib = open()?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the pointer's type is NCCL's documented signature for
            // the symbol (as in cudarc's bindings); the library stays open
            // as long as the table (`_lib`).
            {
                let f = *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                    missing(format!(
                        "libnccl.so.2 lacks the entry point `{}` ({e})",
                        $name
                    ))
                })?;
                f
            }
        };
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> Status = sym!("ncclGetVersion");
    let mut version: c_int = 0;
    // SAFETY: writes one int.
    let status = unsafe { get_version(&mut version) };
    if status != 0 {
        return Err(missing(format!(
            "ncclGetVersion failed (ncclResult_t {status})"
        )));
    }
    let found = split_version(version);
    if found < MIN_VERSION {
        return Err(missing(format!(
            "the NCCL found is {}.{}.{}, older than {}.{}",
            found.0, found.1, found.2, MIN_VERSION.0, MIN_VERSION.1
        )));
    }
    let api = Api {
        version,
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        comm_init_all: sym!("ncclCommInitAll"),
        comm_destroy: sym!("ncclCommDestroy"),
        comm_abort: sym!("ncclCommAbort"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        get_error_string: sym!("ncclGetErrorString"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        all_reduce: sym!("ncclAllReduce"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        broadcast: sym!("ncclBroadcast"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        _lib: lib,
    };
    tracing::info!("loaded NCCL {}.{}.{}", found.0, found.1, found.2);
    Ok(api)
}
