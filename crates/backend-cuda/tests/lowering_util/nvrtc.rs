//! Compiling generated kernels with NVRTC for sm_80 and sm_90, failing on
//! NVRTC errors, spills and register or shared-memory overruns (from the
//! ptxas report). Without NVRTC the check prints a skip line, unless
//! `JAXON_REQUIRE_NVRTC=1`.

use jaxon_backend_cuda::cuda_c::print_module;
use jaxon_backend_cuda::kir::Kernel;
use jaxon_backend_cuda::nvrtc::{self, Arch, Compiler, Request};

/// Compiles `kernels` (64 to a module) and asserts that every one fits;
/// `allow_spill(name, bytes)` names the kernels allowed to spill.
pub fn nvrtc_check(label: &str, kernels: &[Kernel], allow_spill: impl Fn(&str, u32) -> bool) {
    if let Err(e) = nvrtc::nvrtc_version() {
        if std::env::var("JAXON_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
            panic!("JAXON_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
        }
        println!("{label}: skipped: NVRTC not found (run `cargo xtask nvrtc-path`): {e}");
        return;
    }
    let sources: Vec<(String, String)> = kernels
        .chunks(64)
        .enumerate()
        .map(|(i, ks)| {
            let refs: Vec<&Kernel> = ks.iter().collect();
            (format!("{label}_{i}"), print_module(&refs))
        })
        .collect();
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
    let results = compiler.compile_many(&reqs);
    let mut failures = Vec::new();
    for (req, r) in reqs.iter().zip(&results) {
        match r {
            Err(e) => failures.push(format!("{} {}: {e}", req.name, req.arch)),
            Ok(c) => {
                for k in kernels {
                    if let Some(res) = c.resources_of(&k.name) {
                        if (res.spill_stores_bytes > 0 || res.spill_loads_bytes > 0)
                            && !allow_spill(&k.name, res.spill_stores_bytes)
                        {
                            failures.push(format!("{} {}: spills {res:?}", k.name, req.arch));
                        }
                        if res.registers > 255 || res.shared_bytes > 48 * 1024 {
                            failures.push(format!("{} {}: over budget {res:?}", k.name, req.arch));
                        }
                    }
                }
            }
        }
    }
    println!(
        "{label}: {} kernels in {} modules for sm_80 and sm_90",
        kernels.len(),
        sources.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
