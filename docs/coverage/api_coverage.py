"""Counts the JAX functions a user reaches for, module by module, and how
many of them jaxon has under the same name.

A JAX module's public callables are listed from an installed JAX (its
`__all__` where it has one, else its public non-module names). A name
counts as present in jaxon when its Rust module folders define it: a
`pub fn NAME`, a `NAME =>` row of a macro table that generates functions,
a `pub use` that exports it under NAME (the facade's `pub mod lax { .. }`
block is read for `jax.lax`, `path#block` in MODULES), a renamed spelling
listed in RENAMED (Rust keywords and JAX names that are not Rust
identifiers), or a Rust construct listed in EQUIVALENTS (registering a
pytree type is `#[derive(Pytree)]`). Classes, dtypes and constants are not
counted.

The second table weighs the functions by use: `usage.tsv` (written by
`api_usage.py` from the source of 16 widely used JAX libraries) counts the
packages that call each function, and a function is *commonly used* when
at least COMMON_PACKAGES of them call it.

Usage (from the repository root, with JAX installed):
    python docs/coverage/api_coverage.py > docs/coverage/api-coverage.md
"""

import importlib
import inspect
import pathlib
import re
import sys

import jax

ROOT = pathlib.Path(__file__).resolve().parents[2]
T = "crates/trace/src"
X = "crates/transforms/src"

# JAX module -> the jaxon source folders or files that hold its functions.
MODULES = {
    "jax": [X, "crates/jaxon/src", f"{T}/callback.rs", f"{T}/jit.rs", f"{T}/eval.rs", f"{T}/staging.rs", f"{T}/stage.rs"],
    "jax.numpy": [f"{T}/numpy", f"{T}/ops.rs", f"{T}/array.rs", f"{T}/index", "crates/jaxon/src/lib.rs#numpy"],
    "jax.numpy.linalg": [f"{T}/numpy/linalg.rs"],
    "jax.numpy.fft": [f"{T}/numpy/fft.rs"],
    "jax.lax": [f"{T}/lax", f"{T}/control", f"{X}/lax_fns.rs", f"{X}/linear_solve.rs", f"{X}/checkpoint.rs",
                "crates/jaxon/src/lib.rs#lax"],
    "jax.nn": [f"{T}/nn"],
    "jax.nn.initializers": [f"{T}/nn"],
    "jax.random": [f"{T}/random"],
    "jax.scipy.special": [f"{T}/scipy/special.rs", f"{T}/scipy"],
    "jax.scipy.linalg": [f"{T}/scipy/linalg.rs", f"{T}/scipy/linalg_more.rs"],
    "jax.scipy.stats.norm": [f"{T}/scipy/stats"],
    "jax.scipy.stats.gamma": [f"{T}/scipy/stats"],
    "jax.scipy.stats.beta": [f"{T}/scipy/stats"],
    "jax.scipy.stats.multivariate_normal": [f"{T}/scipy/stats"],
    "jax.scipy.stats.t": [f"{T}/scipy/stats"],
    "jax.scipy.stats.poisson": [f"{T}/scipy/stats"],
    "jax.tree": [f"{T}/pytree.rs", f"{T}/tree_util.rs"],
    "jax.tree_util": [f"{T}/pytree.rs", f"{T}/tree_util.rs"],
}

# JAX spellings that are not Rust identifiers or clash with keywords.
RENAMED = {"where": "where_", "abs": "abs", "round": "round", "true_divide": "divide",
           "float_power": "float_power", "typeof": "typeof_", "PRNGKey": "prng_key"}

# JAX functions whose job a Rust construct does: (module, name) -> how.
EQUIVALENTS = {
    ("jax.tree_util", n): "`#[derive(Pytree)]` or `impl Pytree`"
    for n in ["register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
              "register_pytree_with_keys_class", "register_dataclass"]
}

COMMON_PACKAGES = 2
USAGE = pathlib.Path(__file__).resolve().parent / "usage.tsv"


def block_of(text, name):
    """The body of `pub mod NAME { .. }` in `text` (empty when absent)."""
    m = re.search(r"pub mod " + name + r"\s*\{", text)
    if not m:
        return ""
    depth, i = 1, m.end()
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


def use_names(text):
    """The names that `pub use` items export (`a::{b, c as d}`, `a::b as c`)."""
    names = set()
    for body in re.findall(r"pub use ([^;]+);", text):
        body = re.sub(r"\s+", " ", body)
        inner = re.search(r"\{(.*)\}", body)
        items = inner.group(1).split(",") if inner else [body]
        for item in items:
            item = item.strip()
            if not item or item.endswith("*"):
                continue
            names.add(item.split(" as ")[-1].split("::")[-1].strip())
    return names


def rust_names(paths):
    names = set()
    for p in paths:
        p, _, block = p.partition("#")
        p = ROOT / p
        if block:
            names.update(use_names(block_of(p.read_text(), block)))
            continue
        files = [p] if p.is_file() else sorted(p.rglob("*.rs")) if p.is_dir() else []
        for f in files:
            text = f.read_text()
            names.update(re.findall(r"pub(?:\([a-z]+\))? fn ([a-z_][a-z0-9_]*)", text))
            names.update(re.findall(r"\b([a-z_][a-z0-9_]*)\s*=>\s*[A-Za-z_]", text))
            names.update(use_names(text))
            names.update(re.findall(r"pub type ([A-Za-z_][A-Za-z0-9_]*)", text))
    return names


def present_in(module, ours):
    """Whether jaxon has JAX's `module.f`, given the names its folders define."""
    prefix = "tree_" if module == "jax.tree" else ""
    return lambda f: (RENAMED.get(f, f) in ours or f.lower() in ours or prefix + f in ours
                      or (module, f) in EQUIVALENTS)


def usage_rows():
    if not USAGE.exists():
        return []
    lines = USAGE.read_text().splitlines()[1:]
    return [(m, f, int(p)) for m, f, p, _ in (line.split("\t") for line in lines)]


def jax_functions(name):
    mod = importlib.import_module(name)
    public = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    out = []
    for n in sorted(set(public)):
        obj = getattr(mod, n, None)
        if obj is None or inspect.ismodule(obj) or inspect.isclass(obj):
            continue
        if callable(obj) and not isinstance(obj, type):
            out.append(n)
    return out


def main():
    print(f"# JAX API coverage\n\nJAX {jax.__version__}; generated by "
          "`docs/coverage/api_coverage.py` (what counts is in its docstring).\n")
    usage = usage_rows()
    common = {}
    for m, f, p in usage:
        if p >= COMMON_PACKAGES:
            common.setdefault(m, []).append(f)
    print("| JAX module | functions | in jaxon | share | commonly used | in jaxon | share |"
          " missing (first 25) |")
    print("|---|---|---|---|---|---|---|---|")
    total = have = ctotal = chave = 0
    missing_common = []
    for module, paths in MODULES.items():
        try:
            funcs = jax_functions(module)
        except ImportError as e:
            print(f"| `{module}` | — | — | — | — | — | — | not importable: {e} |")
            continue
        has = present_in(module, rust_names(paths))
        present = [f for f in funcs if has(f)]
        missing = [f for f in funcs if f not in present]
        used = [f for f in common.get(module, []) if f in funcs]
        used_have = [f for f in used if has(f)]
        missing_common += [f"`{module}.{f}`" for f in used if not has(f)]
        total += len(funcs)
        have += len(present)
        ctotal += len(used)
        chave += len(used_have)
        share = 100.0 * len(present) / max(1, len(funcs))
        cshare = f"{100.0 * len(used_have) / len(used):.0f}%" if used else "—"
        print(f"| `{module}` | {len(funcs)} | {len(present)} | {share:.0f}% | {len(used)} | "
              f"{len(used_have)} | {cshare} | "
              f"{', '.join(missing[:25])}{' …' if len(missing) > 25 else ''} |")
    print(f"| **all** | **{total}** | **{have}** | **{100.0 * have / max(1, total):.0f}%** | "
          f"**{ctotal}** | **{chave}** | **{100.0 * chave / max(1, ctotal):.0f}%** | |")
    if usage:
        print(f"\n*Commonly used*: called by at least {COMMON_PACKAGES} of the 16 libraries that "
              "`api_usage.py` samples (`usage.tsv`).\n")
        print("Commonly used functions jaxon lacks: " + (", ".join(missing_common) or "none") + ".\n")
    if EQUIVALENTS:
        print("Counted as present through a Rust construct: " + "; ".join(
            f"`{m}.{f}`: {how}" for (m, f), how in sorted(EQUIVALENTS.items())) + ".")


if __name__ == "__main__":
    sys.exit(main())
