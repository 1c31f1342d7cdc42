//! Backend behaviour beyond numerics: errors name the equation, the cache
//! reuses compiled programs (but never mixes up constants), arguments are
//! checked against the compiled types.

use crate::common;
use common::{parse, run};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{parse_closed_jaxpr, Backend, DType, HostArray};

fn compile_err(text: &str) -> String {
    match CpuBackend::new().compile(&parse(text)) {
        Ok(_) => panic!("compiled:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn name_is_cpu() {
    assert_eq!(CpuBackend::new().name(), "cpu");
}

#[test]
fn unsupported_primitives_are_errors_naming_the_equation() {
    let e = compile_err(
        "{ lambda ; a:i32[3]. let
    b:i32[3] = neg a
    c:i32[3] = cumlogsumexp[axis=0 reverse=False] b
  in (c,) }",
    );
    assert!(e.contains("cannot compile `cumlogsumexp`"), "{e}");
    assert!(e.contains("eqn 1"), "{e}");
    // Unsupported inside a fused group names that equation, not the root.
    let e = compile_err(
        "{ lambda ; a:i32[3]. let
    b:i32[3] = erf a
    c:i32[3] = mul b 2:i32[]
  in (c,) }",
    );
    assert!(
        e.contains("cannot compile `erf`") && e.contains("eqn 0"),
        "{e}"
    );
    // `program_id` outside a `pallas_call` kernel compiles (kernels use
    // the same pipeline) but fails when run, naming the primitive.
    let exe = CpuBackend::new()
        .compile(&parse(
            "{ lambda ; . let a:i32[] = program_id[axis=0]  in (a,) }",
        ))
        .unwrap();
    let e = exe.execute(&[]).unwrap_err().to_string();
    assert!(
        e.contains("program_id") && e.contains("outside a pallas_call kernel"),
        "{e}"
    );
}

#[test]
fn unsupported_primitives_are_the_unsupported_variant() {
    use jaxon_ir::IrError;
    let text = "{ lambda ; a:i32[3]. let
    b:i32[3] = cumlogsumexp[axis=0 reverse=False] a
  in (b,) }";
    let e = match CpuBackend::new().compile(&parse(text)) {
        Ok(_) => panic!("compiled:\n{text}"),
        Err(e) => e,
    };
    match &e {
        IrError::Unsupported {
            backend,
            primitive,
            why,
        } => {
            assert_eq!(backend, "cpu");
            assert_eq!(primitive, "cumlogsumexp");
            assert!(why.contains("i32") && why.contains("eqn 0"), "{why}");
        }
        other => panic!("expected IrError::Unsupported, got {other:?}"),
    }
    let m = e.to_string();
    assert!(
        m.starts_with("the cpu backend cannot compile `cumlogsumexp`: "),
        "{m}"
    );
    assert!(!m.contains("evaluation failed"), "{m}");
}

#[test]
fn cache_reuses_programs_and_keeps_constants_apart() {
    let cpu = CpuBackend::new();
    let text = "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add a b in (c,) }";
    let c1 = parse_closed_jaxpr(
        text,
        vec![HostArray::from_f64(DType::F32, &[3], &[1.0, 2.0, 3.0]).unwrap()],
    )
    .unwrap();
    let c2 = parse_closed_jaxpr(
        text,
        vec![HostArray::from_f64(DType::F32, &[3], &[10.0, 20.0, 30.0]).unwrap()],
    )
    .unwrap();
    let x = HostArray::from_f64(DType::F32, &[3], &[0.5, 0.25, -1.0]).unwrap();
    let r1 = run(&cpu, &c1, std::slice::from_ref(&x));
    let r2 = run(&cpu, &c2, std::slice::from_ref(&x));
    assert_eq!(cpu.cached_programs(), 1);
    assert_eq!(r1[0].to_f64_vec(), [1.5, 2.25, 2.0]);
    assert_eq!(r2[0].to_f64_vec(), [10.5, 20.25, 29.0]);
    // Another shape is another program.
    let c3 = parse("{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = add a b in (c,) }");
    let _ = cpu.compile(&c3).unwrap();
    assert_eq!(cpu.cached_programs(), 2);
    let _ = cpu.compile(&c3).unwrap();
    assert_eq!(cpu.cached_programs(), 2);
}

#[test]
fn arguments_are_checked_against_compiled_types() {
    let cpu = CpuBackend::new();
    let exe = cpu
        .compile(&parse(
            "{ lambda ; a:f32[3]. let b:f32[3] = neg a in (b,) }",
        ))
        .unwrap();
    let bad = cpu.to_device(&HostArray::zeros(DType::F32, &[4])).unwrap();
    assert!(exe.execute(&[bad]).is_err());
    let bad = cpu.to_device(&HostArray::zeros(DType::F64, &[3])).unwrap();
    assert!(exe.execute(&[bad]).is_err());
    assert!(exe.execute(&[]).is_err());
}

#[test]
fn buffers_from_another_backend_are_accepted() {
    let cpu = CpuBackend::new();
    let exe = cpu
        .compile(&parse(
            "{ lambda ; a:i32[2]. let b:i32[2] = mul a a in (b,) }",
        ))
        .unwrap();
    let x = HostArray::from_f64(DType::I32, &[2], &[3.0, -4.0]).unwrap();
    let buf = InterpreterBackend::new().to_device(&x).unwrap();
    let out = exe.execute(&[buf]).unwrap();
    assert_eq!(out[0].to_host().unwrap().to_f64_vec(), [9.0, 16.0]);
}

#[test]
fn large_kernels_split_across_threads() {
    use common::{assert_close, random_args, Dist, Tol};
    // Big enough to run on several threads; 3 threads split unevenly.
    let texts = [
        "{ lambda ; a:f32[601,599] b:f32[599]. let
    c:f32[601,599] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(601, 599) sharding=None] b
    d:f32[601,599] = mul a c
    e:f32[601,599] = max d 0.25:f32[]
  in (e,) }",
        "{ lambda ; a:f32[524309]. let b:f32[524309] = mul a a in (b,) }",
        "{ lambda ; a:f32[601,599]. let b:f32[601] = reduce_max[axes=(1,)] a in (b,) }",
        "{ lambda ; a:f32[601,599]. let b:f32[599] = reduce_max[axes=(0,)] a in (b,) }",
        "{ lambda ; a:i32[3,601,599]. let b:i32[3,599] = reduce_sum[axes=(1,) out_sharding=None] a in (b,) }",
    ];
    for text in texts {
        let closed = parse(text);
        let args = random_args(&closed, 7, Dist::Uniform(3.0));
        let want = run(&InterpreterBackend::new(), &closed, &args);
        for threads in [1, 2, 3] {
            let got = run(&CpuBackend::with_threads(threads), &closed, &args);
            assert_close(
                &got[0],
                &want[0],
                Tol::Exact,
                0.0,
                &format!("{threads} threads: {text}"),
            );
        }
    }
}

#[test]
fn large_gemm_uses_threads_and_matches() {
    use common::{assert_close, random_args, Dist, Tol};
    let closed = parse(
        "{ lambda ; a:f32[2,130,170] b:f32[2,170,90]. let
    c:f32[2,130,90] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=float32] a b
  in (c,) }",
    );
    let args = random_args(&closed, 3, Dist::Uniform(1.0));
    let want = run(&InterpreterBackend::new(), &closed, &args);
    for threads in [1, 2] {
        let got = run(&CpuBackend::with_threads(threads), &closed, &args);
        assert_close(&got[0], &want[0], Tol::Rel(1e-5), 1.0, "gemm");
    }
}

#[test]
fn fma_contraction_is_opt_in_and_single_rounding() {
    use common::{random_args, Dist};
    use jaxon_ir::Storage;
    let closed = parse(
        "{ lambda ; a:f32[37] b:f32[37] c:f32[37]. let
    d:f32[37] = mul a b
    e:f32[37] = add d c
    f:f32[37] = mul a c
    g:f32[37] = sub f b
    h:f32[37] = mul b b
    i:f32[37] = sub a h
    j:f32[37] = mul a a
    k:f32[37] = add j j
  in (e, g, i, k) }",
    );
    let args = random_args(&closed, 11, Dist::Uniform(3.0));
    let v = |k: usize| match args[k].data() {
        Storage::F32(v) => v.clone(),
        _ => unreachable!(),
    };
    let (a, b, c) = (v(0), v(1), v(2));
    let got = run(
        &CpuBackend::new().with_fma_contraction(true),
        &closed,
        &args,
    );
    let f32s = |h: &HostArray| match h.data() {
        Storage::F32(v) => v.clone(),
        _ => unreachable!(),
    };
    for i in 0..37 {
        assert_eq!(
            f32s(&got[0])[i].to_bits(),
            a[i].mul_add(b[i], c[i]).to_bits()
        );
        assert_eq!(
            f32s(&got[1])[i].to_bits(),
            a[i].mul_add(c[i], -b[i]).to_bits()
        );
        assert_eq!(
            f32s(&got[2])[i].to_bits(),
            (-b[i]).mul_add(b[i], a[i]).to_bits()
        );
        // A product used twice is not contracted.
        assert_eq!(f32s(&got[3])[i], a[i] * a[i] + a[i] * a[i]);
    }
    // Off by default: two roundings, like the interpreter.
    let plain = run(&CpuBackend::new(), &closed, &args);
    let want = run(&InterpreterBackend::new(), &closed, &args);
    assert_eq!(plain, want);
    // The data is such that one rounding and two differ somewhere.
    assert_ne!(plain[0], got[0]);
}
