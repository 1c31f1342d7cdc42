//! `jax.checkpoint_policies`: which values inside a [`checkpoint`] body
//! reverse mode may save instead of recomputing.
//!
//! A policy answers, for one equation of the body's primal computation,
//! whether its outputs are saveable (JAX's policies take the primitive and
//! its params). The answers are JAX 0.10.2's (`jax/_src/ad_checkpoint.py`):
//!
//! * `dots_saveable` (= `checkpoint_dots`): `dot_general` and
//!   `conv_general_dilated` outputs;
//! * `dots_with_no_batch_dims_saveable`: `dot_general` outputs with no
//!   batch dimensions (not convolutions);
//! * `save_only_these_names(names)`: outputs of `name` (`checkpoint_name`)
//!   equations whose name is listed;
//! * `save_any_names_but_these(names)`: outputs of `name` equations whose
//!   name is not listed;
//! * `save_anything_except_these_names(names)`: in JAX 0.10.2 this is
//!   `lambda *_, **__: True` (a TODO there says it "probably just doesn't
//!   work"), so it saves everything, whatever the names; we do the same;
//! * `save_from_both_policies(a, b)`: saveable when either says so.
//!
//! Invariant: a policy renders (`Display`) to the text stored in
//! `RematParams::policy` and printed as `remat2[policy=...]`, and
//! [`Policy::parse`] reads that text back to the same answers. The text is
//! JAX's where JAX prints something deterministic (`DotsSaveable(...)`,
//! `SaveOnlyTheseNames(saveable_names=frozenset({'h'}))`, the masked
//! `<function everything_saveable at 0xXXXXXXXXXXXX>`); names are sorted
//! (JAX's `frozenset` order depends on string hashing).
//! `save_from_both_policies` prints as `save_from_both_policies(a, b)`
//! (the function policies inside by name, e.g. `everything_saveable`):
//! JAX prints an opaque closure there, which could not be read back.
//!
//! [`checkpoint`]: crate::checkpoint()

use jaxon_ir::primitive::{DotGeneralParams, Linalg, Marker};
use jaxon_ir::Primitive;
use std::collections::BTreeSet;
use std::fmt;

/// JAX's mask for a function's address in printed jaxprs.
const ADDR: &str = "0xXXXXXXXXXXXX";

/// A checkpoint policy (one of `jax.checkpoint_policies`); build one with
/// the functions of this module and pass it to
/// [`Checkpoint::policy`](crate::Checkpoint::policy).
///
/// ```
/// use jaxon_trace::numpy::All;
/// use jaxon_trace::{lax, Array};
/// use jaxon_transforms::checkpoint_policies::{dots_saveable, save_from_both_policies,
///     save_only_these_names};
/// use jaxon_transforms::{checkpoint, grad};
///
/// // jax.checkpoint(f, policy=save_from_both_policies(dots_saveable,
/// //                                                  save_only_these_names("h")))
/// let p = save_from_both_policies(dots_saveable(), save_only_these_names(["h"]));
/// let f = checkpoint(|x: Array| lax::checkpoint_name(&x.sin(), "h").unwrap().sin()).policy(p);
/// let x = Array::from_vec(vec![0.5f64], &[1]);
/// let g = grad(|x: Array| f.call(x).unwrap().sum(All))(x)?;
/// let want = 0.5f64.sin().cos() * 0.5f64.cos();
/// assert!((g.to_vec::<f64>()[0] - want).abs() < 1e-12);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `everything_saveable`: save every value (as without checkpoint).
    EverythingSaveable,
    /// `nothing_saveable`: save only the inputs (as `checkpoint` without a
    /// policy).
    NothingSaveable,
    /// `DotsSaveable(only_if_no_batch_dims)`: `dots_saveable` (false) or
    /// `dots_with_no_batch_dims_saveable` (true).
    Dots {
        /// Only `dot_general`s without batch dimensions.
        only_if_no_batch_dims: bool,
    },
    /// `save_only_these_names`: the named values with these names.
    SaveOnlyTheseNames(BTreeSet<String>),
    /// `save_any_names_but_these`: the named values with other names.
    SaveAnyNamesButThese(BTreeSet<String>),
    /// `save_anything_except_these_names`: everything (JAX 0.10.2 ignores
    /// the names; see the module doc).
    SaveAnythingExceptTheseNames(BTreeSet<String>),
    /// `save_from_both_policies`: the logical or.
    SaveFromBothPolicies(Box<Policy>, Box<Policy>),
}

/// `jax.checkpoint_policies.everything_saveable`.
pub fn everything_saveable() -> Policy {
    Policy::EverythingSaveable
}

/// `jax.checkpoint_policies.nothing_saveable`.
pub fn nothing_saveable() -> Policy {
    Policy::NothingSaveable
}

/// `jax.checkpoint_policies.dots_saveable`: `dot_general` and
/// `conv_general_dilated` outputs.
pub fn dots_saveable() -> Policy {
    Policy::Dots {
        only_if_no_batch_dims: false,
    }
}

/// `jax.checkpoint_policies.checkpoint_dots` (= [`dots_saveable`]).
pub fn checkpoint_dots() -> Policy {
    dots_saveable()
}

/// `jax.checkpoint_policies.dots_with_no_batch_dims_saveable`:
/// `dot_general` outputs without batch dimensions.
pub fn dots_with_no_batch_dims_saveable() -> Policy {
    Policy::Dots {
        only_if_no_batch_dims: true,
    }
}

/// `jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims`.
pub fn checkpoint_dots_with_no_batch_dims() -> Policy {
    dots_with_no_batch_dims_saveable()
}

fn names<S: Into<String>>(ns: impl IntoIterator<Item = S>) -> BTreeSet<String> {
    ns.into_iter().map(Into::into).collect()
}

/// `jax.checkpoint_policies.save_only_these_names(*names)`.
pub fn save_only_these_names<S: Into<String>>(ns: impl IntoIterator<Item = S>) -> Policy {
    Policy::SaveOnlyTheseNames(names(ns))
}

/// `jax.checkpoint_policies.save_any_names_but_these(*names)`.
pub fn save_any_names_but_these<S: Into<String>>(ns: impl IntoIterator<Item = S>) -> Policy {
    Policy::SaveAnyNamesButThese(names(ns))
}

/// `jax.checkpoint_policies.save_anything_except_these_names(*names)`:
/// as in JAX 0.10.2, saves everything (the names are not consulted).
pub fn save_anything_except_these_names<S: Into<String>>(
    ns: impl IntoIterator<Item = S>,
) -> Policy {
    Policy::SaveAnythingExceptTheseNames(names(ns))
}

/// `jax.checkpoint_policies.save_from_both_policies(a, b)`.
pub fn save_from_both_policies(a: Policy, b: Policy) -> Policy {
    Policy::SaveFromBothPolicies(Box::new(a), Box::new(b))
}

impl Policy {
    /// Whether the outputs of an equation of `p` may be saved.
    pub fn saveable(&self, p: &Primitive) -> bool {
        match self {
            Policy::EverythingSaveable | Policy::SaveAnythingExceptTheseNames(_) => true,
            Policy::NothingSaveable => false,
            Policy::Dots {
                only_if_no_batch_dims: false,
            } => matches!(
                p,
                Primitive::Linalg(Linalg::DotGeneral(_) | Linalg::ConvGeneralDilated(_))
            ),
            Policy::Dots {
                only_if_no_batch_dims: true,
            } => p.params::<DotGeneralParams>().is_some_and(|d| {
                d.dimension_numbers.lhs_batch.is_empty() && d.dimension_numbers.rhs_batch.is_empty()
            }),
            Policy::SaveOnlyTheseNames(ns) => name_of(p).is_some_and(|n| ns.contains(n)),
            Policy::SaveAnyNamesButThese(ns) => name_of(p).is_some_and(|n| !ns.contains(n)),
            Policy::SaveFromBothPolicies(a, b) => a.saveable(p) || b.saveable(p),
        }
    }

    /// Whether no equation is saveable (the policy of plain `checkpoint`).
    pub fn saves_nothing(&self) -> bool {
        match self {
            Policy::NothingSaveable => true,
            Policy::SaveFromBothPolicies(a, b) => a.saves_nothing() && b.saves_nothing(),
            Policy::EverythingSaveable
            | Policy::SaveAnythingExceptTheseNames(_)
            | Policy::Dots { .. }
            | Policy::SaveOnlyTheseNames(_)
            | Policy::SaveAnyNamesButThese(_) => false,
        }
    }

    /// Reads the text a policy renders to (see the module doc); `None`
    /// for any other text (e.g. a custom Python policy of a parsed JAX
    /// jaxpr).
    pub fn parse(s: &str) -> Option<Policy> {
        let s = s.trim();
        let fun = |name: &str| format!("<function {name} at {ADDR}>");
        if s == fun("everything_saveable") {
            return Some(Policy::EverythingSaveable);
        }
        if s == fun("nothing_saveable") {
            return Some(Policy::NothingSaveable);
        }
        if s == fun("save_anything_except_these_names.<locals>.<lambda>") {
            return Some(Policy::SaveAnythingExceptTheseNames(BTreeSet::new()));
        }
        // The forms inside `save_from_both_policies(..)`.
        match s {
            "everything_saveable" => return Some(Policy::EverythingSaveable),
            "nothing_saveable" => return Some(Policy::NothingSaveable),
            _ => {}
        }
        if let Some(rest) = s.strip_prefix("save_anything_except_these_names(") {
            let set = parse_frozenset(rest.strip_suffix(')')?)?;
            return Some(Policy::SaveAnythingExceptTheseNames(set));
        }
        if let Some(rest) = s.strip_prefix("DotsSaveable(only_if_no_batch_dims=") {
            return match rest {
                "False)" => Some(dots_saveable()),
                "True)" => Some(dots_with_no_batch_dims_saveable()),
                _ => None,
            };
        }
        if let Some(rest) = s.strip_prefix("SaveOnlyTheseNames(saveable_names=") {
            return parse_frozenset(rest.strip_suffix(')')?).map(Policy::SaveOnlyTheseNames);
        }
        if let Some(rest) = s.strip_prefix("SaveAnyNamesButThese(names=") {
            return parse_frozenset(rest.strip_suffix(')')?).map(Policy::SaveAnyNamesButThese);
        }
        let inner = s
            .strip_prefix("save_from_both_policies(")?
            .strip_suffix(')')?;
        let cut = top_level_comma(inner)?;
        let a = Policy::parse(&inner[..cut])?;
        let b = Policy::parse(&inner[cut + 1..])?;
        Some(save_from_both_policies(a, b))
    }
}

/// The name of a `name` equation.
fn name_of(p: &Primitive) -> Option<&str> {
    match p {
        Primitive::Marker(Marker::Name(n)) => Some(&n.name),
        _ => None,
    }
}

/// Python's `repr` of a `str` in a set (single quotes unless the text
/// holds one and no double quote).
fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

fn frozenset(ns: &BTreeSet<String>) -> String {
    if ns.is_empty() {
        return "frozenset()".into();
    }
    let items: Vec<String> = ns.iter().map(|n| py_repr(n)).collect();
    format!("frozenset({{{}}})", items.join(", "))
}

/// Reads `frozenset()` or `frozenset({'a', 'b'})` (the quoting `py_repr`
/// writes).
fn parse_frozenset(s: &str) -> Option<BTreeSet<String>> {
    let inner = s.strip_prefix("frozenset(")?.strip_suffix(')')?;
    if inner.is_empty() {
        return Some(BTreeSet::new());
    }
    let mut rest = inner.strip_prefix('{')?.strip_suffix('}')?.trim_start();
    let mut out = BTreeSet::new();
    while !rest.is_empty() {
        let mut chars = rest.char_indices();
        let (_, q) = chars.next()?;
        if q != '\'' && q != '"' {
            return None;
        }
        let mut name = String::new();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => name.push('\n'),
                    't' => name.push('\t'),
                    'r' => name.push('\r'),
                    c => name.push(c),
                },
                c if c == q => {
                    end = Some(i + 1);
                    break;
                }
                c => name.push(c),
            }
        }
        out.insert(name);
        rest = rest[end?..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

/// The byte offset of the first comma outside brackets and quotes.
fn top_level_comma(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::EverythingSaveable => write!(f, "<function everything_saveable at {ADDR}>"),
            Policy::NothingSaveable => write!(f, "<function nothing_saveable at {ADDR}>"),
            Policy::Dots {
                only_if_no_batch_dims,
            } => {
                let b = if *only_if_no_batch_dims {
                    "True"
                } else {
                    "False"
                };
                write!(f, "DotsSaveable(only_if_no_batch_dims={b})")
            }
            Policy::SaveOnlyTheseNames(ns) => {
                write!(f, "SaveOnlyTheseNames(saveable_names={})", frozenset(ns))
            }
            Policy::SaveAnyNamesButThese(ns) => {
                write!(f, "SaveAnyNamesButThese(names={})", frozenset(ns))
            }
            Policy::SaveAnythingExceptTheseNames(_) => write!(
                f,
                "<function save_anything_except_these_names.<locals>.<lambda> at {ADDR}>"
            ),
            Policy::SaveFromBothPolicies(a, b) => {
                write!(f, "save_from_both_policies({}, {})", Inner(a), Inner(b))
            }
        }
    }
}

/// A policy inside `save_from_both_policies(..)`: the function policies
/// by name, so that the whole text reads as one Python-like call.
struct Inner<'a>(&'a Policy);

impl fmt::Display for Inner<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Policy::EverythingSaveable => write!(f, "everything_saveable"),
            Policy::NothingSaveable => write!(f, "nothing_saveable"),
            Policy::SaveAnythingExceptTheseNames(ns) => {
                write!(f, "save_anything_except_these_names({})", frozenset(ns))
            }
            p @ (Policy::Dots { .. }
            | Policy::SaveOnlyTheseNames(_)
            | Policy::SaveAnyNamesButThese(_)
            | Policy::SaveFromBothPolicies(..)) => write!(f, "{p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_reads_back_from_its_text() {
        let all = [
            everything_saveable(),
            nothing_saveable(),
            dots_saveable(),
            dots_with_no_batch_dims_saveable(),
            save_only_these_names(["h", "it's", "a,b"]),
            save_only_these_names(Vec::<String>::new()),
            save_any_names_but_these(["x"]),
            save_from_both_policies(
                dots_saveable(),
                save_from_both_policies(save_only_these_names(["h"]), nothing_saveable()),
            ),
            save_from_both_policies(
                everything_saveable(),
                save_anything_except_these_names(["a", "b"]),
            ),
        ];
        for p in all {
            assert_eq!(Policy::parse(&p.to_string()), Some(p.clone()), "{p}");
        }
        // JAX's texts.
        assert_eq!(
            save_only_these_names(["h"]).to_string(),
            "SaveOnlyTheseNames(saveable_names=frozenset({'h'}))"
        );
        assert_eq!(
            save_any_names_but_these(["h"]).to_string(),
            "SaveAnyNamesButThese(names=frozenset({'h'}))"
        );
        assert_eq!(
            everything_saveable().to_string(),
            "<function everything_saveable at 0xXXXXXXXXXXXX>"
        );
        // The names of save_anything_except_these_names are not printed
        // (nor used, as in JAX).
        let p = Policy::parse(&save_anything_except_these_names(["h"]).to_string());
        assert_eq!(
            p,
            Some(save_anything_except_these_names(Vec::<String>::new()))
        );
        assert_eq!(
            Policy::parse("<function my_policy at 0xXXXXXXXXXXXX>"),
            None
        );
    }
}
