"""Batching: the vmap pass.

`batch_rules[name](args, dims, **params) -> (outs, out_dims)`, where each dim
is the position of the batch axis in that value, or None when the value is
the same for the whole batch (it is then never broadcast unless a rule must).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from jx.array import Array
from jx.core import bind_like, get_aval
from jx.ir import Graph

from .interpreters import RuleTable, read, rule_for, transform_graph

batch_rules = RuleTable()   # filled by the rule families on first read


def vmap_eval(graph: Graph, args: Sequence, dims: Sequence, axis_size: int) -> tuple:
    """Walk graph on batched values; returns (outputs, their batch dims)."""
    env = {id(v): x for v, x in zip(graph.inputs, args)}
    denv = {id(v): d for v, d in zip(graph.inputs, dims)}
    for eqn in graph.eqns:
        xs = [read(env, a, args) for a in eqn.inputs]
        ds = [denv.get(id(a)) for a in eqn.inputs]
        if all(d is None for d in ds):
            outs, odims = bind_like(args, eqn.prim, *xs, **eqn.params), [None] * len(
                eqn.outputs)
        else:
            rule = rule_for(batch_rules, eqn.prim, "vmap", eqn)
            outs, odims = rule(xs, ds, axis_size=axis_size, **eqn.params)
        for v, x, d in zip(eqn.outputs, outs, odims):
            env[id(v)] = x
            denv[id(v)] = d
    return [read(env, a) for a in graph.outputs], [denv.get(id(a)) for a in graph.outputs]


def move_to_front(x, d, axis_size: int):
    """x with its batch axis at 0; unbatched values are broadcast to axis_size."""
    import jx.numpy as jnp
    if d is None:
        a = get_aval(x)
        if isinstance(x, (np.ndarray, np.generic)):   # a graph's constant keeps its dtype
            x = Array(np.asarray(x), a.weak_type)     # (NumPy data would be canonicalised)
        return jnp.broadcast_to(x, (axis_size,) + a.shape)
    return x if d == 0 else jnp.moveaxis(x, d, 0)


def front_rule(prim):
    """The batching rule of a primitive that batches over its leading axes: every
    operand's batch axis to the front, then bind."""
    from jx.core import bind

    def rule(xs, ds, axis_size, **params):
        xs = [move_to_front(x, d, axis_size) for x, d in zip(xs, ds)]
        outs = bind(prim, *xs, **params)
        return outs, [0] * len(outs)
    return rule


def vmap_graph(graph: Graph, dims: Sequence, axis_size: int) -> Graph:
    """Graph -> Graph over batched inputs (batch axis at `dims`), outputs batched at 0."""
    in_avals = []
    for v, d in zip(graph.inputs, dims):
        shape = list(v.aval.shape)
        if d is not None:
            shape.insert(d, axis_size)
        in_avals.append(v.aval.update(shape=tuple(shape), weak_type=False))

    def walk(*args):
        outs, odims = vmap_eval(graph, args, dims, axis_size)
        return [move_to_front(o, d, axis_size) for o, d in zip(outs, odims)]

    return transform_graph(walk, in_avals, "vmap")
