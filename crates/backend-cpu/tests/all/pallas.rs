//! `pallas_call` compiled by the CPU backend against the reference
//! interpreter (JAX's interpret mode) on seeded random inputs: `add_kernel`
//! with whole-array refs and with a `BlockSpec` grid (bit for bit), a
//! `program_id` kernel, row softmax masked to a power-of-two block over
//! `(1024, 125)` (masked `load` with `other`, masked `store`), the fused
//! matmul + GELU (`fori_loop` over `ds` slices, `dot`, `when` on a
//! `program_id`), partial edge blocks, aliasing and atomics, layer norm's
//! backward kernel (atomics accumulating over the grid, zeroed under
//! `when`) and flash attention's forward kernel (online softmax in a
//! `fori_loop` carrying three values). The in-place paths are in
//! `pallas_inplace.rs`.

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::DType::{F32, I32};
use jaxon_ir::{Backend, ClosedJaxpr, HostArray};
use jaxon_pallas::*;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{nn, Array};
use std::sync::Arc;

use crate::pallas_util;
use pallas_util::*;

fn add_kernel(r: &[Ref]) {
    let x = load(&r[0], ()).read();
    let y = load(&r[1], ()).read();
    store(&r[2], (), x + y);
}

#[test]
fn add_kernel_whole_and_blocked_bit_exact() {
    let mut rng = Rng(71);
    let args = [rng.i32s(&[8]), rng.i32s(&[8])];
    let whole = pallas_call(add_kernel, shape_dtype(&[8], I32));
    let blocked = pallas_call(add_kernel, shape_dtype(&[8], I32))
        .grid(4)
        .in_specs(vec![
            BlockSpec::map1([Some(2)], |i| (i,)),
            BlockSpec::map1([Some(2)], |i| (i,)),
        ])
        .out_spec(BlockSpec::map1([Some(2)], |i| (i,)));
    for call in [whole, blocked] {
        let (got, want) = both(&call, &args);
        assert_eq!(got, want);
    }
    // f32, 65536 elements in blocks of 1024 (parallel programs).
    let args = [rng.f32s(&[65536]), rng.f32s(&[65536])];
    let call = pallas_call(add_kernel, shape_dtype(&[65536], F32))
        .grid(64)
        .in_specs(vec![
            BlockSpec::map1([Some(1024)], |i| (i,)),
            BlockSpec::map1([Some(1024)], |i| (i,)),
        ])
        .out_spec(BlockSpec::map1([Some(1024)], |i| (i,)));
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

#[test]
fn program_id_exp_and_partial_edge_blocks() {
    let mut rng = Rng(72);
    // o[i] = exp(x[i]) with program_id, one element per program.
    let k = |r: &[Ref]| {
        let i = program_id(0);
        let x = r[0].get(ix![ds(&i, 1)]);
        r[1].set(ix![ds(&i, 1)], x.exp());
    };
    let args = [rng.f32s(&[16])];
    let call = pallas_call(k, shape_dtype(&[16], F32)).grid(16);
    let (got, want) = both(&call, &args);
    assert_close(&got[0], &want[0], 1e-6);
    // Blocks of 3 over 10 rows: the last block is partial (padded with NaN
    // on input, discarded on output); `num_programs` scales the result.
    let k = |r: &[Ref]| {
        let x = load(&r[0], ()).read();
        let n = num_programs(0).astype(F32);
        store(&r[1], (), x * 2.0 + n);
    };
    let args = [rng.f32s(&[10, 4])];
    let call = pallas_call(k, shape_dtype(&[10, 4], F32))
        .grid(4)
        .in_specs(vec![BlockSpec::map1([Some(3), Some(4)], |i| (i, 0))])
        .out_spec(BlockSpec::map1([Some(3), Some(4)], |i| (i, 0)));
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

#[test]
fn row_softmax_masked_1024x125() {
    let (rows, cols, block) = (1024, 125, 128);
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
    let args = [Rng(73).f32s(&[rows, cols])];
    let (got, want) = both(&call, &args);
    assert_close(&got[0], &want[0], 1e-6);
}

#[test]
fn fused_matmul_gelu_with_loop_and_when() {
    let (m, kk, n) = (256, 128, 256);
    let (bm, bn, bk) = (128, 128, 32);
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
        // The first row of program (0, *) is overwritten through a branch.
        when(&program_id(0).eq(0), || {
            o_ref.set(ix![0, ..], acc.sum(All).broadcast_to(&[bn]));
        });
    };
    let call = pallas_call(kernel, shape_dtype(&[m, n], F32))
        .grid([m / bm, n / bn])
        .in_specs(vec![
            BlockSpec::map2([bm, kk], |i, _| (i, 0)),
            BlockSpec::map2([kk, bn], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bn], |i, j| (i, j)));
    let mut rng = Rng(74);
    let args = [rng.f32s(&[m, kk]), rng.f32s(&[kk, n])];
    let (got, want) = both(&call, &args);
    assert_close(&got[0], &want[0], 1e-4);
}

#[test]
fn aliases_masked_store_addupdate_and_atomics_bit_exact() {
    let mut rng = Rng(75);
    // Refs: x, init (aliased to output 1), o0, o1, o2.
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
    let args = [rng.i32s(&[8]), rng.i32s(&[2])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
    // Every program accumulates into the same output block with atomics
    // (so programs run in order): add, max, xor, and a compare-and-swap.
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let s = x.sum(All);
        atomic_add(&r[1], 0, &s);
        atomic_max(&r[1], 1, &s);
        atomic_xor(&r[1], 2, &s);
        let old = atomic_cas(&r[1], 3, 0, &s);
        atomic_add(&r[1], 4, &old);
    };
    let call = pallas_call(k, shape_dtype(&[5], I32))
        .grid(4)
        .in_specs(vec![BlockSpec::map1([Some(2)], |i| (i,))])
        .out_spec(BlockSpec::whole());
    let args = [rng.i32s(&[8])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

#[test]
fn layer_norm_backward_kernel_with_atomics() {
    let (n, d) = (16, 24);
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
    let mut rng = Rng(76);
    let args = [
        rng.f32s(&[n, d]),
        rng.f32s(&[d]),
        rng.f32s(&[n]),
        rng.f32s(&[n]),
        rng.f32s(&[n, d]),
    ];
    let (got, want) = both(&call, &args);
    for (g, w) in got.iter().zip(&want) {
        assert_close(g, w, 1e-6);
    }
}

#[test]
fn flash_attention_forward_kernel() {
    let (bh, s, d, block_q, block_k) = (2, 64, 16, 16, 16);
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
    let mut rng = Rng(77);
    let args = [
        rng.f32s(&[bh, s, d]),
        rng.f32s(&[bh, s, d]),
        rng.f32s(&[bh, s, d]),
    ];
    let (got, want) = both(&call, &args);
    assert_close(&got[0], &want[0], 1e-5);
}

/// JAX's text of a kernel whose masked store's result (the old values, as
/// `masked_swap` prints it) is used: `o, h[...] <- h[...], n mask=m` over
/// `i32[7]` in blocks of 4 (the last one partial), `h` aliased to input
/// `b`. Output 0 is `a` where the global index is below 5, else `b`;
/// output 1 is the old values, `b` itself (in-bounds lanes are read,
/// masked or not; out-of-bounds ones are discarded on output).
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

#[test]
fn masked_store_result_from_jax_text() {
    let j = jaxon_ir::parse::parse_jaxpr(MASKED_STORE_RESULT).unwrap();
    assert_eq!(jaxon_ir::print::print_jaxpr(&j), MASKED_STORE_RESULT);
    jaxon_ir::check::check_jaxpr(&j).unwrap();
    let j = ClosedJaxpr::without_consts(Arc::new(j));
    let mut rng = Rng(79);
    let args = [rng.i32s(&[7]), rng.i32s(&[7])];
    let (a, b) = (args[0].to_f64_vec(), args[1].to_f64_vec());
    let want0: Vec<f64> = (0..7).map(|g| if g < 5 { a[g] } else { b[g] }).collect();
    let interp = jaxon_ir::eval_closed_jaxpr(&j, &args).unwrap();
    assert_eq!(interp[0].to_f64_vec(), want0);
    assert_eq!(interp[1].to_f64_vec(), b);
    let cpu = CpuBackend::with_threads(2);
    let exe = cpu.compile(&j).unwrap();
    let bufs: Vec<Arc<dyn jaxon_ir::Buffer>> =
        args.iter().map(|a| cpu.to_device(a).unwrap()).collect();
    let got: Vec<HostArray> = exe
        .execute(&bufs)
        .unwrap()
        .iter()
        .map(|b| b.to_host().unwrap())
        .collect();
    assert_eq!(got, interp);
}

/// Block windows on shapes the blocks do not divide: `(10, 13)` in
/// `(4, 5)` blocks over a `(3, 3)` grid (edge blocks along both dims, read
/// padded and written clipped), a second input read through a transposed
/// index map, and an output written with a scalar-indexed row; bit for bit
/// against interpret mode.
#[test]
fn edge_blocks_in_two_dims_bit_exact() {
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let y = r[1].load();
        let i = program_id(0);
        r[2].store(&x * 2 + &y.max(All) + &i);
        r[2].set(ix![1, ..], r[0].get(ix![0, ..]) - 1);
    };
    let call = pallas_call(k, shape_dtype(&[10, 13], I32))
        .grid([3, 3])
        .in_specs(vec![
            BlockSpec::map2([4, 5], |i, j| (i, j)),
            BlockSpec::map2([5, 4], |i, j| (j, i)),
        ])
        .out_spec(BlockSpec::map2([4, 5], |i, j| (i, j)));
    let mut rng = Rng(80);
    let args = [rng.i32s(&[10, 13]), rng.i32s(&[13, 10])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

/// Squeezed (`None`) block dims with partial blocks: `(3, 10, 8)` read as
/// `(None, 4, 8)` blocks and `(8, 3)` as `(8, None)` columns, over a grid
/// `(3, 3)`; f32 arithmetic that is exact (adds, products by powers of two,
/// max), compared bit for bit.
#[test]
fn squeezed_block_dims_with_edges_bit_exact() {
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let c = r[1].load();
        let o = &x * 0.5 + c.reshape(&[1, 8]);
        r[2].store(&o);
        r[3].store(r[0].get(ix![0, ..]) * 4.0);
    };
    let call = pallas_call(
        k,
        vec![shape_dtype(&[3, 10, 8], F32), shape_dtype(&[3, 8], F32)],
    )
    .grid([3, 3])
    .in_specs(vec![
        BlockSpec::map2([None, Some(4), Some(8)], |b, i| (b, i, 0)),
        BlockSpec::map2([Some(8), None], |b, _| (0, b)),
    ])
    .out_specs(vec![
        BlockSpec::map2([None, Some(4), Some(8)], |b, i| (b, i, 0)),
        BlockSpec::map2([None, Some(8)], |b, _| (b, 0)),
    ]);
    let mut rng = Rng(81);
    let args = [rng.f32s(&[3, 10, 8]), rng.f32s(&[8, 3])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

/// Programs in parallel over the axes that keep writes disjoint: the out
/// spec `(i, 0)` ignores grid axis 1, along which each program accumulates
/// into its row block (zeroed under `when` at `j == 0`), so rows run in
/// parallel and columns in order. Large enough to use two threads; equal
/// to interpret mode (integers, exact).
#[test]
fn parallel_over_disjoint_axes_accumulating_along_the_other() {
    let k = |r: &[Ref]| {
        when(&program_id(1).eq(0), || r[1].store(0));
        let x = r[0].load();
        r[1].store(r[1].load() + x.sum(1).reshape(&[-1, 1]) * (program_id(1) + 1));
    };
    let call = pallas_call(k, shape_dtype(&[512, 4], I32))
        .grid([4, 3])
        .in_specs(vec![BlockSpec::map2([128, 256], |i, j| (i, j))])
        .out_spec(BlockSpec::map2([128, 4], |i, _| (i, 0)));
    let mut rng = Rng(82);
    let args = [rng.i32s(&[512, 768])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
    // A 2-D grid whose output blocks are all distinct: fully parallel,
    // strided output blocks written back from the workers' buffers.
    let k = |r: &[Ref]| r[1].store(r[0].load() * 3 - program_id(1));
    let call = pallas_call(k, shape_dtype(&[512, 768], I32))
        .grid([4, 3])
        .in_specs(vec![BlockSpec::map2([128, 256], |i, j| (i, j))])
        .out_spec(BlockSpec::map2([128, 256], |i, j| (i, j)));
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

/// In-kernel reads with traced starts (run on the step's buffers, no copy
/// of the ref): `get` clamps a start past the end into bounds, as the
/// interpreter does, for a 1-D and a row-sliced 2-D ref.
#[test]
fn kernel_gets_with_clamped_traced_starts() {
    let k = |r: &[Ref]| {
        let s = program_id(0) * 3;
        let a = r[0].get(ix![ds(&s, 4)]);
        let b = r[1].get(ix![ds(&s, 4), 1]);
        r[2].set(ix![.., 0], a);
        r[2].set(ix![.., 1], b);
    };
    let call = pallas_call(k, shape_dtype(&[4, 4, 2], I32))
        .grid(4)
        .in_specs(vec![
            BlockSpec::map1([10], |_| 0),
            BlockSpec::map1([Some(10), Some(3)], |_| (0, 0)),
        ])
        .out_spec(BlockSpec::map1([None, Some(4), Some(2)], |i| (i, 0, 0)));
    let mut rng = Rng(83);
    let args = [rng.i32s(&[10]), rng.i32s(&[10, 3])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
    // Program 3 starts at 9, clamped to 6: its rows are x[6..10].
    let x = args[0].to_f64_vec();
    let g = got[0].to_f64_vec();
    for (r, row) in (6..10).enumerate() {
        assert_eq!(g[3 * 8 + r * 2], x[row]);
    }
}

/// Reads of a strided block straight from its window inside a `cond`
/// branch and a `fori_loop` body (the window's block view composed with
/// the kernel's indices), squeezed dim included; bit for bit.
#[test]
fn window_reads_inside_branches_and_loops_bit_exact() {
    let k = |r: &[Ref]| {
        let acc0 = r[0].get(ix![0..2, ..]);
        let acc = ok_or_raise(fori_loop(
            1,
            4,
            |t, acc: Array| {
                let s = &t * 2;
                acc + r[0].get(ix![ds(&s, 2), ..])
            },
            acc0,
        ));
        r[1].store(&acc);
        when(&program_id(1).eq(1), || {
            r[1].set(ix![0, ..], r[0].get(ix![7, ..]) * 2);
        });
    };
    let call = pallas_call(k, shape_dtype(&[3, 2, 12], I32))
        .grid([3, 3])
        .in_specs(vec![BlockSpec::map2([None, Some(8), Some(4)], |b, j| {
            (b, 0, j)
        })])
        .out_spec(BlockSpec::map2([None, Some(2), Some(4)], |b, j| (b, 0, j)));
    let mut rng = Rng(84);
    let args = [rng.i32s(&[3, 8, 12])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}
