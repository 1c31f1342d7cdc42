//! `JAXON_DUMP`: compiling KIR kernels writes `<name>.kir`, `<name>.cu`
//! and `<name>.nvrtc.log` into the folder, and a failing compile still
//! writes its source. Its own test binary, since it sets the variable for
//! the whole process.

use jaxon_backend_cuda::kir::{Expr, KernelBuilder};
use jaxon_backend_cuda::nvrtc::{self, Arch, Compiler};
use jaxon_ir::DType;

#[test]
fn dump_writes_kir_source_and_log() {
    if let Err(e) = nvrtc::nvrtc_version() {
        if std::env::var("JAXON_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
            panic!("JAXON_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
        }
        println!(
            "skipped: NVRTC not found (run `cargo xtask nvrtc-path` and put it on LD_LIBRARY_PATH)"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("jaxon-dump-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("JAXON_DUMP", &dir);
    let mut k = KernelBuilder::new("dumped", 64);
    let y = k.global("y", DType::F32, true);
    k.store(y.into(), Expr::thread_x(), vec![Expr::f32(1.5)], None);
    let kernel = k.finish().expect("verifies");
    let c = Compiler::new(None);
    c.compile_kernels(&[&kernel], Arch::SM80)
        .unwrap_or_else(|e| panic!("{e}"));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    assert!(read("dumped.kir").contains("kernel dumped("));
    assert!(read("dumped.cu").contains("__launch_bounds__(64) dumped("));
    assert!(read("dumped.nvrtc.log").contains("Used"));
    let err = c
        .compile("this is not C", Arch::SM80, "broken")
        .expect_err("fails");
    assert!(err.to_string().contains("broken"));
    assert_eq!(read("broken.cu"), "this is not C");
    assert!(read("broken.nvrtc.log").contains("error"));
    std::env::remove_var("JAXON_DUMP");
    let _ = std::fs::remove_dir_all(&dir);
}
