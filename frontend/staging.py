"""Staging: a Python function -> traced graph -> pass pipeline -> fused program.

The one place the API layer (jx.jit, jx.pmap for CPU and CUDA alike, the
autotuner's probes) turns a function into what a backend compiles. A backend
(jx.codegen.*) receives the fused program and returns compiled code: it never
traces or runs passes itself, so it needs nothing from the layers above it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from . import timings
from .api import trace_pytree
from .dims import Dim
from .errors import JxError


@dataclass(frozen=True)
class Staged:
    graph: object        # the graph after the pass pipeline (inspection, signatures)
    program: object      # the fused program a backend compiles
    out_tree: object     # rebuilds the function's result from the flat outputs
    consts: list         # tracers captured from an enclosing trace (leading inputs)
    out_weak: tuple = ()  # the traced outputs' weak types (the passes keep only dtypes)


def _refuse_symbols(graph, name: str) -> None:
    """Symbolic dimensions trace (jx.make_jaxpr, jx.eval_shape) but are not compiled
    yet (issue 22): say so before a pass or a backend meets a size it cannot use."""
    found = sorted({str(s) for v in graph.inputs for d in v.aval.shape
                    if isinstance(d, Dim) for s in d.symbols()})
    if found:
        raise JxError(
            f"{name}: symbolic dimensions ({', '.join(found)}) can be traced "
            "(jx.make_jaxpr, jx.eval_shape) but not compiled yet; give the sizes for "
            "jx.jit and jx compile (e.g. jx.f32[128, 784] instead of jx.f32['B', 784])")


def stage(fun: Callable, args: Sequence, kwargs: dict | None = None,
          static_argnums: Sequence[int] = (), name: str | None = None,
          check: bool = False) -> Staged:
    """Trace fun on abstract versions of args, run the pass pipeline (verifying
    after each stage when `check`) and fuse."""
    with timings.stage("import"):    # the passes load on the first compile, not with `import jx`
        from jx.passes.fuse import fuse
        from jx.passes.pipeline import run
    with timings.stage("trace"):
        graph, consts = trace_pytree(fun, args, kwargs, static_argnums, name=name)
    _refuse_symbols(graph, name or getattr(fun, "__name__", "function"))
    out_tree = graph.out_tree
    out_weak = tuple(a.aval.weak_type for a in graph.outputs)
    with timings.stage("passes"):
        graph = run(graph, check=check)
    with timings.stage("fuse"):
        program = fuse(graph)
    return Staged(graph, program, out_tree, consts, out_weak)
