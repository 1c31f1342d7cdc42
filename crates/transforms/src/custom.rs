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
//! and its transpose calls the user's `bwd` on the residuals. Those rules
//! are `rules/control/custom.rs`; this file holds the API and the registry.

use jaxon_ir::primitive::{Control, CustomJvpCallParams, CustomVjpCallParams};
use jaxon_ir::{Aval, ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{catch, Error, Result};
use jaxon_trace::eval::EvalTrace;
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

/// A registered rule, looked up by the printed `jvp=` / `fwd=` name.
#[derive(Clone)]
pub(crate) enum Rule {
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

/// The rule registered under `name`.
pub(crate) fn lookup(name: &str) -> Option<Rule> {
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
