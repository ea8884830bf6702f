"""Evaluate a graph by binding each equation again: on NumPy values this is
the reference interpreter; on tracers it re-traces (graphs compose)."""
from __future__ import annotations

import numpy as np

from . import dims, dtypes
from .array import Array
from .core import bind_like, get_aval
from .errors import ShapeError
from .ir import Graph, Literal


def eval_graph(graph: Graph, *args) -> list:
    """Evaluate graph on args. Equations of constants only are staged into the
    trace of the arguments (if traced), so re-tracing never turns them into big
    literal arrays."""
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    args = [_canonical(x, v.aval.dtype) for x, v in zip(args, graph.inputs)]
    values = _symbol_values(graph, args)
    for i, (v, x) in enumerate(zip(graph.inputs, args)):
        got, want = get_aval(x), v.aval
        if values:
            want = want.update(shape=dims.substitute(want.shape, values))
        if not got.same_type(want):
            raise ShapeError(f"graph input {i} expects {v.aval}, got {got}")
    env = {id(v): x for v, x in zip(graph.inputs, args)}

    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]

    for eqn in graph.eqns:
        params = {k: dims.substitute(p, values) for k, p in eqn.params.items()} \
            if values else eqn.params
        outs = bind_like(args, eqn.prim, *[read(a) for a in eqn.inputs], **params)
        for v, x in zip(eqn.outputs, outs):
            env[id(v)] = x
    return [_result(read(a)) for a in graph.outputs]


def _symbol_values(graph: Graph, args) -> dict:
    """The symbolic dimensions' sizes, read off the arguments (jx.dims.solve), for a
    graph traced with them; {} for a graph of fixed shapes."""
    pairs = [(d, n) for v, x in zip(graph.inputs, args)
             for d, n in zip(v.aval.shape, np.shape(x)) if len(np.shape(x)) == v.aval.ndim]
    if not any(isinstance(d, dims.Dim) for d, _ in pairs):
        return {}
    try:
        return dims.solve(pairs)
    except dims.DimensionSpecError as e:
        raise ShapeError(f"the arguments do not fit the graph's symbolic dimensions: {e}") \
            from None


def _canonical(x, want):
    """NumPy data for an input of dtype `want`: float64 data meets a float32 input
    in 32-bit mode, where every jx function takes it as float32; a declared
    float64 input takes float64 data as it is."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != want:
        dt = dtypes.canonical(x.dtype)
        return np.asarray(x, dt) if dt == want else x
    return x


def _result(x):
    """Concrete results are jx.Arrays: a literal output or an input passed through
    is wrapped (copied if writable, so the caller's array stays its own)."""
    if type(x) is np.ndarray:
        return Array(x.copy() if x.flags.writeable else x)
    return x
