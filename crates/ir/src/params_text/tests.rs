//! Every primitive's name reads back through the params text dispatch: the
//! op-keyed names are rows of the table, and one sample of every
//! `Primitive` variant (every op of the op-keyed ones) has a parser.

use super::table::{parser_of, NAMES};
use super::text_of;
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use crate::primitive::*;
use std::sync::Arc;

/// Every op-keyed name has a row: the ops come from their enums, the
/// rows from the table's name list.
#[test]
fn every_op_keyed_name_is_a_row() {
    let names = ReduceOp::ALL
        .iter()
        .map(|o| o.name())
        .chain(ArgOp::ALL.iter().map(|o| o.name()))
        .chain(CumulativeOp::ALL.iter().map(|o| o.name()))
        .chain(ScatterKind::ALL.iter().map(|o| o.name()))
        .chain(CollectiveOp::ALL.iter().map(|o| o.name()));
    for n in names {
        assert!(NAMES.contains(&n), "`{n}` has no params text row");
        assert!(parser_of(n).is_some(), "`{n}` has no parser");
    }
}

/// The number of `Primitive` variants [`variant`] numbers.
const VARIANTS: usize = 97;

/// The variant of `p`, numbered. Exhaustive: a new variant does not compile
/// here until it is numbered, and the test below fails until it has a
/// sample.
fn variant(p: &Primitive) -> usize {
    match p {
        Primitive::Elementwise(f) => match f {
            Elementwise::Unary(_) => 0,
            Elementwise::Binary(_) => 1,
            Elementwise::IntegerPow(_) => 2,
            Elementwise::Round(_) => 3,
            Elementwise::ReducePrecision(_) => 4,
            Elementwise::ConvertElementType(_) => 5,
            Elementwise::BitcastConvertType(_) => 6,
            Elementwise::SelectN => 7,
            Elementwise::Clamp => 8,
            Elementwise::RegularizedIncompleteBeta => 66,
            Elementwise::Complex => 67,
            Elementwise::Real => 68,
            Elementwise::Imag => 69,
            Elementwise::Conj(_) => 70,
        },
        Primitive::Structural(f) => match f {
            Structural::BroadcastInDim(_) => 9,
            Structural::Reshape(_) => 10,
            Structural::Transpose(_) => 11,
            Structural::Squeeze(_) => 12,
            Structural::Rev(_) => 13,
            Structural::Pad(_) => 14,
            Structural::Concatenate(_) => 15,
            Structural::Iota(_) => 16,
            Structural::Split(_) => 17,
            Structural::Tile(_) => 18,
            Structural::Stack(_) => 19,
            Structural::Empty2(_) => 20,
        },
        Primitive::Indexing(f) => match f {
            Indexing::Slice(_) => 21,
            Indexing::DynamicSlice(_) => 22,
            Indexing::DynamicUpdateSlice => 23,
            Indexing::Gather(_) => 24,
            Indexing::Scatter(_) => 25,
        },
        Primitive::Reduction(f) => match f {
            Reduction::Reduce(_) => 26,
            Reduction::ArgReduce(_) => 27,
            Reduction::Cumulative(_) => 28,
            Reduction::Sort(_) => 29,
            Reduction::TopK(_) => 30,
        },
        Primitive::Linalg(f) => match f {
            Linalg::DotGeneral(_) => 31,
            Linalg::ConvGeneralDilated(_) => 32,
            Linalg::Cholesky => 59,
            Linalg::TriangularSolve(_) => 60,
            Linalg::Lu => 61,
            Linalg::Qr(_) => 62,
            Linalg::Eigh(_) => 63,
            Linalg::Svd(_) => 64,
            Linalg::Schur(_) => 96,
            Linalg::TridiagonalSolve(_) => 65,
            Linalg::Fft(_) => 71,
        },
        Primitive::Control(f) => match f {
            Control::Cond(_) => 33,
            Control::While(_) => 34,
            Control::Scan(_) => 35,
            Control::ForLoop(_) => 36,
            Control::Jit(_) => 37,
            Control::CustomJvpCall(_) => 38,
            Control::CustomVjpCall(_) => 39,
            Control::Remat(_) => 40,
            Control::CustomLinearSolve(_) => 58,
            Control::ShardMap(_) => 84,
        },
        Primitive::State(f) => match f {
            State::Get(_) => 41,
            State::Swap(_) => 42,
            State::AddUpdate(_) => 43,
        },
        Primitive::Pallas(f) => match f {
            Pallas::ProgramId(_) => 44,
            Pallas::NumPrograms(_) => 45,
            Pallas::Load(_) => 46,
            Pallas::Store(_) => 47,
            Pallas::AtomicRmw(_) => 48,
            Pallas::AtomicCas(_) => 49,
            Pallas::PallasCall(_) => 50,
        },
        Primitive::Collective(f) => match f {
            Collective::AllReduce(_) => 51,
            Collective::AllGather(_) => 52,
            Collective::AxisIndex(_) => 53,
            Collective::Ppermute(_) => 85,
            Collective::AllToAll(_) => 86,
            Collective::ReduceScatter(_) => 87,
            Collective::Pvary(_) => 88,
            Collective::PsumInvariant(_) => 89,
        },
        Primitive::Marker(f) => match f {
            Marker::Name(_) => 54,
            Marker::DevicePut(_) => 55,
            Marker::OptimizationBarrier(_) => 56,
            Marker::PlatformIndex(_) => 57,
            Marker::Reshard(_) => 90,
            Marker::ShardingConstraint(_) => 91,
        },
        Primitive::Window(f) => match f {
            Window::ReduceWindow(_) => 72,
            Window::SelectAndScatterAdd(_) => 73,
            Window::SelectAndGatherAdd(_) => 74,
            Window::Generic(_) => 83,
        },
        Primitive::Random(f) => match f {
            Random::Seed(_) => 75,
            Random::Wrap(_) => 76,
            Random::Unwrap(_) => 77,
            Random::Bits(_) => 78,
            Random::Split(_) => 79,
            Random::FoldIn(_) => 80,
            Random::Threefry2x32(_) => 81,
            Random::Gamma(_) => 82,
            Random::RngBitGenerator(_) => 95,
        },
        Primitive::Callback(f) => match f {
            Callback::DebugPrint(_) => 92,
            Callback::DebugCallback(_) => 93,
            Callback::PureCallback(_) => 94,
        },
    }
}

fn closed() -> ClosedJaxpr {
    ClosedJaxpr::new(Jaxpr::new(), Vec::new())
}

fn ints() -> Ints {
    Ints::new(vec![0])
}

/// One primitive of each variant, and one of each op of the op-keyed ones.
fn samples() -> Vec<Primitive> {
    let f32 = DType::F32;
    let mut v: Vec<Primitive> = Vec::new();
    v.extend(UnaryOp::ALL.iter().map(|&o| Primitive::from(o)));
    v.extend(BinaryOp::ALL.iter().map(|&o| Primitive::from(o)));
    v.extend(ReduceOp::ALL.iter().map(|&op| {
        let axes = vec![0];
        Primitive::from(ReduceParams::new(op, axes))
    }));
    // JAX's `np.int64(..)` spelling of some axes.
    v.push(Primitive::from(ReduceParams {
        op: ReduceOp::Max,
        axes: vec![1, 4],
        np_int64: vec![false, true],
        out_sharding: None,
    }));
    v.extend(ArgOp::ALL.iter().map(|&op| {
        let (axes, index_dtype) = (vec![0], DType::I32);
        Primitive::from(ArgReduceParams {
            op,
            axes,
            index_dtype,
        })
    }));
    let geometry = WindowGeometry {
        window_dimensions: vec![2],
        window_strides: vec![1],
        padding: vec![(1, 0)],
        base_dilation: vec![1],
        window_dilation: vec![2],
    };
    v.extend(WindowOp::ALL.iter().map(|&op| {
        let window = geometry.clone();
        Primitive::from(ReduceWindowParams { op, window })
    }));
    v.push(
        SelectAndScatterAddParams {
            select_prim: SelectPrim::Ge,
            window_dimensions: vec![2],
            window_strides: vec![2],
            padding: vec![(0, 1)],
        }
        .into(),
    );
    v.push(
        SelectAndGatherAddParams {
            select_prim: SelectPrim::Le,
            window: geometry.clone(),
        }
        .into(),
    );
    v.push(
        GenericReduceWindowParams {
            jaxpr: std::sync::Arc::new(Jaxpr::new()),
            window: geometry,
        }
        .into(),
    );
    v.extend(CumulativeOp::ALL.iter().map(|&op| {
        let (axis, reverse) = (0, false);
        Primitive::from(CumulativeParams { op, axis, reverse })
    }));
    v.extend(ScatterKind::ALL.iter().map(|&kind| {
        Primitive::from(ScatterParams {
            kind,
            dimension_numbers: ScatterDimensionNumbers::default(),
            indices_are_sorted: false,
            mode: GatherScatterMode::FillOrDrop,
            unique_indices: false,
            update_jaxpr: None,
        })
    }));
    v.extend([
        RandomSeedParams {
            impl_: PrngImpl::Fry,
        }
        .into(),
        RandomWrapParams {
            impl_: PrngImpl::Fry,
        }
        .into(),
        RandomUnwrapParams.into(),
        RandomBitsParams {
            bit_width: 32,
            shape: vec![2, 3],
        }
        .into(),
        RandomSplitParams { shape: vec![2] }.into(),
        RandomFoldInParams.into(),
        Threefry2x32Params.into(),
        Primitive::from(RandomGammaParams { log_space: true }),
        RngBitGeneratorParams {
            algorithm: RandomAlgorithm::Philox,
            dtype: DType::U8,
            shape: vec![2, 3],
        }
        .into(),
        DebugPrintParams::new("x={}", 1, &[], false).into(),
        DebugCallbackParams {
            callback: HostCallback::parsed("<function f at 0xXXXXXXXXXXXX>"),
            effect: "Debug".into(),
            partitioned: false,
        }
        .into(),
        PureCallbackParams {
            callback: HostCallback::parsed("<function f at 0xXXXXXXXXXXXX>"),
            result_avals: vec![ShapedArray::new(f32, vec![Dim::Const(2)])],
            sharding: "None".into(),
            vmap_method: Some("sequential".into()),
        }
        .into(),
    ]);
    v.extend(CollectiveOp::ALL.iter().map(|&op| {
        let axes = vec![AxisRef::Pos(0)];
        Primitive::from(AllReduceParams { op, axes })
    }));
    v.extend([
        IntegerPowParams { y: 2 }.into(),
        RoundParams {
            rounding_method: RoundingMethod::ToNearestEven,
        }
        .into(),
        ReducePrecisionParams {
            exponent_bits: 8,
            mantissa_bits: 7,
        }
        .into(),
        ConvertElementTypeParams {
            new_dtype: f32,
            weak_type: false,
        }
        .into(),
        BitcastConvertTypeParams { new_dtype: f32 }.into(),
        Primitive::from(Elementwise::SelectN),
        Primitive::from(Elementwise::Clamp),
        Primitive::from(Elementwise::RegularizedIncompleteBeta),
        Primitive::from(Elementwise::Complex),
        Primitive::from(Elementwise::Real),
        Primitive::from(Elementwise::Imag),
        ConjParams {
            input_dtype: DType::C64,
        }
        .into(),
        FftParams {
            fft_type: FftType::Rfft,
            fft_lengths: vec![8],
        }
        .into(),
        BroadcastInDimParams {
            shape: vec![Some(1)],
            broadcast_dimensions: Ints::default(),
        }
        .into(),
        ReshapeParams {
            new_sizes: vec![Some(1)],
            dimensions: None,
        }
        .into(),
        TransposeParams {
            permutation: vec![0],
        }
        .into(),
        SqueezeParams {
            dimensions: vec![0],
        }
        .into(),
        RevParams {
            dimensions: vec![0],
        }
        .into(),
        PadParams {
            padding_config: vec![ints()],
        }
        .into(),
        ConcatenateParams { dimension: 0 }.into(),
        IotaParams {
            dtype: f32,
            shape: vec![Some(1)],
            dimension: 0,
        }
        .into(),
        SplitParams {
            sizes: ints(),
            axis: 0,
        }
        .into(),
        TileParams { reps: ints() }.into(),
        StackParams { axis: 0 }.into(),
        Empty2Params { dtype: f32 }.into(),
        SliceParams {
            start_indices: ints(),
            limit_indices: ints(),
            strides: None,
        }
        .into(),
        DynamicSliceParams {
            slice_sizes: ints(),
        }
        .into(),
        Primitive::from(Indexing::DynamicUpdateSlice),
        GatherParams {
            dimension_numbers: GatherDimensionNumbers::default(),
            fill_value: None,
            indices_are_sorted: false,
            mode: GatherScatterMode::Clip,
            slice_sizes: ints(),
            unique_indices: false,
        }
        .into(),
        SortParams {
            dimension: 0,
            is_stable: false,
            num_keys: 1,
        }
        .into(),
        TopKParams { k: 1, axis: 0 }.into(),
        DotGeneralParams {
            dimension_numbers: DotDimensionNumbers::default(),
            precision: None,
            preferred_element_type: None,
        }
        .into(),
        ConvGeneralDilatedParams {
            window_strides: vec![1],
            padding: vec![(0, 0)],
            lhs_dilation: vec![1],
            rhs_dilation: vec![1],
            dimension_numbers: ConvDimensionNumbers::default(),
            feature_group_count: 1,
            batch_group_count: 1,
            precision: None,
            preferred_element_type: None,
        }
        .into(),
        CondParams {
            branches: vec![closed()],
            branches_platforms: None,
        }
        .into(),
        WhileParams {
            cond_jaxpr: closed(),
            body_jaxpr: closed(),
            cond_nconsts: 0,
            body_nconsts: 0,
        }
        .into(),
        ScanParams {
            jaxpr: closed(),
            length: 1,
            reverse: false,
            num_consts: 0,
            num_carry: 0,
            unroll: 1,
            linear: Vec::new(),
            split_transpose: false,
        }
        .into(),
        ForLoopParams {
            body_jaxpr: closed(),
            body_nconsts: 0,
            nimplicit: 0,
            preserve_dimensions: false,
            apply_reverse_transform: false,
        }
        .into(),
        JitParams {
            name: "f".into(),
            jaxpr: closed(),
        }
        .into(),
        CustomJvpCallParams {
            name: "f".into(),
            call_jaxpr: closed(),
            jvp: "g".into(),
            num_consts: 0,
            symbolic_zeros: false,
        }
        .into(),
        CustomVjpCallParams {
            name: "f".into(),
            call_jaxpr: closed(),
            fwd: "g".into(),
            bwd: "h".into(),
            num_consts: 0,
            symbolic_zeros: false,
        }
        .into(),
        RematParams {
            jaxpr: Arc::new(Jaxpr::new()),
            prevent_cse: true,
            differentiated: false,
            policy: None,
        }
        .into(),
        GetParams {
            indexers: Vec::new(),
        }
        .into(),
        SwapParams {
            indexers: Vec::new(),
        }
        .into(),
        AddUpdateParams {
            indexers: Vec::new(),
        }
        .into(),
        ProgramIdParams { axis: 0 }.into(),
        NumProgramsParams { axis: 0 }.into(),
        LoadParams {
            indexers: Vec::new(),
            has_mask: true,
            has_other: false,
        }
        .into(),
        StoreParams {
            indexers: Vec::new(),
            has_mask: true,
        }
        .into(),
        AtomicRmwParams {
            indexers: Vec::new(),
            op: AtomicOp::Add,
        }
        .into(),
        AtomicCasParams {
            indexers: Vec::new(),
        }
        .into(),
        PallasCallParams {
            kernel: Arc::new(Jaxpr::new()),
            grid: vec![1],
            block_mappings: vec![BlockMapping {
                block_shape: vec![BlockDim::Squeezed],
                index_map: closed(),
                array_aval: ShapedArray::scalar(f32),
            }],
            out_avals: Vec::new(),
            name: None,
            interpret: false,
            debug: false,
            input_output_aliases: Vec::new(),
        }
        .into(),
        AllGatherParams {
            axis_name: vec!["i".into()],
            all_gather_dimension: 0,
            axis_size: 1,
            tiled: false,
        }
        .into(),
        AxisIndexParams {
            axis_name: "i".into(),
        }
        .into(),
        NameParams {
            name: "hidden".into(),
        }
        .into(),
        DevicePutParams {
            copy_semantics: vec!["ArrayCopySemantics.REUSE_INPUT".into(); 2],
            devices: vec!["None".into(); 2],
            srcs: vec!["None".into(); 2],
        }
        .into(),
        OptimizationBarrierParams.into(),
        ShardMapParams {
            jaxpr: closed(),
            mesh: Mesh::new(&[("x", 2)]),
            in_specs: Vec::new(),
            out_specs: Vec::new(),
            newly_manual_axes: vec!["x".into()],
            check_vma: true,
        }
        .into(),
        PpermuteParams {
            axis_name: vec!["x".into()],
            perm: vec![(0, 1), (1, 0)],
        }
        .into(),
        AllToAllParams {
            axis_name: vec!["x".into()],
            name_tuple: false,
            split_axis: 0,
            concat_axis: 0,
            tiled: true,
            axis_size: None,
        }
        .into(),
        ReduceScatterParams {
            axis_name: vec!["x".into()],
            axis_size: 2,
            scatter_dimension: 0,
            tiled: true,
        }
        .into(),
        PvaryParams {
            axes: vec!["x".into()],
        }
        .into(),
        PsumInvariantParams {
            axes: vec!["x".into()],
        }
        .into(),
        ReshardParams.into(),
        ShardingConstraintParams {
            context_mesh: Mesh::default(),
            layout: "None".into(),
            sharding: NamedSharding {
                mesh: ShardingMesh::Concrete(Mesh::new(&[("x", 2)])),
                spec: PartitionSpec(vec![SpecEntry::Axis("x".into())]),
                memory_kind: Some("device".into()),
            },
            unconstrained_dims: Vec::new(),
        }
        .into(),
        CustomLinearSolveParams {
            const_lengths: LinearSolveTuple {
                matvec: 1,
                vecmat: 0,
                solve: 2,
                transpose_solve: 0,
            },
            jaxprs: LinearSolveTuple {
                matvec: Some(closed()),
                vecmat: None,
                solve: Some(closed()),
                transpose_solve: None,
            },
        }
        .into(),
        PlatformIndexParams {
            platforms: vec![Some(vec!["mosaic".into(), "cuda".into()]), None],
        }
        .into(),
        CondParams {
            branches: vec![closed(), closed()],
            branches_platforms: Some(vec![Some(vec!["mosaic".into()]), None]),
        }
        .into(),
        Linalg::Cholesky.into(),
        Linalg::Lu.into(),
        TriangularSolveParams {
            left_side: true,
            lower: true,
            transpose_a: false,
            conjugate_a: false,
            unit_diagonal: false,
        }
        .into(),
        QrParams {
            full_matrices: false,
            pivoting: false,
        }
        .into(),
        EighParams {
            lower: true,
            sort_eigenvalues: true,
        }
        .into(),
        SvdParams {
            compute_uv: true,
            full_matrices: false,
        }
        .into(),
        TridiagonalSolveParams {
            perturb_singular: false,
        }
        .into(),
        SchurParams {
            compute_schur_vectors: true,
            sort_eig_vals: false,
        }
        .into(),
    ]);
    v
}

/// Every primitive's name has a parser (a table row, a hand impl, a bare
/// name or an op of the unary and binary enums), and only primitives
/// without params have no params text.
#[test]
fn every_primitive_name_has_a_parser() {
    let samples = samples();
    let mut seen = [false; VARIANTS];
    for p in &samples {
        seen[variant(p)] = true;
        let n = p.name();
        assert!(parser_of(n).is_some(), "`{n}` has no params text parser");
        let bare = matches!(
            p,
            Primitive::Elementwise(
                Elementwise::Unary(_)
                    | Elementwise::Binary(_)
                    | Elementwise::SelectN
                    | Elementwise::Clamp
                    | Elementwise::RegularizedIncompleteBeta
                    | Elementwise::Complex
                    | Elementwise::Real
                    | Elementwise::Imag
            ) | Primitive::Indexing(Indexing::DynamicUpdateSlice)
                | Primitive::Linalg(Linalg::Cholesky | Linalg::Lu)
        );
        assert_eq!(text_of(p).is_none(), bare, "`{n}`'s params text");
    }
    let missing: Vec<usize> = (0..VARIANTS).filter(|&i| !seen[i]).collect();
    assert!(missing.is_empty(), "variants without a sample: {missing:?}");
}
