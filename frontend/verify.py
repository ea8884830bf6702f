"""The IR verifier: re-derives every type and checks single definition and
definition before use. Run between passes in tests."""
from __future__ import annotations

from .errors import JxError, VerifyError
from .ir import Graph, Literal, Var, subgraphs


def verify(graph: Graph, where: str = "graph") -> Graph:
    """Raise VerifyError naming the bad equation; return the graph when it is sound."""
    defined: set = set()

    def define(v, ctx: str):
        if not isinstance(v, Var):
            raise VerifyError(f"{where}: {ctx} binds {v!r}, which is not a Var")
        if id(v) in defined:
            raise VerifyError(f"{where}: {ctx} redefines a variable ({v.aval})")
        defined.add(id(v))

    for v in graph.inputs:
        define(v, "graph input")
    for i, eqn in enumerate(graph.eqns):
        ctx = _describe(graph, i)
        for a in eqn.inputs:
            if isinstance(a, Var) and id(a) not in defined:
                raise VerifyError(f"{where}: {ctx} uses a variable before its definition")
            if not isinstance(a, (Var, Literal)):
                raise VerifyError(f"{where}: {ctx} has a non-atom input {a!r}")
        try:
            expect = eqn.prim.abstract_eval(*[a.aval for a in eqn.inputs], **eqn.params)
        except JxError as e:
            raise VerifyError(f"{where}: {ctx} fails its type rule: {e}") from None
        if len(expect) != len(eqn.outputs):
            raise VerifyError(f"{where}: {ctx} has {len(eqn.outputs)} outputs, "
                              f"the rule gives {len(expect)}")
        for v, t in zip(eqn.outputs, expect):
            if not v.aval.same_type(t):
                raise VerifyError(f"{where}: {ctx} declares {v.aval} but its rule gives {t}")
            define(v, ctx)
        for sub in subgraphs(eqn):
            verify(sub, f"{where} / {eqn.prim.name} sub-graph")
    for a in graph.outputs:
        if isinstance(a, Var) and id(a) not in defined:
            raise VerifyError(f"{where}: output {a.aval} is never defined")
    return graph


def _describe(graph: Graph, i: int) -> str:
    eqn = graph.eqns[i]
    src = f" from {eqn.source}" if eqn.source else ""
    names = [e.prim.name for e in graph.eqns[max(0, i - 2):i + 3]]
    return f"equation {i} ({eqn.prim.name}{src}; near: {' '.join(names)})"
