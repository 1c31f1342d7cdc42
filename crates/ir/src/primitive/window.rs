//! The window family of primitives (`reduce_window_*`, the generic
//! `reduce_window`, `select_and_scatter_add`, `select_and_gather_add`) and
//! their params.

use super::nested::{NestedJaxpr, NestedJaxprMut, ParamJaxpr};
use crate::jaxpr::Jaxpr;
use std::sync::Arc;

/// Windowed reductions and the primitives of their derivatives.
///
/// Family invariant: no member touches a `Ref`; only the generic
/// `reduce_window` holds a jaxpr (its scalar combiner, `jaxpr`).
#[derive(Clone, Debug, PartialEq)]
pub enum Window {
    /// `reduce_window_sum[...]`, `reduce_window_max[...]`, `reduce_window_min[...]`.
    ReduceWindow(ReduceWindowParams),
    /// `reduce_window[jaxpr=.. consts=() ...] x1 .. xn init1 .. initn`: every
    /// window of the `n` operands folded by a jaxpr from `2n` scalars
    /// (accumulators, then elements) to `n`.
    Generic(GenericReduceWindowParams),
    /// `select_and_scatter_add[padding select_prim window_dimensions window_strides] source operand`:
    /// adds each source element at the position its window selects in `operand`.
    SelectAndScatterAdd(SelectAndScatterAddParams),
    /// `select_and_gather_add[...] tangents operand`: per window, the tangent at
    /// the position the window selects in `operand`.
    SelectAndGatherAdd(SelectAndGatherAddParams),
}

impl Window {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Window::ReduceWindow(p) => p.op.name(),
            Window::Generic(_) => "reduce_window",
            Window::SelectAndScatterAdd(_) => "select_and_scatter_add",
            Window::SelectAndGatherAdd(_) => "select_and_gather_add",
        }
    }

    /// The jaxprs in this primitive's params: only the generic
    /// `reduce_window`'s combiner.
    pub fn param_jaxprs(&self) -> Vec<ParamJaxpr<'_>> {
        match self {
            Window::Generic(p) => vec![ParamJaxpr {
                param: "jaxpr",
                jaxpr: NestedJaxpr::Open(&p.jaxpr),
            }],
            Window::ReduceWindow(_)
            | Window::SelectAndScatterAdd(_)
            | Window::SelectAndGatherAdd(_) => Vec::new(),
        }
    }

    /// The slots of [`Window::param_jaxprs`], mutably.
    pub fn param_jaxprs_mut(&mut self) -> Vec<NestedJaxprMut<'_>> {
        match self {
            Window::Generic(p) => vec![NestedJaxprMut::Open(&mut p.jaxpr)],
            Window::ReduceWindow(_)
            | Window::SelectAndScatterAdd(_)
            | Window::SelectAndGatherAdd(_) => Vec::new(),
        }
    }
}

/// The monoid of a `reduce_window_*` primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowOp {
    /// `reduce_window_sum`.
    Sum,
    /// `reduce_window_max`.
    Max,
    /// `reduce_window_min`.
    Min,
}

impl WindowOp {
    /// Every op.
    pub const ALL: [WindowOp; 3] = [WindowOp::Sum, WindowOp::Max, WindowOp::Min];

    /// The name JAX prints.
    pub fn name(self) -> &'static str {
        match self {
            WindowOp::Sum => "reduce_window_sum",
            WindowOp::Max => "reduce_window_max",
            WindowOp::Min => "reduce_window_min",
        }
    }
}

/// Which element a window selects: the first greatest (`ge`) or the first
/// least (`le`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectPrim {
    /// `ge`: the max.
    Ge,
    /// `le`: the min.
    Le,
}

impl SelectPrim {
    /// The name JAX prints.
    pub fn name(self) -> &'static str {
        match self {
            SelectPrim::Ge => "ge",
            SelectPrim::Le => "le",
        }
    }
}

/// The geometry of a window: sizes, strides, padding and dilations, one
/// entry per operand dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowGeometry {
    /// Window sizes.
    pub window_dimensions: Vec<usize>,
    /// Window strides.
    pub window_strides: Vec<usize>,
    /// `(low, high)` padding of the (base-dilated) operand.
    pub padding: Vec<(i64, i64)>,
    /// Operand dilation.
    pub base_dilation: Vec<usize>,
    /// Window dilation.
    pub window_dilation: Vec<usize>,
}

/// The params of the `reduce_window_*` primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceWindowParams {
    /// Which monoid.
    pub op: WindowOp,
    /// The window.
    pub window: WindowGeometry,
}

/// The params of the generic `reduce_window`.
///
/// Invariant: `jaxpr` takes `2n` scalars (the `n` accumulators, then the `n`
/// window elements, of the operands' dtypes) and returns `n` of the same
/// dtypes; it closes over nothing (JAX's `consts` is printed `()`).
#[derive(Clone, Debug, PartialEq)]
pub struct GenericReduceWindowParams {
    /// The combiner.
    pub jaxpr: Arc<Jaxpr>,
    /// The window.
    pub window: WindowGeometry,
}

/// The params of `select_and_scatter_add` (no dilations).
#[derive(Clone, Debug, PartialEq)]
pub struct SelectAndScatterAddParams {
    /// The selection.
    pub select_prim: SelectPrim,
    /// Window sizes.
    pub window_dimensions: Vec<usize>,
    /// Window strides.
    pub window_strides: Vec<usize>,
    /// `(low, high)` padding.
    pub padding: Vec<(i64, i64)>,
}

/// The params of `select_and_gather_add`.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectAndGatherAddParams {
    /// The selection.
    pub select_prim: SelectPrim,
    /// The window.
    pub window: WindowGeometry,
}

impl SelectAndScatterAddParams {
    /// The window, without dilations.
    pub fn geometry(&self) -> WindowGeometry {
        let n = self.window_dimensions.len();
        WindowGeometry {
            window_dimensions: self.window_dimensions.clone(),
            window_strides: self.window_strides.clone(),
            padding: self.padding.clone(),
            base_dilation: vec![1; n],
            window_dilation: vec![1; n],
        }
    }
}

impl WindowGeometry {
    /// Checks that every field has `rank` entries and that sizes, strides
    /// and dilations are positive.
    pub fn check(&self, name: &str, rank: usize) -> Result<(), String> {
        let lens = [
            self.window_dimensions.len(),
            self.window_strides.len(),
            self.padding.len(),
            self.base_dilation.len(),
            self.window_dilation.len(),
        ];
        if lens.iter().any(|&l| l != rank) {
            return Err(format!(
                "{name}: window params have lengths {lens:?}, the operand has rank {rank}"
            ));
        }
        if self
            .window_strides
            .iter()
            .chain(&self.base_dilation)
            .chain(&self.window_dilation)
            .any(|&s| s == 0)
        {
            return Err(format!("{name}: strides and dilations must be positive"));
        }
        Ok(())
    }

    /// The output size along `d` for an operand of size `n`, or `None` when the padding makes the
    /// dilated operand negative.
    pub fn out_dim(&self, d: usize, n: usize) -> Option<usize> {
        let dil = if n == 0 {
            0
        } else {
            (n as i64 - 1) * self.base_dilation[d] as i64 + 1
        };
        let (lo, hi) = self.padding[d];
        let padded = dil + lo + hi;
        if padded < 0 {
            return None;
        }
        let extent = if self.window_dimensions[d] == 0 {
            0
        } else {
            (self.window_dimensions[d] as i64 - 1) * self.window_dilation[d] as i64 + 1
        };
        Some(if padded < extent {
            0
        } else {
            ((padded - extent) / self.window_strides[d] as i64 + 1) as usize
        })
    }
}
