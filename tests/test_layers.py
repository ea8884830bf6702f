"""The layering, kept: the import graph read from the source (every import, at
module level and inside functions) has no cycle, and no module imports a layer
above its own. The layers are the README's "Architecture" section; LAYERS below
is that table, keyed by module-name prefix (the longest prefix wins)."""
from __future__ import annotations

import ast
import collections
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder -> package name (pyproject's package-dir)
PACKAGES = {"runtime": "jx.runtime", "frontend": "jx", "passes": "jx.passes",
            "codegen": "jx.codegen", "cli": "jx.cli", "benchmarks": "jx.benchmarks"}

# Bottom-up. A module may import its own layer (without cycles) and those below.
LAYERS = {
    "jx.version": 0, "jx.timings": 0, "jx.gc_pause": 0, "jx.runtime": 0,  # runtime: numpy only
    "jx.errors": 1, "jx.flags": 1, "jx.dtypes": 1, "jx.tree": 1, "jx.ir": 1, "jx.dims": 1,  # IR, dtypes, primitives
    "jx.printer": 1, "jx.verify": 1, "jx.array": 1, "jx.core": 1, "jx.interpret": 1, "jx.prims": 1,
    "jx.numpy": 2, "jx.lax": 2, "jx.nn": 2, "jx.random": 2,   # the traced library
    "jx.api": 2, "jx.custom": 2, "jx.scipy": 2, "jx.tree_util": 1,
    "jx.passes": 3,                                             # transformations, passes
    "jx.codegen": 4,                                            # backends
    "jx": 5, "jx.transforms": 5, "jx.vmap": 5, "jx.pmap": 5,   # the API that orchestrates
    "jx.jit": 5, "jx.dispatch": 5, "jx.export": 5, "jx.bake": 5, "jx.autotune": 5, "jx.staging": 5,
    "jx._namespace": 5, "jx.eager": 5, "jx.nan_checks": 5, "jx.experimental": 5, "jx.example_libraries": 5,
    "jx.test_util": 5,
    "jx.cli": 6, "jx.benchmarks": 6, "jx.fuzz": 6,             # tools
}
LAYER_NAMES = ["runtime", "core", "library", "passes", "backends", "api", "tools"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    name = [PACKAGES[parts[0]]] + parts[1:]
    return ".".join(name[:-1] if name[-1] == "__init__" else name)


def modules() -> dict:
    found = {}
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[module_name(path)] = path
    return found


def layer_of(mod: str) -> int:
    best = max((p for p in LAYERS if mod == p or mod.startswith(p + ".")), key=len)
    return LAYERS[best]


def _targets(mod: str, node, is_package: bool, known) -> list:
    """The jx modules an import statement loads (the deepest that exists)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = mod.split(".")[: len(mod.split(".")) - (0 if is_package else 1)]
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                 for a in node.names]
    out = []
    for name in names:
        if not (name == "jx" or name.startswith("jx.")):
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known and name != mod:
            out.append(name)
    return out


def import_graph() -> tuple:
    """(edges: module -> set of modules, where: (a, b) -> 'file:line')."""
    known = modules()
    edges, where = collections.defaultdict(set), {}
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(mod, node, path.name == "__init__.py", known):
                    edges[mod].add(t)
                    where.setdefault((mod, t), f"{path.relative_to(ROOT)}:{node.lineno}")
    return edges, where


def cycles(edges) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    for mod in modules():
        assert any(mod == p or mod.startswith(p + ".") for p in LAYERS), \
            f"{mod} is in no layer: add it to LAYERS here and to the README's Architecture"


def test_no_module_imports_a_higher_layer():
    edges, where = import_graph()
    bad = [f"{where[(a, b)]}: {a} ({LAYER_NAMES[layer_of(a)]}) imports {b} "
           f"({LAYER_NAMES[layer_of(b)]})"
           for a in sorted(edges) for b in sorted(edges[a]) if layer_of(b) > layer_of(a)]
    assert not bad, "imports of a higher layer:\n" + "\n".join(bad)


def test_no_import_cycles():
    edges, where = import_graph()
    found = cycles(edges)
    lines = []
    for comp in found:
        members = set(comp)
        lines.append(" <-> ".join(comp))
        lines += [f"    {where[(a, b)]}: {a} -> {b}" for a in comp
                  for b in sorted(edges[a] & members)]
    assert not found, "import cycles:\n" + "\n".join(lines)


def test_runtime_loads_no_other_jx_module():
    """`import jx.runtime` in a fresh interpreter loads the runtime (and the empty
    package above it) only: a deployment needs numpy and nothing of the compiler."""
    code = ("import sys, jx.runtime\n"
            "print(' '.join(sorted(m for m in sys.modules if m == 'jx' or m.startswith('jx.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.getcwd(), timeout=60, check=True).stdout.split()
    extra = [m for m in out if layer_of(m) != 0 and m != "jx"]
    assert not extra, f"import jx.runtime also loaded: {extra}"
    heavy = subprocess.run([sys.executable, "-c", code.replace(
        "m == 'jx' or m.startswith('jx.')", "m.split('.')[0] in ('llvmlite', 'cupy', 'click')")],
        capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert not heavy, heavy


def test_a_program_asking_for_a_submodule_gets_the_whole_api():
    """`import jx; jx.lax.scan(...)` outside jit runs compiled: asking the package
    for jx.lax from a program loads the API (which fills the library's hooks, such
    as the eager control-flow runner); jx's own imports stay one module each."""
    code = ("import sys, numpy as np, jx\n"
            "before = 'jx._namespace' in sys.modules\n"
            "c, ys = jx.lax.scan(lambda c, x: (c + x, c), np.float32(0), np.ones(4, np.float32))\n"
            "print(before, 'jx._namespace' in sys.modules, jx.eager.STATS['compiles'], float(c))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["False", "True", "1", "4.0"], out


FAMILIES_SCRIPT = """
import importlib, json
from jx.codegen.cpu import opaque
out = {}
for family in opaque.FAMILIES:
    before, par = set(opaque.OPAQUE), set(opaque.PARALLEL_OPAQUE)
    importlib.import_module("jx.codegen.cpu." + family)
    out[family] = sorted(set(opaque.OPAQUE) - before)
    assert set(opaque.PARALLEL_OPAQUE) - par <= set(out[family]), family
print(json.dumps(out))
"""


def test_opaque_families_are_what_their_modules_register():
    """The opaque rule families are imported on first need (opaque.rule), by the
    names in opaque.FAMILIES: each module registers exactly its names, and importing
    the code generator loads none of them."""
    import json
    r = subprocess.run([sys.executable, "-c", FAMILIES_SCRIPT], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    from jx.codegen.cpu import opaque
    got = json.loads(r.stdout)
    assert got == {f: sorted(names) for f, names in opaque.FAMILIES.items()}
    code = ("import sys; from jx.codegen.cpu import module; "
            "print(sorted(m for m in sys.modules if m.startswith('jx.codegen.cpu.')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    loaded = {m.rsplit(".", 1)[1] for m in eval(r.stdout)}
    assert not loaded & set(opaque.FAMILIES), loaded & set(opaque.FAMILIES)
