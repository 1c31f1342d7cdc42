//! `JAXON_DUMP=dir` writes the jaxpr, the fusion plan and the CLIF of each
//! compiled function (its own test binary: it sets a process variable).

mod common;
use common::parse;
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::Backend;

#[test]
fn dump_writes_jaxpr_plan_and_clif() {
    let dir = std::env::temp_dir().join(format!("jaxon-dump-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("JAXON_DUMP", &dir);
    let c = parse(
        "{ lambda ; a:f32[6,5]. let
    b:f32[6,5] = tanh a
    c:f32[6] = reduce_sum[axes=(1,) out_sharding=None] b
  in (c,) }",
    );
    CpuBackend::new().compile(&c).expect("compiles");
    std::env::remove_var("JAXON_DUMP");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dump dir exists")
        .map(|e| e.expect("entry").path())
        .collect();
    let read = |suffix: &str| {
        let p = files
            .iter()
            .find(|p| p.to_string_lossy().ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix} in {files:?}"));
        std::fs::read_to_string(p).expect("readable")
    };
    assert!(read(".jaxpr.txt").contains("reduce_sum"));
    let plan = read(".plan.txt");
    assert!(plan.contains("fusion plan: 1 groups"), "{plan}");
    assert!(plan.contains("reduce_sum"), "{plan}");
    let clif = read(".clif");
    assert!(
        clif.contains("function") && clif.contains("f32x4"),
        "{clif}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
