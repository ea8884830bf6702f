"""Cold compiles on several cores: a module split into parts (codegen/cpu/split.py)
compiled by forked children (compile_fork.py) and linked into one library. Each
part must define its share of the functions exactly once, every part must be
valid IR, the linked code must compute what the unsplit code does (checked
against NumPy), and a child's failure must be a clear error."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.staging import stage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _mlp(params, x):
    """Three dense layers: a GEMM kernel each, elementwise epilogues, a softmax."""
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return jx.nn.log_softmax(x @ w + b, axis=-1)


def _mlp_inputs(rng, dtype=np.float32, batch=16, sizes=(24, 40, 32, 10)):
    params = [(rng.standard_normal((m, n)).astype(dtype) / np.sqrt(m),
               rng.standard_normal(n).astype(dtype) * 0.1)
              for m, n in zip(sizes[:-1], sizes[1:])]
    return params, rng.standard_normal((batch, sizes[0])).astype(dtype)


def _mlp_numpy(params, x):
    x = x.astype(np.float64)
    for w, b in params[:-1]:
        x = np.tanh(x @ w + b)
    w, b = params[-1]
    z = x @ w + b
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _module(fun, args):
    from jx.codegen.cpu import target
    from jx.codegen.cpu.module import ModuleBuilder
    mb = ModuleBuilder("t", parallel=True, cpu=target.jit_cpu(), reloc="pic")
    mb.entry("t", stage(fun, args, {}, ()).program)
    return mb


def _defined_functions(text: str) -> set:
    return {line.split("@", 1)[1].split("(", 1)[0] for line in text.splitlines()
            if line.startswith("define ")}


def test_parts_define_each_function_once_and_parse():
    import llvmlite.binding as llvm

    from jx.codegen.cpu import split, target
    target._llvm()
    params, x = _mlp_inputs(np.random.default_rng(0))
    mb = _module(_mlp, (params, x))
    whole = _defined_functions(mb.text())
    plan = split.plan(mb.module, 2, 0)
    assert plan is not None and len(plan) == 2
    parts = split.texts(mb.module, plan)
    defined = [_defined_functions(t) for t in parts]
    assert defined[0].isdisjoint(defined[1])
    assert defined[0] | defined[1] == whole
    for text in parts:
        llvm.parse_assembly(text).verify()
    # printing the parts leaves the module as it was
    assert _defined_functions(mb.text()) == whole
    assert 'internal' in mb.text()


def test_plan_keeps_small_or_single_kernel_modules_whole():
    from jx.codegen.cpu import split
    mb = _module(lambda x: jnp.tanh(x) * 2.0, (np.ones((4, 4), np.float32),))
    assert split.plan(mb.module, 2, split.MIN_COST) is None
    params, x = _mlp_inputs(np.random.default_rng(1))
    mb = _module(_mlp, (params, x))
    assert split.plan(mb.module, 1, 0) is None             # one core: one part


def test_large_constants_are_defined_in_one_part():
    from jx.codegen.cpu import split
    rng = np.random.default_rng(2)
    table = rng.standard_normal((64, 64)).astype(np.float32)      # 16 KiB

    def f(x):
        y = jnp.tanh(x @ table)
        return jnp.sum(jnp.exp(y @ table) * table, axis=0) + jnp.cos(table @ x).sum()

    mb = _module(f, (rng.standard_normal((64, 64)).astype(np.float32),))
    large = split._large(mb.module)
    assert large
    plan = split.plan(mb.module, 2, 0)
    if plan is None:
        pytest.skip("this program's kernels form one component here")
    parts = split.texts(mb.module, plan)
    for name in large:
        head = f'@"{name}" = '
        lines = [next(l for l in t.splitlines() if l.startswith(head)) for t in parts]
        assert sum(" external " in l for l in lines) == len(parts) - 1, lines


def _run(code: str, env: dict) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300, cwd=ROOT, env={**os.environ, **env})
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


COLD_SCRIPT = """
    import sys
    import numpy as np
    import jx, jx.numpy as jnp
    from jx.codegen.cpu import compile_fork, compiler
    sys.path.insert(0, "tests")
    from test_compile_split import _mlp, _mlp_inputs, _mlp_numpy
    parts = []
    real = compile_fork.Children.compile
    compile_fork.Children.compile = lambda self, r: parts.append(len(r)) or real(self, r)
    for seed in range(3):
        params, x = _mlp_inputs(np.random.default_rng(seed), batch=8 + seed)
        got = np.asarray(jx.jit(_mlp)(params, x))
        np.testing.assert_allclose(got, _mlp_numpy(params, x), rtol=2e-4, atol=2e-4)
    print("parts", parts, "emitted", compiler.EMITTED[0],
          "llvm", "llvmlite.binding" in sys.modules)
"""


def _used_host(cache) -> None:
    """cache as on a host that used jx before: its LLVM record, C runtime and tuned
    constants, but no program's code."""
    import shutil
    _run("import numpy as np, jx; jx.jit(lambda x: x + 1)(np.ones(2, np.float32))",
         {"JX_CACHE_DIR": str(cache)})
    for folder in ("objects", "jit", "programs"):
        shutil.rmtree(cache / folder, ignore_errors=True)


def test_cold_jit_compiles_in_children_and_matches_numpy(tmp_path):
    _used_host(tmp_path)
    out = _run(COLD_SCRIPT, {"JX_CACHE_DIR": str(tmp_path), "JX_PROGRAM_CACHE": "1"})
    words = out.split()
    parts = eval(out.split("parts", 1)[1].split("emitted")[0])
    assert len(parts) == 3 and all(n >= 1 for n in parts), out
    assert int(words[words.index("emitted") + 1]) >= 3, out
    # the parent never loaded LLVM: every object came from a child or the cache
    assert words[words.index("llvm") + 1] == "False", out
    # a second process finds every library: no child, nothing emitted
    out = _run(COLD_SCRIPT, {"JX_CACHE_DIR": str(tmp_path), "JX_PROGRAM_CACHE": "1"})
    assert "parts [] emitted 0" in out, out


CHILDREN_SCRIPT = """
    import sys
    import numpy as np
    import jx, jx.numpy as jnp
    from jx.codegen.cpu import compile_fork
    sys.path.insert(0, "tests")
    from test_compile_split import _mlp, _mlp_inputs, _mlp_numpy
    seen = []
    real = compile_fork.Children.compile
    compile_fork.Children.compile = lambda self, r: seen.append(len(self)) or real(self, r)
    x = np.linspace(-1, 1, 33, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(jx.jit(lambda v: jnp.tanh(v) * 3.0)(x)),
                               np.tanh(x) * 3.0, rtol=1e-6, atol=1e-6)
    params, x = _mlp_inputs(np.random.default_rng(0), batch=4)
    np.testing.assert_allclose(np.asarray(jx.jit(_mlp)(params, x)), _mlp_numpy(params, x),
                               rtol=2e-4, atol=2e-4)
    print("children", seen, "wanted", compile_fork.wanted())
"""


def test_children_follow_the_kernels(tmp_path):
    """One child for a program of one kernel (its module cannot split: a second
    child would only compete for the cores); up to one per core for several."""
    _used_host(tmp_path)
    out = _run(CHILDREN_SCRIPT, {"JX_CACHE_DIR": str(tmp_path), "JX_PROGRAM_CACHE": "1"})
    seen = eval(out.split("children", 1)[1].split("wanted")[0])
    wanted = int(out.split("wanted")[1])
    assert seen[0] == 1, out
    assert seen[1] == min(wanted, 4) and len(seen) == 2, out


def test_ended_children_are_reaped_without_waiting():
    import threading
    import time
    if threading.active_count() > 1:
        pytest.skip("an earlier test left a Python thread running: no fork here")
    from jx.codegen.cpu import compile_fork
    children = compile_fork.start(2)
    pids = [p for p, _, _ in children.procs]
    children.close()                     # returns while they may still be exiting
    assert children.procs == []
    deadline = time.monotonic() + 30
    while compile_fork._EXITING and time.monotonic() < deadline:
        time.sleep(0.02)
        compile_fork.reap()
    assert not compile_fork._EXITING
    for pid in pids:                     # reaped: no zombie left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_library_links_from_files_without_memory_files(tmp_path, monkeypatch):
    """Where os.memfd_create is missing, ld reads its inputs from a temporary folder."""
    import jx
    import jx.numpy as jnp
    monkeypatch.setenv("JX_CACHE_DIR", str(tmp_path))
    monkeypatch.delattr(os, "memfd_create", raising=False)
    x = np.linspace(0, 2, 19, dtype=np.float32)
    got = jx.jit(lambda v: jnp.exp(v) - 7.5)(x)
    np.testing.assert_allclose(np.asarray(got), np.exp(x) - 7.5, rtol=1e-6, atol=1e-5)
    libs = list((tmp_path / "jit").glob("*/*.so"))
    assert libs and not list((tmp_path / "jit").glob("*/.jx-*")), libs   # nothing left over


def test_unforked_compile_gives_the_same_results(tmp_path):
    out = _run(COLD_SCRIPT, {"JX_CACHE_DIR": str(tmp_path), "JX_COMPILE_FORK": "0"})
    assert "parts []" in out and "llvm True" in out, out


def test_children_report_bad_ir_and_death():
    import threading
    if threading.active_count() > 1:
        pytest.skip("an earlier test left a Python thread running: no fork here")
    from jx.codegen.cpu import compile_fork, compiler, target
    cpu, triple = target.jit_cpu(), target.host_triple()
    features = compiler.llvm_features(cpu)
    bad = "define i32 @f() {\n  ret i64 0\n}\n"
    children = compile_fork.start(2)
    assert children is not None and len(children) == 2
    with pytest.raises(compiler.CompileWorkerError, match="LLVM could not compile"):
        children.compile([(bad, cpu, triple, features, "pic")])
    assert children.procs == []                           # reaped
    good = "define i32 @g() {\n  ret i32 7\n}\n"
    children = compile_fork.start(2)
    objs = children.compile([(good, cpu, triple, features, "pic")] * 3)
    assert len(objs) == 3 and all(o[:4] == b"\x7fELF" for o in objs)
    children = compile_fork.start(1)
    os.kill(children.procs[0][0], 9)
    with pytest.raises(compiler.CompileWorkerError, match="died"):
        children.compile([(good, cpu, triple, features, "pic")])
    children = compile_fork.start(2)                      # unused: they just exit
    children.close()
    assert children.procs == []


def test_fork_is_not_used_where_it_is_unsafe(monkeypatch):
    from jx.codegen.cpu import compile_fork
    monkeypatch.setenv("JX_COMPILE_FORK", "0")
    assert compile_fork.wanted() == 0 and compile_fork.start() is None
    monkeypatch.delenv("JX_COMPILE_FORK")
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", object())
    assert compile_fork.wanted() == 0
    monkeypatch.delitem(sys.modules, "mpi4py.MPI")
    import threading
    if threading.active_count() == 1:        # (an earlier test may leave a thread behind)
        assert 1 <= compile_fork.wanted() <= compile_fork.MAX_CHILDREN
    else:
        assert compile_fork.wanted() == 0


def test_collector_is_paused_while_compiling_and_restored():
    import gc
    seen = []

    def f(x):
        seen.append(gc.isenabled())          # runs while tracing, inside the compile
        return jnp.sin(x) * 2.0

    x = np.linspace(0, 1, 7, dtype=np.float32)
    assert gc.isenabled()
    np.testing.assert_allclose(jx.jit(f)(x), np.sin(x) * 2.0, rtol=1e-6)
    assert seen == [False] and gc.isenabled()
    gc.disable()                             # a program that runs without it keeps it off
    try:
        y = np.linspace(0, 1, 9, dtype=np.float32)          # another shape: a compile
        np.testing.assert_allclose(jx.jit(f)(y), np.sin(y) * 2.0, rtol=1e-6)
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


def test_artifact_is_the_same_built_by_children_or_here(tmp_path):
    """`jx compile` splits the module the same way whether or not it forks: the
    library is byte for byte the same (and `jx compile --check` stays meaningful)."""
    libs = []
    for fork in ("1", "0"):
        out = tmp_path / f"out{fork}"
        r = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", "samples/mlp.py",
                            "-o", str(out)], capture_output=True, text=True, timeout=600,
                           cwd=ROOT, env={**os.environ, "JX_TUNE": "off",
                                          "JX_COMPILE_FORK": fork,
                                          "JX_CACHE_DIR": str(tmp_path / f"cache{fork}")})
        assert r.returncode == 0, r.stderr[-3000:]
        libs.append((out / "libmlp.so").read_bytes())
    assert libs[0] == libs[1]


def test_no_fork_while_other_python_threads_run():
    import threading
    from jx.codegen.cpu import compile_fork
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert compile_fork.wanted() == 0
        x = np.arange(6, dtype=np.float32)
        np.testing.assert_allclose(jx.jit(lambda v: jnp.exp(v) - 1)(x), np.expm1(x), rtol=1e-5)
    finally:
        stop.set()
        t.join()
