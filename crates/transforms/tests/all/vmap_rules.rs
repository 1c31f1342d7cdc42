//! `vmap` of every rule family against a loop of unbatched calls stacked
//! (the oracle), eagerly and under `jit`, with the batch dim at the front,
//! in the middle, at the end (negative axes) and absent, on random inputs.

use jaxon_ir::primitive::{
    ConvDimensionNumbers, CumulativeOp, DotDimensionNumbers, GatherDimensionNumbers,
    GatherScatterMode, Ints, ReduceOp, ScatterDimensionNumbers, ScatterKind,
};
use jaxon_ir::primitive::{
    ConvGeneralDilatedParams, Elementwise, GatherParams, Indexing, Linalg, RoundParams,
    ScatterParams, StackParams, Structural, TileParams,
};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{bind, bind1, catch, jit, lax, Array};
use jaxon_transforms::{vmap, Axes};

fn rand(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

const N: usize = 4;

/// A random f64 argument of logical shape `logical`, with a batch axis of
/// size `N` inserted at `axis` (none when `None`).
fn arg(logical: &[usize], axis: Option<isize>, seed: u64) -> Array {
    let mut shape = logical.to_vec();
    if let Some(a) = axis {
        let r = logical.len() as isize + 1;
        let a = if a < 0 { a + r } else { a } as usize;
        shape.insert(a, N);
    }
    let size = shape.iter().product();
    Array::from_vec(rand(size, seed, -1.0, 1.0), &shape)
}

/// Like [`arg`], integers in `[lo, hi)`.
fn int_arg(logical: &[usize], axis: Option<isize>, seed: u64, lo: i32, hi: i32) -> Array {
    let x = arg(logical, axis, seed);
    let v: Vec<i32> = x
        .to_vec::<f64>()
        .iter()
        .map(|u| lo + (((u + 1.0) / 2.0) * (hi - lo) as f64).floor() as i32)
        .collect();
    Array::from_vec(v, &x.shape())
}

fn f64s(x: &Array) -> Vec<f64> {
    lax::convert_element_type(x, DType::F64, false)
        .unwrap()
        .to_vec::<f64>()
}

fn take(x: &Array, axis: usize, i: usize) -> Array {
    let shape = x.shape();
    let mut start = vec![0; shape.len()];
    let mut limit = shape.clone();
    start[axis] = i;
    limit[axis] = i + 1;
    let s = lax::slice(x, &start, &limit, None).unwrap();
    lax::squeeze(&s, &[axis]).unwrap()
}

fn norm(a: isize, rank: usize) -> usize {
    if a < 0 {
        (a + rank as isize) as usize
    } else {
        a as usize
    }
}

/// vmap(f) (eager and under jit) against a loop of f stacked along
/// `out_axis`.
fn check<F>(what: &str, f: F, args: &[Array], in_axes: &[Option<isize>], out_axis: isize)
where
    F: Fn(Vec<Array>) -> Vec<Array> + Copy + 'static,
{
    let axes = Axes::Leaves(in_axes.to_vec());
    let got = vmap(f)
        .in_axes(axes.clone())
        .out_axes(out_axis)
        .call(args.to_vec())
        .unwrap_or_else(|e| panic!("{what}: vmap failed: {e}"));
    let jitted =
        jit(move |a: Vec<Array>| ok(vmap(f).in_axes(axes.clone()).out_axes(out_axis).call(a)))
            .call(args.to_vec())
            .unwrap_or_else(|e| panic!("{what}: jit(vmap) failed: {e}"));
    let mut per: Vec<Vec<Array>> = Vec::new();
    for i in 0..N {
        let a: Vec<Array> = args
            .iter()
            .zip(in_axes)
            .map(|(x, ax)| match ax {
                Some(ax) => take(x, norm(*ax, x.ndim()), i),
                None => x.clone(),
            })
            .collect();
        per.push(catch(|| f(a)).unwrap_or_else(|e| panic!("{what}: oracle failed: {e}")));
    }
    assert_eq!(got.len(), per[0].len(), "{what}: output count");
    for j in 0..got.len() {
        let col: Vec<Array> = per.iter().map(|o| o[j].clone()).collect();
        let want = jnp::stack(&col, out_axis).unwrap();
        for (label, g) in [("vmap", &got[j]), ("jit(vmap)", &jitted[j])] {
            assert_eq!(g.shape(), want.shape(), "{what}: {label} output {j} shape");
            assert_eq!(g.dtype(), want.dtype(), "{what}: {label} output {j} dtype");
            let (gv, wv) = (f64s(g), f64s(&want));
            for (k, (a, b)) in gv.iter().zip(&wv).enumerate() {
                let same = (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * (1.0 + b.abs());
                assert!(same, "{what}: {label} output {j}[{k}]: {a} vs {b}");
            }
        }
    }
}

#[test]
fn elementwise_with_batch_dims_anywhere_or_absent() {
    let f = |a: Vec<Array>| {
        vec![
            &a[0].sin() * &a[1] + 2.0,
            a[0].maximum(&a[1]),
            (&a[0] - &a[1]).abs().sqrt().powi(3),
            a[0].lt(&a[1]),
            bind1(
                &Primitive::Elementwise(Elementwise::Round(RoundParams {
                    rounding_method: jaxon_ir::primitive::RoundingMethod::ToNearestEven,
                })),
                &[&a[0] * 3.0],
            )
            .unwrap(),
            (&a[0] * 5.0).astype(DType::I32),
        ]
    };
    let combos: [[Option<isize>; 2]; 5] = [
        [Some(0), Some(0)],
        [Some(1), None],
        [None, Some(-1)],
        [Some(-1), Some(0)],
        [Some(2), Some(1)],
    ];
    for (s, c) in combos.iter().enumerate() {
        let args = [
            arg(&[3, 2], c[0], 10 + s as u64),
            arg(&[3, 2], c[1], 20 + s as u64),
        ];
        check("elementwise", f, &args, c, 0);
        check("elementwise out -1", f, &args, c, -1);
    }
}

#[test]
fn elementwise_with_rank0_operands_select_and_clamp() {
    let f = |a: Vec<Array>| {
        let (s, x) = (&a[0], &a[1]);
        let which = lax::gt(
            s,
            &lax::convert_element_type(&Array::weak(0.0), DType::F64, false).unwrap(),
        )
        .unwrap();
        let lo = lax::neg(&lax::abs(s).unwrap()).unwrap();
        vec![
            lax::mul(&lax::broadcast_in_dim(s, &[3], &[]).unwrap(), x).unwrap(),
            lax::add(s, s).unwrap(),
            lax::select_n(&which, &[x.clone(), lax::neg(x).unwrap()]).unwrap(),
            lax::clamp(&lo, x, &lax::abs(s).unwrap()).unwrap(),
            lax::clamp(&lo, s, &Array::scalar(0.25f64)).unwrap(),
        ]
    };
    for (s, c) in [[Some(0), None], [None, Some(0)], [Some(0), Some(-1)]]
        .iter()
        .enumerate()
    {
        let args = [
            arg(&[], c[0], 30 + s as u64),
            arg(&[3], c[1], 40 + s as u64),
        ];
        check("rank-0 elementwise", f, &args, c, 0);
    }
}

#[test]
fn shape_ops() {
    let f = |a: Vec<Array>| {
        let x = &a[0];
        let y = &a[1];
        vec![
            lax::broadcast_in_dim(x, &[2, 3, 4], &[1, 2]).unwrap(),
            lax::reshape(x, &[4, 3]).unwrap(),
            lax::transpose(x, &[1, 0]).unwrap(),
            lax::squeeze(&lax::reshape(x, &[3, 1, 4]).unwrap(), &[1]).unwrap(),
            lax::rev(x, &[0, 1]).unwrap(),
            lax::pad(x, &y.sum(jnp::All), &[(1, -1, 1), (0, 2, 0)]).unwrap(),
            lax::concatenate(&[x.clone(), lax::neg(x).unwrap(), y.clone()], 0).unwrap(),
            lax::slice(x, &[0, 1], &[3, 4], Some(&[2, 2])).unwrap(),
            bind1(
                &Primitive::Structural(Structural::Tile(TileParams {
                    reps: Ints::new(vec![2, 1]),
                })),
                std::slice::from_ref(x),
            )
            .unwrap(),
            bind1(
                &Primitive::Structural(Structural::Stack(StackParams { axis: 1 })),
                &[x.clone(), y.clone()],
            )
            .unwrap(),
            lax::expand_dims(x, &[2]).unwrap(),
        ]
        .into_iter()
        .chain(lax::split(x, &[1, 3], 1).unwrap())
        .collect()
    };
    for (s, c) in [
        [Some(0), Some(0)],
        [Some(1), None],
        [None, Some(-1)],
        [Some(-1), Some(1)],
    ]
    .iter()
    .enumerate()
    {
        let args = [
            arg(&[3, 4], c[0], 50 + s as u64),
            arg(&[3, 4], c[1], 60 + s as u64),
        ];
        check("shape ops", f, &args, c, 0);
        check("shape ops out 1", f, &args, c, 1);
    }
}

#[test]
fn reductions_and_cumulative() {
    let f = |a: Vec<Array>| {
        let x = &a[0];
        vec![
            lax::reduce(ReduceOp::Sum, x, &[0, 2]).unwrap(),
            lax::reduce(ReduceOp::Max, x, &[1]).unwrap(),
            lax::reduce(ReduceOp::Prod, x, &[2]).unwrap(),
            lax::reduce(
                ReduceOp::Or,
                &lax::gt(x, &Array::scalar(0.5f64)).unwrap(),
                &[0],
            )
            .unwrap(),
            lax::arg_reduce(jaxon_ir::primitive::ArgOp::Argmax, x, 1, DType::I32).unwrap(),
            lax::arg_reduce(jaxon_ir::primitive::ArgOp::Argmin, x, 2, DType::I32).unwrap(),
            lax::cumulative(CumulativeOp::Cumsum, x, 1, false).unwrap(),
            lax::cumulative(CumulativeOp::Cumprod, x, 2, true).unwrap(),
            lax::cumulative(CumulativeOp::Cummax, x, 0, false).unwrap(),
        ]
    };
    for (s, ax) in [Some(0), Some(2), Some(-1)].iter().enumerate() {
        check(
            "reductions",
            f,
            &[arg(&[2, 3, 4], *ax, 70 + s as u64)],
            &[*ax],
            0,
        );
    }
}

#[test]
fn dot_general_in_every_batching_pattern() {
    let f = |a: Vec<Array>| {
        let bdn = DotDimensionNumbers {
            lhs_contracting: vec![2],
            rhs_contracting: vec![1],
            lhs_batch: vec![0],
            rhs_batch: vec![0],
        };
        let lhs3 = lax::reshape(&a[0], &[1, 3, 4]).unwrap();
        let rhs3 = lax::reshape(&a[1], &[1, 4, 2]).unwrap();
        vec![
            a[0].matmul(&a[1]),
            lax::dot_general(&lhs3, &rhs3, bdn, None).unwrap(),
            a[0].matmul(a[1].sum(1)),
        ]
    };
    for (s, c) in [
        [Some(0), Some(0)],
        [Some(1), None],
        [None, Some(2)],
        [Some(-1), Some(1)],
    ]
    .iter()
    .enumerate()
    {
        let args = [
            arg(&[3, 4], c[0], 80 + s as u64),
            arg(&[4, 2], c[1], 90 + s as u64),
        ];
        check("dot_general", f, &args, c, 0);
        check("dot_general out -1", f, &args, c, -1);
    }
}

fn conv(lhs: &Array, rhs: &Array, spec: &ConvDimensionNumbers) -> Array {
    conv_groups(lhs, rhs, spec, 1)
}

fn conv_groups(lhs: &Array, rhs: &Array, spec: &ConvDimensionNumbers, groups: usize) -> Array {
    let p = Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
        window_strides: vec![2, 1],
        padding: vec![(1, 0), (0, 1)],
        lhs_dilation: vec![1, 1],
        rhs_dilation: vec![1, 2],
        dimension_numbers: spec.clone(),
        feature_group_count: groups,
        batch_group_count: 1,
        precision: None,
        preferred_element_type: None,
    }));
    ok(bind1(&p, &[lhs.clone(), rhs.clone()]))
}

#[test]
fn conv_with_batched_lhs_rhs_or_both() {
    let nchw = |a: Vec<Array>| {
        let spec = ConvDimensionNumbers {
            lhs_spec: vec![0, 1, 2, 3],
            rhs_spec: vec![0, 1, 2, 3],
            out_spec: vec![0, 1, 2, 3],
        };
        vec![conv(&a[0], &a[1], &spec)]
    };
    // NHWC images, HWIO kernels, NHWC outputs.
    let nhwc = |a: Vec<Array>| {
        let spec = ConvDimensionNumbers {
            lhs_spec: vec![0, 3, 1, 2],
            rhs_spec: vec![3, 2, 0, 1],
            out_spec: vec![0, 3, 1, 2],
        };
        vec![conv(&a[0], &a[1], &spec)]
    };
    for (s, c) in [[Some(0), None], [None, Some(2)], [Some(-1), Some(0)]]
        .iter()
        .enumerate()
    {
        let s = s as u64;
        let args = [
            arg(&[2, 3, 5, 4], c[0], 100 + s),
            arg(&[4, 3, 2, 2], c[1], 110 + s),
        ];
        check("conv nchw", nchw, &args, c, 0);
        let args = [
            arg(&[2, 5, 4, 3], c[0], 120 + s),
            arg(&[2, 2, 3, 4], c[1], 130 + s),
        ];
        check("conv nhwc", nhwc, &args, c, 1);
    }
}

#[test]
fn sort_and_top_k() {
    let f = |a: Vec<Array>| {
        let mut outs = lax::sort(&[a[0].clone(), a[1].clone()], 1, true, 1).unwrap();
        let (v, i) = lax::top_k(&a[0], 2).unwrap();
        outs.push(v);
        outs.push(i);
        outs
    };
    for (s, c) in [[Some(0), Some(0)], [Some(2), None], [None, Some(1)]]
        .iter()
        .enumerate()
    {
        let args = [
            arg(&[2, 5], c[0], 140 + s as u64),
            arg(&[2, 5], c[1], 150 + s as u64),
        ];
        check("sort/top_k", f, &args, c, 0);
    }
}

#[test]
fn dynamic_slice_and_update_with_batched_or_shared_starts() {
    // Starts reach out of bounds, so clamping is exercised.
    let f = |a: Vec<Array>| {
        let (x, u, i, j) = (&a[0], &a[1], &a[2], &a[3]);
        vec![
            lax::dynamic_slice(x, &[i.clone(), j.clone()], &[2, 3]).unwrap(),
            lax::dynamic_update_slice(x, u, &[j.clone(), i.clone()]).unwrap(),
        ]
    };
    let combos: [[Option<isize>; 4]; 5] = [
        [Some(0), Some(0), None, None],
        [Some(0), None, Some(0), None],
        [None, None, Some(0), Some(0)],
        [Some(1), Some(-1), None, Some(0)],
        [None, Some(0), Some(0), None],
    ];
    for (s, c) in combos.iter().enumerate() {
        let s = s as u64;
        let args = [
            arg(&[5, 6], c[0], 160 + s),
            arg(&[2, 3], c[1], 170 + s),
            int_arg(&[], c[2], 180 + s, -2, 7),
            int_arg(&[], c[3], 190 + s, -2, 7),
        ];
        check("dynamic_slice/update", f, &args, c, 0);
    }
}

fn row_gather(x: &Array, idx: &Array, mode: GatherScatterMode) -> Array {
    let p = Primitive::Indexing(Indexing::Gather(GatherParams {
        dimension_numbers: GatherDimensionNumbers {
            offset_dims: Ints::new(vec![1]),
            collapsed_slice_dims: Ints::new(vec![0]),
            start_index_map: Ints::new(vec![0]),
            operand_batching_dims: Ints::default(),
            start_indices_batching_dims: Ints::default(),
        },
        fill_value: None,
        indices_are_sorted: false,
        mode,
        slice_sizes: Ints::new(vec![1, 3]),
        unique_indices: false,
    }));
    bind1(&p, &[x.clone(), idx.clone()]).unwrap()
}

fn row_scatter(kind: ScatterKind, x: &Array, idx: &Array, upd: &Array) -> Array {
    let p = Primitive::Indexing(Indexing::Scatter(ScatterParams {
        kind,
        dimension_numbers: ScatterDimensionNumbers {
            update_window_dims: Ints::new(vec![1]),
            inserted_window_dims: Ints::new(vec![0]),
            scatter_dims_to_operand_dims: Ints::new(vec![0]),
            operand_batching_dims: Ints::default(),
            scatter_indices_batching_dims: Ints::default(),
        },
        indices_are_sorted: false,
        mode: GatherScatterMode::FillOrDrop,
        unique_indices: false,
        update_jaxpr: None,
    }));
    bind1(&p, &[x.clone(), idx.clone(), upd.clone()]).unwrap()
}

#[test]
fn gather_and_scatter() {
    let f = |a: Vec<Array>| {
        let (x, idx, upd) = (&a[0], &a[1], &a[2]);
        vec![
            row_gather(x, idx, GatherScatterMode::Clip),
            row_gather(x, idx, GatherScatterMode::FillOrDrop),
            row_scatter(ScatterKind::Add, x, idx, upd),
            row_scatter(ScatterKind::Set, x, idx, upd),
            row_scatter(ScatterKind::Max, x, idx, upd),
        ]
    };
    let combos: [[Option<isize>; 3]; 5] = [
        [Some(0), None, None],
        [None, Some(0), None],
        [Some(1), Some(1), None],
        [None, None, Some(-1)],
        [Some(0), Some(0), Some(0)],
    ];
    for (s, c) in combos.iter().enumerate() {
        let s = s as u64;
        // Indices in [-1, 6) on 5 rows: some are out of bounds.
        let args = [
            arg(&[5, 3], c[0], 200 + s),
            int_arg(&[4, 1], c[1], 210 + s, -1, 6),
            arg(&[4, 3], c[2], 220 + s),
        ];
        check("gather/scatter", f, &args, c, 0);
    }
}

#[test]
fn unbatched_iota_and_convert_inside_vmap() {
    let f = |a: Vec<Array>| {
        let i = lax::iota(DType::I32, 3).unwrap();
        let fi = lax::convert_element_type(&i, DType::F64, false).unwrap();
        vec![
            lax::add(&a[0], &fi).unwrap(),
            lax::bitcast_convert_type(&a[0], DType::I64).unwrap(),
            bind(
                &Primitive::Elementwise(Elementwise::Unary(jaxon_ir::primitive::UnaryOp::Exp)),
                &[a[0].clone()],
            )
            .unwrap()
            .remove(0),
        ]
    };
    check("iota", f, &[arg(&[3], Some(1), 230)], &[Some(1)], 0);
}

#[test]
fn grouped_conv_in_every_batching_pattern() {
    let grouped = |a: Vec<Array>| {
        let spec = ConvDimensionNumbers {
            lhs_spec: vec![0, 1, 2, 3],
            rhs_spec: vec![0, 1, 2, 3],
            out_spec: vec![0, 1, 2, 3],
        };
        vec![conv_groups(&a[0], &a[1], &spec, 2)]
    };
    // NHWC / HWIO / NHWC, so the feature dims are not adjacent to 0.
    let grouped_nhwc = |a: Vec<Array>| {
        let spec = ConvDimensionNumbers {
            lhs_spec: vec![0, 3, 1, 2],
            rhs_spec: vec![3, 2, 0, 1],
            out_spec: vec![0, 3, 1, 2],
        };
        vec![conv_groups(&a[0], &a[1], &spec, 2)]
    };
    // 4 input features in 2 groups of 2; 6 output features.
    for (s, c) in [[Some(1), None], [None, Some(0)], [Some(0), Some(-1)]]
        .iter()
        .enumerate()
    {
        let s = s as u64;
        let args = [
            arg(&[2, 4, 5, 4], c[0], 240 + s),
            arg(&[6, 2, 2, 2], c[1], 250 + s),
        ];
        check("grouped conv", grouped, &args, c, 0);
        let args = [
            arg(&[2, 5, 4, 4], c[0], 260 + s),
            arg(&[2, 2, 2, 6], c[1], 270 + s),
        ];
        check("grouped conv nhwc", grouped_nhwc, &args, c, 0);
    }
}
