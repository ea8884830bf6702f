"""Reverse mode: the vjp pass.

Reverse mode uses direct vjp rules rather than JAX's linearize-then-transpose.
Why: in a graph-to-graph compiler a vjp rule is one readable function of the
forward values, with no partial evaluator to separate primal from tangent
work; the forward values a rule needs are simply the forward graph's
variables, which the fusion pass can keep or recompute. The cost, two tables
(jvp and vjp), is kept honest by the <vjp(u), v> == <u, jvp(v)> property test.

`vjp_rules[name](cts_out, primals_in, primals_out, **params) -> cts_in`
where any cotangent may be None (a symbolic zero that is never materialised).
Complex values follow JAX: a cotangent pairs with a tangent through the bilinear
Re(sum(ct * t)), unconjugated, so a holomorphic f's rule is ct * f'(x) and
grad of a real function of z returns the conjugate of its steepest ascent.
"""
from __future__ import annotations

from typing import Callable, Sequence

from jx import dtypes
from jx.core import bind_like
from jx.ir import Graph

from .interpreters import (NotDifferentiable, RuleTable, read, rule_for, trace_function,
                           transform_graph, with_weak)
from .zeros import add_any, stage_like, zeros_like

vjp_rules = RuleTable()   # filled by the rule families on first read


def forward(graph: Graph, primals: Sequence) -> tuple:
    """Evaluate graph keeping every value: (env, outputs)."""
    env = {id(v): x for v, x in zip(graph.inputs, primals)}
    for eqn in graph.eqns:
        outs = bind_like(primals, eqn.prim, *[read(env, a, primals) for a in eqn.inputs],
                         **eqn.params)
        for v, x in zip(eqn.outputs, outs):
            env[id(v)] = x
    return env, [read(env, a) for a in graph.outputs]


def backward(graph: Graph, env: dict, cts_out: Sequence) -> list:
    """Propagate output cotangents (None = zero) back to the graph inputs."""
    ct_env: dict = {}
    graph_inputs = [env[id(v)] for v in graph.inputs]
    for a, ct in zip(graph.outputs, cts_out):
        if ct is not None and not hasattr(a, "val"):
            ct_env[id(a)] = add_any(ct_env.get(id(a)), ct)
    for eqn in reversed(graph.eqns):
        cts = [ct_env.pop(id(v), None) for v in eqn.outputs]
        if all(c is None for c in cts):
            continue
        rule = rule_for(vjp_rules, eqn.prim, "vjp", eqn)
        if isinstance(rule, NotDifferentiable):
            continue
        ins = [read(env, a, graph_inputs) for a in eqn.inputs]
        outs = [env[id(v)] for v in eqn.outputs]
        cts_in = rule(cts, ins, outs, **eqn.params)
        for a, ct in zip(eqn.inputs, cts_in):
            if ct is None or hasattr(a, "val") or not dtypes.is_inexact(a.aval.dtype):
                continue
            ct_env[id(a)] = add_any(ct_env.get(id(a)), ct)
    return [ct_env.get(id(v)) for v in graph.inputs]


def vjp_graph(graph: Graph, wrt: Sequence[bool] | None = None) -> Graph:
    """Graph -> Graph: inputs (primals, output cotangents), outputs (primal
    outputs, cotangents of the `wrt` inputs; zeros materialised)."""
    wrt = [True] * len(graph.inputs) if wrt is None else list(wrt)
    n = len(graph.inputs)

    def walk(*args):
        env, outs = forward(graph, args[:n])
        cts = backward(graph, env, args[n:])
        grads = [zeros_like(x) if c is None else c
                 for x, c, w in zip(args[:n], cts, wrt) if w]
        return list(outs) + grads

    return transform_graph(walk, graph.in_avals + graph.out_avals, "vjp")


def vjp_function(f: Callable, primals: Sequence, known: bool = False) -> tuple:
    """Reverse mode through a Python function: trace f at the pytree `primals` and
    run it forward. Returns (outputs, their tree, the primal leaves, pullback), where
    pullback(cts) takes cotangents of the leading outputs (the rest are zero) and
    returns one per primal leaf (None = zero). jx.vjp and the rules that
    differentiate a function of their own both come here; known=True (jx.vjp)
    traces f at the primals' values when they are concrete."""
    graph, consts, leaves = trace_function(f, primals, "vjp", known)
    env, outs = forward(graph, consts + leaves)
    outs = with_weak(outs, graph.out_avals)

    def pullback(cts: Sequence) -> list:
        like = outs[:len(cts)]          # staged with the outputs they belong to
        cts = [None if c is None else stage_like(c, like) for c in cts]
        full = cts + [None] * (len(graph.outputs) - len(cts))
        return backward(graph, env, full)[len(consts):]

    return outs, graph.out_tree, leaves, pullback
