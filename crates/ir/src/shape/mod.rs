//! Shape rules: the symbolic `abstract_eval` of every primitive.
//!
//! Each family of primitives has its own submodule; [`abstract_eval`] is the
//! single exhaustive dispatch over [`Primitive`]. Dimensions compare
//! symbolically: two dims are equal iff they are the same constant or the
//! same variable.

use crate::primitive::{
    AddUpdateParams, AllGatherParams, AllReduceParams, ArgReduceParams, AtomicCasParams,
    AtomicRmwParams, BitcastConvertTypeParams, BroadcastInDimParams, Callback, Collective,
    ConcatenateParams, CondParams, Control, ConvertElementTypeParams, CumulativeParams,
    CustomJvpCallParams, CustomVjpCallParams, DotGeneralParams, DynamicSliceParams, Elementwise,
    Empty2Params, ForLoopParams, GatherParams, GetParams, Indexing, IotaParams, JitParams, Linalg,
    LoadParams, Marker, PadParams, Pallas, PallasCallParams, PlatformIndexParams, ReduceParams,
    ReducePrecisionParams, Reduction, RematParams, ReshapeParams, RevParams, ScanParams,
    ScatterParams, SliceParams, SortParams, SplitParams, SqueezeParams, StackParams, State,
    StoreParams, Structural, SwapParams, TileParams, TopKParams, TransposeParams, WhileParams,
    Window,
};
mod collective;
mod control;
mod decomp;
mod elementwise;
mod indexing;
mod linalg;
mod random;
mod reduce;
mod spmd;
mod state;
mod structural;
mod window;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_more;

use crate::aval::{Aval, Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::jaxpr::{Atom, Var};
use crate::primitive::Primitive;

/// The output types of applying `primitive` to operands of types `in_avals`.
///
/// `in_atoms` are the operands themselves, so that dynamic-size operands can
/// name the dimensions they define (`Dim::Var`). A result dimension that is
/// another result of the same equation (JAX's `OutDBIdx`) is given as
/// [`out_dim`]`(k)`; the checker resolves it against the equation's binders.
pub fn abstract_eval(
    primitive: &Primitive,
    in_avals: &[Aval],
    in_atoms: &[Atom],
) -> Result<Vec<Aval>, IrError> {
    let cx = Cx {
        name: primitive.name(),
        avals: in_avals,
        atoms: in_atoms,
    };
    let arrays = |v: Vec<ShapedArray>| v.into_iter().map(Aval::Array).collect();
    let one = |a: ShapedArray| vec![Aval::Array(a)];
    Ok(match primitive {
        Primitive::Elementwise(f) => match f {
            Elementwise::Unary(op) => one(elementwise::unary(&cx, *op)?),
            Elementwise::Binary(op) => one(elementwise::binary(&cx, *op)?),
            Elementwise::IntegerPow(_) => one(elementwise::integer_pow(&cx)?),
            Elementwise::Round(_) => one(elementwise::float_unary(&cx)?),
            Elementwise::ReducePrecision(ReducePrecisionParams {
                exponent_bits,
                mantissa_bits,
            }) => one(elementwise::reduce_precision(
                &cx,
                *exponent_bits,
                *mantissa_bits,
            )?),
            Elementwise::ConvertElementType(ConvertElementTypeParams {
                new_dtype,
                weak_type,
            }) => one(elementwise::convert(&cx, *new_dtype, *weak_type)?),
            Elementwise::BitcastConvertType(BitcastConvertTypeParams { new_dtype }) => {
                one(elementwise::bitcast(&cx, *new_dtype)?)
            }
            Elementwise::SelectN => one(elementwise::select_n(&cx)?),
            Elementwise::Clamp => one(elementwise::clamp(&cx)?),
            Elementwise::RegularizedIncompleteBeta => one(elementwise::betainc(&cx)?),
            Elementwise::Complex => one(elementwise::complex(&cx)?),
            Elementwise::Real | Elementwise::Imag => one(elementwise::real_imag(&cx)?),
            Elementwise::Conj(_) => one(elementwise::conj(&cx)?),
        },
        Primitive::Structural(f) => match f {
            Structural::BroadcastInDim(BroadcastInDimParams {
                shape,
                broadcast_dimensions,
            }) => one(structural::broadcast_in_dim(
                &cx,
                shape,
                &broadcast_dimensions.to_usizes(),
            )?),
            Structural::Reshape(ReshapeParams {
                new_sizes,
                dimensions,
            }) => one(structural::reshape(&cx, new_sizes, dimensions.as_deref())?),
            Structural::Transpose(TransposeParams { permutation }) => {
                one(structural::transpose(&cx, permutation)?)
            }
            Structural::Squeeze(SqueezeParams { dimensions }) => {
                one(structural::squeeze(&cx, dimensions)?)
            }
            Structural::Rev(RevParams { dimensions }) => one(structural::rev(&cx, dimensions)?),
            Structural::Pad(PadParams { padding_config }) => {
                one(structural::pad(&cx, padding_config)?)
            }
            Structural::Concatenate(ConcatenateParams { dimension }) => {
                one(structural::concatenate(&cx, *dimension)?)
            }
            Structural::Iota(IotaParams {
                dtype,
                shape,
                dimension,
            }) => one(structural::iota(&cx, *dtype, shape, *dimension)?),
            Structural::Split(SplitParams { sizes, axis }) => {
                arrays(structural::split(&cx, sizes, *axis)?)
            }
            Structural::Tile(TileParams { reps }) => one(structural::tile(&cx, reps)?),
            Structural::Stack(StackParams { axis }) => one(structural::stack(&cx, *axis)?),
            Structural::Empty2(Empty2Params { dtype }) => {
                cx.arity(0)?;
                one(ShapedArray::scalar(*dtype))
            }
        },
        Primitive::Indexing(f) => match f {
            Indexing::Slice(SliceParams {
                start_indices,
                limit_indices,
                strides,
            }) => one(structural::slice(
                &cx,
                start_indices,
                limit_indices,
                strides.as_deref(),
            )?),
            Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
                one(indexing::dynamic_slice(&cx, slice_sizes)?)
            }
            Indexing::DynamicUpdateSlice => one(indexing::dynamic_update_slice(&cx)?),
            Indexing::Gather(GatherParams {
                dimension_numbers,
                slice_sizes,
                ..
            }) => one(indexing::gather(&cx, dimension_numbers, slice_sizes)?),
            Indexing::Scatter(ScatterParams {
                dimension_numbers,
                update_jaxpr,
                ..
            }) => one(indexing::scatter(
                &cx,
                dimension_numbers,
                update_jaxpr.as_deref(),
            )?),
        },
        Primitive::Reduction(f) => match f {
            Reduction::Reduce(ReduceParams { op, axes, .. }) => {
                one(reduce::reduce(&cx, *op, axes)?)
            }
            Reduction::ArgReduce(ArgReduceParams {
                axes, index_dtype, ..
            }) => one(reduce::arg_reduce(&cx, axes, *index_dtype)?),
            Reduction::Cumulative(CumulativeParams { op, axis, .. }) => {
                one(reduce::cumulative(&cx, *op, *axis)?)
            }
            Reduction::Sort(SortParams {
                dimension,
                num_keys,
                ..
            }) => arrays(reduce::sort(&cx, *dimension, *num_keys)?),
            Reduction::TopK(TopKParams { k, axis }) => arrays(reduce::top_k(&cx, *k, *axis)?),
        },
        Primitive::Linalg(f) => match f {
            Linalg::DotGeneral(DotGeneralParams {
                dimension_numbers,
                preferred_element_type,
                ..
            }) => one(linalg::dot_general(
                &cx,
                dimension_numbers,
                *preferred_element_type,
            )?),
            Linalg::ConvGeneralDilated(x) => one(linalg::conv(&cx, x)?),
            Linalg::Cholesky => one(decomp::cholesky(&cx)?),
            Linalg::TriangularSolve(x) => one(decomp::triangular_solve(&cx, x)?),
            Linalg::Lu => arrays(decomp::lu(&cx)?),
            Linalg::Qr(x) => arrays(decomp::qr(&cx, x)?),
            Linalg::Eigh(_) => arrays(decomp::eigh(&cx)?),
            Linalg::Svd(x) => arrays(decomp::svd(&cx, x)?),
            Linalg::Schur(x) => arrays(decomp::schur(&cx, x)?),
            Linalg::TridiagonalSolve(x) => one(decomp::tridiagonal_solve(&cx, x.perturb_singular)?),
            Linalg::Fft(x) => one(linalg::fft(&cx, x)?),
        },
        Primitive::Collective(f) => match f {
            Collective::AllReduce(AllReduceParams { op, axes }) => {
                one(collective::all_reduce(&cx, *op, axes)?)
            }
            Collective::AllGather(AllGatherParams {
                axis_name,
                all_gather_dimension,
                axis_size,
                tiled,
            }) => one(collective::all_gather(
                &cx,
                axis_name,
                *all_gather_dimension,
                *axis_size,
                *tiled,
            )?),
            Collective::AxisIndex(_) => {
                cx.arity(0)?;
                one(ShapedArray::scalar(DType::I32))
            }
            Collective::Ppermute(p) => one(spmd::ppermute(&cx, &p.axis_name, &p.perm)?),
            Collective::AllToAll(p) => one(spmd::all_to_all(&cx, p)?),
            Collective::ReduceScatter(p) => one(spmd::reduce_scatter(&cx, p)?),
            Collective::Pvary(p) => one(spmd::same(&cx, &p.axes)?),
            Collective::PsumInvariant(p) => one(spmd::same(&cx, &p.axes)?),
        },
        Primitive::Marker(f) => match f {
            Marker::Name(_) | Marker::Reshard(_) | Marker::ShardingConstraint(_) => {
                cx.arity(1)?;
                one(cx.arr(0)?.clone())
            }
            Marker::DevicePut(_) | Marker::OptimizationBarrier(_) => (0..cx.avals.len())
                .map(|i| cx.arr(i).map(|a| Aval::Array(a.clone())))
                .collect::<Result<_, _>>()?,
            Marker::PlatformIndex(PlatformIndexParams { platforms }) => {
                cx.arity(0)?;
                if platforms.is_empty() {
                    return Err(cx.err("platforms is empty"));
                }
                one(ShapedArray::scalar(DType::I32))
            }
        },
        Primitive::Random(f) => arrays(random::random(&cx, f)?),
        Primitive::Callback(f) => {
            for i in 0..cx.avals.len() {
                cx.arr(i)?;
            }
            match f {
                Callback::DebugPrint(p) => {
                    let (n, names) = p.arg_names()?;
                    if n + names.len() != cx.avals.len() {
                        return Err(cx.err(format!(
                            "the operand tree `{}` has {} leaves, got {} operands",
                            p.in_tree,
                            n + names.len(),
                            cx.avals.len()
                        )));
                    }
                    Vec::new()
                }
                Callback::DebugCallback(_) => Vec::new(),
                Callback::PureCallback(p) => arrays(p.result_avals.clone()),
            }
        }
        Primitive::Window(f) => match f {
            Window::ReduceWindow(x) => one(window::reduce_window(&cx, &x.window)?),
            Window::Generic(x) => arrays(window::generic(&cx, &x.jaxpr, &x.window)?),
            Window::SelectAndGatherAdd(x) => one(window::select_and_gather(&cx, &x.window)?),
            Window::SelectAndScatterAdd(x) => one(window::select_and_scatter(&cx, &x.geometry())?),
        },
        Primitive::Control(f) => match f {
            Control::Cond(CondParams { branches, .. }) => control::cond(&cx, branches)?,
            Control::While(WhileParams {
                cond_jaxpr,
                body_jaxpr,
                cond_nconsts,
                body_nconsts,
            }) => control::while_loop(&cx, cond_jaxpr, body_jaxpr, *cond_nconsts, *body_nconsts)?,
            Control::Scan(ScanParams {
                jaxpr,
                length,
                num_consts,
                num_carry,
                linear,
                ..
            }) => control::scan(&cx, jaxpr, *length, *num_consts, *num_carry, linear)?,
            Control::ForLoop(ForLoopParams {
                body_jaxpr,
                body_nconsts,
                nimplicit,
                ..
            }) => control::for_loop(&cx, body_jaxpr, *body_nconsts, *nimplicit)?,
            Control::Jit(JitParams { jaxpr, .. }) => control::call(&cx, &jaxpr.jaxpr)?,
            Control::CustomJvpCall(CustomJvpCallParams { call_jaxpr, .. }) => {
                control::call(&cx, &call_jaxpr.jaxpr)?
            }
            Control::CustomVjpCall(CustomVjpCallParams { call_jaxpr, .. }) => {
                control::call(&cx, &call_jaxpr.jaxpr)?
            }
            Control::Remat(RematParams { jaxpr, .. }) => control::call(&cx, jaxpr)?,
            Control::CustomLinearSolve(p) => control::linear_solve(&cx, p)?,
            Control::ShardMap(p) => spmd::shard_map(&cx, p)?,
        },
        Primitive::State(f) => match f {
            State::Get(GetParams { indexers }) => one(state::get(&cx, indexers)?),
            State::Swap(SwapParams { indexers }) => one(state::swap(&cx, indexers)?),
            State::AddUpdate(AddUpdateParams { indexers }) => {
                state::addupdate(&cx, indexers)?;
                Vec::new()
            }
        },
        Primitive::Pallas(f) => match f {
            Pallas::ProgramId(_) | Pallas::NumPrograms(_) => {
                cx.arity(0)?;
                one(ShapedArray::scalar(DType::I32))
            }
            Pallas::Load(LoadParams {
                indexers,
                has_mask,
                has_other,
            }) => one(state::load(&cx, indexers, *has_mask, *has_other)?),
            Pallas::Store(StoreParams { indexers, has_mask }) => {
                one(state::store(&cx, indexers, *has_mask)?)
            }
            Pallas::AtomicRmw(AtomicRmwParams { indexers, op }) => {
                one(state::atomic_rmw(&cx, indexers, *op)?)
            }
            Pallas::AtomicCas(AtomicCasParams { indexers }) => {
                one(state::atomic_cas(&cx, indexers)?)
            }
            Pallas::PallasCall(PallasCallParams {
                block_mappings,
                out_avals,
                ..
            }) => arrays(state::pallas_call(&cx, block_mappings, out_avals)?),
        },
    })
}

/// NumPy broadcast of two shapes, or `None` if incompatible.
pub fn broadcast_sizes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let y = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        *o = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    Some(out)
}

/// The dimension "result `k` of this same equation" (JAX's `OutDBIdx`), used
/// in [`abstract_eval`] results whose size is computed by the equation.
pub fn out_dim(k: usize) -> Dim {
    Dim::Var(Var(OUT_DIM_BASE.saturating_sub(k as u32)))
}

/// If `d` is an [`out_dim`], the result index it names.
pub fn as_out_dim(d: Dim) -> Option<usize> {
    match d {
        Dim::Var(Var(v)) if v > OUT_DIM_BASE - OUT_DIM_SPAN => Some((OUT_DIM_BASE - v) as usize),
        _ => None,
    }
}

const OUT_DIM_BASE: u32 = u32::MAX;
const OUT_DIM_SPAN: u32 = 1 << 16;

/// The context of one shape-rule application: name, operand types, atoms.
pub(crate) struct Cx<'a> {
    pub name: &'static str,
    pub avals: &'a [Aval],
    pub atoms: &'a [Atom],
}

impl Cx<'_> {
    /// A type error for this primitive.
    pub fn err(&self, msg: impl Into<String>) -> IrError {
        IrError::ty(self.name, msg)
    }

    /// Requires exactly `n` operands.
    pub fn arity(&self, n: usize) -> Result<(), IrError> {
        if self.avals.len() != n {
            return Err(self.err(format!("expected {n} operand(s), got {}", self.avals.len())));
        }
        Ok(())
    }

    /// Requires at least `n` operands.
    pub fn min_arity(&self, n: usize) -> Result<(), IrError> {
        if self.avals.len() < n {
            return Err(self.err(format!(
                "expected at least {n} operand(s), got {}",
                self.avals.len()
            )));
        }
        Ok(())
    }

    /// Operand `i` as an array type (not a `Ref`).
    pub fn arr(&self, i: usize) -> Result<&ShapedArray, IrError> {
        match self.avals.get(i) {
            Some(Aval::Array(a)) => Ok(a),
            Some(r @ Aval::Ref(_)) => Err(self.err(format!(
                "operand {i} must be an array, got {}; read it first (`x_ref[...]`)",
                fmt_aval(r)
            ))),
            None => Err(self.err(format!("missing operand {i}"))),
        }
    }

    /// The dimension defined by the scalar integer operand `i`.
    pub fn dim_operand(&self, i: usize) -> Result<Dim, IrError> {
        let a = self.arr(i)?;
        if !a.shape.is_empty() || !(a.dtype.is_int()) {
            return Err(self.err(format!(
                "dynamic size operand {i} must be a scalar integer, got {}",
                fmt_ty(a)
            )));
        }
        match self.atoms.get(i) {
            Some(Atom::Var(v)) => Ok(Dim::Var(*v)),
            Some(Atom::Lit(l)) => match l.as_i64() {
                Some(n) if n >= 0 => Ok(Dim::Const(n as usize)),
                _ => Err(self.err(format!("dynamic size operand {i} is negative: {l}"))),
            },
            None => Err(self.err(format!("missing atom for operand {i}"))),
        }
    }

    /// Requires operand `i` to be an integer scalar (an index).
    pub fn int_scalar(&self, i: usize, what: &str) -> Result<(), IrError> {
        let a = self.arr(i)?;
        if !a.shape.is_empty() || !a.dtype.is_int() {
            return Err(self.err(format!(
                "{what} must be a scalar integer, got {}",
                fmt_ty(a)
            )));
        }
        Ok(())
    }
}

/// Formats a dimension: a constant, or `#n` for variable `n`.
pub(crate) fn fmt_dim(d: &Dim) -> String {
    match d {
        Dim::Const(n) => n.to_string(),
        Dim::Var(v) => match as_out_dim(*d) {
            Some(k) => format!("out{k}"),
            None => format!("#{}", v.0),
        },
    }
}

/// Formats a shape as `(3, 4)`-free text: `[3,4]`.
pub(crate) fn fmt_shape(s: &[Dim]) -> String {
    let parts: Vec<String> = s.iter().map(fmt_dim).collect();
    format!("[{}]", parts.join(","))
}

/// Formats an array type as JAX prints it: `f32[3,4]`.
pub fn fmt_ty(a: &ShapedArray) -> String {
    format!("{}{}", a.dtype, fmt_shape(&a.shape))
}

/// Formats an aval: `f32[3]` or `Ref{f32[3]}`.
pub fn fmt_aval(a: &Aval) -> String {
    match a {
        Aval::Array(x) => fmt_ty(x),
        Aval::Ref(r) => format!("Ref<{}>{{{}}}", r.memory_space, fmt_ty(&r.inner)),
    }
}

/// True if two avals agree in kind, dtype and shape (weak flags ignored).
pub fn same_type(a: &Aval, b: &Aval) -> bool {
    match (a, b) {
        (Aval::Array(x), Aval::Array(y)) => x.dtype == y.dtype && x.shape == y.shape,
        (Aval::Ref(x), Aval::Ref(y)) => {
            x.inner.dtype == y.inner.dtype && x.inner.shape == y.inner.shape
        }
        _ => false,
    }
}

/// Normalises an axis index, erroring when it is out of range.
pub(crate) fn check_axis(cx: &Cx, axis: usize, ndim: usize, what: &str) -> Result<(), IrError> {
    if axis >= ndim {
        return Err(cx.err(format!(
            "{what} {axis} is out of bounds for an array of rank {ndim}"
        )));
    }
    Ok(())
}

/// The product of static dims, or `None` if any is dynamic.
pub(crate) fn static_size(s: &[Dim]) -> Option<usize> {
    s.iter()
        .try_fold(1usize, |acc, d| d.as_const().map(|n| acc.saturating_mul(n)))
}
