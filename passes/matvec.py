"""Matrix-vector products as fused reductions.

`(dx * inv_r3) @ mass` with mass a column: as a matrix product the N x N operand
must exist in memory, written by one kernel and read back by the product. As
`reduce_sum(lhs * mass_row, axis=1)` the elementwise work that computes the
matrix fuses into the reduction's loop, and the matrix never exists. A product
with one side a vector is memory-bound either way, so the reduction costs nothing
when the matrix is already in memory (measured against the product kernel on
200 x 50 to 4096 x 4096, both orientations: equal or faster), and it saves the
product kernel's fixed costs on the small ones inside loop bodies (a sampler's
gradient, 200 x 50, twice per leapfrog step).
"""
from __future__ import annotations

from jx.ir import Eqn, Graph, ShapedArray, Var
from jx.prims import elementwise as ew
from jx.prims import reductions as red
from jx.prims import structural as st


def _vector_product(eqn: Eqn):
    """[eqns] computing a dot_general with a size-1 free dimension on one side
    (matrix @ column, row @ matrix, either matrix orientation) or of two vectors,
    or None."""
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    la, ra = lhs.aval, rhs.aval
    if lb or rb or len(lc) != 1 or len(la.shape) != len(ra.shape) or len(la.shape) not in (1, 2):
        return None
    if not (la.dtype == ra.dtype == out.aval.dtype) or la.dtype.kind != "f":
        return None
    lc, rc = lc[0], rc[0]
    if len(la.shape) == len(ra.shape) == 1:      # vector . vector
        prod = Var(ShapedArray(la.shape, la.dtype))
        return [Eqn(ew.mul, (lhs, rhs), {}, (prod,), eqn.source),
                Eqn(red.reduce_sum, (prod,), {"axes": (0,)}, (out,), eqn.source)]
    if ra.shape[1 - rc] == 1:              # matrix = lhs, vector = rhs
        mat, vec, axis = lhs, rhs, lc
    elif la.shape[1 - lc] == 1:            # vector = lhs, matrix = rhs
        mat, vec, axis = rhs, lhs, rc
    else:
        return None
    shape, dt = mat.aval.shape, la.dtype
    k = shape[axis]
    # the product reshaped (a free index map) so that the reduction writes the
    # output's shape itself: out.shape with K inserted first (axis 0) or last
    at = 0 if axis == 0 else 2
    deep = out.aval.shape[:at] + (k,) + out.aval.shape[at:]
    flat, wide = Var(ShapedArray((k,), dt)), Var(ShapedArray(shape, dt))
    prod = Var(ShapedArray(shape, dt))
    src = eqn.source
    eqns = [Eqn(st.reshape, (vec,), {"new_sizes": (k,)}, (flat,), src),
            Eqn(st.broadcast_in_dim, (flat,), {"shape": shape, "broadcast_dimensions": (axis,)},
                (wide,), src),
            Eqn(ew.mul, (mat, wide), {}, (prod,), src)]
    if at == 0 and deep[-1] == 1:
        # a column sum into a trailing unit dim runs slower than into a vector (the
        # row-wise accumulation wants the kept dims contiguous): reduce, then reshape
        sums = Var(ShapedArray((shape[1],), dt))
        return eqns + [Eqn(red.reduce_sum, (prod,), {"axes": (0,)}, (sums,), src),
                       Eqn(st.reshape, (sums,), {"new_sizes": out.aval.shape}, (out,), src)]
    prod3 = Var(ShapedArray(deep, dt))
    return eqns + [Eqn(st.reshape, (prod,), {"new_sizes": deep}, (prod3,), src),
                   Eqn(red.reduce_sum, (prod3,), {"axes": (at,)}, (out,), src)]


RULES = {"dot_general": _vector_product}


def matvec_as_reduction(graph: Graph) -> Graph:
    """graph with its matrix-vector products as reductions (fusion runs it first)."""
    eqns, changed = [], False
    for eqn in graph.eqns:
        params = {k: _sub(v) for k, v in eqn.params.items()}
        if any(params[k] is not eqn.params[k] for k in params):
            eqn, changed = Eqn(eqn.prim, eqn.inputs, params, eqn.outputs, eqn.source), True
        rule = RULES.get(eqn.prim.name)
        new = rule(eqn) if rule is not None else None
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return graph
    return Graph(graph.inputs, tuple(eqns), graph.outputs, graph.in_tree, graph.out_tree)


def _sub(v):
    """Loop and branch bodies are graphs too."""
    if isinstance(v, Graph):
        return matvec_as_reduction(v)
    if isinstance(v, tuple) and any(isinstance(g, Graph) for g in v):
        return tuple(matvec_as_reduction(g) if isinstance(g, Graph) else g for g in v)
    return v
