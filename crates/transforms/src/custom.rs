//! `custom_jvp` and `custom_vjp`: functions with user-supplied derivative
//! rules.
//!
//! Both take and return pytrees, like every transform: `f: Fn(I) -> O`,
//! a jvp rule `(primals: I, tangents: I) -> (O, O)`, a forward rule
//! `I -> (O, R)` with residuals `R` any pytree, and a backward rule
//! `(R, O) -> I`. Under a trace the input is flattened (as `jit` does) and
//! the staged equation works on its leaves; the user's rules are wrapped
//! into flat rules for the input and output structures of the call, and a
//! rule returning a tree of another structure is an error naming both.
//!
//! Outside any transformation they just call the function. Under another
//! trace they bind `custom_jvp_call` / `custom_vjp_call` (printed as JAX
//! prints them); the rules live in a process-wide registry keyed by the
//! printed `jvp=` / `fwd=` name, so a staged equation is differentiated
//! with the user's rule however late that happens. One custom function
//! registers one flat rule per `(input, output)` structure it is called
//! with: the first gets the plain name (`f_jvp`), later ones `f_jvp_1`, ... An equation whose name
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
use jaxon_ir::{Jaxpr, Primitive};
use jaxon_trace::core::find_top_trace;
use jaxon_trace::error::{catch, Error, Result};
use jaxon_trace::eval::EvalTrace;
use jaxon_trace::pytree::{NodeKind, Pytree, TreeDef};
use jaxon_trace::stage::{leaf_avals, trace_pytree, StageMode};
use jaxon_trace::{bind, Array};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A registered jvp rule on flat lists: `(primals, tangents) -> (primal
/// outputs, output tangents)`, one entry per leaf. `tangents` has one
/// entry per leaf; non-differentiated leaves (`nondiff_argnums`, integer
/// inputs) get zeros.
pub(crate) type FlatJvpRule =
    dyn Fn(&[Array], &[Array]) -> Result<(Vec<Array>, Vec<Array>)> + Send + Sync;
/// A registered forward rule on flat lists: `primals -> (outputs,
/// residuals, residual structure id)`; the id is handed back to the
/// backward rule.
pub(crate) type FlatFwdRule =
    dyn Fn(&[Array]) -> Result<(Vec<Array>, Vec<Array>, usize)> + Send + Sync;
/// A registered backward rule on flat lists: `(residual structure id,
/// residuals, output cotangents) -> input cotangents` (one per leaf;
/// entries for integer leaves are ignored).
pub(crate) type FlatBwdRule = dyn Fn(usize, &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync;

/// A registered rule, looked up by the printed `jvp=` / `fwd=` name.
#[derive(Clone)]
pub(crate) enum Rule {
    Jvp {
        rule: Arc<FlatJvpRule>,
        /// Flat leaf indices whose tangents are zero.
        nondiff: Vec<usize>,
    },
    Vjp {
        fwd: Arc<FlatFwdRule>,
        bwd: Arc<FlatBwdRule>,
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

/// Whether the operands would be evaluated right away (no trace above
/// the base evaluation).
fn is_eager(args: &[Array]) -> Result<bool> {
    Ok(find_top_trace(args)?.trace().as_any().is::<EvalTrace>())
}

/// Traces `f` on the dynamic staging trace at the types of `leaves`
/// (structured by `in_def`); returns the jaxpr, whose leading invars stand
/// for the closed-over values, those values (the `num_consts` leading
/// operands), and the output structure.
pub(crate) fn trace_call<I: Pytree, O: Pytree>(
    f: impl FnOnce(I) -> O,
    in_def: &TreeDef,
    leaves: &[Array],
) -> Result<(Jaxpr, Vec<Array>, TreeDef)> {
    let (staged, out_def) = trace_pytree(StageMode::Dynamic, f, in_def, &leaf_avals(leaves))?;
    let (jaxpr, consts) = open(staged.jaxpr, staged.consts);
    Ok((jaxpr, consts, out_def))
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

/// Whether two structures agree, static leaves compared by position only
/// (a rule need not reproduce the inputs' static values).
fn same_structure(a: &TreeDef, b: &TreeDef) -> bool {
    jaxon_trace::pytree::deep(|| match (a, b) {
        (TreeDef::Leaf, TreeDef::Leaf) | (TreeDef::Static(_), TreeDef::Static(_)) => true,
        (TreeDef::Node(ka, ca), TreeDef::Node(kb, cb)) => {
            ka == kb && ca.len() == cb.len() && ca.iter().zip(cb).all(|(x, y)| same_structure(x, y))
        }
        _ => false,
    })
}

/// An error unless a rule's result `got` has the structure `want`.
fn check_structure(what: &str, got: &TreeDef, want_what: &str, want: &TreeDef) -> Result<()> {
    if same_structure(got, want) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} has structure {got:?}, but {want_what} has structure {want:?}"
        )))
    }
}

/// The flat leaf indices of the arguments `argnums` of an input of
/// structure `in_def`: a tuple's top-level elements (all their leaves),
/// as JAX's positional arguments; for any other input, its leaves.
fn argnum_leaves(what: &str, in_def: &TreeDef, argnums: &[usize]) -> Result<Vec<usize>> {
    let mut leaves = Vec::new();
    match in_def {
        TreeDef::Node(NodeKind::Tuple, children) => {
            let mut offsets = Vec::with_capacity(children.len() + 1);
            offsets.push(0);
            for c in children {
                offsets.push(offsets[offsets.len() - 1] + c.num_leaves());
            }
            for &a in argnums {
                if a >= children.len() {
                    return Err(Error::InvalidArgument(format!(
                        "{what}: nondiff_argnums {a} is out of range for a tuple of {} arguments",
                        children.len()
                    )));
                }
                leaves.extend(offsets[a]..offsets[a + 1]);
            }
        }
        _ => {
            let n = in_def.num_leaves();
            for &a in argnums {
                if a >= n {
                    return Err(Error::InvalidArgument(format!(
                        "{what}: nondiff_argnums {a} is out of range for an input of {n} leaves"
                    )));
                }
                leaves.push(a);
            }
        }
    }
    Ok(leaves)
}

/// The rule names registered for each `(input, output)` structure a
/// custom function was called with, shared by its clones.
type Keys<K> = Arc<Mutex<Vec<(TreeDef, TreeDef, K)>>>;

fn find_key<K: Clone>(keys: &Keys<K>, in_def: &TreeDef, out_def: &TreeDef) -> Option<K> {
    keys.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(i, o, _)| i == in_def && o == out_def)
        .map(|(_, _, k)| k.clone())
}

type UserFn<I, O> = dyn Fn(I) -> O + Send + Sync;
type UserJvp<I, O> = dyn Fn(I, I) -> (O, O) + Send + Sync;

/// A function with a custom jvp rule: see [`custom_jvp`].
pub struct CustomJvp<I, O> {
    f: Arc<UserFn<I, O>>,
    name: String,
    jvp_name: Option<String>,
    nondiff: Vec<usize>,
    rule: Option<Arc<UserJvp<I, O>>>,
    keys: Keys<String>,
}

impl<I, O> Clone for CustomJvp<I, O> {
    fn clone(&self) -> Self {
        CustomJvp {
            f: self.f.clone(),
            name: self.name.clone(),
            jvp_name: self.jvp_name.clone(),
            nondiff: self.nondiff.clone(),
            rule: self.rule.clone(),
            keys: self.keys.clone(),
        }
    }
}

/// `custom_jvp(f)` (JAX's `jax.custom_jvp`): `f` with a jvp rule given by
/// [`CustomJvp::defjvp`].
///
/// `f` takes one pytree `I` (a tuple for several arguments) and returns a
/// pytree `O`; the rule takes `(primals, tangents)`, both shaped like the
/// input, and returns `(primal_out, tangent_out)`, both shaped like the
/// output. Outside any transformation [`CustomJvp::call`] just calls `f`;
/// under one it stages a `custom_jvp_call` equation, and differentiating
/// it uses the rule.
///
/// ```
/// use jaxon_trace::numpy::All;
/// use jaxon_trace::Array;
/// use jaxon_transforms::{custom_jvp, grad};
///
/// // @jax.custom_jvp
/// // def f(x, y): return jnp.sin(x) * y
/// // @f.defjvp
/// // def f_jvp(primals, tangents):
/// //     (x, y), (tx, ty) = primals, tangents
/// //     return f(x, y), jnp.cos(x) * y * tx + jnp.sin(x) * ty
/// let f = custom_jvp(|(x, y): (Array, Array)| x.sin() * &y)
///     .name("f")
///     .defjvp(|(x, y): (Array, Array), (tx, ty): (Array, Array)| {
///         (x.sin() * &y, x.cos() * &y * &tx + x.sin() * &ty)
///     });
/// let x = Array::from_vec(vec![0.5f64, -1.0], &[2]);
/// let y = Array::from_vec(vec![2.0f64, 3.0], &[2]);
/// let out = f.call((x.clone(), y.clone()))?;
/// assert_eq!(out.to_vec::<f64>(), [0.5f64.sin() * 2.0, (-1f64).sin() * 3.0]);
/// let (gx, _gy) = grad(|xy: (Array, Array)| f.call(xy).unwrap().sum(All))((x, y))?;
/// assert!((gx.to_vec::<f64>()[0] - 0.5f64.cos() * 2.0).abs() < 1e-12);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn custom_jvp<I, O, F>(f: F) -> CustomJvp<I, O>
where
    I: Pytree + 'static,
    O: Pytree + 'static,
    F: Fn(I) -> O + Send + Sync + 'static,
{
    CustomJvp {
        name: short_type_name::<F>(),
        f: Arc::new(f),
        jvp_name: None,
        nondiff: Vec::new(),
        rule: None,
        keys: Keys::default(),
    }
}

impl<I: Pytree + 'static, O: Pytree + 'static> CustomJvp<I, O> {
    /// The printed `name=` (JAX prints the Python function's name).
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self.keys = Keys::default();
        self
    }

    /// The printed `jvp=` (default `<name>_jvp`; made unique if taken).
    pub fn jvp_name(mut self, name: &str) -> Self {
        self.jvp_name = Some(name.to_string());
        self.keys = Keys::default();
        self
    }

    /// Arguments that are not differentiated: the rule sees zero tangents
    /// for them and their tangents are dropped. When the input `I` is a
    /// tuple, argument `i` is its `i`-th element (all of that element's
    /// leaves), as JAX's positional arguments; for any other input it is
    /// the `i`-th leaf of the flattened input. An index out of range is an
    /// error of [`CustomJvp::call`], eager or traced.
    pub fn nondiff_argnums(mut self, argnums: &[usize]) -> Self {
        self.nondiff = argnums.to_vec();
        self.keys = Keys::default();
        self
    }

    /// Sets the jvp rule: `(primals, tangents) -> (primal_out,
    /// tangent_out)`, the first two shaped like the input, the last two
    /// like the output.
    pub fn defjvp<R>(mut self, rule: R) -> Self
    where
        R: Fn(I, I) -> (O, O) + Send + Sync + 'static,
    {
        self.rule = Some(Arc::new(rule));
        self.keys = Keys::default();
        self
    }

    fn rule(&self) -> Result<Arc<UserJvp<I, O>>> {
        self.rule.clone().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "custom_jvp `{}`: no jvp rule; call defjvp first",
                self.name
            ))
        })
    }

    /// The registered name of the rule for these structures, registering
    /// a flat wrapper of the user's rule on first use.
    fn key(&self, in_def: &TreeDef, out_def: &TreeDef) -> Result<String> {
        if let Some(k) = find_key(&self.keys, in_def, out_def) {
            return Ok(k);
        }
        let rule = self.rule()?;
        let what = format!("custom_jvp `{}`", self.name);
        let nondiff = argnum_leaves(&what, in_def, &self.nondiff)?;
        let (idef, odef) = (in_def.clone(), out_def.clone());
        let flat = move |p: &[Array], t: &[Array]| -> Result<(Vec<Array>, Vec<Array>)> {
            let primals = I::unflatten(&idef, p.to_vec())?;
            let tangents = I::unflatten(&idef, t.to_vec())?;
            let (po, to) = catch(|| rule(primals, tangents))?;
            let (pl, pd) = po.flatten();
            check_structure(
                &format!("{what}: the jvp rule's primal output"),
                &pd,
                "the function's output",
                &odef,
            )?;
            let (tl, td) = to.flatten();
            check_structure(
                &format!("{what}: the jvp rule's tangent output"),
                &td,
                "the function's output",
                &odef,
            )?;
            Ok((pl, tl))
        };
        let base = self
            .jvp_name
            .clone()
            .unwrap_or_else(|| format!("{}_jvp", self.name));
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, k)) = keys.iter().find(|(i, o, _)| i == in_def && o == out_def) {
            return Ok(k.clone());
        }
        let name = register(
            &base,
            Rule::Jvp {
                rule: Arc::new(flat),
                nondiff,
            },
        );
        keys.push((in_def.clone(), out_def.clone(), name.clone()));
        Ok(name)
    }

    /// Calls the function: directly when nothing traces the arguments,
    /// else as a `custom_jvp_call` equation on the flattened input (its
    /// outputs are the flattened output).
    pub fn call(&self, x: I) -> Result<O> {
        self.rule()?;
        let (leaves, in_def) = x.flatten();
        argnum_leaves(
            &format!("custom_jvp `{}`", self.name),
            &in_def,
            &self.nondiff,
        )?;
        if is_eager(&leaves)? {
            return catch(|| (self.f)(x));
        }
        let f = self.f.clone();
        let (jaxpr, consts, out_def) = trace_call(move |i: I| f(i), &in_def, &leaves)?;
        let key = self.key(&in_def, &out_def)?;
        let p = Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
            name: self.name.clone(),
            call_jaxpr: closed(jaxpr),
            jvp: key,
            num_consts: consts.len(),
            symbolic_zeros: false,
        }));
        let mut operands = consts;
        operands.extend(leaves);
        O::unflatten(&out_def, bind(&p, &operands)?)
    }
}

fn closed(jaxpr: Jaxpr) -> jaxon_ir::ClosedJaxpr {
    jaxon_ir::ClosedJaxpr {
        jaxpr: Arc::new(jaxpr),
        consts: Arc::from(Vec::new()),
    }
}

/// The user's forward rule with its residuals flattened:
/// `x -> (out, residual leaves, residual structure)`.
type ErasedFwd<I, O> = dyn Fn(I) -> Result<(O, Vec<Array>, TreeDef)> + Send + Sync;
/// The user's backward rule with its residuals unflattened from
/// `(structure, leaves)`.
type ErasedBwd<I, O> = dyn Fn(&TreeDef, Vec<Array>, O) -> Result<I> + Send + Sync;
/// The user's `(fwd, bwd)` pair, type-erased over the residuals.
type VjpRules<I, O> = (Arc<ErasedFwd<I, O>>, Arc<ErasedBwd<I, O>>);

/// A function with custom forward and backward rules: see [`custom_vjp`].
pub struct CustomVjp<I, O> {
    f: Arc<UserFn<I, O>>,
    name: String,
    rules: Option<VjpRules<I, O>>,
    keys: Keys<(String, String)>,
}

impl<I, O> Clone for CustomVjp<I, O> {
    fn clone(&self) -> Self {
        CustomVjp {
            f: self.f.clone(),
            name: self.name.clone(),
            rules: self.rules.clone(),
            keys: self.keys.clone(),
        }
    }
}

/// `custom_vjp(f)` (JAX's `jax.custom_vjp`): `f` with reverse-mode rules
/// given by [`CustomVjp::defvjp`].
///
/// `f` takes one pytree `I` (a tuple for several arguments) and returns a
/// pytree `O`. The forward rule returns the output and residuals `R` (any
/// pytree); the backward rule maps `(residuals, output cotangent)` to the
/// input cotangent, shaped like `I`.
///
/// ```
/// use jaxon_trace::numpy::All;
/// use jaxon_trace::Array;
/// use jaxon_transforms::{custom_vjp, grad};
///
/// // @jax.custom_vjp
/// // def f(x, y): return jnp.sin(x) * y
/// // def f_fwd(x, y): return f(x, y), (jnp.cos(x), jnp.sin(x), y)
/// // def f_bwd(res, g):
/// //     cos_x, sin_x, y = res
/// //     return (cos_x * g * y, sin_x * g)
/// // f.defvjp(f_fwd, f_bwd)
/// let f = custom_vjp(|(x, y): (Array, Array)| x.sin() * &y)
///     .name("f")
///     .defvjp(
///         |(x, y): (Array, Array)| (x.sin() * &y, (x.cos(), x.sin(), y)),
///         |(cos_x, sin_x, y): (Array, Array, Array), g: Array| (cos_x * &g * y, sin_x * g),
///     );
/// let x = Array::from_vec(vec![0.5f64, -1.0], &[2]);
/// let y = Array::from_vec(vec![2.0f64, 3.0], &[2]);
/// let (gx, gy) = grad(|xy: (Array, Array)| f.call(xy).unwrap().sum(All))((x, y))?;
/// assert!((gx.to_vec::<f64>()[1] - (-1f64).cos() * 3.0).abs() < 1e-12);
/// assert!((gy.to_vec::<f64>()[0] - 0.5f64.sin()).abs() < 1e-12);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn custom_vjp<I, O, F>(f: F) -> CustomVjp<I, O>
where
    I: Pytree + 'static,
    O: Pytree + 'static,
    F: Fn(I) -> O + Send + Sync + 'static,
{
    CustomVjp {
        name: short_type_name::<F>(),
        f: Arc::new(f),
        rules: None,
        keys: Keys::default(),
    }
}

impl<I: Pytree + 'static, O: Pytree + 'static> CustomVjp<I, O> {
    /// The printed `name=`; the rules print as `<name>_fwd` / `<name>_bwd`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self.keys = Keys::default();
        self
    }

    /// Sets the forward rule, `x -> (output, residuals)`, and the backward
    /// rule, `(residuals, output cotangent) -> input cotangent` (shaped
    /// like the input; entries for integer or static leaves are ignored).
    pub fn defvjp<R, Fw, Bw>(mut self, fwd: Fw, bwd: Bw) -> Self
    where
        R: Pytree + 'static,
        Fw: Fn(I) -> (O, R) + Send + Sync + 'static,
        Bw: Fn(R, O) -> I + Send + Sync + 'static,
    {
        let fwd: Arc<ErasedFwd<I, O>> = Arc::new(move |x: I| {
            let (out, res) = catch(|| fwd(x))?;
            let (leaves, def) = res.flatten();
            Ok((out, leaves, def))
        });
        let bwd: Arc<ErasedBwd<I, O>> = Arc::new(move |def: &TreeDef, leaves, ct: O| {
            let res = R::unflatten(def, leaves)?;
            catch(|| bwd(res, ct))
        });
        self.rules = Some((fwd, bwd));
        self.keys = Keys::default();
        self
    }

    fn rules(&self) -> Result<VjpRules<I, O>> {
        self.rules.clone().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "custom_vjp `{}`: no rules; call defvjp first",
                self.name
            ))
        })
    }

    /// The registered `(fwd, bwd)` names of the rules for these
    /// structures, registering flat wrappers of the user's rules on first
    /// use.
    fn key(&self, in_def: &TreeDef, out_def: &TreeDef) -> Result<(String, String)> {
        if let Some(k) = find_key(&self.keys, in_def, out_def) {
            return Ok(k);
        }
        let (fwd, bwd) = self.rules()?;
        let what = format!("custom_vjp `{}`", self.name);
        // Residual structures seen by the forward rule; the index travels
        // to the backward rule with the residuals.
        let res_defs: Arc<Mutex<Vec<TreeDef>>> = Arc::default();
        let flat_fwd = {
            let (idef, odef, what, res_defs) = (
                in_def.clone(),
                out_def.clone(),
                what.clone(),
                res_defs.clone(),
            );
            move |p: &[Array]| -> Result<(Vec<Array>, Vec<Array>, usize)> {
                let x = I::unflatten(&idef, p.to_vec())?;
                let (out, res, rdef) = fwd(x)?;
                let (ol, od) = out.flatten();
                check_structure(
                    &format!("{what}: the fwd rule's output"),
                    &od,
                    "the function's output",
                    &odef,
                )?;
                let mut defs = res_defs.lock().unwrap_or_else(|e| e.into_inner());
                let id = match defs.iter().position(|d| *d == rdef) {
                    Some(id) => id,
                    None => {
                        defs.push(rdef);
                        defs.len() - 1
                    }
                };
                Ok((ol, res, id))
            }
        };
        let flat_bwd = {
            let (idef, odef) = (in_def.clone(), out_def.clone());
            move |id: usize, res: &[Array], cts: &[Array]| -> Result<Vec<Array>> {
                let rdef = res_defs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(id)
                    .cloned()
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!("{what}: unknown residual structure {id}"))
                    })?;
                let ct = O::unflatten(&odef, cts.to_vec())?;
                let (leaves, def) = bwd(&rdef, res.to_vec(), ct)?.flatten();
                check_structure(
                    &format!("{what}: the bwd rule's cotangent"),
                    &def,
                    "the function's input",
                    &idef,
                )?;
                Ok(leaves)
            }
        };
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, k)) = keys.iter().find(|(i, o, _)| i == in_def && o == out_def) {
            return Ok(k.clone());
        }
        let f = register(
            &format!("{}_fwd", self.name),
            Rule::Vjp {
                fwd: Arc::new(flat_fwd),
                bwd: Arc::new(flat_bwd),
            },
        );
        let b = format!("{}_bwd{}", self.name, &f[self.name.len() + 4..]);
        keys.push((in_def.clone(), out_def.clone(), (f.clone(), b.clone())));
        Ok((f, b))
    }

    /// Calls the function: directly when nothing traces the arguments,
    /// else as a `custom_vjp_call` equation on the flattened input (its
    /// outputs are the flattened output).
    pub fn call(&self, x: I) -> Result<O> {
        self.rules()?;
        let (leaves, in_def) = x.flatten();
        if is_eager(&leaves)? {
            return catch(|| (self.f)(x));
        }
        let f = self.f.clone();
        let (jaxpr, consts, out_def) = trace_call(move |i: I| f(i), &in_def, &leaves)?;
        let (fwd, bwd) = self.key(&in_def, &out_def)?;
        let p = Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
            name: self.name.clone(),
            call_jaxpr: closed(jaxpr),
            fwd,
            bwd,
            num_consts: consts.len(),
            symbolic_zeros: false,
        }));
        let mut operands = consts;
        operands.extend(leaves);
        O::unflatten(&out_def, bind(&p, &operands)?)
    }
}
