//! `pallas_call` on `cuda-sim` (or the GPU under
//! `JAXON_LOWERING_BACKEND=cuda`) against the reference interpreter (JAX's
//! interpret mode) on seeded random inputs: blocked elementwise kernels on
//! sizes that leave partial edge blocks, in f32, f64, i32, bf16 and bool;
//! `program_id`/`num_programs` and dynamic slices; masked row softmax; a
//! matmul with a `fori_loop` over `k` blocks, a fused GELU and a `when`
//! branch (small blocks in shared memory, large ones in global scratch);
//! an output revisited along a grid axis (programs in order); atomics and
//! aliasing (bit-exact, order-dependent results included); layer norm's
//! backward kernel; flash attention's forward pass (a loop of three
//! carries); and JAX's own text of a masked store whose old values are
//! used.

mod lowering_util;
use jaxon_ir::DType::{Bool, BF16, F32, F64, I32};
use jaxon_ir::{ClosedJaxpr, HostArray};
use jaxon_pallas::*;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{nn, Array};
use lowering_util::{compare, parse, random, run_lowered, Dist, Rng, Tol};

/// Stages `f` over arrays of the arguments' types.
fn stage(f: impl Fn(Vec<Array>) -> Vec<Array> + 'static, args: &[HostArray]) -> ClosedJaxpr {
    let arrays: Vec<Array> = args.iter().cloned().map(Array::from_host).collect();
    let j = jaxon_trace::make_jaxpr(move |xs: Vec<Array>| f(xs))(arrays).unwrap();
    assert!(jaxon_ir::print::print_jaxpr(&j.jaxpr).contains("pallas_call"));
    j
}

/// One program and its inputs, compared with `tol`.
struct Case {
    what: String,
    program: ClosedJaxpr,
    args: Vec<HostArray>,
    tol: Tol,
}

impl Case {
    fn call(what: &str, call: PallasCall, args: &[HostArray], tol: Tol) -> Case {
        let program = stage(move |xs| call.call(&xs).unwrap(), args);
        Case {
            what: what.to_string(),
            program,
            args: args.to_vec(),
            tol,
        }
    }

    /// Runs the program on the simulator (or GPU) and the interpreter.
    fn check(&self) {
        let what = &self.what;
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

fn add_kernel(r: &[Ref]) {
    let x = load(&r[0], ()).read();
    let y = load(&r[1], ()).read();
    store(&r[2], (), x * 2.0 + y);
}

fn and_kernel(r: &[Ref]) {
    let x = load(&r[0], ()).read();
    let y = load(&r[1], ()).read();
    store(&r[2], (), ok_or_raise(jnp::logical_xor(&x, &y)));
}

fn blocked_elementwise_with_partial_edge_blocks_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(901);
    for (n, blk) in [(1, 8), (7, 4), (33, 8), (100, 32), (1000, 128), (130, 256)] {
        for d in [F32, F64, I32] {
            let args = [
                random(&mut rng, d, &[n], Dist::Uniform(50.0)),
                random(&mut rng, d, &[n], Dist::Uniform(50.0)),
            ];
            let spec = || BlockSpec::map1([Some(blk)], |i| (i,));
            let call = pallas_call(add_kernel, shape_dtype(&[n], d))
                .grid(n.div_ceil(blk))
                .in_specs(vec![spec(), spec()])
                .out_spec(spec());
            cases.push(Case::call(
                &format!("add {d}[{n}] / {blk}"),
                call,
                &args,
                Tol::Exact,
            ));
        }
        let args = [
            random(&mut rng, Bool, &[n], Dist::Uniform(1.0)),
            random(&mut rng, Bool, &[n], Dist::Uniform(1.0)),
        ];
        let spec = || BlockSpec::map1([Some(blk)], |i| (i,));
        let call = pallas_call(and_kernel, shape_dtype(&[n], Bool))
            .grid(n.div_ceil(blk))
            .in_specs(vec![spec(), spec()])
            .out_spec(spec());
        cases.push(Case::call(
            &format!("xor bool[{n}] / {blk}"),
            call,
            &args,
            Tol::Exact,
        ));
    }
    // 2-D blocks over a (37, 5) array: both dimensions have partial blocks,
    // and num_programs scales the result; bf16 in and out.
    let k = |r: &[Ref]| {
        let x = load(&r[0], ()).read().astype(F32);
        let n = (num_programs(0) * 10 + num_programs(1)).astype(F32);
        store(&r[1], (), (x * 3.0 + n).astype(BF16));
    };
    let args = [random(&mut rng, BF16, &[37, 5], Dist::Uniform(4.0))];
    let spec = || BlockSpec::map2([Some(8), Some(2)], |i, j| (i, j));
    let call = pallas_call(k, shape_dtype(&[37, 5], BF16))
        .grid([5, 3])
        .in_specs(vec![spec()])
        .out_spec(spec());
    cases.push(Case::call("bf16 2-D blocks", call, &args, Tol::Exact));
    cases
}

#[test]
fn blocked_elementwise_with_partial_edge_blocks() {
    for c in blocked_elementwise_with_partial_edge_blocks_cases() {
        c.check();
    }
}

fn program_id_and_dynamic_slices_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(902);
    let n = 21;
    let k = |r: &[Ref]| {
        let i = program_id(0);
        let x = r[0].get(ix![ds(&i, 1)]);
        r[1].set(ix![ds(&i, 1)], x.exp() - 1.0);
    };
    let args = [random(&mut rng, F32, &[n], Dist::Uniform(3.0))];
    cases.push(Case::call(
        "exp per program",
        pallas_call(k, shape_dtype(&[n], F32)).grid(n),
        &args,
        Tol::Ulp(2),
    ));
    // Each program writes its reversed row (a `rev` and a transpose of a
    // squeezed block) and the row's max position.
    let k = |r: &[Ref]| {
        let row = r[0].load();
        r[1].store(ok_or_raise(jnp::flip(&row, None)));
        r[2].store(row.argmax(Some(0)).astype(I32));
    };
    let args = [random(&mut rng, I32, &[6, 9], Dist::Uniform(20.0))];
    let call = pallas_call(k, vec![shape_dtype(&[6, 9], I32), shape_dtype(&[6], I32)])
        .grid(6)
        .in_specs(vec![BlockSpec::map1([None, Some(9)], |i| (i, 0))])
        .out_specs(vec![
            BlockSpec::map1([None, Some(9)], |i| (i, 0)),
            BlockSpec::map1([None::<usize>], |i| i),
        ]);
    cases.push(Case::call("rev and argmax rows", call, &args, Tol::Exact));
    cases
}

#[test]
fn program_id_and_dynamic_slices() {
    for c in program_id_and_dynamic_slices_cases() {
        c.check();
    }
}

fn row_softmax_masked_to_a_power_of_two_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (rows, cols) in [(7usize, 1usize), (33, 125), (300, 37)] {
        let block = cols.next_power_of_two();
        let k = move |r: &[Ref]| {
            let col = ok_or_raise(jnp::arange(block));
            let m = col.lt(cols as i32);
            let row = load(&r[0], ..).mask(&m).other(f32::NEG_INFINITY).read();
            let e = (&row - row.max(All)).exp();
            store(&r[1], .., &e / e.sum(All)).mask(&m);
        };
        let call = pallas_call(k, shape_dtype(&[rows, cols], F32))
            .grid(rows)
            .in_specs(vec![BlockSpec::map1([None, Some(block)], |i| (i, 0))])
            .out_spec(BlockSpec::map1([None, Some(block)], |i| (i, 0)));
        let args = [random(
            &mut Rng::new(903),
            F32,
            &[rows, cols],
            Dist::Uniform(8.0),
        )];
        cases.push(Case::call(
            &format!("softmax {rows}x{cols}"),
            call,
            &args,
            Tol::Rel(1e-6),
        ));
    }
    cases
}

#[test]
fn row_softmax_masked_to_a_power_of_two() {
    for c in row_softmax_masked_to_a_power_of_two_cases() {
        c.check();
    }
}

/// `(m, kk) @ (kk, n)` in `(bm, bn)` blocks with a loop over `bk`-wide
/// slices of `k`, GELU fused, and program (0, *) overwriting its first row
/// with the block's sum through `when`.
fn matmul(m: usize, kk: usize, n: usize, bm: usize, bn: usize, bk: usize) -> PallasCall {
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
        o_ref.set(ix![.., ..], ok_or_raise(nn::gelu(&acc, true)));
        when(&program_id(0).eq(0), || {
            o_ref.set(ix![0, ..], acc.sum(All).broadcast_to(&[bn]));
        });
    };
    pallas_call(kernel, shape_dtype(&[m, n], F32))
        .grid([m.div_ceil(bm), n.div_ceil(bn)])
        .in_specs(vec![
            BlockSpec::map2([bm, kk], |i, _| (i, 0)),
            BlockSpec::map2([kk, bn], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bn], |i, j| (i, j)))
}

fn matmul_gelu_loop_and_when_in_shared_and_global_memory_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(904);
    // (m, k, n, bm, bn, bk): small blocks fit shared memory; 64x64 blocks
    // with k = 64 take more than its budget and use global scratch. The
    // first shapes leave partial blocks along m and n.
    for (m, kk, n, bm, bn, bk) in [
        (20, 16, 12, 8, 8, 4),
        (16, 8, 16, 16, 16, 8),
        (64, 64, 64, 64, 64, 32),
    ] {
        let args = [
            random(&mut rng, F32, &[m, kk], Dist::Uniform(1.0)),
            random(&mut rng, F32, &[kk, n], Dist::Uniform(1.0)),
        ];
        let call = matmul(m, kk, n, bm, bn, bk);
        cases.push(Case::call(
            &format!("matmul {m}x{kk}x{n}"),
            call,
            &args,
            Tol::Rel(1e-5),
        ));
    }
    cases
}

#[test]
fn matmul_gelu_loop_and_when_in_shared_and_global_memory() {
    for c in matmul_gelu_loop_and_when_in_shared_and_global_memory_cases() {
        c.check();
    }
}

fn revisited_output_block_accumulates_in_grid_order_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // o[i] = sum_k x[i, k-block] over a (rows, k) grid: the output block
    // ignores axis 1, so the programs along it run in order; axis 1 comes
    // first to check that the order is the grid's, not the launch's.
    let (rows, cols, bk) = (6, 40, 8);
    let k = |r: &[Ref]| {
        when(&program_id(0).eq(0), || r[1].store(0.0));
        let x = r[0].load();
        let s = x.sum(All);
        r[1].store(r[1].load() * 0.5 + s);
    };
    let call = pallas_call(k, shape_dtype(&[rows], F32))
        .grid([cols / bk, rows])
        .in_specs(vec![BlockSpec::map2([None, Some(bk)], |k, i| (i, k))])
        .out_spec(BlockSpec::map2([None::<usize>], |_, i| (i,)));
    let args = [random(
        &mut Rng::new(905),
        F32,
        &[rows, cols],
        Dist::Uniform(2.0),
    )];
    cases.push(Case::call("revisited accumulator", call, &args, Tol::Exact));
    cases
}

#[test]
fn revisited_output_block_accumulates_in_grid_order() {
    for c in revisited_output_block_accumulates_in_grid_order_cases() {
        c.check();
    }
}

fn atomics_aliasing_masked_store_and_addupdate_bit_exact_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut rng = Rng::new(906);
    let k = |r: &[Ref]| {
        let x = r[0].load();
        r[2].store(0);
        let m = ok_or_raise(jnp::arange(8)).ge(3);
        store(&r[2], .., &x).mask(&m);
        r[2].add(0, 100);
        let old = atomic_add(&r[3], 0, 7);
        r[4].set(0, old);
        let prev = atomic_max(&r[3], 1, 1000);
        r[4].set(1, prev);
    };
    let call = pallas_call(
        k,
        vec![
            shape_dtype(&[8], I32),
            shape_dtype(&[2], I32),
            shape_dtype(&[2], I32),
        ],
    )
    .in_specs(vec![BlockSpec::whole(), BlockSpec::whole()])
    .input_output_aliases(&[(1, 1)]);
    let args = [
        random(&mut rng, I32, &[8], Dist::Uniform(1000.0)),
        random(&mut rng, I32, &[2], Dist::Uniform(1000.0)),
    ];
    cases.push(Case::call("aliases and atomics", call, &args, Tol::Exact));
    // Programs accumulate into one output block with atomics; the CAS's old
    // value depends on the order of the programs.
    let k = |r: &[Ref]| {
        let s = r[0].load().sum(All);
        atomic_add(&r[1], 0, &s);
        atomic_max(&r[1], 1, &s);
        atomic_xor(&r[1], 2, &s);
        let old = atomic_cas(&r[1], 3, 0, &s);
        atomic_add(&r[1], 4, &old);
    };
    let call = pallas_call(k, shape_dtype(&[5], I32))
        .grid(5)
        .in_specs(vec![BlockSpec::map1([Some(2)], |i| (i,))])
        .out_spec(BlockSpec::whole());
    let args = [random(&mut rng, I32, &[9], Dist::Uniform(1000.0))];
    cases.push(Case::call("ordered atomics", call, &args, Tol::Exact));
    // Float atomics over a vector with a mask.
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let m = x.gt(0.0);
        atomic_add(&r[1], .., &x);
        let old = atomic_min(&r[2], .., &x);
        r[3].store(old);
        drop(m);
    };
    let call = pallas_call(
        k,
        vec![
            shape_dtype(&[4], F32),
            shape_dtype(&[4], F32),
            shape_dtype(&[4], F32),
        ],
    )
    .grid(3)
    .in_specs(vec![BlockSpec::map1([None, Some(4)], |i| (i, 0))])
    .out_specs(vec![
        BlockSpec::whole(),
        BlockSpec::whole(),
        BlockSpec::whole(),
    ]);
    let args = [random(&mut rng, F32, &[3, 4], Dist::Uniform(5.0))];
    cases.push(Case::call("float atomics", call, &args, Tol::Exact));
    cases
}

#[test]
fn atomics_aliasing_masked_store_and_addupdate_bit_exact() {
    for c in atomics_aliasing_masked_store_and_addupdate_bit_exact_cases() {
        c.check();
    }
}

fn layer_norm_backward_kernel_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let (n, d) = (9, 24);
    let k = move |r: &[Ref]| {
        let (x, w, mean, rstd, dy) = (
            r[0].load(),
            r[1].load(),
            r[2].load(),
            r[3].load(),
            r[4].load(),
        );
        let xhat = (&x - &mean) * &rstd;
        let g = &dy * &w;
        let c1 = (&xhat * &g).mean(All);
        let c2 = g.mean(All);
        r[5].store((&g - &xhat * &c1 - &c2) * &rstd);
        when(&program_id(0).eq(0), || {
            r[6].store(0.0);
            r[7].store(0.0);
        });
        atomic_add(&r[6], .., &dy * &xhat);
        atomic_add(&r[7], .., &dy);
    };
    let row = || BlockSpec::map1([None, Some(d)], |i| (i, 0));
    let vec = || BlockSpec::map1([d], |_| 0);
    let one = || BlockSpec::map1([None::<usize>], |i| i);
    let call = pallas_call(
        k,
        vec![
            shape_dtype(&[n, d], F32),
            shape_dtype(&[d], F32),
            shape_dtype(&[d], F32),
        ],
    )
    .grid(n)
    .in_specs(vec![row(), vec(), one(), one(), row()])
    .out_specs(vec![row(), vec(), vec()]);
    let mut rng = Rng::new(907);
    let args = [
        random(&mut rng, F32, &[n, d], Dist::Uniform(1.0)),
        random(&mut rng, F32, &[d], Dist::Uniform(1.0)),
        random(&mut rng, F32, &[n], Dist::Uniform(1.0)),
        random(&mut rng, F32, &[n], Dist::Uniform(1.0)),
        random(&mut rng, F32, &[n, d], Dist::Uniform(1.0)),
    ];
    cases.push(Case::call(
        "layer norm backward",
        call,
        &args,
        Tol::Rel(1e-6),
    ));
    cases
}

#[test]
fn layer_norm_backward_kernel() {
    for c in layer_norm_backward_kernel_cases() {
        c.check();
    }
}

fn flash_attention_forward_kernel_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let (bh, s, d, block_q, block_k) = (2, 32, 8, 16, 8);
    let scale = 1.0 / (d as f64).sqrt();
    let kernel = move |r: &[Ref]| {
        let q = r[0].load() * scale;
        let m0 = ok_or_raise(jnp::full(
            &[block_q],
            &Array::weak(f32::NEG_INFINITY),
            Some(F32),
        ));
        let l0 = ok_or_raise(jnp::zeros(&[block_q], F32));
        let a0 = ok_or_raise(jnp::zeros(&[block_q, d], F32));
        let (_, l, acc) = ok_or_raise(fori_loop(
            0,
            s / block_k,
            |j, (m, l, acc): (Array, Array, Array)| {
                let start = &j * block_k as i32;
                let kb = r[1].get(ix![ds(&start, block_k), ..]);
                let vb = r[2].get(ix![ds(&start, block_k), ..]);
                let sc = dot_t(&q, &kb, false, true);
                let m_new = ok_or_raise(jnp::maximum(&m, &sc.max(1)));
                let p = (&sc - m_new.reshape(&[-1, 1])).exp();
                let alpha = (&m - &m_new).exp();
                let l = l * &alpha + p.sum(1);
                let acc = acc * alpha.reshape(&[-1, 1]) + dot(&p, &vb);
                (m_new, l, acc)
            },
            (m0, l0, a0),
        ));
        r[3].store(acc / l.reshape(&[-1, 1]));
    };
    let qspec = || BlockSpec::map2([None, Some(block_q), Some(d)], |b, i| (b, i, 0));
    let kvspec = || BlockSpec::map2([None, Some(s), Some(d)], |b, _| (b, 0, 0));
    let call = pallas_call(kernel, shape_dtype(&[bh, s, d], F32))
        .grid([bh, s / block_q])
        .in_specs(vec![qspec(), kvspec(), kvspec()])
        .out_spec(qspec());
    let mut rng = Rng::new(908);
    let args: Vec<HostArray> = (0..3)
        .map(|_| random(&mut rng, F32, &[bh, s, d], Dist::Uniform(1.0)))
        .collect();
    cases.push(Case::call("flash attention", call, &args, Tol::Rel(1e-5)));
    cases
}

#[test]
fn flash_attention_forward_kernel() {
    for c in flash_attention_forward_kernel_cases() {
        c.check();
    }
}

/// JAX's text of a kernel whose masked store's old values are used:
/// `i32[7]` in blocks of 4 (the last one partial), output 0 aliased to `b`.
const MASKED_STORE_RESULT: &str = "{ lambda ; a:i32[7] b:i32[7]. let
    c:i32[7] d:i32[7] = pallas_call[
      compiler_params=None
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(2,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(int32[7]), index_map={ lambda ; e:i32[]. let
          
        in (e,) }), BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(int32[7]), index_map={ lambda ; f:i32[]. let
          
        in (f,) }), BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(int32[7]), index_map={ lambda ; g:i32[]. let
          
        in (g,) }), BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(int32[7]), index_map={ lambda ; h:i32[]. let
          
        in (h,) })))
      input_output_aliases=((1, 0),)
      interpret=False
      jaxpr={ lambda ; i:Ref<default>{i32[4]} j:Ref<default>{i32[4]} k:Ref<default>{i32[4]}
          l:Ref<default>{i32[4]}. let
          m:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
          n:i32[] = program_id[axis=0] 
          o:i32[] = mul n 4:i32[]
          p:i32[4] = add m o
          q:bool[4] = lt p 5:i32[]
          r:i32[4] <- i[...]
          s:i32[4], k[...] <- k[...], r mask=q
          _:i32[4], l[...] <- l[...], s
        in () }
      mesh=None
      metadata=None
      name=masked_store_result
      out_avals=(ShapedArray(int32[7]), ShapedArray(int32[7]))
    ] a b
  in (c, d) }";

fn jax_text_masked_store_result_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let j = parse(MASKED_STORE_RESULT);
    let mut rng = Rng::new(909);
    let args = [
        random(&mut rng, I32, &[7], Dist::Uniform(99.0)),
        random(&mut rng, I32, &[7], Dist::Uniform(99.0)),
    ];
    cases.push(Case {
        what: "masked store result".into(),
        program: j,
        args: args.to_vec(),
        tol: Tol::Exact,
    });
    cases
}

#[test]
fn jax_text_masked_store_result() {
    for c in jax_text_masked_store_result_cases() {
        c.check();
    }
}

#[test]
fn kernel_primitives_outside_a_kernel_are_errors() {
    let text = "{ lambda ; . let a:i32[] = program_id[axis=0]  in (a,) }";
    let j = parse(text);
    let e = run_lowered(&j, &[]).unwrap_err().to_string();
    assert!(e.contains("program_id") && e.contains("outside"), "{e}");
}

/// Data movement, reductions, `select_n`, a `while` with a trip count
/// from `program_id`, a `cond` returning an array, `dynamic_update_slice`,
/// `swap`'s old values and `addupdate`, in f32, f16 and i32, on row blocks
/// of random sizes that leave a partial last block.
fn kernel_primitives_cases() -> Vec<Case> {
    use jaxon_ir::DType::F16;
    let mut cases = Vec::new();
    let mut rng = Rng::new(910);
    for (rows, cols, br) in [(5usize, 3usize, 2usize), (9, 7, 4), (16, 12, 16), (3, 1, 8)] {
        for d in [F32, F16, I32] {
            let k = move |r: &[Ref]| {
                let x = r[0].load();
                let pid = program_id(0);
                // transpose, concatenate, reductions over either axis.
                let t = ok_or_raise(jnp::transpose(&x, None));
                let c = ok_or_raise(jnp::concatenate(&[x.clone(), &x * 2], 1));
                let mx = x.max(1);
                let mn = t.min(1);
                let am = x.argmin(Some(1)).astype(F32);
                // select_n through where.
                let pos = x.gt(0);
                let s = ok_or_raise(jnp::where_(&pos, &x, &(&x * 3)));
                // while with a program-dependent trip count.
                let (_, w) = ok_or_raise(jaxon_trace::while_loop(
                    |(i, _): (Array, Array)| i.le(&pid),
                    |(i, acc): (Array, Array)| (&i + 1, acc + &x),
                    (Array::from_vec(vec![0i32], &[]), x.clone()),
                ));
                // cond returning an array.
                let odd = (&pid % 2).eq(1);
                let cnd = ok_or_raise(jaxon_trace::cond(
                    &odd,
                    |v: Array| &v - 1,
                    |v: Array| &v * 2,
                    x.clone(),
                ));
                // dynamic_update_slice at a program-dependent row.
                let row = ok_or_raise(jnp::ones(&[1, x.shape()[1]], x.dtype()));
                let zero = Array::from_vec(vec![0i32], &[]);
                let du = ok_or_raise(jaxon_trace::lax::dynamic_update_slice(
                    &x,
                    &row,
                    &[&pid % 3, zero],
                ));
                r[1].store(s + w + cnd + du + c.sum(1).reshape(&[-1, 1]).astype(x.dtype()));
                r[2].store((mx.astype(F32) + am + mn.sum(All).astype(F32)).astype(F32));
                // swap's old values and addupdate on the first output.
                let old = r[1].swap(ix![0, ..], t.sum(1).astype(x.dtype()));
                r[1].add(
                    ix![1.., ..],
                    old.broadcast_to(&[x.shape()[0] - 1, x.shape()[1]]),
                );
            };
            let args = [random(&mut rng, d, &[rows, cols], Dist::Uniform(4.0))];
            let call = pallas_call(
                k,
                vec![shape_dtype(&[rows, cols], d), shape_dtype(&[rows], F32)],
            )
            .grid(rows.div_ceil(br))
            .in_specs(vec![BlockSpec::map1([br, cols], |i| (i, 0))])
            .out_specs(vec![
                BlockSpec::map1([br, cols], |i| (i, 0)),
                BlockSpec::map1([br], |i| (i,)),
            ]);
            let tol = if d == F32 {
                Tol::Rel(1e-6)
            } else if d == F16 {
                Tol::Rel(1e-3)
            } else {
                Tol::Exact
            };
            cases.push(Case::call(
                &format!("kernel primitives {d}[{rows},{cols}] / {br}"),
                call,
                &args,
                tol,
            ));
        }
    }
    cases
}

#[test]
fn kernel_primitives_on_random_shapes() {
    for c in kernel_primitives_cases() {
        let text = jaxon_ir::print::print_jaxpr(&c.program.jaxpr);
        for p in [
            "while[",
            "cond[",
            "dynamic_update_slice",
            "argmin",
            "transpose",
            "concatenate",
            "select_n",
            "reduce_min",
            "] += ",
        ] {
            assert!(text.contains(p), "{}: no {p} in\n{text}", c.what);
        }
        c.check();
    }
}

/// Every case of this file.
fn all_cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(kernel_primitives_cases());
    all.extend(blocked_elementwise_with_partial_edge_blocks_cases());
    all.extend(program_id_and_dynamic_slices_cases());
    all.extend(row_softmax_masked_to_a_power_of_two_cases());
    all.extend(matmul_gelu_loop_and_when_in_shared_and_global_memory_cases());
    all.extend(revisited_output_block_accumulates_in_grid_order_cases());
    all.extend(atomics_aliasing_masked_store_and_addupdate_bit_exact_cases());
    all.extend(layer_norm_backward_kernel_cases());
    all.extend(flash_attention_forward_kernel_cases());
    all.extend(jax_text_masked_store_result_cases());
    all
}

#[test]
fn every_pallas_kernel_compiles_with_nvrtc() {
    let mut kernels = Vec::new();
    for (i, c) in all_cases().iter().enumerate() {
        let p = jaxon_backend_cuda::lower::lower(&c.program)
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
        for mut k in p.kernels {
            k.name = format!("p{i}_{}", k.name);
            kernels.push(k);
        }
    }
    lowering_util::nvrtc_check("lowering_pallas", &kernels, |_, _| false);
}
