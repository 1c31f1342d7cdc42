//! The batching rule of every primitive, in one exhaustive `match`. A rule
//! gets the operands' values and batch dimensions (at least one batched)
//! and returns the outputs' values and batch dimensions.
//!
//! Most rules move the batch dimension to the front and shift the
//! primitive's axis params by one; elementwise ops keep it in place when
//! every operand agrees.

use super::state::{self, StateOp};
use super::{control, index, linalg, to_front};
use jaxon_ir::primitive::Ints;
use jaxon_ir::primitive::{
    AddUpdateParams, ArgReduceParams, BroadcastInDimParams, Collective, ConcatenateParams,
    CondParams, Control, CumulativeParams, DynamicSliceParams, Elementwise, GetParams, Indexing,
    Linalg, PadParams, Pallas, ReduceParams, Reduction, ReshapeParams, RevParams, SliceParams,
    SortParams, SplitParams, SqueezeParams, StackParams, State, Structural, SwapParams, TileParams,
    TopKParams, TransposeParams, WhileParams,
};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, lax, Array};

/// Output values and their batch dimensions.
pub(crate) type Outs = (Vec<Array>, Vec<Option<usize>>);

/// Batches `p` applied to `x` whose batch dimensions are `d`; `n` is the
/// size of the mapped axis and `name` its axis name.
pub(crate) fn batch_rule(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<Outs> {
    use Primitive as P;
    match p {
        P::Elementwise(Elementwise::Unary(_))
        | P::Elementwise(Elementwise::IntegerPow(_))
        | P::Elementwise(Elementwise::Round(_))
        | P::Elementwise(Elementwise::ReducePrecision(_))
        | P::Elementwise(Elementwise::ConvertElementType(_)) => {
            let out = jaxon_trace::bind1(p, &x[..1])?;
            Ok((vec![out], vec![d[0]]))
        }
        P::Elementwise(Elementwise::BitcastConvertType(_)) => front1(p, x, d, n, p.clone()),
        P::Elementwise(Elementwise::Binary(_))
        | P::Elementwise(Elementwise::SelectN)
        | P::Elementwise(Elementwise::Clamp) => elementwise(p, x, d, n),
        P::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape,
            broadcast_dimensions,
        })) => {
            let mut s = vec![Some(n)];
            s.extend(shape.iter().copied());
            let q = P::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
                shape: s,
                broadcast_dimensions: prepend0(&shift_ints(broadcast_dimensions)),
            }));
            front1(p, x, d, n, q)
        }
        P::Structural(Structural::Reshape(ReshapeParams {
            new_sizes,
            dimensions,
        })) => {
            let mut s = vec![Some(n)];
            s.extend(new_sizes.iter().copied());
            let q = P::Structural(Structural::Reshape(ReshapeParams {
                new_sizes: s,
                dimensions: dimensions.as_ref().map(|perm| prepend0u(&shift(perm))),
            }));
            front1(p, x, d, n, q)
        }
        P::Structural(Structural::Transpose(TransposeParams { permutation })) => front1(
            p,
            x,
            d,
            n,
            P::Structural(Structural::Transpose(TransposeParams {
                permutation: prepend0u(&shift(permutation)),
            })),
        ),
        P::Structural(Structural::Squeeze(SqueezeParams { dimensions })) => front1(
            p,
            x,
            d,
            n,
            P::Structural(Structural::Squeeze(SqueezeParams {
                dimensions: shift(dimensions),
            })),
        ),
        P::Structural(Structural::Rev(RevParams { dimensions })) => {
            let bd = d[0].unwrap_or(0);
            let out = jaxon_trace::bind1(
                &P::Structural(Structural::Rev(RevParams {
                    dimensions: around(dimensions, bd),
                })),
                &x[..1],
            )?;
            Ok((vec![out], vec![Some(bd)]))
        }
        P::Structural(Structural::Pad(PadParams { padding_config })) => {
            pad(p, padding_config, x, d, n)
        }
        P::Structural(Structural::Concatenate(ConcatenateParams { dimension })) => all_front(
            x,
            d,
            n,
            P::Structural(Structural::Concatenate(ConcatenateParams {
                dimension: dimension + 1,
            })),
        ),
        P::Structural(Structural::Stack(StackParams { axis })) => all_front(
            x,
            d,
            n,
            P::Structural(Structural::Stack(StackParams { axis: axis + 1 })),
        ),
        P::Indexing(Indexing::Slice(SliceParams {
            start_indices,
            limit_indices,
            strides,
        })) => {
            let q = P::Indexing(Indexing::Slice(SliceParams {
                start_indices: prepend(start_indices, 0),
                limit_indices: prepend(limit_indices, n as i64),
                strides: strides.as_ref().map(|s| prepend(s, 1)),
            }));
            front1(p, x, d, n, q)
        }
        P::Indexing(Indexing::DynamicSlice(DynamicSliceParams { slice_sizes })) => {
            index::dynamic_slice(slice_sizes, x, d, n)
        }
        P::Indexing(Indexing::DynamicUpdateSlice) => index::dynamic_update_slice(x, d, n),
        P::Indexing(Indexing::Gather(_)) => index::gather(p, x, d, n),
        P::Indexing(Indexing::Scatter(_)) => index::scatter(p, x, d, n),
        P::Structural(Structural::Iota(_))
        | P::Structural(Structural::Empty2(_))
        | P::Pallas(Pallas::ProgramId(_))
        | P::Pallas(Pallas::NumPrograms(_)) => Err(Error::Unsupported(format!(
            "vmap of `{}` with a batched dynamic size is not supported",
            p.name()
        ))),
        P::Structural(Structural::Split(SplitParams { sizes, axis })) => front1(
            p,
            x,
            d,
            n,
            P::Structural(Structural::Split(SplitParams {
                sizes: sizes.clone(),
                axis: axis + 1,
            })),
        ),
        P::Structural(Structural::Tile(TileParams { reps })) => front1(
            p,
            x,
            d,
            n,
            P::Structural(Structural::Tile(TileParams {
                reps: prepend(reps, 1),
            })),
        ),
        P::Reduction(Reduction::Reduce(ReduceParams { op, axes })) => {
            reduce_in_place(p, x, d, axes, |axes| {
                P::Reduction(Reduction::Reduce(ReduceParams { op: *op, axes }))
            })
        }
        P::Reduction(Reduction::ArgReduce(ArgReduceParams {
            op,
            axes,
            index_dtype,
        })) => reduce_in_place(p, x, d, axes, |axes| {
            P::Reduction(Reduction::ArgReduce(ArgReduceParams {
                op: *op,
                axes,
                index_dtype: *index_dtype,
            }))
        }),
        P::Reduction(Reduction::Cumulative(CumulativeParams { op, axis, reverse })) => {
            let bd = d[0].unwrap_or(0);
            let q = P::Reduction(Reduction::Cumulative(CumulativeParams {
                op: *op,
                axis: around(&[*axis], bd)[0],
                reverse: *reverse,
            }));
            Ok((vec![jaxon_trace::bind1(&q, &x[..1])?], vec![Some(bd)]))
        }
        P::Linalg(Linalg::DotGeneral(_)) => linalg::dot_general(p, x, d),
        P::Linalg(Linalg::ConvGeneralDilated(_)) => linalg::conv(p, x, d, n),
        P::Reduction(Reduction::Sort(SortParams {
            dimension,
            is_stable,
            num_keys,
        })) => all_front(
            x,
            d,
            n,
            P::Reduction(Reduction::Sort(SortParams {
                dimension: dimension + 1,
                is_stable: *is_stable,
                num_keys: *num_keys,
            })),
        ),
        P::Reduction(Reduction::TopK(TopKParams { k, axis })) => front1(
            p,
            x,
            d,
            n,
            P::Reduction(Reduction::TopK(TopKParams {
                k: *k,
                axis: axis + 1,
            })),
        ),
        P::Control(Control::Cond(CondParams { branches })) => {
            control::cond(branches, x, d, n, name)
        }
        P::Control(Control::While(WhileParams {
            cond_jaxpr,
            body_jaxpr,
            cond_nconsts,
            body_nconsts,
        })) => control::while_loop(
            cond_jaxpr,
            body_jaxpr,
            *cond_nconsts,
            *body_nconsts,
            x,
            d,
            (n, name),
        ),
        P::Control(Control::Scan(_)) => control::scan(p, x, d, n, name),
        P::Control(Control::Jit(_))
        | P::Control(Control::CustomJvpCall(_))
        | P::Control(Control::CustomVjpCall(_))
        | P::Control(Control::Remat(_)) => control::call(p, x, d, n, name),
        P::Control(Control::ForLoop(_)) => control::for_loop(p, x, d, n, name),
        P::State(State::Get(GetParams { indexers })) => {
            state::batch_state(StateOp::Get, indexers, p, x, d, n)
        }
        P::State(State::Swap(SwapParams { indexers })) => {
            state::batch_state(StateOp::Swap, indexers, p, x, d, n)
        }
        P::State(State::AddUpdate(AddUpdateParams { indexers })) => {
            state::batch_state(StateOp::AddUpdate, indexers, p, x, d, n)
        }
        P::Pallas(Pallas::PallasCall(_)) => super::pallas::pallas_call(p, x, d, n),
        P::Collective(Collective::AllReduce(_))
        | P::Collective(Collective::AllGather(_))
        | P::Collective(Collective::AxisIndex(_)) => {
            super::collectives::batch_collective(p, x, d, n, name)
        }
        P::Pallas(Pallas::Load(_))
        | P::Pallas(Pallas::Store(_))
        | P::Pallas(Pallas::AtomicRmw(_))
        | P::Pallas(Pallas::AtomicCas(_)) => Err(Error::Unsupported(format!(
            "vmap of the state/Pallas primitive `{}` is not implemented yet",
            p.name()
        ))),
    }
}

/// Every dim index shifted past a new leading batch dimension.
pub(crate) fn shift(v: &[usize]) -> Vec<usize> {
    v.iter().map(|a| a + 1).collect()
}

pub(crate) fn shift_ints(v: &Ints) -> Ints {
    Ints::new(v.iter().map(|a| a + 1).collect())
}

fn prepend0(v: &Ints) -> Ints {
    prepend(v, 0)
}

fn prepend0u(v: &[usize]) -> Vec<usize> {
    let mut out = vec![0];
    out.extend_from_slice(v);
    out
}

pub(crate) fn prepend(v: &Ints, first: i64) -> Ints {
    let mut out = vec![first];
    out.extend_from_slice(v);
    Ints::new(out)
}

/// Errors unless the operands after the first are unbatched (dynamic sizes
/// and similar scalar params).
fn rest_unbatched(p: &Primitive, d: &[Option<usize>]) -> Result<()> {
    if d.iter().skip(1).any(Option::is_some) {
        return Err(Error::Unsupported(format!(
            "vmap of `{}` with a batched dynamic size operand is not supported",
            p.name()
        )));
    }
    Ok(())
}

/// Binds `q` with operand 0 batched at the front and the other operands
/// as they are; every output is batched at the front.
fn front1(p: &Primitive, x: &[Array], d: &[Option<usize>], n: usize, q: Primitive) -> Result<Outs> {
    rest_unbatched(p, d)?;
    let mut args = x.to_vec();
    args[0] = to_front(&x[0], d[0], n)?;
    let outs = bind(&q, &args)?;
    let k = outs.len();
    Ok((outs, vec![Some(0); k]))
}

/// Binds `q` with every operand batched at the front (broadcast if not).
fn all_front(x: &[Array], d: &[Option<usize>], n: usize, q: Primitive) -> Result<Outs> {
    let args = x
        .iter()
        .zip(d)
        .map(|(a, b)| to_front(a, *b, n))
        .collect::<Result<Vec<_>>>()?;
    let outs = bind(&q, &args)?;
    let k = outs.len();
    Ok((outs, vec![Some(0); k]))
}

/// The logical shape of a value with batch dimension `d`.
pub(crate) fn logical_shape(x: &Array, d: Option<usize>) -> Result<Vec<usize>> {
    let mut s = x.try_shape()?;
    if let Some(d) = d {
        s.remove(d);
    }
    Ok(s)
}

/// n-ary elementwise ops: operands are rank 0 or share a rank (dims equal
/// or 1). When every batched operand has its batch dim at one position
/// and the others are scalars, nothing moves;
/// otherwise batched operands move to the front, unbatched scalars stay
/// scalars, and the rest get a leading batch dim as JAX does: size 1 for
/// the binary ops (they broadcast size-1 dims), full for `select_n` and
/// `clamp` (they do not).
fn elementwise(p: &Primitive, x: &[Array], d: &[Option<usize>], n: usize) -> Result<Outs> {
    // Ranks only, so the fast path also serves dynamic shapes.
    let ranks: Vec<usize> = x
        .iter()
        .zip(d)
        .map(|(a, b)| a.ndim() - usize::from(b.is_some()))
        .collect();
    let rank = ranks.iter().copied().max().unwrap_or(0);
    let first = d.iter().flatten().next().copied();
    // Which operands may stay rank 0 next to arrays: any operand of a
    // binary op, `select_n`'s predicate, `clamp`'s bounds. The cases of
    // `select_n` and `clamp`'s operand must have the result's shape.
    let may_be_scalar = |i: usize| {
        !(matches!(p, Primitive::Elementwise(Elementwise::SelectN)) && i != 0
            || matches!(p, Primitive::Elementwise(Elementwise::Clamp)) && i == 1)
    };
    if d.iter().zip(&ranks).enumerate().all(|(i, (b, r))| match b {
        Some(_) => *b == first && *r == rank,
        None => *r == 0 && may_be_scalar(i),
    }) {
        let out = jaxon_trace::bind1(p, x)?;
        return Ok((vec![out], vec![first]));
    }
    if x.iter().any(jaxon_trace::dynshape::is_dynamic) {
        return elementwise_dynamic(p, x, d, n, rank, &may_be_scalar);
    }
    let shapes = x
        .iter()
        .zip(d)
        .map(|(a, b)| logical_shape(a, *b))
        .collect::<Result<Vec<_>>>()?;
    let size_one = matches!(p, Primitive::Elementwise(Elementwise::Binary(_)));
    let mut out_shape = vec![1; rank];
    for s in shapes.iter().filter(|s| s.len() == rank) {
        for (o, v) in out_shape.iter_mut().zip(s) {
            *o = (*o).max(*v);
        }
    }
    let args = x
        .iter()
        .zip(d)
        .zip(&shapes)
        .enumerate()
        .map(|(i, ((a, b), s))| match b {
            None if s.is_empty() && may_be_scalar(i) => Ok(a.clone()),
            Some(_) if s.len() == rank => to_front(a, *b, n),
            Some(_) => {
                // A batched scalar among arrays.
                let mut shape = vec![n];
                shape.extend(out_shape.iter().map(|&m| if size_one { 1 } else { m }));
                lax::broadcast_in_dim(a, &shape, &[0])
            }
            None if s.is_empty() => {
                // An unbatched scalar case: every member sees it everywhere.
                let mut shape = vec![n];
                shape.extend_from_slice(&out_shape);
                broadcast_np(a, &shape, &[])
            }
            None => {
                let lead = if size_one { 1 } else { n };
                let mut shape = vec![lead];
                shape.extend_from_slice(s);
                broadcast_np(a, &shape, &(1..shape.len()).collect::<Vec<_>>())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let out = jaxon_trace::bind1(p, &args)?;
    Ok((vec![out], vec![Some(0)]))
}

/// [`elementwise`] when some sizes are traced: every operand except the
/// scalars that may stay scalars is broadcast to the full batched sizes
/// (a static 1 broadcasts; dynamic sizes are never size 1).
fn elementwise_dynamic(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    rank: usize,
    may_be_scalar: &dyn Fn(usize) -> bool,
) -> Result<Outs> {
    use jaxon_trace::dynshape::{self as dyn_, Size};
    let logical = x
        .iter()
        .zip(d)
        .map(|(a, b)| {
            let mut s = dyn_::sizes(a)?;
            if let Some(b) = b {
                s.remove(*b);
            }
            Ok(s)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut full = vec![Size::Const(n)];
    full.extend(std::iter::repeat_n(Size::Const(1), rank));
    for s in logical.iter().filter(|s| s.len() == rank) {
        for (o, v) in full[1..].iter_mut().zip(s) {
            if matches!(o, Size::Const(1)) {
                *o = v.clone();
            }
        }
    }
    let args = x
        .iter()
        .zip(d)
        .zip(&logical)
        .enumerate()
        .map(|(i, ((a, b), s))| {
            if b.is_none() && s.is_empty() && may_be_scalar(i) {
                return Ok(a.clone());
            }
            // The operand's axes and where they go in the full sizes.
            let (a, mut dims) = match b {
                Some(_) => (to_front(a, *b, n)?, vec![0]),
                None => (a.clone(), Vec::new()),
            };
            if s.len() == rank {
                dims.extend(1..=rank);
            }
            let sizes = dyn_::sizes(&a)?;
            let squeeze: Vec<usize> = (0..sizes.len())
                .filter(|&k| !sizes[k].same(&full[dims[k]]))
                .collect();
            let a = if squeeze.is_empty() {
                a
            } else {
                lax::squeeze(&a, &squeeze)?
            };
            let dims: Vec<usize> = (0..dims.len())
                .filter(|k| !squeeze.contains(k))
                .map(|k| dims[k])
                .collect();
            dyn_::broadcast_in_dim(&a, &full, &dims)
        })
        .collect::<Result<Vec<_>>>()?;
    let out = jaxon_trace::bind1(p, &args)?;
    Ok((vec![out], vec![Some(0)]))
}

/// `broadcast_in_dim` with the dims spelled `np.int64(..)`, as JAX's
/// batching rules stage them (so printed jaxprs match JAX's).
fn broadcast_np(x: &Array, shape: &[usize], dims: &[usize]) -> Result<Array> {
    let dims = Ints {
        values: dims.iter().map(|&v| v as i64).collect(),
        np_int64: vec![true; dims.len()],
    };
    jaxon_trace::bind1(
        &Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: shape.iter().map(|&v| Some(v)).collect(),
            broadcast_dimensions: dims,
        })),
        std::slice::from_ref(x),
    )
}

/// Maps logical axes to value axes around the batch dim `bd`.
fn around(axes: &[usize], bd: usize) -> Vec<usize> {
    axes.iter()
        .map(|&a| if a >= bd { a + 1 } else { a })
        .collect()
}

/// Reductions keep the batch dim where it is (no transpose): the value
/// axes skip it, and it moves left by the reduced axes before it.
fn reduce_in_place(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    axes: &[usize],
    make: impl FnOnce(Vec<usize>) -> Primitive,
) -> Result<Outs> {
    rest_unbatched(p, d)?;
    let bd = d[0].unwrap_or(0);
    let vaxes = around(axes, bd);
    let out_bd = bd - vaxes.iter().filter(|&&a| a < bd).count();
    let out = jaxon_trace::bind1(&make(vaxes), &x[..1])?;
    Ok((vec![out], vec![Some(out_bd)]))
}

/// `pad`: a batched padding value is applied with a select over a mask of
/// the padded positions.
fn pad(p: &Primitive, config: &[Ints], x: &[Array], d: &[Option<usize>], n: usize) -> Result<Outs> {
    let mut cfg = vec![Ints::new(vec![0, 0, 0])];
    cfg.extend(config.iter().cloned());
    let q = Primitive::Structural(Structural::Pad(PadParams {
        padding_config: cfg,
    }));
    let operand = to_front(&x[0], d[0], n)?;
    if d[1].is_none() {
        let out = jaxon_trace::bind1(&q, &[operand, x[1].clone()])?;
        return Ok((vec![out], vec![Some(0)]));
    }
    let zero = crate::util::scalar_like(&x[1], 0.0)?;
    let padded = jaxon_trace::bind1(&q, &[operand, zero])?;
    let in_shape = logical_shape(&x[0], d[0])?;
    let inside = lax::broadcast_in_dim(&Array::scalar(true), &in_shape, &[])?;
    let mask = jaxon_trace::bind1(p, &[inside, Array::scalar(false)])?;
    let full = padded.try_shape()?;
    let dims: Vec<usize> = (1..full.len()).collect();
    let mask = lax::broadcast_in_dim(&mask, &full, &dims)?;
    let value = lax::broadcast_in_dim(&to_front(&x[1], d[1], n)?, &full, &[0])?;
    let out = lax::select_n(&mask, &[value, padded])?;
    Ok((vec![out], vec![Some(0)]))
}
