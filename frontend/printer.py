"""Stable, readable text for graphs: names in order of first appearance, params
sorted, numbers printed by value, no object ids. Golden tests diff this text."""
from __future__ import annotations

import numpy as np

from . import dtypes
from .ir import Graph, Literal, Var, set_graph_text


def _name(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


class _Names:
    def __init__(self):
        self.names: dict = {}

    def __call__(self, v: Var) -> str:
        if id(v) not in self.names:
            self.names[id(v)] = (_name(len(self.names)), v)   # keep v alive: ids stay unique
        return self.names[id(v)][0]


def format_value(v) -> str:
    """Param and literal values: fixed formatting, dtypes by short name."""
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return dtypes.short_name(v)
    if isinstance(v, tuple):
        inner = ",".join(format_value(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})"
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return str(v[()])
        return f"array<{dtypes.short_name(v.dtype)}{list(v.shape)}>"
    if isinstance(v, (float, np.floating)):
        return str(np.float64(v)) if isinstance(v, float) else str(v)
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


def _atom(a, names: _Names) -> str:
    if isinstance(a, Literal):
        if a.aval.shape == ():
            return f"{format_value(a.val)}:{dtypes.short_name(a.aval.dtype)}"
        return f"const<{a.aval}>"
    return names(a)


def _binder(v: Var, names: _Names) -> str:
    return f"{names(v)}:{v.aval}"


def _graph_lines(g: Graph, names: _Names, indent: str) -> list:
    args = ", ".join(_binder(v, names) for v in g.inputs)
    lines = [f"graph({args}) {{"]
    for eqn in g.eqns:
        outs = " ".join(_binder(v, names) for v in eqn.outputs)
        plain = {k: v for k, v in eqn.params.items() if not _holds_graph(v)}
        params = " ".join(f"{k}={format_value(plain[k])}" for k in sorted(plain))
        ins = " ".join(_atom(a, names) for a in eqn.inputs)
        head = f"  {outs} = {eqn.prim.name}" + (f"[{params}]" if params else "")
        lines.append(head + (f" {ins}" if ins else ""))
        for k in sorted(eqn.params):
            v = eqn.params[k]
            subs = [(k, v)] if isinstance(v, Graph) else \
                [(f"{k}[{i}]", s) for i, s in enumerate(v)] if _holds_graph(v) else []
            for label, sub in subs:
                body = _graph_lines(sub, names, "")
                lines.append(f"    {label} = {body[0]}")
                lines.extend("    " + ln for ln in body[1:])
    outs = ", ".join(_atom(a, names) for a in g.outputs)
    lines.append(f"  return ({outs})")
    lines.append("}")
    return [indent + ln for ln in lines]


def _holds_graph(v) -> bool:
    return isinstance(v, Graph) or (isinstance(v, tuple) and any(isinstance(x, Graph) for x in v))


def format_graph(g: Graph) -> str:
    return "\n".join(_graph_lines(g, _Names(), ""))


set_graph_text(format_graph)     # str(graph) is this text
