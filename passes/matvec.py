"""Matrix-vector products of computed matrices as fused reductions.

`(dx * inv_r3) @ mass` with mass a column: a matrix product would need the
N x N operand in memory, written by one kernel and read back by the product.
As `reduce_sum(lhs * mass_row, axis=1)` the elementwise work that computes the
matrix fuses into the reduction's loop, and the matrix never exists. Products
whose matrix is already in memory (an input, an opaque result) keep the BLAS-like
kernel, which reads it once either way.
"""
from __future__ import annotations

from jx.ir import Eqn, Graph, ShapedArray, Var
from jx.prims import elementwise as ew
from jx.prims import reductions as red
from jx.prims import structural as st

_MATMUL = (((1,), (0,)), ((), ()))


def _column_product(eqn: Eqn, producer: dict, fusible):
    """[eqns] computing lhs @ rhs for an (M, K) lhs made by fusible work and a
    (K, 1) rhs, or None."""
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    if tuple(eqn.params.get("dimension_numbers", ())) != _MATMUL:
        return None
    la, ra = lhs.aval, rhs.aval
    if len(la.shape) != 2 or len(ra.shape) != 2 or ra.shape[1] != 1 or la.shape[0] < 2:
        return None
    if not (la.dtype == ra.dtype == out.aval.dtype) or la.dtype.kind != "f":
        return None
    made = producer.get(id(lhs))
    if made is None or made.prim.name not in fusible:
        return None
    (m, k), dt = la.shape, la.dtype
    row, wide = Var(ShapedArray((k,), dt)), Var(ShapedArray((m, k), dt))
    prod, sums = Var(ShapedArray((m, k), dt)), Var(ShapedArray((m,), dt))
    src = eqn.source
    return [Eqn(st.reshape, (rhs,), {"new_sizes": (k,)}, (row,), src),
            Eqn(st.broadcast_in_dim, (row,), {"shape": (m, k), "broadcast_dimensions": (1,)},
                (wide,), src),
            Eqn(ew.mul, (lhs, wide), {}, (prod,), src),
            Eqn(red.reduce_sum, (prod,), {"axes": (1,)}, (sums,), src),
            Eqn(st.reshape, (sums,), {"new_sizes": (m, 1)}, (out,), src)]


RULES = {"dot_general": _column_product}


def matvec_as_reduction(graph: Graph, fusible: frozenset) -> Graph:
    """graph with its column products of fusible matrices as reductions (fusion
    runs it first; `fusible` names the primitives fusion computes in loops)."""
    producer = {id(v): e for e in graph.eqns for v in e.outputs}
    eqns, changed = [], False
    for eqn in graph.eqns:
        params = {k: _sub(v, fusible) for k, v in eqn.params.items()}
        if any(params[k] is not eqn.params[k] for k in params):
            eqn, changed = Eqn(eqn.prim, eqn.inputs, params, eqn.outputs, eqn.source), True
        rule = RULES.get(eqn.prim.name)
        new = rule(eqn, producer, fusible) if rule is not None else None
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return graph
    return Graph(graph.inputs, tuple(eqns), graph.outputs, graph.in_tree, graph.out_tree)


def _sub(v, fusible):
    """Loop and branch bodies are graphs too."""
    if isinstance(v, Graph):
        return matvec_as_reduction(v, fusible)
    if isinstance(v, tuple) and any(isinstance(g, Graph) for g in v):
        return tuple(matvec_as_reduction(g, fusible) if isinstance(g, Graph) else g
                     for g in v)
    return v
