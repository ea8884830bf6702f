"""Matrix-vector products (and, in programs with many, small matrix products) as
fused reductions.

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

from jx.ir import Eqn, Graph, ShapedArray, Var, subgraphs
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
    if not (la.dtype == ra.dtype == out.aval.dtype) or la.dtype.kind != "f" or \
            la.dtype.itemsize < 4:        # (a float16 product sums in float32: opaque.py)
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


# Multiply-adds up to which a matrix-matrix product is a fused reduction too, in a
# program with at least MANY_PRODUCTS of them: a GEMM kernel brings its packing and
# micro-kernel calls, a compile cost that a small product (16x32 @ 32x32, a layer of
# an unrolled network) never earns back (the gradient of a 100-layer 16-wide MLP:
# 4.1 -> 2.5 s to its first result; 256 branches of 16x32 @ 32x32: 4.9 -> 2.3 s).
# A program with a few of them keeps the GEMM, whose run time is the better one.
SMALL_PRODUCT = 1 << 14
MANY_PRODUCTS = 32


def _small_product(eqn: Eqn):
    """[eqns] computing a small 2-D matrix product as reduce_sum(a[:, None, :] *
    b_t[None, :, :], axis=2), or None."""
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    la, ra = lhs.aval, rhs.aval
    if lb or rb or len(lc) != 1 or len(la.shape) != 2 or len(ra.shape) != 2:
        return None
    if not (la.dtype == ra.dtype == out.aval.dtype) or la.dtype.kind != "f" or \
            la.dtype.itemsize < 4:        # (a float16 product sums in float32: opaque.py)
        return None
    m, k = la.shape[1 - lc[0]], la.shape[lc[0]]
    n = ra.shape[1 - rc[0]]
    if m * n * k > SMALL_PRODUCT or 0 in (m, n, k):
        return None
    dt, src = la.dtype, eqn.source
    wide = (m, n, k)
    a3, b3, prod = (Var(ShapedArray(wide, dt)) for _ in range(3))
    # each operand's free dim to its place in (m, n, k), its contracted dim to k:
    # broadcast_in_dim with dims in operand order does the transposes for free
    a_dims = (2, 0) if lc[0] == 0 else (0, 2)
    b_dims = (2, 1) if rc[0] == 0 else (1, 2)
    return [Eqn(st.broadcast_in_dim, (lhs,), {"shape": wide, "broadcast_dimensions": a_dims},
                (a3,), src),
            Eqn(st.broadcast_in_dim, (rhs,), {"shape": wide, "broadcast_dimensions": b_dims},
                (b3,), src),
            Eqn(ew.mul, (a3, b3), {}, (prod,), src),
            Eqn(red.reduce_sum, (prod,), {"axes": (2,)}, (out,), src)]


RULES = {"dot_general": _vector_product}


def matvec_as_reduction(graph: Graph, small: bool | None = None) -> Graph:
    """graph with its matrix-vector products as reductions (fusion runs it first),
    and its small matrix products too where the program has many (small: decided
    for the whole program, nested bodies included)."""
    if small is None:
        small = _count_small(graph) >= MANY_PRODUCTS
    eqns, changed = [], False
    for eqn in graph.eqns:
        params = {k: _sub(v, small) for k, v in eqn.params.items()}
        if any(params[k] is not eqn.params[k] for k in params):
            eqn, changed = Eqn(eqn.prim, eqn.inputs, params, eqn.outputs, eqn.source), True
        rule = RULES.get(eqn.prim.name)
        new = rule(eqn) if rule is not None else None
        if new is None and small and eqn.prim.name == "dot_general":
            new = _small_product(eqn)
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return graph
    return Graph(graph.inputs, tuple(eqns), graph.outputs, graph.in_tree, graph.out_tree)


def _sub(v, small: bool):
    """Loop and branch bodies are graphs too."""
    if isinstance(v, Graph):
        return matvec_as_reduction(v, small)
    if isinstance(v, tuple) and any(isinstance(g, Graph) for g in v):
        return tuple(matvec_as_reduction(g, small) if isinstance(g, Graph) else g for g in v)
    return v


def _count_small(graph: Graph) -> int:
    """Small matrix-matrix products in graph and its bodies (an explicit stack)."""
    n, stack = 0, [graph]
    while stack:
        g = stack.pop()
        for eqn in g.eqns:
            if eqn.prim.name == "dot_general" and _vector_product(eqn) is None and \
                    _small_product(eqn) is not None:
                n += 1
            stack.extend(subgraphs(eqn))
    return n
