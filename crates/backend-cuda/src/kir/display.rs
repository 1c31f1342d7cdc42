//! KIR's text form, written by `JAXON_DUMP` and read by people: one
//! statement per line, variables as `%name.N` (`N` the [`Var`] index, so
//! names are unique), constants with their dtype (`2.0f32`, `7u32`).

use super::{Axis, Const, Expr, Kernel, ParamKind, Space, Special, Stmt, Var};
use std::fmt::{self, Write};

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel {}(", self.name)?;
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match p.kind {
                ParamKind::Global { dtype, writable } => {
                    let m = if writable { "mut " } else { "" };
                    write!(f, "{}: &{m}[{dtype}]", p.name)?
                }
                ParamKind::Scalar(d) => write!(f, "{}: {d}", p.name)?,
            }
        }
        writeln!(f, ") max_threads={} {{", self.max_threads)?;
        for s in &self.shared {
            writeln!(f, "  shared {}: [{}; {}]", s.name, s.dtype, s.len)?;
        }
        for (i, v) in self.vars.iter().enumerate() {
            writeln!(f, "  var {}: {}", self.var_name(Var(i as u32)), v.dtype)?;
        }
        let mut out = String::new();
        self.write_body(&mut out, &self.body, 1)?;
        f.write_str(&out)?;
        f.write_str("}\n")
    }
}

impl Kernel {
    /// A variable's printed name, `%hint.N`.
    pub fn var_name(&self, v: Var) -> String {
        let hint = self
            .vars
            .get(v.0 as usize)
            .map(|d| d.name.as_str())
            .unwrap_or("?");
        format!("%{hint}.{}", v.0)
    }

    fn space_name(&self, s: Space) -> String {
        match s {
            Space::Global(p) => self
                .params
                .get(p.0 as usize)
                .map_or_else(|| format!("param{}", p.0), |p| p.name.clone()),
            Space::Shared(id) => self
                .shared
                .get(id.0 as usize)
                .map_or_else(|| format!("shared{}", id.0), |s| s.name.clone()),
        }
    }

    /// An expression's text.
    pub fn expr_text(&self, e: &Expr) -> String {
        match e {
            Expr::Var(v) => self.var_name(*v),
            Expr::Param(p) => self
                .params
                .get(p.0 as usize)
                .map_or_else(|| format!("param{}", p.0), |p| p.name.clone()),
            Expr::Const(c) => const_text(*c),
            Expr::Special(s) => special_text(*s),
            Expr::Unary(op, a) => format!("{op:?}({})", self.expr_text(a)).to_lowercase_op(),
            Expr::Binary(op, a, b) => {
                format!("{:?}({}, {})", op, self.expr_text(a), self.expr_text(b)).to_lowercase_op()
            }
            Expr::Select(c, a, b) => format!(
                "select({}, {}, {})",
                self.expr_text(c),
                self.expr_text(a),
                self.expr_text(b)
            ),
            Expr::Cast(t, a) => format!("cast<{t}>({})", self.expr_text(a)),
            Expr::Bitcast(t, a) => format!("bitcast<{t}>({})", self.expr_text(a)),
            Expr::Math(m, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr_text(a)).collect();
                format!("{m:?}({})", args.join(", ")).to_lowercase_op()
            }
        }
    }

    fn write_body(&self, out: &mut String, body: &[Stmt], depth: usize) -> fmt::Result {
        for s in body {
            self.write_stmt(out, s, depth)?;
        }
        Ok(())
    }

    fn write_stmt(&self, out: &mut String, s: &Stmt, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        let vars = |vs: &[Var]| {
            vs.iter()
                .map(|v| self.var_name(*v))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let exprs = |es: &[Expr]| {
            es.iter()
                .map(|e| self.expr_text(e))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match s {
            Stmt::Assign(v, e) => {
                writeln!(out, "{pad}{} = {}", self.var_name(*v), self.expr_text(e))
            }
            Stmt::Load {
                dst,
                space,
                index,
                mask,
            } => {
                write!(
                    out,
                    "{pad}{} = load.x{} {}[{}]",
                    vars(dst),
                    dst.len(),
                    self.space_name(*space),
                    self.expr_text(index)
                )?;
                if let Some((m, o)) = mask {
                    write!(out, " if {} else {}", self.expr_text(m), self.expr_text(o))?;
                }
                out.push('\n');
                Ok(())
            }
            Stmt::Store {
                space,
                index,
                values,
                mask,
            } => {
                write!(
                    out,
                    "{pad}store.x{} {}[{}] = {}",
                    values.len(),
                    self.space_name(*space),
                    self.expr_text(index),
                    exprs(values)
                )?;
                if let Some(m) = mask {
                    write!(out, " if {}", self.expr_text(m))?;
                }
                out.push('\n');
                Ok(())
            }
            Stmt::Atomic {
                op,
                space,
                index,
                value,
                dst,
            } => {
                if let Some(d) = dst {
                    write!(out, "{pad}{} = ", self.var_name(*d))?;
                } else {
                    out.push_str(&pad);
                }
                writeln!(
                    out,
                    "atomic.{} {}[{}], {}",
                    format!("{op:?}").to_lowercase(),
                    self.space_name(*space),
                    self.expr_text(index),
                    self.expr_text(value)
                )
            }
            Stmt::Barrier => writeln!(out, "{pad}barrier"),
            Stmt::Shuffle {
                dst,
                kind,
                value,
                lane,
                width,
            } => writeln!(
                out,
                "{pad}{} = shuffle.{}.w{width} {}, {}",
                self.var_name(*dst),
                format!("{kind:?}").to_lowercase(),
                self.expr_text(value),
                self.expr_text(lane)
            ),
            Stmt::Mma { shape, d, a, b, c } => writeln!(
                out,
                "{pad}{} = mma.{shape:?} a=[{}] b=[{}] c=[{}]",
                vars(d),
                exprs(a),
                exprs(b),
                exprs(c)
            ),
            Stmt::LdMatrix {
                dst,
                shared,
                index,
                trans,
            } => writeln!(
                out,
                "{pad}{} = ldmatrix.x{}{} {}[{}]",
                vars(dst),
                dst.len() / 2,
                if *trans { ".trans" } else { "" },
                self.space_name(Space::Shared(*shared)),
                self.expr_text(index)
            ),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                writeln!(out, "{pad}if {} {{", self.expr_text(cond))?;
                self.write_body(out, then, depth + 1)?;
                if !otherwise.is_empty() {
                    writeln!(out, "{pad}}} else {{")?;
                    self.write_body(out, otherwise, depth + 1)?;
                }
                writeln!(out, "{pad}}}")
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                writeln!(
                    out,
                    "{pad}for {} in {}..{} step {} {{",
                    self.var_name(*var),
                    self.expr_text(start),
                    self.expr_text(end),
                    self.expr_text(step)
                )?;
                self.write_body(out, body, depth + 1)?;
                writeln!(out, "{pad}}}")
            }
            Stmt::While { cond, body } => {
                writeln!(out, "{pad}while {} {{", self.expr_text(cond))?;
                self.write_body(out, body, depth + 1)?;
                writeln!(out, "{pad}}}")
            }
        }
    }
}

/// Lower-cases the operator name at the start of a printed call
/// (`Add(` → `add(`), leaving the operands alone.
trait LowercaseOp {
    fn to_lowercase_op(self) -> String;
}

impl LowercaseOp for String {
    fn to_lowercase_op(self) -> String {
        match self.find('(') {
            Some(i) => format!("{}{}", self[..i].to_lowercase(), &self[i..]),
            None => self,
        }
    }
}

fn const_text(c: Const) -> String {
    use jaxon_ir::DType;
    match c.dtype {
        DType::Bool => (c.bits != 0).to_string(),
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            let v = c.to_f64();
            if v.is_finite() && v == v.trunc() && v.abs() < 1e16 {
                format!("{v:.1}{}", c.dtype)
            } else {
                format!("{v:?}{}", c.dtype)
            }
        }
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            format!("{}{}", c.bits as i64, c.dtype)
        }
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => format!("{}{}", c.bits, c.dtype),
        DType::C64 | DType::C128 | DType::KeyFry => format!("{}{}", c.bits, c.dtype),
    }
}

fn special_text(s: Special) -> String {
    let axis = |a: Axis| match a {
        Axis::X => "x",
        Axis::Y => "y",
        Axis::Z => "z",
    };
    match s {
        Special::ThreadIdx(a) => format!("threadIdx.{}", axis(a)),
        Special::BlockIdx(a) => format!("blockIdx.{}", axis(a)),
        Special::BlockDim(a) => format!("blockDim.{}", axis(a)),
        Special::GridDim(a) => format!("gridDim.{}", axis(a)),
        Special::LaneId => "laneid".to_string(),
    }
}
