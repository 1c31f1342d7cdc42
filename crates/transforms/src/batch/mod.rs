//! Batching (`vmap`): `BatchTrace`, whose tracers carry a value and the
//! position of its batch dimension, `batch_jaxpr` at the jaxpr level, and
//! the dispatch to the batching rules (`crate::rules`, one module per
//! primitive family).
//!
//! Invariants: a tracer's aval is its value's aval without the batch
//! dimension (`bdim = None`: the value is the same for every member of the
//! batch). Rules are only called when some operand is batched; with no
//! batched operand the primitive binds on the values below. Rules bind
//! primitives through `lax`/`bind`, so they work on any trace below.

mod api;
pub(crate) mod collectives;

pub use api::{vmap, Axes, Vmap};
pub use collectives::{all_gather, axis_index, pmax, pmean, pmin, psum};
pub(crate) use collectives::{mesh_axis_size, AxisEnvGuard};

use crate::rules::{self, BatchOuts};
use jaxon_ir::{Aval, ClosedJaxpr, Primitive};
use jaxon_trace::core::{full_raise, new_main, MainTrace, Trace};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, lax, Array};
use std::any::Any;
use std::sync::Arc;

/// The batching trace of one `vmap`: the size of the mapped axis and its
/// optional name (for collectives).
pub struct BatchTrace {
    /// The size of the mapped axis.
    pub axis_size: usize,
    /// The axis name collectives refer to.
    pub axis_name: Option<String>,
}

/// A batch tracer's payload: the value (with the batch dimension, if any).
#[derive(Clone)]
pub(crate) struct Batched {
    pub value: Array,
    pub bdim: Option<usize>,
}

pub(crate) fn batched(x: &Array) -> Result<&Batched> {
    x.as_tracer()
        .and_then(|t| t.payload::<Batched>())
        .ok_or_else(|| Error::UnexpectedTracer("not a batch tracer".into()))
}

/// The trace of a batch main.
pub(crate) fn batch_trace(main: &MainTrace) -> Option<&BatchTrace> {
    main.trace().as_any().downcast_ref::<BatchTrace>()
}

/// Wraps a value and its batch dimension as a tracer of `main`.
pub(crate) fn new_batched(main: &Arc<MainTrace>, value: Array, bdim: Option<usize>) -> Array {
    let aval = match (value.aval(), bdim) {
        (Aval::Array(a), Some(d)) if d < a.shape.len() => {
            let mut a = a.clone();
            a.shape.remove(d);
            Aval::Array(a)
        }
        (aval, _) => aval.clone(),
    };
    // A dynamic shape's dimensions are the value's, less the batch axis.
    let dims = jaxon_trace::dynshape::dim_tracers_except(&value, bdim);
    Array::new_tracer_with_dims(main.clone(), aval, Batched { value, bdim }, dims)
}

impl Trace for BatchTrace {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn lift(&self, main: &Arc<MainTrace>, x: &Array) -> Result<Array> {
        Ok(new_batched(main, x.clone(), None))
    }

    fn process_primitive(
        &self,
        main: &Arc<MainTrace>,
        primitive: &Primitive,
        args: &[Array],
    ) -> Result<Vec<Array>> {
        let mut values = Vec::with_capacity(args.len());
        let mut bdims = Vec::with_capacity(args.len());
        for a in args {
            let b = batched(a)?;
            values.push(b.value.clone());
            bdims.push(b.bdim);
        }
        let name = self.axis_name.as_deref();
        let fancy = collectives::is_collective(primitive)
            || name.is_some_and(|n| collectives::mentions_axis(primitive, n));
        if !fancy && bdims.iter().all(Option::is_none) {
            let outs = bind(primitive, &values)?;
            return Ok(outs
                .into_iter()
                .map(|v| new_batched(main, v, None))
                .collect());
        }
        let (outs, out_dims) = batch_rule(primitive, &values, &bdims, self.axis_size, name)?;
        Ok(outs
            .into_iter()
            .zip(out_dims)
            .map(|(v, d)| new_batched(main, v, d))
            .collect())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Batches `p` applied to `x` whose batch dimensions are `d`; `n` is the
/// size of the mapped axis and `name` its axis name: one exhaustive match
/// on the families, each family's rules matching its enum exhaustively.
fn batch_rule(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    match p {
        Primitive::Elementwise(e) => rules::elementwise::batch(e, p, x, d, n),
        Primitive::Structural(s) => rules::structural::batch(s, p, x, d, n),
        Primitive::Indexing(i) => rules::indexing::batch(i, p, x, d, n),
        Primitive::Reduction(r) => rules::reduction::batch(r, p, x, d, n),
        Primitive::Linalg(l) => rules::linalg::batch(l, p, x, d, n),
        Primitive::Control(c) => rules::control::batch(c, x, d, n, name),
        Primitive::State(s) => rules::state::batch(s, p, x, d, n),
        Primitive::Pallas(k) => rules::pallas::batch(k, p, x, d, n),
        Primitive::Collective(c) => rules::collective::batch(c, p, x, d, n, name),
        Primitive::Marker(m) => rules::marker::batch(m, p, x, d),
        Primitive::Window(w) => rules::window::batch(w, p, x, d, n),
        Primitive::Random(r) => rules::random::batch(r, p, x, d, n),
        Primitive::Callback(c) => rules::callback::batch(c, p, x, d, n),
    }
}

/// Moves dimension `from` of `x` to position `to`.
pub(crate) fn moveaxis(x: &Array, from: usize, to: usize) -> Result<Array> {
    if from == to {
        return Ok(x.clone());
    }
    let mut perm: Vec<usize> = (0..x.ndim()).filter(|&i| i != from).collect();
    perm.insert(to, from);
    lax::transpose(x, &perm)
}

/// `x` with its batch dimension at `to`; an unbatched `x` is broadcast
/// along a new dimension of size `n` there.
pub(crate) fn move_bdim(x: &Array, bdim: Option<usize>, to: usize, n: usize) -> Result<Array> {
    match bdim {
        Some(d) => moveaxis(x, d, to),
        None if jaxon_trace::dynshape::is_dynamic(x) => {
            let mut out = jaxon_trace::dynshape::sizes(x)?;
            out.insert(to, jaxon_trace::dynshape::Size::Const(n));
            let dims: Vec<usize> = (0..out.len()).filter(|&i| i != to).collect();
            jaxon_trace::dynshape::broadcast_in_dim(x, &out, &dims)
        }
        None => {
            let shape = x.try_shape()?;
            let mut out = shape.clone();
            out.insert(to, n);
            let dims: Vec<usize> = (0..out.len()).filter(|&i| i != to).collect();
            lax::broadcast_in_dim(x, &out, &dims)
        }
    }
}

/// `x` with its batch dimension first (broadcast if unbatched).
pub(crate) fn to_front(x: &Array, bdim: Option<usize>, n: usize) -> Result<Array> {
    move_bdim(x, bdim, 0, n)
}

/// Runs `f` under a fresh batch main: `args[i]` is mapped along
/// `in_dims[i]` (`None`: shared). Returns each output's value and batch
/// dimension, before the main is popped.
pub fn batch_flat(
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    args: &[Array],
    in_dims: &[Option<usize>],
    axis_size: usize,
    axis_name: Option<&str>,
) -> Result<Vec<(Array, Option<usize>)>> {
    let _env = collectives::AxisEnvGuard::push(axis_name, axis_size);
    let guard = new_main(Box::new(BatchTrace {
        axis_size,
        axis_name: axis_name.map(str::to_string),
    }));
    let main = guard.main().clone();
    let ins = args
        .iter()
        .zip(in_dims)
        .map(|(a, d)| new_batched(&main, a.clone(), *d))
        .collect();
    let outs = f(ins)?;
    outs.iter()
        .map(|o| {
            let o = full_raise(&main, o)?;
            let b = batched(&o)?;
            Ok((b.value.clone(), b.bdim))
        })
        .collect()
}

/// Batches a closed jaxpr: inputs marked in `batched_in` get a leading
/// axis of size `axis_size`. Returns the batched jaxpr and, per output,
/// whether it is batched (then along axis 0). Outputs marked in
/// `instantiate` are batched even when they do not depend on the batch.
pub fn batch_jaxpr(
    closed: &ClosedJaxpr,
    batched_in: &[bool],
    axis_size: usize,
    instantiate: &[bool],
) -> Result<(ClosedJaxpr, Vec<bool>)> {
    batch_jaxpr_named(closed, batched_in, axis_size, None, instantiate)
}

/// [`batch_jaxpr`] for the vmap of axis `axis_name`: collectives over that
/// name in the body (and in jaxprs nested in it) become reductions over the
/// batch dim; collectives over other names stay, batched.
pub fn batch_jaxpr_named(
    closed: &ClosedJaxpr,
    batched_in: &[bool],
    axis_size: usize,
    axis_name: Option<&str>,
    instantiate: &[bool],
) -> Result<(ClosedJaxpr, Vec<bool>)> {
    let jaxpr = &closed.jaxpr;
    if batched_in.len() != jaxpr.invars.len() {
        return Err(Error::InvalidArgument(format!(
            "batch_jaxpr: {} batched flags for {} inputs",
            batched_in.len(),
            jaxpr.invars.len()
        )));
    }
    let mut avals = Vec::with_capacity(batched_in.len());
    for (v, b) in jaxpr.invars.iter().zip(batched_in) {
        let mut a = jaxpr.aval(*v).clone();
        if *b {
            match &mut a {
                Aval::Array(s) => s.shape.insert(0, jaxon_ir::Dim::Const(axis_size)),
                // A batched Ref is batched along axis 0 of the referenced
                // array; the state rules index it there.
                Aval::Ref(r) => r.inner.shape.insert(0, jaxon_ir::Dim::Const(axis_size)),
            }
        }
        avals.push(a);
    }
    let mut out_batched = Vec::new();
    let body = |args: Vec<Array>| {
        let dims: Vec<Option<usize>> = batched_in.iter().map(|b| b.then_some(0)).collect();
        let outs = batch_flat(
            |ins| collectives::eval_batched_body(closed, &ins),
            &args,
            &dims,
            axis_size,
            axis_name,
        )?;
        let mut res = Vec::with_capacity(outs.len());
        for (i, (v, d)) in outs.into_iter().enumerate() {
            let inst = instantiate.get(i).copied().unwrap_or(false);
            if d.is_some() || inst {
                out_batched.push(true);
                res.push(to_front(&v, d, axis_size)?);
            } else {
                out_batched.push(false);
                res.push(v);
            }
        }
        Ok(res)
    };
    let dynamic =
        avals.iter().any(|a| a.array().static_sizes().is_none()) && !avals.iter().any(Aval::is_ref);
    let staged = if dynamic {
        // Dynamic shapes: stage from the jaxpr's input type with a leading
        // batch axis on the batched inputs. A batched dimension variable
        // would make the batch ragged.
        let mut t = jaxon_ir::dyntype::in_type(jaxpr, &vec![true; batched_in.len()])?;
        let used: Vec<usize> =
            t.0.iter()
                .flat_map(|(a, _)| a.shape.iter())
                .filter_map(|d| match d {
                    jaxon_ir::dyntype::InDim::DBIdx(j) => Some(*j),
                    jaxon_ir::dyntype::InDim::Const(_) => None,
                })
                .collect();
        for (k, ((a, _), b)) in t.0.iter_mut().zip(batched_in).enumerate() {
            if *b {
                if used.contains(&k) {
                    return Err(Error::Unsupported(
                        "vmap over a dimension size (a ragged batch)".into(),
                    ));
                }
                a.shape
                    .insert(0, jaxon_ir::dyntype::InDim::Const(axis_size));
            }
        }
        jaxon_trace::stage::trace_flat_in_type(StageMode::Base, &t, body)?
    } else {
        trace_flat(StageMode::Base, &avals, body)?
    };
    Ok((close(staged)?, out_batched))
}
