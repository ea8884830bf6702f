"""jx.lax.linalg: the decomposition primitives with jax.lax.linalg's signatures.

No promotion here (as in lax): operands are float32 or float64 matrices with any
leading batch axes. jx.numpy.linalg and jx.scipy.linalg build on these.
"""
from __future__ import annotations

from ..errors import ShapeError
from ..numpy._factorizations import cholesky, eigh, lu, qr, svd, triangular_solve  # noqa: F401
from ..numpy._util import as_value, shape_of
from ..numpy.creation import _wrap_public
from ..prims import decompositions as dc


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that applying the row swaps `pivots` in order makes."""
    from .. import numpy as jnp
    from .control_flow import fori_loop
    pivots = jnp.asarray(pivots)          # (a NumPy array cannot take the traced index)
    batch = shape_of(pivots)[:-1]
    k = shape_of(pivots)[-1]
    if permutation_size < k:
        raise ShapeError(f"lu_pivots_to_permutation: permutation_size {permutation_size} is "
                         f"smaller than the number of pivots {k}")
    perm = jnp.broadcast_to(jnp.arange(permutation_size, dtype=jnp.int32),
                            batch + (permutation_size,))

    def swap(i, p):
        j = pivots[..., i]
        pi = jnp.take_along_axis(p, jnp.full(batch + (1,), i, jnp.int32), -1)
        pj = jnp.take_along_axis(p, j[..., None], -1)
        cols = jnp.arange(permutation_size, dtype=jnp.int32)
        p = jnp.where(cols == i, pj, p)
        return jnp.where(cols == j[..., None], pi, p)
    return fori_loop(0, k, swap, perm) if k else perm


def tridiagonal_solve(dl, d, du, b):
    """x with T x = b for the tridiagonal T of sub-diagonal dl (dl[..., 0] unused),
    diagonal d and super-diagonal du (du[..., -1] unused), b of shape (..., m, n):
    the Thomas algorithm (no pivoting, as JAX's gtsv-free path), two scans over m."""
    from .. import numpy as jnp
    from .control_flow import scan
    dl, d, du, b = (as_value(x) for x in (dl, d, du, b))
    m = shape_of(d)[-1]
    for name, x in (("dl", dl), ("du", du)):
        if shape_of(x) != shape_of(d):
            raise ShapeError(f"tridiagonal_solve: {name} has shape {shape_of(x)}, d has "
                             f"{shape_of(d)}; the three diagonals must share one shape")
    if shape_of(b)[:-1] != shape_of(d):
        raise ShapeError(f"tridiagonal_solve: b has shape {shape_of(b)}; it must be "
                         f"{shape_of(d)} + (number of right-hand sides,)")
    if m == 0:
        return b
    dl, d, du = (jnp.moveaxis(x, -1, 0) for x in (dl, d, du))
    bm = jnp.moveaxis(b, -2, 0)

    def eliminate(carry, row):
        c_prev, y_prev = carry
        l, dd, u, bb = row
        denom = dd - l * c_prev
        c = u / denom
        y = (bb - l[..., None] * y_prev) / denom[..., None]
        return (c, y), (c, y)
    zero = jnp.zeros_like(d[0])
    _, (c, y) = scan(eliminate, (zero, jnp.zeros_like(bm[0])), (dl.at[0].set(0), d, du, bm))

    def substitute(x_next, row):
        cc, yy = row
        x = yy - cc[..., None] * x_next
        return x, x
    _, x = scan(substitute, jnp.zeros_like(bm[0]), (c, y), reverse=True)
    return jnp.moveaxis(x, 0, -2)


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
    """alpha a a^T + beta c (syrk); with symmetrize_output the lower triangle mirrored."""
    from .. import numpy as jnp
    a, c = as_value(a_matrix), as_value(c_matrix)
    out = alpha * jnp.matmul(a, jnp.swapaxes(a, -1, -2)) + beta * c
    if symmetrize_output:
        low = jnp.tril(out)
        out = low + jnp.swapaxes(jnp.tril(out, -1), -1, -2)
    return out


def householder_product(a, taus):
    """Q = H_0 ... H_{k-1} (orgqr): H_j = I - taus[j] v_j v_j^T, v_j below a's diagonal
    in column j with an implied 1 on it; Q has a's shape (m x n, m >= n)."""
    from .. import numpy as jnp
    a, taus = as_value(a), as_value(taus)
    m, n = shape_of(a)[-2:]
    k = shape_of(taus)[-1]
    if m < n or k > n:
        raise ShapeError(f"householder_product: needs m >= n >= k, got a {shape_of(a)} and "
                         f"taus {shape_of(taus)}")
    rows = jnp.arange(m)[:, None]
    q = jnp.broadcast_to(jnp.eye(m, n, dtype=a.dtype), shape_of(a))
    for j in reversed(range(k)):          # backwards: each H_j touches only rows >= j
        v = jnp.where(rows > j, a[..., :, j:j + 1], jnp.where(rows == j, 1, 0).astype(a.dtype))
        w = jnp.matmul(jnp.swapaxes(v, -1, -2), q)
        q = q - taus[..., j, None, None] * v * w
    return q


# the primitives, under JAX's names for them
cholesky_p, triangular_solve_p, lu_p = dc.cholesky, dc.triangular_solve, dc.lu
qr_p, eigh_p, svd_p = dc.qr, dc.eigh, dc.svd

__all__ = ["cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh",
           "svd", "tridiagonal_solve", "symmetric_product", "householder_product"]
_wrap_public(globals(), __all__)

# jax.lax.linalg's names jx does not have (JAX 0.10.2)
_JAX_ONLY = frozenset("""
    EigImplementation EighImplementation SvdAlgorithm cholesky_update cholesky_update_p eig
    eig_p hessenberg hessenberg_p householder_product_p lu_pivots_to_permutation_p ormqr
    ormqr_p qdwh schur schur_p symmetric_product_p tridiagonal tridiagonal_p
    tridiagonal_solve_p
""".split())
_NEAREST = {"eig": "jx.lax.linalg.eigh for symmetric matrices (general eig needs complex "
                   "numbers)",
            "cholesky_update": "jx.lax.linalg.cholesky of r^T r + w w^T",
            "qdwh": "jx.lax.linalg.svd (u vh is the polar factor)"}


def __getattr__(name: str):
    from ..errors import missing_name
    raise missing_name("jx.lax.linalg", name, _JAX_ONLY, _NEAREST)
