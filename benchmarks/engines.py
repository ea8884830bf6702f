"""The timed engines. Each is a no-argument call on fixed inputs plus a conversion of
its result to NumPy (done outside the timed loop).

  jx     – the entry compiled by jx.jit in-process, or an artifact's entry (runtime)
  numpy  – the entry called on NumPy arrays: jx.numpy's eager mode
  jax    – the model imported with JAX's API names (jaxshim), run with jax.jit
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import jx
from jx import eager

from . import measure

# Test hook: JX_BENCH_PERTURB=<engine> makes that engine's results wrong, so the
# engines-agree check can be seen to fail.
PERTURB_ENV = "JX_BENCH_PERTURB"

LABELS = {"jx": "jx", "numpy": "NumPy eager", "jax": "JAX jit"}


@dataclass
class Engine:
    name: str                          # "jx" | "numpy" | "jax"
    label: str
    call: Callable                     # () -> raw result
    to_numpy: Callable = lambda out: out
    info: dict = field(default_factory=dict)
    after_first: Callable | None = None  # (engine) -> None, once the first call returned

    def result(self, raw):
        out = self.to_numpy(raw)
        if os.environ.get(PERTURB_ENV) == self.name:
            out = measure.perturb(out)
        return out


@contextlib.contextmanager
def fresh_object_cache():
    """Compile without jx's persistent object cache (a new, temporary cache folder),
    so first-call times include LLVM's work, as on a first run."""
    tmp = tempfile.mkdtemp(prefix="jx-bench-cold-")
    old = os.environ.get("JX_CACHE_DIR")
    os.environ["JX_CACHE_DIR"] = tmp
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JX_CACHE_DIR", None)
        else:
            os.environ["JX_CACHE_DIR"] = old
        shutil.rmtree(tmp, ignore_errors=True)


def _warm_jx() -> None:
    """Load LLVM and jx's runtime once, so the first entry's compile time excludes them
    (as _warm_jax does for JAX's backend)."""
    if not getattr(_warm_jx, "done", False):
        jx.jit(lambda v: v + 1.0)(np.zeros(3, np.float32))
        _warm_jx.done = True


def jit_engine(entry, args: list, static_argnums: tuple) -> Engine:
    _warm_jx()
    fn = jx.jit(entry.fn, static_argnums=static_argnums)

    def after_first(engine):
        compiled = next(iter(fn._cache.values()), None)
        if compiled is not None:
            engine.info["program"] = compiled.program
            hit = getattr(getattr(compiled.fn, "jit", None), "cache_hit", None)
            if hit is not None:
                engine.info["object_cache_hit"] = bool(hit)
    return Engine("jx", "jx jit", lambda: fn(*args), after_first=after_first)


def artifact_engine(compiled_entry, args: tuple) -> Engine:
    return Engine("jx", "jx artifact", lambda: compiled_entry(*args))


def numpy_engine(entry, args: list) -> Engine:
    """The reference: jx's NumPy eager mode, eager control flow interpreted too
    (jx.eager would otherwise compile it, and the agreement check would compare
    compiled code with compiled code)."""
    fn = entry.fn

    def call():
        with eager.disabled():
            return fn(*args)
    return Engine("numpy", LABELS["numpy"], call)


def _warm_jax(jax) -> None:
    """Start JAX's backend once, so the first entry's compile time excludes it."""
    if not getattr(_warm_jax, "done", False):
        jax.block_until_ready(jax.jit(lambda v: v + 1)(np.float32(1)))
        _warm_jax.done = True


def jax_engine(jax_fn, args: list, static_argnums: tuple) -> Engine:
    import jax
    from . import jaxshim
    _warm_jax(jax)
    dynamic = [a for i, a in enumerate(args) if i not in static_argnums]
    jaxshim.enable_x64_if_needed(jx.tree.tree_leaves(dynamic))
    on_device = [a if i in static_argnums else jax.tree_util.tree_map(jax.device_put, a)
                 for i, a in enumerate(args)]
    fn = jax.jit(jax_fn, static_argnums=static_argnums)
    block = jax.block_until_ready

    def to_numpy(out):
        return jax.tree_util.tree_map(np.asarray, out)
    return Engine("jax", LABELS["jax"], lambda: block(fn(*on_device)), to_numpy)
