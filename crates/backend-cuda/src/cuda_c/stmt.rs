//! Printing KIR statements: memory accesses (vector accesses as one aligned
//! struct load/store; a loaded pair of 16-bit elements as one 32-bit word),
//! atomics (float min/max as CAS loops), barriers, shuffles (16-bit values
//! moved as 32-bit), `mma.sync` and `ldmatrix` as inline PTX, and
//! structured control flow.
//!
//! Invariant: every statement reads all of its operands before it writes
//! any destination, so a destination that also appears in an operand (a
//! masked load's `other`, an `mma`'s `c`) sees the old value, as in KIR.

use super::prelude::{c_type, vec_type};
use super::Printer;
use crate::kir::{AtomicOp, BinOp, Expr, MmaShape, SharedId, ShuffleKind, Space, Stmt};
use jaxon_ir::DType;

impl Printer<'_> {
    /// Prints a body at the current depth.
    pub(crate) fn body(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn nested(&mut self, body: &[Stmt]) {
        self.depth += 1;
        self.body(body);
        self.depth -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign(v, e) => {
                let line = format!("{} = {};", self.var(*v), self.expr(e).0);
                self.line(&line);
            }
            Stmt::Load {
                dst,
                space,
                index,
                mask,
            } => {
                let t = self.space_dtype(*space);
                let addr = format!("&{}[{}]", self.space(*space), self.expr(index).0);
                let names: Vec<String> = dst.iter().map(|v| self.var(*v)).collect();
                let load = |p: &mut Self| {
                    if let [one] = names.as_slice() {
                        p.line(&format!("{one} = *({addr});"));
                    } else if let ([lo, hi], 2) = (names.as_slice(), t.size_bytes()) {
                        // Two 16-bit elements as one 32-bit word: a struct
                        // of two shorts can land in local memory (ptxas
                        // reports a stack frame and spills on sm_90).
                        let ct = c_type(t);
                        p.line(&format!("const kir_u32 kir_w = *(const kir_u32*)({addr});"));
                        p.line(&format!("{lo} = ({ct})(kir_w & 0xffffu);"));
                        p.line(&format!("{hi} = ({ct})(kir_w >> 16);"));
                    } else {
                        let vt = vec_type(t, names.len());
                        p.line(&format!("const {vt} kir_t = *(const {vt}*)({addr});"));
                        for (i, n) in names.iter().enumerate() {
                            p.line(&format!("{n} = kir_t.v[{i}];"));
                        }
                    }
                };
                match mask {
                    None if names.len() == 1 => load(self),
                    None => self.block("{", "}", load),
                    Some((m, other)) => {
                        let m = self.expr(m).0;
                        let other = self.expr(other).0;
                        self.block(&format!("if ({m}) {{"), "", load);
                        self.block("} else {", "}", |p| {
                            p.line(&format!("const {} kir_o = {other};", c_type(t)));
                            for n in &names {
                                p.line(&format!("{n} = kir_o;"));
                            }
                        });
                    }
                }
            }
            Stmt::Store {
                space,
                index,
                values,
                mask,
            } => {
                let t = self.space_dtype(*space);
                let addr = format!("&{}[{}]", self.space(*space), self.expr(index).0);
                let vals: Vec<String> = values.iter().map(|e| self.expr(e).0).collect();
                let store = |p: &mut Self| {
                    if let [one] = vals.as_slice() {
                        p.line(&format!("*({addr}) = {one};"));
                    } else {
                        let vt = vec_type(t, vals.len());
                        p.line(&format!("{vt} kir_t;"));
                        for (i, v) in vals.iter().enumerate() {
                            p.line(&format!("kir_t.v[{i}] = {v};"));
                        }
                        p.line(&format!("*({vt}*)({addr}) = kir_t;"));
                    }
                };
                match mask {
                    None if vals.len() == 1 => store(self),
                    None => self.block("{", "}", store),
                    Some(m) => {
                        let m = self.expr(m).0;
                        self.block(&format!("if ({m}) {{"), "}", store);
                    }
                }
            }
            Stmt::Atomic {
                op,
                space,
                index,
                value,
                dst,
            } => {
                let t = self.space_dtype(*space);
                let ptr = format!("&{}[{}]", self.space(*space), self.expr(index).0);
                let call = atomic(*op, t, &ptr, &self.expr(value).0);
                let line = match dst {
                    Some(d) => format!("{} = {call};", self.var(*d)),
                    None => format!("(void){call};"),
                };
                self.line(&line);
            }
            Stmt::Barrier => self.line("__syncthreads();"),
            Stmt::Shuffle {
                dst,
                kind,
                value,
                lane,
                width,
            } => {
                let (v, t) = self.expr(value);
                let lane = self.expr(lane).0;
                let (f, lane) = match kind {
                    ShuffleKind::Xor => ("__shfl_xor_sync", format!("(int){lane}")),
                    ShuffleKind::Down => ("__shfl_down_sync", lane),
                    ShuffleKind::Up => ("__shfl_up_sync", lane),
                    ShuffleKind::Idx => ("__shfl_sync", format!("(int){lane}")),
                };
                let ct = c_type(t);
                let call = match t.size_bytes() {
                    2 => format!(
                        "(({ct})(kir_u16){f}(0xffffffffu, (kir_u32)(kir_u16)({v}), {lane}, {width}))"
                    ),
                    _ => format!("(({ct}){f}(0xffffffffu, {v}, {lane}, {width}))"),
                };
                let line = format!("{} = {call};", self.var(*dst));
                self.line(&line);
            }
            Stmt::Mma { shape, d, a, b, c } => self.mma(*shape, d, a, b, c),
            Stmt::LdMatrix {
                dst,
                shared,
                index,
                trans,
            } => self.ldmatrix(dst, *shared, index, *trans),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let line = format!("if ({}) {{", self.expr(cond).0);
                self.line(&line);
                self.nested(then);
                if !otherwise.is_empty() {
                    self.line("} else {");
                    self.nested(otherwise);
                }
                self.line("}");
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let v = self.var(*var);
                let next = Expr::Binary(
                    BinOp::Add,
                    Box::new(Expr::Var(*var)),
                    Box::new(step.clone()),
                );
                let line = format!(
                    "for ({v} = {}; {v} < {}; {v} = {}) {{",
                    self.expr(start).0,
                    self.expr(end).0,
                    self.expr(&next).0
                );
                self.line(&line);
                self.nested(body);
                self.line("}");
            }
            Stmt::While { cond, body } => {
                let line = format!("while ({}) {{", self.expr(cond).0);
                self.line(&line);
                self.nested(body);
                self.line("}");
            }
        }
    }

    /// `open`, then `inner` one level deeper, then `close` (if not empty).
    fn block(&mut self, open: &str, close: &str, inner: impl FnOnce(&mut Self)) {
        self.line(open);
        self.depth += 1;
        inner(self);
        self.depth -= 1;
        if !close.is_empty() {
            self.line(close);
        }
    }

    fn ldmatrix(&mut self, dst: &[crate::kir::Var], shared: SharedId, index: &Expr, trans: bool) {
        let space = Space::Shared(shared);
        let t = c_type(self.space_dtype(space));
        let addr = format!("&{}[{}]", self.space(space), self.expr(index).0);
        let d: Vec<String> = dst.iter().map(|v| self.var(*v)).collect();
        let n = d.len() / 2;
        let regs: Vec<String> = (0..n).map(|i| format!("%{i}")).collect();
        let outs: Vec<String> = (0..n).map(|i| format!("\"=r\"(kir_m[{i}])")).collect();
        let instr = format!(
            "ldmatrix.sync.aligned.m8n8.x{n}{}.shared.b16",
            if trans { ".trans" } else { "" }
        );
        self.block("{", "}", |p| {
            p.line(&format!("kir_u32 kir_m[{}];", n.max(1)));
            p.line(&format!(
                "asm volatile(\"{instr} {{{}}}, [%{n}];\" : {} : \"r\"((kir_u32)__cvta_generic_to_shared({addr})));",
                regs.join(", "),
                outs.join(", ")
            ));
            for (i, pair) in d.chunks(2).enumerate() {
                if let [lo, hi] = pair {
                    p.line(&format!("{lo} = ({t})(kir_m[{i}] & 0xffffu);"));
                    p.line(&format!("{hi} = ({t})(kir_m[{i}] >> 16);"));
                }
            }
        });
    }

    fn mma(&mut self, shape: MmaShape, d: &[crate::kir::Var], a: &[Expr], b: &[Expr], c: &[Expr]) {
        let a: Vec<(String, DType)> = a.iter().map(|e| self.expr(e)).collect();
        let b: Vec<String> = b.iter().map(|e| self.expr(e).0).collect();
        let c: Vec<String> = c.iter().map(|e| self.expr(e).0).collect();
        let d: Vec<String> = d.iter().map(|v| self.var(*v)).collect();
        let ab = a.first().map_or(DType::F16, |x| x.1);
        let a: Vec<String> = a.into_iter().map(|x| x.0).collect();
        let (instr, ra, rb) = match shape {
            MmaShape::M16N8K16 => {
                let ty = if ab == DType::BF16 { "bf16" } else { "f16" };
                let pack = |v: &[String]| -> Vec<String> {
                    v.chunks(2)
                        .map(|p| match p {
                            [lo, hi] => format!("kir_pack_h2({lo}, {hi})"),
                            [lo] => format!("kir_pack_h2({lo}, 0)"),
                            _ => "0u".to_string(),
                        })
                        .collect()
                };
                (
                    format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32"),
                    pack(&a),
                    pack(&b),
                )
            }
            MmaShape::M16N8K8Tf32 => {
                let tf = |v: &[String]| -> Vec<String> {
                    v.iter().map(|x| format!("kir_f32_to_tf32({x})")).collect()
                };
                (
                    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32".to_string(),
                    tf(&a),
                    tf(&b),
                )
            }
        };
        // Operand numbering: d, then a registers, b registers, c.
        let mut n = 0usize;
        let mut group = |len: usize| {
            let g: Vec<String> = (n..n + len).map(|i| format!("%{i}")).collect();
            n += len;
            format!("{{{}}}", g.join(", "))
        };
        let (gd, ga, gb, gc) = (
            group(d.len()),
            group(ra.len()),
            group(rb.len()),
            group(c.len()),
        );
        let outs: Vec<String> = (0..d.len())
            .map(|i| format!("\"=f\"(kir_d[{i}])"))
            .collect();
        let mut ins: Vec<String> = ra
            .iter()
            .chain(&rb)
            .map(|r| format!("\"r\"({r})"))
            .collect();
        ins.extend(c.iter().map(|x| format!("\"f\"({x})")));
        self.block("{", "}", |p| {
            p.line(&format!("kir_f32 kir_d[{}];", d.len().max(1)));
            p.line(&format!(
                "asm volatile(\"{instr} {gd}, {ga}, {gb}, {gc};\" : {} : {});",
                outs.join(", "),
                ins.join(", ")
            ));
            for (i, v) in d.iter().enumerate() {
                p.line(&format!("{v} = kir_d[{i}];"));
            }
        });
    }
}

/// An atomic read-modify-write at `ptr`, giving the old value as `t`.
fn atomic(op: AtomicOp, t: DType, ptr: &str, v: &str) -> String {
    let ct = c_type(t);
    let native = |f: &str| format!("(({ct}){f}(({ct}*)({ptr}), ({ct})({v})))");
    let as_u64 = |f: &str| format!("((kir_i64){f}((kir_u64*)({ptr}), (kir_u64)({v})))");
    match op {
        AtomicOp::Add => match t {
            DType::I64 => as_u64("atomicAdd"),
            _ => native("atomicAdd"),
        },
        AtomicOp::Min | AtomicOp::Max => {
            let name = if op == AtomicOp::Min { "Min" } else { "Max" };
            match t {
                DType::F32 | DType::F64 => format!(
                    "kir_atomic_{}_{}(({ct}*)({ptr}), {v})",
                    name.to_lowercase(),
                    t.short_name()
                ),
                DType::I64 => format!("((kir_i64)atomic{name}((long long*)({ptr}), (long long)({v})))"),
                _ => native(&format!("atomic{name}")),
            }
        }
        AtomicOp::Exch => match t {
            DType::F64 => format!(
                "__longlong_as_double((kir_i64)atomicExch((kir_u64*)({ptr}), (kir_u64)__double_as_longlong({v})))"
            ),
            DType::I64 => as_u64("atomicExch"),
            _ => native("atomicExch"),
        },
    }
}
