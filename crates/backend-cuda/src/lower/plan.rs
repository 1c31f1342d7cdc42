//! The launch plan a jaxpr lowers to: a table of buffers, the kernels, and
//! the steps that run them — kernel launches, GEMM library calls, copies,
//! host callbacks, and host-driven control flow over nested step lists.
//!
//! Invariants:
//! - Every jaxpr value lives in its own dense, row-major buffer of the
//!   table ([`BufId`]); a step only names buffers of the table, and a
//!   kernel launch names a kernel of [`Program::kernels`] with one argument
//!   per kernel parameter (checked again at launch by the consumer).
//! - No step writes an input or constant buffer, so the GPU may bind a
//!   resident array to an input without copying it (the simulator checks
//!   this after every run).
//! - Nothing here depends on where the plan runs: the simulator
//!   ([`super::run::SimTarget`]) and the GPU runtime execute the same
//!   [`Program`].
//! - A `ShardMap` step's body is a [`Program`] of its own (its buffers are
//!   its own table's), run once per mesh device on host-side shards; a
//!   `Collective` step runs only inside such a body (outside one, it is the
//!   interpreter's unbound-axis error at run time).
//! - Buffers written by a loop body are rewritten on every iteration; carries
//!   are updated through temporaries (all sources copied out before any
//!   destination is written), so a body that permutes its carries is safe.

use crate::blas::GemmPlan;
use crate::kir::{Const, Kernel, LaunchDims};
use jaxon_ir::primitive::{Collective, Mesh, PartitionSpec};
use jaxon_ir::{DType, HostArray};
use std::sync::Arc;

/// A buffer of a [`Program`]: an index into [`Program::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufId(pub u32);

impl BufId {
    /// The index into the buffer table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A buffer's type and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferDecl {
    /// The element type.
    pub dtype: DType,
    /// The number of elements.
    pub len: usize,
}

/// A kernel launch argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KArg {
    /// A buffer of the table.
    Buffer(BufId),
    /// A scalar.
    Scalar(Const),
}

/// A carry update of a loop. With a `temp`, `src` is copied to `temp`,
/// and after every update's first copy, `temp` to `dst`. Without one, after
/// those copies, `src` and `dst` exchange their memory (no data moves):
/// the lowering only does so where `src` is a buffer the body writes whole
/// before reading it, distinct from every other carry's `src`, and `dst` an
/// internal buffer of the loop (never an input, a constant or a result of
/// the program).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarryUpdate {
    /// The body's result.
    pub src: BufId,
    /// A temporary of the same type, or `None` for an exchange.
    pub temp: Option<BufId>,
    /// The carry buffer the next iteration reads.
    pub dst: BufId,
}

/// One slice of a stacked `scan` operand or result: iteration `i` reads or
/// writes elements `i * len .. (i + 1) * len` of `stacked`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanSlice {
    /// The stacked buffer (leading axis: the iterations).
    pub stacked: BufId,
    /// The per-iteration buffer.
    pub item: BufId,
    /// Elements per iteration.
    pub len: usize,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Launches kernel `kernel` of the program.
    Launch {
        /// Index into [`Program::kernels`].
        kernel: usize,
        /// Grid and block.
        dims: LaunchDims,
        /// One per kernel parameter.
        args: Vec<KArg>,
    },
    /// A (batched) matrix product through the BLAS plan (`blas::lt` on a
    /// GPU, `blas::model` on the simulator).
    Gemm {
        /// The product.
        plan: GemmPlan,
        /// The left operand.
        a: BufId,
        /// The right operand.
        b: BufId,
        /// The result.
        out: BufId,
        /// The bias vector of a bias epilogue (`plan.epilogue.has_bias()`).
        bias: Option<BufId>,
    },
    /// Copies `len` elements of `src` from `src_offset` to `dst` at
    /// `dst_offset` (same dtype).
    Copy {
        /// Source buffer.
        src: BufId,
        /// First source element.
        src_offset: usize,
        /// Destination buffer.
        dst: BufId,
        /// First destination element.
        dst_offset: usize,
        /// Elements copied.
        len: usize,
    },
    /// Reads the `i64` scalar `step` of a `for_loop` with runtime bounds on
    /// the host and fails the run with the interpreter's error when the
    /// interpreter refuses it (0, or not positive without
    /// `apply_reverse_transform`): a kernel cannot raise one.
    CheckStep {
        /// The step, as `i64`.
        step: BufId,
        /// The loop's `apply_reverse_transform`.
        reverse: bool,
    },
    /// Reads the scalar `index` (bool or integer) on the host and runs
    /// `branches[clamp(index)]`.
    Cond {
        /// The branch index.
        index: BufId,
        /// The branches.
        branches: Vec<Vec<Step>>,
    },
    /// Runs `cond`, reads the bool `pred`; while it is true runs `body` and
    /// applies `carry`.
    While {
        /// Computes `pred` from the carries.
        cond: Vec<Step>,
        /// The predicate, a bool scalar.
        pred: BufId,
        /// The body.
        body: Vec<Step>,
        /// The carry updates after each body run.
        carry: Vec<CarryUpdate>,
    },
    /// A host callback (`debug_print`, `debug_callback`, `pure_callback`):
    /// reads `args` back to the host, calls the callback's host function,
    /// and writes its results (checked against their declared types) into
    /// `outs`.
    Host {
        /// The callback equation's primitive (its params hold the function).
        call: jaxon_ir::primitive::Callback,
        /// The operands, with their shapes.
        args: Vec<(BufId, Vec<usize>)>,
        /// The result buffers, with their shapes.
        outs: Vec<(BufId, Vec<usize>)>,
    },
    /// `length` iterations (backwards if `reverse`): copy each `xs` slice in,
    /// run `body`, apply `carry`, copy each `ys` slice out.
    Scan {
        /// Iterations.
        length: usize,
        /// Iterate from the end.
        reverse: bool,
        /// Stacked inputs.
        xs: Vec<ScanSlice>,
        /// The body.
        body: Vec<Step>,
        /// The carry updates.
        carry: Vec<CarryUpdate>,
        /// Stacked outputs.
        ys: Vec<ScanSlice>,
    },
    /// A `shard_map`: the operands (global shapes) read, split and run
    /// through `body` once per mesh device, each instance on its own host
    /// thread; the assembled results written to `outs`.
    ShardMap {
        /// The body and its mesh.
        body: Arc<ShardBody>,
        /// The operands, with their (global) shapes.
        args: Vec<(BufId, Vec<usize>)>,
        /// The result buffers, with their (global) shapes.
        outs: Vec<(BufId, Vec<usize>)>,
    },
    /// A named-axis collective inside a `shard_map` body: an exchange
    /// between the mesh's instances (the `jaxon_ir::spmd` communicator on
    /// the simulator, NCCL between GPUs).
    Collective {
        /// The collective and its params.
        op: Collective,
        /// The operands, with their shapes.
        args: Vec<(BufId, Vec<usize>)>,
        /// The result buffers, with their shapes.
        outs: Vec<(BufId, Vec<usize>)>,
    },
}

/// The body of a `shard_map` step: compiled once, run once per device of
/// `mesh` on the shards `in_specs` cut, its results assembled by
/// `out_specs` (`jaxon_ir::spmd`).
#[derive(Clone, Debug, PartialEq)]
pub struct ShardBody {
    /// The per-device program (on shard shapes).
    pub program: Program,
    /// The device mesh.
    pub mesh: Mesh,
    /// How each operand is split over the mesh.
    pub in_specs: Vec<PartitionSpec>,
    /// How each result is assembled.
    pub out_specs: Vec<PartitionSpec>,
}

/// A lowered jaxpr.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    /// Every buffer the program uses.
    pub buffers: Vec<BufferDecl>,
    /// The kernels the steps launch.
    pub kernels: Vec<Kernel>,
    /// Buffers of the jaxpr's inputs, in order.
    pub inputs: Vec<BufId>,
    /// Buffers holding constants, with their values.
    pub consts: Vec<(BufId, HostArray)>,
    /// The steps.
    pub steps: Vec<Step>,
    /// Buffers of the results, with their shapes.
    pub outputs: Vec<(BufId, Vec<usize>)>,
    /// The dtype of each result as the jaxpr types it: the buffer's, but
    /// `key<fry>` for keys, which are `u32` buffers of two words per key.
    pub output_dtypes: Vec<DType>,
}

impl Program {
    /// Every step, nested steps included, in a pre-order walk (a
    /// `shard_map` body is a program of its own, not walked).
    pub fn all_steps(&self) -> Vec<&Step> {
        fn walk<'a>(steps: &'a [Step], out: &mut Vec<&'a Step>) {
            for s in steps {
                out.push(s);
                match s {
                    Step::Launch { .. }
                    | Step::Gemm { .. }
                    | Step::Copy { .. }
                    | Step::CheckStep { .. }
                    | Step::Host { .. }
                    | Step::ShardMap { .. }
                    | Step::Collective { .. } => {}
                    Step::Cond { branches, .. } => branches.iter().for_each(|b| walk(b, out)),
                    Step::While { cond, body, .. } => {
                        walk(cond, out);
                        walk(body, out);
                    }
                    Step::Scan { body, .. } => walk(body, out),
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.steps, &mut out);
        out
    }
}
