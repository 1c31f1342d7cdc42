//! The window family as native steps: `reduce_window_sum/max/min`, the
//! generic `reduce_window` (its combiner evaluated by the interpreter),
//! `select_and_gather_add` and `select_and_scatter_add`, run by the
//! interpreter's own kernels (so results are bit-identical to it).

use super::NativeOp;
use crate::error::run_error;
use jaxon_ir::primitive::Window;
use jaxon_ir::{HostArray, IrError};

/// One window primitive with its params.
#[derive(Debug)]
pub(crate) struct WindowOp {
    p: Window,
}

impl WindowOp {
    pub(crate) fn new(p: &Window) -> WindowOp {
        WindowOp { p: p.clone() }
    }
}

impl NativeOp for WindowOp {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        use jaxon_ir::interp::ops as k;
        if let Window::Generic(q) = &self.p {
            return k::reduce_window_generic(&q.jaxpr, &q.window, inputs);
        }
        let y = match (&self.p, inputs) {
            (Window::ReduceWindow(q), [x]) => k::reduce_window(q.op, x, &q.window)?,
            (Window::SelectAndGatherAdd(q), [t, x]) => {
                k::select_and_gather_add(t, x, q.select_prim, &q.window)?
            }
            (Window::SelectAndScatterAdd(q), [s, x]) => {
                k::select_and_scatter_add(s, x, q.select_prim, &q.geometry())?
            }
            _ => {
                return Err(run_error(format!(
                    "{} got {} operands",
                    self.p.name(),
                    inputs.len()
                )))
            }
        };
        Ok(vec![y])
    }
}
