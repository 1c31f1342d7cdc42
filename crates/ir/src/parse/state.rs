//! The state and Pallas arrow forms: `y <- r[idx]`, `y, r[idx] <- r[idx], v`,
//! `r[idx] <- v mask=m`, `r[idx] += v`, with masks and `other` values.
//! This is equation syntax: the reader records what the arrow said in a
//! [`StateForm`], and `params_text::state` reads the params from it.
//!
//! Invariant: the equation inputs are, in order, the ref, the dynamic index
//! operands (left to right), the value, the mask, then `other`.

use super::lexer::Tok;
use super::syntax::{PResult, RawEqn, RawJaxpr, Reader, Scope};
use crate::aval::{Aval, Dim};
use crate::jaxpr::Atom;
use crate::primitive::{IndexEntry, IndexValue, Indexer};

/// Which arrow form an equation used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateKind {
    /// `y <- r[idx]` (a `load` when it has `mask=`/`other=`).
    Get,
    /// `y, r[idx] <- r[idx], v` (a masked `store` when it has `mask=`).
    Swap,
    /// `r[idx] += v`.
    AddUpdate,
}

/// What the arrow syntax of one equation said.
#[derive(Debug, Clone)]
pub(crate) struct StateForm {
    pub kind: StateKind,
    pub indexers: Vec<Indexer>,
    pub has_mask: bool,
    pub has_other: bool,
}

impl<'a> Reader<'a> {
    /// Reads an arrow form; `pre` holds the output binders already read.
    pub(crate) fn read_state_eqn(
        &mut self,
        jx: &mut RawJaxpr,
        scope: &mut Scope,
        pre: Vec<(&'a str, Aval)>,
        start: usize,
    ) -> PResult<()> {
        let mut lhs = None;
        if self.peek_kind() == Tok::Word && self.kind_at(1) == Tok::LBrack {
            // `r[idx]` on the left: a store/addupdate target, or repeated on
            // the right (swap).
            let (ins, idx) = self.read_ref_index(jx, scope)?;
            if self.peek_kind() == Tok::PlusEq {
                self.bump();
                let mut inputs = ins;
                inputs.push(self.read_atom(jx, scope)?);
                let outputs = self.bind_outputs(jx, scope, pre);
                jx.eqns.push(RawEqn {
                    name: "addupdate".into(),
                    pos: start,
                    params: Vec::new(),
                    inputs,
                    outputs,
                    state: Some(StateForm {
                        kind: StateKind::AddUpdate,
                        indexers: idx,
                        has_mask: false,
                        has_other: false,
                    }),
                });
                return Ok(());
            }
            lhs = Some((ins, idx));
        }
        self.expect(Tok::Arrow, "`<-`")?;
        let had_lhs = lhs.is_some();
        let mut pre = pre;
        let (mut inputs, indexers, kind) = match lhs {
            Some((mut ins, idx)) if pre.is_empty() => {
                // `r[idx] <- v`: a swap (or masked store) whose result is
                // dropped; the dropped binder takes the value's type.
                let v = self.read_atom(jx, scope)?;
                let aval = match v {
                    Atom::Var(x) => jx.vars.get(x.index()).cloned(),
                    Atom::Lit(l) => Some(Aval::Array(crate::aval::ShapedArray::scalar(l.dtype))),
                };
                if let Some(a) = aval {
                    pre.push(("_", a));
                }
                ins.push(v);
                (ins, idx, StateKind::Swap)
            }
            _ => {
                let (mut ins, idx) = self.read_ref_index(jx, scope)?;
                if self.peek_kind() == Tok::Comma {
                    self.bump();
                    ins.push(self.read_atom(jx, scope)?);
                    (ins, idx, StateKind::Swap)
                } else if had_lhs {
                    return Err(self.expected("`,` and the value to store"));
                } else {
                    (ins, idx, StateKind::Get)
                }
            }
        };
        let (has_mask, has_other) = self.read_mask_other(jx, scope, &mut inputs)?;
        let outputs = self.bind_outputs(jx, scope, pre);
        let name = match kind {
            StateKind::Get if has_mask || has_other => "load",
            StateKind::Get => "get",
            StateKind::Swap if has_mask => "store",
            StateKind::Swap => "swap",
            StateKind::AddUpdate => "addupdate",
        };
        jx.eqns.push(RawEqn {
            name: name.into(),
            pos: start,
            params: Vec::new(),
            inputs,
            outputs,
            state: Some(StateForm {
                kind,
                indexers,
                has_mask,
                has_other,
            }),
        });
        Ok(())
    }

    /// Reads the optional `mask=m other=o` suffix.
    fn read_mask_other(
        &mut self,
        jx: &mut RawJaxpr,
        scope: &mut Scope,
        inputs: &mut Vec<Atom>,
    ) -> PResult<(bool, bool)> {
        let mut has_mask = false;
        let mut has_other = false;
        if self.at_word("mask") && self.kind_at(1) == Tok::Eq {
            self.bump();
            self.bump();
            inputs.push(self.read_atom(jx, scope)?);
            has_mask = true;
        }
        if self.at_word("other") && self.kind_at(1) == Tok::Eq {
            self.bump();
            self.bump();
            inputs.push(self.read_atom(jx, scope)?);
            has_other = true;
        }
        Ok((has_mask, has_other))
    }

    /// Reads `r[idx][idx2]...`: returns (ref and dynamic index operands,
    /// indexers).
    fn read_ref_index(
        &mut self,
        jx: &mut RawJaxpr,
        scope: &mut Scope,
    ) -> PResult<(Vec<Atom>, Vec<Indexer>)> {
        let r = self.read_atom(jx, scope)?;
        let mut shape: Vec<usize> = match r {
            Atom::Var(v) => match jx.vars.get(v.index()) {
                Some(Aval::Ref(rf)) => rf
                    .inner
                    .shape
                    .iter()
                    .map(|d| match d {
                        Dim::Const(n) => *n,
                        Dim::Var(_) => 0,
                    })
                    .collect(),
                _ => return Err(self.expected_prev("a Ref variable")),
            },
            Atom::Lit(_) => return Err(self.expected_prev("a Ref variable")),
        };
        let mut inputs = vec![r];
        let mut indexers = Vec::new();
        while self.peek_kind() == Tok::LBrack {
            self.bump();
            if self.peek_kind() == Tok::Ellipsis {
                self.bump();
                self.expect(Tok::RBrack, "`]`")?;
                continue;
            }
            let mut entries = Vec::new();
            let mut new_shape = Vec::new();
            let mut dim = 0usize;
            loop {
                let full = shape.get(dim).copied().unwrap_or(0);
                let start = if self.peek_kind() == Tok::Colon {
                    IndexValue::Static(0)
                } else {
                    self.read_index_value(jx, scope, &mut inputs)?
                };
                if self.peek_kind() == Tok::Colon {
                    self.bump();
                    let size = match start {
                        IndexValue::Static(st) => {
                            let stop = if self.peek_kind() == Tok::Num {
                                self.read_static_int()?
                            } else {
                                full as i64
                            };
                            (stop - st).max(0) as usize
                        }
                        IndexValue::Dynamic(_) => {
                            // `x:x+n`
                            if self.peek_kind() == Tok::Word {
                                self.bump();
                            }
                            self.expect(Tok::Plus, "`+` in `start:start+size`")?;
                            self.read_static_int()?.max(0) as usize
                        }
                    };
                    let mut stride = 1usize;
                    if self.peek_kind() == Tok::Colon {
                        self.bump();
                        stride = self.read_static_int()?.max(1) as usize;
                    }
                    entries.push(IndexEntry::Slice {
                        start,
                        size,
                        stride,
                    });
                    new_shape.push(size);
                } else {
                    entries.push(IndexEntry::Int(start));
                }
                dim += 1;
                if self.peek_kind() == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
            self.expect(Tok::RBrack, "`,` or `]` in the index")?;
            while dim < shape.len() {
                let size = shape.get(dim).copied().unwrap_or(0);
                entries.push(IndexEntry::Slice {
                    start: IndexValue::Static(0),
                    size,
                    stride: 1,
                });
                new_shape.push(size);
                dim += 1;
            }
            shape = new_shape;
            indexers.push(Indexer { entries });
        }
        Ok((inputs, indexers))
    }

    fn read_static_int(&mut self) -> PResult<i64> {
        let t = self.peek();
        if t.kind == Tok::Num {
            if let Ok(v) = self.slice(t).parse::<i64>() {
                self.bump();
                return Ok(v);
            }
        }
        Err(self.expected("an integer"))
    }

    fn read_index_value(
        &mut self,
        jx: &mut RawJaxpr,
        scope: &mut Scope,
        inputs: &mut Vec<Atom>,
    ) -> PResult<IndexValue> {
        let t = self.peek();
        if t.kind == Tok::Num {
            if let Ok(v) = self.slice(t).parse::<i64>() {
                self.bump();
                return Ok(IndexValue::Static(v));
            }
        }
        let a = self.read_atom(jx, scope)?;
        inputs.push(a);
        Ok(IndexValue::Dynamic(inputs.len() - 1))
    }

    /// "expected X, found Y" pointing at the previous token.
    fn expected_prev(&self, what: &str) -> super::ParseError {
        let t = self.tok(self.pos.saturating_sub(1));
        self.err_at(
            t.start,
            format!("expected {what}, found {}", self.describe(t)),
        )
    }
}
