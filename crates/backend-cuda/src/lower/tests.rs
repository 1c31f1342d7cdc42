//! Unit tests of the lowering (the differential tests live in `tests/`).

use super::plan::Step;

/// A reversal under a reshape is not fused through the reshape's flat map
/// (the planner refuses that edge; `fused::maps_are_sound` guards it too)
/// and gives the interpreter's values.
#[test]
fn reversal_under_a_flat_map_is_not_fused() {
    let t = "{ lambda ; a:f32[5,7]. let
    h:f32[5,7] = rev[dimensions=(0,)] a
    i:f32[35] = reshape[dimensions=None new_sizes=(35,) sharding=None] h
    j:f32[13] = slice[limit_indices=(30,) start_indices=(5,) strides=(2,)] i
  in (j,) }";
    let c = jaxon_ir::parse_closed_jaxpr(t, vec![]).unwrap();
    let prog = super::lower(&c).unwrap();
    let launches = prog
        .all_steps()
        .iter()
        .filter(|s| matches!(s, Step::Launch { .. }))
        .count();
    assert!(launches >= 2, "the reversal was fused under a flat map");
    let x: Vec<f64> = (0..35).map(|i| i as f64 * 0.5 - 3.0).collect();
    let a = jaxon_ir::HostArray::from_f64(jaxon_ir::DType::F32, &[5, 7], &x).unwrap();
    let got = super::run::run_simulated(&prog, std::slice::from_ref(&a)).unwrap();
    let want = jaxon_ir::eval_closed_jaxpr(&c, &[a]).unwrap();
    assert_eq!(got, want);
}
