//! The generic `reduce_window`: every window of `n` operands folded, element
//! by element in row-major window order, by a combiner jaxpr evaluated on
//! scalars.
//!
//! Semantics, as XLA's `ReduceWindow`: the accumulators start at the init
//! values; padding and the holes of base dilation read the init values (so
//! a combiner that is not idempotent on its init sees them); an empty window
//! gives the init values.

use super::{concat_storage, take, take_or_fill, window_map};
use crate::array::{HostArray, Storage};
use crate::error::IrError;
use crate::interp::{eval_jaxpr, Value};
use crate::jaxpr::Jaxpr;
use crate::primitive::WindowGeometry;

const NAME: &str = "reduce_window";

/// `reduce_window[jaxpr]` of `args` (`n` operands, then `n` scalar inits).
pub fn reduce_window_generic(
    jaxpr: &Jaxpr,
    w: &WindowGeometry,
    args: &[&HostArray],
) -> Result<Vec<HostArray>, IrError> {
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(IrError::Eval(format!(
            "{NAME}: expected operands then as many init values, got {} arrays",
            args.len()
        )));
    }
    let (xs, inits) = args.split_at(args.len() / 2);
    let (out, wsize, map) = window_map(NAME, xs[0].shape(), w)?;
    let n_out: usize = out.iter().product();
    // Per operand, its window elements in output-major order (init on padding).
    let windows = xs
        .iter()
        .zip(inits)
        .map(|(x, init)| {
            if x.shape() != xs[0].shape() {
                return Err(IrError::Eval(format!(
                    "{NAME}: operands of shapes {:?} and {:?}",
                    xs[0].shape(),
                    x.shape()
                )));
            }
            take_or_fill(x.data(), &map, init.data())
        })
        .collect::<Result<Vec<Storage>, _>>()?;
    let scalar = |s: &Storage, i: usize| HostArray::new(Vec::new(), take(s, &[i]));
    let mut results: Vec<Vec<Storage>> = vec![Vec::with_capacity(n_out); xs.len()];
    for o in 0..n_out {
        let mut acc: Vec<Value> = inits.iter().map(|&a| Value::Array(a.clone())).collect();
        for k in 0..wsize {
            let mut operands = acc;
            for win in &windows {
                operands.push(Value::Array(scalar(win, o * wsize + k)?));
            }
            acc = eval_jaxpr(jaxpr, &[], &operands)?;
        }
        for (r, v) in results.iter_mut().zip(acc) {
            match v {
                Value::Array(a) => r.push(a.data().clone()),
                Value::Ref(_) => {
                    return Err(IrError::Eval(format!(
                        "{NAME}: the combiner returned a Ref"
                    )))
                }
            }
        }
    }
    results
        .into_iter()
        .zip(inits)
        .map(|(parts, init)| {
            let data = if parts.is_empty() {
                take(init.data(), &[])
            } else {
                concat_storage(&parts.iter().collect::<Vec<_>>(), NAME)?
            };
            HostArray::new(out.clone(), data)
        })
        .collect()
}
