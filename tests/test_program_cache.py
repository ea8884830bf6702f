"""The program cache (codegen/cpu/program_cache.py): jx.jit objects found by the
fused program's digest before any LLVM IR is built. Keys must be stable across
processes and hash seeds, differ for any change code generation would see, and a
hit must build no IR at all (counted on llvmlite's IR builder and parser)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.passes.program_key import program_digest
from jx.staging import stage


def _loss(params, x, scale):
    h = jnp.tanh(x @ params["w"] + params["b"])
    h = jx.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + jnp.sin(c), h)
    return (scale * jnp.sum(h ** 2, axis=-1)).mean()


def _program(fun=_loss, shape=(8, 16), dtype=np.float32, **kw):
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((shape[1], 4)).astype(dtype),
              "b": np.zeros(4, dtype)}
    x = rng.standard_normal(shape).astype(dtype)
    return stage(fun, (params, x, kw.get("scale", np.float32(2.0))), {}, ()).program


def _key(program, **kw):
    from jx.codegen.cpu import program_cache, target
    args = {"symbol": "f", "cpu": target.jit_cpu(), "parallel": True, **kw}
    return program_cache.jit_key(program, args["symbol"], args["cpu"], args["parallel"])


def test_same_program_same_key():
    a, b = _program(), _program()
    assert program_digest(a) == program_digest(b)
    assert _key(a) == _key(b) is not None


def test_key_changes_with_what_codegen_sees():
    base = _key(_program())
    with_const = lambda c: (lambda p, x, s: _loss(p, x, s) + jnp.sum(c * x))  # noqa: E731
    c = np.linspace(0, 1, 16, dtype=np.float32)
    variants = {
        "shape": _program(shape=(9, 16)),
        "dtype": _program(dtype=np.float16),
        "constant": _program(fun=with_const(c)),
        "op": _program(fun=lambda p, x, s: _loss(p, jnp.cos(x), s)),
        "param": _program(fun=lambda p, x, s: jnp.sum(x, axis=0).mean() + _loss(p, x, s)),
    }
    keys = {k: _key(v) for k, v in variants.items()}
    keys["other constant"] = _key(_program(fun=with_const(c[::-1].copy())))
    keys["symbol"] = _key(_program(), symbol="g")
    keys["serial"] = _key(_program(), parallel=False)
    keys["cpu"] = _key(_program(), cpu="x86-64-v3")
    from jx.codegen.cpu import tuning
    with tuning.using(interleave=2):
        keys["tuning"] = _key(_program())
    assert None not in keys.values()
    assert base not in keys.values()
    assert len(set(keys.values())) == len(keys), keys


def test_key_changes_with_jx_version_and_sources(monkeypatch):
    from jx.codegen.cpu import cache, program_cache
    prog = _program()
    monkeypatch.delenv("JX_PROGRAM_CACHE", raising=False)   # (keys only: nothing is run)
    base = _key(prog)
    monkeypatch.setattr(program_cache, "__version__", "0.0.0-other")
    other_version = _key(prog)
    monkeypatch.undo()
    monkeypatch.delenv("JX_PROGRAM_CACHE", raising=False)
    monkeypatch.setattr(cache, "sources_fingerprint", lambda: "edited")
    other_sources = _key(prog)
    assert len({base, other_version, other_sources}) == 3


def test_off_by_environment(monkeypatch):
    monkeypatch.setenv("JX_PROGRAM_CACHE", "0")
    assert _key(_program()) is None


PROBE = textwrap.dedent('''
    import json, sys
    import numpy as np
    import jx, jx.numpy as jnp
    import llvmlite.ir, llvmlite.binding as llvm
    counts = {"modules": 0, "parsed": 0}
    init = llvmlite.ir.Module.__init__
    def counting_init(self, *a, **k):
        counts["modules"] += 1
        init(self, *a, **k)
    llvmlite.ir.Module.__init__ = counting_init
    parse = llvm.parse_assembly
    def counting_parse(text, *a, **k):
        counts["parsed"] += bool(text.strip())
        return parse(text, *a, **k)
    llvm.parse_assembly = counting_parse
    from jx.codegen.cpu import program_cache
    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    shift = np.arange(4, dtype=np.float32)
    def f(w, x):
        h = jnp.tanh(x @ w + shift)
        return jx.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + jnp.sin(c), h).sum(axis=0)
    step = jx.jit(f)
    from jx import timings
    timings.take()
    out = np.asarray(step(w, x))
    stages = sorted(timings.take())
    key = program_cache.jit_key(step.lower(w, x), "f", __import__(
        "jx.codegen.cpu.target", fromlist=["x"]).jit_cpu(), True)
    h = np.tanh(x @ w + shift)
    for _ in range(3):
        h = h * 0.5 + np.sin(h)
    from jx.codegen.cpu import compiler          # (objects forked children emitted too)
    print(json.dumps({**counts, "emitted": compiler.EMITTED[0], "key": key, "stages": stages,
                      "ok": bool(np.allclose(out, h.sum(0), rtol=1e-5, atol=1e-5))}))
''')


def _probe(tmp_path, seed: str, loader: str = "", script: str = PROBE) -> dict:
    path = tmp_path / "probe.py"
    path.write_text(script)
    env = dict(os.environ, JX_CACHE_DIR=str(tmp_path / "cache"), PYTHONHASHSEED=seed,
               JX_JIT_LOADER=loader)
    env.pop("JX_PROGRAM_CACHE", None)
    r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("loader", ["", "mcjit"])
def test_hit_builds_no_ir_across_processes_and_hash_seeds(tmp_path, loader):
    """Both loaders: shared objects linked by ld (the default) and MCJIT objects."""
    cold = _probe(tmp_path, "1", loader)
    assert cold["ok"] and cold["modules"] > 0 and cold["emitted"] > 0 and cold["key"]
    warm = _probe(tmp_path, "2", loader)        # another process, another hash seed
    assert warm["ok"] and warm["key"] == cold["key"]
    assert warm["modules"] == 0 and warm["parsed"] == 0 and warm["emitted"] == 0, warm
    # found by the traced graph's key: neither the passes nor fusion ran
    assert {"passes", "fuse"} <= set(cold["stages"]), cold
    assert not {"passes", "fuse", "emit"} & set(warm["stages"]), warm


PLAIN = textwrap.dedent('''
    import json, sys
    import numpy as np
    import jx, jx.numpy as jnp
    x = np.linspace(-2, 2, 1000, dtype=np.float32)
    out = np.asarray(jx.jit(lambda x: jnp.tanh(x) * 3 + jnp.cumsum(x))(x))
    ok = bool(np.allclose(out, np.tanh(x) * 3 + np.cumsum(x), rtol=1e-5, atol=1e-4))
    print(json.dumps({"ok": ok, "llvm": "llvmlite.binding" in sys.modules,
                      "codegen": "jx.codegen.cpu.module" in sys.modules}))
''')


def test_hit_loads_neither_llvm_nor_the_code_generator(tmp_path):
    from jx.codegen.cpu import native
    if not native.enabled():
        pytest.skip("no linker or C compiler here: jx.jit loads code with MCJIT")
    cold = _probe(tmp_path, "0", script=PLAIN)
    assert cold["ok"] and cold["llvm"]
    warm = _probe(tmp_path, "0", script=PLAIN)
    assert warm == {"ok": True, "llvm": False, "codegen": False}


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_missing_or_damaged_code_is_a_miss(tmp_path, damage):
    """An evicted or damaged library (and object): the program is generated and
    compiled again, with the right result, and found by the next process."""
    _probe(tmp_path, "0")
    for folder in ("jit", "objects"):
        for root, _, files in os.walk(tmp_path / "cache" / folder):
            for name in files:
                path = os.path.join(root, name)
                if damage == "delete":
                    os.unlink(path)
                elif name.endswith((".so", ".o")):
                    with open(path, "r+b") as f:
                        f.seek(100)
                        f.write(b"\xff" * 16)
    again = _probe(tmp_path, "0")
    assert again["ok"] and again["modules"] > 0
    assert _probe(tmp_path, "0")["modules"] == 0


def test_library_exports_its_entry_only(tmp_path, monkeypatch):
    """A jx.jit library's routines are its own (local symbols): two programs'
    libraries never bind each other's."""
    from jx.codegen.cpu import native
    from jx.runtime import elf  # noqa: F401  (the cache's files are ELF)
    if not native.enabled():
        pytest.skip("no linker or C compiler here: jx.jit loads code with MCJIT")
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    f = jx.jit(lambda a, b: jnp.tanh(a @ b))
    a = np.ones((64, 64), np.float32)
    np.testing.assert_allclose(np.asarray(f(a, a)), np.tanh(a @ a), rtol=1e-5)
    libs = [os.path.join(r, n) for r, _, fs in os.walk(tmp_path / "jit") for n in fs
            if n.endswith(".so")]
    assert len(libs) == 1
    out = subprocess.run(["nm", "-D", "--defined-only", libs[0]], capture_output=True,
                         text=True)
    if out.returncode != 0:
        pytest.skip("no nm here")
    names = {ln.split()[-1] for ln in out.stdout.splitlines() if ln.strip()}
    assert names == {"jx__lambda_"}, names


@pytest.mark.parametrize("kind", ["other values", "equal values"])
def test_artifact_key_sees_constant_values(kind):
    """Two artifacts differing only in an array constant's values (which the
    program's text prints by type) must not share a cache entry."""
    from jx.codegen.cpu.artifact import EntryProgram, artifact_key
    from jx.codegen.cpu.target import host_cpu, host_triple
    from jx.tree import flatten
    c = np.arange(6, dtype=np.float32)
    other = c[::-1].copy() if kind == "other values" else np.arange(7, dtype=np.float32)[:6]

    def entry(const):
        staged = stage(lambda x: jnp.sin(x) * const, (np.ones(6, np.float32),), {}, ())
        tree = flatten(((np.ones(6, np.float32),),))[1]
        return EntryProgram("f", staged.program, tree, staged.out_tree, ["x"])

    keys = [artifact_key("m", [entry(v)], host_cpu(), host_triple(), None, "m")
            for v in (c, other, c)]
    assert keys[0] == keys[2]
    assert (keys[0] != keys[1]) == (kind == "other values")


def test_dropped_functions_release_their_code(tmp_path, monkeypatch):
    """A process that compiles many functions and drops them does not keep their
    code mapped: mappings are a bounded resource (vm.max_map_count)."""
    import gc
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    x = np.arange(8, dtype=np.float32)

    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    def compile_some(n):
        for i in range(n):
            f = jx.jit(lambda a, i=i: a * i + 1.0 + i)
            np.testing.assert_allclose(np.asarray(f(x)), x * i + 1.0 + i)

    compile_some(5)
    gc.collect()
    before = maps()
    compile_some(40)
    gc.collect()
    assert maps() - before < 20, maps() - before


def test_a_cache_that_cannot_hold_libraries_falls_back_to_mcjit(tmp_path, monkeypatch):
    """A linker failing (or a cache on a noexec mount, where dlopen fails): one
    warning, and jx.jit keeps working with MCJIT for the rest of the process."""
    from jx.codegen.cpu import native
    if not native.enabled():
        pytest.skip("no linker or C compiler here: jx.jit loads code with MCJIT")
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_DISABLED", [])

    def failing(*a, **k):
        raise native.LinkError("ld: cannot map it here")

    monkeypatch.setattr(native, "_link", failing)
    x = np.linspace(0, 1, 33, dtype=np.float32)
    with pytest.warns(UserWarning, match="MCJIT"):
        y = jx.jit(lambda a: jnp.exp(a) - a)(x)
    np.testing.assert_allclose(np.asarray(y), np.exp(x) - x, rtol=1e-6)
    assert not native.enabled()
    z = jx.jit(lambda a: jnp.cos(a) * 2)(x)          # no second warning
    np.testing.assert_allclose(np.asarray(z), np.cos(x) * 2, rtol=1e-6)


def test_graph_key_follows_the_traced_graph():
    """The traced graph's key (a hit skips the passes): stable for the same graph,
    different for a changed constant, shape, dtype or constraint."""
    from jx.codegen.cpu import program_cache, target
    from jx.staging import trace

    def key(fun, *args, constraints=None):
        t = trace(fun, args)
        return program_cache.graph_key(t.graph, constraints or t.constraints, "f",
                                       target.jit_cpu(), True, "pic")

    x = np.ones((4, 3), np.float32)
    c = np.linspace(0, 1, 3, dtype=np.float32)
    base = key(lambda a: jnp.sin(a) * c, x)
    assert base is not None and base == key(lambda a: jnp.sin(a) * c, x)
    others = {key(lambda a: jnp.sin(a) * c[::-1].copy(), x),
              key(lambda a: jnp.sin(a) * c, np.ones((5, 3), np.float32)),
              key(lambda a: jnp.sin(a) * c, np.ones((4, 3), np.float16)),
              key(lambda a: jnp.cos(a) * c, x)}
    assert base not in others and len(others) == 4


def test_program_of_a_graph_hit_is_built_on_demand(tmp_path, monkeypatch):
    """A function whose code came by its graph's key still shows its program and IR."""
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JX_PROGRAM_CACHE", "1")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)

    def f(a):
        return jnp.tanh(a) @ a.T

    np.testing.assert_allclose(jx.jit(f)(x), np.tanh(x) @ x.T, rtol=1e-5, atol=1e-6)
    jx.clear_caches()
    g = jx.jit(f)
    np.testing.assert_allclose(g(x), np.tanh(x) @ x.T, rtol=1e-5, atol=1e-6)
    compiled = next(iter(g._cache.values()))
    assert compiled.fn.jit.cache_hit and compiled.fn._program is None
    assert compiled.program.kernels and "define" in compiled.fn.ir_text
