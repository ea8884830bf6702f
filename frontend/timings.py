"""Where a compile's time goes: each stage of the pipeline is timed by name and
summed per process, exclusive of the stages it encloses (a routine compiled while
a module is loaded counts as optimisation and code generation, not as loading).

    with timings.stage("trace"): ...
    timings.take()      # {stage: seconds} since the last take, then cleared

The stages of a first call: import (the backend's modules, on first use), trace,
passes, fuse, key (the program's cache key and the lookup), emit (LLVM IR), optimise, codegen (LLVM's), llvm (both, in the
compile worker), load (the object into the process). A leaf module: every layer
may time itself here.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

STAGES = ("import", "trace", "passes", "fuse", "key", "emit", "optimise", "codegen", "llvm", "load")

_totals: dict = {}
_stack: list = []        # [name, start, seconds spent in enclosed stages]


@contextmanager
def stage(name: str):
    frame = [name, time.perf_counter(), 0.0]
    _stack.append(frame)
    try:
        yield
    finally:
        _stack.pop()
        spent = time.perf_counter() - frame[1]
        _totals[name] = _totals.get(name, 0.0) + spent - frame[2]
        if _stack:
            _stack[-1][2] += spent


def take() -> dict:
    """{stage: seconds} accumulated since the last take (stages in STAGES order)."""
    out = {k: _totals[k] for k in STAGES if k in _totals}
    out.update({k: v for k, v in _totals.items() if k not in out})
    _totals.clear()
    return out
