//! The NVRTC calls, through cudarc's dynamically loaded `sys` layer, each
//! guarded: the library's presence is checked before any symbol is touched
//! (cudarc panics on a missing library or symbol), and every call runs
//! inside `catch_unwind`, so a broken install is a [`CudaError`], never a
//! panic.
//!
//! Invariant: a program handle never leaves [`compile_raw`]; it is destroyed
//! on every path.

use crate::error::{CudaError, Result};
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// How to get NVRTC, for [`CudaError::NvrtcMissing`].
pub(crate) const HOW_TO_GET: &str = "libnvrtc.so.13 was not found. Install NVRTC for CUDA 13.0 \
     (`cargo xtask nvrtc-path` installs the PyPI wheel `nvidia-cuda-nvrtc==13.0.*` and prints its \
     lib folder; or `pip install nvidia-cuda-nvrtc==13.0.*`), or install the CUDA toolkit, and put \
     the folder holding libnvrtc.so.13 and libnvrtc-builtins.so.13.0 on LD_LIBRARY_PATH";

/// What a successful compile gives.
pub(crate) struct RawOutput {
    pub cubin: Vec<u8>,
    pub ptx: String,
    pub log: String,
}

/// NVRTC's version `(major, minor)`, loading the library on first use.
pub(crate) fn version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the candidate names.
            if !unsafe { sys::is_culib_present() } {
                return Err(HOW_TO_GET.to_string());
            }
            let call = catch_unwind(|| {
                let (mut major, mut minor) = (0, 0);
                // SAFETY: two valid out-pointers.
                unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
                    .result()
                    .map(|()| (major, minor))
            });
            match call {
                Ok(Ok(v)) => {
                    tracing::debug!("NVRTC {}.{} loaded", v.0, v.1);
                    Ok(v)
                }
                Ok(Err(e)) => Err(format!("nvrtcVersion failed: {e:?}")),
                Err(_) => Err(format!(
                    "libnvrtc was found but could not be used (a symbol is missing); {HOW_TO_GET}"
                )),
            }
        })
        .clone()
        .map_err(CudaError::NvrtcMissing)
}

/// Bytes from a NUL-terminated buffer NVRTC filled, as text.
fn text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles one program; `name` is used for NVRTC's file name and errors.
pub(crate) fn compile_raw(source: &str, name: &str, options: &[String]) -> Result<RawOutput> {
    version()?;
    let fail = |log: String| CudaError::Compile {
        kernel: name.to_string(),
        log,
    };
    let src = CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let file = CString::new(format!("{}.cu", name.replace('\0', "_")))
        .map_err(|_| fail("bad program name".into()))?;
    let opts: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| fail("an option contains a NUL byte".into()))?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let run = AssertUnwindSafe(|| -> Result<RawOutput> {
        let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: valid out-pointer and NUL-terminated strings; no headers.
        let r = unsafe {
            sys::nvrtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                file.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        r.result()
            .map_err(|e| fail(format!("nvrtcCreateProgram: {e:?}")))?;
        let out = compile_program(prog, &opt_ptrs, &fail);
        // SAFETY: `prog` was created above and is destroyed once.
        if let Err(e) = unsafe { sys::nvrtcDestroyProgram(&mut prog) }.result() {
            tracing::warn!("nvrtcDestroyProgram: {e:?}");
        }
        out
    });
    match catch_unwind(run) {
        Ok(r) => r,
        Err(_) => Err(CudaError::NvrtcMissing(format!(
            "an NVRTC call panicked (missing symbol?); {HOW_TO_GET}"
        ))),
    }
}

fn compile_program(
    prog: sys::nvrtcProgram,
    opts: &[*const c_char],
    fail: &dyn Fn(String) -> CudaError,
) -> Result<RawOutput> {
    // SAFETY (all calls below): `prog` is a live program; buffers are sized
    // by the matching *Size call.
    let status = unsafe { sys::nvrtcCompileProgram(prog, opts.len() as i32, opts.as_ptr()) };
    let log = unsafe {
        let mut n = 0usize;
        sys::nvrtcGetProgramLogSize(prog, &mut n)
            .result()
            .map_err(|e| fail(format!("nvrtcGetProgramLogSize: {e:?}")))?;
        let mut buf: Vec<c_char> = vec![0; n.max(1)];
        sys::nvrtcGetProgramLog(prog, buf.as_mut_ptr())
            .result()
            .map_err(|e| fail(format!("nvrtcGetProgramLog: {e:?}")))?;
        text(&buf)
    };
    if let Err(e) = status.result() {
        if log.contains("libnvrtc-builtins") {
            return Err(CudaError::NvrtcMissing(format!(
                "{}; {HOW_TO_GET}",
                log.trim()
            )));
        }
        return Err(fail(format!("{e:?}\n{log}")));
    }
    let cubin = unsafe {
        let mut n = 0usize;
        sys::nvrtcGetCUBINSize(prog, &mut n)
            .result()
            .map_err(|e| fail(format!("nvrtcGetCUBINSize: {e:?}")))?;
        let mut buf: Vec<c_char> = vec![0; n];
        sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr())
            .result()
            .map_err(|e| fail(format!("nvrtcGetCUBIN: {e:?}")))?;
        buf.into_iter().map(|c| c as u8).collect::<Vec<u8>>()
    };
    if cubin.is_empty() {
        return Err(fail(format!(
            "NVRTC gave no CUBIN (is the arch real?)\n{log}"
        )));
    }
    let ptx = unsafe {
        let mut n = 0usize;
        match sys::nvrtcGetPTXSize(prog, &mut n).result() {
            Ok(()) => {
                let mut buf: Vec<c_char> = vec![0; n.max(1)];
                match sys::nvrtcGetPTX(prog, buf.as_mut_ptr()).result() {
                    Ok(()) => text(&buf),
                    Err(_) => String::new(),
                }
            }
            Err(_) => String::new(),
        }
    };
    Ok(RawOutput { cubin, ptx, log })
}
