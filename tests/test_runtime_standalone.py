"""The runtime stands alone: runtime/ imports only the standard library, NumPy
(and, lazily, CuPy/mpi4py/ml_dtypes) and itself, relatively, so the same folder
is jx.runtime inside jx and the top-level jx_runtime of its own distribution
(runtime/pyproject.toml). The frontend's pytrees are the runtime's.

The last test builds a fresh venv (no system site-packages) holding only NumPy
from the registry and `pip install ./runtime`, and loads an artifact that
`jx compile` built here (about 15 s with pip's cache warm)."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jx import tree, tree_util
from jx.runtime import pytree, treespec

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime"
# Absolute imports the runtime may make besides the standard library (the last
# three only inside functions, for CUDA artifacts, MPI collectives and bfloat16).
ALLOWED = {"numpy", "cupy", "mpi4py", "ml_dtypes"}
HEAVY = ("jx", "llvmlite", "click", "rich")


def _runtime_files() -> list:
    return sorted(RUNTIME.glob("*.py"))


def test_runtime_imports_only_itself_numpy_and_the_standard_library():
    bad = []
    for path in _runtime_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"runtime/{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                bad.append(f"{where}: `from {'.' * node.level}{node.module or ''} import` "
                           "reaches above the runtime (it is the top-level jx_runtime "
                           "when installed alone)")
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ALLOWED:
                    bad.append(f"{where}: imports {name}; the runtime installs with NumPy "
                               "only, so import runtime modules relatively")
    assert not bad, "\n".join(bad)


def _as_jx_runtime(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter where runtime/ is importable as jx_runtime."""
    (tmp_path / "jx_runtime").symlink_to(RUNTIME, target_is_directory=True)
    prelude = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
    return subprocess.run([sys.executable, "-B", "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_every_runtime_module_imports_as_jx_runtime_without_jx(tmp_path):
    mods = [p.stem for p in _runtime_files() if p.stem != "__init__"]
    r = _as_jx_runtime(f"""
        import importlib, json
        import jx_runtime
        # the package loads its names on first use: nothing yet, not even NumPy
        light = sorted(m for m in sys.modules if m.startswith(("jx_runtime", "numpy")))
        assert light == ["jx_runtime", "jx_runtime.version"], light
        assert callable(jx_runtime.pool.clear)            # submodules as attributes
        for m in {mods!r}:
            importlib.import_module("jx_runtime." + m)
        assert jx_runtime.load.__module__ == "jx_runtime.loader"
        from jx_runtime import pytree, treespec
        leaves, td = pytree.flatten({{"b": (1, None), "a": [2, 3]}})
        assert leaves == [2, 3, 1] and str(td) == "{{'a': [*, *], 'b': (*, None)}}"
        spec = treespec.decode(json.loads(json.dumps(treespec.encode(td))))
        assert spec.unflatten(leaves) == {{"a": [2, 3], "b": (1, None)}}
        print(json.dumps(sorted(sys.modules)))
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    loaded = json.loads(r.stdout)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    assert not heavy, f"importing the runtime as jx_runtime loaded {heavy}"


def test_versions_agree():
    from jx import runtime
    from jx.version import __version__
    main = re.search(r'^version = "(.*)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    assert runtime.__version__ == __version__ == main


def test_the_frontend_pytrees_are_the_runtimes():
    assert tree.TreeDef is pytree.TreeDef and tree_util.PyTreeDef is pytree.TreeDef
    assert tree.flatten is pytree.flatten and tree_util.tree_unflatten is pytree.unflatten

    @tree_util.register_pytree_node_class
    class Box:
        def __init__(self, v):
            self.v = v

        def tree_flatten(self):
            return (self.v,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    leaves, td = pytree.flatten(Box({"x": 1.0}))       # registered through jx.tree_util
    assert leaves == [1.0] and td.kind is Box
    # a manifest's tree is the same kind of TreeDef: structures compare across the two
    spec = treespec.decode(treespec.encode(tree.flatten(({"a": 1}, [2, None]))[1]))
    assert spec.treedef == tree.structure(({"a": 0}, [0, None]))
    assert str(spec) == str(spec.treedef) == "({'a': *}, [*, None])"


# ---------------------------------------------------------------- a numpy-only venv

MODEL = textwrap.dedent('''
    import jx
    import jx.numpy as jnp

    @jx.export(p={"w": jx.f32[6, 3], "b": jx.f32[3]}, x=jx.f32[4, 6])
    def predict(p, x):
        h = jnp.tanh(x @ p["w"] + p["b"])
        return {"h": h, "total": jnp.sum(h)}

    # 4 MiB in and out: the artifact's thread pool splits the kernel, the result
    # comes from the runtime's pool
    @jx.export(z=jx.f32[1024, 1024])
    def bump(z):
        return jnp.exp(-z * z) + 1.0
''')

CHECK = textwrap.dedent('''
    import importlib.util, json, sys
    import numpy as np
    import jx_runtime

    art = jx_runtime.load(sys.argv[1])
    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((6, 3)).astype("f4"), "b": rng.standard_normal(3).astype("f4")}
    x = rng.standard_normal((4, 6)).astype("f4")
    out = art.predict(p, x)
    ref = np.tanh(x.astype("f8") @ p["w"] + p["b"])
    z = rng.standard_normal((1024, 1024)).astype("f4")
    bumped = art.bump(z)
    bump_err = float(np.abs(bumped - (np.exp(-z.astype("f8") ** 2) + 1)).max())
    try:
        art.predict(p, x[:3])
        error = None
    except jx_runtime.ArgumentError as e:
        error = type(e).__name__
    print(json.dumps({
        "keys": sorted(out), "h_err": float(np.abs(out["h"] - ref).max()),
        "total_err": float(abs(out["total"] - ref.sum())), "error": error,
        "bump_err": bump_err, "pooled": type(bumped.base).__module__,
        "modules": sorted(sys.modules), "jx_installed": importlib.util.find_spec("jx") is not None,
    }))
''')


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=300, **kw)


@pytest.fixture(scope="session")
def runtime_venv(tmp_path_factory):
    """A venv with NumPy from the registry and the runtime from runtime/, nothing else."""
    d = tmp_path_factory.mktemp("runtime-venv")
    r = _run([sys.executable, "-m", "venv", d / "venv"])
    assert r.returncode == 0, r.stderr
    py = d / "venv" / "bin" / "python"
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    r = _run(pip + ["numpy"])
    if r.returncode != 0:
        pytest.skip(f"pip could not install numpy from the registry: {r.stderr[-300:]}")
    # build from a copy, so the checkout gets no build/ or egg-info folders
    src = d / "runtime-src"
    shutil.copytree(RUNTIME, src, ignore=shutil.ignore_patterns("__pycache__", "build",
                                                                "*.egg-info"))
    r = _run(pip + [src])
    assert r.returncode == 0, f"pip install ./runtime failed:\n{r.stdout}\n{r.stderr}"
    return py


@pytest.mark.skipif(shutil.which("cc") is None, reason="jx compile needs a C compiler (cc)")
def test_an_artifact_loads_in_a_venv_with_only_numpy_and_the_runtime(runtime_venv, tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    r = _run([sys.executable, "-m", "jx.cli.main", "compile", tmp_path / "model.py",
              "-o", tmp_path / "out"],
             env={**os.environ, "JX_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    (tmp_path / "check.py").write_text(CHECK)
    # -I: neither the checkout nor PYTHONPATH is importable, only the venv's packages
    r = _run([runtime_venv, "-I", tmp_path / "check.py", tmp_path / "out" / "libmodel.so"],
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert not got["jx_installed"]
    assert got["keys"] == ["h", "total"] and got["error"] is not None
    assert got["h_err"] < 1e-5 and got["total_err"] < 1e-4 and got["bump_err"] < 1e-6, got
    assert got["pooled"] == "jx_runtime.pool", got
    heavy = [m for m in got["modules"] if m.split(".")[0] in HEAVY]
    assert not heavy, f"the standalone runtime loaded {heavy}"
    # the distribution owns jx_runtime/ only, so it installs beside jx without a clash
    r = _run([runtime_venv, "-m", "pip", "show", "-f", "jx-runtime"])
    files = r.stdout.split("Files:", 1)[1].split()
    assert files and all(re.match(r"jx_runtime[/-]", f) for f in files), files
    r = _run([runtime_venv, "-m", "pip", "list", "--format=json"])
    names = {p["name"].lower() for p in json.loads(r.stdout)}
    assert names - {"pip", "setuptools", "wheel"} == {"numpy", "jx-runtime"}, names
