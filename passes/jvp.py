"""Forward mode: the jvp pass.

`jvp_rules[name](primals, tangents, **params) -> (primal_outs, tangent_outs)`.
A tangent of None is a symbolic zero: rules skip work for it and it is never
materialised unless an output needs it. Float and complex values carry tangents
of their own dtype; integer and bool values never do (JAX's float0).
"""
from __future__ import annotations

from typing import Callable, Sequence

from jx import dtypes
from jx.core import bind_like, get_aval
from jx.ir import Graph

from .interpreters import (NotDifferentiable, RuleTable, as_traced, read, rule_for,
                           trace_function, transform_graph, with_weak)

jvp_rules = RuleTable()   # filled by the rule families on first read


def jvp_eval(graph: Graph, primals: Sequence, tangents: Sequence) -> tuple:
    """Walk graph on primal values with tangents (None = zero); returns both outputs."""
    penv = {id(v): x for v, x in zip(graph.inputs, primals)}
    tenv = {id(v): t for v, t in zip(graph.inputs, tangents)}
    for eqn in graph.eqns:
        ps = [read(penv, a, primals) for a in eqn.inputs]
        ts = [tenv.get(id(a)) for a in eqn.inputs]
        rule = rule_for(jvp_rules, eqn.prim, "jvp", eqn)
        if isinstance(rule, NotDifferentiable) or all(t is None for t in ts):
            outs, touts = bind_like(primals, eqn.prim, *ps, **eqn.params), [None] * len(
                eqn.outputs)
        else:
            outs, touts = rule(ps, ts, **eqn.params)
        for v, x, t in zip(eqn.outputs, outs, touts):
            penv[id(v)] = x
            tenv[id(v)] = t if dtypes.is_inexact(v.aval.dtype) else None
    outs = [read(penv, a) for a in graph.outputs]
    touts = [tenv.get(id(a)) for a in graph.outputs]
    return outs, touts


def jvp_graph(graph: Graph, nonzero: Sequence[bool] | None = None,
              instantiate: bool = True) -> Graph:
    """Graph -> Graph: inputs (primals, tangents of the `nonzero` inputs),
    outputs (primal outputs, tangent outputs; zeros materialised)."""
    from .zeros import zeros_like
    nonzero = [True] * len(graph.inputs) if nonzero is None else list(nonzero)
    n = len(graph.inputs)
    t_avals = [v.aval for v, nz in zip(graph.inputs, nonzero) if nz]

    def walk(*args):
        it = iter(args[n:])
        tangents = [next(it) if nz else None for nz in nonzero]
        outs, touts = jvp_eval(graph, args[:n], tangents)
        if instantiate:
            touts = [zeros_like(o) if t is None else t for o, t in zip(outs, touts)]
        return list(outs) + [t for t in touts if t is not None]

    return transform_graph(walk, graph.in_avals + t_avals, "jvp")


def jvp_function(f: Callable, primals: Sequence, tangents: Sequence,
                 known: bool = False) -> tuple:
    """Forward mode through a Python function: trace f at the pytree `primals` and
    walk it with `tangents`, one per primal leaf (those of non-float leaves are
    dropped; the outer values the trace captured carry none). Returns (outputs,
    their tangents with zeros materialised, the outputs' tree). jx.jvp and the
    rules that differentiate a function of their own both come here; known=True
    (jx.jvp) traces f at the primals' values when they are concrete."""
    from .zeros import stage_like, zeros_like
    graph, consts, leaves = trace_function(f, primals, "jvp", known)
    ts = [None] * len(consts) + [stage_like(as_traced(t, get_aval(p)), leaves)
                                 if dtypes.is_inexact(get_aval(p).dtype) else None
                                 for p, t in zip(leaves, tangents)]
    outs, touts = jvp_eval(graph, consts + leaves, ts)
    touts = [zeros_like(o) if t is None else t for o, t in zip(outs, touts)]
    return with_weak(outs, graph.out_avals), with_weak(touts, graph.out_avals), graph.out_tree
