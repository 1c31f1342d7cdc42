//! Variable naming as JAX's `JaxprPpContext` does it: fresh names `a..z,
//! ba..`, skipping the names of shared jaxprs, assigned on first use.

use crate::jaxpr::{Atom, Binder, Jaxpr, Var};
use std::collections::{HashMap, HashSet};

/// JAX's `_encode_digits_alphabetic`: 0 → `a`, 25 → `z`, 26 → `ba`.
pub fn encode_alphabetic(mut n: usize) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(b'a' + (n % 26) as u8);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// The identity of a jaxpr object (its address), like Python's `id`.
pub fn jaxpr_key(j: &Jaxpr) -> usize {
    j as *const Jaxpr as usize
}

/// The key variable names are kept under: the jaxpr's shared [`VarSpace`]
/// if it has one, else the jaxpr itself. (Both are live allocations during a
/// print, so the keys cannot collide.)
///
/// [`VarSpace`]: crate::jaxpr::VarSpace
pub fn names_key(j: &Jaxpr) -> usize {
    j.var_space.key().unwrap_or_else(|| jaxpr_key(j))
}

/// Names of variables across all printed jaxprs.
#[derive(Default)]
pub struct Names {
    map: HashMap<(usize, u32), String>,
    next: usize,
    /// Names taken by shared jaxprs; fresh names skip them.
    pub shared_names: HashSet<String>,
}

impl Names {
    /// The name of `v` of jaxpr `j`, assigning a fresh one on first use.
    pub fn var(&mut self, j: &Jaxpr, v: Var) -> String {
        let key = (names_key(j), v.0);
        if let Some(n) = self.map.get(&key) {
            return n.clone();
        }
        let n = self.fresh();
        self.map.insert(key, n.clone());
        n
    }

    fn fresh(&mut self) -> String {
        loop {
            let n = encode_alphabetic(self.next);
            self.next += 1;
            if !self.shared_names.contains(&n) {
                return n;
            }
        }
    }

    /// Whether `v` already has a name.
    pub fn has(&self, j: &Jaxpr, v: Var) -> bool {
        self.map.contains_key(&(names_key(j), v.0))
    }

    /// The name of `v` if it has one.
    pub fn get(&self, j: &Jaxpr, v: Var) -> Option<&str> {
        self.map.get(&(names_key(j), v.0)).map(|s| s.as_str())
    }

    /// Gives `v` a fixed name.
    pub fn set(&mut self, j: &Jaxpr, v: Var, name: String) {
        self.map.insert((names_key(j), v.0), name);
    }

    /// The printed name of a binder (`_` for a dropped output).
    pub fn binder(&mut self, j: &Jaxpr, b: &Binder) -> String {
        match b {
            Binder::Var(v) => self.var(j, *v),
            Binder::Drop(_) => "_".to_string(),
        }
    }

    /// The printed form of an operand (literals with their type).
    pub fn atom(&mut self, j: &Jaxpr, a: &Atom) -> String {
        match a {
            Atom::Var(v) => self.var(j, *v),
            Atom::Lit(l) => l.to_string(),
        }
    }

    /// An operand printed without a literal's type (`pp_var(print_literal_dtype=False)`).
    pub fn atom_untyped(&mut self, j: &Jaxpr, a: &Atom) -> String {
        match a {
            Atom::Var(v) => self.var(j, *v),
            Atom::Lit(l) => {
                let s = l.to_string();
                match s.rfind(':') {
                    Some(i) => s[..i].to_string(),
                    None => s,
                }
            }
        }
    }

    /// JAX's `_dropvars`: names every equation output of the top-level jaxpr
    /// that nothing later reads `_`.
    pub fn name_top_level_dropvars(&mut self, j: &Jaxpr) {
        let mut used: HashSet<u32> = j
            .outvars
            .iter()
            .filter_map(|a| match a {
                Atom::Var(v) => Some(v.0),
                Atom::Lit(_) => None,
            })
            .collect();
        // A dimension variable is read by the types that name it.
        for aval in &j.vars {
            for d in aval.shape() {
                if let crate::aval::Dim::Var(v) = d {
                    used.insert(v.0);
                }
            }
        }
        for eqn in j.eqns.iter().rev() {
            for b in &eqn.outputs {
                if let Binder::Var(v) = b {
                    if !used.contains(&v.0) {
                        self.set(j, *v, "_".to_string());
                    }
                }
            }
            for a in &eqn.inputs {
                if let Atom::Var(v) = a {
                    used.insert(v.0);
                }
            }
        }
    }

    /// JAX's `suggest_same_var_names(for_vars, like_vars)`: an inner jaxpr's
    /// variables take the names of the caller's operands/results.
    pub fn suggest(&mut self, inner: &Jaxpr, for_vars: &[Atom], outer: &Jaxpr, like: &[Like]) {
        if for_vars.len() != like.len() {
            return;
        }
        let mut used: HashSet<u32> = HashSet::new();
        for (f, l) in for_vars.iter().zip(like) {
            let Atom::Var(fv) = f else { continue };
            if self.has(inner, *fv) {
                continue;
            }
            let name = match l {
                Like::Var(lv) => {
                    if !used.insert(lv.0) {
                        continue;
                    }
                    self.var(outer, *lv)
                }
                Like::Drop => "_".to_string(),
                Like::Lit => continue,
            };
            self.set(inner, *fv, name);
        }
    }
}

/// An outer variable to copy a name from.
pub enum Like {
    /// A variable of the outer jaxpr.
    Var(Var),
    /// A dropped output (named `_`).
    Drop,
    /// A literal (no name to copy).
    Lit,
}

impl Like {
    /// From an operand.
    pub fn atom(a: &Atom) -> Like {
        match a {
            Atom::Var(v) => Like::Var(*v),
            Atom::Lit(_) => Like::Lit,
        }
    }

    /// From a result binder.
    pub fn binder(b: &Binder) -> Like {
        match b {
            Binder::Var(v) => Like::Var(*v),
            Binder::Drop(_) => Like::Drop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabetic_names() {
        assert_eq!(encode_alphabetic(0), "a");
        assert_eq!(encode_alphabetic(25), "z");
        assert_eq!(encode_alphabetic(26), "ba");
        assert_eq!(encode_alphabetic(27), "bb");
        // Variable #221 is `in` (corpus case long_chain_var_named_in).
        assert_eq!(encode_alphabetic(221), "in");
        assert_eq!(encode_alphabetic(26 * 26), "baa");
    }
}
