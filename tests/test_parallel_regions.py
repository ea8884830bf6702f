"""Regions of the C thread pool end when their chunks are done, not when every worker
has looked in (a sleeping or preempted worker must not hold up the caller): every
index of every region runs exactly once, also with more threads than cores (late
workers arrive after their region ended) and with calls from several threads."""
from __future__ import annotations

import pytest

from jx.codegen.cpu import parallel
from test_parallel_runtime import run

pytestmark = pytest.mark.skipif(parallel.jit_library() is None,
                                reason="no C compiler found to build the parallel runtime")

STRESS = """
import ctypes, threading
import numpy as np
BODY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
lib.jx_parallel_for.argtypes = [BODY, ctypes.c_void_p, ctypes.c_int64]
bad = []

def caller(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        hits = np.zeros(n, np.int64)
        def body(ctx, lo, hi):
            assert 0 <= lo < hi <= n
            hits[lo:hi] += 1
        lib.jx_parallel_for(BODY(body), None, n)
        if not (hits == 1).all():
            bad.append((n, hits.tolist()))

ts = [threading.Thread(target=caller, args=(s,)) for s in range(3)]
for t in ts: t.start()
for t in ts: t.join()
print("bad", len(bad), bad[:2])
"""


@pytest.mark.parametrize("threads", ["2", "5"])
def test_every_index_once(threads):
    out = run(STRESS, {"JX_NUM_THREADS": threads})
    assert out.strip().startswith("bad 0"), out


def test_gemm_and_loops_oversubscribed():
    """5 threads on this host's cores, so workers arrive late and tasks are taken
    unevenly: a GEMM (per-thread scratch by jx_worker_index) and a large fused loop
    still give the reference's results, call after call."""
    out = run("""
    import numpy as np, jx, jx.numpy as jnp
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 500)).astype(np.float32)
    b = rng.standard_normal((500, 700)).astype(np.float32)
    f = jx.jit(lambda x, y: jnp.tanh(x @ y) + 1.0)
    g = jx.jit(lambda x: jnp.exp(-x * x) * 2.0)
    want_f = np.tanh(a.astype(np.float64) @ b) + 1.0
    big = rng.standard_normal((1024, 1024)).astype(np.float32)
    want_g = np.exp(-big.astype(np.float64) ** 2) * 2.0
    worst = 0.0
    for _ in range(40):
        worst = max(worst, float(np.abs(f(a, b) - want_f).max()),
                    float(np.abs(g(big) - want_g).max()))
    print(worst)
    """, {"JX_NUM_THREADS": "5"})
    assert float(out) < 1e-4
