"""The C thread pool (codegen/cpu/cruntime/jx_parallel.c) through ctypes: the default
thread count (affinity mask, cgroup CPU quota, JX_NUM_THREADS) and jx_worker_index.
Each case runs in a subprocess, so affinity and environment changes stay there."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from jx.codegen.cpu import parallel

LIB = parallel.jit_library()
pytestmark = pytest.mark.skipif(LIB is None, reason="no C compiler found to build the "
                                "parallel runtime")
CPUS = len(os.sched_getaffinity(0))


def run(code: str, env: dict | None = None, cpus: int | None = None) -> str:
    """Runs `code` in a fresh Python with `lib` (the runtime, loaded after the affinity
    mask is cut to `cpus` CPUs) and returns its stdout."""
    prelude = "import ctypes, os\n"
    if cpus is not None:
        prelude += f"os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:{cpus}])\n"
    prelude += f"lib = ctypes.CDLL({LIB!r})\n"
    clean = {k: v for k, v in os.environ.items() if k not in ("JX_NUM_THREADS", "JX_CGROUP_ROOT")}
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          env={**clean, **(env or {})}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def threads(env: dict | None = None, cpus: int | None = None) -> int:
    return int(run("print(lib.jx_get_num_threads())", env, cpus))


@pytest.fixture
def no_cgroup(tmp_path):
    """An empty cgroup tree: no quota, so only the affinity mask counts."""
    return {"JX_CGROUP_ROOT": str(tmp_path)}


def test_affinity_one_cpu():
    assert threads(cpus=1) == 1


def test_affinity_mask_counts(no_cgroup):
    assert threads(no_cgroup, cpus=min(CPUS, 2)) == min(CPUS, 2)


def test_num_threads_env_overrides():
    assert threads({"JX_NUM_THREADS": "3"}, cpus=1) == 3
    assert threads({"JX_NUM_THREADS": "0"}) == 1
    assert threads({"JX_NUM_THREADS": "100000"}) == 256


def own_cgroup(version: int) -> str:
    """This process's cgroup path ('/...') in /proc/self/cgroup, '/' if none."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctl, path = line.rstrip("\n").split(":", 2)
            if (version == 2 and not ctl) or (version == 1 and "cpu" in ctl.split(",")):
                return path
    return "/"


@pytest.mark.parametrize("cpu_max, quota", [("150000 100000", 2), ("50000 100000", 1),
                                            ("200000 100000", 2), ("max 100000", None)])
def test_cgroup_v2_quota(tmp_path, cpu_max, quota):
    (tmp_path / "cpu.max").write_text(cpu_max + "\n")
    assert threads({"JX_CGROUP_ROOT": str(tmp_path)}) == min(CPUS, quota or CPUS)


def test_cgroup_v2_own_group_and_parents(tmp_path):
    """The process's own group is read, and a looser parent does not lift its quota."""
    own = tmp_path / own_cgroup(2).lstrip("/")
    own.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (own / "cpu.max").write_text("100000 100000\n")
    assert threads({"JX_CGROUP_ROOT": str(tmp_path)}) == 1


@pytest.mark.parametrize("quota, period, expect", [("50000", "100000", 1),
                                                   ("250000", "100000", 3), ("-1", "100000", None)])
def test_cgroup_v1_quota(tmp_path, quota, period, expect):
    own = tmp_path / "cpu" / own_cgroup(1).lstrip("/")
    own.mkdir(parents=True, exist_ok=True)
    (own / "cpu.cfs_quota_us").write_text(quota + "\n")
    (own / "cpu.cfs_period_us").write_text(period + "\n")
    assert threads({"JX_CGROUP_ROOT": str(tmp_path)}) == min(CPUS, expect or CPUS)


def test_cgroup_tightest_of_v1_and_v2(tmp_path):
    (tmp_path / "cpu.max").write_text("300000 100000\n")
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert threads({"JX_CGROUP_ROOT": str(tmp_path)}) == 1


# Records (region, worker index, thread, rows) for every chunk of a few regions; a chunk
# sleeps (dropping the GIL) so that workers get chunks too. A chunk of region 1
# makes a nested call, which runs serially with index 0 and gives the worker its
# index back.
WORKER_INDEX = """
import threading, time
body_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
lib.jx_parallel_for.argtypes = [body_t, ctypes.c_void_p, ctypes.c_int64]
seen, region = [], [0]

@body_t
def inner(ctx, lo, hi):
    seen.append(("nested", lib.jx_worker_index(), threading.get_ident(), 0))

@body_t
def body(ctx, lo, hi):
    k = lib.jx_worker_index()
    seen.append((region[0], k, threading.get_ident(), hi - lo))
    if region[0] == 1:
        lib.jx_parallel_for(inner, None, 4)
        seen.append(("after", lib.jx_worker_index(), k, 0))
    time.sleep(0.001)

for region[0] in range(REGIONS):
    if region[0] == 3:
        lib.jx_set_num_threads(2)          # fewer than the workers already started
    lib.jx_parallel_for(body, None, 64)
print(repr((lib.jx_get_num_threads(), threading.get_ident(), seen)))
"""


def worker_index(n_threads: int, regions: int = 5):
    out = run(WORKER_INDEX.replace("REGIONS", str(regions)), {"JX_NUM_THREADS": str(n_threads)})
    return eval(out)


def test_worker_index_distinct_and_in_range():
    final, main, seen = worker_index(4)
    assert final == 2
    for r in range(5):
        chunks = [(k, t) for region, k, t, _ in seen if region == r]
        assert sum(rows for region, _, _, rows in seen if region == r) == 64
        limit = 4 if r < 3 else 2
        assert {k for k, _ in chunks} <= set(range(limit))
        assert (0, main) in chunks                       # the caller takes part as 0
        # one thread per index (so chunks running at once never share one) ...
        by_index = {}
        for k, t in chunks:
            by_index.setdefault(k, set()).add(t)
        assert all(len(ts) == 1 for ts in by_index.values())
        assert by_index[0] == {main}
        # ... and one index per thread
        assert len({t for k, t in chunks}) == len(by_index)
    nested = [k for region, k, _, _ in seen if region == "nested"]
    assert nested and set(nested) == {0}
    assert all(k == outer for region, k, outer, _ in seen if region == "after")


def test_worker_index_serial_is_zero():
    final, main, seen = worker_index(1, regions=3)
    assert final == 1
    assert {k for _, k, _, _ in seen} == {0}
    assert {t for region, _, t, _ in seen if region != "after"} == {main}


@pytest.mark.parametrize("n_threads", [None, "4"])
def test_jit_elementwise_on_one_cpu(n_threads):
    """A big (parallel) elementwise kernel is right on one CPU, with the thread
    count that gives and with more threads than CPUs."""
    code = """
    import numpy as np
    import jx, jx.numpy as jnp
    from jx.codegen.cpu import parallel
    x = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)
    f = jx.jit(lambda x: jnp.sin(x) * 2.0 + x)
    for _ in range(3):
        got = np.asarray(f(x))
        np.testing.assert_allclose(got, np.sin(x) * 2.0 + x, rtol=1e-5, atol=1e-5)
    print(parallel.num_threads())
    """
    env = {"JX_NUM_THREADS": n_threads} if n_threads else {}
    assert int(run(code, env, cpus=1)) == int(n_threads or 1)
