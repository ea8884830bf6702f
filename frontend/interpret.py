"""Evaluate a graph by binding each equation again: on NumPy values this is
the reference interpreter; on tracers it re-traces (graphs compose)."""
from __future__ import annotations

from .core import bind
from .ir import Graph, Literal


def eval_graph(graph: Graph, *args) -> list:
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    env = {id(v): x for v, x in zip(graph.inputs, args)}

    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]

    for eqn in graph.eqns:
        outs = bind(eqn.prim, *[read(a) for a in eqn.inputs], **eqn.params)
        for v, x in zip(eqn.outputs, outs):
            env[id(v)] = x
    return [read(a) for a in graph.outputs]
