//! Native control flow against the reference interpreter: nested loops,
//! `cond` inside `while`, `scan` with `xs`/`ys` (forward and reverse),
//! zero-trip loops, permuted and passed-through carries, clamped `cond`
//! indices, native steps (GEMM, cumsum) inside loop bodies, and results
//! that alias inputs or each other.

use crate::common;
use common::{check, parse, run, Dist, Tol};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;

#[test]
fn nested_while_and_scan() {
    // A while whose body runs a while (an inner counter reset each time).
    check(
        "{ lambda ; a:f32[5]. let
    b:i32[] c:f32[5] = while[
      body_jaxpr={ lambda ; d:i32[] e:f32[5]. let
          f:i32[] g:f32[5] = while[
            body_jaxpr={ lambda ; h:i32[] i:f32[5]. let
                j:i32[] = add h 1:i32[]
                k:f32[5] = mul i 0.75:f32[]
                l:f32[5] = add k 0.5:f32[]
              in (j, l) }
            body_nconsts=0
            cond_jaxpr={ lambda ; m:i32[] n:f32[5]. let
                o:bool[] = lt m 3:i32[]
              in (o,) }
            cond_nconsts=0
          ] 0:i32[] e
          p:i32[] = add d 1:i32[]
        in (p, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; q:i32[] r:f32[5]. let
          s:bool[] = lt q 4:i32[]
        in (s,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (c, b) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    // A scan over rows whose body scans over the row's elements
    // (cumulative products), both producing ys.
    for (outer, inner) in [("False", "True"), ("True", "False")] {
        check(
            &format!(
                "{{ lambda ; a:f32[3] xs:f32[4,3]. let
    b:f32[3] ys:f32[4,3] = scan[
      jaxpr={{ lambda ; c:f32[3] x:f32[3]. let
          d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c
          e:f32[] zs:f32[3] = scan[
            jaxpr={{ lambda ; f:f32[] g:f32[]. let
                h:f32[] = mul f g
                i:f32[] = add h 0.25:f32[]
              in (i, h) }}
            length=3
            num_carry=1
            num_consts=0
            reverse={inner}
            unroll=1
          ] d x
          j:f32[3] = add c zs
          k:f32[3] = mul j e
        in (k, zs) }}
      length=4
      num_carry=1
      num_consts=0
      reverse={outer}
      unroll=1
    ] a xs
  in (b, ys) }}"
            ),
            Dist::Uniform(1.0),
            Tol::Rel(1e-5),
        );
    }
}

#[test]
fn cond_inside_while_and_clamped_indices() {
    check(
        "{ lambda ; a:f32[4] w:f32[]. let
    b:i32[] c:f32[4] = while[
      body_jaxpr={ lambda ; k:f32[] d:i32[] e:f32[4]. let
          f:i32[] = rem d 3:i32[]
          g:f32[4] = cond[
            branches=(
              { lambda ; h:f32[] i:f32[4]. let j:f32[4] = mul i h in (j,) }
              { lambda ; l:f32[] m:f32[4]. let n:f32[4] = sub m l in (n,) }
              { lambda ; o:f32[] p:f32[4]. let q:f32[4] = neg p in (q,) }
            )
          ] f k e
          r:i32[] = add d 1:i32[]
        in (r, g) }
      body_nconsts=1
      cond_jaxpr={ lambda ; s:i32[] t:f32[4]. let
          u:bool[] = lt s 7:i32[]
        in (u,) }
      cond_nconsts=0
    ] w 0:i32[] a
  in (c, b) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    // Out-of-range indices clamp to the first and last branch; a branch
    // may return its operand or a literal.
    for idx in ["-3", "0", "1", "7"] {
        check(
            &format!(
                "{{ lambda ; a:f32[3]. let
    b:f32[3] c:f32[] = cond[
      branches=(
        {{ lambda ; d:f32[3]. let  in (d, 1.0:f32[]) }}
        {{ lambda ; e:f32[3]. let f:f32[3] = mul e 3.0:f32[] in (f, 2.0:f32[]) }}
      )
    ] {idx}:i32[] a
  in (b, c) }}"
            ),
            Dist::Uniform(2.0),
            Tol::Exact,
        );
    }
}

#[test]
fn zero_trip_loops_return_their_inits() {
    check(
        "{ lambda ; a:f32[3] n:i32[]. let
    b:i32[] c:f32[3] = while[
      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let
          f:i32[] = add d 1:i32[]
          g:f32[3] = exp e
        in (f, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; h:i32[] i:f32[3]. let
          j:bool[] = lt h -5:i32[]
        in (j,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (c, b) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    check(
        "{ lambda ; a:f32[3] xs:f32[0,3]. let
    b:f32[3] ys:f32[0,3] = scan[
      jaxpr={ lambda ; c:f32[3] x:f32[3]. let
          d:f32[3] = add c x
        in (d, d) }
      length=0
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a xs
  in (b, ys) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

#[test]
fn permuted_and_passed_through_carries() {
    // (g, h, k, m) -> (h, g, k + m, m): a swap (through temporaries), a
    // carry updated from a passed-through one, and a passthrough.
    check(
        "{ lambda ; a:f32[4] b:f32[4] c:f32[4] m:f32[4]. let
    _:i32[] d:f32[4] e:f32[4] f:f32[4] n:f32[4] = scan[
      jaxpr={ lambda ; i:i32[] g:f32[4] h:f32[4] k:f32[4] p:f32[4]. let
          j:i32[] = add i 1:i32[]
          l:f32[4] = add k p
        in (j, h, g, l, p) }
      length=5
      num_carry=5
      num_consts=0
      reverse=False
      unroll=1
    ] 0:i32[] a b c m
  in (d, e, f, n) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

#[test]
fn loop_bodies_with_native_steps() {
    // An RNN-like scan: GEMM and cumsum (trampolines) inside the body.
    check(
        "{ lambda ; w:f32[6,6] h:f32[2,6] xs:f32[5,2,6]. let
    a:f32[2,6] ys:f32[5,2,6] = scan[
      jaxpr={ lambda ; k:f32[6,6] c:f32[2,6] x:f32[2,6]. let
          d:f32[2,6] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] c k
          e:f32[2,6] = add d x
          f:f32[2,6] = cumsum[axis=1 reverse=False] e
          g:f32[2,6] = mul f 0.125:f32[]
        in (g, f) }
      length=5
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] w h xs
  in (a, ys) }",
        Dist::Uniform(1.0),
        Tol::Rel(1e-5),
    );
}

#[test]
fn results_alias_inputs_and_each_other_and_calls_reuse_the_arena() {
    let text = "{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] = mul a b
    d:f32[8] = cumsum[axis=0 reverse=False] c
    e:f32[8] = add d a
  in (e, a, e, d, 2.0:f32[]) }";
    let closed = parse(text);
    let cpu = CpuBackend::new();
    let interp = InterpreterBackend::new();
    for seed in 1..=4 {
        let args = common::random_args(&closed, seed, Dist::Uniform(2.0));
        let got = run(&cpu, &closed, &args);
        let want = run(&interp, &closed, &args);
        assert_eq!(got, want, "seed {seed}");
    }
    assert_eq!(cpu.cached_programs(), 1);
}

#[test]
fn catalyst_for_loop_with_runtime_bounds() {
    // (lo, hi, step, reverse transform): forward, strided, counting down,
    // empty both ways.
    for (lo, hi, step, rev) in [
        (0, 10, 1, "False"),
        (3, 17, 4, "False"),
        (9, -2, -3, "True"),
        (5, 5, 1, "True"),
        (4, 1, 1, "False"),
    ] {
        check(
            &format!(
                "{{ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] d:i32[] = for_loop[
      apply_reverse_transform={rev}
      body_jaxpr={{ lambda ; k:f32[3] i:i64[] g:f32[3] n:i32[]. let
          h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] i
          j:f32[3] = mul g 0.5:f32[]
          l:f32[3] = mul k h
          m:f32[3] = add j l
          o:i32[] = add n 1:i32[]
        in (m, o) }}
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=True
    ] b {lo}:i64[] {hi}:i64[] {step}:i64[] 0:i64[] a 0:i32[]
  in (c, d) }}"
            ),
            Dist::Uniform(2.0),
            Tol::Exact,
        );
    }
}

/// A step the interpreter refuses (0, or not positive without the reverse
/// transform), literal or an argument, is its error on the CPU backend too
/// (the loop ran no iteration and returned its inits before).
#[test]
fn for_loop_with_a_refused_step_fails_as_the_interpreter() {
    use jaxon_ir::{Backend, HostArray};
    for (step, rev, literal) in [
        (0, "True", false),
        (0, "False", true),
        (-2, "False", false),
        (-2, "False", true),
    ] {
        let (ins, st) = if literal {
            (String::new(), format!("{step}:i64[]"))
        } else {
            (" st:i64[]".to_string(), "st".to_string())
        };
        let text = format!(
            "{{ lambda ; a:f32[3]{ins}. let
    c:f32[3] = for_loop[
      apply_reverse_transform={rev}
      body_jaxpr={{ lambda ; i:i64[] g:f32[3]. let
          j:f32[3] = mul g 0.5:f32[]
        in (j,) }}
      body_nconsts=0
      nimplicit=0
      preserve_dimensions=True
    ] 0:i64[] 9:i64[] {st} 0:i64[] a
  in (c,) }}"
        );
        let closed = parse(&text);
        let mut args =
            vec![HostArray::from_f64(jaxon_ir::DType::F32, &[3], &[1.0, 2.0, 3.0]).expect("array")];
        if !literal {
            args.push(
                HostArray::from_f64(jaxon_ir::DType::I64, &[], &[step as f64]).expect("array"),
            );
        }
        let want = jaxon_ir::eval_closed_jaxpr(&closed, &args)
            .expect_err("the interpreter refuses the step")
            .to_string();
        let cpu = CpuBackend::with_threads(1);
        let got = (|| {
            let exe = cpu.compile(&closed)?;
            let bufs = args
                .iter()
                .map(|a| cpu.to_device(a))
                .collect::<Result<Vec<_>, _>>()?;
            exe.execute(&bufs).map(|_| ())
        })()
        .expect_err("the CPU backend refuses the step")
        .to_string();
        assert!(
            want.contains("for_loop: step") && got.contains(&want),
            "step {step} (literal {literal}): `{got}` does not carry `{want}`"
        );
    }
}

#[test]
fn half_reductions_in_loop_bodies() {
    // f16/bf16 reductions accumulate in f32 and round once; inside a scan
    // body their results are a carry, a `ys` row written in place, and an
    // operand of later ops (planned at their declared size).
    check(
        "{ lambda ; a:f16[] xs:f16[5,7,9] b:bf16[7,9]. let
    c:f16[] ys:f16[5,7] zs:bf16[5] = scan[
      jaxpr={ lambda ; w:bf16[7,9] d:f16[] x:f16[7,9]. let
          e:f16[7] = reduce_sum[axes=(1,) out_sharding=None] x
          f:f16[] = reduce_max[axes=(0,) out_sharding=None] e
          g:f16[] = add d f
          h:bf16[7,9] = convert_element_type[new_dtype=bfloat16 weak_type=False] x
          i:bf16[7,9] = mul h w
          j:bf16[] = reduce_sum[axes=(0, 1) out_sharding=None] i
        in (g, e, j) }
      length=5
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] b a xs
    k:f16[] = reduce_sum[axes=(0, 1) out_sharding=None] ys
  in (c, ys, zs, k) }",
        Dist::Uniform(2.0),
        Tol::Rel(1e-2),
    );
}

#[test]
fn markers_are_identities_and_platform_index_picks_the_cpu_branch() {
    // `name`, `device_put` and `optimization_barrier` pass values through,
    // also inside a loop body; `platform_index` gives the index of the
    // entry naming the cpu (here 1, the only cpu entry; the interpreter
    // gives the same), and of the default entry when none does.
    check(
        "{ lambda ; a:f32[4] b:f32[4]. let
    c:f32[4] = name[name=hidden] a
    d:f32[4] e:f32[4] = device_put[
      copy_semantics=(ArrayCopySemantics.REUSE_INPUT, ArrayCopySemantics.REUSE_INPUT)
      devices=(None, None)
      srcs=(None, None)
    ] c b
    f:f32[4] g:f32[4] = optimization_barrier d e
    h:i32[] = platform_index[platforms=(('cuda', 'rocm'), ('cpu',), None)] 
    i:f32[4] = cond[
      branches=(
        { lambda ; j:f32[4] k:f32[4]. let l:f32[4] = mul j k in (l,) }
        { lambda ; m:f32[4] n:f32[4]. let o:f32[4] = sub m n in (o,) }
        { lambda ; p:f32[4] q:f32[4]. let r:f32[4] = add p q in (r,) }
      )
      branches_platforms=(('cuda', 'rocm'), ('cpu',), None)
    ] h f g
    s:i32[] = platform_index[platforms=(('mosaic',), None)] 
    t:i32[] u:f32[4] = while[
      body_jaxpr={ lambda ; v:i32[] w:f32[4]. let
          x:f32[4] = name[name=carry] w
          y:f32[4] = optimization_barrier x
          z:f32[4] = mul y 0.5:f32[]
          ba:i32[] = add v 1:i32[]
        in (ba, z) }
      body_nconsts=0
      cond_jaxpr={ lambda ; bb:i32[] bc:f32[4]. let
          bd:bool[] = lt bb 3:i32[]
        in (bd,) }
      cond_nconsts=0
    ] s i
  in (i, t, u) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
    let text = "{ lambda ; a:f32[2]. let
    b:i32[] = platform_index[platforms=(('cpu',), None)] 
    c:f32[2] = mul a 2.0:f32[]
  in (b, c) }";
    let closed = parse(text);
    let x = jaxon_ir::HostArray::from_f64(jaxon_ir::DType::F32, &[2], &[1.0, 2.0]).unwrap();
    for out in [
        run(&CpuBackend::new(), &closed, std::slice::from_ref(&x)),
        run(
            &InterpreterBackend::new(),
            &closed,
            std::slice::from_ref(&x),
        ),
    ] {
        assert_eq!(out[0].to_f64_vec(), vec![0.0]);
    }
}
