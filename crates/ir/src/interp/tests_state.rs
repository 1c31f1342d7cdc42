//! Tests of `get`, `swap`, `addupdate` and the atomics on `Ref`s, against
//! index arithmetic written out by hand.

use super::testkit::*;
use super::{eval_jaxpr, Value};
use crate::aval::Aval;
use crate::dtype::DType::{F32, I32};
use crate::jaxpr::{Atom, Jaxpr};
use crate::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicRmwParams, GetParams, Pallas, State, SwapParams,
};
use crate::primitive::{AtomicOp, IndexEntry, IndexValue, Indexer, Primitive};

fn sl(start: i64, size: usize, stride: usize) -> IndexEntry {
    IndexEntry::Slice {
        start: IndexValue::Static(start),
        size,
        stride,
    }
}

fn dsl(k: usize, size: usize) -> IndexEntry {
    IndexEntry::Slice {
        start: IndexValue::Dynamic(k),
        size,
        stride: 1,
    }
}

fn ix(entries: Vec<IndexEntry>) -> Vec<Indexer> {
    vec![Indexer { entries }]
}

/// A jaxpr `(ref, *idx) -> prim(ref, *idx, *extra_args)` whose result has `out`.
fn one_eqn(
    prim: Primitive,
    ref_shape: &[usize],
    idx: &[Aval],
    extra: &[Aval],
    out: Vec<Aval>,
) -> Jaxpr {
    let mut b = Builder::new();
    let r = b.arg(rf(F32, ref_shape));
    let mut inputs: Vec<Atom> = vec![r.into()];
    for a in idx.iter().chain(extra) {
        inputs.push(b.arg(a.clone()).into());
    }
    let outs = b.eqn(prim, inputs, out);
    b.finish(outs.into_iter().map(Atom::Var).collect())
}

fn buffer(seed: u64) -> (Vec<f64>, Value) {
    let data = Rng::new(seed).f32s(12, -5.0, 5.0);
    let r = Value::new_ref(arr(F32, &[3, 4], &data));
    (data, r)
}

#[test]
fn get_static_slices_and_ints() {
    let (x, r) = buffer(10);
    // x[1, 0:4:2] and x[:, 3] and the whole ref.
    let cases: Vec<(Vec<IndexEntry>, Vec<usize>, Vec<f64>)> = vec![
        (
            vec![IndexEntry::Int(IndexValue::Static(1)), sl(0, 2, 2)],
            vec![2],
            vec![x[4], x[6]],
        ),
        (
            vec![sl(0, 3, 1), IndexEntry::Int(IndexValue::Static(3))],
            vec![3],
            vec![x[3], x[7], x[11]],
        ),
        (
            vec![IndexEntry::Int(IndexValue::Static(-1))],
            vec![4],
            x[8..12].to_vec(),
        ),
        (vec![], vec![3, 4], x.clone()),
    ];
    for (entries, shape, want) in cases {
        let j = one_eqn(
            Primitive::State(State::Get(GetParams {
                indexers: ix(entries),
            })),
            &[3, 4],
            &[],
            &[],
            vec![sa(F32, &shape)],
        );
        let out = eval_jaxpr(&j, &[], std::slice::from_ref(&r)).unwrap();
        assert_eq!(unwrap(&out[0]).to_f64_vec(), want);
    }
}

#[test]
fn get_dynamic_indices_clamp() {
    let (x, r) = buffer(11);
    // x[i, j:j+3] with i, j dynamic; starts clamp into bounds.
    let j = one_eqn(
        Primitive::State(State::Get(GetParams {
            indexers: ix(vec![IndexEntry::Int(IndexValue::Dynamic(1)), dsl(2, 3)]),
        })),
        &[3, 4],
        &[sa(I32, &[]), sa(I32, &[])],
        &[],
        vec![sa(F32, &[3])],
    );
    for (i, s) in [(0i64, 0i64), (2, 1), (1, 5), (9, -3)] {
        let out = eval_jaxpr(
            &j,
            &[],
            &[
                r.clone(),
                val(I32, &[], &[i as f64]),
                val(I32, &[], &[s as f64]),
            ],
        )
        .unwrap();
        let (ci, cs) = (i.clamp(0, 2) as usize, s.clamp(0, 1) as usize);
        let want: Vec<f64> = (0..3).map(|k| x[4 * ci + cs + k]).collect();
        assert_eq!(unwrap(&out[0]).to_f64_vec(), want, "i={i} s={s}");
    }
}

#[test]
fn get_integer_arrays_broadcast() {
    let (x, r) = buffer(12);
    // Adjacent arrays: x[a, b] with a:[2,1], b:[3] gives shape [2,3].
    let j = one_eqn(
        Primitive::State(State::Get(GetParams {
            indexers: ix(vec![IndexEntry::Array(1), IndexEntry::Array(2)]),
        })),
        &[3, 4],
        &[sa(I32, &[2, 1]), sa(I32, &[3])],
        &[],
        vec![sa(F32, &[2, 3])],
    );
    let a = [2.0, 0.0];
    let bb = [3.0, -1.0, 1.0];
    let out = eval_jaxpr(
        &j,
        &[],
        &[r.clone(), val(I32, &[2, 1], &a), val(I32, &[3], &bb)],
    )
    .unwrap();
    let mut want = Vec::new();
    for ai in a {
        for bi in bb {
            let bi = if bi < 0.0 { bi + 4.0 } else { bi };
            want.push(x[4 * ai as usize + bi as usize]);
        }
    }
    assert_eq!(unwrap(&out[0]).shape(), &[2, 3]);
    assert_eq!(unwrap(&out[0]).to_f64_vec(), want);

    // A 3-d ref, array indices on dims 0 and 2 (not adjacent): the index
    // dims go first, then the slice.
    let data = Rng::new(13).f32s(24, -1.0, 1.0);
    let r3 = Value::new_ref(arr(F32, &[2, 3, 4], &data));
    let mut b = Builder::new();
    let rv = b.arg(rf(F32, &[2, 3, 4]));
    let i0 = b.arg(sa(I32, &[2]));
    let i2 = b.arg(sa(I32, &[2]));
    let out = b.eqn(
        Primitive::State(State::Get(GetParams {
            indexers: ix(vec![
                IndexEntry::Array(1),
                sl(1, 2, 1),
                IndexEntry::Array(2),
            ]),
        })),
        vec![rv.into(), i0.into(), i2.into()],
        vec![sa(F32, &[2, 2])],
    );
    let j = b.finish(vec![out[0].into()]);
    let (p, q) = ([1.0, 0.0], [3.0, 2.0]);
    let out = eval_jaxpr(&j, &[], &[r3, val(I32, &[2], &p), val(I32, &[2], &q)]).unwrap();
    let mut want = Vec::new();
    for k in 0..2 {
        for s in 0..2 {
            want.push(data[12 * p[k] as usize + 4 * (1 + s) + q[k] as usize]);
        }
    }
    assert_eq!(unwrap(&out[0]).to_f64_vec(), want);
}

#[test]
fn swap_writes_and_returns_old() {
    let (x, r) = buffer(14);
    // old = x[1:3, 2]; x[1:3, 2] = v (with a dynamic row start).
    let j = one_eqn(
        Primitive::State(State::Swap(SwapParams {
            indexers: ix(vec![dsl(1, 2), IndexEntry::Int(IndexValue::Static(2))]),
        })),
        &[3, 4],
        &[sa(I32, &[])],
        &[sa(F32, &[2])],
        vec![sa(F32, &[2])],
    );
    let v = [100.5, -7.25];
    let out = eval_jaxpr(
        &j,
        &[],
        &[r.clone(), val(I32, &[], &[1.0]), val(F32, &[2], &v)],
    )
    .unwrap();
    assert_eq!(unwrap(&out[0]).to_f64_vec(), vec![x[6], x[10]]);
    let mut want = x.clone();
    want[6] = v[0];
    want[10] = v[1];
    assert_eq!(unwrap(&r).to_f64_vec(), want);
}

#[test]
fn addupdate_accumulates_duplicates_and_composes_indexers() {
    let (x, r) = buffer(15);
    // x[rows, 1] += v with a repeated row.
    let mut b = Builder::new();
    let rv = b.arg(rf(F32, &[3, 4]));
    let rows = b.arg(sa(I32, &[4]));
    let v = b.arg(sa(F32, &[4]));
    b.eqn_drop(
        Primitive::State(State::AddUpdate(AddUpdateParams {
            indexers: ix(vec![
                IndexEntry::Array(1),
                IndexEntry::Int(IndexValue::Static(1)),
            ]),
        })),
        vec![rv.into(), rows.into(), v.into()],
        vec![],
    );
    let j = b.finish(vec![]);
    let rows_v = [2.0, 0.0, 2.0, 1.0];
    let vs = Rng::new(16).f32s(4, -1.0, 1.0);
    eval_jaxpr(
        &j,
        &[],
        &[r.clone(), val(I32, &[4], &rows_v), val(F32, &[4], &vs)],
    )
    .unwrap();
    let mut want: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    for k in 0..4 {
        want[4 * rows_v[k] as usize + 1] += vs[k] as f32;
    }
    let want: Vec<f64> = want.iter().map(|&v| v as f64).collect();
    assert_eq!(unwrap(&r).to_f64_vec(), want);

    // Two indexers: ref.at[1:3][:, 0:4:3] gives rows 1..3, columns 0 and 3.
    let (x, r) = buffer(17);
    let j = one_eqn(
        Primitive::State(State::Get(GetParams {
            indexers: vec![
                Indexer {
                    entries: vec![sl(1, 2, 1)],
                },
                Indexer {
                    entries: vec![sl(0, 2, 1), sl(0, 2, 3)],
                },
            ],
        })),
        &[3, 4],
        &[],
        &[],
        vec![sa(F32, &[2, 2])],
    );
    let out = eval_jaxpr(&j, &[], &[r]).unwrap();
    assert_eq!(unwrap(&out[0]).to_f64_vec(), vec![x[4], x[7], x[8], x[11]]);
}

#[test]
fn atomics_on_ints() {
    let data = [5.0, -3.0, 12.0, 0.0];
    let ops = [
        (AtomicOp::Add, [5.0 + 7.0, -3.0, 12.0 + 2.0, 0.0]),
        (AtomicOp::Max, [7.0, -3.0, 12.0, 0.0]),
        (AtomicOp::Min, [5.0, -3.0, 2.0, 0.0]),
        (AtomicOp::Xchg, [7.0, -3.0, 2.0, 0.0]),
        (AtomicOp::Or, [7.0, -3.0, 14.0, 0.0]),
        (AtomicOp::And, [5.0, -3.0, 0.0, 0.0]),
        (AtomicOp::Xor, [2.0, -3.0, 14.0, 0.0]),
    ];
    for (op, want) in ops {
        let r = Value::new_ref(arr(I32, &[4], &data));
        let mut b = Builder::new();
        let rv = b.arg(rf(I32, &[4]));
        let v = b.arg(sa(I32, &[2]));
        let old = b.eqn(
            Primitive::Pallas(Pallas::AtomicRmw(AtomicRmwParams {
                indexers: ix(vec![sl(0, 2, 2)]),
                op,
            })),
            vec![rv.into(), v.into()],
            vec![sa(I32, &[2])],
        );
        let j = b.finish(vec![old[0].into()]);
        let out = eval_jaxpr(&j, &[], &[r.clone(), val(I32, &[2], &[7.0, 2.0])]).unwrap();
        assert_eq!(unwrap(&out[0]).to_f64_vec(), vec![5.0, 12.0], "{op:?}");
        assert_eq!(unwrap(&r).to_f64_vec(), want.to_vec(), "{op:?}");
    }
    // Compare-and-swap: lane 0 matches, lane 1 does not.
    let r = Value::new_ref(arr(I32, &[4], &data));
    let mut b = Builder::new();
    let rv = b.arg(rf(I32, &[4]));
    let c = b.arg(sa(I32, &[2]));
    let v = b.arg(sa(I32, &[2]));
    let old = b.eqn(
        Primitive::Pallas(Pallas::AtomicCas(AtomicCasParams {
            indexers: ix(vec![sl(1, 2, 1)]),
        })),
        vec![rv.into(), c.into(), v.into()],
        vec![sa(I32, &[2])],
    );
    let j = b.finish(vec![old[0].into()]);
    let out = eval_jaxpr(
        &j,
        &[],
        &[
            r.clone(),
            val(I32, &[2], &[-3.0, 99.0]),
            val(I32, &[2], &[40.0, 50.0]),
        ],
    )
    .unwrap();
    assert_eq!(unwrap(&out[0]).to_f64_vec(), vec![-3.0, 12.0]);
    assert_eq!(unwrap(&r).to_f64_vec(), vec![5.0, 40.0, 12.0, 0.0]);
}

#[test]
fn state_errors() {
    let (_, r) = buffer(18);
    // get on an array, a missing index operand, a bad value shape.
    let j = one_eqn(
        Primitive::State(State::Get(GetParams { indexers: vec![] })),
        &[3, 4],
        &[],
        &[],
        vec![sa(F32, &[3, 4])],
    );
    let mut bad = j.clone();
    bad.invars.clear();
    let v = bad.new_var(sa(F32, &[3, 4]));
    bad.invars.push(v);
    bad.eqns[0].inputs[0] = v.into();
    assert!(eval_jaxpr(&bad, &[], &[val(F32, &[3, 4], &[0.0; 12])]).is_err());
    let j = one_eqn(
        Primitive::State(State::Get(GetParams {
            indexers: ix(vec![IndexEntry::Int(IndexValue::Dynamic(3))]),
        })),
        &[3, 4],
        &[],
        &[],
        vec![sa(F32, &[4])],
    );
    assert!(eval_jaxpr(&j, &[], std::slice::from_ref(&r)).is_err());
    let j = one_eqn(
        Primitive::State(State::Swap(SwapParams {
            indexers: ix(vec![IndexEntry::Int(IndexValue::Static(0))]),
        })),
        &[3, 4],
        &[],
        &[sa(F32, &[3])],
        vec![sa(F32, &[4])],
    );
    assert!(eval_jaxpr(&j, &[], &[r, val(F32, &[3], &[1.0, 2.0, 3.0])]).is_err());
}
