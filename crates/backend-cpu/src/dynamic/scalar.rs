//! Runs of integer and bool scalar equations (loop counters, trip tests,
//! size arithmetic) evaluated directly by the driver: a kernel call costs
//! more than the arithmetic of a few scalars, and `while` loops run such a
//! run every iteration.
//!
//! Invariant: every register holds its value normalised to its dtype
//! (sign-extended for signed types, zero-extended for unsigned ones, `u64`
//! as its bit pattern, bool as 0/1), and every operation wraps to the
//! result's width, as the kernels and the interpreter do (XLA's integer
//! semantics). Anything else (floats, division, shifts, ...) stays a
//! kernel: `compile` returns `None`.

use jaxon_ir::literal::Scalar;
use jaxon_ir::primitive::Elementwise;
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::{Atom, Binder, DType, Jaxpr, Primitive, Var};

/// An operand: a register or an immediate (a literal, normalised).
#[derive(Clone, Copy, Debug)]
enum Src {
    Reg(usize),
    Imm(i64),
}

/// The binary operations evaluated here.
#[derive(Clone, Copy, Debug)]
enum Bin {
    Add,
    Sub,
    Mul,
    Max,
    Min,
    And,
    Or,
    Xor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// One operation.
#[derive(Clone, Copy, Debug)]
enum Op {
    Bin(Bin),
    Neg,
    Not,
    Copy,
    Convert,
    /// `select_n p a b` with a bool predicate.
    Select,
}

#[derive(Clone, Copy, Debug)]
struct Instr {
    op: Op,
    args: [Src; 3],
    /// The operands' dtype (comparisons and conversions read it).
    in_dt: DType,
    /// The result's dtype.
    out_dt: DType,
    out: usize,
}

/// A compiled run of integer/bool scalar equations.
#[derive(Debug)]
pub(crate) struct ScalarRun {
    /// The equations it covers.
    pub eqns: std::ops::Range<usize>,
    /// Outer variables read, with their registers.
    pub inputs: Vec<(Var, usize)>,
    /// Outer variables bound after the run: register and dtype.
    pub outputs: Vec<(Var, usize, DType)>,
    n_regs: usize,
    prog: Vec<Instr>,
}

fn int_like(dt: DType) -> bool {
    dt == DType::Bool || dt.is_int()
}

/// `v` normalised to `dt`.
fn wrap(dt: DType, v: i64) -> i64 {
    match dt {
        DType::Bool => (v != 0) as i64,
        DType::I8 => v as i8 as i64,
        DType::I16 => v as i16 as i64,
        DType::I32 => v as i32 as i64,
        DType::U8 => v as u8 as i64,
        DType::U16 => v as u16 as i64,
        DType::U32 => v as u32 as i64,
        _ => v,
    }
}

/// The order of normalised values of `dt`.
fn cmp(dt: DType, a: i64, b: i64) -> std::cmp::Ordering {
    if dt == DType::U64 {
        (a as u64).cmp(&(b as u64))
    } else {
        a.cmp(&b)
    }
}

/// Compiles equations `start..end` of `jaxpr` (all with scalar results)
/// when every one is an integer/bool operation this module evaluates.
pub(crate) fn compile(jaxpr: &Jaxpr, start: usize, end: usize) -> Option<ScalarRun> {
    let mut regs: std::collections::HashMap<Var, usize> = Default::default();
    let mut inputs = Vec::new();
    let mut prog = Vec::new();
    for eqn in &jaxpr.eqns[start..end] {
        let [Binder::Var(out)] = eqn.outputs.as_slice() else {
            return None;
        };
        let out_aval = jaxpr.try_aval(*out)?.as_array()?;
        if !out_aval.shape.is_empty() || !int_like(out_aval.dtype) {
            return None;
        }
        let mut args = [Src::Imm(0); 3];
        let mut in_dt = None;
        if eqn.inputs.len() > 3 {
            return None;
        }
        for (k, a) in eqn.inputs.iter().enumerate() {
            let dt = jaxpr.atom_aval(a)?.as_array()?.dtype;
            if !int_like(dt) || !jaxpr.atom_aval(a)?.as_array()?.shape.is_empty() {
                return None;
            }
            // `select_n`'s operands after the predicate give the dtype.
            if k == eqn.inputs.len() - 1 {
                in_dt = Some(dt);
            }
            args[k] = match a {
                Atom::Lit(l) => Src::Imm(wrap(
                    dt,
                    match l.value {
                        Scalar::Bool(b) => b as i64,
                        Scalar::Int(i) => i,
                        Scalar::UInt(u) => u as i64,
                        Scalar::Float(_) | Scalar::Complex(..) => return None,
                    },
                )),
                Atom::Var(v) => {
                    let n = regs.len();
                    let r = *regs.entry(*v).or_insert_with(|| {
                        inputs.push((*v, n));
                        n
                    });
                    Src::Reg(r)
                }
            };
        }
        let op = match &eqn.primitive {
            Primitive::Elementwise(Elementwise::Binary(b)) => Op::Bin(match b {
                BinaryOp::Add | BinaryOp::AddAny => Bin::Add,
                BinaryOp::Sub => Bin::Sub,
                BinaryOp::Mul => Bin::Mul,
                BinaryOp::Max => Bin::Max,
                BinaryOp::Min => Bin::Min,
                BinaryOp::And => Bin::And,
                BinaryOp::Or => Bin::Or,
                BinaryOp::Xor => Bin::Xor,
                BinaryOp::Eq => Bin::Eq,
                BinaryOp::Ne => Bin::Ne,
                BinaryOp::Lt => Bin::Lt,
                BinaryOp::Le => Bin::Le,
                BinaryOp::Gt => Bin::Gt,
                BinaryOp::Ge => Bin::Ge,
                // Division (zero and overflow rules), shifts and float
                // functions stay kernels.
                BinaryOp::Div
                | BinaryOp::Rem
                | BinaryOp::Pow
                | BinaryOp::Atan2
                | BinaryOp::Nextafter
                | BinaryOp::Igamma
                | BinaryOp::Igammac
                | BinaryOp::IgammaGradA
                | BinaryOp::RandomGammaGrad
                | BinaryOp::Polygamma
                | BinaryOp::Zeta
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRightArithmetic
                | BinaryOp::ShiftRightLogical
                | BinaryOp::LtTo
                | BinaryOp::LeTo => return None,
            }),
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg)) => Op::Neg,
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Not)) => Op::Not,
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Copy | UnaryOp::StopGradient)) => {
                Op::Copy
            }
            Primitive::Elementwise(Elementwise::ConvertElementType(_)) => Op::Convert,
            Primitive::Elementwise(Elementwise::SelectN) if eqn.inputs.len() == 3 => {
                let p = jaxpr.atom_aval(&eqn.inputs[0])?.dtype();
                if p != DType::Bool {
                    return None;
                }
                Op::Select
            }
            _ => return None,
        };
        let arity = match op {
            Op::Bin(_) => 2,
            Op::Select => 3,
            _ => 1,
        };
        if eqn.inputs.len() != arity {
            return None;
        }
        // Arithmetic on bool other than the logical ops is left to kernels.
        let in_dt = in_dt?;
        if in_dt == DType::Bool && matches!(op, Op::Neg | Op::Bin(Bin::Add | Bin::Sub | Bin::Mul)) {
            return None;
        }
        let n = regs.len();
        let r = *regs.entry(*out).or_insert(n);
        prog.push(Instr {
            op,
            args,
            in_dt,
            out_dt: out_aval.dtype,
            out: r,
        });
    }
    // Results: every value of the run (scalar integers may be dimensions
    // of later types; they are cheap).
    let outputs = jaxpr.eqns[start..end]
        .iter()
        .filter_map(|e| match e.outputs.as_slice() {
            [Binder::Var(v)] => Some((*v, regs[v], jaxpr.try_aval(*v)?.dtype())),
            _ => None,
        })
        .collect();
    Some(ScalarRun {
        eqns: start..end,
        inputs,
        outputs,
        n_regs: regs.len(),
        prog,
    })
}

impl ScalarRun {
    /// Runs the program in registers `r`, the inputs read by `input`
    /// (normalised values).
    pub(crate) fn eval<E>(
        &self,
        r: &mut Vec<i64>,
        input: impl Fn(Var) -> Result<i64, E>,
    ) -> Result<(), E> {
        r.clear();
        r.resize(self.n_regs, 0);
        for &(v, k) in &self.inputs {
            r[k] = input(v)?;
        }
        for i in &self.prog {
            let get = |s: Src| match s {
                Src::Reg(k) => r[k],
                Src::Imm(v) => v,
            };
            let (a, b, c) = (get(i.args[0]), get(i.args[1]), get(i.args[2]));
            let dt = i.in_dt;
            use std::cmp::Ordering::{Greater, Less};
            let v = match i.op {
                Op::Bin(op) => match op {
                    Bin::Add => a.wrapping_add(b),
                    Bin::Sub => a.wrapping_sub(b),
                    Bin::Mul => a.wrapping_mul(b),
                    Bin::Max => {
                        if cmp(dt, a, b) == Less {
                            b
                        } else {
                            a
                        }
                    }
                    Bin::Min => {
                        if cmp(dt, a, b) == Greater {
                            b
                        } else {
                            a
                        }
                    }
                    Bin::And => a & b,
                    Bin::Or => a | b,
                    Bin::Xor => a ^ b,
                    Bin::Eq => (a == b) as i64,
                    Bin::Ne => (a != b) as i64,
                    Bin::Lt => (cmp(dt, a, b) == Less) as i64,
                    Bin::Le => (cmp(dt, a, b) != Greater) as i64,
                    Bin::Gt => (cmp(dt, a, b) == Greater) as i64,
                    Bin::Ge => (cmp(dt, a, b) != Less) as i64,
                },
                Op::Neg => a.wrapping_neg(),
                Op::Not if dt == DType::Bool => a ^ 1,
                Op::Not => !a,
                Op::Copy | Op::Convert => a,
                Op::Select => {
                    if a != 0 {
                        c
                    } else {
                        b
                    }
                }
            };
            r[i.out] = wrap(i.out_dt, v);
        }
        Ok(())
    }
}
