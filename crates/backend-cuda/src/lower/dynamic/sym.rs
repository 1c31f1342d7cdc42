//! Size expressions of dynamic-shape programs: integer expressions over
//! the values of the program's scalar integer arguments, built at compile
//! time and evaluated once per call (`Sz::eval`).
//!
//! Invariants: an expression only names arguments below the program's
//! input count (checked by `eval`); evaluation is checked arithmetic, so an
//! overflowing or negative size is an error naming it, never a wrapped
//! value.

use jaxon_ir::IrError;

/// A binary operator of size arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SzOp {
    Add,
    Sub,
    Mul,
    /// Truncating division (C's `/`, the interpreter's integer `div`).
    Div,
    /// Truncating remainder.
    Rem,
    Max,
    Min,
}

/// A size expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sz {
    /// A constant.
    C(i64),
    /// The value of scalar integer input `k` of the program.
    Arg(usize),
    /// `op(a, b)`.
    Bin(SzOp, Box<Sz>, Box<Sz>),
}

impl Sz {
    /// `op(a, b)`, folding constants.
    pub(crate) fn bin(op: SzOp, a: Sz, b: Sz) -> Sz {
        match (op, &a, &b) {
            (SzOp::Mul, Sz::C(1), _) | (SzOp::Add, Sz::C(0), _) => b,
            (SzOp::Mul, _, Sz::C(1)) | (SzOp::Add | SzOp::Sub, _, Sz::C(0)) => a,
            (_, Sz::C(x), Sz::C(y)) => match apply(op, *x, *y) {
                Some(v) => Sz::C(v),
                None => Sz::Bin(op, Box::new(a), Box::new(b)),
            },
            _ => Sz::Bin(op, Box::new(a), Box::new(b)),
        }
    }

    /// The product of `dims` (1 for none).
    pub(crate) fn prod<'a>(dims: impl IntoIterator<Item = &'a Sz>) -> Sz {
        dims.into_iter()
            .fold(Sz::C(1), |acc, d| Sz::bin(SzOp::Mul, acc, d.clone()))
    }

    /// The value for argument values `args`.
    pub(crate) fn eval(&self, args: &[i64]) -> Result<i64, IrError> {
        match self {
            Sz::C(v) => Ok(*v),
            Sz::Arg(k) => args.get(*k).copied().ok_or_else(|| {
                IrError::Invalid(format!("cuda dynamic shapes: no size argument {k}"))
            }),
            Sz::Bin(op, a, b) => {
                let (x, y) = (a.eval(args)?, b.eval(args)?);
                apply(*op, x, y).ok_or_else(|| {
                    IrError::Eval(format!(
                        "cuda dynamic shapes: size arithmetic {op:?}({x}, {y}) overflows"
                    ))
                })
            }
        }
    }

    /// The value as a size (an element count or extent): an error when it
    /// is negative.
    pub(crate) fn size(&self, args: &[i64]) -> Result<usize, IrError> {
        let v = self.eval(args)?;
        usize::try_from(v)
            .map_err(|_| IrError::Eval(format!("cuda dynamic shapes: a negative size {v}")))
    }
}

fn apply(op: SzOp, x: i64, y: i64) -> Option<i64> {
    match op {
        SzOp::Add => x.checked_add(y),
        SzOp::Sub => x.checked_sub(y),
        SzOp::Mul => x.checked_mul(y),
        SzOp::Div => x.checked_div(y),
        SzOp::Rem => x.checked_rem(y),
        SzOp::Max => Some(x.max(y)),
        SzOp::Min => Some(x.min(y)),
    }
}

/// The row-major strides of `shape`.
pub(crate) fn strides(shape: &[Sz]) -> Vec<Sz> {
    let mut s = vec![Sz::C(1); shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = Sz::bin(SzOp::Mul, s[d + 1].clone(), shape[d + 1].clone());
    }
    s
}
