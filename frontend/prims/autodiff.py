"""Primitives that exist for the transformations: stop_gradient, checkpoint,
custom_jvp_call and custom_vjp_call. Their params hold the traced sub-graphs
(and, for custom_vjp, the user's backward function)."""
from __future__ import annotations

from ..core import declare
from ..errors import ShapeError
from ..interpret import eval_graph


def _graph_call_rule(graph_param: str, n_skip: str | None = None):
    """Operands are (consts..., args...); the result avals are the graph's outputs."""
    def rule(*avals, **params):
        g = params[graph_param]
        skip = params.get(n_skip, 0) if n_skip else 0
        ins = list(avals[:params.get("num_consts", 0)]) + list(avals[params.get(
            "num_consts", 0) + skip:])
        if len(ins) != len(g.inputs) or any(not a.same_type(v.aval)
                                            for a, v in zip(ins, g.inputs)):
            raise ShapeError(f"operands {ins} do not match the graph inputs {g.in_avals}")
        return [a.strip_weak() for a in g.out_avals]
    return rule


def _call_impl(graph_param: str, n_skip: str | None = None):
    def impl(*args, **params):
        n = params.get("num_consts", 0)
        skip = params.get(n_skip, 0) if n_skip else 0
        return eval_graph(params[graph_param], *args[:n], *args[n + skip:])
    return impl


stop_gradient = declare("stop_gradient", lambda x: x, lambda x: x)   # keeps weak types, as JAX

checkpoint = declare("checkpoint", _graph_call_rule("body"), _call_impl("body"),
                     multiple_results=True)

# operands: call consts, args; `jvp` is the user's rule on flat values.
custom_jvp_call = declare("custom_jvp_call", _graph_call_rule("call"), _call_impl("call"),
                          multiple_results=True)

# operands: call consts, fwd consts, args (same layout as custom_jvp_call).
custom_vjp_call = declare("custom_vjp_call", _graph_call_rule("call", "num_fwd_consts"),
                          _call_impl("call", "num_fwd_consts"), multiple_results=True)
