//! NVRTC compiles every printed KIR construct: the suite in
//! `common/suite.rs` for sm_80 and sm_90, failing on any NVRTC error, spill,
//! register or shared-memory overrun; and the compile caches (memory hit,
//! disk hit with identical bytes, corrupt entry recompiled).
//!
//! Without NVRTC the tests print a skip line and pass, unless
//! `JAXON_REQUIRE_NVRTC=1` (CI) makes a missing NVRTC a failure.

#[path = "common/suite.rs"]
mod suite;

use jaxon_backend_cuda::cuda_c::print_module;
use jaxon_backend_cuda::kir::Kernel;
use jaxon_backend_cuda::nvrtc::{self, cache, Arch, Compiler, Origin, Request};
use jaxon_backend_cuda::CudaError;

/// True when NVRTC can be used; otherwise prints the skip note (or panics
/// when `JAXON_REQUIRE_NVRTC=1`).
fn nvrtc_or_skip(test: &str) -> bool {
    match nvrtc::nvrtc_version() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("JAXON_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
                panic!("{test}: JAXON_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
            }
            println!(
                "{test}: skipped: NVRTC not found (run `cargo xtask nvrtc-path` and put it on LD_LIBRARY_PATH): {e}"
            );
            false
        }
    }
}

/// A temporary folder under the target dir, emptied first.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("jaxon-nvrtc-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const MAX_REGISTERS: u32 = 255;
const MAX_STATIC_SHARED: u32 = 48 * 1024;

#[test]
fn compile_all_suite_kernels_for_sm80_and_sm90() {
    if !nvrtc_or_skip("compile_all") {
        return;
    }
    let version = nvrtc::nvrtc_version().expect("checked above");
    let kernels = suite::all();
    let sources: Vec<(String, String)> = kernels
        .iter()
        .map(|k| (k.name.clone(), print_module(&[k])))
        .collect();
    // A fresh compiler with no disk cache: every request really compiles.
    let compiler = Compiler::new(None);
    let mut reqs = Vec::new();
    for arch in [Arch::SM80, Arch::SM90] {
        for (name, src) in &sources {
            reqs.push(Request {
                source: src,
                arch,
                name,
            });
        }
    }
    let start = std::time::Instant::now();
    let results = compiler.compile_many(&reqs);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "compile_all: NVRTC {}.{}: {} modules compiled in {secs:.1}s",
        version.0,
        version.1,
        reqs.len()
    );
    let mut failures = Vec::new();
    for (req, r) in reqs.iter().zip(&results) {
        match r {
            Err(e) => failures.push(format!("{} {}: {e}", req.name, req.arch)),
            Ok(c) => {
                assert_eq!(c.origin, Origin::Nvrtc);
                assert!(!c.cubin.is_empty());
                let Some(res) = c.resources_of(req.name) else {
                    failures.push(format!(
                        "{} {}: no ptxas report\n{}",
                        req.name, req.arch, c.log
                    ));
                    continue;
                };
                println!("  {} {}: {res:?}", req.name, req.arch);
                if res.spill_stores_bytes > 0 || res.spill_loads_bytes > 0 {
                    failures.push(format!("{} {}: spills: {res:?}", req.name, req.arch));
                }
                if res.registers > MAX_REGISTERS || res.shared_bytes > MAX_STATIC_SHARED {
                    failures.push(format!("{} {}: over budget: {res:?}", req.name, req.arch));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The PTX shows the constructs were lowered as intended.
    let ptx_of = |name: &str| {
        reqs.iter()
            .zip(&results)
            .find(|(q, _)| q.name == name && q.arch == Arch::SM80)
            .and_then(|(_, r)| r.as_ref().ok())
            .map(|c| c.ptx.clone())
            .unwrap_or_default()
    };
    let mem = ptx_of("suite_memory");
    assert!(mem.contains("ld.global.v4"), "no 16-byte vector load");
    assert!(mem.contains("st.global.v4"), "no 16-byte vector store");
    assert!(mem.contains("ld.shared.v4"), "no 16-byte shared load");
    let mma = ptx_of("suite_mma");
    assert!(mma.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    assert!(mma.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    assert!(mma.contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
    assert!(ptx_of("suite_shuffles").contains("shfl.sync.bfly"));
    assert!(ptx_of("suite_atomics").contains("atom.global.cas"));
}

#[test]
fn one_module_with_every_suite_kernel_compiles() {
    if !nvrtc_or_skip("one_module") {
        return;
    }
    let kernels = suite::all();
    let refs: Vec<&Kernel> = kernels.iter().collect();
    let c = Compiler::new(None)
        .compile_kernels(&refs, Arch::SM90)
        .unwrap_or_else(|e| panic!("{e}"));
    for k in &kernels {
        assert!(c.resources_of(&k.name).is_some(), "{} missing", k.name);
    }
}

#[test]
fn second_compile_is_a_memory_hit_then_disk_hit_then_corrupt_recompiles() {
    if !nvrtc_or_skip("cache") {
        return;
    }
    let dir = temp_dir("cache");
    let src = print_module(&[&suite::control()]);
    let first = Compiler::new(Some(dir.clone()));
    let a = first
        .compile(&src, Arch::SM80, "cache_test")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.origin, Origin::Nvrtc);
    let b = first.compile(&src, Arch::SM80, "cache_test").expect("hit");
    assert_eq!(b.origin, Origin::Memory);
    assert_eq!(a.cubin, b.cubin);

    // A fresh memory cache: the disk entry gives identical bytes.
    let second = Compiler::new(Some(dir.clone()));
    let c = second
        .compile(&src, Arch::SM80, "cache_test")
        .expect("disk hit");
    assert_eq!(c.origin, Origin::Disk);
    assert_eq!(c.cubin, a.cubin);
    assert_eq!(c.resources, a.resources);

    // A corrupt entry is a miss and is rewritten.
    let path = cache::entry_path(&dir, a.key);
    let mut bytes = std::fs::read(&path).expect("entry written");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&path, &bytes).expect("corrupt the entry");
    let third = Compiler::new(Some(dir.clone()));
    let d = third
        .compile(&src, Arch::SM80, "cache_test")
        .expect("recompiled");
    assert_eq!(d.origin, Origin::Nvrtc);
    assert_eq!(d.cubin, a.cubin);
    let fourth = Compiler::new(Some(dir.clone()));
    let e = fourth
        .compile(&src, Arch::SM80, "cache_test")
        .expect("disk hit");
    assert_eq!(e.origin, Origin::Disk);

    // An unwritable cache folder only warns.
    let file = dir.join("not-a-dir");
    std::fs::write(&file, b"x").expect("a file");
    let fifth = Compiler::new(Some(file));
    assert!(fifth.compile(&src, Arch::SM80, "cache_test").is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_errors_name_the_kernel_and_carry_the_log() {
    if !nvrtc_or_skip("errors") {
        return;
    }
    let c = Compiler::new(None);
    let err = c
        .compile(
            "extern \"C\" __global__ void k() { undefined_thing(); }",
            Arch::SM80,
            "broken_k",
        )
        .expect_err("must fail");
    match &err {
        CudaError::Compile { kernel, log } => {
            assert_eq!(kernel, "broken_k");
            assert!(log.contains("undefined_thing"), "{log}");
        }
        other => panic!("wrong error: {other}"),
    }
    let old = c
        .compile("", Arch(75), "old_arch")
        .expect_err("sm_75 refused");
    assert!(matches!(old, CudaError::Compile { .. }));
}

#[test]
fn compile_many_keeps_order_and_dedups() {
    if !nvrtc_or_skip("compile_many") {
        return;
    }
    let a = print_module(&[&suite::control()]);
    let b = "extern \"C\" __global__ void tiny(float* p) { p[0] = 1.0f; }".to_string();
    let c = Compiler::new(None);
    let reqs = [
        Request {
            source: &a,
            arch: Arch::SM80,
            name: "a",
        },
        Request {
            source: &b,
            arch: Arch::SM80,
            name: "b",
        },
        Request {
            source: &a,
            arch: Arch::SM80,
            name: "a_again",
        },
        Request {
            source: "bad",
            arch: Arch::SM80,
            name: "bad",
        },
    ];
    let r = c.compile_many(&reqs);
    assert_eq!(r.len(), 4);
    let ok = |i: usize| r[i].as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(ok(0).resources_of("suite_control").is_some());
    assert!(ok(1).resources_of("tiny").is_some());
    assert_eq!(ok(2).cubin, ok(0).cubin);
    assert!(matches!(&r[3], Err(CudaError::Compile { kernel, .. }) if kernel == "bad"));
}

#[test]
fn catalogue_kernels_compile_without_spills() {
    if !nvrtc_or_skip("catalogue_kernels_compile_without_spills") {
        return;
    }
    let compiler = Compiler::new(None);
    for case in jaxon_backend_cuda::catalog::cases(jaxon_backend_cuda::catalog::Size::Small, 1)
        .expect("catalogue")
    {
        for arch in [Arch::SM80, Arch::SM90] {
            let c = compiler
                .compile_kernels(&[&case.kernel], arch)
                .unwrap_or_else(|e| panic!("{}: {e}", case.kernel.name));
            let r = c
                .resources_of(&case.kernel.name)
                .unwrap_or_else(|| panic!("{}: no ptxas report", case.kernel.name));
            assert_eq!(
                (r.spill_stores_bytes, r.spill_loads_bytes),
                (0, 0),
                "{} spills on {arch:?}",
                case.kernel.name
            );
            assert!(r.registers <= 255, "{}: {r:?}", case.kernel.name);
        }
    }
}

#[test]
fn the_memory_cache_is_bounded_and_clears() {
    if !nvrtc_or_skip("memory_cache_bound") {
        return;
    }
    let kernels = suite::all();
    let sources: Vec<(String, String)> = kernels
        .iter()
        .take(3)
        .map(|k| (k.name.clone(), print_module(&[k])))
        .collect();
    assert_eq!(sources.len(), 3, "the suite has at least three kernels");
    let compiler = Compiler::new(None).with_memory_limit(2);
    let origin = |i: usize| {
        let (name, src) = &sources[i];
        compiler.compile(src, Arch::SM80, name).unwrap().origin
    };
    assert_eq!(origin(0), Origin::Nvrtc);
    assert_eq!(origin(1), Origin::Nvrtc);
    assert_eq!(origin(0), Origin::Memory, "a hit refreshes module 0");
    assert_eq!(origin(2), Origin::Nvrtc);
    assert_eq!(
        compiler.memory_len(),
        2,
        "module 1, the least recently used, is out"
    );
    assert_eq!(origin(0), Origin::Memory);
    assert_eq!(origin(1), Origin::Nvrtc, "evicted, so compiled again");
    compiler.clear_memory();
    assert_eq!(compiler.memory_len(), 0);
    assert_eq!(origin(2), Origin::Nvrtc, "cleared, so compiled again");
}
