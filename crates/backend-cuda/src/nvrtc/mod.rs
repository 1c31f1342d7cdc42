//! NVRTC compilation of printed CUDA C to CUBIN, with an in-memory and an
//! on-disk cache, parallel batch compiles and `JAXON_DUMP` dumps.
//!
//! - [`compile`] compiles one source for a real architecture (`sm_80`,
//!   `sm_90`: a CUBIN, no driver JIT) with [`options`], and parses ptxas's
//!   resource report into [`KernelResources`] per kernel.
//! - [`compile_kernels`] verifies and prints KIR kernels, then compiles them.
//! - [`compile_many`] serves cache hits and compiles the misses in parallel.
//! - Caches: a [`Compiler`] holds a bounded memory cache (LRU,
//!   `JAXON_CUDA_KERNEL_CACHE_SIZE` modules) and a disk folder
//!   ([`cache::default_dir`]: `$JAXON_CACHE_DIR`, `$XDG_CACHE_HOME/jaxon/kernels`
//!   or `~/.cache/jaxon/kernels`); the free functions use
//!   [`Compiler::global`]. Keys hash the source, options, arch and NVRTC's
//!   version ([`cache::key`]).
//! - `JAXON_DUMP=dir` writes `<name>.kir`, `<name>.cu` and
//!   `<name>.nvrtc.log` there (the source always, even when NVRTC fails).
//!
//! Invariants: without NVRTC every entry point returns
//! [`CudaError::NvrtcMissing`] saying how to get it, never panics; a failed
//! compile is [`CudaError::Compile`] naming the kernel, with NVRTC's log;
//! cache problems are misses or warnings, never errors.

pub mod cache;
mod ffi;
pub mod resources;

pub use resources::{parse_ptxas_log, KernelResources};

use crate::error::{CudaError, Result};
use crate::kir::{verify, Kernel};
use jaxon_ir::lru::{self, Lru};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A real GPU architecture, `sm_<N>` (compute capability `N / 10`.`N % 10`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch(pub u32);

impl Arch {
    /// Ampere (A100).
    pub const SM80: Arch = Arch(80);
    /// Hopper (H100, H200).
    pub const SM90: Arch = Arch(90);
    /// The oldest architecture the printed C supports (bf16 conversions,
    /// tf32 `mma`).
    pub const MIN: Arch = Arch::SM80;

    /// The architecture of a compute capability.
    pub fn from_compute_capability(major: u32, minor: u32) -> Arch {
        Arch(major * 10 + minor)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.0)
    }
}

/// Where a [`Compiled`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// NVRTC compiled it now.
    Nvrtc,
    /// The compiler's memory cache.
    Memory,
    /// The disk cache.
    Disk,
}

/// A compiled module.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    /// The CUBIN, for `cuModuleLoadData`.
    pub cubin: Vec<u8>,
    /// The PTX NVRTC generated on the way (for inspection).
    pub ptx: String,
    /// NVRTC's log, with ptxas's resource report.
    pub log: String,
    /// Each entry function's resources, in the log's order. Empty when
    /// ptxas did not run: with a CUDA driver present, NVRTC 13 serves a
    /// CUBIN it built before (in any process) from the driver's compute
    /// cache without a report (`CUDA_CACHE_DISABLE=1` turns that cache
    /// off). Our own disk cache keeps the first compile's report.
    pub resources: Vec<(String, KernelResources)>,
    /// The architecture compiled for.
    pub arch: Arch,
    /// The cache key.
    pub key: u128,
    /// Where this came from.
    pub origin: Origin,
}

impl Compiled {
    /// The resources of the kernel named `name`.
    pub fn resources_of(&self, name: &str) -> Option<&KernelResources> {
        self.resources
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r)
    }
}

/// One compile of a batch.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The CUDA C source.
    pub source: &'a str,
    /// The architecture.
    pub arch: Arch,
    /// The name errors and dumps use.
    pub name: &'a str,
}

/// NVRTC's options for `arch`: a real architecture (CUBIN), every function
/// a device function, no contraction of `a * b + c` into FMA (KIR rounds
/// each operation), ptxas's resource report in the log.
pub fn options(arch: Arch) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "-default-device".into(),
        "--std=c++17".into(),
        "--fmad=false".into(),
        "--ptxas-options=-v".into(),
    ]
}

/// NVRTC's version, `(major, minor)`, or why NVRTC is unavailable.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    ffi::version()
}

/// The `JAXON_DUMP` folder, if set.
fn dump_dir() -> Option<PathBuf> {
    std::env::var_os("JAXON_DUMP")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Writes `<name><ext>` into the dump folder, if one is set; failures warn.
fn dump(name: &str, ext: &str, text: &str) {
    let Some(dir) = dump_dir() else { return };
    let file: String = name
        .chars()
        .map(|c| if c == '/' || c == '\0' { '_' } else { c })
        .collect();
    let path = dir.join(format!("{file}{ext}"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
        tracing::warn!("JAXON_DUMP: could not write {}: {e}", path.display());
    }
}

/// Modules a compiler's memory cache keeps unless configured otherwise
/// (`JAXON_CUDA_KERNEL_CACHE_SIZE`).
pub const DEFAULT_MEMORY_CACHE_SIZE: usize = 4096;

/// A compiler: NVRTC with a bounded memory cache (least recently used
/// out) and an optional disk cache.
pub struct Compiler {
    memory: Mutex<Lru<u128, Arc<Compiled>>>,
    disk: Option<PathBuf>,
}

impl Compiler {
    /// A compiler with an empty memory cache and `disk` as its disk cache
    /// (`None`: no disk cache). The memory cache keeps
    /// `JAXON_CUDA_KERNEL_CACHE_SIZE` modules, else
    /// [`DEFAULT_MEMORY_CACHE_SIZE`].
    pub fn new(disk: Option<PathBuf>) -> Compiler {
        let limit = lru::limit_from_env("JAXON_CUDA_KERNEL_CACHE_SIZE", DEFAULT_MEMORY_CACHE_SIZE);
        Compiler {
            memory: Mutex::new(Lru::new(limit)),
            disk,
        }
    }

    /// This compiler with a memory cache of at most `limit` modules (at
    /// least 1).
    pub fn with_memory_limit(self, limit: usize) -> Compiler {
        self.memory_cache().set_limit(limit);
        self
    }

    fn memory_cache(&self) -> std::sync::MutexGuard<'_, Lru<u128, Arc<Compiled>>> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many modules the memory cache holds.
    pub fn memory_len(&self) -> usize {
        self.memory_cache().len()
    }

    /// Empties the memory cache (the disk cache stays): what
    /// `jaxon::clear_caches()` does to the `cuda` backend's compiler.
    pub fn clear_memory(&self) {
        self.memory_cache().clear();
    }

    /// A compiler with the default disk cache ([`cache::default_dir`]).
    pub fn from_env() -> Compiler {
        Compiler::new(cache::default_dir())
    }

    /// The process-wide compiler the free functions use.
    pub fn global() -> &'static Compiler {
        static GLOBAL: OnceLock<Compiler> = OnceLock::new();
        GLOBAL.get_or_init(Compiler::from_env)
    }

    /// The disk cache folder.
    pub fn disk_dir(&self) -> Option<&Path> {
        self.disk.as_deref()
    }

    fn memory_get(&self, key: u128) -> Option<Compiled> {
        self.memory_cache().get(&key).map(|c| Compiled {
            origin: Origin::Memory,
            ..(*c).clone()
        })
    }

    fn memory_put(&self, c: &Compiled) {
        self.memory_cache().insert(c.key, Arc::new(c.clone()));
    }

    /// A cache hit (memory, then disk), if any.
    fn lookup(&self, key: u128, arch: Arch) -> Option<Compiled> {
        if let Some(c) = self.memory_get(key) {
            return Some(c);
        }
        let e = cache::read(self.disk.as_deref()?, key)?;
        let c = Compiled {
            resources: parse_ptxas_log(&e.log),
            cubin: e.cubin,
            ptx: e.ptx,
            log: e.log,
            arch,
            key,
            origin: Origin::Disk,
        };
        self.memory_put(&c);
        Some(c)
    }

    /// Compiles a miss with NVRTC and fills both caches.
    fn compile_miss(&self, req: &Request<'_>, key: u128) -> Result<Compiled> {
        let start = std::time::Instant::now();
        let raw = ffi::compile_raw(req.source, req.name, &options(req.arch))?;
        tracing::debug!(
            "NVRTC compiled `{}` for {} in {:.3}s",
            req.name,
            req.arch,
            start.elapsed().as_secs_f64()
        );
        let c = Compiled {
            resources: parse_ptxas_log(&raw.log),
            cubin: raw.cubin,
            ptx: raw.ptx,
            log: raw.log,
            arch: req.arch,
            key,
            origin: Origin::Nvrtc,
        };
        self.memory_put(&c);
        if let Some(dir) = &self.disk {
            let entry = cache::Entry {
                cubin: c.cubin.clone(),
                ptx: c.ptx.clone(),
                log: c.log.clone(),
            };
            cache::write(dir, key, &entry);
        }
        Ok(c)
    }

    /// The cache key of a request, checking the architecture and NVRTC.
    fn key_of(req: &Request<'_>) -> Result<u128> {
        if req.arch < Arch::MIN {
            return Err(CudaError::Compile {
                kernel: req.name.to_string(),
                log: format!(
                    "{} is not supported: jaxon's CUDA C needs {} or newer",
                    req.arch,
                    Arch::MIN
                ),
            });
        }
        let version = ffi::version()?;
        Ok(cache::key(
            req.source,
            &options(req.arch),
            &req.arch.to_string(),
            version,
        ))
    }

    /// Writes a request's dumps given its outcome.
    fn dump_outcome(req: &Request<'_>, outcome: &Result<Compiled>) {
        if dump_dir().is_none() {
            return;
        }
        dump(req.name, ".cu", req.source);
        match outcome {
            Ok(c) => dump(req.name, ".nvrtc.log", &c.log),
            Err(e) => dump(req.name, ".nvrtc.log", &e.to_string()),
        }
    }

    /// Compiles one source (or takes it from a cache).
    pub fn compile(&self, source: &str, arch: Arch, name: &str) -> Result<Compiled> {
        let req = Request { source, arch, name };
        let out = Self::key_of(&req).and_then(|key| match self.lookup(key, arch) {
            Some(c) => Ok(c),
            None => self.compile_miss(&req, key),
        });
        Self::dump_outcome(&req, &out);
        out
    }

    /// Compiles a batch: cache hits at once, misses in parallel threads
    /// (identical requests compile once). Results are in request order.
    pub fn compile_many(&self, reqs: &[Request<'_>]) -> Vec<Result<Compiled>> {
        let mut results: Vec<Option<Result<Compiled>>> = Vec::with_capacity(reqs.len());
        // Misses: (request index, key), first occurrence of each key only.
        let mut misses: Vec<(usize, u128)> = Vec::new();
        let mut duplicates: Vec<(usize, usize)> = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            match Self::key_of(req) {
                Err(e) => results.push(Some(Err(e))),
                Ok(key) => match self.lookup(key, req.arch) {
                    Some(c) => results.push(Some(Ok(c))),
                    None => {
                        match misses.iter().find(|(_, k)| *k == key) {
                            Some(&(first, _)) => duplicates.push((i, first)),
                            None => misses.push((i, key)),
                        }
                        results.push(None);
                    }
                },
            }
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(misses.len());
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<(usize, Result<Compiled>)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(i, key)) = misses.get(j) else {
                        break;
                    };
                    let r = self.compile_miss(&reqs[i], key);
                    done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
                });
            }
        });
        for (i, r) in done.into_inner().unwrap_or_else(|e| e.into_inner()) {
            results[i] = Some(r);
        }
        for (i, first) in duplicates {
            results[i] = results[first].clone().map(|r| {
                r.map(|c| Compiled {
                    origin: Origin::Memory,
                    ..c
                })
            });
        }
        let out: Vec<Result<Compiled>> = results
            .into_iter()
            .zip(reqs)
            .map(|(r, req)| {
                r.unwrap_or_else(|| {
                    Err(CudaError::Compile {
                        kernel: req.name.to_string(),
                        log: "a compile thread did not finish".into(),
                    })
                })
            })
            .collect();
        for (req, r) in reqs.iter().zip(&out) {
            Self::dump_outcome(req, r);
        }
        out
    }

    /// Verifies and prints KIR kernels as one module and compiles it; the
    /// module is named after its kernels ([`module_name`]) in errors and
    /// dumps.
    pub fn compile_kernels(&self, kernels: &[&Kernel], arch: Arch) -> Result<Compiled> {
        let name = module_name(kernels);
        for k in kernels {
            dump(&k.name, ".kir", &k.to_string());
            verify::verify(k)?;
        }
        let source = crate::cuda_c::print_module(kernels);
        self.compile(&source, arch, &name)
    }
}

/// The name of a module of `kernels`: their names joined by `+`, or
/// `<first>+<N>_more` when that would be over 100 characters.
pub fn module_name(kernels: &[&Kernel]) -> String {
    if kernels.is_empty() {
        return "empty_module".to_string();
    }
    let all = kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect::<Vec<_>>()
        .join("+");
    // Dump file names must stay short.
    if all.len() <= 100 {
        all
    } else {
        format!("{}+{}_more", kernels[0].name, kernels.len() - 1)
    }
}

/// [`Compiler::compile`] on the global compiler.
pub fn compile(source: &str, arch: Arch, name_for_errors: &str) -> Result<Compiled> {
    Compiler::global().compile(source, arch, name_for_errors)
}

/// [`Compiler::compile_many`] on the global compiler.
pub fn compile_many(reqs: &[Request<'_>]) -> Vec<Result<Compiled>> {
    Compiler::global().compile_many(reqs)
}

/// [`Compiler::compile_kernels`] on the global compiler.
pub fn compile_kernels(kernels: &[&Kernel], arch: Arch) -> Result<Compiled> {
    Compiler::global().compile_kernels(kernels, arch)
}
