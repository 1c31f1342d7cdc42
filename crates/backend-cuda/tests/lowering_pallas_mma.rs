//! `dot` inside `pallas_call` on tensor cores (`lower/pallas/mma.rs`):
//! bf16 and f16 matmul kernels with a `fori_loop` over `k` blocks (as the
//! `pallas_matmul_bf16_gpu` workload), a K grid axis accumulating into a
//! revisited output, `a @ b.T` / `a.T @ b`, batched `dot_general`, bf16
//! results, block shapes that are not multiples of the 16×8×16 tile
//! (masked), blocks in shared memory and in global scratch, and JAX's
//! bf16 flash attention (`pl.dot(q, k.T)`, `pl.dot(p.astype(bf16), v)`)
//! and `jaxon_pallas::ops::flash_attention` in bf16 and f16;
//! on `cuda-sim` (or the GPU under `JAXON_LOWERING_BACKEND=cuda`) against
//! the reference interpreter.
//!
//! Every eligible case asserts that its kernel holds `mma` statements, so
//! a silent fall back to the FMA loop fails; f32 dots assert the opposite.
//! Whole tiles in shared memory must load their fragments by `ldmatrix`
//! (plain and `.trans`), ragged ones and global scratch by masked loads.
//!
//! Tolerances: bf16/f16 products are exact in f32, so the results differ
//! from the interpreter's only by f32 accumulation order (the tensor core
//! sums 16-wide `k` chunks, the interpreter walks `k` in order): within a
//! few f32 ulps of the partial sums, far below `Rel(2e-5)` of the largest
//! |result| (about `sqrt(K)/3`). Results rounded to bf16/f16 may round the
//! other way: one ulp, `2^-8` (bf16) relative, hence `Rel(1e-2)`.

mod lowering_util;
use jaxon_backend_cuda::kir::{Kernel, Stmt};
use jaxon_ir::primitive::DotDimensionNumbers;
use jaxon_ir::DType::{self, BF16, F16, F32};
use jaxon_ir::{ClosedJaxpr, HostArray};
use jaxon_pallas::*;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{lax, Array};
use lowering_util::{compare, holds, random, run_lowered, Dist, Rng, Tol};

/// Stages `f` over arrays of the arguments' types.
fn stage(f: impl Fn(Vec<Array>) -> Vec<Array> + 'static, args: &[HostArray]) -> ClosedJaxpr {
    let arrays: Vec<Array> = args.iter().cloned().map(Array::from_host).collect();
    let j = jaxon_trace::make_jaxpr(move |xs: Vec<Array>| f(xs))(arrays).unwrap();
    assert!(jaxon_ir::print::print_jaxpr(&j.jaxpr).contains("pallas_call"));
    j
}

/// One program, its inputs, a tolerance, and whether its dots must run on
/// tensor cores.
struct Case {
    what: String,
    program: ClosedJaxpr,
    args: Vec<HostArray>,
    tol: Tol,
    mma: bool,
}

fn has_mma(body: &[Stmt]) -> bool {
    holds(body, &|s| matches!(s, Stmt::Mma { .. }))
}

fn has_ldmatrix(body: &[Stmt]) -> bool {
    holds(body, &|s| matches!(s, Stmt::LdMatrix { .. }))
}

impl Case {
    fn call(what: &str, call: PallasCall, args: &[HostArray], tol: Tol, mma: bool) -> Case {
        let program = stage(move |xs| call.call(&xs).unwrap(), args);
        Case {
            what: what.to_string(),
            program,
            args: args.to_vec(),
            tol,
            mma,
        }
    }

    fn kernels(&self) -> Vec<Kernel> {
        let p = jaxon_backend_cuda::lower::lower(&self.program)
            .unwrap_or_else(|e| panic!("{}: {e}", self.what));
        p.kernels
    }

    /// Checks the tensor-core claim, then runs the program on the
    /// simulator (or GPU) and the interpreter.
    fn check(&self) {
        let what = &self.what;
        let mma = self.kernels().iter().any(|k| has_mma(&k.body));
        assert_eq!(mma, self.mma, "{what}: mma in the kernel");
        let want = jaxon_ir::eval_closed_jaxpr(&self.program, &self.args)
            .unwrap_or_else(|e| panic!("{what}: interpreter: {e}"));
        let got =
            run_lowered(&self.program, &self.args).unwrap_or_else(|e| panic!("{what}: cuda: {e}"));
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            compare(&format!("{what}: result {i}"), g, w, self.tol);
        }
    }
}

/// `o = x @ y` in blocks `(bm, K) · (K, bn)`, a `fori_loop` over `k`
/// blocks of `bk` accumulating `dot` in f32; the result in `out`.
fn matmul(m: usize, kk: usize, n: usize, blocks: [usize; 3], out: DType) -> PallasCall {
    let [bm, bn, bk] = blocks;
    let kernel = move |r: &[Ref]| {
        let (x_ref, y_ref, o_ref) = (&r[0], &r[1], &r[2]);
        let acc0 = ok_or_raise(jnp::zeros(&[bm, bn], F32));
        let acc = ok_or_raise(fori_loop(
            0,
            kk / bk,
            |k, acc: Array| {
                let start = &k * bk as i32;
                let x = x_ref.get(ix![.., ds(&start, bk)]);
                let y = y_ref.get(ix![ds(&start, bk), ..]);
                acc + dot(&x, &y)
            },
            acc0,
        ));
        o_ref.set(ix![.., ..], acc.astype(out));
    };
    pallas_call(kernel, shape_dtype(&[m, n], out))
        .grid([m.div_ceil(bm), n.div_ceil(bn)])
        .in_specs(vec![
            BlockSpec::map2([bm, kk], |i, _| (i, 0)),
            BlockSpec::map2([kk, bn], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bn], |i, j| (i, j)))
}

fn tol_for(out: DType) -> Tol {
    if out == F32 {
        Tol::Rel(2e-5)
    } else {
        Tol::Rel(1e-2)
    }
}

fn matmul_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(931);
    // (m, k, n, [bm, bn, bk], operand dtype, result dtype, on tensor cores).
    // 16·8·16 multiples first; then blocks with M % 16, N % 8 and K % 16
    // left over (masked), odd ones (element-wise masks), 64×64 blocks whose
    // f32 values overflow shared memory (f32 in global scratch, the bf16
    // tiles shared), 128×128×128 blocks (everything in global scratch),
    // and f32 (the FMA loop).
    for (m, kk, n, blocks, dt, out, mma) in [
        (32, 32, 32, [32, 32, 16], BF16, F32, true),
        (64, 64, 64, [32, 16, 32], F16, F32, true),
        (32, 48, 64, [16, 64, 48], BF16, BF16, true),
        (48, 24, 36, [24, 12, 8], BF16, F32, true),
        (10, 18, 14, [5, 7, 9], F16, F16, true),
        (128, 64, 128, [64, 64, 64], BF16, F32, true),
        (128, 128, 128, [128, 128, 128], BF16, F32, true),
        (32, 32, 32, [32, 32, 16], F32, F32, false),
    ] {
        let args = [
            random(&mut rng, dt, &[m, kk], Dist::Uniform(1.0)),
            random(&mut rng, dt, &[kk, n], Dist::Uniform(1.0)),
        ];
        cases.push(Case::call(
            &format!("{dt} matmul {m}x{kk}x{n} / {blocks:?} -> {out}"),
            matmul(m, kk, n, blocks, out),
            &args,
            tol_for(out),
            mma,
        ));
    }
    cases
}

#[test]
fn half_matmul_kernels_on_tensor_cores() {
    for c in matmul_cases() {
        c.check();
    }
}

/// `o[i, j] = Σ_k x[i, k-block] · y[k-block, j]` over a `(M/bm, N/bn,
/// K/bk)` grid: the output block ignores the K axis, so its programs run
/// in order and accumulate into the revisited block; `trans` picks `x`
/// stored as `[K, M]` (`x.T @ y`) and `y` as `[N, K]` (`x @ y.T`).
fn k_grid_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(932);
    for (ta, tb, dt) in [(false, true, BF16), (true, false, F16), (true, true, BF16)] {
        let (m, kk, n, bm, bn, bk) = (32, 64, 48, 16, 24, 32);
        let kernel = move |r: &[Ref]| {
            when(&program_id(2).eq(0), || {
                r[2].store(ok_or_raise(jnp::zeros(&[bm, bn], F32)))
            });
            let x = r[0].load();
            let y = r[1].load();
            r[2].store(r[2].load() + dot_t(&x, &y, ta, tb));
        };
        let xs = if ta { [kk, m] } else { [m, kk] };
        let ys = if tb { [n, kk] } else { [kk, n] };
        let xb = if ta { [bk, bm] } else { [bm, bk] };
        let yb = if tb { [bn, bk] } else { [bk, bn] };
        let xspec = if ta {
            BlockSpec::map3(xb, |i, _, k| (k, i))
        } else {
            BlockSpec::map3(xb, |i, _, k| (i, k))
        };
        let yspec = if tb {
            BlockSpec::map3(yb, |_, j, k| (j, k))
        } else {
            BlockSpec::map3(yb, |_, j, k| (k, j))
        };
        let call = pallas_call(kernel, shape_dtype(&[m, n], F32))
            .grid([m / bm, n / bn, kk / bk])
            .in_specs(vec![xspec, yspec])
            .out_spec(BlockSpec::map3([bm, bn], |i, j, _| (i, j)));
        let args = [
            random(&mut rng, dt, &xs, Dist::Uniform(1.0)),
            random(&mut rng, dt, &ys, Dist::Uniform(1.0)),
        ];
        cases.push(Case::call(
            &format!("{dt} K grid axis, trans ({ta}, {tb})"),
            call,
            &args,
            Tol::Rel(2e-5),
            true,
        ));
    }
    cases
}

#[test]
fn k_grid_axis_and_transposed_operands_on_tensor_cores() {
    for c in k_grid_cases() {
        c.check();
    }
}

/// A batched `dot_general` (batch dims leading) per program, f32 and
/// operand-dtype results.
fn batched_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(933);
    for (bt, m, kk, n, out) in [(3, 16, 32, 8, F32), (2, 20, 16, 12, BF16)] {
        let kernel = move |r: &[Ref]| {
            let x = r[0].load();
            let y = r[1].load();
            let dn = DotDimensionNumbers {
                lhs_contracting: vec![2],
                rhs_contracting: vec![1],
                lhs_batch: vec![0],
                rhs_batch: vec![0],
            };
            let pref = (out == F32).then_some(F32);
            r[2].store(ok_or_raise(lax::dot_general(&x, &y, dn, pref)));
        };
        let call = pallas_call(kernel, shape_dtype(&[2 * bt, m, n], out))
            .grid(2)
            .in_specs(vec![
                BlockSpec::map1([bt, m, kk], |i| (i, 0, 0)),
                BlockSpec::map1([bt, kk, n], |i| (i, 0, 0)),
            ])
            .out_spec(BlockSpec::map1([bt, m, n], |i| (i, 0, 0)));
        let args = [
            random(&mut rng, BF16, &[2 * bt, m, kk], Dist::Uniform(1.0)),
            random(&mut rng, BF16, &[2 * bt, kk, n], Dist::Uniform(1.0)),
        ];
        cases.push(Case::call(
            &format!("batched bf16 dot {bt}x{m}x{kk}x{n} -> {out}"),
            call,
            &args,
            tol_for(out),
            true,
        ));
    }
    cases
}

#[test]
fn batched_dot_general_on_tensor_cores() {
    for c in batched_cases() {
        c.check();
    }
}

/// JAX's `pallas.ops.gpu.attention.mha` forward kernel: bf16 `q`, `k`, `v`
/// blocks, `pl.dot(q, k.T)` and `pl.dot(p.astype(bf16), v)` accumulated in
/// f32 with an online softmax.
fn mha(shape: [usize; 3], bq: usize, bk: usize, causal: bool) -> PallasCall {
    let [bh, t, d] = shape;
    let scale = 1.0 / (d as f64).sqrt();
    let kernel = move |r: &[Ref]| {
        let q = r[0].load();
        let qi = program_id(1);
        let m0 = ok_or_raise(jnp::full(&[bq], &Array::weak(f32::NEG_INFINITY), Some(F32)));
        let l0 = ok_or_raise(jnp::zeros(&[bq], F32));
        let a0 = ok_or_raise(jnp::zeros(&[bq, d], F32));
        let rows = ok_or_raise(jnp::arange(bq)).reshape(&[-1, 1]) + &qi * bq as i32;
        let step = |j: Array, (m, l, acc): (Array, Array, Array)| {
            let start = &j * bk as i32;
            let kb = r[1].get(ix![ds(&start, bk), ..]);
            let vb = r[2].get(ix![ds(&start, bk), ..]);
            let mut s = dot_t(&q, &kb, false, true) * scale;
            if causal {
                let cols = ok_or_raise(jnp::arange(bk)).reshape(&[1, -1]) + &start;
                s = ok_or_raise(jnp::where_(
                    &cols.le(&rows),
                    &s,
                    &Array::scalar(f32::NEG_INFINITY),
                ));
            }
            let m_new = ok_or_raise(jnp::maximum(&m, &s.max(1)));
            let p = (&s - m_new.reshape(&[-1, 1])).exp();
            let alpha = (&m - &m_new).exp();
            let l = l * &alpha + p.sum(1);
            let acc = acc * alpha.reshape(&[-1, 1]) + dot(&p.astype(BF16), &vb);
            (m_new, l, acc)
        };
        let upper = if causal {
            (&qi + 1) * (bq / bk) as i32
        } else {
            Array::scalar((t / bk) as i32)
        };
        let (_, l, acc) = ok_or_raise(fori_loop(0, upper, step, (m0, l0, a0)));
        r[3].store((acc / l.reshape(&[-1, 1])).astype(BF16));
    };
    let qspec = || BlockSpec::map2([None, Some(bq), Some(d)], |b, i| (b, i, 0));
    let kvspec = || BlockSpec::map2([None, Some(t), Some(d)], |b, _| (b, 0, 0));
    pallas_call(kernel, shape_dtype(&[bh, t, d], BF16))
        .grid([bh, t / bq])
        .in_specs(vec![qspec(), kvspec(), kvspec()])
        .out_spec(qspec())
}

fn flash_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(934);
    for (bh, t, d, bq, bk, causal) in [
        (2, 64, 32, 32, 16, true),
        (1, 48, 16, 16, 16, false),
        (2, 32, 24, 16, 8, true),
    ] {
        let args: Vec<HostArray> = (0..3)
            .map(|_| random(&mut rng, BF16, &[bh, t, d], Dist::Uniform(1.0)))
            .collect();
        cases.push(Case::call(
            &format!("bf16 mha [{bh},{t},{d}] / ({bq},{bk}) causal={causal}"),
            mha([bh, t, d], bq, bk, causal),
            &args,
            Tol::Rel(1e-2),
            true,
        ));
    }
    // The library's kernel (`jaxon_pallas::ops`, JAX's `mha` products).
    for (dt, causal) in [(BF16, true), (F16, false)] {
        let (bh, t, d) = (2, 64, 32);
        let p = jaxon_pallas::ops::FlashAttention {
            block_q: 32,
            block_k: 16,
            causal,
            scale: None,
        };
        let call = jaxon_pallas::ops::flash_attention_call([bh, t, d], dt, &p).expect("divides");
        let args: Vec<HostArray> = (0..3)
            .map(|_| random(&mut rng, dt, &[bh, t, d], Dist::Uniform(1.0)))
            .collect();
        cases.push(Case::call(
            &format!("ops::flash_attention {dt} causal={causal}"),
            call,
            &args,
            Tol::Rel(1e-2),
            true,
        ));
    }
    cases
}

#[test]
fn bf16_flash_attention_on_tensor_cores() {
    for c in flash_cases() {
        c.check();
    }
}

/// Fragments come by `ldmatrix` where both operands are whole tiles in
/// shared memory (plain and transposed), and by masked loads otherwise.
#[test]
fn ldmatrix_for_whole_tiles_in_shared_memory_only() {
    let uses = |c: &Case| c.kernels().iter().any(|k| has_ldmatrix(&k.body));
    let matmuls = matmul_cases();
    // Whole tiles (32³ bf16, 64³ f16 blocks, 64³ with f32 in scratch),
    // ragged (24×12×8, 5×7×9), operands in global scratch (128³ blocks).
    for (i, want) in [
        (0, true),
        (1, true),
        (3, false),
        (4, false),
        (5, true),
        (6, false),
    ] {
        assert_eq!(uses(&matmuls[i]), want, "{}", matmuls[i].what);
    }
    // Attention with whole tiles; head_dim 24 and 8-key blocks are ragged.
    let flash = flash_cases();
    for (i, c) in flash.iter().enumerate() {
        assert_eq!(uses(c), i != 2, "{}", c.what);
    }
    for c in &k_grid_cases() {
        assert!(uses(c), "{}: no ldmatrix", c.what);
    }
}

/// The kernels of the `pallas_matmul_bf16_gpu` (128×128 blocks, `k`
/// steps of 64) and `attention_fwd_gpu` (bf16, head_dim 128, blocks of 64,
/// causal) workloads on small grids: lowered and compiled, not run.
fn workload_cases() -> Vec<Case> {
    let mut rng = Rng::new(935);
    let n = 256;
    let args = [
        random(&mut rng, BF16, &[n, n], Dist::Uniform(1.0)),
        random(&mut rng, BF16, &[n, n], Dist::Uniform(1.0)),
    ];
    let mm = Case::call(
        "pallas_matmul_bf16 blocks",
        matmul(n, n, n, [128, 128, 64], BF16),
        &args,
        Tol::Rel(1e-2),
        true,
    );
    let p = jaxon_pallas::ops::FlashAttention {
        block_q: 64,
        block_k: 64,
        causal: true,
        scale: None,
    };
    let call = jaxon_pallas::ops::flash_attention_call([2, 128, 128], BF16, &p).expect("divides");
    let args: Vec<HostArray> = (0..3)
        .map(|_| random(&mut rng, BF16, &[2, 128, 128], Dist::Uniform(1.0)))
        .collect();
    let fa = Case::call(
        "attention_fwd flash blocks",
        call,
        &args,
        Tol::Rel(1e-2),
        true,
    );
    vec![mm, fa]
}

#[test]
fn workload_kernels_use_tensor_cores() {
    let cases = workload_cases();
    for c in &cases {
        assert!(
            c.kernels().iter().any(|k| has_mma(&k.body)),
            "{}: no mma",
            c.what
        );
    }
    // The matmul's bf16 tiles stay in shared memory beside its f32 values
    // in global scratch, so they load by ldmatrix.
    assert!(cases[0].kernels().iter().any(|k| has_ldmatrix(&k.body)));
    // `acc + dot(x, y)` (matmul) and `acc * alpha + dot(p, v)` (attention)
    // are one step: the accumulators start from the addend, loaded.
    for c in &cases {
        let fused = c.kernels().iter().any(|k| {
            holds(&k.body, &|s| match s {
                Stmt::Load { dst, .. } => dst.iter().all(|v| k.vars[v.0 as usize].name == "acc"),
                _ => false,
            })
        });
        assert!(fused, "{}: acc + dot not fused", c.what);
    }
}

/// Every kernel compiles for sm_80 and sm_90 without spills, except the
/// attention_fwd-shaped kernel: all its values are in global scratch (64-bit
/// addresses) and ptxas spills a few bytes at 64-96 registers, so not for
/// want of registers; `#pragma unroll 1` on its `k` loops removes the
/// spill in the printed C, which KIR cannot say. Allowed up to 64 bytes.
#[test]
fn tensor_core_kernels_compile_with_nvrtc_without_spills() {
    let mut kernels = Vec::new();
    let all = [
        matmul_cases(),
        k_grid_cases(),
        batched_cases(),
        flash_cases(),
        workload_cases(),
    ];
    let mut allowed = Vec::new();
    for (i, c) in all.iter().flatten().enumerate() {
        for mut k in c.kernels() {
            k.name = format!("p{i}_{}", k.name);
            if c.what == "attention_fwd flash blocks" {
                allowed.push(k.name.clone());
            }
            kernels.push(k);
        }
    }
    assert!(!allowed.is_empty());
    lowering_util::nvrtc_check("lowering_pallas_mma", &kernels, |name, bytes| {
        allowed.iter().any(|a| a == name) && bytes <= 64
    });
}
