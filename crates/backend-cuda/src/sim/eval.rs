//! Expression evaluation on the lockstep machine: one [`Expr`] for a set of
//! threads at once, giving one value per thread.
//!
//! Invariants: `lanes` is a sorted list of distinct linear thread indices of
//! the running block (possibly empty); [`Machine::eval`] returns the
//! expression's dtype and exactly one value per entry of `lanes`, in order;
//! a `Select` evaluates each branch only for the threads that take it, so a
//! fault in an untaken branch is not reported. Integer division by zero is a
//! fault naming the first thread (in linear order) that divides by zero.

use super::exec::Machine;
use super::{mathfn, value, ParamVal};
use crate::error::Result;
use crate::kir::{Axis, BinOp, Expr, ParamKind, Special, UnOp};
use jaxon_ir::DType;

/// The threads of `lanes` where `cond` is true, and those where it is false.
pub(crate) fn split(lanes: &[u32], cond: &[u64]) -> (Vec<u32>, Vec<u32>) {
    let mut on = Vec::with_capacity(lanes.len());
    let mut off = Vec::new();
    for (&t, &c) in lanes.iter().zip(cond) {
        if c != 0 {
            on.push(t);
        } else {
            off.push(t);
        }
    }
    (on, off)
}

fn axis(a: Axis) -> usize {
    match a {
        Axis::X => 0,
        Axis::Y => 1,
        Axis::Z => 2,
    }
}

impl Machine<'_> {
    /// A hardware-provided value for thread `t`.
    fn special(&self, s: Special, t: u32) -> u32 {
        let tid = self.tid(t);
        match s {
            Special::ThreadIdx(a) => tid[axis(a)],
            Special::BlockIdx(a) => self.block[axis(a)],
            Special::BlockDim(a) => self.dims.block[axis(a)],
            Special::GridDim(a) => self.dims.grid[axis(a)],
            Special::LaneId => t % 32,
        }
    }

    /// The dtype of `e` and its value in each thread of `lanes`.
    pub(crate) fn eval(&self, e: &Expr, lanes: &[u32]) -> Result<(DType, Vec<u64>)> {
        let n = lanes.len();
        Ok(match e {
            Expr::Var(v) => {
                let d = self.var_dtype(*v)?;
                let col = self.col(*v)?;
                (d, lanes.iter().map(|&t| col[t as usize]).collect())
            }
            Expr::Param(p) => {
                let not_scalar = || self.invalid(format!("parameter {} is not a scalar", p.0));
                let d = match self.k.params.get(p.0 as usize).map(|p| p.kind) {
                    Some(ParamKind::Scalar(d)) => d,
                    Some(ParamKind::Global { .. }) | None => return Err(not_scalar()),
                };
                match self.params.get(p.0 as usize) {
                    Some(ParamVal::Scalar(bits)) => (d, vec![*bits; n]),
                    Some(ParamVal::Buffer(_)) | None => return Err(not_scalar()),
                }
            }
            Expr::Const(c) => (c.dtype, vec![value::canon(c.dtype, c.bits); n]),
            Expr::Special(s) => (
                DType::U32,
                lanes
                    .iter()
                    .map(|&t| u64::from(self.special(*s, t)))
                    .collect(),
            ),
            Expr::Unary(op, a) => {
                let (d, v) = self.eval(a, lanes)?;
                let rd = match op {
                    UnOp::IsNan | UnOp::IsInf => DType::Bool,
                    UnOp::Clz | UnOp::Popc => DType::I32,
                    UnOp::Neg | UnOp::Not | UnOp::Abs => d,
                };
                (rd, v.into_iter().map(|x| value::unary(*op, d, x)).collect())
            }
            Expr::Binary(op, a, b) => {
                let (d, va) = self.eval(a, lanes)?;
                let (_, vb) = self.eval(b, lanes)?;
                let mut out = Vec::with_capacity(n);
                for ((&x, &y), &t) in va.iter().zip(&vb).zip(lanes) {
                    match value::binary(*op, d, x, y) {
                        Some(r) => out.push(r),
                        None => {
                            let what = if *op == BinOp::Rem {
                                "remainder"
                            } else {
                                "division"
                            };
                            return Err(self.fault(
                                t,
                                format!(
                                    "integer {what} by zero ({} {} 0, {d})",
                                    value::to_int(d, x).unwrap_or(0),
                                    if *op == BinOp::Rem { "%" } else { "/" }
                                ),
                            ));
                        }
                    }
                }
                (if op.is_comparison() { DType::Bool } else { d }, out)
            }
            Expr::Select(c, a, b) => {
                let (_, vc) = self.eval(c, lanes)?;
                let (on, off) = split(lanes, &vc);
                let (d, va) = self.eval(a, &on)?;
                let (_, vb) = self.eval(b, &off)?;
                let (mut ia, mut ib) = (va.into_iter(), vb.into_iter());
                let out = vc
                    .iter()
                    .map(|&c| if c != 0 { ia.next() } else { ib.next() }.unwrap_or(0))
                    .collect();
                (d, out)
            }
            Expr::Cast(to, a) => {
                let (d, v) = self.eval(a, lanes)?;
                (*to, v.into_iter().map(|x| value::cast(d, *to, x)).collect())
            }
            Expr::Bitcast(to, a) => {
                let (d, v) = self.eval(a, lanes)?;
                (
                    *to,
                    v.into_iter().map(|x| value::bitcast(d, *to, x)).collect(),
                )
            }
            Expr::Math(f, args) => {
                let mut d = DType::F32;
                let mut cols = Vec::with_capacity(args.len());
                for a in args {
                    let (da, v) = self.eval(a, lanes)?;
                    d = da;
                    cols.push(v);
                }
                let mut buf = [0u64; 3];
                let k = cols.len().min(3);
                let out = (0..n)
                    .map(|j| {
                        for (slot, col) in buf.iter_mut().zip(&cols) {
                            *slot = col[j];
                        }
                        mathfn::math(*f, d, &buf[..k])
                    })
                    .collect();
                (d, out)
            }
        })
    }
}
