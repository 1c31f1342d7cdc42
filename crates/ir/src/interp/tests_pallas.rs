//! Tests of `pallas_call` and the Pallas primitives: blocked grids with
//! partial edge blocks, program ids, masked loads and stores, atomics,
//! aliasing, and the interpreter `Backend`.

use super::testkit::*;
use super::{eval_closed_jaxpr, eval_jaxpr, InterpreterBackend};
use crate::array::HostArray;
use crate::aval::{Aval, ShapedArray};
use crate::backend::Backend;
use crate::dtype::DType::{self, Bool, F32, I32};
use crate::jaxpr::{Atom, ClosedJaxpr, Jaxpr, Var};
use crate::primitive::{
    AtomicOp, BinaryOp, BlockDim, BlockMapping, IndexEntry, IndexValue, Indexer, Primitive,
};
use crate::primitive::{
    AtomicRmwParams, Control, Elementwise, GetParams, JitParams, LoadParams, NumProgramsParams,
    Pallas, PallasCallParams, ProgramIdParams, State, StoreParams, SwapParams,
};

/// An index map from a grid of rank `g` to block indices built by `f`.
fn imap(g: usize, f: impl Fn(&[Var]) -> Vec<Atom>) -> ClosedJaxpr {
    let mut b = Builder::new();
    let ids: Vec<Var> = (0..g).map(|_| b.arg(sa(I32, &[]))).collect();
    let outs = f(&ids);
    closed(b.finish(outs))
}

fn ident(g: usize) -> ClosedJaxpr {
    imap(g, |ids| ids.iter().map(|v| Atom::Var(*v)).collect())
}

fn zero_map(g: usize, rank: usize) -> ClosedJaxpr {
    imap(g, |_| vec![lit(0.0, I32); rank])
}

fn bm(block: &[usize], index_map: ClosedJaxpr, dtype: DType, shape: &[usize]) -> BlockMapping {
    BlockMapping {
        block_shape: block
            .iter()
            .map(|&n| {
                if n == 0 {
                    BlockDim::Squeezed
                } else {
                    BlockDim::Blocked(n)
                }
            })
            .collect(),
        index_map,
        array_aval: ShapedArray::of(dtype, shape),
    }
}

fn call(
    kernel: Jaxpr,
    grid: &[usize],
    block_mappings: Vec<BlockMapping>,
    n_in: usize,
    aliases: Vec<(usize, usize)>,
) -> ClosedJaxpr {
    let out_avals: Vec<ShapedArray> = block_mappings[n_in..]
        .iter()
        .map(|m| m.array_aval.clone())
        .collect();
    let mut b = Builder::new();
    let ins: Vec<Atom> = block_mappings[..n_in]
        .iter()
        .map(|m| b.arg(Aval::Array(m.array_aval.clone())).into())
        .collect();
    let outs = b.eqn(
        Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
            kernel: kernel.into(),
            grid: grid.to_vec(),
            block_mappings,
            out_avals: out_avals.clone(),
            name: Some("k".into()),
            interpret: true,
            debug: false,
            input_output_aliases: aliases,
        })),
        ins,
        out_avals.into_iter().map(Aval::Array).collect(),
    );
    closed(b.finish(outs.into_iter().map(Atom::Var).collect()))
}

fn load(
    b: &mut Builder,
    r: Var,
    entries: Option<Vec<IndexEntry>>,
    extra: Vec<Atom>,
    out: Aval,
    mask: bool,
    other: bool,
) -> Var {
    let mut inputs = vec![r.into()];
    inputs.extend(extra);
    b.eqn(
        Primitive::Pallas(Pallas::Load(LoadParams {
            indexers: entries
                .map(|entries| vec![Indexer { entries }])
                .unwrap_or_default(),
            has_mask: mask,
            has_other: other,
        })),
        inputs,
        vec![out],
    )[0]
}

fn store(b: &mut Builder, r: Var, entries: Option<Vec<IndexEntry>>, extra: Vec<Atom>, mask: bool) {
    // The dropped result (the old values) has the stored value's type.
    let old = match &extra[extra.len() - 1 - mask as usize] {
        Atom::Var(v) => b.j.aval(*v).clone(),
        Atom::Lit(l) => sa(l.dtype, &[]),
    };
    let mut inputs = vec![r.into()];
    inputs.extend(extra);
    b.eqn_drop(
        Primitive::Pallas(Pallas::Store(StoreParams {
            indexers: entries
                .map(|entries| vec![Indexer { entries }])
                .unwrap_or_default(),
            has_mask: mask,
        })),
        inputs,
        vec![old],
    );
}

fn ds(start: i64, size: usize) -> IndexEntry {
    IndexEntry::Slice {
        start: IndexValue::Static(start),
        size,
        stride: 1,
    }
}

#[test]
fn blocked_add_with_partial_edge_block() {
    // x + y over f32[10] in blocks of 4: grid 3, the last block is partial.
    let mut k = Builder::new();
    let xr = k.arg(rf(F32, &[4]));
    let yr = k.arg(rf(F32, &[4]));
    let or = k.arg(rf(F32, &[4]));
    let a = k.eqn(
        Primitive::State(State::Get(GetParams { indexers: vec![] })),
        vec![xr.into()],
        vec![sa(F32, &[4])],
    )[0];
    let bv = k.eqn(
        Primitive::State(State::Get(GetParams { indexers: vec![] })),
        vec![yr.into()],
        vec![sa(F32, &[4])],
    )[0];
    let c = k.eqn(
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
        vec![a.into(), bv.into()],
        vec![sa(F32, &[4])],
    )[0];
    k.eqn_drop(
        Primitive::State(State::Swap(SwapParams { indexers: vec![] })),
        vec![or.into(), c.into()],
        vec![sa(F32, &[4])],
    );
    let kernel = k.finish(vec![]);
    let maps = (0..3).map(|_| bm(&[4], ident(1), F32, &[10])).collect();
    let j = call(kernel, &[3], maps, 2, vec![]);
    let mut rng = Rng::new(20);
    let (x, y) = (rng.f32s(10, -3.0, 3.0), rng.f32s(10, -3.0, 3.0));
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[10], &x), arr(F32, &[10], &y)]).unwrap();
    let want: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (*a as f32 + *b as f32) as f64)
        .collect();
    assert_eq!(out[0].to_f64_vec(), want);
}

#[test]
fn copy_kernel_pads_partial_blocks_with_nan() {
    // A 2-d copy over a (3, 2) grid of (2, 4) blocks of a 5x7 array; the
    // second output is 6x8, so its edge receives the padding of the input.
    let mut k = Builder::new();
    let xr = k.arg(rf(F32, &[2, 4]));
    let o1 = k.arg(rf(F32, &[2, 4]));
    let o2 = k.arg(rf(F32, &[2, 4]));
    let v = load(&mut k, xr, None, vec![], sa(F32, &[2, 4]), false, false);
    store(&mut k, o1, None, vec![v.into()], false);
    store(&mut k, o2, None, vec![v.into()], false);
    let kernel = k.finish(vec![]);
    let maps = vec![
        bm(&[2, 4], ident(2), F32, &[5, 7]),
        bm(&[2, 4], ident(2), F32, &[5, 7]),
        bm(&[2, 4], ident(2), F32, &[6, 8]),
    ];
    let j = call(kernel, &[3, 2], maps, 1, vec![]);
    let x = Rng::new(21).f32s(35, -1.0, 1.0);
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[5, 7], &x)]).unwrap();
    assert_eq!(out[0].to_f64_vec(), x);
    let o2 = out[1].to_f64_vec();
    for r in 0..6 {
        for c in 0..8 {
            let got = o2[8 * r + c];
            if r < 5 && c < 7 {
                assert_eq!(got, x[7 * r + c]);
            } else {
                assert!(got.is_nan(), "({r}, {c}) = {got}");
            }
        }
    }
}

#[test]
fn squeezed_blocks_and_program_ids() {
    // Grid (2, 3); each program writes its ids and the grid size into 0-d
    // blocks of i32[2, 3] outputs, and copies row i of x (squeezed) into row
    // i of a copy.
    let mut k = Builder::new();
    let xr = k.arg(rf(F32, &[5]));
    let o0 = k.arg(rf(I32, &[]));
    let o1 = k.arg(rf(I32, &[]));
    let o2 = k.arg(rf(I32, &[]));
    let oc = k.arg(rf(F32, &[5]));
    let p0 = k.eqn(
        Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: 0 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    let p1 = k.eqn(
        Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: 1 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    let n1 = k.eqn(
        Primitive::Pallas(Pallas::NumPrograms(NumProgramsParams { axis: 1 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    store(&mut k, o0, None, vec![p0.into()], false);
    store(&mut k, o1, None, vec![p1.into()], false);
    store(&mut k, o2, None, vec![n1.into()], false);
    let v = load(&mut k, xr, None, vec![], sa(F32, &[5]), false, false);
    store(&mut k, oc, None, vec![v.into()], false);
    let kernel = k.finish(vec![]);
    let row_map = || imap(2, |ids| vec![ids[0].into(), lit(0.0, I32)]);
    let maps = vec![
        bm(&[0, 5], row_map(), F32, &[2, 5]),
        bm(&[0, 0], ident(2), I32, &[2, 3]),
        bm(&[0, 0], ident(2), I32, &[2, 3]),
        bm(&[0, 0], ident(2), I32, &[2, 3]),
        bm(&[0, 5], row_map(), F32, &[2, 5]),
    ];
    let j = call(kernel, &[2, 3], maps, 1, vec![]);
    let x = Rng::new(22).f32s(10, -1.0, 1.0);
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[2, 5], &x)]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(out[1].to_f64_vec(), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
    assert_eq!(out[2].to_f64_vec(), vec![3.0; 6]);
    assert_eq!(out[3].to_f64_vec(), x);
}

#[test]
fn program_id_indexed_store_into_one_block() {
    // Every program writes o[pid] = 6 - pid into the same whole-array block.
    let mut k = Builder::new();
    let or = k.arg(rf(I32, &[6]));
    let p = k.eqn(
        Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: 0 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    let n = k.eqn(
        Primitive::Pallas(Pallas::NumPrograms(NumProgramsParams { axis: 0 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    let v = k.eqn(
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Sub)),
        vec![n.into(), p.into()],
        vec![sa(I32, &[])],
    )[0];
    store(
        &mut k,
        or,
        Some(vec![IndexEntry::Int(IndexValue::Dynamic(1))]),
        vec![p.into(), v.into()],
        false,
    );
    let kernel = k.finish(vec![]);
    let j = call(
        kernel,
        &[6],
        vec![bm(&[6], zero_map(1, 1), I32, &[6])],
        0,
        vec![],
    );
    let out = eval_closed_jaxpr(&j, &[]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![6.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
}

#[test]
fn masked_load_and_store_skip_out_of_bounds_lanes() {
    // v = x[6:14] (mask m, other -1); o = v; o2[6:14] = v where m.
    let mut k = Builder::new();
    let xr = k.arg(rf(F32, &[10]));
    let mr = k.arg(rf(Bool, &[8]));
    let or = k.arg(rf(F32, &[8]));
    let o2 = k.arg(rf(F32, &[10]));
    let m = load(&mut k, mr, None, vec![], sa(Bool, &[8]), false, false);
    let v = load(
        &mut k,
        xr,
        Some(vec![ds(6, 8)]),
        vec![m.into(), lit(-1.0, F32)],
        sa(F32, &[8]),
        true,
        true,
    );
    store(&mut k, or, None, vec![v.into()], false);
    store(
        &mut k,
        o2,
        Some(vec![ds(6, 8)]),
        vec![v.into(), m.into()],
        true,
    );
    let kernel = k.finish(vec![]);
    let maps = vec![
        bm(&[10], zero_map(0, 1), F32, &[10]),
        bm(&[8], zero_map(0, 1), Bool, &[8]),
        bm(&[8], zero_map(0, 1), F32, &[8]),
        bm(&[10], zero_map(0, 1), F32, &[10]),
    ];
    let j = call(kernel, &[], maps, 2, vec![]);
    let x = Rng::new(23).f32s(10, -1.0, 1.0);
    let mask = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0];
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[10], &x), arr(Bool, &[8], &mask)]).unwrap();
    assert_eq!(
        out[0].to_f64_vec(),
        vec![x[6], -1.0, x[8], x[9], -1.0, -1.0, -1.0, -1.0]
    );
    let mut want = vec![0.0; 10];
    want[6] = x[6];
    want[8] = x[8];
    want[9] = x[9];
    assert_eq!(out[1].to_f64_vec(), want);
    // Without the mask, out-of-bounds lanes read the uninitialised NaN.
    let mut k = Builder::new();
    let xr = k.arg(rf(F32, &[10]));
    let or = k.arg(rf(F32, &[8]));
    let v = load(
        &mut k,
        xr,
        Some(vec![ds(6, 8)]),
        vec![],
        sa(F32, &[8]),
        false,
        false,
    );
    store(&mut k, or, None, vec![v.into()], false);
    let maps = vec![
        bm(&[10], zero_map(0, 1), F32, &[10]),
        bm(&[8], zero_map(0, 1), F32, &[8]),
    ];
    let j = call(k.finish(vec![]), &[], maps, 1, vec![]);
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[10], &x)])
        .unwrap()
        .remove(0)
        .to_f64_vec();
    assert_eq!(out[..4], x[6..10]);
    assert!(out[4..].iter().all(|v| v.is_nan()));
}

#[test]
fn atomic_add_accumulates_across_the_grid() {
    // Grid 5 over f32[10] in blocks of 2: acc[0] += x0 + x1 atomically;
    // each program records the value acc held before its first add.
    let mut k = Builder::new();
    let xr = k.arg(rf(F32, &[2]));
    let acc = k.arg(rf(F32, &[1]));
    let olds = k.arg(rf(F32, &[]));
    let at = |i: i64| Some(vec![IndexEntry::Int(IndexValue::Static(i))]);
    let a0 = load(&mut k, xr, at(0), vec![], sa(F32, &[]), false, false);
    let a1 = load(&mut k, xr, at(1), vec![], sa(F32, &[]), false, false);
    let rmw = |k: &mut Builder, v: Var| {
        k.eqn(
            Primitive::Pallas(Pallas::AtomicRmw(AtomicRmwParams {
                indexers: vec![Indexer {
                    entries: vec![IndexEntry::Int(IndexValue::Static(0))],
                }],
                op: AtomicOp::Add,
            })),
            vec![acc.into(), v.into()],
            vec![sa(F32, &[])],
        )[0]
    };
    let old = rmw(&mut k, a0);
    rmw(&mut k, a1);
    store(&mut k, olds, None, vec![old.into()], false);
    let maps = vec![
        bm(&[2], ident(1), F32, &[10]),
        bm(&[1], zero_map(1, 1), F32, &[1]),
        bm(&[0], ident(1), F32, &[5]),
    ];
    let j = call(k.finish(vec![]), &[5], maps, 1, vec![]);
    let x = Rng::new(24).f32s(10, -2.0, 2.0);
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[10], &x)]).unwrap();
    let mut s = 0f32;
    let mut olds = Vec::new();
    for i in 0..5 {
        olds.push(s as f64);
        s += x[2 * i] as f32;
        s += x[2 * i + 1] as f32;
    }
    assert_eq!(out[0].to_f64_vec(), vec![s as f64]);
    assert_eq!(out[1].to_f64_vec(), olds);
}

#[test]
fn input_output_alias_keeps_unvisited_blocks() {
    // o aliases x; only block 0 of 2 is visited, where o = y.
    let mut k = Builder::new();
    let _xr = k.arg(rf(F32, &[4]));
    let yr = k.arg(rf(F32, &[4]));
    let or = k.arg(rf(F32, &[4]));
    let v = load(&mut k, yr, None, vec![], sa(F32, &[4]), false, false);
    store(&mut k, or, None, vec![v.into()], false);
    let maps = (0..3).map(|_| bm(&[4], ident(1), F32, &[8])).collect();
    let j = call(k.finish(vec![]), &[1], maps, 2, vec![(0, 0)]);
    let mut rng = Rng::new(25);
    let (x, y) = (rng.f32s(8, -1.0, 1.0), rng.f32s(8, -1.0, 1.0));
    let out = eval_closed_jaxpr(&j, &[arr(F32, &[8], &x), arr(F32, &[8], &y)]).unwrap();
    assert_eq!(out[0].to_f64_vec(), [&y[..4], &x[4..]].concat());
}

#[test]
fn pallas_errors() {
    let mut b = Builder::new();
    let p = b.eqn(
        Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: 0 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    let j = b.finish(vec![p.into()]);
    assert!(eval_jaxpr(&j, &[], &[]).is_err());
    // A program id past the grid's rank.
    let mut k = Builder::new();
    let or = k.arg(rf(I32, &[]));
    let p = k.eqn(
        Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: 1 })),
        vec![],
        vec![sa(I32, &[])],
    )[0];
    store(&mut k, or, None, vec![p.into()], false);
    let j = call(
        k.finish(vec![]),
        &[2],
        vec![bm(&[0], ident(1), I32, &[2])],
        0,
        vec![],
    );
    assert!(eval_closed_jaxpr(&j, &[]).is_err());
    // Too few block mappings.
    let k = Builder::new().finish(vec![]);
    let mut j = call(k, &[2], vec![bm(&[2], ident(1), F32, &[4])], 1, vec![]);
    let mut jj = (*j.jaxpr).clone();
    if let Primitive::Pallas(Pallas::PallasCall(PallasCallParams { out_avals, .. })) =
        &mut jj.eqns[0].primitive
    {
        out_avals.push(ShapedArray::of(F32, &[4]));
    }
    j.jaxpr = jj.into();
    assert!(eval_closed_jaxpr(&j, &[arr(F32, &[4], &[0.0; 4])]).is_err());
}

#[test]
fn backend_round_trip() {
    let backend = InterpreterBackend::new();
    assert_eq!(backend.name(), "interpreter");
    // f(x, y) = (x + y, y) through a jit.
    let mut inner = Builder::new();
    let x = inner.arg(sa(F32, &[3]));
    let y = inner.arg(sa(F32, &[3]));
    let s = inner.eqn(
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
        vec![x.into(), y.into()],
        vec![sa(F32, &[3])],
    )[0];
    let inner = closed(inner.finish(vec![s.into(), y.into()]));
    let mut b = Builder::new();
    let x = b.arg(sa(F32, &[3]));
    let y = b.arg(sa(F32, &[3]));
    let outs = b.eqn(
        Primitive::Control(Control::Jit(JitParams {
            name: "f".into(),
            jaxpr: inner,
        })),
        vec![x.into(), y.into()],
        vec![sa(F32, &[3]), sa(F32, &[3])],
    );
    let j = closed(b.finish(outs.into_iter().map(Atom::Var).collect()));
    let exe = backend.compile(&j).unwrap();
    let mut rng = Rng::new(26);
    let (xv, yv) = (rng.f32s(3, -1.0, 1.0), rng.f32s(3, -1.0, 1.0));
    let bx = backend.to_device(&arr(F32, &[3], &xv)).unwrap();
    let by = backend.to_device(&arr(F32, &[3], &yv)).unwrap();
    assert_eq!(bx.aval(), ShapedArray::of(F32, &[3]));
    let outs = exe.execute(&[bx.clone(), by]).unwrap();
    let host: Vec<HostArray> = outs.iter().map(|o| o.to_host().unwrap()).collect();
    let want: Vec<f64> = xv
        .iter()
        .zip(&yv)
        .map(|(a, b)| (*a as f32 + *b as f32) as f64)
        .collect();
    assert_eq!(host[0].to_f64_vec(), want);
    assert_eq!(host[1].to_f64_vec(), yv);
    assert!(outs[1]
        .as_any()
        .downcast_ref::<super::HostBuffer>()
        .is_some());
    // Wrong arity is an error, not a panic.
    assert!(exe.execute(&[bx]).is_err());
}
