//! Property tests on seeded random inputs against exact or f64 oracles, and
//! error-path tests (bad operands give errors, never panics).

use super::eval_op;
use super::special::{erf_f64, erf_inv_f64, erfc_f64};
use super::testutil::{arr, assert_close, Rng};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::*;
use crate::primitive::{
    BroadcastInDimParams, ConcatenateParams, DotGeneralParams, DynamicSliceParams, Elementwise,
    Empty2Params, Indexing, IotaParams, Linalg, PadParams, ProgramIdParams, ReduceParams,
    Reduction, SliceParams, SortParams, SplitParams, Structural, TopKParams, TransposeParams,
};

fn rand_vec(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(lo, hi)).collect()
}

#[test]
fn erf_inv_inverts_erf_f64() {
    let mut rng = Rng(7);
    for _ in 0..2000 {
        let x = rng.uniform(-0.9999, 0.9999);
        let y = erf_inv_f64(x);
        assert!(
            (erf_f64(y) - x).abs() <= 4e-16 * (1.0 + x.abs()),
            "x={x} y={y}"
        );
    }
}

#[test]
fn erf_plus_erfc_is_one() {
    let mut rng = Rng(11);
    for _ in 0..2000 {
        let x = rng.uniform(-6.0, 6.0);
        let s = erf_f64(x) + erfc_f64(x);
        assert!((s - 1.0).abs() < 1e-15, "x={x}: {s}");
        assert!((erf_f64(-x) + erf_f64(x)).abs() < 1e-16);
    }
}

#[test]
fn dot_general_matches_f64_oracle() {
    let mut rng = Rng(3);
    let (b, m, k, n) = (2, 3, 5, 4);
    let l = rand_vec(&mut rng, b * m * k, -2.0, 2.0);
    let r = rand_vec(&mut rng, b * k * n, -2.0, 2.0);
    let prim = Primitive::from(DotGeneralParams {
        dimension_numbers: DotDimensionNumbers {
            lhs_contracting: vec![2],
            rhs_contracting: vec![1],
            lhs_batch: vec![0],
            rhs_batch: vec![0],
        },
        precision: None,
        preferred_element_type: None,
    });
    let out = eval_op(
        &prim,
        &[
            arr(DType::F64, &[b, m, k], &l),
            arr(DType::F64, &[b, k, n], &r),
        ],
    )
    .unwrap();
    let mut want = Vec::new();
    for bi in 0..b {
        for i in 0..m {
            for j in 0..n {
                want.push(
                    (0..k)
                        .map(|t| l[bi * m * k + i * k + t] * r[bi * k * n + t * n + j])
                        .sum(),
                );
            }
        }
    }
    assert_close(&out[0], DType::F64, &[b, m, n], &want, 1e-14);
}

#[test]
fn reduce_sum_ints_exact_and_transpose_roundtrip() {
    let mut rng = Rng(5);
    let v: Vec<f64> = (0..60)
        .map(|_| (rng.next() % 2001) as f64 - 1000.0)
        .collect();
    let x = arr(DType::I32, &[3, 4, 5], &v);
    let s = eval_op(
        &Primitive::from(ReduceParams {
            op: ReduceOp::Sum,
            axes: vec![0, 2],
            np_int64: Vec::new(),
            out_sharding: None,
        }),
        std::slice::from_ref(&x),
    )
    .unwrap();
    let want: Vec<f64> = (0..4)
        .map(|j| {
            (0..3)
                .flat_map(|i| (0..5).map(move |k| (i, k)))
                .map(|(i, k)| v[i * 20 + j * 5 + k])
                .sum()
        })
        .collect();
    assert_close(&s[0], DType::I32, &[4], &want, 0.0);
    let t = |p: Vec<usize>, a: &HostArray| {
        eval_op(
            &Primitive::from(TransposeParams { permutation: p }),
            std::slice::from_ref(a),
        )
        .unwrap()
        .remove(0)
    };
    let y = t(vec![2, 0, 1], &x);
    assert_eq!(y.shape(), &[5, 3, 4]);
    assert_eq!(t(vec![1, 2, 0], &y), x);
}

#[test]
fn pad_then_slice_is_identity() {
    let mut rng = Rng(9);
    let v = rand_vec(&mut rng, 12, -1.0, 1.0);
    let x = arr(DType::F32, &[3, 4], &v);
    let padded = eval_op(
        &Primitive::from(PadParams {
            padding_config: vec![Ints::new(vec![2, 1, 1]), Ints::new(vec![1, 3, 0])],
        }),
        &[x.clone(), arr(DType::F32, &[], &[0.0])],
    )
    .unwrap()
    .remove(0);
    assert_eq!(padded.shape(), &[8, 8]);
    let back = eval_op(
        &Primitive::from(SliceParams {
            start_indices: Ints::new(vec![2, 1]),
            limit_indices: Ints::new(vec![7, 5]),
            strides: Some(Ints::new(vec![2, 1])),
        }),
        &[padded],
    )
    .unwrap()
    .remove(0);
    assert_eq!(back, x);
}

#[test]
fn nextafter_steps_one_ulp_f32() {
    let mut rng = Rng(13);
    for _ in 0..500 {
        let a = rng.uniform(-1e3, 1e3) as f32;
        let out = eval_op(
            &Primitive::from(BinaryOp::Nextafter),
            &[
                HostArray::new(vec![2], Storage::F32(vec![a, a])).unwrap(),
                HostArray::new(
                    vec![2],
                    Storage::F32(vec![f32::INFINITY, f32::NEG_INFINITY]),
                )
                .unwrap(),
            ],
        )
        .unwrap();
        let Storage::F32(v) = out[0].data() else {
            panic!("dtype")
        };
        assert!(v[0] > a && v[1] < a);
        assert_eq!((v[0].to_bits() as i64 - a.to_bits() as i64).abs(), 1);
    }
}

#[test]
fn higher_order_primitives_are_rejected() {
    let err = eval_op(&Primitive::from(ProgramIdParams { axis: 0 }), &[]).unwrap_err();
    assert!(matches!(err, IrError::Eval(m) if m.contains("program_id")));
}

#[test]
fn bad_operands_give_errors() {
    let x = arr(DType::F32, &[2, 3], &[1.0; 6]);
    let y = arr(DType::F32, &[3, 2], &[1.0; 6]);
    let i = arr(DType::I32, &[2], &[1.0, 2.0]);
    let cases: Vec<(Primitive, Vec<HostArray>)> = vec![
        (
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
            vec![x.clone(), y.clone()],
        ),
        (
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
            vec![x.clone(), i.clone()],
        ),
        (
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::And)),
            vec![x.clone(), x.clone()],
        ),
        (
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Sin)),
            vec![i.clone()],
        ),
        (
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg)),
            vec![],
        ),
        (
            Primitive::Structural(Structural::Transpose(TransposeParams {
                permutation: vec![0, 0],
            })),
            vec![x.clone()],
        ),
        (
            Primitive::Reduction(Reduction::Reduce(ReduceParams::new(ReduceOp::Sum, vec![5]))),
            vec![x.clone()],
        ),
        (
            Primitive::Structural(Structural::Concatenate(ConcatenateParams { dimension: 1 })),
            vec![x.clone(), y.clone()],
        ),
        (
            Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
                dimension_numbers: DotDimensionNumbers {
                    lhs_contracting: vec![1],
                    rhs_contracting: vec![1],
                    ..Default::default()
                },
                precision: None,
                preferred_element_type: None,
            })),
            vec![x.clone(), y.clone()],
        ),
        (
            Primitive::Indexing(Indexing::DynamicSlice(DynamicSliceParams {
                slice_sizes: Ints::new(vec![3, 1]),
            })),
            vec![x.clone(), i.clone(), i.clone()],
        ),
        (
            Primitive::Reduction(Reduction::Sort(SortParams {
                dimension: 0,
                is_stable: true,
                num_keys: 2,
            })),
            vec![x.clone()],
        ),
        (
            Primitive::Reduction(Reduction::TopK(TopKParams { k: 4, axis: 1 })),
            vec![x.clone()],
        ),
    ];
    for (p, a) in cases {
        assert!(eval_op(&p, &a).is_err(), "{} should fail", p.name());
    }
}

#[test]
fn empty2_split_zero_and_dynamic_shapes() {
    let e = eval_op(&Primitive::from(Empty2Params { dtype: DType::BF16 }), &[]).unwrap();
    assert_eq!(e, vec![HostArray::zeros(DType::BF16, &[])]);
    let x = arr(DType::F32, &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let parts = eval_op(
        &Primitive::from(SplitParams {
            sizes: Ints::new(vec![1, 0, 2]),
            axis: 0,
        }),
        std::slice::from_ref(&x),
    )
    .unwrap();
    assert_eq!(parts.len(), 3);
    assert_close(&parts[0], DType::F32, &[1, 2], &[1.0, 2.0], 0.0);
    assert_close(&parts[1], DType::F32, &[0, 2], &[], 0.0);
    assert_close(&parts[2], DType::F32, &[2, 2], &[3.0, 4.0, 5.0, 6.0], 0.0);
    // A `None` size comes from a trailing scalar operand.
    let b = eval_op(
        &Primitive::from(BroadcastInDimParams {
            shape: vec![None, Some(2)],
            broadcast_dimensions: vec![1].into(),
        }),
        &[
            arr(DType::I32, &[2], &[7.0, 8.0]),
            arr(DType::I32, &[], &[3.0]),
        ],
    )
    .unwrap();
    assert_close(
        &b[0],
        DType::I32,
        &[3, 2],
        &[7.0, 8.0, 7.0, 8.0, 7.0, 8.0],
        0.0,
    );
    let io = eval_op(
        &Primitive::from(IotaParams {
            dtype: DType::U8,
            shape: vec![Some(2), None],
            dimension: 1,
        }),
        &[arr(DType::I32, &[], &[3.0])],
    )
    .unwrap();
    assert_close(
        &io[0],
        DType::U8,
        &[2, 3],
        &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0],
        0.0,
    );
}

#[test]
fn binary_broadcasts_rank0_operand() {
    let mut rng = Rng(21);
    let v = rand_vec(&mut rng, 6, -5.0, 5.0);
    let x = arr(DType::F64, &[2, 3], &v);
    let two = arr(DType::F64, &[], &[2.0]);
    let out = eval_op(&Primitive::from(BinaryOp::Sub), &[two, x]).unwrap();
    let want: Vec<f64> = v.iter().map(|a| 2.0 - a).collect();
    assert_close(&out[0], DType::F64, &[2, 3], &want, 0.0);
}
