//! Native steps in safe Rust for the primitives that are neither fused
//! loops nor GEMMs: indexing (`gather`, `scatter*`, dynamic slices), sorts,
//! convolutions, bit-level conversions, `tile`/`stack` and `for_loop`.
//!
//! Each is a [`NativeOp`] run by one `Step::Native` of the program; the
//! builders here check static shapes at compile time so that `run` only
//! meets the shapes it was compiled for.

mod conv;
mod elem;
mod gather;
mod misc;
mod sort;
mod state;

pub(crate) use elem::{map_same, map_same2, Elem};

use crate::compile::{cannot, compile_sub, operand, out_vars, Options};
use crate::exec::Step;
use jaxon_ir::{Atom, Eqn, HostArray, IrError, Jaxpr, Primitive};

/// A native operation: maps its input arrays to its outputs.
pub(crate) trait NativeOp: Send + Sync + std::fmt::Debug {
    /// Runs the operation (`threads` bounds any parallelism it uses).
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError>;
}

/// Row-major element strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Advances a row-major multi-index; false after the last one.
pub(crate) fn next_index(idx: &mut [usize], shape: &[usize]) -> bool {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// The static shapes of an equation's operands (`Err` names the equation).
fn in_shapes(jaxpr: &Jaxpr, e: usize, eqn: &Eqn) -> Result<Vec<Vec<usize>>, IrError> {
    eqn.inputs
        .iter()
        .map(|a| {
            let sa = jaxpr
                .atom_aval(a)
                .and_then(|a| a.as_array().cloned())
                .ok_or_else(|| cannot(jaxpr, e, "operand is not an array"))?;
            sa.static_sizes()
                .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))
        })
        .collect()
}

/// The static (dtype, shape) of every output.
fn out_types(
    jaxpr: &Jaxpr,
    e: usize,
    eqn: &Eqn,
) -> Result<Vec<(jaxon_ir::DType, Vec<usize>)>, IrError> {
    eqn.outputs
        .iter()
        .map(|b| {
            let sa = jaxpr
                .binder_aval(b)
                .and_then(|a| a.as_array().cloned())
                .ok_or_else(|| cannot(jaxpr, e, "output is not an array"))?;
            let s = sa
                .static_sizes()
                .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))?;
            Ok((sa.dtype, s))
        })
        .collect()
}

/// Rebinds variable `v` to its value cast to `to` (after a kernel that
/// accumulated it in a wider type).
pub(crate) fn cast_step(v: jaxon_ir::Var, to: jaxon_ir::DType) -> Step {
    Step::Native {
        op: Box::new(misc::Cast { to }),
        inputs: vec![crate::exec::Operand::Var(v)],
        outs: vec![Some(v)],
    }
}

/// An op whose operands must have the shapes it was compiled for (a
/// mismatch, from a jaxpr whose declared types are wrong, is an error
/// rather than an out-of-bounds index).
#[derive(Debug)]
struct Checked {
    name: &'static str,
    shapes: Vec<Vec<usize>>,
    op: Box<dyn NativeOp>,
}

impl NativeOp for Checked {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        let ok = inputs.len() == self.shapes.len()
            && inputs
                .iter()
                .zip(&self.shapes)
                .all(|(a, s)| a.shape() == s.as_slice());
        if !ok {
            let got: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
            return Err(IrError::Eval(format!(
                "cpu backend: `{}` compiled for operand shapes {:?}, got {got:?}",
                self.name, self.shapes
            )));
        }
        self.op.run(inputs, threads)
    }
}

fn step(eqn: &Eqn, op: Box<dyn NativeOp>) -> Result<Step, IrError> {
    Ok(Step::Native {
        op,
        inputs: eqn.inputs.iter().map(operand).collect::<Result<_, _>>()?,
        outs: out_vars(eqn),
    })
}

/// Builds the native step of equation `e`, or an error naming it. Only the
/// primitives listed here reach this function.
pub(crate) fn native_step(
    jaxpr: &Jaxpr,
    e: usize,
    eqn: &Eqn,
    opts: Options,
) -> Result<Step, IrError> {
    if let Primitive::Get { indexers }
    | Primitive::Swap { indexers }
    | Primitive::AddUpdate { indexers } = &eqn.primitive
    {
        let kind = match &eqn.primitive {
            Primitive::Get { .. } => state::Kind::Get,
            Primitive::Swap { .. } => state::Kind::Swap,
            _ => state::Kind::AddUpdate,
        };
        let Some(Atom::Var(r)) = eqn.inputs.first() else {
            return Err(cannot(jaxpr, e, "the first operand must be a Ref variable"));
        };
        let mut outs = out_vars(eqn);
        if kind != state::Kind::Get {
            // The write rebinds the (discharged) ref to its new value.
            outs.push(Some(*r));
        }
        return Ok(Step::Native {
            op: Box::new(state::StateOp {
                kind,
                indexers: indexers.clone(),
            }),
            inputs: eqn.inputs.iter().map(operand).collect::<Result<_, _>>()?,
            outs,
        });
    }
    let ins = in_shapes(jaxpr, e, eqn)?;
    let outs = out_types(jaxpr, e, eqn)?;
    let fail = |m: String| cannot(jaxpr, e, &m);
    let op: Box<dyn NativeOp> = match &eqn.primitive {
        Primitive::DynamicSlice { slice_sizes } => {
            Box::new(gather::DynamicSlice::new(&ins, &slice_sizes.to_usizes()).map_err(fail)?)
        }
        Primitive::DynamicUpdateSlice => {
            Box::new(gather::DynamicUpdateSlice::new(&ins).map_err(fail)?)
        }
        Primitive::Gather {
            dimension_numbers,
            fill_value,
            mode,
            slice_sizes,
            ..
        } => Box::new(
            gather::Gather::new(
                &ins,
                dimension_numbers,
                *fill_value,
                *mode,
                &slice_sizes.to_usizes(),
                &outs,
            )
            .map_err(fail)?,
        ),
        Primitive::Scatter {
            kind,
            dimension_numbers,
            mode,
            ..
        } => Box::new(gather::Scatter::new(&ins, *kind, dimension_numbers, *mode).map_err(fail)?),
        Primitive::Sort {
            dimension,
            num_keys,
            ..
        } => Box::new(sort::Sort::new(&ins, *dimension, *num_keys).map_err(fail)?),
        Primitive::TopK { k, axis } => Box::new(sort::TopK::new(&ins, *k, *axis).map_err(fail)?),
        Primitive::ConvGeneralDilated {
            window_strides,
            padding,
            lhs_dilation,
            rhs_dilation,
            dimension_numbers,
            feature_group_count,
            batch_group_count,
            ..
        } => Box::new(
            conv::Conv::new(
                &ins,
                &outs,
                conv::ConvParams {
                    window_strides,
                    padding,
                    lhs_dilation,
                    rhs_dilation,
                    dn: dimension_numbers,
                    feature_group_count: *feature_group_count,
                    batch_group_count: *batch_group_count,
                },
            )
            .map_err(fail)?,
        ),
        Primitive::BitcastConvertType { new_dtype } => {
            Box::new(misc::Bitcast::new(*new_dtype, &outs).map_err(fail)?)
        }
        Primitive::ReducePrecision {
            exponent_bits,
            mantissa_bits,
        } => Box::new(misc::ReducePrecision::new(*exponent_bits, *mantissa_bits)),
        Primitive::Tile { .. } => Box::new(misc::Take::tile(&ins, &outs).map_err(fail)?),
        Primitive::Reshape {
            dimensions: Some(perm),
            ..
        } => Box::new(misc::Take::transpose_reshape(&ins, perm, &outs).map_err(fail)?),
        Primitive::Stack { axis } => Box::new(misc::Stack::new(*axis, &ins, &outs).map_err(fail)?),
        Primitive::DotGeneral {
            dimension_numbers,
            preferred_element_type,
            ..
        } => {
            let dt = match (preferred_element_type, outs.first()) {
                (Some(d), _) => *d,
                (None, Some((d, _))) => *d,
                (None, None) => return Err(cannot(jaxpr, e, "dot_general without a result")),
            };
            Box::new(conv::CastDot::new(&ins, dimension_numbers, dt).map_err(fail)?)
        }
        Primitive::ForLoop {
            body_jaxpr,
            body_nconsts,
            nimplicit,
            apply_reverse_transform,
            ..
        } => Box::new(misc::ForLoop {
            body: compile_sub(body_jaxpr, opts).map_err(fail)?,
            body_nconsts: *body_nconsts,
            nimplicit: *nimplicit,
            reverse_transform: *apply_reverse_transform,
            index_dtype: eqn
                .inputs
                .get(body_nconsts + nimplicit + 3)
                .and_then(|a: &Atom| jaxpr.atom_aval(a))
                .map(|a| a.dtype())
                .ok_or_else(|| cannot(jaxpr, e, "for_loop without an index operand"))?,
        }),
        other => {
            return Err(cannot(
                jaxpr,
                e,
                &format!("`{}` has no native step", other.name()),
            ))
        }
    };
    let op: Box<dyn NativeOp> = match eqn.primitive {
        // The loop body checks its own arguments.
        Primitive::ForLoop { .. } => op,
        _ => Box::new(Checked {
            name: eqn.primitive.name(),
            shapes: ins,
            op,
        }),
    };
    step(eqn, op)
}
