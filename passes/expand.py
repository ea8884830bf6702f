"""Expand large factorisations into recursive blocked algorithms on dot_general.

A Cholesky, LU or triangular solve of an n x n matrix does O(n^3) work; done
unblocked it streams the matrix through the cache n times. Split in halves,
most of the work becomes matrix products (dot_general, which the backends run
on their packed, threaded GEMM), and only blocks of at most BASE[name] rows reach
the primitive's own unblocked kernel:

    cholesky:  L11 = chol(A11); L21 = A21 L11^-T; L22 = chol(A22 - L21 L21^T)
    trsm:      X1 = op(A11)^-1 B1; X2 = op(A22)^-1 (B2 - op(A)21 X1)   (and its mirror images)
    lu:        the left half's pivoted LU, its row swaps applied to the right half,
               U12 = L11^-1 A12, then the LU of A22 - L21 U12 (Toledo's recursion)

The expansion is a pass before simplify (which then folds its transposes into
the products), keyed by primitive in EXPANSIONS; a rule returns None to keep
its equation. Equations inside control-flow bodies are expanded too.
"""
from __future__ import annotations

import jx.numpy as jnp
from jx.numpy._factorizations import symmetrize
from jx.core import attributed, bind, bind_like
from jx.ir import Graph, Literal, map_subgraphs, subgraphs
from jx.prims import decompositions as dc
from jx.prims import structural as st

from .expand_conv import conv_rule
from .interpreters import read, transform_graph

# Rows of the blocks left to the unblocked kernels. Below ~64 rows a product is
# too small for the GEMM to pay (its packing dominates); the Cholesky and LU
# kernels run at GEMM-like speed up to a few hundred rows (dot products along
# rows in L2), so they take 128-row blocks: fewer levels of copies. Measured on
# Zen 5 at n = 1024 and 2048 (32..256 within 1.5x of each other everywhere).
BASE = {"cholesky": 128, "triangular_solve": 64, "lu": 128, "qr": 128}
# Columns per Householder panel. 32 (LAPACK's geqrf default) made a QR of 1024 x 1024
# 200 kernels and 10-15 s to compile; 64 halves the recursion's leaves.
QR_BLOCK = 64


def _half(n: int) -> int:
    """The split point: half of n, rounded to a multiple of 16 (whole vectors)."""
    return max(16, (n // 2) // 16 * 16)


def _t(x):
    return jnp.swapaxes(x, -1, -2)


def _grid(x, rows: int, cols: int):
    """(row, column) indices of a rows x cols matrix, staged from x: the triangle and
    identity masks are iota comparisons, not constants baked into the program
    (jnp.tril's masks are)."""
    import numpy as np
    i32 = np.dtype(np.int32)
    return tuple(bind_like((x,), st.iota, dtype=i32, shape=(rows, cols), dimension=d)[0]
                 for d in (0, 1))


# ------------------------------------------------------------------ cholesky

def _cholesky(a):
    n = a.shape[-1]
    if n <= BASE["cholesky"]:
        return bind(dc.cholesky, a)[0]
    h = _half(n)
    l11 = _cholesky(a[..., :h, :h])
    l21 = _trsm(l11, a[..., h:, :h], left_side=False, lower=True, transpose_a=True,
                unit_diagonal=False)
    l22 = _cholesky(a[..., h:, h:] - jnp.matmul(l21, _t(l21)))
    zeros = jnp.zeros_like(a[..., :h, h:])        # (staged from a: no constant)
    return jnp.concatenate([jnp.concatenate([l11, zeros], -1),
                            jnp.concatenate([l21, l22], -1)], -2)


def _cholesky_rule(eqn):
    if eqn.inputs[0].aval.shape[-1] <= BASE["cholesky"]:
        return None

    def expanded(a):
        if eqn.params.get("symmetrize_input"):
            a = symmetrize(a)
        out = _cholesky(a)
        # one failed block makes the factor's lower triangle NaN, as the unblocked
        # kernel does (a failure NaNs every later diagonal block, the last included)
        failed = jnp.isnan(out[..., -1, -1])[..., None, None]
        r, c = _grid(out, *out.shape[-2:])
        return [jnp.where(failed & (r >= c), jnp.nan, out)]
    return expanded


# ------------------------------------------------------------------ triangular solve

def _trsm(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    m = a.shape[-1]
    flags = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                 unit_diagonal=unit_diagonal)
    if m <= BASE["triangular_solve"]:
        return bind(dc.triangular_solve, a, b, conjugate_a=False, **flags)[0]
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T: the left-side recursion (rows of x as
        # axpys in the kernels: 2.5x faster than solving rows of x one by one at 512
        # and 1024)
        return _t(_trsm(a, _t(b), left_side=True, lower=lower, transpose_a=not transpose_a,
                        unit_diagonal=unit_diagonal))
    h = _half(m)
    a11, a22 = a[..., :h, :h], a[..., h:, h:]
    b1, b2 = b[..., :h, :], b[..., h:, :]      # op(a) x = b over row blocks of b
    if lower != transpose_a:                   # op(a) lower: its block below the diagonal
        op21 = _t(a[..., :h, h:]) if transpose_a else a[..., h:, :h]
        x1 = _trsm(a11, b1, **flags)
        x2 = _trsm(a22, b2 - jnp.matmul(op21, x1), **flags)
    else:                                      # op(a) upper: its block above
        op12 = _t(a[..., h:, :h]) if transpose_a else a[..., :h, h:]
        x2 = _trsm(a22, b2, **flags)
        x1 = _trsm(a11, b1 - jnp.matmul(op12, x2), **flags)
    return jnp.concatenate([x1, x2], -2)


def _trsm_rule(eqn):
    if eqn.inputs[0].aval.shape[-1] <= BASE["triangular_solve"]:
        return None
    p = eqn.params

    def expanded(a, b):
        return [_trsm(a, b, left_side=p["left_side"], lower=p["lower"],
                      transpose_a=p["transpose_a"], unit_diagonal=p["unit_diagonal"])]
    return expanded


# ------------------------------------------------------------------ lu

def _rows(x, perm):
    """x's rows (axis -2) in the order perm (batched like x)."""
    idx = jnp.broadcast_to(perm[..., :, None], perm.shape + (x.shape[-1],))
    return jnp.take_along_axis(x, idx, axis=-2)


def _lu(a):
    m, n = a.shape[-2:]
    k = min(m, n)
    if k <= BASE["lu"]:
        return bind(dc.lu, a)
    h = _half(k)
    lu1, piv1, perm1 = _lu(a[..., :, :h])                 # the left m x h panel
    right = _rows(a[..., :, h:], perm1)
    u12 = _trsm(lu1[..., :h, :h], right[..., :h, :], left_side=True, lower=True,
                transpose_a=False, unit_diagonal=True)
    s = right[..., h:, :] - jnp.matmul(lu1[..., h:, :], u12)
    lu2, piv2, perm2 = _lu(s)
    l21 = _rows(lu1[..., h:, :], perm2)
    lu = jnp.concatenate([jnp.concatenate([lu1[..., :h, :], u12], -1),
                          jnp.concatenate([l21, lu2], -1)], -2)
    pivots = jnp.concatenate([piv1, piv2 + h], -1)
    tail = jnp.take_along_axis(perm1[..., h:], perm2, axis=-1)
    return [lu, pivots, jnp.concatenate([perm1[..., :h], tail], -1)]


def _lu_rule(eqn):
    if min(eqn.inputs[0].aval.shape[-2:]) <= BASE["lu"]:
        return None
    return lambda a: list(_lu(a))


# ------------------------------------------------------------------ qr

def _eye_like(x, rows: int, cols: int):
    """The rows x cols identity in x's dtype (and batch)."""
    r, c = _grid(x, rows, cols)
    return jnp.broadcast_to((r == c).astype(x.dtype), x.shape[:-2] + (rows, cols))


def _unit_lower(packed):
    """V of a packed panel: its entries below the diagonal, ones on it."""
    r, c = _grid(packed, *packed.shape[-2:])
    return jnp.where(r > c, packed, (r == c).astype(packed.dtype))


def _qr_wy(a):
    """(V, T, R) of the tall a (m >= n): H_0 ... H_{n-1} = I - V T V^T (compact WY),
    R upper triangular, by Elmroth and Gustavson's recursion on column halves: the
    left half's reflectors update the right half in three products, and the two
    halves' T merge as [[T1, -T1 V1^T V2 T2], [0, T2]]. Panels of at most
    QR_BLOCK columns go to the householder_panel kernel (geqr2 + larft)."""
    n = a.shape[-1]
    if n <= QR_BLOCK:
        packed, t = bind(dc.householder_panel, a)
        top = packed[..., :n, :]
        r, c = _grid(top, n, n)
        return _unit_lower(packed), t, jnp.where(r <= c, top, 0)
    h = _half(n)
    v1, t1, r11 = _qr_wy(a[..., :, :h])
    a2 = a[..., :, h:]
    a2 = a2 - jnp.matmul(v1, jnp.matmul(_t(t1), jnp.matmul(_t(v1), a2)))
    v2, t2, r22 = _qr_wy(a2[..., h:, :])
    t12 = -jnp.matmul(t1, jnp.matmul(jnp.matmul(_t(v1[..., h:, :]), v2), t2))
    v = jnp.concatenate([v1, jnp.concatenate([jnp.zeros_like(a2[..., :h, :]), v2], -2)], -1)
    t = jnp.concatenate([jnp.concatenate([t1, t12], -1),
                         jnp.concatenate([jnp.zeros_like(_t(t12)), t2], -1)], -2)
    r = jnp.concatenate([jnp.concatenate([r11, a2[..., :h, :]], -1),
                         jnp.concatenate([jnp.zeros_like(_t(a2[..., :h, :])), r22], -1)], -2)
    return v, t, r


def _qr(a, full_matrices: bool):
    """Householder QR in compact WY form (_qr_wy) on the first min(m, n) columns;
    the rest of a wide matrix gets H^T = I - V T^T V^T; Q = I - V T V^T (its first
    kq columns) in two products."""
    m, n = a.shape[-2:]
    k = min(m, n)
    kq = m if full_matrices else k
    v, t, r = _qr_wy(a[..., :, :k])
    if n > k:
        rest = a[..., :, k:]
        rest = rest - jnp.matmul(v, jnp.matmul(_t(t), jnp.matmul(_t(v), rest)))
        r = jnp.concatenate([r, rest], -1)
    if kq > k:                                   # complete mode: zero rows below
        r = jnp.concatenate([r, jnp.zeros_like(a[..., :kq - k, :])], -2)
    q = _eye_like(v, m, kq) - jnp.matmul(v, jnp.matmul(t, _t(v[..., :kq, :])))
    return [q, r]


def _qr_rule(eqn):
    m, n = eqn.inputs[0].aval.shape[-2:]
    if min(m, n) <= BASE["qr"]:
        return None
    full = eqn.params["full_matrices"]
    return lambda a: _qr(a, full)


EXPANSIONS = {"cholesky": _cholesky_rule, "triangular_solve": _trsm_rule, "lu": _lu_rule,
              "qr": _qr_rule, "conv_general_dilated": conv_rule}


# ------------------------------------------------------------------ the pass

def _wanted(graph: Graph) -> bool:
    for eqn in graph.eqns:
        rule = EXPANSIONS.get(eqn.prim.name)
        if (rule is not None and rule(eqn) is not None) or any(map(_wanted, subgraphs(eqn))):
            return True
    return False


def expand(graph: Graph) -> Graph:
    if not _wanted(graph):
        return graph

    def walk(*args):
        env = {id(v): x for v, x in zip(graph.inputs, args)}
        for eqn in graph.eqns:
            ins = [read(env, a, args) for a in eqn.inputs]
            rule = EXPANSIONS.get(eqn.prim.name)
            fn = rule(eqn) if rule is not None else None
            with attributed(eqn.source):
                outs = fn(*ins) if fn is not None else \
                    bind(eqn.prim, *ins, **map_subgraphs(eqn.params, expand))
            env.update({id(v): o for v, o in zip(eqn.outputs, outs)})
        return [a.val if isinstance(a, Literal) else env[id(a)] for a in graph.outputs]

    out = transform_graph(walk, [v.aval for v in graph.inputs], "expand")
    return Graph(out.inputs, out.eqns, out.outputs, graph.in_tree, graph.out_tree)
