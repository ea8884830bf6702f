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


@dataclass(frozen=True)
class Traced:
    graph: object        # the traced graph, before the pass pipeline
    constraints: object  # its declared symbolic constraints (None: fixed sizes)
    out_tree: object
    consts: list
    out_weak: tuple = ()


def stage(fun: Callable, args: Sequence, kwargs: dict | None = None,
          static_argnums: Sequence[int] = (), name: str | None = None,
          check: bool = False) -> Staged:
    """Trace fun on abstract versions of args, run the pass pipeline (verifying
    after each stage when `check`) and fuse."""
    return finish(trace(fun, args, kwargs, static_argnums, name), check)


def trace(fun: Callable, args: Sequence, kwargs: dict | None = None,
          static_argnums: Sequence[int] = (), name: str | None = None) -> Traced:
    """stage's first half: fun traced on abstract versions of args (jx.jit looks
    for code compiled from the same graph before running the passes)."""
    with timings.stage("trace"):
        graph, consts = trace_pytree(fun, args, kwargs, static_argnums, name=name)
    cons = _constraints(graph, args, kwargs, static_argnums)
    return Traced(graph, cons, graph.out_tree, consts,
                  tuple(a.aval.weak_type for a in graph.outputs))


def finish(traced: Traced, check: bool = False) -> Staged:
    """stage's second half: the pass pipeline and fusion of a traced graph."""
    graph, program = fuse_graph(traced.graph, traced.constraints, check)
    return Staged(graph, program, traced.out_tree, traced.consts, traced.out_weak)


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
