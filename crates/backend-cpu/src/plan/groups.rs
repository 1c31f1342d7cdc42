//! The prepared plan's vocabulary, shared by the planning passes (`prep`,
//! `rows`, `dot_fuse`) and read by the program emitter: the program's
//! tables, a prepared (sub)jaxpr, and its groups ready to emit.
//!
//! Invariant: every value a group reads or writes has a planned address of
//! its type's size (`Prep::mem`), aligned to [`ALIGN`].

use crate::codegen::jit::CodeBuilder;
use crate::codegen::kernel::Inline;
use crate::ops::dot::DotPlan;
use crate::run::exec::StepCall;
use crate::util::Options;
use jaxon_ir::passes::MemoryPlan;
use jaxon_ir::{Atom, DType, HostArray, IrError, Jaxpr, Var};
use std::sync::Arc;

/// Arena alignment of every planned value.
pub(crate) const ALIGN: usize = 64;

/// Everything collected while preparing one program.
pub(crate) struct Tables {
    pub cb: CodeBuilder,
    pub opts: Options,
    /// Function indices of kernels run through `tramp_par_kernel`.
    pub par_kernels: Vec<usize>,
    pub dots: Vec<DotPlan>,
    pub steps: Vec<StepCall>,
    /// Nested consts whose addresses the code embeds.
    pub pinned: Vec<Arc<[HostArray]>>,
    /// Whether to collect dump text.
    pub dump: bool,
    /// Plans (fusion and memory) of every (sub)jaxpr, for `JAXON_DUMP`.
    pub plans: String,
    /// CLIF of every function, for `JAXON_DUMP`.
    pub clif: String,
    pub(crate) n_funcs: usize,
    /// Top-level results to write in place inside a wider array: (value,
    /// row stride in elements). Read by the top-level `prep` only.
    pub strided_outs: Vec<(Var, usize)>,
    /// Those of `strided_outs` whose producer writes them so.
    pub strided_done: Vec<Var>,
}

impl Tables {
    pub fn new(opts: Options, dump: bool) -> Result<Tables, IrError> {
        let mut cb = CodeBuilder::new(&crate::run::runtime::trampolines())?;
        if dump {
            cb.disasm = Some(String::new());
        }
        Ok(Tables {
            cb,
            opts,
            par_kernels: Vec::new(),
            dots: Vec::new(),
            steps: Vec::new(),
            pinned: Vec::new(),
            dump,
            plans: String::new(),
            clif: String::new(),
            n_funcs: 0,
            strided_outs: Vec::new(),
            strided_done: Vec::new(),
        })
    }
}

/// A prepared (sub)jaxpr.
pub(crate) struct Prep {
    pub jaxpr: Arc<Jaxpr>,
    /// Its closed-over constants (embedded for nested jaxprs).
    pub consts: Arc<[HostArray]>,
    pub mem: MemoryPlan,
    pub groups: Vec<GPrep>,
    /// Per outvar: whether the caller must give it a fixed address (it is
    /// computed inside and written straight to its destination).
    pub direct: Vec<bool>,
}

/// A fused kernel call.
pub(crate) struct KPrep {
    /// Function index in the code builder (`None` when inlined).
    pub func: Option<usize>,
    /// The loop nest to emit inline instead of a call (small groups).
    pub inline: Option<Inline>,
    /// Index in `par_kernels` when it runs on several threads.
    pub par: Option<usize>,
    pub inputs: Vec<Var>,
    pub out: Var,
    /// Output element count and size.
    pub out_numel: usize,
    pub esize: usize,
    /// For reductions: the identity's bytes, filled into the output first.
    pub init: Option<Vec<u8>>,
    /// Whether the loop runs at all (the space is not empty).
    pub run: bool,
    /// The extent of the kernel's outermost loop.
    pub extent: usize,
    /// Whether row ranges of it may run concurrently.
    pub splittable: bool,
    /// Its part in a row run, if any (`rows`).
    pub row_run: Option<RowRole>,
    /// Its 2-D output `(rows, cols)` lives inside a wider array with row
    /// stride `.0` elements: the kernel is called once per row
    /// (`strided_outputs`).
    pub strided_out: Option<(usize, usize, usize)>,
}

/// How a loop repeats.
pub(crate) enum LoopKind {
    While {
        cond: Box<Prep>,
        body: Box<Prep>,
        cond_nconsts: usize,
        body_nconsts: usize,
    },
    Scan {
        body: Box<Prep>,
        length: usize,
        reverse: bool,
        num_consts: usize,
        /// Bytes of one row of each `xs` operand and of each `ys` output.
        x_rows: Vec<usize>,
        y_rows: Vec<usize>,
    },
    /// Catalyst's `for_loop`: operands `*consts *implicit lo hi step i0
    /// *carry`, body `(consts, implicit, i, carry) -> (implicit, carry)`;
    /// the carries are `implicit ++ carry`.
    For {
        body: Box<Prep>,
        body_nconsts: usize,
        nimplicit: usize,
        /// Trip count `ceil((hi - lo) / step)` for either sign of `step`.
        reverse_transform: bool,
        /// Dtypes of `lo`, `hi`, `step` and the index.
        bound_dts: [DType; 4],
    },
}

/// A `while`, `scan` or `for_loop`: carry `k` lives at `scratch + carry_off[k]` in the
/// first set and `second_set` bytes further in the second.
pub(crate) struct LoopPrep {
    pub kind: LoopKind,
    pub operands: Vec<Atom>,
    pub outs: Vec<Option<Var>>,
    pub carry_bytes: Vec<usize>,
    pub carry_off: Vec<usize>,
    pub second_set: usize,
    /// Where the bodies' arenas start in the scratch.
    pub sub_off: usize,
    /// Where a `for_loop`'s index value lives in the scratch.
    pub index_off: usize,
}

/// One group, ready to emit.
pub(crate) enum GPrep {
    Kernel(KPrep),
    Dot {
        idx: usize,
        lhs: Var,
        rhs: Var,
        out: Var,
        /// `out = x + lhs·rhs`: `x` (of `.1` bytes) is copied to `out`
        /// first and the GEMM accumulates there (`dot_fuse::fuse_accumulate`).
        acc: Option<(Var, usize)>,
        /// The `[n]` bias of the plan's epilogue (`epilogue`).
        bias: Option<Var>,
    },
    /// A group whose work another group does (`dot_fuse::fuse_accumulate`,
    /// `epilogue`).
    Nop,
    Step {
        idx: usize,
        ins: Vec<Var>,
        outs: Vec<Var>,
    },
    Loop(Box<LoopPrep>),
    Cond {
        branches: Vec<Prep>,
        index: Atom,
        index_dtype: DType,
        operands: Vec<Atom>,
        outs: Vec<Option<Var>>,
    },
}

impl GPrep {
    /// Whether the emitted group reads `v` (after every peephole).
    pub(crate) fn reads(&self, v: Var) -> bool {
        let atom = |a: &Atom| *a == Atom::Var(v);
        match self {
            GPrep::Kernel(k) => k.inputs.contains(&v),
            GPrep::Dot {
                lhs,
                rhs,
                acc,
                bias,
                ..
            } => *lhs == v || *rhs == v || acc.is_some_and(|(x, _)| x == v) || *bias == Some(v),
            GPrep::Nop => false,
            GPrep::Step { ins, .. } => ins.contains(&v),
            GPrep::Loop(l) => l.operands.iter().any(atom),
            GPrep::Cond {
                index, operands, ..
            } => atom(index) || operands.iter().any(atom),
        }
    }
}

/// A kernel's part in a row run.
#[derive(Debug)]
pub(crate) enum RowRole {
    /// The first member: runs the whole run through `func` (the driver),
    /// on threads when `par` is set.
    Head {
        /// Group indices of every member, the head first.
        members: Vec<usize>,
        /// The driver's function index.
        func: usize,
        /// Its index in the program's parallel kernels.
        par: Option<usize>,
        /// The row extent.
        rows: usize,
    },
    /// A later member: run by its head.
    Member,
}

/// The little-endian bytes of an array's elements.
pub(crate) fn array_bytes(a: &HostArray) -> Vec<u8> {
    use jaxon_ir::Storage;
    macro_rules! le {
        ($v:expr) => {
            $v.iter().flat_map(|x| x.to_le_bytes()).collect()
        };
    }
    match a.data() {
        Storage::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        Storage::I8(v) => le!(v),
        Storage::I16(v) => le!(v),
        Storage::I32(v) => le!(v),
        Storage::I64(v) => le!(v),
        Storage::U8(v) => le!(v),
        Storage::U16(v) => le!(v),
        Storage::U32(v) => le!(v),
        Storage::U64(v) => le!(v),
        Storage::F16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        Storage::BF16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        Storage::F32(v) => le!(v),
        Storage::F64(v) => le!(v),
        Storage::C64(v) => v
            .iter()
            .flat_map(|z| [z.re, z.im])
            .flat_map(|x| x.to_le_bytes())
            .collect(),
        Storage::C128(v) => v
            .iter()
            .flat_map(|z| [z.re, z.im])
            .flat_map(|x| x.to_le_bytes())
            .collect(),
        Storage::Key(v) => v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect(),
    }
}
