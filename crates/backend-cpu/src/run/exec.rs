//! Compiled programs: the program function, the GEMM plans it calls and
//! its steps. A step is one mechanism, a [`NativeOp`] on operands, run on
//! its pointer table (`run_raw`) or on copies of its operands.

use crate::codegen::jit::{CodeModule, Kernel, ProgramFn};
use crate::codegen::kernel::identity_int;
use crate::error::run_error;
use crate::ops::dot::DotPlan;
use crate::ops::native::NativeOp;
use crate::util::literal_array;
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{Atom, DType, HostArray, IrError, ShapedArray, Storage, Var};
use std::sync::{Arc, Mutex};

/// An operand of a step: a variable or a constant (from a literal).
#[derive(Clone, Debug)]
pub(crate) enum Operand {
    /// A variable of the program's environment.
    Var(Var),
    /// A constant array.
    Const(HostArray),
}

/// One step of a program: a native op (`crate::ops::native`, the one
/// step mechanism) on operands, binding its results (`None`: dropped).
#[derive(Debug)]
pub(crate) struct Step {
    /// The op, built for the step's static shapes.
    pub op: Box<dyn NativeOp>,
    /// Its operands.
    pub inputs: Vec<Operand>,
    /// Its results.
    pub outs: Vec<Option<Var>>,
}

/// A native step called from generated code, with the types of the
/// variables it reads and writes (in pointer-table order).
#[derive(Debug)]
pub(crate) struct StepCall {
    /// The step.
    pub step: Step,
    /// Variables read (each once).
    pub ins: Vec<(Var, DType, Vec<usize>)>,
    /// Variables written.
    pub outs: Vec<(Var, DType, Vec<usize>)>,
}

/// Where a program result comes from.
#[derive(Debug)]
pub(crate) enum ResultSrc {
    /// Output buffer `i`, written by the program function.
    Buffer(usize),
    /// Argument `i`, passed through.
    Input(usize),
    /// Closed-over constant `i`.
    Const(usize),
    /// A literal.
    Literal(HostArray),
    /// The same value as result `i` (an earlier one).
    Again(usize),
}

/// A compiled jaxpr, independent of its constants (so it can be cached):
/// one program function that runs the whole jaxpr natively, and the
/// tables its trampolines use.
pub(crate) struct Program {
    /// The program function.
    pub entry: ProgramFn,
    /// Keeps `entry` (and the kernels) alive.
    pub _code: Arc<CodeModule>,
    /// Argument types.
    pub in_avals: Vec<ShapedArray>,
    /// Number of closed-over constants (passed after the arguments).
    pub n_consts: usize,
    /// Output buffers the program writes (dtype and shape).
    pub out_bufs: Vec<(DType, Vec<usize>)>,
    /// Per result, where it comes from.
    pub results: Vec<ResultSrc>,
    /// Bytes of the arena the program needs.
    pub arena_bytes: usize,
    /// Arenas of finished calls, reused by the next ones.
    pub arenas: Mutex<Vec<Vec<u64>>>,
    /// The pool the arenas came from (set by the first call) and return to
    /// when the program is dropped.
    pub arena_pool: std::sync::OnceLock<Arc<crate::run::pool::Pool>>,
    /// Kernels large enough to split over threads (`tramp_par_kernel`).
    pub par_kernels: Vec<Kernel>,
    /// `dot_general`s (`tramp_dot`).
    pub dots: Vec<DotPlan>,
    /// Other native steps (`tramp_step`).
    pub steps: Vec<StepCall>,
    /// Constants whose addresses are embedded in the code (nested
    /// jaxprs' consts, literals, reduction identities): never mutated or
    /// moved while the program lives.
    pub _pinned: Vec<Arc<[HostArray]>>,
    /// See `_pinned`.
    pub _pinned_bytes: Vec<Box<[u64]>>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Program({} args, {} results, arena {} bytes)",
            self.in_avals.len(),
            self.results.len(),
            self.arena_bytes
        )
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if let (Some(pool), Ok(arenas)) = (self.arena_pool.get(), self.arenas.get_mut()) {
            for a in arenas.drain(..) {
                pool.give_arena(a);
            }
        }
    }
}

impl Program {
    /// Length of the io pointer table: arguments, constants, outputs.
    pub fn io_len(&self) -> usize {
        self.in_avals.len() + self.n_consts + self.out_bufs.len()
    }
}

/// An array of `shape` filled with the identity of `op`.
pub(crate) fn identity_array(
    op: ReduceOp,
    dt: DType,
    shape: &[usize],
) -> Result<HostArray, IrError> {
    let n: usize = shape.iter().product();
    let v = if dt.is_float() {
        match op {
            ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => 0.0,
            ReduceOp::Prod | ReduceOp::And => 1.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        }
    } else {
        let bits = identity_int(op, dt, dt.bits());
        if dt.is_signed_int() || dt == DType::Bool {
            return HostArray::new(shape.to_vec(), signed_fill(dt, bits, n));
        }
        return HostArray::new(shape.to_vec(), unsigned_fill(dt, bits as u64, n));
    };
    HostArray::from_f64(dt, shape, &vec![v; n])
}

fn signed_fill(dt: DType, v: i64, n: usize) -> Storage {
    match dt {
        DType::Bool => Storage::Bool(vec![v != 0; n]),
        DType::I8 => Storage::I8(vec![v as i8; n]),
        DType::I16 => Storage::I16(vec![v as i16; n]),
        DType::I32 => Storage::I32(vec![v as i32; n]),
        _ => Storage::I64(vec![v; n]),
    }
}

fn unsigned_fill(dt: DType, v: u64, n: usize) -> Storage {
    match dt {
        DType::U8 => Storage::U8(vec![v as u8; n]),
        DType::U16 => Storage::U16(vec![v as u16; n]),
        DType::U32 => Storage::U32(vec![v as u32; n]),
        _ => Storage::U64(vec![v; n]),
    }
}

/// Runs a step on copies of its operands (`ins`, in `call.ins` order) and
/// returns its results (in `call.outs` order).
pub(crate) fn run_step_call(
    call: &StepCall,
    ins: Vec<HostArray>,
    threads: usize,
) -> Result<Vec<HostArray>, IrError> {
    let Step { op, inputs, outs } = &call.step;
    let args = inputs
        .iter()
        .map(|o| match o {
            Operand::Const(a) => Ok(a),
            Operand::Var(v) => call
                .ins
                .iter()
                .position(|(w, _, _)| w == v)
                .and_then(|k| ins.get(k))
                .ok_or_else(|| run_error(format!("step operand {} not passed", v.0))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut results: Vec<Option<HostArray>> =
        op.run(&args, threads)?.into_iter().map(Some).collect();
    call.outs
        .iter()
        .map(|(v, _, _)| {
            outs.iter()
                .position(|o| *o == Some(*v))
                .and_then(|k| results.get_mut(k)?.take())
                .ok_or_else(|| run_error(format!("step did not compute variable {}", v.0)))
        })
        .collect()
}

/// An equation operand as a step operand (literals become arrays).
pub(crate) fn operand(a: &Atom) -> Result<Operand, IrError> {
    Ok(match a {
        Atom::Var(v) => Operand::Var(*v),
        Atom::Lit(l) => Operand::Const(literal_array(l)?),
    })
}
