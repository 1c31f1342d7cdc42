//! `Ref` discharge (JAX's `discharge_state`), through nested control flow.
//!
//! Each `Ref` becomes an array variable; each write (`swap`, `addupdate`,
//! `store`, `atomic_rmw`, `atomic_cas`) gets one more output binding the
//! ref's updated value to a new variable, which later reads and writes
//! use. A `Ref` passed to `scan`, `while` or `cond` is discharged inside
//! the body too: refs the body writes become loop carries (or extra branch
//! results) so that the update flows out; refs only read stay constants.

use jaxon_ir::primitive::{
    CondParams, Control, GetParams, LoadParams, Pallas, ScanParams, State, StoreParams, SwapParams,
    WhileParams,
};
use jaxon_ir::primitive::{IndexEntry, IndexValue, Indexer};
use jaxon_ir::{Atom, Aval, Binder, ClosedJaxpr, IrError, Jaxpr, Primitive, Var};
use std::collections::HashMap;
use std::sync::Arc;

/// The cpu backend cannot compile `primitive` with its `Ref` operands used
/// as `what` says.
fn unsupported(primitive: &str, what: &str) -> IrError {
    IrError::unsupported("cpu", primitive, format!("{what} is not supported"))
}

/// Discharges the `Ref` arguments of a top-level jaxpr: each becomes an
/// array argument and the final value of every ref is appended to the
/// outputs, in argument order. `None` when the jaxpr has no `Ref`
/// arguments.
pub(crate) fn discharge_refs(closed: &ClosedJaxpr) -> Result<Option<ClosedJaxpr>, IrError> {
    let src = &*closed.jaxpr;
    let mut refs = Vec::new();
    for (i, v) in src.invars.iter().enumerate() {
        match src.try_aval(*v) {
            Some(Aval::Ref(_)) => refs.push(i),
            Some(Aval::Array(_)) => {}
            None => return Err(IrError::Invalid("invar out of range".into())),
        }
    }
    if refs.is_empty() {
        return Ok(None);
    }
    let (mut j, finals) = discharge(src, &refs)?;
    j.outvars.extend(finals);
    Ok(Some(ClosedJaxpr {
        jaxpr: Arc::new(j),
        consts: closed.consts.clone(),
    }))
}

/// The array type of a (possibly `Ref`) aval.
fn array_aval(a: &Aval) -> Aval {
    match a {
        Aval::Ref(r) => Aval::Array(r.inner.clone()),
        Aval::Array(a) => Aval::Array(a.clone()),
    }
}

/// Discharges the `Ref` invars at positions `refs`: the returned jaxpr has
/// the same invars (now arrays) and outvars; the second result is each
/// ref's final value.
fn discharge(src: &Jaxpr, refs: &[usize]) -> Result<(Jaxpr, Vec<Atom>), IrError> {
    let mut j: Jaxpr = src.clone();
    let mut ref_vars = Vec::with_capacity(refs.len());
    let mut cur: HashMap<Var, Var> = HashMap::new();
    for &i in refs {
        let r = *j
            .invars
            .get(i)
            .ok_or_else(|| IrError::Invalid("ref position out of range".into()))?;
        j.vars[r.index()] = array_aval(&j.vars[r.index()]);
        ref_vars.push(r);
        cur.insert(r, r);
    }
    // Results of whole-ref reads, bound to the ref's value (no copy).
    let mut alias: HashMap<Var, Var> = HashMap::new();
    let eqns = std::mem::take(&mut j.eqns);
    let mut out = Vec::with_capacity(eqns.len());
    for mut eqn in eqns {
        let written = match eqn.inputs.first() {
            Some(Atom::Var(r)) if writes_ref(&eqn.primitive) => cur.contains_key(r).then_some(*r),
            _ => None,
        };
        let ref_ops: Vec<(usize, Var)> = eqn
            .inputs
            .iter()
            .enumerate()
            .filter_map(|(k, a)| match a {
                Atom::Var(v) if cur.contains_key(v) => Some((k, *v)),
                _ => None,
            })
            .collect();
        let first_ref = match eqn.inputs.first() {
            Some(Atom::Var(r)) if cur.contains_key(r) => Some(*r),
            _ => None,
        };
        for a in &mut eqn.inputs {
            if let Atom::Var(v) = a {
                if let Some(n) = alias.get(v).or_else(|| cur.get(v)) {
                    *v = *n;
                }
            }
        }
        if let Some(r) = first_ref {
            if whole_ref_access(&j, &eqn, r, &mut cur, &mut alias) {
                continue;
            }
        }
        if let Some(r) = written {
            if let Primitive::Pallas(Pallas::Store(StoreParams { indexers, has_mask })) =
                &eqn.primitive
            {
                // The old values (JAX's `masked_swap` result) are an
                // unmasked Pallas `load` before the write: in-bounds lanes
                // read, masked or not, as the interpreter does.
                if let Some(Binder::Var(old)) = eqn.outputs.first() {
                    let n_idx = eqn.inputs.len() - 1 - usize::from(*has_mask);
                    out.push(jaxon_ir::Eqn {
                        primitive: Primitive::Pallas(Pallas::Load(LoadParams {
                            indexers: indexers.clone(),
                            has_mask: false,
                            has_other: false,
                        })),
                        inputs: eqn.inputs[..n_idx].to_vec(),
                        outputs: vec![Binder::Var(*old)],
                    });
                }
                eqn.outputs.clear();
            }
            let new = j.new_var(j.vars[r.index()].clone());
            eqn.outputs.push(Binder::Var(new));
            cur.insert(r, new);
        } else if !ref_ops.is_empty() {
            for (r, new) in nested(&mut j, &mut eqn, &ref_ops)? {
                cur.insert(r, new);
            }
        }
        out.push(eqn);
    }
    j.eqns = out;
    for a in &mut j.outvars {
        if let Atom::Var(v) = a {
            if let Some(n) = alias.get(v).or_else(|| cur.get(v)) {
                *v = *n;
            }
        }
    }
    let finals = ref_vars.iter().map(|r| Atom::Var(cur[r])).collect();
    Ok((j, finals))
}

/// Whether `p` writes the `Ref` that is its first operand.
fn writes_ref(p: &Primitive) -> bool {
    match p {
        Primitive::State(s) => match s {
            State::Swap(_) | State::AddUpdate(_) => true,
            State::Get(_) => false,
        },
        Primitive::Pallas(p) => match p {
            Pallas::Store(_) | Pallas::AtomicRmw(_) | Pallas::AtomicCas(_) => true,
            Pallas::Load(_)
            | Pallas::ProgramId(_)
            | Pallas::NumPrograms(_)
            | Pallas::PallasCall(_) => false,
        },
        // Refs passed to control flow are discharged in its bodies.
        Primitive::Control(_)
        | Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => false,
    }
}

/// Whether every indexer names the whole array of `shape`.
fn whole(indexers: &[Indexer], shape: &[jaxon_ir::Dim]) -> bool {
    indexers.iter().all(|ix| {
        ix.entries.len() <= shape.len()
            && ix.entries.iter().zip(shape).all(|(e, d)| match (e, d) {
                (
                    IndexEntry::Slice {
                        start: IndexValue::Static(0),
                        size,
                        stride: 1,
                    },
                    jaxon_ir::Dim::Const(n),
                ) => size == n,
                _ => false,
            })
    })
}

/// Rewrites an unmasked read or write of a whole ref (ref `r`, operand 0
/// of `eqn`, inputs already substituted) into variable bindings: a read
/// is the ref's current value, a write of a value of the ref's type makes
/// that value the ref's. True when the equation is gone.
fn whole_ref_access(
    j: &Jaxpr,
    eqn: &jaxon_ir::Eqn,
    r: Var,
    cur: &mut HashMap<Var, Var>,
    alias: &mut HashMap<Var, Var>,
) -> bool {
    let Some(Aval::Array(ra)) = j.try_aval(r) else {
        return false;
    };
    let now = cur[&r];
    match &eqn.primitive {
        Primitive::State(State::Get(GetParams { indexers }))
        | Primitive::Pallas(Pallas::Load(LoadParams {
            indexers,
            has_mask: false,
            has_other: false,
        })) if whole(indexers, &ra.shape) => {
            if let Some(Binder::Var(o)) = eqn.outputs.first() {
                alias.insert(*o, now);
            }
            true
        }
        Primitive::State(State::Swap(SwapParams { indexers }))
        | Primitive::Pallas(Pallas::Store(StoreParams {
            indexers,
            has_mask: false,
        })) if whole(indexers, &ra.shape) => {
            let Some(Atom::Var(v)) = eqn.inputs.get(1) else {
                return false;
            };
            let same = matches!(j.try_aval(*v), Some(Aval::Array(va))
                if va.shape == ra.shape && va.dtype == ra.dtype);
            if !same || eqn.inputs.len() != 2 {
                return false;
            }
            if let Some(Binder::Var(o)) = eqn.outputs.first() {
                alias.insert(*o, now);
            }
            cur.insert(r, *v);
            true
        }
        _ => false,
    }
}

/// Moves the elements at `pos` (sorted) of `xs[lo..hi]` to the end of
/// that range, keeping both groups in order.
fn move_to_end<T: Clone>(xs: &mut [T], lo: usize, hi: usize, pos: &[usize]) {
    type Part<T> = Vec<(usize, T)>;
    let (moved, kept): (Part<T>, Part<T>) = xs[lo..hi]
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| pos.contains(&(lo + i)));
    for (slot, (_, x)) in xs[lo..hi].iter_mut().zip(kept.into_iter().chain(moved)) {
        *slot = x;
    }
}

/// Discharges the refs passed (at operand positions `ref_ops`) to a control
/// flow equation; returns the new current variable of every written ref.
fn nested(
    j: &mut Jaxpr,
    eqn: &mut jaxon_ir::Eqn,
    ref_ops: &[(usize, Var)],
) -> Result<Vec<(Var, Var)>, IrError> {
    let name = eqn.primitive.name();
    let pos: Vec<usize> = ref_ops.iter().map(|(k, _)| *k).collect();
    let written_outs = |j: &mut Jaxpr, written: &[usize]| -> Vec<(Var, Var)> {
        written
            .iter()
            .map(|k| {
                let r = ref_ops.iter().find(|(p, _)| p == k).map(|(_, r)| *r);
                let r = r.unwrap_or(Var(0));
                (r, j.new_var(j.vars[r.index()].clone()))
            })
            .collect()
    };
    match &mut eqn.primitive {
        Primitive::Control(Control::Scan(ScanParams {
            jaxpr,
            num_consts,
            num_carry,
            linear,
            ..
        })) => {
            if pos.iter().any(|&k| k >= *num_consts) {
                return Err(unsupported(
                    name,
                    "a `Ref` carried or scanned over by `scan`",
                ));
            }
            let (mut body, finals) = discharge(&jaxpr.jaxpr, &pos)?;
            let written: Vec<usize> = pos
                .iter()
                .zip(&finals)
                .filter(|(k, f)| **f != Atom::Var(body.invars[**k]))
                .map(|(k, _)| *k)
                .collect();
            let w_finals: Vec<Atom> = pos
                .iter()
                .zip(&finals)
                .filter(|(k, _)| written.contains(k))
                .map(|(_, f)| *f)
                .collect();
            let nc = *num_consts;
            move_to_end(&mut body.invars, 0, nc, &written);
            let mut outs = w_finals;
            outs.append(&mut body.outvars);
            body.outvars = outs;
            move_to_end(&mut eqn.inputs, 0, nc, &written);
            if linear.len() == eqn.inputs.len() {
                move_to_end(linear, 0, nc, &written);
            }
            *num_consts -= written.len();
            *num_carry += written.len();
            *jaxpr = ClosedJaxpr {
                jaxpr: Arc::new(body),
                consts: jaxpr.consts.clone(),
            };
            let news = written_outs(j, &written);
            let mut outputs: Vec<Binder> = news.iter().map(|(_, n)| Binder::Var(*n)).collect();
            outputs.append(&mut eqn.outputs);
            eqn.outputs = outputs;
            Ok(news)
        }
        Primitive::Control(Control::While(WhileParams {
            cond_jaxpr,
            body_jaxpr,
            cond_nconsts,
            body_nconsts,
        })) => {
            let (cn, bn) = (*cond_nconsts, *body_nconsts);
            if pos.iter().any(|&k| k >= cn + bn) {
                return Err(unsupported(name, "a `Ref` carried by `while`"));
            }
            let cpos: Vec<usize> = pos.iter().copied().filter(|&k| k < cn).collect();
            let bpos: Vec<usize> = pos.iter().filter(|&&k| k >= cn).map(|k| k - cn).collect();
            let (mut body, finals) = discharge(&body_jaxpr.jaxpr, &bpos)?;
            let written: Vec<usize> = bpos
                .iter()
                .zip(&finals)
                .filter(|(k, f)| **f != Atom::Var(body.invars[**k]))
                .map(|(k, _)| *k)
                .collect();
            let w_refs: Vec<Var> = written
                .iter()
                .filter_map(|k| ref_ops.iter().find(|(p, _)| *p == k + cn).map(|(_, r)| *r))
                .collect();
            if cpos
                .iter()
                .any(|k| ref_ops.iter().any(|(p, r)| p == k && w_refs.contains(r)))
            {
                return Err(unsupported(
                    name,
                    "a `Ref` read by a `while` condition and written by its body",
                ));
            }
            let (mut cond, cfinals) = discharge(&cond_jaxpr.jaxpr, &cpos)?;
            if cpos
                .iter()
                .zip(&cfinals)
                .any(|(k, f)| *f != Atom::Var(cond.invars[*k]))
            {
                return Err(unsupported(name, "a `while` condition that writes a `Ref`"));
            }
            let w_finals: Vec<Atom> = bpos
                .iter()
                .zip(&finals)
                .filter(|(k, _)| written.contains(k))
                .map(|(_, f)| *f)
                .collect();
            move_to_end(&mut body.invars, 0, bn, &written);
            let mut outs = w_finals;
            outs.append(&mut body.outvars);
            body.outvars = outs;
            // The condition takes the new carries first; it ignores them.
            let extra: Vec<Var> = written
                .iter()
                .map(|k| {
                    let a = body.vars[body.invars
                        [bn - written.len() + written.iter().position(|w| w == k).unwrap_or(0)]
                    .index()]
                    .clone();
                    cond.new_var(a)
                })
                .collect();
            let tail = cond.invars.split_off(cn);
            cond.invars.extend(extra);
            cond.invars.extend(tail);
            let shifted: Vec<usize> = written.iter().map(|k| k + cn).collect();
            move_to_end(&mut eqn.inputs, cn, cn + bn, &shifted);
            *body_nconsts -= written.len();
            *body_jaxpr = ClosedJaxpr {
                jaxpr: Arc::new(body),
                consts: body_jaxpr.consts.clone(),
            };
            *cond_jaxpr = ClosedJaxpr {
                jaxpr: Arc::new(cond),
                consts: cond_jaxpr.consts.clone(),
            };
            let news = written_outs(j, &shifted);
            let mut outputs: Vec<Binder> = news.iter().map(|(_, n)| Binder::Var(*n)).collect();
            outputs.append(&mut eqn.outputs);
            eqn.outputs = outputs;
            Ok(news)
        }
        Primitive::Control(Control::Cond(CondParams { branches, .. })) => {
            if pos.contains(&0) {
                return Err(unsupported(name, "a `Ref` as the index of `cond`"));
            }
            let bpos: Vec<usize> = pos.iter().map(|k| k - 1).collect();
            let mut done = Vec::with_capacity(branches.len());
            let mut written: Vec<usize> = Vec::new();
            for b in branches.iter() {
                let (nb, finals) = discharge(&b.jaxpr, &bpos)?;
                for (k, f) in bpos.iter().zip(&finals) {
                    if *f != Atom::Var(nb.invars[*k]) && !written.contains(k) {
                        written.push(*k);
                    }
                }
                done.push((nb, finals));
            }
            written.sort_unstable();
            for (b, (mut nb, finals)) in branches.iter_mut().zip(done) {
                for (k, f) in bpos.iter().zip(finals) {
                    if written.contains(k) {
                        nb.outvars.push(f);
                    }
                }
                *b = ClosedJaxpr {
                    jaxpr: Arc::new(nb),
                    consts: b.consts.clone(),
                };
            }
            let shifted: Vec<usize> = written.iter().map(|k| k + 1).collect();
            let news = written_outs(j, &shifted);
            eqn.outputs
                .extend(news.iter().map(|(_, n)| Binder::Var(*n)));
            Ok(news)
        }
        // Reads of a ref by a state primitive need no rewrite.
        Primitive::State(State::Get(_)) | Primitive::Pallas(Pallas::Load(_)) => Ok(Vec::new()),
        // Writes of a ref through its first operand were discharged by the
        // caller; calls were inlined by `simplify`.
        Primitive::Control(
            Control::ForLoop(_)
            | Control::Jit(_)
            | Control::CustomJvpCall(_)
            | Control::CustomVjpCall(_)
            | Control::Remat(_)
            | Control::CustomLinearSolve(_)
            | Control::ShardMap(_),
        )
        | Primitive::State(State::Swap(_) | State::AddUpdate(_))
        | Primitive::Pallas(
            Pallas::Store(_)
            | Pallas::AtomicRmw(_)
            | Pallas::AtomicCas(_)
            | Pallas::ProgramId(_)
            | Pallas::NumPrograms(_)
            | Pallas::PallasCall(_),
        )
        | Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => Err(unsupported(
            name,
            "a `Ref` operand (only state primitives, `scan`, `while` and `cond` take refs)",
        )),
    }
}
