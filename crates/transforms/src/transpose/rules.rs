//! The transpose rule of every primitive, in one exhaustive `match`: given
//! the output cotangents, the cotangents of the linear operands. A
//! primitive that is not linear in an operand marked linear is an error.

use super::LinArg;
use crate::util::{jaxpr_is_dynamic, scatter_inverse_gather, unbroadcast_to};
use jaxon_ir::primitive::{
    AllReduceParams, BroadcastInDimParams, Collective, ConcatenateParams, CondParams, Control,
    CumulativeParams, CustomJvpCallParams, DotGeneralParams, Elementwise, GatherParams, Indexing,
    JitParams, Linalg, PadParams, Pallas, ReduceParams, Reduction, RevParams, ScatterParams,
    SliceParams, SplitParams, StackParams, State, Structural, TileParams, TransposeParams,
};
use jaxon_ir::primitive::{
    BinaryOp, CumulativeOp, DotDimensionNumbers, ReduceOp, ScatterDimensionNumbers, ScatterKind,
    UnaryOp,
};
use jaxon_ir::Primitive;
use jaxon_trace::dynshape;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, bind1, lax, numpy as jnp, Array};

type Cts = Vec<Option<Array>>;

fn not_linear(p: &Primitive) -> Result<Cts> {
    Err(Error::InvalidArgument(format!(
        "transpose: `{}` is not a linear primitive",
        p.name()
    )))
}

fn unsupported(p: &Primitive) -> Result<Cts> {
    Err(Error::Unsupported(format!(
        "transposition of `{}` is not implemented yet",
        p.name()
    )))
}

fn zeros(t: &jaxon_ir::ShapedArray) -> Result<Array> {
    jnp::zeros(&t.static_sizes().unwrap_or_default(), t.dtype)
}

fn sizes(t: &jaxon_ir::ShapedArray) -> Vec<usize> {
    t.static_sizes().unwrap_or_default()
}

/// Cotangents of the linear operands of `p` (`None` for the others).
pub(crate) fn transpose_rule(p: &Primitive, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    use Primitive as P;
    let name = p.name();
    let lin = |i: usize| args[i].is_linear();
    let only = |i: usize, ct: Array| -> Cts {
        let mut v = vec![None; args.len()];
        v[i] = Some(ct);
        v
    };
    // Single-output primitives: the cotangent (zero cotangents were skipped).
    let ct = || -> Result<Array> {
        cts[0]
            .clone()
            .ok_or_else(|| Error::InvalidArgument("transpose: missing cotangent".into()))
    };
    match p {
        P::Elementwise(Elementwise::Unary(op)) => match op {
            UnaryOp::Neg => Ok(only(0, lax::neg(&ct()?)?)),
            UnaryOp::Copy => Ok(only(0, ct()?)),
            UnaryOp::Sign
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::IsFinite
            | UnaryOp::Exp
            | UnaryOp::Exp2
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Expm1
            | UnaryOp::Tanh
            | UnaryOp::Logistic
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Cbrt
            | UnaryOp::Abs
            | UnaryOp::Not
            | UnaryOp::Erf
            | UnaryOp::Erfc
            | UnaryOp::ErfInv
            | UnaryOp::Square
            | UnaryOp::StopGradient => not_linear(p),
        },
        P::Elementwise(Elementwise::Binary(op)) => match op {
            BinaryOp::Add | BinaryOp::AddAny | BinaryOp::Sub => {
                let c = ct()?;
                let mut out = vec![None, None];
                if lin(0) {
                    out[0] = Some(unbroadcast_to(&c, args[0].ty())?);
                }
                if lin(1) {
                    let c1 = unbroadcast_to(&c, args[1].ty())?;
                    out[1] = Some(if *op == BinaryOp::Sub {
                        lax::neg(&c1)?
                    } else {
                        c1
                    });
                }
                Ok(out)
            }
            BinaryOp::Mul => {
                let c = ct()?;
                match (lin(0), lin(1)) {
                    (true, false) => Ok(only(
                        0,
                        unbroadcast_to(&lax::mul(&c, args[1].value(name)?)?, args[0].ty())?,
                    )),
                    (false, true) => Ok(only(
                        1,
                        unbroadcast_to(&lax::mul(args[0].value(name)?, &c)?, args[1].ty())?,
                    )),
                    _ => not_linear(p),
                }
            }
            BinaryOp::Div if lin(0) && !lin(1) => Ok(only(
                0,
                unbroadcast_to(&lax::div(&ct()?, args[1].value(name)?)?, args[0].ty())?,
            )),
            // Division is linear only in its numerator (guarded above);
            // the rest are not linear in any operand.
            BinaryOp::Div
            | BinaryOp::Rem
            | BinaryOp::Pow
            | BinaryOp::Max
            | BinaryOp::Min
            | BinaryOp::Atan2
            | BinaryOp::Nextafter
            | BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Xor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRightArithmetic
            | BinaryOp::ShiftRightLogical
            | BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => not_linear(p),
        },
        P::Elementwise(Elementwise::ConvertElementType(_)) => {
            let t = args[0].ty();
            Ok(only(
                0,
                lax::convert_element_type(&ct()?, t.dtype, t.weak_type)?,
            ))
        }
        P::Elementwise(Elementwise::ReducePrecision(_)) => Ok(only(0, bind1(p, &[ct()?])?)),
        P::Collective(Collective::AllReduce(AllReduceParams {
            op: jaxon_ir::primitive::CollectiveOp::Sum,
            ..
        }))
        | P::Collective(Collective::AllGather(_)) => Ok(only(
            0,
            super::collectives::transpose_collective(p, args[0].ty(), &ct()?)?,
        )),
        P::Collective(Collective::AllReduce(_)) | P::Collective(Collective::AxisIndex(_)) => {
            not_linear(p)
        }
        P::Reduction(Reduction::Reduce(ReduceParams {
            op: ReduceOp::Sum,
            axes,
        })) => {
            let shape = args[0].sizes()?;
            let keep: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
            Ok(only(
                0,
                jaxon_trace::dynshape::broadcast_in_dim(&ct()?, &shape, &keep)?,
            ))
        }
        P::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        })) => {
            // Sum over the new dimensions and the size-1 ones that grew
            // (by type, so dynamic sizes work: they are never a static 1).
            let c = ct()?;
            let in_ty = args[0].ty();
            let out_dims = c.ty().shape.clone();
            let bd = broadcast_dimensions.to_usizes();
            let one = |d: &jaxon_ir::Dim| matches!(d, jaxon_ir::Dim::Const(1));
            let mut axes: Vec<usize> = (0..out_dims.len()).filter(|d| !bd.contains(d)).collect();
            for (i, &d) in bd.iter().enumerate() {
                if one(&in_ty.shape[i]) && !one(&out_dims[d]) {
                    axes.push(d);
                }
            }
            axes.sort_unstable();
            let summed = lax::reduce(ReduceOp::Sum, &c, &axes)?;
            let mut out = vec![None; args.len()];
            out[0] = Some(if summed.ndim() == in_ty.shape.len() {
                summed
            } else if in_ty.static_sizes().is_some() {
                lax::reshape(&summed, &sizes(in_ty))?
            } else {
                dynshape::reshape(&summed, &args[0].sizes()?)?
            });
            Ok(out)
        }
        P::Structural(Structural::Reshape(_)) | P::Structural(Structural::Squeeze(_)) => {
            let mut out = vec![None; args.len()];
            let c = ct()?;
            out[0] = Some(
                if args[0].ty().static_sizes().is_none() || dynshape::is_dynamic(&c) {
                    // Back to the operand's dynamic sizes (values here).
                    dynshape::reshape(&c, &args[0].sizes()?)?
                } else {
                    lax::reshape(&c, &sizes(args[0].ty()))?
                },
            );
            Ok(out)
        }
        P::Structural(Structural::Transpose(TransposeParams { permutation })) => {
            let mut inv = vec![0; permutation.len()];
            for (i, &p) in permutation.iter().enumerate() {
                inv[p] = i;
            }
            Ok(only(0, lax::transpose(&ct()?, &inv)?))
        }
        P::Structural(Structural::Rev(RevParams { dimensions })) => {
            Ok(only(0, lax::rev(&ct()?, dimensions)?))
        }
        P::Indexing(Indexing::Slice(SliceParams {
            start_indices,
            limit_indices,
            strides,
        })) => {
            let c = ct()?;
            let in_shape = sizes(args[0].ty());
            let out_shape = c.try_shape()?;
            let config: Vec<(i64, i64, i64)> = (0..in_shape.len())
                .map(|d| {
                    let s = strides.as_ref().map_or(1, |s| s[d]);
                    let lo = start_indices[d];
                    let last = if out_shape[d] == 0 {
                        lo - 1
                    } else {
                        lo + (out_shape[d] as i64 - 1) * s
                    };
                    let hi = in_shape[d] as i64 - last - 1;
                    (lo, hi, s - 1)
                })
                .collect();
            let _ = limit_indices;
            let zero = lax::convert_element_type(&Array::weak(0.0), c.dtype(), false)?;
            Ok(only(0, lax::pad(&c, &zero, &config)?))
        }
        P::Structural(Structural::Pad(PadParams { padding_config })) => {
            let c = ct()?;
            let shape = c.try_shape()?;
            let zero = lax::convert_element_type(&Array::weak(0.0), c.dtype(), false)?;
            // Undo negative padding first, then slice out the operand.
            let unneg: Vec<(i64, i64, i64)> = padding_config
                .iter()
                .map(|cfg| ((-cfg[0]).max(0), (-cfg[1]).max(0), 0))
                .collect();
            let widened = lax::pad(&c, &zero, &unneg)?;
            let wshape = widened.try_shape()?;
            let start: Vec<usize> = padding_config
                .iter()
                .map(|c| c[0].max(0) as usize)
                .collect();
            let limit: Vec<usize> = padding_config
                .iter()
                .zip(&wshape)
                .map(|(c, &n)| n - c[1].max(0) as usize)
                .collect();
            let strides: Vec<usize> = padding_config.iter().map(|c| c[2] as usize + 1).collect();
            let op_ct = lax::slice(&widened, &start, &limit, Some(&strides))?;
            let mut out = vec![None, None];
            if lin(1) {
                let all: Vec<usize> = (0..shape.len()).collect();
                let total = lax::reduce(ReduceOp::Sum, &c, &all)?;
                let inner = lax::reduce(ReduceOp::Sum, &op_ct, &all)?;
                out[1] = Some(lax::sub(&total, &inner)?);
            }
            if lin(0) {
                out[0] = Some(op_ct);
            }
            Ok(out)
        }
        P::Structural(Structural::Concatenate(ConcatenateParams { dimension })) => {
            let c = ct()?;
            let shape = c.try_shape()?;
            let mut out = Vec::with_capacity(args.len());
            let mut offset = 0;
            for a in args {
                let n = sizes(a.ty())[*dimension];
                if a.is_linear() {
                    let mut start = vec![0; shape.len()];
                    let mut limit = shape.clone();
                    start[*dimension] = offset;
                    limit[*dimension] = offset + n;
                    out.push(Some(lax::slice(&c, &start, &limit, None)?));
                } else {
                    out.push(None);
                }
                offset += n;
            }
            Ok(out)
        }
        P::Indexing(Indexing::DynamicSlice(_)) => {
            let starts: Vec<Array> = args[1..]
                .iter()
                .map(|a| a.value(name).cloned())
                .collect::<Result<_>>()?;
            let z = zeros(args[0].ty())?;
            let mut out = vec![None; args.len()];
            out[0] = Some(lax::dynamic_update_slice(&z, &ct()?, &starts)?);
            Ok(out)
        }
        P::Indexing(Indexing::DynamicUpdateSlice) => {
            let c = ct()?;
            let starts: Vec<Array> = args[2..]
                .iter()
                .map(|a| a.value(name).cloned())
                .collect::<Result<_>>()?;
            let upd = args[1].ty();
            let mut out = vec![None; args.len()];
            if upd.static_sizes().is_none() {
                // A dynamic update: its sizes are values in this trace.
                let us = args[1].sizes()?;
                if lin(0) {
                    let z = dynshape::zeros(&us, upd.dtype)?;
                    out[0] = Some(lax::dynamic_update_slice(&c, &z, &starts)?);
                }
                if lin(1) {
                    out[1] = Some(dynshape::dynamic_slice(&c, &starts, &us)?);
                }
                return Ok(out);
            }
            if lin(0) {
                out[0] = Some(lax::dynamic_update_slice(&c, &zeros(upd)?, &starts)?);
            }
            if lin(1) {
                out[1] = Some(lax::dynamic_slice(&c, &starts, &sizes(upd))?);
            }
            Ok(out)
        }
        P::Indexing(Indexing::Gather(GatherParams {
            dimension_numbers: d,
            indices_are_sorted,
            mode,
            unique_indices,
            ..
        })) => {
            let scatter = P::Indexing(Indexing::Scatter(ScatterParams {
                kind: ScatterKind::Add,
                dimension_numbers: ScatterDimensionNumbers {
                    update_window_dims: d.offset_dims.clone(),
                    inserted_window_dims: d.collapsed_slice_dims.clone(),
                    scatter_dims_to_operand_dims: d.start_index_map.clone(),
                    operand_batching_dims: d.operand_batching_dims.clone(),
                    scatter_indices_batching_dims: d.start_indices_batching_dims.clone(),
                },
                indices_are_sorted: *indices_are_sorted,
                mode: *mode,
                unique_indices: *unique_indices,
                update_jaxpr: None,
            }));
            let z = zeros(args[0].ty())?;
            let idx = args[1].value(name)?.clone();
            Ok(only(0, bind1(&scatter, &[z, idx, ct()?])?))
        }
        P::Indexing(Indexing::Scatter(ScatterParams {
            kind: kind @ (ScatterKind::Add | ScatterKind::Set),
            dimension_numbers: d,
            indices_are_sorted,
            mode,
            unique_indices,
            ..
        })) => {
            let c = ct()?;
            let idx = args[1].value(name)?.clone();
            let upd_shape = sizes(args[2].ty());
            let inverse = |v: &Array| {
                scatter_inverse_gather(
                    d,
                    v,
                    &idx,
                    &upd_shape,
                    *indices_are_sorted,
                    *mode,
                    *unique_indices,
                )
            };
            let mut out = vec![None, None, None];
            if *kind == ScatterKind::Set && !*unique_indices {
                // Repeated indices: only the update that won a position
                // (and only operand positions no update touched) receive
                // its cotangent. Which update won is learnt by scattering
                // distinct ids the same way and gathering them back.
                let (ids, won) = scatter_winners(p, d, &idx, &sizes(args[0].ty()), &upd_shape)?;
                let untouched = lax::eq(&won, &jnp::zeros_like(&won)?)?;
                if lin(2) {
                    let hit = lax::eq(&ids, &inverse(&won)?)?;
                    let g = inverse(&c)?;
                    out[2] = Some(lax::select_n(&hit, &[jnp::zeros_like(&g)?, g])?);
                }
                if lin(0) {
                    out[0] = Some(lax::select_n(&untouched, &[jnp::zeros_like(&c)?, c])?);
                }
                return Ok(out);
            }
            if lin(2) {
                out[2] = Some(inverse(&c)?);
            }
            if lin(0) {
                out[0] = Some(if *kind == ScatterKind::Set {
                    // Positions overwritten by the updates get no cotangent.
                    let z = zeros(args[2].ty())?;
                    bind1(p, &[c, idx, z])?
                } else {
                    c
                });
            }
            Ok(out)
        }
        P::Elementwise(Elementwise::SelectN) => {
            let c = ct()?;
            let which = args[0].value(name)?;
            let z = jnp::zeros_like(&c)?;
            let n = args.len() - 1;
            let mut out = vec![None];
            for i in 0..n {
                if lin(i + 1) {
                    let mut cases = vec![z.clone(); n];
                    cases[i] = c.clone();
                    out.push(Some(lax::select_n(which, &cases)?));
                } else {
                    out.push(None);
                }
            }
            Ok(out)
        }
        P::Reduction(Reduction::Cumulative(CumulativeParams {
            op: CumulativeOp::Cumsum,
            axis,
            reverse,
        })) => Ok(only(
            0,
            lax::cumulative(CumulativeOp::Cumsum, &ct()?, *axis, !reverse)?,
        )),
        P::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers,
            preferred_element_type,
            ..
        })) => {
            let c = ct()?;
            match (lin(0), lin(1)) {
                (true, false) => {
                    let y = args[1].value(name)?;
                    let xt = dot_transpose_lhs(
                        &c,
                        args[0].ty().ndim(),
                        y,
                        dimension_numbers,
                        *preferred_element_type,
                        false,
                    )?;
                    Ok(only(
                        0,
                        lax::convert_element_type(&xt, args[0].ty().dtype, false)?,
                    ))
                }
                (false, true) => {
                    let x = args[0].value(name)?;
                    let d = dimension_numbers;
                    let swapped = DotDimensionNumbers {
                        lhs_contracting: d.rhs_contracting.clone(),
                        rhs_contracting: d.lhs_contracting.clone(),
                        lhs_batch: d.rhs_batch.clone(),
                        rhs_batch: d.lhs_batch.clone(),
                    };
                    let yt = dot_transpose_lhs(
                        &c,
                        args[1].ty().ndim(),
                        x,
                        &swapped,
                        *preferred_element_type,
                        true,
                    )?;
                    Ok(only(
                        1,
                        lax::convert_element_type(&yt, args[1].ty().dtype, false)?,
                    ))
                }
                _ => not_linear(p),
            }
        }
        P::Structural(Structural::Split(SplitParams { axis, .. })) => {
            let pieces = cts
                .iter()
                .zip(bind_shapes_of_split(args[0].ty(), p)?)
                .map(|(c, shape)| match c {
                    Some(c) => Ok(c.clone()),
                    None => jnp::zeros(&shape, args[0].ty().dtype),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(only(0, lax::concatenate(&pieces, *axis)?))
        }
        P::Control(Control::Jit(JitParams { name, jaxpr })) => {
            super::control::jit(name, jaxpr, args, cts)
        }
        P::Control(Control::While(_)) => super::control::while_loop(),
        P::Control(Control::ForLoop(_)) => super::for_loop::for_loop(p, args, cts),
        P::Control(Control::Scan(_)) => super::control::scan(p, args, cts),
        P::Control(Control::Cond(CondParams { branches }))
            if branches.iter().any(|b| jaxpr_is_dynamic(&b.jaxpr)) =>
        {
            super::cond_dyn::cond(branches, args, cts)
        }
        P::Control(Control::Cond(CondParams { branches })) => {
            let linear: Vec<bool> = args[1..].iter().map(LinArg::is_linear).collect();
            let mut new_branches = Vec::with_capacity(branches.len());
            for b in branches {
                new_branches.push(super::transpose_jaxpr(b, &linear)?);
            }
            let mut operands = vec![args[0].value(name)?.clone()];
            for a in &args[1..] {
                if let LinArg::Value(v) = a {
                    operands.push(v.clone());
                }
            }
            for (c, t) in cts.iter().zip(branches[0].jaxpr.outvars.iter()) {
                let aval = branches[0]
                    .jaxpr
                    .atom_aval(t)
                    .ok_or_else(|| Error::InvalidArgument("cond outvar".into()))?;
                operands.push(match c {
                    Some(c) => c.clone(),
                    None => zeros(aval.array())?,
                });
            }
            let outs = bind(
                &P::Control(Control::Cond(CondParams {
                    branches: new_branches,
                })),
                &operands,
            )?;
            let mut it = outs.into_iter();
            let mut result = vec![None];
            result.extend(linear.iter().map(|l| if *l { it.next() } else { None }));
            Ok(result)
        }
        P::Control(Control::CustomVjpCall(_)) => {
            crate::custom::transpose_custom_vjp_call(p, args, cts)
        }
        P::Control(Control::CustomJvpCall(CustomJvpCallParams {
            call_jaxpr,
            num_consts,
            ..
        })) => {
            let _ = num_consts;
            let consts: Vec<Array> = call_jaxpr
                .consts
                .iter()
                .cloned()
                .map(Array::from_host)
                .collect();
            if consts.is_empty() {
                crate::custom::transpose_call(&call_jaxpr.jaxpr, args, cts)
            } else {
                unsupported(p)
            }
        }
        P::Control(Control::Remat(_)) => crate::checkpoint::transpose_remat(p, args, cts),
        P::Structural(Structural::Tile(TileParams { reps })) => {
            // out = x repeated: view each dim as (rep, size) and sum the reps.
            let shape = sizes(args[0].ty());
            let mut split = Vec::with_capacity(2 * shape.len());
            for (d, &n) in shape.iter().enumerate() {
                split.push(reps[d].max(0) as usize);
                split.push(n);
            }
            let r = lax::reshape(&ct()?, &split)?;
            let axes: Vec<usize> = (0..shape.len()).map(|d| 2 * d).collect();
            Ok(only(
                0,
                lax::reshape(&lax::reduce(ReduceOp::Sum, &r, &axes)?, &shape)?,
            ))
        }
        P::Structural(Structural::Stack(StackParams { axis })) => {
            let c = ct()?;
            let shape = c.try_shape()?;
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                if a.is_linear() {
                    let mut start = vec![0; shape.len()];
                    let mut limit = shape.clone();
                    start[*axis] = i;
                    limit[*axis] = i + 1;
                    let piece = lax::slice(&c, &start, &limit, None)?;
                    out.push(Some(lax::reshape(&piece, &sizes(a.ty()))?));
                } else {
                    out.push(None);
                }
            }
            Ok(out)
        }
        P::Reduction(Reduction::Reduce(_))
        | P::Elementwise(Elementwise::IntegerPow(_))
        | P::Elementwise(Elementwise::Round(_))
        | P::Elementwise(Elementwise::BitcastConvertType(_))
        | P::Elementwise(Elementwise::Clamp)
        | P::Structural(Structural::Iota(_))
        | P::Reduction(Reduction::ArgReduce(_))
        | P::Reduction(Reduction::Sort(_))
        | P::Reduction(Reduction::TopK(_))
        | P::Structural(Structural::Empty2(_)) => not_linear(p),
        P::Linalg(Linalg::ConvGeneralDilated(_)) => super::conv::transpose_conv(p, args, &ct()?),
        P::Indexing(Indexing::Scatter(ScatterParams {
            kind: ScatterKind::Mul,
            ..
        })) => {
            // Linear in the operand alone: `x ↦ x ⊙ Πu` scales each element,
            // so it is its own transpose.
            if lin(1) || lin(2) {
                return not_linear(p);
            }
            let idx = args[1].value(name)?.clone();
            let upd = args[2].value(name)?.clone();
            Ok(only(0, bind1(p, &[ct()?, idx, upd])?))
        }
        P::Indexing(Indexing::Scatter(ScatterParams {
            kind: ScatterKind::Min | ScatterKind::Max,
            ..
        })) => not_linear(p),
        P::Reduction(Reduction::Cumulative(_))
        | P::State(State::Get(_))
        | P::State(State::Swap(_))
        | P::State(State::AddUpdate(_))
        | P::Pallas(Pallas::ProgramId(_))
        | P::Pallas(Pallas::NumPrograms(_))
        | P::Pallas(Pallas::Load(_))
        | P::Pallas(Pallas::Store(_))
        | P::Pallas(Pallas::AtomicRmw(_))
        | P::Pallas(Pallas::AtomicCas(_)) => unsupported(p),
        P::Pallas(Pallas::PallasCall(_)) => {
            Err(Error::Unsupported(crate::jvp::pallas::NO_REVERSE.into()))
        }
    }
}

fn bind_shapes_of_split(t: &jaxon_ir::ShapedArray, p: &Primitive) -> Result<Vec<Vec<usize>>> {
    let outs = jaxon_ir::abstract_eval(p, &[jaxon_ir::Aval::Array(t.clone())], &[])?;
    Ok(outs.iter().map(|a| sizes(a.array())).collect())
}

fn ranges_like(lens: &[usize]) -> Vec<Vec<usize>> {
    let mut start = 0;
    lens.iter()
        .map(|&n| {
            let r = (start..start + n).collect();
            start += n;
            r
        })
        .collect()
}

fn remaining(n: usize, a: &[usize], b: &[usize]) -> Vec<usize> {
    (0..n)
        .filter(|i| !a.contains(i) && !b.contains(i))
        .collect()
}

/// The cotangent of a dot_general's left operand: contract the result's
/// cotangent with the right operand, then put the axes back in order.
fn dot_transpose_lhs(
    g: &Array,
    x_ndim: usize,
    y: &Array,
    d: &DotDimensionNumbers,
    preferred: Option<jaxon_ir::DType>,
    swap_ans: bool,
) -> Result<Array> {
    let (xc, yc, xb, yb) = (
        &d.lhs_contracting,
        &d.rhs_contracting,
        &d.lhs_batch,
        &d.rhs_batch,
    );
    let x_kept = remaining(x_ndim, xc, xb);
    let y_kept = remaining(y.ndim(), yc, yb);
    let (ans_batch, ans_y) = if swap_ans {
        let r = ranges_like(&[xb.len(), y_kept.len(), x_kept.len()]);
        (r[0].clone(), r[1].clone())
    } else {
        let r = ranges_like(&[xb.len(), x_kept.len(), y_kept.len()]);
        (r[0].clone(), r[2].clone())
    };
    let dims = DotDimensionNumbers {
        lhs_contracting: ans_y,
        rhs_contracting: y_kept,
        lhs_batch: ans_batch,
        rhs_batch: yb.clone(),
    };
    let mut order: Vec<usize> = (0..yc.len()).collect();
    order.sort_by_key(|&i| yc[i]);
    let xc_sorted_by_y: Vec<usize> = order.iter().map(|&i| xc[i]).collect();
    let pre: Vec<usize> = xb
        .iter()
        .chain(&x_kept)
        .chain(&xc_sorted_by_y)
        .copied()
        .collect();
    let mut out_axes: Vec<usize> = (0..pre.len()).collect();
    out_axes.sort_by_key(|&i| pre[i]);
    let prod = lax::dot_general(g, y, dims, preferred)?;
    lax::transpose(&prod, &out_axes)
}

/// Distinct positive ids for the update windows of a set-scatter `p`
/// (broadcast over each window, shaped like the updates), and the scatter
/// of those ids into zeros: per operand element, the id of the update that
/// was written there, 0 where none was.
fn scatter_winners(
    p: &Primitive,
    d: &ScatterDimensionNumbers,
    idx: &Array,
    op_shape: &[usize],
    upd_shape: &[usize],
) -> Result<(Array, Array)> {
    use jaxon_ir::DType;
    let mut ids_shape = upd_shape.to_vec();
    for &w in d.update_window_dims.iter() {
        ids_shape[w as usize] = 1;
    }
    let n: usize = ids_shape.iter().product();
    let one = lax::convert_element_type(&Array::weak(1.0), DType::I32, false)?;
    let ids = lax::add(&lax::reshape(&lax::iota(DType::I32, n)?, &ids_shape)?, &one)?;
    let all: Vec<usize> = (0..ids_shape.len()).collect();
    let ids = lax::broadcast_in_dim(&ids, upd_shape, &all)?;
    // Same placement as `p`, but no combiner: the ids are integers.
    let mut set = p.clone();
    if let Primitive::Indexing(Indexing::Scatter(ScatterParams { update_jaxpr, .. })) = &mut set {
        *update_jaxpr = None;
    }
    let won = bind1(
        &set,
        &[jnp::zeros(op_shape, DType::I32)?, idx.clone(), ids.clone()],
    )?;
    Ok((ids, won))
}
