//! Diagnostic: compiles the catalogue on 16 threads at once and reports
//! which compiles came back without ptxas's resource report.
use jaxon_backend_cuda::{catalog, nvrtc};
fn main() {
    let cases = catalog::cases(catalog::Size::Small, 1).unwrap();
    let srcs: Vec<(String, String)> = cases
        .iter()
        .map(|c| {
            (
                c.kernel.name.clone(),
                jaxon_backend_cuda::cuda_c::print_kernel(&c.kernel),
            )
        })
        .collect();
    for round in 0..3 {
        let missing = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..16 {
                let (name, src) = &srcs[t % srcs.len()];
                let missing = &missing;
                s.spawn(move || {
                    let arch = if t % 2 == 0 {
                        nvrtc::Arch::SM80
                    } else {
                        nvrtc::Arch::SM90
                    };
                    let c = nvrtc::Compiler::new(None).compile(src, arch, name).unwrap();
                    if c.resources_of(name).is_none() {
                        missing.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        println!(
                            "round {round}: {name} {arch}: no report; log: {:?}",
                            &c.log[..c.log.len().min(200)]
                        );
                    }
                });
            }
        });
        println!(
            "round {round}: {} of 16 without a report",
            missing.into_inner()
        );
    }
}
