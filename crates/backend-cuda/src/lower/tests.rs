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

/// Loop carries the body computes afresh are exchanged with the loop's
/// carry buffers, not copied: a `fori_loop`-style scan (a counter and a
/// vector) has two carry updates without temporaries and no copy step in
/// its body; a body that permutes its carries keeps the copies; both give
/// the interpreter's values, for several lengths (0 and 1 included), and a
/// `while` with an exchanged carry too.
#[test]
fn fresh_carries_are_exchanged_not_copied() {
    use super::plan::CarryUpdate;
    let run = |t: &str, args: &[jaxon_ir::HostArray]| {
        let c = jaxon_ir::parse_closed_jaxpr(t, vec![]).unwrap();
        let prog = super::lower(&c).unwrap();
        let got = super::run::run_simulated(&prog, args).unwrap();
        let want = jaxon_ir::eval_closed_jaxpr(&c, args).unwrap();
        assert_eq!(got, want, "{t}");
        prog
    };
    let carries = |prog: &super::plan::Program| -> Vec<CarryUpdate> {
        prog.all_steps()
            .iter()
            .flat_map(|s| match s {
                Step::Scan { carry, .. } | Step::While { carry, .. } => carry.clone(),
                _ => Vec::new(),
            })
            .collect()
    };
    let x: Vec<f64> = (0..8).map(|i| i as f64 * 0.3 - 1.0).collect();
    let a = jaxon_ir::HostArray::from_f64(jaxon_ir::DType::F32, &[8], &x).unwrap();
    for n in [0, 1, 7] {
        let fori = format!(
            "{{ lambda ; a:f32[8]. let
    i:i32[] c:f32[8] = scan[
      jaxpr={{ lambda ; j:i32[] d:f32[8]. let
          k:i32[] = add j 1:i32[]
          e:f32[8] = mul d 0.999:f32[]
          f:f32[8] = sin d
          g:f32[8] = mul f 0.001:f32[]
          h:f32[8] = add e g
        in (k, h) }}
      length={n}
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] 0:i32[] a
  in (i, c) }}"
        );
        let prog = run(&fori, std::slice::from_ref(&a));
        let ups = carries(&prog);
        assert_eq!(ups.len(), 2);
        assert!(ups.iter().all(|u| u.temp.is_none()), "{ups:?}");
        let body_copies = prog.all_steps().iter().any(|s| match s {
            Step::Scan { body, .. } => body.iter().any(|b| matches!(b, Step::Copy { .. })),
            _ => false,
        });
        assert!(!body_copies, "the body copies");

        let permute = format!(
            "{{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] d:f32[8] ys:f32[{n},8] = scan[
      jaxpr={{ lambda ; e:f32[8] f:f32[8]. let
          g:f32[8] = add e 1.0:f32[]
        in (f, g, g) }}
      length={n}
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] a b
  in (c, d, ys) }}"
        );
        let prog = run(&permute, &[a.clone(), a.clone()]);
        let ups = carries(&prog);
        let kinds: Vec<bool> = ups.iter().map(|u| u.temp.is_some()).collect();
        assert_eq!(kinds, [true, false], "{ups:?}");
    }
    let while_ = "{ lambda ; a:f32[8]. let
    i:i32[] c:f32[8] = while[
      body_jaxpr={ lambda ; j:i32[] d:f32[8]. let
          k:i32[] = add j 1:i32[]
          e:f32[8] = mul d 1.5:f32[]
        in (k, e) }
      body_nconsts=0
      cond_jaxpr={ lambda ; t:i32[] u:f32[8]. let v:bool[] = lt t 5:i32[] in (v,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (i, c) }";
    let prog = run(while_, std::slice::from_ref(&a));
    assert!(carries(&prog).iter().all(|u| u.temp.is_none()));
}
