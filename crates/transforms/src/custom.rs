//! `custom_jvp` and `custom_vjp`: functions with user-supplied derivative
//! rules.
//!
//! Outside any transformation they just call the function. Under another
//! trace they bind `custom_jvp_call` / `custom_vjp_call` (printed as JAX
//! prints them); the rules live in a process-wide registry keyed by the
//! printed `jvp=` / `fwd=` name, so a staged equation is differentiated
//! with the user's rule however late that happens. An equation whose name
//! is not registered (parsed from JAX's text) is differentiated through its
//! `call_jaxpr`.
//!
//! Reverse mode of a `custom_vjp` function: its jvp runs `fwd` on the
//! primals and emits a linear `custom_vjp_call` named `custom_lin[..]`
//! whose operands are `(residuals, primals, tangents)`. Its `call_jaxpr`
//! is the true jvp of the primal function (so forward evaluation works),
//! and its transpose calls the user's `bwd` on the residuals.

use crate::jvp::jvp_flat;
use crate::transpose::LinArg;
use crate::util::{has_tangent, zeros_like};
use jaxon_ir::primitive::{Control, CustomJvpCallParams, CustomVjpCallParams};
use jaxon_ir::{Aval, ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{catch, Error, Result};
use jaxon_trace::eval::EvalTrace;
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{bind, Array};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A jvp rule: `(primals, tangents) -> (primal outputs, output tangents)`.
/// `tangents` has one entry per argument; non-differentiated arguments
/// (`nondiff_argnums`, integer inputs) get zeros.
pub type JvpRule = dyn Fn(&[Array], &[Array]) -> (Vec<Array>, Vec<Array>) + Send + Sync;
/// A forward rule: `primals -> (outputs, residuals)`.
pub type FwdRule = dyn Fn(&[Array]) -> (Vec<Array>, Vec<Array>) + Send + Sync;
/// A backward rule: `(residuals, output cotangents) -> input cotangents`
/// (one per argument; entries for integer arguments are ignored).
pub type BwdRule = dyn Fn(&[Array], &[Array]) -> Vec<Array> + Send + Sync;

#[derive(Clone)]
enum Rule {
    Jvp {
        rule: Arc<JvpRule>,
        nondiff: Vec<usize>,
    },
    Vjp {
        fwd: Arc<FwdRule>,
        bwd: Arc<BwdRule>,
    },
}

fn registry() -> &'static Mutex<HashMap<String, Rule>> {
    static R: OnceLock<Mutex<HashMap<String, Rule>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// Registers `rule` under `base`, or `base_1`, `base_2`, ... when that
/// name is taken (printed names are the only key an equation carries).
fn register(base: &str, rule: Rule) -> String {
    let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
    let mut name = base.to_string();
    let mut i = 0;
    while r.contains_key(&name) {
        i += 1;
        name = format!("{base}_{i}");
    }
    r.insert(name.clone(), rule);
    name
}

fn lookup(name: &str) -> Option<Rule> {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .cloned()
}

type Flat = dyn Fn(&[Array]) -> Vec<Array> + Send + Sync;

/// Whether the operands would be evaluated right away (no trace above
/// the base evaluation).
fn is_eager(args: &[Array]) -> Result<bool> {
    Ok(find_top_trace(args)?.trace().as_any().is::<EvalTrace>())
}

/// Traces `f` on the dynamic staging trace; returns the jaxpr, whose
/// leading invars stand for the closed-over values, and those values (the
/// `num_consts` leading operands).
fn trace_call(f: &Flat, args: &[Array]) -> Result<(ClosedJaxpr, Vec<Array>)> {
    let avals: Vec<Aval> = args.iter().map(|a| a.aval().clone()).collect();
    let staged = trace_flat(StageMode::Dynamic, &avals, |ins| catch(|| f(&ins)))?;
    let (jaxpr, consts) = open(staged.jaxpr, staged.consts);
    Ok((
        ClosedJaxpr {
            jaxpr: Arc::new(jaxpr),
            consts: Arc::from(Vec::new()),
        },
        consts,
    ))
}

/// Turns constvars into leading invars.
pub(crate) fn open(mut j: Jaxpr, consts: Vec<Array>) -> (Jaxpr, Vec<Array>) {
    let mut invars = std::mem::take(&mut j.constvars);
    invars.append(&mut j.invars);
    j.invars = invars;
    (j, consts)
}

fn short_type_name<F>() -> String {
    std::any::type_name::<F>()
        .split("::")
        .filter(|s| !s.starts_with('{'))
        .last()
        .unwrap_or("f")
        .to_string()
}

/// A function with a custom jvp rule: see [`custom_jvp`].
#[derive(Clone)]
pub struct CustomJvp {
    f: Arc<Flat>,
    name: String,
    jvp_name: Option<String>,
    nondiff: Vec<usize>,
    rule: Option<Arc<JvpRule>>,
    key: OnceLock<String>,
}

/// `custom_jvp(f)`: `f` with a jvp rule given by [`CustomJvp::defjvp`].
///
/// ```ignore
/// let f = custom_jvp(|x: &[Array]| vec![x[0].sin()])
///     .name("f")
///     .defjvp(|p, t| (vec![p[0].sin()], vec![p[0].cos() * &t[0]]));
/// let y = f.call(&[x])?;
/// ```
pub fn custom_jvp<F>(f: F) -> CustomJvp
where
    F: Fn(&[Array]) -> Vec<Array> + Send + Sync + 'static,
{
    CustomJvp {
        name: short_type_name::<F>(),
        f: Arc::new(f),
        jvp_name: None,
        nondiff: Vec::new(),
        rule: None,
        key: OnceLock::new(),
    }
}

impl CustomJvp {
    /// The printed `name=` (JAX prints the Python function's name).
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// The printed `jvp=` (default `<name>_jvp`; made unique if taken).
    pub fn jvp_name(mut self, name: &str) -> Self {
        self.jvp_name = Some(name.to_string());
        self
    }

    /// Arguments that are not differentiated: the rule sees zero tangents
    /// for them and their tangents are dropped.
    pub fn nondiff_argnums(mut self, argnums: &[usize]) -> Self {
        self.nondiff = argnums.to_vec();
        self
    }

    /// Sets the jvp rule.
    pub fn defjvp<R>(mut self, rule: R) -> Self
    where
        R: Fn(&[Array], &[Array]) -> (Vec<Array>, Vec<Array>) + Send + Sync + 'static,
    {
        self.rule = Some(Arc::new(rule));
        self
    }

    fn key(&self) -> Result<&str> {
        let rule = self.rule.clone().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "custom_jvp `{}`: no jvp rule; call defjvp first",
                self.name
            ))
        })?;
        Ok(self.key.get_or_init(|| {
            let base = self
                .jvp_name
                .clone()
                .unwrap_or_else(|| format!("{}_jvp", self.name));
            register(
                &base,
                Rule::Jvp {
                    rule,
                    nondiff: self.nondiff.clone(),
                },
            )
        }))
    }

    /// Calls the function: directly when nothing traces the arguments,
    /// else as a `custom_jvp_call` equation.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        let key = self.key()?.to_string();
        if is_eager(args)? {
            return catch(|| (self.f)(args));
        }
        let (call_jaxpr, consts) = trace_call(&*self.f, args)?;
        let p = Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
            name: self.name.clone(),
            call_jaxpr,
            jvp: key,
            num_consts: consts.len(),
            symbolic_zeros: false,
        }));
        let mut operands = consts;
        operands.extend_from_slice(args);
        bind(&p, &operands)
    }
}

/// A function with custom forward and backward rules: see [`custom_vjp`].
#[derive(Clone)]
pub struct CustomVjp {
    f: Arc<Flat>,
    name: String,
    rules: Option<(Arc<FwdRule>, Arc<BwdRule>)>,
    key: OnceLock<(String, String)>,
}

/// `custom_vjp(f)`: `f` with reverse-mode rules given by
/// [`CustomVjp::defvjp`].
pub fn custom_vjp<F>(f: F) -> CustomVjp
where
    F: Fn(&[Array]) -> Vec<Array> + Send + Sync + 'static,
{
    CustomVjp {
        name: short_type_name::<F>(),
        f: Arc::new(f),
        rules: None,
        key: OnceLock::new(),
    }
}

impl CustomVjp {
    /// The printed `name=`; the rules print as `<name>_fwd` / `<name>_bwd`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Sets the forward rule (outputs and residuals) and the backward rule
    /// (residuals and output cotangents to input cotangents).
    pub fn defvjp<Fw, Bw>(mut self, fwd: Fw, bwd: Bw) -> Self
    where
        Fw: Fn(&[Array]) -> (Vec<Array>, Vec<Array>) + Send + Sync + 'static,
        Bw: Fn(&[Array], &[Array]) -> Vec<Array> + Send + Sync + 'static,
    {
        self.rules = Some((Arc::new(fwd), Arc::new(bwd)));
        self
    }

    fn key(&self) -> Result<&(String, String)> {
        let (fwd, bwd) = self.rules.clone().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "custom_vjp `{}`: no rules; call defvjp first",
                self.name
            ))
        })?;
        Ok(self.key.get_or_init(|| {
            let f = register(&format!("{}_fwd", self.name), Rule::Vjp { fwd, bwd });
            let b = format!("{}_bwd{}", self.name, &f[self.name.len() + 4..]);
            (f, b)
        }))
    }

    /// Calls the function: directly when nothing traces the arguments,
    /// else as a `custom_vjp_call` equation.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        let (fwd, bwd) = self.key()?.clone();
        if is_eager(args)? {
            return catch(|| (self.f)(args));
        }
        let (call_jaxpr, consts) = trace_call(&*self.f, args)?;
        let p = Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
            name: self.name.clone(),
            call_jaxpr,
            fwd,
            bwd,
            num_consts: consts.len(),
            symbolic_zeros: false,
        }));
        let mut operands = consts;
        operands.extend_from_slice(args);
        bind(&p, &operands)
    }
}

type Outs = (Vec<Array>, Vec<Option<Array>>);

const LIN_PREFIX: &str = "custom_lin";

fn check_outs(what: &str, call_jaxpr: &ClosedJaxpr, outs: &[Array]) -> Result<()> {
    let j = &call_jaxpr.jaxpr;
    if outs.len() != j.outvars.len() {
        return Err(Error::InvalidArgument(format!(
            "{what}: the rule returned {} outputs where the function has {}",
            outs.len(),
            j.outvars.len()
        )));
    }
    for (o, a) in outs.iter().zip(&j.outvars) {
        let want = j
            .atom_aval(a)
            .ok_or_else(|| Error::InvalidArgument("unbound outvar".into()))?;
        if o.ty().shape != want.array().shape {
            return Err(Error::ShapeMismatch {
                op: format!("{what} (rule output vs function output)"),
                lhs: jaxon_ir::shape::fmt_aval(o.aval()),
                rhs: jaxon_ir::shape::fmt_aval(&want),
            });
        }
    }
    Ok(())
}

/// The jvp of a `custom_jvp_call` equation: the registered rule, or the
/// derivative of `call_jaxpr` when none is registered.
pub(crate) fn jvp_custom_jvp_call(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
        call_jaxpr,
        jvp,
        num_consts,
        ..
    })) = p
    else {
        return Err(Error::InvalidArgument("expected custom_jvp_call".into()));
    };
    let Some(Rule::Jvp { rule, nondiff }) = lookup(jvp) else {
        return inline_jvp(call_jaxpr, x, t);
    };
    let primals = &x[*num_consts..];
    let tangents = primals
        .iter()
        .zip(&t[*num_consts..])
        .enumerate()
        .map(|(i, (p, t))| match t {
            Some(t) if !nondiff.contains(&i) => Ok(t.clone()),
            _ => zeros_like(p),
        })
        .collect::<Result<Vec<_>>>()?;
    let (po, to) = catch(|| rule(primals, &tangents))?;
    check_outs("custom_jvp", call_jaxpr, &po)?;
    check_outs("custom_jvp (tangents)", call_jaxpr, &to)?;
    Ok((po, to.into_iter().map(Some).collect()))
}

/// The jvp of a `custom_vjp_call`: `fwd` on the primals and a linear
/// `custom_lin` equation for the tangents (see the module doc).
pub(crate) fn jvp_custom_vjp_call(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
        name,
        call_jaxpr,
        fwd,
        bwd,
        num_consts,
        ..
    })) = p
    else {
        return Err(Error::InvalidArgument("expected custom_vjp_call".into()));
    };
    let rule = if name.starts_with(LIN_PREFIX) {
        None
    } else {
        lookup(fwd)
    };
    let Some(Rule::Vjp { fwd: fwd_rule, .. }) = rule else {
        return inline_jvp(call_jaxpr, x, t);
    };
    let primals = &x[*num_consts..];
    let (po, res) = catch(|| fwd_rule(primals))?;
    check_outs("custom_vjp fwd", call_jaxpr, &po)?;
    // The linear map's forward form: the jvp of the primal function.
    let float: Vec<bool> = primals.iter().map(|p| has_tangent(p.dtype())).collect();
    let mut avals: Vec<Aval> = res.iter().map(|r| r.aval().clone()).collect();
    avals.extend(primals.iter().map(|p| p.aval().clone()));
    avals.extend(
        primals
            .iter()
            .filter(|p| has_tangent(p.dtype()))
            .map(|p| p.aval().clone()),
    );
    let (nres, nargs) = (res.len(), primals.len());
    let consts: Vec<Array> = x[..*num_consts].to_vec();
    let body = trace_flat(StageMode::Base, &avals, |args| {
        let ps = &args[nres..nres + nargs];
        let mut it = args[nres + nargs..].iter().cloned();
        let mut ins = consts.clone();
        ins.extend_from_slice(ps);
        let mut ts: Vec<Option<Array>> = vec![None; consts.len()];
        ts.extend(float.iter().map(|f| if *f { it.next() } else { None }));
        let (pout, tout) = jvp_flat(|i| eval_closed_jaxpr(call_jaxpr, &i), &ins, &ts)?;
        pout.iter()
            .zip(tout)
            .map(|(p, t)| t.map_or_else(|| zeros_like(p), Ok))
            .collect()
    })?;
    let (jaxpr, body_consts) = open(body.jaxpr, body.consts);
    let lin = Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
        name: format!("{LIN_PREFIX}[{nres},{nargs}]({name})"),
        call_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(jaxpr),
            consts: Arc::from(Vec::new()),
        },
        fwd: fwd.clone(),
        bwd: bwd.clone(),
        num_consts: body_consts.len(),
        symbolic_zeros: false,
    }));
    let mut operands = body_consts;
    operands.extend(res);
    operands.extend_from_slice(primals);
    for (p, ti) in primals.iter().zip(&t[*num_consts..]) {
        if has_tangent(p.dtype()) {
            operands.push(match ti {
                Some(ti) => ti.clone(),
                None => zeros_like(p)?,
            });
        }
    }
    let touts = bind(&lin, &operands)?;
    Ok((po, touts.into_iter().map(Some).collect()))
}

fn parse_lin_name(name: &str) -> Option<(usize, usize)> {
    let rest = name.strip_prefix(LIN_PREFIX)?.strip_prefix('[')?;
    let (nums, _) = rest.split_once(']')?;
    let (a, b) = nums.split_once(',')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The transpose of a `custom_lin` equation: the user's `bwd` on the
/// residuals.
pub(crate) fn transpose_custom_vjp_call(
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Vec<Option<Array>>> {
    let Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
        name,
        call_jaxpr,
        fwd,
        num_consts,
        ..
    })) = p
    else {
        return Err(Error::InvalidArgument("expected custom_vjp_call".into()));
    };
    let (Some((nres, nargs)), Some(Rule::Vjp { bwd, .. })) = (parse_lin_name(name), lookup(fwd))
    else {
        return transpose_call(&call_jaxpr.jaxpr, args, cts);
    };
    let res = args[*num_consts..*num_consts + nres]
        .iter()
        .map(|a| a.value("custom_vjp_call").cloned())
        .collect::<Result<Vec<_>>>()?;
    let primal_args = &args[*num_consts + nres..*num_consts + nres + nargs];
    let j = &call_jaxpr.jaxpr;
    let cts = cts
        .iter()
        .zip(&j.outvars)
        .map(|(c, o)| match c {
            Some(c) => Ok(c.clone()),
            None => {
                let a = j
                    .atom_aval(o)
                    .ok_or_else(|| Error::InvalidArgument("unbound outvar".into()))?;
                let t = a.array();
                jaxon_trace::numpy::zeros(&t.static_sizes().unwrap_or_default(), t.dtype)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let cts_in = catch(|| bwd(&res, &cts))?;
    if cts_in.len() != nargs {
        return Err(Error::InvalidArgument(format!(
            "custom_vjp bwd returned {} cotangents for {nargs} arguments",
            cts_in.len()
        )));
    }
    let mut out = vec![None; *num_consts + nres + nargs];
    for (a, c) in primal_args.iter().zip(cts_in) {
        if has_tangent(a.ty().dtype) {
            if c.ty().shape != a.ty().shape {
                return Err(Error::ShapeMismatch {
                    op: "custom_vjp bwd (cotangent vs argument)".into(),
                    lhs: jaxon_ir::shape::fmt_aval(c.aval()),
                    rhs: format!("{:?}", a.ty().shape),
                });
            }
            out.push(Some(jaxon_trace::lax::convert_element_type(
                &c,
                a.ty().dtype,
                false,
            )?));
        }
    }
    Ok(out)
}

/// Differentiates through a jaxpr by evaluating it under a jvp trace of
/// its own. Each equation meets its own jvp rule, so a nested `jit` or
/// `cond` splits its primal from its tangent work and no primal value
/// becomes part of a linear jaxpr.
pub(crate) fn inline_jvp(closed: &ClosedJaxpr, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    crate::jvp::jvp_flat(|ins| eval_closed_jaxpr(closed, &ins), x, t)
}

/// Transposes a call of an open jaxpr (no consts) through a backward pass
/// over its body.
pub(crate) fn transpose_call(
    jaxpr: &Jaxpr,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Vec<Option<Array>>> {
    let linear: Vec<bool> = args.iter().map(LinArg::is_linear).collect();
    let values: Vec<Array> = args
        .iter()
        .filter_map(|a| match a {
            LinArg::Value(v) => Some(v.clone()),
            LinArg::Linear(_) | LinArg::LinearDyn(..) => None,
        })
        .collect();
    let lin_cts = crate::transpose::backward_pass(jaxpr, &[], &linear, &values, cts)?;
    let mut it = lin_cts.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next().flatten() } else { None })
        .collect())
}
