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
use jaxon_ir::shape::as_out_dim;
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
    /// Implicit (dimension) invars by the identity of the outer value they
    /// stand for: a captured value with that outer dimension promotes the
    /// invar to a constvar, so the capture and the arguments share it.
    /// The outer value is kept so a distinct tracer of the same outer
    /// variable (`dynshape::same_value`) finds the invar too.
    implicit_outer: HashMap<usize, (Var, Array)>,
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
    /// How many leading outvars are implicit (dimensions of the explicit
    /// results that are not inputs); 0 unless staged with
    /// [`StagingTrace::finish_expanded`].
    pub implicit_outs: usize,
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

    /// A new input of type `aval` whose dynamic dimensions (`Dim::Var`s, in
    /// order) are the inputs `dims` of this trace; the `Dim::Var`s of
    /// `aval` are replaced by those inputs' variables.
    pub fn new_arg_with_dims(
        &self,
        main: &Arc<MainTrace>,
        aval: Aval,
        dims: Vec<Array>,
    ) -> Result<Array> {
        let aval = self.with_dim_vars(aval, &dims)?;
        let mut b = self.builder();
        let v = b.new_var(aval.clone());
        b.invars.push(v);
        Ok(Array::new_tracer_with_dims(
            main.clone(),
            aval,
            Atom::Var(v),
            dims,
        ))
    }

    /// A new implicit input (a dimension) standing for the outer value
    /// `outer`: a captured value whose dimension is `outer` will share it.
    pub fn new_implicit_arg(&self, main: &Arc<MainTrace>, aval: Aval, outer: &Array) -> Array {
        let x = self.new_arg(main, aval);
        if let Ok(Atom::Var(v)) = StagingTrace::atom(&x) {
            self.builder()
                .implicit_outer
                .insert(outer.identity(), (v, outer.clone()));
        }
        x
    }

    /// Whether `x` (a tracer of this trace) is still an input: an implicit
    /// input promoted to a constvar is not.
    pub fn is_invar(&self, x: &Array) -> bool {
        match StagingTrace::atom(x) {
            Ok(Atom::Var(v)) => self.builder().invars.contains(&v),
            _ => false,
        }
    }

    /// `aval` with its `Dim::Var`s replaced, in order, by the variables of
    /// `dims` (tracers of this trace; a literal gives a static size).
    fn with_dim_vars(&self, mut aval: Aval, dims: &[Array]) -> Result<Aval> {
        let shape = match &mut aval {
            Aval::Array(a) => &mut a.shape,
            Aval::Ref(r) => &mut r.inner.shape,
        };
        let mut it = dims.iter();
        for d in shape.iter_mut() {
            if let Dim::Var(_) = d {
                let t = it.next().ok_or_else(|| {
                    Error::InvalidArgument("a dynamic dimension without its value".into())
                })?;
                *d = match StagingTrace::atom(t)? {
                    Atom::Var(v) => Dim::Var(v),
                    Atom::Lit(l) => Dim::Const(l.as_i64().unwrap_or(0).max(0) as usize),
                };
            }
        }
        Ok(aval)
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

    /// Ends staging with expanded results: the dimensions of `outs` that
    /// are not inputs become leading implicit outvars (once each, in order
    /// of first use), as seed 003's `f(sz) = ones((sz+1,))` returns
    /// `(b, c)`.
    pub fn finish_expanded(&self, main: &Arc<MainTrace>, outs: &[Array]) -> Result<Staged> {
        let raised = outs
            .iter()
            .map(|o| full_raise(main, o))
            .collect::<Result<Vec<_>>>()?;
        let invars = self.builder().invars.clone();
        let mut implicit: Vec<Array> = Vec::new();
        let mut seen: Vec<Atom> = Vec::new();
        for o in &raised {
            for d in o.as_tracer().map(|t| t.dim_tracers()).unwrap_or(&[]) {
                let a = StagingTrace::atom(d)?;
                let is_in = matches!(a, Atom::Var(v) if invars.contains(&v));
                if !is_in && matches!(a, Atom::Var(_)) && !seen.contains(&a) {
                    seen.push(a);
                    implicit.push(d.clone());
                }
            }
        }
        let n = implicit.len();
        implicit.extend(raised);
        let mut staged = self.finish(main, &implicit)?;
        staged.implicit_outs = n;
        Ok(staged)
    }

    /// The tracer of this trace for a dimension of a captured value: the
    /// implicit input standing for the same outer value (promoted to a
    /// constvar), or a lifted constant.
    fn lift_dim(&self, main: &Arc<MainTrace>, d: &Array) -> Result<Array> {
        if let Some(t) = d.as_tracer() {
            if Arc::ptr_eq(t.main(), main) {
                return Ok(d.clone());
            }
        }
        if let Some(t) = self.promote_implicit(main, d) {
            return Ok(t);
        }
        full_raise(main, d)
    }

    /// When `d` (an outer value) is what an implicit input stands for,
    /// promotes that input to a constvar bound to `d` and returns it.
    fn promote_implicit(&self, main: &Arc<MainTrace>, d: &Array) -> Option<Array> {
        let mut b = self.builder();
        if b.implicit_outer.is_empty() {
            return None;
        }
        // By identity, else the same outer variable through another tracer
        // (a staging trace's tracers for one variable need not be one
        // `Array`, e.g. a constvar lifted twice).
        let key = Some(d.identity())
            .filter(|k| b.implicit_outer.contains_key(k))
            .or_else(|| {
                b.implicit_outer
                    .iter()
                    .find(|(_, (_, o))| crate::dynshape::same_value(o, d))
                    .map(|(k, _)| *k)
            });
        // Through an enclosing staging trace: in a loop body nested in a
        // loop body, an implicit input stands for a tracer of the
        // enclosing body, which may itself stand for `d` (raising `d`
        // there is what binding this body's captures does anyway).
        let key = match key {
            Some(k) => Some(k),
            None => {
                let cands: Vec<(usize, Arc<MainTrace>, Array)> = b
                    .implicit_outer
                    .iter()
                    .filter_map(|(k, (_, o))| {
                        let m = o.as_tracer()?.main();
                        let between = !Arc::ptr_eq(m, main)
                            && m.level() < main.level()
                            && d.as_tracer().is_none_or(|t| t.main().level() < m.level())
                            && StagingTrace::of(m).is_some();
                        between.then(|| (*k, m.clone(), o.clone()))
                    })
                    .collect();
                drop(b);
                let hit = cands.into_iter().find_map(|(k, m, o)| {
                    let r = StagingTrace::of(&m)?.lift_dim(&m, d).ok()?;
                    crate::dynshape::same_value(&r, &o).then_some(k)
                });
                b = self.builder();
                hit
            }
        };
        let (v, o) = b.implicit_outer.remove(&key?)?;
        let p = b.invars.iter().position(|&w| w == v)?;
        b.invars.remove(p);
        // Bound to the value the input stands for (`d` or, through an
        // enclosing trace, its tracer there), so later captures of either
        // find the constvar.
        b.const_ids.insert(d.identity(), v);
        b.const_ids.insert(o.identity(), v);
        b.consts.push((v, o));
        let aval = b.vars[v.index()].clone();
        Some(Array::new_tracer(main.clone(), aval, Atom::Var(v)))
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
        // A key has no literal form: a constant key is a constvar.
        if x.as_tracer().is_none()
            && x.ty().shape.is_empty()
            && !x.ty().dtype.is_key()
            && matches!(aval, Aval::Array(_))
        {
            let host = x.try_to_host("staging a constant")?;
            return Ok(Array::new_tracer(
                main.clone(),
                aval,
                Atom::Lit(scalar_literal(&host)),
            ));
        }
        let outer_dims = x.as_tracer().map(|t| t.dim_tracers()).unwrap_or(&[]);
        let dims = outer_dims
            .iter()
            .map(|d| self.lift_dim(main, d))
            .collect::<Result<Vec<_>>>()?;
        let aval = self.with_dim_vars(aval, &dims)?;
        let mut b = self.builder();
        let id = x.identity();
        // A distinct tracer of an already captured outer scalar integer
        // (a possible dimension) reuses its constvar: dimensions must stay
        // one variable.
        let same = || {
            b.consts
                .iter()
                .find(|(_, c)| crate::dynshape::same_value(c, x))
                .map(|(v, _)| *v)
        };
        let found = b.const_ids.get(&id).copied().or_else(|| {
            if x.as_tracer().is_some() && x.ndim() == 0 && x.dtype().is_int() {
                same()
            } else {
                None
            }
        });
        let v = match found {
            Some(v) => v,
            None => {
                let v = b.new_var(aval.clone());
                b.consts.push((v, x.clone()));
                b.const_ids.insert(id, v);
                v
            }
        };
        let aval = b.vars[v.index()].clone();
        Ok(Array::new_tracer_with_dims(
            main.clone(),
            aval,
            Atom::Var(v),
            dims,
        ))
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
        let dynamic = out_avals
            .iter()
            .any(|a| a.shape().iter().any(|d| matches!(d, Dim::Var(_))));
        let mut b = self.builder();
        let vars: Vec<Var> = out_avals.iter().map(|a| b.new_var(a.clone())).collect();
        let outputs = vars.iter().map(|&v| Binder::Var(v)).collect();
        b.eqns.push(Box::new(Eqn {
            primitive: primitive.clone(),
            inputs: atoms,
            outputs,
        }));
        if !dynamic {
            return Ok(vars
                .iter()
                .zip(out_avals)
                .map(|(&v, aval)| Array::new_tracer(main.clone(), aval, Atom::Var(v)))
                .collect());
        }
        // Dynamic results: each `Dim::Var` names an operand, a dimension of
        // an operand, or (an `OutDBIdx`) another result of this equation.
        let mut known: Vec<(Var, Array)> = Vec::new();
        for a in args {
            if let Ok(Atom::Var(v)) = StagingTrace::atom(a) {
                known.push((v, a.clone()));
            }
            for d in a.as_tracer().map(|t| t.dim_tracers()).unwrap_or(&[]) {
                if let Ok(Atom::Var(v)) = StagingTrace::atom(d) {
                    known.push((v, d.clone()));
                }
            }
        }
        let mut results: Vec<Option<Array>> = vec![None; vars.len()];
        for pass in 0..2 {
            for (k, aval) in out_avals.iter().enumerate() {
                let has_out_dim = aval.shape().iter().any(|d| as_out_dim(*d).is_some());
                if results[k].is_some() || (pass == 0 && has_out_dim) {
                    continue;
                }
                let mut aval = aval.clone();
                let mut dims = Vec::new();
                let shape = match &mut aval {
                    Aval::Array(a) => &mut a.shape,
                    Aval::Ref(r) => &mut r.inner.shape,
                };
                for d in shape.iter_mut() {
                    let Dim::Var(w) = *d else { continue };
                    let t = match as_out_dim(*d) {
                        Some(j) => {
                            *d = Dim::Var(vars[j]);
                            results.get(j).cloned().flatten()
                        }
                        None => known.iter().find(|(v, _)| *v == w).map(|(_, t)| t.clone()),
                    };
                    dims.push(t.ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "{}: a result dimension has no value in the trace",
                            primitive.name()
                        ))
                    })?);
                }
                b.vars[vars[k].index()] = aval.clone();
                results[k] = Some(Array::new_tracer_with_dims(
                    main.clone(),
                    aval,
                    Atom::Var(vars[k]),
                    dims,
                ));
            }
        }
        if let Some(last) = b.eqns.last_mut() {
            for (o, &v) in last.outputs.iter_mut().zip(&vars) {
                *o = Binder::Var(v);
            }
        }
        Ok(results
            .into_iter()
            .map(|r| r.expect("every result is made"))
            .collect())
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
        Storage::C64(_) | Storage::C128(_) => {
            let z = host.data().get_c128(0);
            Scalar::Complex(z.re, z.im)
        }
        // Never reached from `lift` (keys stay constvars); the low word.
        Storage::Key(v) => Scalar::UInt(v[0][1] as u64),
    };
    Literal { value, dtype }
}

/// Whether an equation must be kept even when nothing reads its results.
fn has_effect(eqn: &Eqn, vars: &[Aval]) -> bool {
    let writes = eqn.primitive.writes_refs() || eqn.primitive.has_host_effect();
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
    for (v, _) in &b.consts {
        if live[v.index()] {
            mark_aval(&mut live, &b.vars[v.index()]);
        }
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
    Staged {
        jaxpr,
        consts,
        implicit_outs: 0,
    }
}
