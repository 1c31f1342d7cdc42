//! The control family of primitives and their params.

use super::*;

/// Control flow and calls: every member holds at least one jaxpr and runs it (`cond`, `while`, `scan`, `for_loop`, `jit`, custom-derivative calls, `remat2`).
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// `cond[branches] index *operands`: runs `branches[clamp(index)]`.
    Cond(CondParams),
    /// `while[cond_jaxpr body_jaxpr cond_nconsts body_nconsts] *cconsts *bconsts *init`.
    While(WhileParams),
    /// `scan[...] *consts *carry *xs` giving `*carry *ys`.
    Scan(ScanParams),
    /// Catalyst's `for_loop[...] *implicit *consts lo hi step *carry`.
    ForLoop(ForLoopParams),
    /// `jit[name jaxpr]`: a call of a staged function.
    Jit(JitParams),
    /// `custom_jvp_call[name call_jaxpr jvp num_consts symbolic_zeros]`.
    CustomJvpCall(CustomJvpCallParams),
    /// `custom_vjp_call[name call_jaxpr fwd bwd num_consts symbolic_zeros]`.
    CustomVjpCall(CustomVjpCallParams),
    /// `remat2[jaxpr prevent_cse differentiated policy]` (checkpoint).
    Remat(RematParams),
    /// `custom_linear_solve[const_lengths jaxprs] *consts *b`: `x` with
    /// `matvec(x) = b`, computed as `solve(b)`; differentiated implicitly.
    CustomLinearSolve(CustomLinearSolveParams),
    /// `shard_map[check_vma in_specs jaxpr mesh newly_manual_axes
    /// out_specs] *xs`: the body runs once per device of the mesh (SPMD)
    /// on each operand's shard, split by `in_specs`; results are
    /// assembled by `out_specs`.
    ShardMap(ShardMapParams),
}

impl Control {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Control::Cond(_) => "cond",
            Control::While(_) => "while",
            Control::Scan(_) => "scan",
            Control::ForLoop(_) => "for_loop",
            Control::Jit(_) => "jit",
            Control::CustomJvpCall(_) => "custom_jvp_call",
            Control::CustomVjpCall(_) => "custom_vjp_call",
            Control::Remat(_) => "remat2",
            Control::CustomLinearSolve(_) => "custom_linear_solve",
            Control::ShardMap(_) => "shard_map",
        }
    }
}

/// The params of `cond`.
#[derive(Clone, Debug, PartialEq)]
pub struct CondParams {
    /// The branches; branch 0 is the false branch of a bool predicate.
    pub branches: Vec<ClosedJaxpr>,
    /// For a `cond` on `platform_index` (`lax.platform_dependent`), the
    /// platforms of each branch; it does not change what the `cond` does.
    pub branches_platforms: Option<Vec<Option<Vec<String>>>>,
}

/// The params of `while`.
#[derive(Clone, Debug, PartialEq)]
pub struct WhileParams {
    /// The predicate.
    pub cond_jaxpr: ClosedJaxpr,
    /// The body.
    pub body_jaxpr: ClosedJaxpr,
    /// Leading operands that are the predicate's consts.
    pub cond_nconsts: usize,
    /// Following operands that are the body's consts.
    pub body_nconsts: usize,
}

/// The params of `scan`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanParams {
    /// The body: `(consts, carry, x) -> (carry, y)`.
    pub jaxpr: ClosedJaxpr,
    /// Number of iterations.
    pub length: usize,
    /// Iterate from the end.
    pub reverse: bool,
    /// Leading const operands.
    pub num_consts: usize,
    /// Carry operands.
    pub num_carry: usize,
    /// Unroll factor (`unroll=1`).
    pub unroll: i64,
    /// Which operands are linear (JAX elides an all-false list).
    pub linear: Vec<bool>,
    /// JAX's `_split_transpose` flag.
    pub split_transpose: bool,
}

/// The params of `for_loop`.
#[derive(Clone, Debug, PartialEq)]
pub struct ForLoopParams {
    /// The body: `(consts, i, carry) -> carry`.
    pub body_jaxpr: ClosedJaxpr,
    /// Leading const operands after the implicit ones.
    pub body_nconsts: usize,
    /// Leading implicit (dimension) operands.
    pub nimplicit: usize,
    /// Share dimensions between arguments when deducing types.
    pub preserve_dimensions: bool,
    /// Run the iterations in reverse.
    pub apply_reverse_transform: bool,
}

/// The params of `jit`.
#[derive(Clone, Debug, PartialEq)]
pub struct JitParams {
    /// The function's name.
    pub name: String,
    /// The callee.
    pub jaxpr: ClosedJaxpr,
}

/// The params of `custom_jvp_call`.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomJvpCallParams {
    /// The function's name.
    pub name: String,
    /// The primal function.
    pub call_jaxpr: ClosedJaxpr,
    /// The printed name of the JVP rule (its body is not in the text).
    pub jvp: String,
    /// Leading const operands.
    pub num_consts: usize,
    /// Whether the rule sees symbolic zeros.
    pub symbolic_zeros: bool,
}

/// The params of `custom_vjp_call`.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomVjpCallParams {
    /// The function's name.
    pub name: String,
    /// The primal function.
    pub call_jaxpr: ClosedJaxpr,
    /// Printed name of the forward rule.
    pub fwd: String,
    /// Printed name of the backward rule.
    pub bwd: String,
    /// Leading const operands.
    pub num_consts: usize,
    /// Whether the rules see symbolic zeros.
    pub symbolic_zeros: bool,
}

/// The params of `remat2`.
#[derive(Clone, Debug, PartialEq)]
pub struct RematParams {
    /// The body.
    pub jaxpr: Arc<Jaxpr>,
    /// Prevent CSE across the boundary.
    pub prevent_cse: bool,
    /// Whether this is the differentiated form.
    pub differentiated: bool,
    /// The printed policy (`None` or e.g. `DotsSaveable(...)`).
    pub policy: Option<String>,
}

/// The four functions of a `custom_linear_solve`, or a count for each
/// (JAX's `_LinearSolveTuple`).
#[derive(Clone, Debug, PartialEq)]
pub struct LinearSolveTuple<T> {
    /// `A x`.
    pub matvec: T,
    /// `x A` (`A^T x`), for the transpose; may be absent.
    pub vecmat: T,
    /// `A^-1 b`.
    pub solve: T,
    /// `A^-T b`, for the transpose; may be absent.
    pub transpose_solve: T,
}

impl<T> LinearSolveTuple<T> {
    /// The four entries in operand order: matvec, vecmat, solve,
    /// transpose_solve.
    pub fn as_array(&self) -> [&T; 4] {
        [
            &self.matvec,
            &self.vecmat,
            &self.solve,
            &self.transpose_solve,
        ]
    }
}

/// The params of `custom_linear_solve`.
///
/// Invariant: the operands are the consts of the four functions, in the
/// order matvec, vecmat, solve, transpose_solve (`const_lengths` of each),
/// then the right-hand sides `b`; each function takes its consts and then
/// one value shaped like `b` (all of its leaves) and returns the same.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomLinearSolveParams {
    /// How many leading operands are each function's consts.
    pub const_lengths: LinearSolveTuple<usize>,
    /// The functions; `matvec` and `solve` are always present.
    pub jaxprs: LinearSolveTuple<Option<ClosedJaxpr>>,
}

impl CustomLinearSolveParams {
    /// The operand range of function `k`'s consts (0 matvec, 1 vecmat, 2
    /// solve, 3 transpose_solve).
    pub fn consts_range(&self, k: usize) -> std::ops::Range<usize> {
        let lens = self.const_lengths.as_array();
        let start: usize = lens.iter().take(k).map(|n| **n).sum();
        start..start + lens.get(k).map_or(0, |n| **n)
    }

    /// How many operands are consts.
    pub fn num_consts(&self) -> usize {
        self.const_lengths.as_array().iter().map(|n| **n).sum()
    }
}

impl Control {
    /// The jaxprs in this primitive's params, in param order (every member
    /// holds at least one).
    pub fn param_jaxprs(&self) -> Vec<ParamJaxpr<'_>> {
        use NestedJaxpr::{Closed, Open};
        match self {
            Control::Cond(p) => p
                .branches
                .iter()
                .map(|b| at("branches", Closed(b)))
                .collect(),
            Control::While(p) => vec![
                at("body_jaxpr", Closed(&p.body_jaxpr)),
                at("cond_jaxpr", Closed(&p.cond_jaxpr)),
            ],
            Control::Scan(p) => vec![at("jaxpr", Closed(&p.jaxpr))],
            Control::ForLoop(p) => vec![at("body_jaxpr", Closed(&p.body_jaxpr))],
            Control::Jit(p) => vec![at("jaxpr", Closed(&p.jaxpr))],
            Control::ShardMap(p) => vec![at("jaxpr", Closed(&p.jaxpr))],
            Control::CustomJvpCall(p) => vec![at("call_jaxpr", Closed(&p.call_jaxpr))],
            Control::CustomVjpCall(p) => vec![at("call_jaxpr", Closed(&p.call_jaxpr))],
            Control::Remat(p) => vec![at("jaxpr", Open(&p.jaxpr))],
            Control::CustomLinearSolve(p) => {
                let j = &p.jaxprs;
                [&j.matvec, &j.vecmat, &j.solve, &j.transpose_solve]
                    .into_iter()
                    .flatten()
                    .map(|c| at("jaxprs", Closed(c)))
                    .collect()
            }
        }
    }

    /// The slots of [`Control::param_jaxprs`], mutably, in the same order.
    pub fn param_jaxprs_mut(&mut self) -> Vec<NestedJaxprMut<'_>> {
        use NestedJaxprMut::{Closed, Open};
        match self {
            Control::Cond(p) => p.branches.iter_mut().map(Closed).collect(),
            Control::While(p) => vec![Closed(&mut p.body_jaxpr), Closed(&mut p.cond_jaxpr)],
            Control::Scan(p) => vec![Closed(&mut p.jaxpr)],
            Control::ForLoop(p) => vec![Closed(&mut p.body_jaxpr)],
            Control::Jit(p) => vec![Closed(&mut p.jaxpr)],
            Control::ShardMap(p) => vec![Closed(&mut p.jaxpr)],
            Control::CustomJvpCall(p) => vec![Closed(&mut p.call_jaxpr)],
            Control::CustomVjpCall(p) => vec![Closed(&mut p.call_jaxpr)],
            Control::Remat(p) => vec![Open(&mut p.jaxpr)],
            Control::CustomLinearSolve(p) => {
                let j = &mut p.jaxprs;
                [
                    &mut j.matvec,
                    &mut j.vecmat,
                    &mut j.solve,
                    &mut j.transpose_solve,
                ]
                .into_iter()
                .flatten()
                .map(Closed)
                .collect()
            }
        }
    }
}

/// The params of `shard_map`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardMapParams {
    /// The per-device body, on shard types.
    pub jaxpr: ClosedJaxpr,
    /// The device mesh.
    pub mesh: Mesh,
    /// How each operand is split over the mesh.
    pub in_specs: Vec<PartitionSpec>,
    /// How each result is assembled from the devices' results (axes not
    /// named: the result is the same on those devices, device 0's is kept).
    pub out_specs: Vec<PartitionSpec>,
    /// The mesh axes the body is manual over, as printed.
    pub newly_manual_axes: Vec<String>,
    /// Whether the body's types track varying axes (`{V:x}`).
    pub check_vma: bool,
}
