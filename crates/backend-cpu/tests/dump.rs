//! `JAXON_DUMP=dir` writes the jaxpr, the fusion and memory plans (of
//! nested jaxprs too) and the CLIF and machine code of each compiled
//! function (its own test binary: it sets a process variable).

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
    d:f32[6] = cumsum[axis=0 reverse=False] c
    _:i32[] e:f32[6] = while[
      body_jaxpr={ lambda ; f:i32[] g:f32[6]. let
          h:i32[] = add f 1:i32[]
          i:f32[6] = mul g 0.5:f32[]
        in (h, i) }
      body_nconsts=0
      cond_jaxpr={ lambda ; j:i32[] k:f32[6]. let l:bool[] = lt j 3:i32[] in (l,) }
      cond_nconsts=0
    ] 0:i32[] d
  in (e,) }",
    );
    CpuBackend::new().compile(&c).expect("compiles");
    // A product whose bias and relu fuse into the GEMM's stores, dumped
    // into a directory of its own.
    let epi_dir = dir.join("epilogue");
    std::env::set_var("JAXON_DUMP", &epi_dir);
    let e = parse(
        "{ lambda ; a:f32[8,5] b:f32[5,9] c:f32[9]. let
    d:f32[8,9] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[1,9] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 9) sharding=None] c
    f:f32[8,9] = add d e
    g:f32[8,9] = max f 0.0:f32[]
  in (g,) }",
    );
    CpuBackend::new().compile(&e).expect("compiles");
    std::env::remove_var("JAXON_DUMP");
    let epi_plan = std::fs::read_dir(&epi_dir)
        .expect("epilogue dump dir exists")
        .map(|e| e.expect("entry").path())
        .find(|p| p.to_string_lossy().ends_with(".plan.txt"))
        .map(|p| std::fs::read_to_string(p).expect("readable"))
        .expect("an epilogue plan");
    assert!(
        epi_plan.contains("gemm epilogues: 1")
            && epi_plan.contains("g0 dot_general + g1 epilogue: bias Some(2), relu true"),
        "{epi_plan}"
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dump dir exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
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
    // The top level: the reduction, the cumsum, the loop (with scratch);
    // the loop's cond and body have their own plans.
    assert!(plan.contains("fusion plan: 3 groups"), "{plan}");
    assert!(
        plan.contains("reduce_sum") && plan.contains("while"),
        "{plan}"
    );
    assert!(plan.contains("memory plan: arena"), "{plan}");
    assert!(plan.contains("scratch(g2)"), "{plan}");
    assert!(plan.contains("== program/g2.body"), "{plan}");
    assert!(plan.contains("== program/g2.cond"), "{plan}");
    let clif = read(".clif");
    assert!(
        clif.contains("function") && clif.contains("f32x4"),
        "{clif}"
    );
    assert!(clif.contains("; program function"), "{clif}");
    assert!(
        clif.contains("; machine code") && clif.contains("ret"),
        "{clif}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
