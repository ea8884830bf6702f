"""Where a compile's time goes (jx.timings, `jx bench --compile-breakdown`): stages
are summed exclusive of the stages they enclose, a first call reports each stage it
went through, and the compile suite's report turns them into a table. No timing
assertions: a fake clock drives the accounting test."""
from __future__ import annotations

import numpy as np

import jx
import jx.numpy as jnp
from jx import timings
from jx.benchmarks import compile_scaling


def test_enclosed_stages_are_not_counted_twice(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(timings.time, "perf_counter", lambda: now[0])
    timings.take()
    with timings.stage("load"):
        now[0] += 1.0
        with timings.stage("optimise"):
            now[0] += 2.0
            with timings.stage("codegen"):
                now[0] += 4.0
        now[0] += 8.0
    with timings.stage("optimise"):
        now[0] += 16.0
    assert timings.take() == {"optimise": 18.0, "codegen": 4.0, "load": 9.0}
    assert timings.take() == {}                     # taken: cleared


def test_a_first_call_reports_its_stages():
    timings.take()
    scale = float(np.random.default_rng().integers(1, 1 << 30))   # a program new to the caches
    f = jx.jit(lambda x: jnp.tanh(x * scale) + x)
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), np.tanh(x * np.float32(scale)) + x,
                               rtol=1e-6, atol=1e-6)
    spent = timings.take()
    assert {"trace", "passes", "fuse", "emit", "load"} <= set(spent), spent
    assert all(v >= 0 for v in spent.values())
    # LLVM ran: in this process, or in the compile worker (after IN_PROCESS compiles)
    assert ("optimise" in spent and "codegen" in spent) or "llvm" in spent, spent


def test_compile_report_has_a_breakdown_table():
    rows = [{"program": "chain", "n": 50, "ratio": 0.5, "ms_per_eqn": 1.0, "agrees": True,
             "jx": {"first_s": 0.1, "eqns": 74,
                    "breakdown": {"import": 0.02, "trace": 0.01, "optimise": 0.03}},
             "jax": {"first_s": 0.2}}]
    text = compile_scaling.report(rows, "jx bench --compile-breakdown")
    assert "| program | N | import | trace | optimise | other | total |" in text
    assert "| chain | 50 | 20 | 10 | 30 | 40 | 100 |" in text
