//! Unit tests of the shape rules: elementwise, structural, indexing,
//! reductions and contractions, with shapes from JAX 0.10.2 and the corpus.

use super::*;
use crate::primitive::*;
use crate::primitive::{
    ArgReduceParams, BitcastConvertTypeParams, BroadcastInDimParams, ConcatenateParams,
    ConvGeneralDilatedParams, ConvertElementTypeParams, CumulativeParams, DotGeneralParams,
    DynamicSliceParams, Elementwise, Empty2Params, GatherParams, Indexing, IntegerPowParams,
    IotaParams, Linalg, PadParams, ReduceParams, ReshapeParams, RevParams, ScatterParams,
    SliceParams, SortParams, SplitParams, SqueezeParams, StackParams, TileParams, TopKParams,
    TransposeParams,
};

pub(crate) fn t(d: DType, s: &[usize]) -> Aval {
    Aval::Array(ShapedArray::of(d, s))
}

/// Applies a rule to operands that are distinct fresh variables.
pub(crate) fn ev(p: &Primitive, avals: &[Aval]) -> Result<Vec<Aval>, IrError> {
    let atoms: Vec<Atom> = (0..avals.len()).map(|i| Atom::Var(Var(i as u32))).collect();
    abstract_eval(p, avals, &atoms)
}

pub(crate) fn ev1(p: &Primitive, avals: &[Aval]) -> Aval {
    let mut r = ev(p, avals).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.len(), 1);
    r.remove(0)
}

fn err(p: &Primitive, avals: &[Aval]) -> String {
    match ev(p, avals) {
        Ok(r) => panic!("expected an error, got {r:?}"),
        Err(e) => e.to_string(),
    }
}

const F32: DType = DType::F32;
const I32: DType = DType::I32;

#[test]
fn binary_same_types_and_scalar_broadcast() {
    let add = Primitive::from(BinaryOp::Add);
    assert_eq!(ev1(&add, &[t(F32, &[3]), t(F32, &[3])]), t(F32, &[3]));
    assert_eq!(ev1(&add, &[t(F32, &[2, 3]), t(F32, &[])]), t(F32, &[2, 3]));
    assert_eq!(ev1(&add, &[t(F32, &[]), t(F32, &[2, 3])]), t(F32, &[2, 3]));
    assert_eq!(
        ev1(&add, &[t(F32, &[3, 1]), t(F32, &[1, 4])]),
        t(F32, &[3, 4])
    );
    let lt = Primitive::from(BinaryOp::Lt);
    assert_eq!(
        ev1(&lt, &[t(I32, &[5]), t(I32, &[5])]),
        t(DType::Bool, &[5])
    );
}

#[test]
fn binary_errors_name_both_types() {
    let add = Primitive::from(BinaryOp::Add);
    assert_eq!(
        err(&add, &[t(F32, &[3]), t(F32, &[4])]),
        "add: operand types must match, got f32[3] and f32[4]"
    );
    assert_eq!(
        err(&add, &[t(F32, &[3]), t(I32, &[3])]),
        "add: operand types must match, got f32[3] and i32[3]"
    );
    let e = err(&add, &[t(F32, &[3]), t(F32, &[3, 4])]);
    assert!(e.contains("f32[3]") && e.contains("f32[3,4]"), "{e}");
    let e = err(
        &Primitive::from(BinaryOp::ShiftLeft),
        &[t(F32, &[3]), t(F32, &[3])],
    );
    assert!(e.contains("float32") && e.contains("position 0"), "{e}");
    let e = err(&Primitive::from(BinaryOp::And), &[t(F32, &[]), t(F32, &[])]);
    assert!(e.starts_with("and:"), "{e}");
    assert!(ev(&add, &[t(DType::Bool, &[2]), t(DType::Bool, &[2])]).is_err());
    assert!(ev(&add, &[t(F32, &[2])]).is_err());
}

#[test]
fn unary_rules() {
    let exp = Primitive::from(UnaryOp::Exp);
    assert_eq!(
        ev1(&exp, &[t(DType::BF16, &[2, 2])]),
        t(DType::BF16, &[2, 2])
    );
    assert!(ev(&exp, &[t(I32, &[2])]).is_err());
    let fin = Primitive::from(UnaryOp::IsFinite);
    assert_eq!(ev1(&fin, &[t(F32, &[4])]), t(DType::Bool, &[4]));
    let not = Primitive::from(UnaryOp::Not);
    assert_eq!(ev1(&not, &[t(DType::U8, &[3])]), t(DType::U8, &[3]));
    assert!(ev(&not, &[t(F32, &[3])]).is_err());
    assert!(ev(&Primitive::from(UnaryOp::Abs), &[t(DType::U32, &[])]).is_err());
    assert_eq!(
        ev1(&Primitive::from(IntegerPowParams { y: 3 }), &[t(I32, &[2])]),
        t(I32, &[2])
    );
    let pow = Primitive::from(BinaryOp::Pow);
    assert_eq!(ev1(&pow, &[t(F32, &[2]), t(I32, &[2])]), t(F32, &[2]));
}

#[test]
fn conversions() {
    let c = Primitive::from(ConvertElementTypeParams {
        new_dtype: DType::F16,
        weak_type: true,
    });
    let r = ev1(&c, &[t(I32, &[2, 3])]);
    assert_eq!(
        r,
        Aval::Array(ShapedArray::of(DType::F16, &[2, 3]).with_weak(true))
    );
    let b = Primitive::from(BitcastConvertTypeParams {
        new_dtype: DType::U8,
    });
    assert_eq!(ev1(&b, &[t(F32, &[3])]), t(DType::U8, &[3, 4]));
    let b = Primitive::from(BitcastConvertTypeParams {
        new_dtype: DType::F32,
    });
    assert_eq!(ev1(&b, &[t(DType::U8, &[3, 4])]), t(F32, &[3]));
    assert!(ev(&b, &[t(DType::U8, &[3, 2])]).is_err());
}

#[test]
fn select_n_and_clamp() {
    let s = Primitive::Elementwise(Elementwise::SelectN);
    assert_eq!(
        ev1(&s, &[t(DType::Bool, &[3]), t(F32, &[3]), t(F32, &[3])]),
        t(F32, &[3])
    );
    assert_eq!(
        ev1(&s, &[t(DType::Bool, &[]), t(F32, &[3]), t(F32, &[3])]),
        t(F32, &[3])
    );
    assert_eq!(
        ev1(
            &s,
            &[t(I32, &[3]), t(F32, &[3]), t(F32, &[3]), t(F32, &[3])]
        ),
        t(F32, &[3])
    );
    assert!(ev(&s, &[t(F32, &[3]), t(F32, &[3]), t(F32, &[3])]).is_err());
    let e = err(&s, &[t(DType::Bool, &[3]), t(F32, &[3]), t(F32, &[4])]);
    assert!(e.contains("f32[3]") && e.contains("f32[4]"), "{e}");
    let c = Primitive::Elementwise(Elementwise::Clamp);
    assert_eq!(
        ev1(&c, &[t(F32, &[]), t(F32, &[3]), t(F32, &[])]),
        t(F32, &[3])
    );
    assert_eq!(
        ev1(&c, &[t(I32, &[]), t(I32, &[]), t(I32, &[])]),
        t(I32, &[])
    );
    assert!(ev(&c, &[t(F32, &[2]), t(F32, &[3]), t(F32, &[])]).is_err());
}

#[test]
fn broadcast_reshape_transpose() {
    let b = Primitive::from(BroadcastInDimParams {
        shape: vec![Some(2), Some(3)],
        broadcast_dimensions: vec![1].into(),
    });
    assert_eq!(ev1(&b, &[t(F32, &[3])]), t(F32, &[2, 3]));
    assert_eq!(ev1(&b, &[t(F32, &[1])]), t(F32, &[2, 3]));
    let e = err(&b, &[t(F32, &[2])]);
    assert!(e.contains("f32[2]") && e.contains("[2,3]"), "{e}");
    let r = Primitive::from(ReshapeParams {
        new_sizes: vec![Some(3), Some(2)],
        dimensions: None,
    });
    assert_eq!(ev1(&r, &[t(F32, &[2, 3])]), t(F32, &[3, 2]));
    assert!(ev(&r, &[t(F32, &[7])]).is_err());
    let tr = Primitive::from(TransposeParams {
        permutation: vec![2, 0, 1],
    });
    assert_eq!(ev1(&tr, &[t(F32, &[2, 3, 4])]), t(F32, &[4, 2, 3]));
    assert!(ev(&tr, &[t(F32, &[2, 3])]).is_err());
    let sq = Primitive::from(SqueezeParams {
        dimensions: vec![0, 2],
    });
    assert_eq!(ev1(&sq, &[t(F32, &[1, 5, 1])]), t(F32, &[5]));
    assert!(ev(&sq, &[t(F32, &[2, 5, 1])]).is_err());
}

#[test]
fn dynamic_dims_come_from_operands() {
    // b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 a
    let b = Primitive::from(BroadcastInDimParams {
        shape: vec![None],
        broadcast_dimensions: vec![].into(),
    });
    let a = Var(7);
    let avals = [t(DType::F64, &[]), t(DType::I64, &[])];
    let atoms = [
        Atom::Lit(crate::literal::Literal::new(1.0, DType::F64)),
        Atom::Var(a),
    ];
    let r = abstract_eval(&b, &avals, &atoms).unwrap();
    assert_eq!(
        r,
        vec![Aval::Array(ShapedArray::new(DType::F64, vec![Dim::Var(a)]))]
    );
    let lit3 = Atom::Lit(crate::literal::Literal::new(3.0, DType::I32));
    let io = Primitive::from(IotaParams {
        dtype: I32,
        shape: vec![None, Some(2)],
        dimension: 1,
    });
    let r = abstract_eval(&io, &[t(I32, &[])], &[lit3]).unwrap();
    assert_eq!(r, vec![t(I32, &[3, 2])]);
    // A float size operand is rejected.
    assert!(abstract_eval(&b, &[t(DType::F64, &[]), t(F32, &[])], &atoms).is_err());
    // dims compare symbolically.
    let add = Primitive::from(BinaryOp::Add);
    let x = Aval::Array(ShapedArray::new(F32, vec![Dim::Var(Var(1))]));
    let y = Aval::Array(ShapedArray::new(F32, vec![Dim::Var(Var(2))]));
    assert_eq!(ev1(&add, &[x.clone(), x.clone()]), x);
    assert!(ev(&add, &[x, y]).is_err());
}

#[test]
fn pad_slice_concat() {
    let p = Primitive::from(PadParams {
        padding_config: vec![Ints::new(vec![1, 2, 0]), Ints::new(vec![-1, 0, 1])],
    });
    // dim0: 1+2+3 = 6; dim1: -1 + 4 + 3*1 = 6
    assert_eq!(ev1(&p, &[t(F32, &[3, 4]), t(F32, &[])]), t(F32, &[6, 6]));
    let p2 = Primitive::from(PadParams {
        padding_config: vec![Ints::new(vec![-3, -1, 0])],
    });
    assert!(ev(&p2, &[t(F32, &[3]), t(F32, &[])]).is_err());
    assert!(ev(&p2, &[t(F32, &[3]), t(I32, &[])]).is_err());
    let s = Primitive::from(SliceParams {
        start_indices: Ints::new(vec![1, 0]),
        limit_indices: Ints::new(vec![4, 5]),
        strides: Some(Ints::new(vec![2, 1])),
    });
    assert_eq!(ev1(&s, &[t(F32, &[4, 5])]), t(F32, &[2, 5]));
    assert!(ev(&s, &[t(F32, &[3, 5])]).is_err());
    let c = Primitive::from(ConcatenateParams { dimension: 1 });
    assert_eq!(
        ev1(&c, &[t(F32, &[2, 3]), t(F32, &[2, 1]), t(F32, &[2, 4])]),
        t(F32, &[2, 8])
    );
    let e = err(&c, &[t(F32, &[2, 3]), t(F32, &[3, 3])]);
    assert!(e.contains("f32[2,3]") && e.contains("f32[3,3]"), "{e}");
}

#[test]
fn split_tile_stack_rev_iota_empty() {
    let sp = Primitive::from(SplitParams {
        sizes: Ints::new(vec![1, 3]),
        axis: 1,
    });
    assert_eq!(
        ev(&sp, &[t(F32, &[2, 4])]).unwrap(),
        vec![t(F32, &[2, 1]), t(F32, &[2, 3])]
    );
    assert!(ev(&sp, &[t(F32, &[2, 5])]).is_err());
    let ti = Primitive::from(TileParams {
        reps: Ints::new(vec![2, 3]),
    });
    assert_eq!(ev1(&ti, &[t(F32, &[2, 1])]), t(F32, &[4, 3]));
    let st = Primitive::from(StackParams { axis: 1 });
    assert_eq!(
        ev1(&st, &[t(F32, &[2, 5]), t(F32, &[2, 5])]),
        t(F32, &[2, 2, 5])
    );
    assert!(ev(&st, &[t(F32, &[2, 5]), t(F32, &[5, 2])]).is_err());
    let rv = Primitive::from(RevParams {
        dimensions: vec![0],
    });
    assert_eq!(ev1(&rv, &[t(I32, &[3])]), t(I32, &[3]));
    assert!(ev(&rv, &[t(I32, &[])]).is_err());
    let io = Primitive::from(IotaParams {
        dtype: I32,
        shape: vec![Some(4)],
        dimension: 0,
    });
    assert_eq!(ev1(&io, &[]), t(I32, &[4]));
    assert_eq!(
        ev1(&Primitive::from(Empty2Params { dtype: F32 }), &[]),
        t(F32, &[])
    );
}

#[test]
fn dynamic_slices() {
    let ds = Primitive::from(DynamicSliceParams {
        slice_sizes: Ints::new(vec![2, 2]),
    });
    assert_eq!(
        ev1(&ds, &[t(F32, &[4, 5]), t(I32, &[]), t(I32, &[])]),
        t(F32, &[2, 2])
    );
    assert!(ev(&ds, &[t(F32, &[4, 5]), t(I32, &[])]).is_err());
    assert!(ev(&ds, &[t(F32, &[4, 5]), t(F32, &[]), t(I32, &[])]).is_err());
    let dus = Primitive::Indexing(Indexing::DynamicUpdateSlice);
    assert_eq!(
        ev1(&dus, &[t(F32, &[4]), t(F32, &[2]), t(I32, &[])]),
        t(F32, &[4])
    );
    assert!(ev(&dus, &[t(F32, &[4]), t(F32, &[5]), t(I32, &[])]).is_err());
}

#[test]
fn gather_scatter_from_corpus() {
    // gather_second_axis: f32[3,6], i32[2,2,1] -> f32[3,2,2]
    let g = Primitive::from(GatherParams {
        dimension_numbers: GatherDimensionNumbers {
            offset_dims: Ints::new(vec![0]),
            collapsed_slice_dims: Ints::new(vec![1]),
            start_index_map: Ints::new(vec![1]),
            operand_batching_dims: Ints::default(),
            start_indices_batching_dims: Ints::default(),
        },
        fill_value: None,
        indices_are_sorted: false,
        mode: GatherScatterMode::PromiseInBounds,
        slice_sizes: Ints::new(vec![3, 1]),
        unique_indices: false,
    });
    assert_eq!(
        ev1(&g, &[t(F32, &[3, 6]), t(I32, &[2, 2, 1])]),
        t(F32, &[3, 2, 2])
    );
    assert!(ev(&g, &[t(F32, &[3, 6]), t(I32, &[2, 2, 2])]).is_err());
    assert!(ev(&g, &[t(F32, &[2, 6]), t(I32, &[2, 2, 1])]).is_err());
    // scatter_add_dupes_oob: f32[5], i32[6,1], f32[6] -> f32[5]
    let s = Primitive::from(ScatterParams {
        kind: ScatterKind::Add,
        dimension_numbers: ScatterDimensionNumbers {
            update_window_dims: Ints::default(),
            inserted_window_dims: Ints::new(vec![0]),
            scatter_dims_to_operand_dims: Ints::new(vec![0]),
            operand_batching_dims: Ints::default(),
            scatter_indices_batching_dims: Ints::default(),
        },
        indices_are_sorted: false,
        mode: GatherScatterMode::FillOrDrop,
        unique_indices: false,
        update_jaxpr: None,
    });
    assert_eq!(
        ev1(&s, &[t(F32, &[5]), t(I32, &[6, 1]), t(F32, &[6])]),
        t(F32, &[5])
    );
    let e = err(&s, &[t(F32, &[5]), t(I32, &[6, 1]), t(F32, &[7])]);
    assert!(
        e.contains("[7]") && e.contains("f32[5]") && e.contains("i32[6,1]"),
        "{e}"
    );
    assert!(ev(&s, &[t(F32, &[5]), t(I32, &[6, 1]), t(I32, &[6])]).is_err());
}

#[test]
fn reductions() {
    let r = Primitive::from(ReduceParams {
        op: ReduceOp::Sum,
        axes: vec![0, 2],
        np_int64: Vec::new(),
        out_sharding: None,
    });
    assert_eq!(ev1(&r, &[t(F32, &[2, 3, 4])]), t(F32, &[3]));
    assert!(ev(&r, &[t(F32, &[2, 3])]).is_err());
    let a = Primitive::from(ArgReduceParams {
        op: ArgOp::Argmax,
        axes: vec![1],
        index_dtype: I32,
    });
    assert_eq!(ev1(&a, &[t(F32, &[2, 3])]), t(I32, &[2]));
    let c = Primitive::from(CumulativeParams {
        op: CumulativeOp::Cumsum,
        axis: 1,
        reverse: false,
    });
    assert_eq!(ev1(&c, &[t(F32, &[2, 3])]), t(F32, &[2, 3]));
    assert!(ev(&c, &[t(F32, &[2])]).is_err());
    let s = Primitive::from(SortParams {
        dimension: 0,
        is_stable: true,
        num_keys: 1,
    });
    assert_eq!(
        ev(&s, &[t(F32, &[5]), t(I32, &[5])]).unwrap(),
        vec![t(F32, &[5]), t(I32, &[5])]
    );
    assert!(ev(&s, &[t(F32, &[5]), t(I32, &[4])]).is_err());
    // top_k[axis=1 k=3] f32[2,5] -> f32[2,3], i32[2,3]
    let k = Primitive::from(TopKParams { k: 3, axis: 1 });
    assert_eq!(
        ev(&k, &[t(F32, &[2, 5])]).unwrap(),
        vec![t(F32, &[2, 3]), t(I32, &[2, 3])]
    );
    assert!(ev(
        &Primitive::from(TopKParams { k: 6, axis: 1 }),
        &[t(F32, &[2, 5])]
    )
    .is_err());
}

fn dot(lc: usize, rc: usize, lb: Vec<usize>, rb: Vec<usize>, pref: Option<DType>) -> Primitive {
    Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
        dimension_numbers: DotDimensionNumbers {
            lhs_contracting: vec![lc],
            rhs_contracting: vec![rc],
            lhs_batch: lb,
            rhs_batch: rb,
        },
        precision: None,
        preferred_element_type: pref,
    }))
}

#[test]
fn dot_general_shapes() {
    let mm = dot(1, 0, vec![], vec![], None);
    assert_eq!(
        ev1(&mm, &[t(F32, &[2, 3]), t(F32, &[3, 4])]),
        t(F32, &[2, 4])
    );
    let e = err(&mm, &[t(F32, &[2, 3]), t(F32, &[5, 4])]);
    assert!(e.contains("f32[2,3]") && e.contains("f32[5,4]"), "{e}");
    let bmm = dot(2, 1, vec![0], vec![0], Some(F32));
    assert_eq!(
        ev1(
            &bmm,
            &[t(DType::BF16, &[7, 2, 3]), t(DType::BF16, &[7, 3, 4])]
        ),
        t(F32, &[7, 2, 4])
    );
    assert!(ev(&mm, &[t(F32, &[2, 3]), t(I32, &[3, 4])]).is_err());
}

fn conv(
    specs: [Vec<usize>; 3],
    strides: Vec<usize>,
    padding: Vec<(i64, i64)>,
    fg: usize,
) -> Primitive {
    let ns = strides.len();
    let [lhs_spec, rhs_spec, out_spec] = specs;
    Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
        window_strides: strides,
        padding,
        lhs_dilation: vec![1; ns],
        rhs_dilation: vec![1; ns],
        dimension_numbers: ConvDimensionNumbers {
            lhs_spec,
            rhs_spec,
            out_spec,
        },
        feature_group_count: fg,
        batch_group_count: 1,
        precision: None,
        preferred_element_type: None,
    }))
}

#[test]
fn conv_shapes_from_corpus() {
    // conv2d_feature_groups: f32[1,4,4,4] * f32[6,2,3,3] -> f32[1,6,2,2]
    let id = vec![0, 1, 2, 3];
    let c = conv(
        [id.clone(), id.clone(), id.clone()],
        vec![1, 1],
        vec![(0, 0); 2],
        2,
    );
    assert_eq!(
        ev1(&c, &[t(F32, &[1, 4, 4, 4]), t(F32, &[6, 2, 3, 3])]),
        t(F32, &[1, 6, 2, 2])
    );
    let e = err(&c, &[t(F32, &[1, 4, 4, 4]), t(F32, &[6, 4, 3, 3])]);
    assert!(
        e.contains("f32[1,4,4,4]") && e.contains("f32[6,4,3,3]"),
        "{e}"
    );
    // conv1d_nwc_stride2_valid: f32[2,9,3] * f32[3,3,4] -> f32[2,4,4]
    let c = conv(
        [vec![0, 2, 1], vec![2, 1, 0], vec![0, 2, 1]],
        vec![2],
        vec![(0, 0)],
        1,
    );
    assert_eq!(
        ev1(&c, &[t(F32, &[2, 9, 3]), t(F32, &[3, 3, 4])]),
        t(F32, &[2, 4, 4])
    );
    // SAME padding with stride 1: 5 + 1 + 1 - 3 + 1 = 5
    let c = conv(
        [vec![0, 1, 2], vec![0, 1, 2], vec![0, 1, 2]],
        vec![1],
        vec![(1, 1)],
        1,
    );
    assert_eq!(
        ev1(&c, &[t(F32, &[1, 2, 5]), t(F32, &[3, 2, 3])]),
        t(F32, &[1, 3, 5])
    );
}
