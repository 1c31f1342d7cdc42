//! State and Pallas equations in JAX's arrow forms:
//! `d:i32[2] <- a[...]` (get), `f:i32[2], b[...] <- b[...], e` (swap),
//! `b[0] <- e` (swap whose result is `_`), `b[1:] += e` (addupdate),
//! `i:i32[2] <- a[:] mask=h other=0:i32[]` (Pallas load), and
//! `j:i32[2], b[c:c+2] <- b[c:c+2], i mask=h` (Pallas masked store).
//!
//! Operand layout of these equations: the ref, then the dynamic index
//! operands (`IndexValue::Dynamic(k)` / `IndexEntry::Array(k)` name operand
//! `k`), then the value, then the mask, then `other`.

use super::doc::DocId;
use super::Printer;
use crate::jaxpr::{Binder, Eqn, Jaxpr};
use crate::primitive::{
    AddUpdateParams, GetParams, LoadParams, Pallas, State, StoreParams, SwapParams,
};
use crate::primitive::{IndexEntry, IndexValue, Indexer, Primitive};

impl Printer {
    fn operand(&mut self, j: &Jaxpr, e: &Eqn, k: usize, typed: bool) -> String {
        match e.inputs.get(k) {
            Some(a) if typed => self.names.atom(j, a),
            Some(a) => self.names.atom_untyped(j, a),
            None => "?".to_string(),
        }
    }

    /// `ref[idx][idx2]`: the ref's name then each indexer (`[...]` if none).
    fn ref_transforms(&mut self, j: &Jaxpr, e: &Eqn, indexers: &[Indexer]) -> String {
        let mut s = self.operand(j, e, 0, true);
        if indexers.is_empty() {
            s.push_str("[...]");
            return s;
        }
        let mut dims: Vec<Option<usize>> = match e.inputs.first().and_then(|a| j.atom_aval(a)) {
            Some(a) => a.shape().iter().map(|d| d.as_const()).collect(),
            None => Vec::new(),
        };
        for ix in indexers {
            let mut parts = Vec::new();
            let mut next_dims = Vec::new();
            for (i, entry) in ix.entries.iter().enumerate() {
                let dim = dims.get(i).copied().flatten();
                parts.push(match entry {
                    IndexEntry::Slice { start, size, .. } => {
                        next_dims.push(Some(*size));
                        match start {
                            IndexValue::Dynamic(k) => {
                                let n = self.operand(j, e, *k, true);
                                format!("{n}:{n}+{size}")
                            }
                            IndexValue::Static(st) => {
                                let start_str = if *st == 0 {
                                    String::new()
                                } else {
                                    st.to_string()
                                };
                                let end = st + *size as i64;
                                let end_str = if Some(end) == dim.map(|d| d as i64) {
                                    String::new()
                                } else {
                                    end.to_string()
                                };
                                format!("{start_str}:{end_str}")
                            }
                        }
                    }
                    IndexEntry::Int(IndexValue::Static(v)) => v.to_string(),
                    IndexEntry::Int(IndexValue::Dynamic(k)) | IndexEntry::Array(k) => {
                        self.operand(j, e, *k, false)
                    }
                });
            }
            dims = next_dims;
            s.push('[');
            s.push_str(&parts.join(","));
            s.push(']');
        }
        s
    }

    fn one_binder(&mut self, j: &Jaxpr, b: &Binder) -> String {
        let n = self.names.binder(j, b);
        let ty = match j.binder_aval(b) {
            Some(a) => self.aval_str(j, &a.clone()),
            None => "?".to_string(),
        };
        format!("{n}:{ty}")
    }

    /// Whether a swap's result prints as `_` in JAX's context: a dropped
    /// output of the top-level jaxpr, or a variable named `_`.
    fn result_is_underscore(&self, j: &Jaxpr, b: &Binder) -> bool {
        match b {
            Binder::Drop(_) => self.is_top(j),
            Binder::Var(v) => self.names.get(j, *v) == Some("_"),
        }
    }

    /// The arrow form of a state/Pallas equation, or `None` for others.
    pub(crate) fn state_eqn(&mut self, j: &Jaxpr, e: &Eqn) -> Option<DocId> {
        let last = e.inputs.len().checked_sub(1)?;
        let text = match &e.primitive {
            Primitive::State(State::Get(GetParams { indexers })) => {
                let [y] = e.outputs.as_slice() else {
                    return None;
                };
                let lhs = self.one_binder(j, y);
                let x = self.ref_transforms(j, e, indexers);
                format!("{lhs} <- {x}")
            }
            Primitive::State(State::Swap(SwapParams { indexers })) => {
                let [y] = e.outputs.as_slice() else {
                    return None;
                };
                let x = self.ref_transforms(j, e, indexers);
                let val = self.operand(j, e, last, true);
                if self.result_is_underscore(j, y) {
                    format!("{x} <- {val}")
                } else {
                    let lhs = self.one_binder(j, y);
                    format!("{lhs}, {x} <- {x}, {val}")
                }
            }
            Primitive::State(State::AddUpdate(AddUpdateParams { indexers })) => {
                if !e.outputs.is_empty() {
                    return None;
                }
                let x = self.ref_transforms(j, e, indexers);
                let val = self.operand(j, e, last, true);
                format!("{x} += {val}")
            }
            Primitive::Pallas(Pallas::Load(LoadParams {
                indexers,
                has_mask,
                has_other,
            })) => {
                let [y] = e.outputs.as_slice() else {
                    return None;
                };
                let lhs = self.one_binder(j, y);
                let x = self.ref_transforms(j, e, indexers);
                let mut s = format!("{lhs} <- {x}");
                if *has_mask {
                    let k = last - usize::from(*has_other);
                    s.push_str(&format!(" mask={}", self.operand(j, e, k, true)));
                }
                if *has_other {
                    s.push_str(&format!(" other={}", self.operand(j, e, last, true)));
                }
                s
            }
            Primitive::Pallas(Pallas::Store(StoreParams { indexers, has_mask })) => {
                let x = self.ref_transforms(j, e, indexers);
                let val = self.operand(j, e, last - usize::from(*has_mask), true);
                let mask = if *has_mask {
                    format!(" mask={}", self.operand(j, e, last, true))
                } else {
                    String::new()
                };
                match e.outputs.as_slice() {
                    [y] if !self.result_is_underscore(j, y) => {
                        let lhs = self.one_binder(j, y);
                        format!("{lhs}, {x} <- {x}, {val}{mask}")
                    }
                    // JAX drops the mask in this form; we keep it so that
                    // the text parses back to the same equation.
                    _ => format!("{x} <- {val}{mask}"),
                }
            }
            _ => return None,
        };
        Some(self.d.text(text))
    }
}
