"""Staging: a Python function -> traced graph -> pass pipeline -> fused program.

The one place the API layer (jx.jit, jx.pmap for CPU and CUDA alike, the
autotuner's probes) turns a function into what a backend compiles. A backend
(jx.codegen.*) receives the fused program and returns compiled code: it never
traces or runs passes itself, so it needs nothing from the layers above it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import contextlib

from . import dims, timings, tree
from .api import trace_pytree


@dataclass(frozen=True)
class Staged:
    graph: object        # the graph after the pass pipeline (inspection, signatures)
    program: object      # the fused program a backend compiles
    out_tree: object     # rebuilds the function's result from the flat outputs
    consts: list         # tracers captured from an enclosing trace (leading inputs)
    out_weak: tuple = ()  # the traced outputs' weak types (the passes keep only dtypes)


def stage(fun: Callable, args: Sequence, kwargs: dict | None = None,
          static_argnums: Sequence[int] = (), name: str | None = None,
          check: bool = False) -> Staged:
    """Trace fun on abstract versions of args, run the pass pipeline (verifying
    after each stage when `check`) and fuse."""
    with timings.stage("trace"):
        graph, consts = trace_pytree(fun, args, kwargs, static_argnums, name=name)
    out_tree = graph.out_tree
    out_weak = tuple(a.aval.weak_type for a in graph.outputs)
    cons = _constraints(graph, args, kwargs, static_argnums)
    graph, program = fuse_graph(graph, cons, check)
    return Staged(graph, program, out_tree, consts, out_weak)


def fuse_graph(graph, constraints=None, check: bool = False) -> tuple:
    """(graph after the pass pipeline, its fused program). A graph with symbolic
    sizes runs the passes under its declared constraints (jx.dims.Constraints),
    which the program keeps for code generation."""
    with timings.stage("import"):
        from jx.passes.fuse import fuse
        from jx.passes.pipeline import run
    if constraints is None and dims.symbols_of(v.aval.shape for v in graph.inputs):
        constraints = dims.Constraints()
    # the passes' size questions are performance heuristics: any answer is correct
    # code, so those the constraints leave open are answered at the hint sizes
    with dims.scope(constraints, hinting=True) if constraints is not None \
            else contextlib.nullcontext():
        with timings.stage("passes"):
            graph = run(graph, check=check)
        with timings.stage("fuse"):
            program = fuse(graph)
    program.constraints = constraints
    return graph, program


def _constraints(graph, args, kwargs, static_argnums):
    """The declared constraints of a graph with symbolic inputs, else None."""
    if not dims.symbols_of(v.aval.shape for v in graph.inputs):
        return None
    from .api import declared_constraints, split_static
    _, dynamic = split_static(args, static_argnums)
    return declared_constraints(tree.flatten((tuple(dynamic), kwargs or {}))[0])
