"""jx.lax.linalg: the decomposition primitives with jax.lax.linalg's signatures.

No promotion here (as in lax): operands are float32 or float64 matrices with any
leading batch axes. jx.numpy.linalg and jx.scipy.linalg build on these.
"""
from __future__ import annotations

from ..core import bind_like
from ..errors import ShapeError
from ..numpy._util import as_value, shape_of
from ..numpy.creation import _wrap_public
from ..prims import decompositions as dc


def _bind(prim, *args, **params):
    return bind_like((), prim, *args, **params)


def _symmetrize(x):
    from ..numpy.manipulation import swapaxes
    return (x + swapaxes(x, -1, -2)) / 2


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L (x = L L^T); NaNs where x is not positive definite."""
    x = as_value(x)
    if symmetrize_input:
        x = _symmetrize(x)
    return _bind(dc.cholesky, x)[0]


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """x with op(a) x = b (left_side) or x op(a) = b, op(a) = a or a^T; only a's
    `lower` (or upper) triangle is read, its diagonal taken as ones if unit_diagonal."""
    return _bind(dc.triangular_solve, as_value(a), as_value(b), left_side=bool(left_side),
                 lower=bool(lower), transpose_a=bool(transpose_a),
                 conjugate_a=bool(conjugate_a), unit_diagonal=bool(unit_diagonal))[0]


def lu(x):
    """(lu, pivots, permutation): P x = L U with partial pivoting; L (unit diagonal,
    below) and U (on and above) share `lu`, `pivots` are LAPACK's row swaps (from
    0) and `permutation` the rows of x they amount to."""
    return tuple(_bind(dc.lu, as_value(x)))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that applying the row swaps `pivots` in order makes."""
    from .. import numpy as jnp
    from .control_flow import fori_loop
    pivots = as_value(pivots)
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


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """(q, r) with x = q r: q orthonormal columns, r upper triangular (LAPACK's signs)."""
    if pivoting:
        raise NotImplementedError("jx.lax.linalg.qr(pivoting=True) (column-pivoted QR) is not "
                                  "implemented; use pivoting=False, or svd for rank decisions")
    return tuple(_bind(dc.qr, as_value(x), full_matrices=bool(full_matrices)))


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
    """(v, w): eigenvectors (columns of v) and ascending eigenvalues of the symmetric x,
    read from its `lower` (or upper) triangle unless symmetrize_input."""
    x = as_value(x)
    if symmetrize_input:
        x = _symmetrize(x)
    v, w = _bind(dc.eigh, x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    if subset_by_index is not None:
        lo, hi = _subset(subset_by_index, shape_of(x)[-1], "eigh")
        v, w = v[..., lo:hi], w[..., lo:hi]
    return v, w


def _subset(subset, n: int, what: str) -> tuple:
    try:
        lo, hi = (int(i) for i in subset)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: subset_by_index must be a pair (start, end) of ints, got "
                         f"{subset!r}") from None
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"{what}: subset_by_index {subset!r} must satisfy 0 <= start <= end "
                         f"<= {n}")
    return lo, hi


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular values s (descending), and with compute_uv (u, s, vh): x = u diag(s) vh."""
    x = as_value(x)
    outs = _bind(dc.svd, x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if subset_by_index is not None:
        lo, hi = _subset(subset_by_index, min(shape_of(x)[-2:]), "svd")
        if compute_uv and full_matrices:
            raise ValueError("svd: subset_by_index needs full_matrices=False")
        outs = [outs[0][..., lo:hi]] + ([outs[1][..., :, lo:hi], outs[2][..., lo:hi, :]]
                                        if compute_uv else [])
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


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
