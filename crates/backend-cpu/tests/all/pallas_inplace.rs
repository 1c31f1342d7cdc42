//! `pallas_call` compiled by the CPU backend, the in-place paths: strided
//! output blocks written by the kernel program (edges, squeezed dims,
//! aliases), accumulating GEMMs over box reads in a `block_k` loop, and the
//! call on the program's own buffers (outputs the grid covers only in part,
//! pooled buffers dirtied first); bit for bit against interpret mode.

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::DType::{F32, I32};
use jaxon_ir::{Backend, HostArray};
use jaxon_pallas::*;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;
use std::sync::Arc;

use crate::pallas_util;
use pallas_util::*;

/// Output blocks that are not one run of memory, written in place by the
/// kernel program with the array's row stride: an elementwise kernel
/// (called row by row) and a GEMM (`o = dot(a, b)`, destination stride)
/// over `(100, 130)` outputs in `(40, 48)` blocks, so the last row and
/// column of blocks are partial edge blocks (through a buffer of the
/// window's layout); a second output aliased to an input. Bit for bit
/// against interpret mode (exact arithmetic).
#[test]
fn strided_output_blocks_in_place_bit_exact() {
    let (m, n, kk) = (100, 130, 24);
    let (bm, bn) = (40, 48);
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let a = r[1].load();
        let b = r[2].load();
        let init = r[3].load();
        r[4].store(&x * 2.0 + 1.0);
        r[5].store(dot(&a, &b));
        r[6].store(&init * 0.5 - &x);
    };
    let blk = |i: Array, j: Array| (i, j);
    let call = pallas_call(
        k,
        vec![
            shape_dtype(&[m, n], F32),
            shape_dtype(&[m, n], F32),
            shape_dtype(&[m, n], F32),
        ],
    )
    .grid([m.div_ceil(bm), n.div_ceil(bn)])
    .in_specs(vec![
        BlockSpec::map2([bm, bn], blk),
        BlockSpec::map2([bm, kk], |i, _| (i, 0)),
        BlockSpec::map2([kk, bn], |_, j| (0, j)),
        BlockSpec::map2([bm, bn], blk),
    ])
    .out_specs(vec![
        BlockSpec::map2([bm, bn], blk),
        BlockSpec::map2([bm, bn], blk),
        BlockSpec::map2([bm, bn], blk),
    ])
    .input_output_aliases(&[(3, 2)]);
    let mut rng = Rng(90);
    let args = [
        small_ints(&mut rng, &[m, n]),
        small_ints(&mut rng, &[m, kk]),
        small_ints(&mut rng, &[kk, n]),
        small_ints(&mut rng, &[m, n]),
    ];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
    // Squeezed leading dim: `(2, 90, 70)` in `(None, 36, 40)` blocks.
    let k = |r: &[Ref]| r[1].store(r[0].load() * 3.0 - 2.0);
    let call = pallas_call(k, shape_dtype(&[2, 90, 70], F32))
        .grid([2, 3, 2])
        .in_specs(vec![BlockSpec::map3(
            [None, Some(36), Some(40)],
            |b, i, j| (b, i, j),
        )])
        .out_spec(BlockSpec::map3([None, Some(36), Some(40)], |b, i, j| {
            (b, i, j)
        }));
    let args = [small_ints(&mut rng, &[2, 90, 70])];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

/// `acc += dot(x, y)` in a `fori_loop` (one accumulating GEMM per step, no
/// product temporary), the sum stored to strided output blocks; inputs of
/// small integers make every sum exact, so bit for bit against interpret
/// mode. A second kernel accumulates `dot` into a value that is also read
/// afterwards (`acc` returned and used twice).
#[test]
fn accumulating_dot_in_loop_bit_exact() {
    let (m, kk, n) = (96, 64, 160);
    let (bm, bn, bk) = (48, 80, 16);
    let kernel = move |r: &[Ref]| {
        let (x_ref, y_ref, o_ref, p_ref) = (&r[0], &r[1], &r[2], &r[3]);
        let acc0 = x_ref.get(ix![.., 0..1]) * 0.0 + 3.0;
        let acc0 = ok_or_raise(jnp::broadcast_to(&acc0, &[bm, bn]));
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
        o_ref.store(&acc);
        let x = x_ref.get(ix![.., 0..bk]);
        let y = y_ref.get(ix![0..bk, ..]);
        p_ref.store(dot(&x, &y) + &acc * 2.0);
    };
    let call = pallas_call(
        kernel,
        vec![shape_dtype(&[m, n], F32), shape_dtype(&[m, n], F32)],
    )
    .grid([m / bm, n / bn])
    .in_specs(vec![
        BlockSpec::map2([bm, kk], |i, _| (i, 0)),
        BlockSpec::map2([kk, bn], |_, j| (0, j)),
    ])
    .out_specs(vec![
        BlockSpec::map2([bm, bn], |i, j| (i, j)),
        BlockSpec::map2([bm, bn], |i, j| (i, j)),
    ]);
    let mut rng = Rng(91);
    let args = [
        small_ints(&mut rng, &[m, kk]),
        small_ints(&mut rng, &[kk, n]),
    ];
    let (got, want) = both(&call, &args);
    assert_eq!(got, want);
}

/// The call runs on the program's own buffers (no copies in and out): an
/// output the grid covers only in part keeps zeros elsewhere (as interpret
/// mode starts outputs), an aliased output keeps its input's values where
/// no program writes, and a kernel inside a larger jitted program reads
/// operands computed there; bit for bit.
#[test]
fn outputs_partly_covered_and_aliased_on_program_buffers() {
    let k = |r: &[Ref]| {
        let x = r[0].load();
        r[2].store(&x + 1);
        r[3].store(&x * 2);
    };
    // Grid (2,) over blocks of 3: rows 6..10 of both outputs are never
    // written; output 1 is aliased to input 1.
    let call = pallas_call(
        k,
        vec![shape_dtype(&[10, 4], I32), shape_dtype(&[10, 4], I32)],
    )
    .grid(2)
    .in_specs(vec![
        BlockSpec::map1([Some(3), Some(4)], |i| (i, 0)),
        BlockSpec::whole(),
    ])
    .out_specs(vec![
        BlockSpec::map1([Some(3), Some(4)], |i| (i, 0)),
        BlockSpec::map1([Some(3), Some(4)], |i| (i, 0)),
    ])
    .input_output_aliases(&[(1, 1)]);
    let mut rng = Rng(92);
    let args = [rng.i32s(&[10, 4]), rng.i32s(&[10, 4])];
    // Staged inside a program that computes the kernel's operands and
    // uses its results.
    let arrays: Vec<Array> = args.iter().map(to_array).collect();
    let j = jaxon_trace::make_jaxpr(|xs: Vec<Array>| {
        let outs = call.call(&[&xs[0] * 3, &xs[1] - 5]).unwrap();
        vec![&outs[0] + &outs[1], outs[1].clone()]
    })(arrays)
    .unwrap();
    let want = jaxon_ir::eval_closed_jaxpr(&j, &args).unwrap();
    let cpu = CpuBackend::with_threads(2);
    let exe = cpu.compile(&j).unwrap();
    let bufs: Vec<Arc<dyn jaxon_ir::Buffer>> =
        args.iter().map(|a| cpu.to_device(a).unwrap()).collect();
    for _ in 0..2 {
        // Twice: the second call reuses pooled buffers holding old values.
        let got: Vec<HostArray> = exe
            .execute(&bufs)
            .unwrap()
            .iter()
            .map(|b| b.to_host().unwrap())
            .collect();
        assert_eq!(got, want);
    }
    let x = args[1].to_f64_vec();
    let o1 = want[1].to_f64_vec();
    assert_eq!(
        o1[24..],
        x[24..].iter().map(|v| v - 5.0).collect::<Vec<_>>()[..]
    );
    // The call as the whole program: its outputs come from the backend's
    // pool, here first dirtied by another program's results of the same
    // type, so rows 6..10 must be zeroed (output 0) or copied from the
    // aliased input (output 1).
    let j = stage(&call, &args);
    let want = jaxon_ir::eval_closed_jaxpr(&j, &args).unwrap();
    let exe = cpu.compile(&j).unwrap();
    let arrays: Vec<Array> = args.iter().map(to_array).collect();
    let noise =
        jaxon_trace::make_jaxpr(|xs: Vec<Array>| vec![&xs[0] + 1000, &xs[1] - 1000])(arrays)
            .unwrap();
    let noise = cpu.compile(&noise).unwrap();
    for _ in 0..3 {
        drop(noise.execute(&bufs).unwrap());
        let got: Vec<HostArray> = exe
            .execute(&bufs)
            .unwrap()
            .iter()
            .map(|b| b.to_host().unwrap())
            .collect();
        assert_eq!(got, want);
    }
}
