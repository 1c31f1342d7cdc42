//! NVRTC compiles every kernel the lowering generates for the lowering
//! tests' programs (the public corpus's lowered cases, the copy kernels the
//! GPU runner adds) for sm_80 and sm_90, failing on NVRTC errors, spills
//! and register or shared-memory overruns (from the ptxas report).
//!
//! Without NVRTC the test prints a skip line and passes, unless
//! `JAXON_REQUIRE_NVRTC=1`.

use jaxon_backend_cuda::cuda_c::print_module;
use jaxon_backend_cuda::kir::Kernel;
use jaxon_backend_cuda::lower::{gpu::copy_kernel, lower};
use jaxon_backend_cuda::nvrtc::{self, Arch, Compiler, Request};
use jaxon_ir::{parse_closed_jaxpr, DType};

fn corpus_kernels() -> Vec<Kernel> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax-0.10.2-public.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(j) = case.get("jaxpr").and_then(|j| j.as_str()) else {
            continue;
        };
        // Consts are only needed for values; their types come from the text.
        let Ok(closed) = parse_closed_jaxpr(j, Vec::new()) else {
            continue;
        };
        if !closed.jaxpr.constvars.is_empty() {
            continue;
        }
        if let Ok(p) = lower(&closed) {
            for mut k in p.kernels {
                k.name = format!("c{i}_{}", k.name);
                out.push(k);
            }
        }
    }
    for d in [DType::F32, DType::F64, DType::I32, DType::Bool, DType::F16] {
        out.push(copy_kernel(d).expect("copy kernels verify"));
    }
    out
}

#[test]
fn every_generated_kernel_compiles_for_sm80_and_sm90() {
    if let Err(e) = nvrtc::nvrtc_version() {
        if std::env::var("JAXON_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
            panic!("JAXON_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
        }
        println!("lowering_nvrtc: skipped: NVRTC not found (run `cargo xtask nvrtc-path`): {e}");
        return;
    }
    let kernels = corpus_kernels();
    assert!(kernels.len() > 50, "only {} kernels", kernels.len());
    // One module per 64 kernels keeps the compile count small.
    let sources: Vec<(String, String)> = kernels
        .chunks(64)
        .enumerate()
        .map(|(i, ks)| {
            let refs: Vec<&Kernel> = ks.iter().collect();
            (format!("lowered_{i}"), print_module(&refs))
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
                for k in &kernels {
                    if let Some(res) = c.resources_of(&k.name) {
                        if res.spill_stores_bytes > 0 || res.spill_loads_bytes > 0 {
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
        "lowering_nvrtc: {} kernels in {} modules for sm_80 and sm_90",
        kernels.len(),
        sources.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
