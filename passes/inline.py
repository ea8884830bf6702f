"""Inline the call-like primitives (checkpoint, custom_jvp_call, custom_vjp_call).

They only matter to the transformations; once a graph goes to a backend, their
bodies are ordinary equations, which fusion can then see through.
"""
from __future__ import annotations

from jx.ir import Eqn, Graph, Literal, Var, map_subgraphs

# primitive name -> (param holding the body graph, params counting operands the body skips)
CALLS = {
    "checkpoint": ("body", None),
    "custom_jvp_call": ("call", None),
    "custom_vjp_call": ("call", "num_fwd_consts"),
}


def inline_calls(graph: Graph) -> Graph:
    subst: dict = {}
    eqns: list = []

    def atom(a):
        return subst.get(id(a), a) if isinstance(a, Var) else a

    for eqn in graph.eqns:
        ins = [atom(a) for a in eqn.inputs]
        spec = CALLS.get(eqn.prim.name)
        if spec is None:
            params = map_subgraphs(eqn.params, inline_calls)
            eqns.append(Eqn(eqn.prim, tuple(ins), params, eqn.outputs, eqn.source))
            continue
        body = inline_calls(eqn.params[spec[0]])
        n = eqn.params.get("num_consts", 0)
        skip = eqn.params.get(spec[1], 0) if spec[1] else 0
        operands = ins[:n] + ins[n + skip:]
        env = {id(v): a for v, a in zip(body.inputs, operands)}
        for inner in body.eqns:
            outs = tuple(Var(v.aval) for v in inner.outputs)
            env.update({id(v): o for v, o in zip(inner.outputs, outs)})
            eqns.append(Eqn(inner.prim, tuple(env.get(id(a), a) if isinstance(a, Var) else a
                                              for a in inner.inputs),
                            inner.params, outs, inner.source))
        for v, o in zip(eqn.outputs, body.outputs):
            subst[id(v)] = o if isinstance(o, Literal) else env.get(id(o), o)
    outs = tuple(atom(a) for a in graph.outputs)
    return Graph(graph.inputs, tuple(eqns), outs, graph.in_tree, graph.out_tree)

