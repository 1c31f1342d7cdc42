//! Differential tests on `cuda-sim` against the interpreter of the
//! primitives lowered by `lower/for_loop.rs` and the markers `simplify`
//! removes: `for_loop` with literal bounds (a `Step::Scan`, no readback)
//! and with runtime bounds (a `Step::While`), forward, reversed and with
//! negative steps, zero and one trips, permuted carries, implicit
//! carries, consts, index dtypes; `reshard` and `sharding_constraint`
//! (identities on one device). Every case runs on random inputs and sizes
//! (0, 1 and odd included) and compares every result with the interpreter.

mod lowering_util;
use jaxon_backend_cuda::lower::plan::Step;
use jaxon_ir::{DType, HostArray};
use lowering_util::{check_with, parse, random, ty, Dist, Rng, Tol};

/// A `for_loop` whose body permutes three carries and mixes in the index
/// and a const: `(a, b, c) -> (b * s + i, c, a - b)`.
fn permuting_loop(t: &str, idt: &str, rev: bool, bounds: &str, bound_ins: &str) -> String {
    let rev = if rev { "True" } else { "False" };
    format!(
        "{{ lambda ; s:{t} a:{t} b:{t} c:{t}{bound_ins}. let
    x:{t} y:{t} z:{t} = for_loop[
      apply_reverse_transform={rev}
      body_jaxpr={{ lambda ; k:{t} i:{idt}[] p:{t} q:{t} r:{t}. let
          h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] i
          u:{t} = mul q k
          v:{t} = add u h
          w:{t} = sub p q
        in (v, r, w) }}
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=False
    ] s {bounds} a b c
  in (x, y, z) }}"
    )
}

fn f32_args(rng: &mut Rng, shape: &[usize], n: usize) -> Vec<HostArray> {
    (0..n)
        .map(|_| random(rng, DType::F32, shape, Dist::Uniform(2.0)))
        .collect()
}

fn scalar(dt: DType, v: i64) -> HostArray {
    HostArray::from_f64(dt, &[], &[v as f64]).expect("scalar")
}

/// The top-level steps of `text`'s lowering.
fn top_steps(text: &str) -> Vec<Step> {
    let closed = parse(text);
    jaxon_backend_cuda::lower::lower(&closed)
        .expect("lowers")
        .steps
}

#[test]
fn for_loop_with_literal_bounds_is_a_scan() {
    let mut rng = Rng::new(501);
    for (lo, hi, step, rev) in [
        (0, 5, 1, false),
        (1, 8, 2, false),
        (3, 3, 1, false),
        (4, 5, 1, false),
        (7, 0, 1, false),
        (9, -2, -3, true),
        (0, 7, 3, true),
        (5, 5, -1, true),
    ] {
        for shape in [vec![], vec![1], vec![7], vec![0, 3], vec![3, 5]] {
            let t = ty("f32", &shape);
            let bounds = format!("{lo}:i32[] {hi}:i32[] {step}:i32[] 0:i32[]");
            let text = permuting_loop(&t, "i32", rev, &bounds, "");
            let args = f32_args(&mut rng, &shape, 4);
            check_with(&text, &args, Tol::Rel(1e-6));
            let steps = top_steps(&text);
            assert!(
                steps.iter().any(|s| matches!(s, Step::Scan { .. })),
                "literal bounds lower to a scan"
            );
            assert!(
                !steps
                    .iter()
                    .any(|s| matches!(s, Step::While { .. } | Step::Cond { .. })),
                "literal bounds read nothing back"
            );
        }
    }
}

#[test]
fn for_loop_with_runtime_bounds_and_index_dtypes() {
    let mut rng = Rng::new(502);
    for (idt, dt) in [
        ("i32", DType::I32),
        ("i64", DType::I64),
        ("u32", DType::U32),
    ] {
        for (lo, hi, step, rev) in [
            (0, 6, 1, false),
            (2, 11, 3, false),
            (5, 1, 1, false),
            (2, 2, 1, false),
            (9, -2, -3, true),
            (1, 8, 2, true),
            (4, 9, -1, true),
        ] {
            if dt.is_unsigned_int() && (lo < 0 || hi < 0 || step < 0) {
                continue;
            }
            let rank = rng.range(0, 2) as usize;
            let shape = rng.shape(rank, 6);
            let t = ty("f32", &shape);
            let bounds = "l h st 0:IDT[]".replace("IDT", idt);
            let ins = format!(" l:{idt}[] h:{idt}[] st:{idt}[]");
            let text = permuting_loop(&t, idt, rev, &bounds, &ins);
            let mut args = f32_args(&mut rng, &shape, 4);
            args.extend([scalar(dt, lo), scalar(dt, hi), scalar(dt, step)]);
            check_with(&text, &args, Tol::Rel(1e-6));
            assert!(
                top_steps(&text)
                    .iter()
                    .any(|s| matches!(s, Step::While { .. })),
                "runtime bounds lower to a host-driven while"
            );
        }
    }
}

/// A runtime step the interpreter refuses (0, or not positive without
/// `apply_reverse_transform`) is the interpreter's error on the device too,
/// read back before the loop; the steps it accepts still run.
#[test]
fn for_loop_with_a_refused_runtime_step_fails_as_the_interpreter() {
    let mut rng = Rng::new(503);
    let t = ty("f32", &[3]);
    let bounds = "l h st 0:i32[]";
    let ins = " l:i32[] h:i32[] st:i32[]";
    for (step, rev, ok) in [
        (0, true, false),
        (0, false, false),
        (-2, false, false),
        (-2, true, true),
        (3, false, true),
    ] {
        let text = permuting_loop(&t, "i32", rev, bounds, ins);
        let mut args = f32_args(&mut rng, &[3], 4);
        args.extend([
            scalar(DType::I32, 1),
            scalar(DType::I32, 9),
            scalar(DType::I32, step),
        ]);
        if ok {
            check_with(&text, &args, Tol::Rel(1e-6));
            continue;
        }
        let closed = parse(&text);
        let want = jaxon_ir::eval_closed_jaxpr(&closed, &args)
            .expect_err("the interpreter refuses the step")
            .to_string();
        let got = lowering_util::run_lowered(&closed, &args)
            .expect_err("the lowering refuses the step")
            .to_string();
        assert!(
            want.contains("for_loop: step") && got.contains(&want),
            "step {step}, reverse {rev}: `{got}` does not carry the interpreter's `{want}`"
        );
    }
}

#[test]
fn for_loop_with_implicit_carries_and_nested_loops() {
    let mut rng = Rng::new(503);
    for n in [0usize, 1, 5] {
        // One implicit carry (a counter), a nested for_loop with runtime
        // bounds taken from the outer index, and an inner literal loop.
        let text = format!(
            "{{ lambda ; a:f32[{n}] b:i32[]. let
    c:i32[] d:f32[{n}] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={{ lambda ; m:i32[] i:i64[] x:f32[{n}]. let
          j:i32[] = convert_element_type[new_dtype=int32 weak_type=False] i
          y:f32[{n}] = for_loop[
            apply_reverse_transform=False
            body_jaxpr={{ lambda ; e:i32[] z:f32[{n}]. let
                f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
                g:f32[{n}] = mul z 0.5:f32[]
                o:f32[{n}] = add g f
              in (o,) }}
            body_nconsts=0
            nimplicit=0
            preserve_dimensions=False
          ] 0:i32[] j 1:i32[] 0:i32[] x
          w:f32[{n}] = for_loop[
            apply_reverse_transform=False
            body_jaxpr={{ lambda ; e:i32[] z:f32[{n}]. let
                o:f32[{n}] = sin z
              in (o,) }}
            body_nconsts=0
            nimplicit=0
            preserve_dimensions=False
          ] 0:i32[] 2:i32[] 1:i32[] 0:i32[] y
          q:i32[] = add m j
        in (q, w) }}
      body_nconsts=0
      nimplicit=1
      preserve_dimensions=False
    ] b 1:i64[] 6:i64[] 1:i64[] 0:i64[] a
  in (c, d) }}"
        );
        let a = random(&mut rng, DType::F32, &[n], Dist::Uniform(2.0));
        check_with(
            &text,
            &[a, scalar(DType::I32, rng.range(-5, 5))],
            Tol::Rel(1e-5),
        );
    }
}

#[test]
fn sharding_markers_are_identities() {
    let mut rng = Rng::new(504);
    for shape in [vec![], vec![1], vec![0, 2], vec![5, 3]] {
        let t = ty("f32", &shape);
        let text = format!(
            "{{ lambda ; a:{t}. let
    b:{t} = reshard a
    c:{t} = sharding_constraint[context_mesh=Mesh() layout=None sharding=NamedSharding(mesh=Mesh('x': 2, axis_types=(Auto,)), spec=P(), memory_kind=device) unconstrained_dims=frozenset({{}})] b
    d:{t} = sin c
  in (b, c, d) }}"
        );
        let a = random(&mut rng, DType::F32, &shape, Dist::Uniform(3.0));
        check_with(&text, &[a], Tol::Ulp(2));
    }
}

/// [`lowering_util::check_state_closed`] on `text` with array indices.
fn check_state(text: &str, args: &[HostArray]) {
    lowering_util::check_state_closed(&lowering_util::with_array_indices(parse(text)), args, text);
}

/// Random arguments for `text`'s inputs (refs as their arrays); integer
/// inputs in `-r..=r`, which for indices reaches past both ends.
fn state_args(text: &str, rng: &mut Rng, r: f64) -> Vec<HostArray> {
    let closed = lowering_util::with_array_indices(parse(text));
    closed
        .jaxpr
        .in_avals()
        .iter()
        .map(|a| {
            let arr = a.array();
            let shape = arr.static_sizes().expect("static");
            random(rng, arr.dtype, &shape, Dist::Uniform(r))
        })
        .collect()
}

#[test]
fn ref_state_reads_and_writes_in_place() {
    let cases = [
        // Several writes per ref, dynamic starts past both ends, reads
        // between writes, a value broadcast into a row.
        "{ lambda ; a:Ref<default>{f32[4,5]} b:f32[5] c:i32[] d:f32[2,5]. let
    e:f32[5] <- a[c,:]
    a[1,:] += b
    f:f32[2,5], a[1:3,:] <- a[1:3,:], d
    g:f32[5] = mul e 2.0:f32[]
    a[-1,:] += g
    h:f32[4,5] <- a[...]
    a[c:c+2,:] += d
  in (e, f, h) }",
        // Integer-array indices with duplicates: writes in order.
        "{ lambda ; a:Ref<default>{i32[6]} b:i32[3] c:i32[3] d:i32[]. let
    e:i32[3] <- a[b]
    a[b] += c
    f:i32[3], a[d:d+3] <- a[d:d+3], e
    g:i32[3], a[b] <- a[b], f
    h:i32[6] <- a[...]
  in (e, f, g, h) }",
        // f16 in place (rounded after every add), a column slice.
        "{ lambda ; a:Ref<default>{f16[3,4]} b:f16[]. let
    a[:,1:3] += b
    c:f16[3] <- a[:,2]
    a[:,1:3] += b
  in (c,) }",
        // A ref only read and one written twice.
        "{ lambda ; a:Ref<default>{f32[3]} b:Ref<default>{f32[3]} c:f32[3]. let
    d:f32[3] <- a[...]
    b[...] += d
    e:f32[3], b[...] <- b[...], c
    f:f32[3] <- b[...]
  in (e, f) }",
        // Non-adjacent array indices (their dims go first) and a 3-d ref.
        "{ lambda ; a:Ref<default>{f32[3,4,5]} i:i32[2] j:i32[2] v:f32[2,4]. let
    b:f32[2,4] <- a[i,:,j]
    a[i,:,j] += v
    c:f32[3,4,5] <- a[...]
  in (b, c) }",
        // Empty refs and views.
        "{ lambda ; a:Ref<default>{f32[0,3]} b:Ref<default>{f32[4,0]} c:f32[4,0]. let
    d:f32[0,3] <- a[...]
    e:f32[4,0], b[...] <- b[...], c
  in (d, e) }",
    ];
    let mut rng = Rng::new(505);
    for text in cases {
        for _ in 0..4 {
            let args = state_args(text, &mut rng, 7.0);
            check_state(text, &args);
        }
    }
}

#[test]
fn ref_state_on_random_shapes() {
    let mut rng = Rng::new(506);
    for _ in 0..12 {
        let n = rng.pick(&[1usize, 2, 5, 7]);
        let m = rng.pick(&[1usize, 3, 4]);
        let w = rng.range(1, n as i64) as usize;
        let (dt, r) = rng.pick(&[("f32", 4.0), ("f64", 4.0), ("i32", 9.0), ("u8", 9.0)]);
        let text = format!(
            "{{ lambda ; a:Ref<default>{{{dt}[{n},{m}]}} s:i32[] x:{dt}[{w},{m}] y:{dt}[{m}]. let
    b:{dt}[{w},{m}] <- a[s:s+{w},:]
    a[s:s+{w},:] += x
    c:{dt}[{w},{m}], a[0:{w},:] <- a[0:{w},:], b
    a[s,:] += y
    d:{dt}[{m}] <- a[-1,:]
  in (b, c, d) }}"
        );
        let args = state_args(&text, &mut rng, r);
        check_state(&text, &args);
    }
}

#[test]
fn refs_written_inside_loop_bodies_update_in_place() {
    let mut rng = Rng::new(507);
    let text = "{ lambda ; a:Ref<default>{f32[3]} xs:f32[4,3] k:f32[]. let
    c:f32[] ys:f32[4,3] = scan[
      _split_transpose=False
      jaxpr={ lambda ; r:Ref<default>{f32[3]} s:f32[] x:f32[3]. let
          r[...] += x
          y:f32[3] <- r[...]
          t:f32[] = reduce_sum[axes=(0,) out_sharding=None] y
          u:f32[] = add s t
        in (u, y) }
      length=4
      linear=(False, False, False)
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] a k xs
  in (c, ys) }";
    for _ in 0..3 {
        let args = state_args(text, &mut rng, 3.0);
        check_state(text, &args);
    }
    // A ref written in one branch of a runtime `cond`, then read.
    let text = "{ lambda ; a:Ref<default>{i32[5]} p:i32[] v:i32[2]. let
    x:i32[2] = cond[
      branches=(
        { lambda ; r:Ref<default>{i32[5]} w:i32[2]. let r[1:3] += w in (w,) }
        { lambda ; r:Ref<default>{i32[5]} w:i32[2]. let q:i32[2], r[3:5] <- r[3:5], w in (q,) }
      )
    ] p a v
    b:i32[5] <- a[...]
  in (x, b) }";
    for _ in 0..4 {
        let args = state_args(text, &mut rng, 3.0);
        check_state(text, &args);
    }
}
