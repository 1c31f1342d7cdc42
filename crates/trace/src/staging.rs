//! `StagingTrace` (JAX's `DynamicJaxprTrace`): records every primitive it
//! sees as an equation, building a jaxpr.
//!
//! - Arguments are invars; a tracer's payload is the `Atom` it stands for.
//! - A concrete scalar from below becomes a literal; any other value from
//!   below (a concrete array, a tracer of a lower level or of a suspended
//!   stack) becomes a constvar, once per distinct value. [`Staged::consts`]
//!   keeps those values so callers can close the jaxpr or hoist them to
//!   operands of a control-flow equation.
//! - [`StagingTrace::finish`] removes dead equations (those without effects
//!   whose results nobody reads), marks unread results of kept equations as
//!   dropped (`_`), and renumbers variables densely in binding order.

use crate::array::Array;
use crate::core::{full_raise, MainTrace, Trace};
use crate::error::{Error, Result};
use hashbrown::HashMap;
use jaxon_ir::{
    abstract_eval, Atom, Aval, Binder, Dim, Eqn, HostArray, Jaxpr, Literal, Primitive, Scalar,
    Storage, Var,
};
use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

/// The staging trace: a jaxpr under construction.
#[derive(Default)]
pub struct StagingTrace {
    builder: Mutex<Builder>,
}

#[derive(Default)]
struct Builder {
    vars: Vec<Aval>,
    invars: Vec<Var>,
    /// Boxed so the list grows by moving pointers, not 360-byte equations
    /// (a flat list of 1000 equations is mmapped and page-faulted afresh by
    /// every trace).
    #[allow(clippy::vec_box)]
    eqns: Vec<Box<Eqn>>,
    consts: Vec<(Var, Array)>,
    const_ids: HashMap<usize, Var>,
}

impl Builder {
    fn new_var(&mut self, aval: Aval) -> Var {
        self.vars.push(aval);
        Var((self.vars.len() - 1) as u32)
    }
}

/// A finished staging: the jaxpr and the values of its constvars, in order.
#[derive(Debug)]
pub struct Staged {
    /// The jaxpr; `constvars[i]` stands for `consts[i]`.
    pub jaxpr: Jaxpr,
    /// The captured values: concrete arrays or tracers of outer traces.
    pub consts: Vec<Array>,
}

impl StagingTrace {
    /// A fresh, empty staging trace.
    pub fn new() -> StagingTrace {
        StagingTrace::default()
    }

    /// The staging trace of `main`, if `main` is one.
    pub fn of(main: &MainTrace) -> Option<&StagingTrace> {
        main.trace().as_any().downcast_ref()
    }

    fn builder(&self) -> MutexGuard<'_, Builder> {
        self.builder.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new input of type `aval`.
    pub fn new_arg(&self, main: &Arc<MainTrace>, aval: Aval) -> Array {
        let mut b = self.builder();
        let v = b.new_var(aval.clone());
        b.invars.push(v);
        Array::new_tracer(main.clone(), aval, Atom::Var(v))
    }

    /// The atom a tracer of this trace stands for.
    fn atom(x: &Array) -> Result<Atom> {
        x.as_tracer()
            .and_then(|t| t.payload::<Atom>())
            .copied()
            .ok_or_else(|| Error::UnexpectedTracer("not a tracer of this staging trace".into()))
    }

    /// Ends staging: `outs` become the outvars.
    pub fn finish(&self, main: &Arc<MainTrace>, outs: &[Array]) -> Result<Staged> {
        let outvars = outs
            .iter()
            .map(|o| full_raise(main, o).and_then(|t| StagingTrace::atom(&t)))
            .collect::<Result<Vec<_>>>()?;
        let b = std::mem::take(&mut *self.builder());
        Ok(assemble(b, outvars))
    }
}

impl Trace for StagingTrace {
    fn name(&self) -> &'static str {
        "staging"
    }

    fn lift(&self, main: &Arc<MainTrace>, x: &Array) -> Result<Array> {
        let aval = x.aval().clone();
        if let Some(lit) = x.known_scalar() {
            return Ok(Array::new_tracer(main.clone(), aval, Atom::Lit(lit)));
        }
        if x.as_tracer().is_none() && x.ty().shape.is_empty() && matches!(aval, Aval::Array(_)) {
            let host = x.try_to_host("staging a constant")?;
            return Ok(Array::new_tracer(
                main.clone(),
                aval,
                Atom::Lit(scalar_literal(&host)),
            ));
        }
        let mut b = self.builder();
        let id = x.identity();
        let v = match b.const_ids.get(&id) {
            Some(&v) => v,
            None => {
                let v = b.new_var(aval.clone());
                b.consts.push((v, x.clone()));
                b.const_ids.insert(id, v);
                v
            }
        };
        Ok(Array::new_tracer(main.clone(), aval, Atom::Var(v)))
    }

    fn process_primitive(
        &self,
        main: &Arc<MainTrace>,
        primitive: &Primitive,
        args: &[Array],
    ) -> Result<Vec<Array>> {
        let atoms = args
            .iter()
            .map(StagingTrace::atom)
            .collect::<Result<Vec<_>>>()?;
        let avals: Vec<Aval> = args.iter().map(|a| a.aval().clone()).collect();
        let out_avals = abstract_eval(primitive, &avals, &atoms)?;
        let mut b = self.builder();
        let mut outputs = Vec::with_capacity(out_avals.len());
        let mut results = Vec::with_capacity(out_avals.len());
        for aval in out_avals {
            let v = b.new_var(aval.clone());
            outputs.push(Binder::Var(v));
            results.push(Array::new_tracer(main.clone(), aval, Atom::Var(v)));
        }
        b.eqns.push(Box::new(Eqn {
            primitive: primitive.clone(),
            inputs: atoms,
            outputs,
        }));
        Ok(results)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The literal holding a host scalar's value exactly.
pub fn scalar_literal(host: &HostArray) -> Literal {
    let dtype = host.dtype();
    let value = match host.data() {
        Storage::Bool(v) => Scalar::Bool(v[0]),
        Storage::I8(_) | Storage::I16(_) | Storage::I32(_) | Storage::I64(_) => {
            Scalar::Int(host.data().get_i64(0))
        }
        Storage::U8(v) => Scalar::UInt(v[0] as u64),
        Storage::U16(v) => Scalar::UInt(v[0] as u64),
        Storage::U32(v) => Scalar::UInt(v[0] as u64),
        Storage::U64(v) => Scalar::UInt(v[0]),
        Storage::F16(_) | Storage::BF16(_) | Storage::F32(_) | Storage::F64(_) => {
            Scalar::Float(host.data().get_f64(0))
        }
    };
    Literal { value, dtype }
}

/// Whether an equation must be kept even when nothing reads its results.
fn has_effect(eqn: &Eqn, vars: &[Aval]) -> bool {
    let writes = eqn.primitive.writes_refs();
    // A higher-order equation handed a `Ref` may write through it.
    writes
        || eqn.inputs.iter().any(|a| match a {
            Atom::Var(v) => matches!(vars[v.index()], Aval::Ref(_)),
            Atom::Lit(_) => false,
        })
}

fn mark_aval(live: &mut [bool], aval: &Aval) {
    for d in &aval.array().shape {
        if let Dim::Var(v) = d {
            live[v.index()] = true;
        }
    }
}

/// DCE, dropped outputs and dense renumbering.
fn assemble(b: Builder, outvars: Vec<Atom>) -> Staged {
    let n = b.vars.len();
    let mut live = vec![false; n];
    for a in &outvars {
        if let Atom::Var(v) = a {
            live[v.index()] = true;
        }
    }
    let mut keep = vec![false; b.eqns.len()];
    for (i, eqn) in b.eqns.iter().enumerate().rev() {
        let used = eqn.outputs.iter().any(|o| match o {
            Binder::Var(v) => live[v.index()],
            Binder::Drop(_) => false,
        });
        if used || has_effect(eqn, &b.vars) {
            keep[i] = true;
            for a in &eqn.inputs {
                if let Atom::Var(v) = a {
                    live[v.index()] = true;
                }
            }
            for o in &eqn.outputs {
                if let Binder::Var(v) = o {
                    mark_aval(&mut live, &b.vars[v.index()]);
                }
            }
        }
    }
    for &v in &b.invars {
        mark_aval(&mut live, &b.vars[v.index()]);
    }

    // Renumber in binding order: constvars, invars, equation outputs.
    let mut map: Vec<Option<Var>> = vec![None; n];
    let mut jaxpr = Jaxpr::new();
    let bind = |jaxpr: &mut Jaxpr, map: &mut Vec<Option<Var>>, v: Var| {
        let nv = Var(jaxpr.vars.len() as u32);
        jaxpr.vars.push(Aval::Array(jaxon_ir::ShapedArray::scalar(
            jaxon_ir::DType::Bool,
        )));
        map[v.index()] = Some(nv);
        nv
    };
    let mut consts = Vec::new();
    for (v, value) in &b.consts {
        if live[v.index()] {
            let nv = bind(&mut jaxpr, &mut map, *v);
            jaxpr.constvars.push(nv);
            consts.push(value.clone());
        }
    }
    for &v in &b.invars {
        let nv = bind(&mut jaxpr, &mut map, v);
        jaxpr.invars.push(nv);
    }
    let mut eqns = Vec::with_capacity(keep.iter().filter(|k| **k).count());
    for (eqn, kept) in b.eqns.into_iter().zip(keep) {
        let eqn = *eqn;
        if !kept {
            continue;
        }
        let outputs = eqn
            .outputs
            .into_iter()
            .map(|o| match o {
                Binder::Var(v) if live[v.index()] => Binder::Var(bind(&mut jaxpr, &mut map, v)),
                Binder::Var(v) => Binder::Drop(b.vars[v.index()].clone()),
                d @ Binder::Drop(_) => d,
            })
            .collect();
        eqns.push(Eqn {
            primitive: eqn.primitive,
            inputs: eqn.inputs,
            outputs,
        });
    }
    let rename_atom = |a: Atom, map: &[Option<Var>]| match a {
        Atom::Var(v) => Atom::Var(map[v.index()].expect("live var is bound")),
        lit => lit,
    };
    let rename_aval = |aval: &Aval, map: &[Option<Var>]| {
        let mut aval = aval.clone();
        let shape = match &mut aval {
            Aval::Array(a) => &mut a.shape,
            Aval::Ref(r) => &mut r.inner.shape,
        };
        for d in shape.iter_mut() {
            if let Dim::Var(v) = d {
                *d = Dim::Var(map[v.index()].expect("live dim var is bound"));
            }
        }
        aval
    };
    for eqn in &mut eqns {
        for a in &mut eqn.inputs {
            *a = rename_atom(*a, &map);
        }
        for o in &mut eqn.outputs {
            if let Binder::Drop(aval) = o {
                *aval = rename_aval(aval, &map);
            }
        }
    }
    for (old, new) in map.iter().enumerate() {
        if let Some(nv) = new {
            jaxpr.vars[nv.index()] = rename_aval(&b.vars[old], &map);
        }
    }
    jaxpr.eqns = eqns;
    jaxpr.outvars = outvars.into_iter().map(|a| rename_atom(a, &map)).collect();
    Staged { jaxpr, consts }
}
