"""Python's cyclic garbage collector held off while a program compiles.

Tracing, the passes and code generation allocate hundreds of thousands of small
objects (tracers, equations, llvmlite values), and each allocation burst past
the collector's thresholds scans every live object of the process, a third of
code generation's time in a large gradient (samples/gp.py: 164 -> 112 ms of
LLVM IR emission) and more in a process holding a large heap. What a compile
leaves unreachable is collected after it, by the next collection the process
makes. Nested and concurrent compiles share one pause: the collector comes back
when the last one ends, and only if it was on when the first began.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_state = {"depth": 0, "was_enabled": False}


@contextmanager
def paused():
    with _lock:
        if _state["depth"] == 0:
            _state["was_enabled"] = gc.isenabled()
            gc.disable()
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["was_enabled"]:
                gc.enable()
