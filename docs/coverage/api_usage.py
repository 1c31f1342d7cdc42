"""Counts which JAX functions real code calls: the usage table behind the
"commonly used" columns of `api-coverage.md`.

The sample is the source of widely used libraries built on JAX (PINNED
below, downloaded from PyPI as wheels). Each file's imports are read with
`ast` (`import jax.numpy as jnp`, `from jax import lax, random as jr`,
`from jax.numpy import where`, ...), then every attribute chain rooted at
such an alias (`jnp.linalg.solve`, `jax.random.split`) and every imported
function name is resolved to a JAX module and a function of it. A function
is counted once per file and once per package.

Writes `usage.tsv` beside this script: module, function, packages, files,
sorted by packages then files. `api_coverage.py` calls a function
*commonly used* when at least COMMON_PACKAGES packages of the sample call
it.

Usage (from the repository root, with JAX installed and PyPI reachable):
    python docs/coverage/api_usage.py [--wheels DIR]
"""

import argparse
import ast
import collections
import pathlib
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api_coverage import MODULES, jax_functions  # noqa: E402

# The libraries sampled, pinned so the table can be rebuilt.
PINNED = [
    "flax==0.12.8", "optax==0.2.8", "equinox==0.13.8", "numpyro==0.22.0",
    "diffrax==0.7.2", "chex==0.1.92", "dm-haiku==0.0.17", "blackjax==1.7.1",
    "distrax==0.1.9", "jaxopt==0.8.5", "optimistix==0.1.0", "lineax==0.1.1",
    "jraph==0.0.6.dev0", "brax==0.14.2", "jaxtyping==0.3.11", "evosax==0.3.2",
]

OUT = pathlib.Path(__file__).resolve().parent / "usage.tsv"


def download(dest):
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                    "--only-binary", ":all:", "-d", str(dest), *PINNED], check=True)


def aliases(tree):
    """Alias -> module path, and names imported from JAX modules directly."""
    alias, direct = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "jax" or a.name.startswith("jax."):
                    if a.asname:
                        alias[a.asname] = a.name
                    else:
                        alias["jax"] = "jax"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "jax" or node.module.startswith("jax."):
                for a in node.names:
                    direct.append((node.module, a.name))
                    alias[a.asname or a.name] = f"{node.module}.{a.name}"
    return alias, direct


def chain(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheels", help="a folder that already holds the PINNED wheels")
    args = ap.parse_args()
    table = {m: set(jax_functions(m)) for m in MODULES}
    # jax.tree.map and friends: the same functions as tree_util's tree_*.
    packages = collections.defaultdict(set)
    files = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        wheels = pathlib.Path(args.wheels) if args.wheels else pathlib.Path(tmp)
        if not args.wheels:
            download(wheels)
        for whl in sorted(wheels.glob("*.whl")):
            pkg = whl.name.split("-")[0]
            with zipfile.ZipFile(whl) as z:
                for name in z.namelist():
                    if not name.endswith(".py") or "/tests/" in name or name.endswith("_test.py"):
                        continue
                    try:
                        tree = ast.parse(z.read(name))
                    except (SyntaxError, ValueError):
                        continue
                    found = set()
                    alias, direct = aliases(tree)
                    for mod, fn in direct:
                        if fn in table.get(mod, ()):
                            found.add((mod, fn))
                    for node in ast.walk(tree):
                        if not isinstance(node, ast.Attribute):
                            continue
                        c = chain(node)
                        if not c or c[0] not in alias:
                            continue
                        full = alias[c[0]].split(".") + c[1:]
                        mod, fn = ".".join(full[:-1]), full[-1]
                        if fn in table.get(mod, ()):
                            found.add((mod, fn))
                    for key in found:
                        packages[key].add(pkg)
                        files[key] += 1
    rows = sorted(packages, key=lambda k: (-len(packages[k]), -files[k], k))
    with OUT.open("w") as f:
        f.write("module\tfunction\tpackages\tfiles\n")
        for k in rows:
            f.write(f"{k[0]}\t{k[1]}\t{len(packages[k])}\t{files[k]}\n")
    print(f"{len(rows)} functions called; wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
