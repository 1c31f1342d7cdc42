//! The native steps of dynamic-shape programs: each first-order primitive
//! outside a fused kernel (strided copies, axis folds, the backend's native
//! ops built for runtime shapes) matches the interpreter bit for bit on
//! random inputs of several sizes (0, 1 and non-multiples of 4 included),
//! and no compiled plan holds a step other than a kernel, a GEMM, a native
//! step or a nested body.

use crate::common;
use common::values;
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{eval_closed_jaxpr, parse_closed_jaxpr, Backend, ClosedJaxpr, DType, HostArray};

/// An input: dtype and shape, a `None` size being the dynamic size `n`.
type Spec = (DType, &'static [Option<usize>]);

fn input(spec: &Spec, n: usize, seed: u64) -> HostArray {
    let shape: Vec<usize> = spec.1.iter().map(|d| d.unwrap_or(n)).collect();
    let len: usize = shape.iter().product();
    let v = values(len, seed);
    let v: Vec<f64> = match spec.0 {
        d if d.is_float() => v,
        DType::Bool => v.iter().map(|x| (*x > 0.0) as u8 as f64).collect(),
        // Small integers, repeats included (ties for argmax and sort).
        _ => v.iter().map(|x| (x * 3.0).round().abs()).collect(),
    };
    HostArray::from_f64(spec.0, &shape, &v).unwrap()
}

/// Bit-level equality of two results (NaNs equal).
fn same(g: &HostArray, w: &HostArray) -> bool {
    g.dtype() == w.dtype()
        && g.shape() == w.shape()
        && g.to_f64_vec()
            .iter()
            .zip(w.to_f64_vec())
            .all(|(a, b)| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits())
}

/// Every line of a plan names a native kind of step.
fn assert_all_native(plan: &str) {
    for line in plan.lines() {
        let l = line.trim_start();
        assert!(
            l.starts_with("flat eqns ")
                || l.starts_with("scalar eqns ")
                || l.starts_with("gemm eqn ")
                || l.starts_with("native eqn ")
                || l.starts_with("nested eqn "),
            "a step that is not native: {line:?} in\n{plan}"
        );
    }
}

/// Compiles `text` once and runs it for every `n` in `sizes` (input 0 is
/// `n`, the rest follow `specs`), comparing with the interpreter bit for
/// bit; returns the plan.
fn check(text: &str, specs: &[Spec], sizes: &[usize]) -> String {
    let j: ClosedJaxpr =
        parse_closed_jaxpr(text, Vec::new()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let backend = CpuBackend::new();
    let exe = backend
        .compile(&j)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    for &n in sizes {
        let mut args = vec![HostArray::scalar(DType::I64, n as f64)];
        args.extend(
            specs
                .iter()
                .enumerate()
                .map(|(k, s)| input(s, n, 17 * n as u64 + k as u64)),
        );
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe
            .execute(&bufs)
            .unwrap_or_else(|e| panic!("n={n}: {e}\n{text}"));
        let want = eval_closed_jaxpr(&j, &args).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            let g = g.to_host().unwrap();
            assert!(
                same(&g, w),
                "n={n}: {:?}{:?} vs {:?}{:?}\n{text}",
                g.shape(),
                g.to_f64_vec(),
                w.shape(),
                w.to_f64_vec()
            );
        }
    }
    assert_eq!(backend.cached_programs(), 1);
    let plan = backend.dynamic_plan(&j).expect("a dynamic program");
    assert_all_native(&plan);
    plan
}

const F32_N3: Spec = (DType::F32, &[None, Some(3)]);
const SIZES: [usize; 6] = [0, 1, 3, 5, 17, 64];

/// (jaxpr, operand specs after `n`, the primitive that must be a native
/// step, the smallest `n` it takes).
const CASES: &[(&str, &[Spec], &str, usize)] = &[
    (
        "{ lambda ; a:i64[] b:f32[a,3]. let c:f32[3,a] = transpose[permutation=(1, 0)] b in (c,) }",
        &[F32_N3],
        "transpose",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:i16[2,a,3]. let
            c:i16[3,2,a] = transpose[permutation=(2, 0, 1)] b in (c,) }",
        &[(DType::I16, &[Some(2), None, Some(3)])],
        "transpose",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3]. let
            c:f32[a,4,3] = broadcast_in_dim[broadcast_dimensions=(0, 2) shape=(None, 4, 3)] b a
          in (c,) }",
        &[F32_N3],
        "broadcast_in_dim",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f64[1,a]. let
            c:f64[3,a] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(3, None)] b a
          in (c,) }",
        &[(DType::F64, &[Some(1), None])],
        "broadcast_in_dim",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3]. let
            c:f32[a] = reduce_sum[axes=(1,) out_sharding=None] b
            d:f32[3] = reduce_max[axes=(0,)] b
            e:f32[] = reduce_min[axes=(0, 1)] b
          in (c, d, e) }",
        &[F32_N3],
        "reduce_max",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3,2]. let
            c:f32[3] = reduce_sum[axes=(0, 2) out_sharding=None] b
            d:f32[a,2] = reduce_sum[axes=(1,) out_sharding=None] b
          in (c, d) }",
        &[(DType::F32, &[None, Some(3), Some(2)])],
        "reduce_sum",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f16[a,3] c:i32[3,a] d:bool[a,3]. let
            e:f16[a] = reduce_sum[axes=(1,) out_sharding=None] b
            f:f16[3] = reduce_prod[axes=(0,) out_sharding=None] b
            g:i32[3] = reduce_sum[axes=(1,) out_sharding=None] c
            h:i32[a] = reduce_max[axes=(0,)] c
            i:bool[3] = reduce_and[axes=(0,)] d
            j:bool[a] = reduce_or[axes=(1,)] d
          in (e, f, g, h, i, j) }",
        &[
            (DType::F16, &[None, Some(3)]),
            (DType::I32, &[Some(3), None]),
            (DType::Bool, &[None, Some(3)]),
        ],
        "reduce_and",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3]. let
            c:f32[a,3] = rev[dimensions=(0, 1)] b
            d:f32[a,3] = cumsum[axis=0 reverse=False] b
            e:f32[a,3] = cummax[axis=1 reverse=True] b
            f:i32[a] = argmax[axes=(1,) index_dtype=int32] b
          in (c, d, e, f) }",
        &[F32_N3],
        "rev",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,2] c:f32[a,3] d:f32[2,3]. let
            e:f32[a,5] = concatenate[dimension=1] b c
            f:i64[] = add a 2:i64[]
            g:f32[f,3] = concatenate[dimension=0] c d
          in (e, g) }",
        &[
            (DType::F32, &[None, Some(2)]),
            F32_N3,
            (DType::F32, &[Some(2), Some(3)]),
        ],
        "concatenate",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3]. let
            c:i64[] = add a 3:i64[]
            d:f32[c,4] = pad[padding_config=((1, 2, 0), (0, -1, 1))] b 0.5:f32[]
          in (d,) }",
        &[F32_N3],
        "pad",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:u8[a,1,3]. let
            c:u8[a,3] = squeeze[dimensions=(1,)] b
            d:i64[] = mul a 3:i64[]
            e:u8[d] = reshape[dimensions=None new_sizes=(None,) sharding=None] c d
          in (c, e) }",
        &[(DType::U8, &[None, Some(1), Some(3)])],
        "reshape",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[5,3]. let
            c:i32[a,3] = iota[dimension=0 dtype=int32 shape=(None, 3) sharding=None] a
            d:f32[3,a] = iota[dimension=1 dtype=float32 shape=(3, None) sharding=None] a
            e:f32[2,2] = slice[limit_indices=(5, 3) start_indices=(1, 0) strides=(2, 2)] b
            f:f32[5,1] f2:f32[5,2] = split[axis=1 sizes=(1, 2)] b
          in (c, d, e, f, f2) }",
        &[(DType::F32, &[Some(5), Some(3)])],
        "iota",
        0,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3] c:f32[1,2] d:i32[]. let
            e:f32[1,3] = dynamic_slice[slice_sizes=(1, 3)] b d 0:i32[]
            f:f32[a,3] = dynamic_update_slice b c d 1:i32[]
            g:f32[a,3] = sort[dimension=0 is_stable=True num_keys=1] b
          in (e, f, g) }",
        &[F32_N3, (DType::F32, &[Some(1), Some(2)]), (DType::I32, &[])],
        "dynamic_update_slice",
        1,
    ),
    (
        "{ lambda ; a:i64[] b:f32[a,3]. let
            c:f32[a,2] d:i32[a,2] = top_k[axis=1 k=2] b
            e:i32[a,3] = bitcast_convert_type[new_dtype=int32] b
            f:f32[a,3] = reduce_precision[exponent_bits=5 mantissa_bits=4] b
            g:f32[a,3] = cumlogsumexp[axis=0 reverse=True] b
            h:i32[3] = argmin[axes=(0,) index_dtype=int32] b
          in (c, d, e, f, g, h) }",
        &[F32_N3],
        "top_k",
        1,
    ),
];

#[test]
fn native_steps_match_the_interpreter_bit_for_bit() {
    for (text, specs, prim, min) in CASES {
        let sizes: Vec<usize> = SIZES.iter().copied().filter(|n| n >= min).collect();
        let plan = check(text, specs, &sizes);
        assert!(
            plan.contains(&format!("({prim})")),
            "`{prim}` is not a native step:\n{plan}"
        );
    }
}

#[test]
fn scalar_equations_and_leading_reductions_run_without_the_interpreter() {
    // Loop counters and predicates are runs of integer scalars evaluated
    // by the driver; a reduction of an input is a kernel of its own.
    let text = "{ lambda ; a:i64[] b:f32[a]. let
        c:i64[] = add a 1:i64[]
        d:i64[] = mul c 2:i64[]
        e:bool[] = lt d 10:i64[]
        f:f32[] = reduce_sum[axes=(0,) out_sharding=None] b
      in (d, e, f) }";
    let j = parse_closed_jaxpr(text, Vec::new()).unwrap();
    let backend = CpuBackend::new();
    let exe = backend.compile(&j).unwrap();
    for n in [0usize, 1, 3, 17] {
        let args = vec![
            HostArray::scalar(DType::I64, n as f64),
            input(&(DType::F32, &[None]), n, n as u64),
        ];
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe.execute(&bufs).unwrap();
        let want = eval_closed_jaxpr(&j, &args).unwrap();
        for (g, w) in got.iter().zip(&want) {
            let g = g.to_host().unwrap();
            // The kernel's sum is reassociated.
            for (x, y) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
                assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{x} vs {y}");
            }
            assert_eq!(g.shape(), w.shape());
        }
    }
    let plan = backend.dynamic_plan(&j).unwrap();
    let lines: Vec<&str> = plan.lines().collect();
    assert!(
        matches!(lines.as_slice(), [a, b] if *a == "scalar eqns 0..3"
            && b.starts_with("flat eqns 3..4:")),
        "{plan}"
    );
}

#[test]
fn an_unsupported_primitive_is_a_compile_error_naming_it() {
    let text = "{ lambda ; a:i64[] b:f32[a]. let
        c:f32[a] = psum[axes=('i',) axis_index_groups=None] b
      in (c,) }";
    let j = parse_closed_jaxpr(text, Vec::new()).unwrap();
    let err = CpuBackend::new().compile(&j).err().expect("an error");
    assert!(err.to_string().contains("psum"), "{err}");
    // An elementwise equation the kernel generator declines has no step
    // outside a kernel: the error names it and the generator's reason.
    let text = "{ lambda ; a:i64[] b:f32[a] c:bool[a]. let
        d:f32[a] = sin b
        e:bool[a] = sign c
      in (d, e) }";
    let j = parse_closed_jaxpr(text, Vec::new()).unwrap();
    let err = CpuBackend::new().compile(&j).err().expect("an error");
    assert!(err.to_string().contains("`sign`"), "{err}");
}

// ---- the reverse-mode programs of `jaxon-transforms`' `dyn_grad` tests ----

use jaxon_ir::dyntype::{DynAval, InDim, InType};
use jaxon_trace::control::{cond, for_loop, while_loop, ForBound};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::stage::{close, trace_flat_in_type, StageMode};
use jaxon_trace::Array;
use jaxon_transforms::grad;

const F64: DType = DType::F64;

fn scalar_entry(dtype: DType) -> (DynAval<InDim>, bool) {
    (
        DynAval {
            dtype,
            shape: Vec::new(),
        },
        true,
    )
}

/// Traces `f(n, extra scalars.., x, w)` with `x, w: f64[n]`.
fn trace_dyn(scalars: &[DType], f: impl FnOnce(Vec<Array>) -> Vec<Array>) -> ClosedJaxpr {
    let vec_n = (
        DynAval {
            dtype: F64,
            shape: vec![InDim::DBIdx(0)],
        },
        true,
    );
    let mut ty = vec![scalar_entry(DType::I64)];
    ty.extend(scalars.iter().map(|d| scalar_entry(*d)));
    ty.extend([vec_n.clone(), vec_n]);
    let staged = trace_flat_in_type(StageMode::Base, &InType(ty), |ins| {
        jaxon_trace::error::catch(|| f(ins))
    })
    .unwrap();
    close(staged).unwrap()
}

/// Runs `j` on the CPU backend (one executable) and the interpreter for
/// each `n` and each of `extras` (scalars after `n`); results agree to a
/// relative 1e-12 (kernels use polynomial transcendentals).
fn agree_grad(j: &ClosedJaxpr, extras: &[Vec<HostArray>], sizes: &[usize], seed: u64) {
    let backend = CpuBackend::new();
    let exe = backend.compile(j).unwrap();
    for extra in extras {
        for &n in sizes {
            let mut args = vec![HostArray::scalar(DType::I64, n as f64)];
            args.extend(extra.iter().cloned());
            for k in 0..2 {
                let v: Vec<f64> = values(n, seed + 7 * n as u64 + k)
                    .iter()
                    .map(|x| x * 0.5)
                    .collect();
                args.push(HostArray::from_f64(F64, &[n], &v).unwrap());
            }
            let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
            let got = exe.execute(&bufs).unwrap();
            let want = eval_closed_jaxpr(j, &args).unwrap();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                let g = g.to_host().unwrap();
                assert_eq!(g.shape(), w.shape());
                for (a, b) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
                    assert!(
                        (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                        "n={n}: {a} vs {b}"
                    );
                }
            }
        }
    }
    let plan = backend.dynamic_plan(j).unwrap();
    eprintln!("{plan}");
    assert_all_native(&plan);
}

fn step(i: &Array, a: &Array, b: &Array, w: &Array) -> (Array, Array) {
    let fi = i.astype(F64);
    (a.sin() * b + w * &fi * 0.25, b * a.cos() + a * w * 0.5)
}

fn loss(a: &Array, b: &Array) -> Array {
    (a * b).sum(jnp::All) + a.sum(jnp::All)
}

fn prog_for(x: &Array, w: &Array, hi: impl Into<ForBound>) -> Array {
    let (a, b) = ok_or_raise(for_loop(
        1,
        hi,
        2,
        |i, (a, b): (Array, Array)| step(&i, &a, &b, w),
        (x.clone(), x * w),
    ));
    loss(&a, &b)
}

fn prog_while(x: &Array, w: &Array) -> Array {
    let (a, b, _) = ok_or_raise(while_loop(
        |(a, _b, c): (Array, Array, Array)| {
            let go = a.max(jnp::All).lt(1.5);
            ok_or_raise(jnp::logical_and(&go, &c.lt(6)))
        },
        |(a, b, c): (Array, Array, Array)| {
            let (a2, b2) = step(&c, &a, &b, w);
            (a2 * 1.3 + 0.2, b2, c + 1)
        },
        (x.clone(), x * w, Array::scalar(0i64)),
    ));
    loss(&a, &b)
}

/// Branches of different result sizes (`n` and `2n`), then a loop whose
/// carry has an implicit dimension and whose body holds a `cond`.
fn prog_cond_sizes(x: &Array, w: &Array, p: &Array) -> Array {
    let y = ok_or_raise(cond(
        p,
        |(x, w): (Array, Array)| x.sin() * &w,
        |(x, w): (Array, Array)| {
            ok_or_raise(jaxon_trace::dynshape::concatenate(&[&x * &w, x.cos()], 0))
        },
        (x.clone(), w.clone()),
    ));
    let (a, b) = ok_or_raise(for_loop(
        0,
        3,
        1,
        |i, (a, b): (Array, Array)| {
            let even = ok_or_raise(jaxon_trace::lax::eq(
                &ok_or_raise(jaxon_trace::lax::rem(&i, &Array::scalar(2i64))),
                &Array::scalar(0i64),
            ));
            let a2 = ok_or_raise(cond(
                &even,
                |(a, b): (Array, Array)| a.sin() * &b,
                |(a, b): (Array, Array)| &a * &a * 0.5 + &b,
                (a.clone(), b.clone()),
            ));
            (a2, b.cos() - &a * 0.3)
        },
        (y.clone(), y.cos()),
    ));
    loss(&a, &b) + (&y * &y).sum(jnp::All)
}

#[test]
fn grad_programs_with_dynamic_control_flow_run_natively() {
    let j = trace_dyn(&[DType::I64], |ins| {
        let (hi, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_for(&x, &w, &hi))((x, w)));
        vec![gx, gw]
    });
    let his: Vec<Vec<HostArray>> = [1i64, 6]
        .iter()
        .map(|&h| vec![HostArray::scalar(DType::I64, h as f64)])
        .collect();
    agree_grad(&j, &his, &[1, 3, 6], 1);

    let j = trace_dyn(&[], |ins| {
        let (x, w) = (ins[1].clone(), ins[2].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_while(&x, &w))((x, w)));
        vec![gx, gw]
    });
    agree_grad(&j, &[vec![]], &[1, 4, 7], 2);

    let j = trace_dyn(&[DType::Bool], |ins| {
        let (p, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_cond_sizes(&x, &w, &p))(
            (x, w),
        ));
        vec![gx, gw]
    });
    let ps: Vec<Vec<HostArray>> = [0.0, 1.0]
        .iter()
        .map(|&p| vec![HostArray::scalar(DType::Bool, p)])
        .collect();
    agree_grad(&j, &ps, &[1, 4, 5], 3);
}

#[test]
fn integer_scalar_runs_wrap_and_compare_as_the_interpreter() {
    // Overflowing products, unsigned wrap-around and order, narrowing
    // casts, bool logic and selects, on values spread over each range.
    let text = "{ lambda ; a:i64[] b:i32[] c:u32[] d:u64[] e:i8[] f:bool[] x:f32[a]. let
        g:i32[] = mul b 1000000007:i32[]
        h:i32[] = add g 2147483647:i32[]
        i:u32[] = sub c 7:u32[]
        j:bool[] = lt i c
        k:u64[] = mul d 6364136223846793005:u64[]
        l:bool[] = gt k d
        m:u64[] = max k d
        n:i8[] = neg e
        o:i8[] = mul e 100:i8[]
        p:i64[] = convert_element_type[new_dtype=int64 weak_type=False] i
        q:u8[] = convert_element_type[new_dtype=uint8 weak_type=False] h
        r:bool[] = convert_element_type[new_dtype=bool weak_type=False] o
        s:bool[] = and j f
        t:bool[] = not s
        u:i32[] = select_n t g h
        v:i64[] = min p a
        w:u32[] = not c
        y:i16[] = convert_element_type[new_dtype=int16 weak_type=False] d
        z:bool[] = ne y 0:i16[]
        aa:bool[] = lt o 0:i8[]
        bb:bool[] = gt i 4000000000:u32[]
        cc:bool[] = lt h g
      in (g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, y, z, aa, bb, cc, x) }";
    let j = parse_closed_jaxpr(text, Vec::new()).unwrap();
    let backend = CpuBackend::new();
    let exe = backend.compile(&j).unwrap();
    for k in 0..40u64 {
        let v = values(5, 1000 + k);
        let n = (k % 5) as usize;
        let args = vec![
            HostArray::scalar(DType::I64, n as f64 * 1e9),
            HostArray::scalar(DType::I32, (v[0] * 1.07e9).round()),
            HostArray::scalar(DType::U32, (v[1].abs() * 2.1e9).round().min(4294967295.0)),
            HostArray::scalar(DType::U64, (v[2].abs() * 9.2e18).round()),
            HostArray::scalar(DType::I8, (v[3] * 63.9).round()),
            HostArray::scalar(DType::Bool, (v[4] > 0.0) as u8 as f64),
            HostArray::from_f64(DType::F32, &[n], &values(n, k)).unwrap(),
        ];
        // The size argument is `a`; keep it a valid size for `x`.
        let mut args = args;
        args[0] = HostArray::scalar(DType::I64, n as f64);
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe.execute(&bufs).unwrap();
        let want = eval_closed_jaxpr(&j, &args).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let g = g.to_host().unwrap();
            let bits =
                |a: &HostArray| -> Vec<i64> { (0..a.len()).map(|e| a.data().get_i64(e)).collect() };
            assert_eq!(g.dtype(), w.dtype(), "result {i}");
            if g.dtype().is_float() {
                assert!(same(&g, w), "result {i}");
            } else {
                assert_eq!(bits(&g), bits(w), "result {i}, inputs {args:?}");
            }
        }
    }
    let plan = backend.dynamic_plan(&j).unwrap();
    assert_eq!(plan, "scalar eqns 0..22\n", "{plan}");
}
